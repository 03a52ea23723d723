//! The local backend: the pending runs on a pool of threads, each run's record stored the
//! moment it finishes. Runs are deterministic and independent, so which thread ran what, and
//! when, changes nothing in the results.

use super::plan::RunSpec;
use super::record::{run_one, store};
use super::SweepError;
use std::path::Path;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::mpsc;

/// All local cores (at least 1).
pub fn default_jobs() -> usize {
    std::thread::available_parallelism().map_or(1, |n| n.get())
}

/// Run `runs` on `jobs` threads, storing each record under `out`; `progress()` after each.
/// On the first failed run no new run starts; the runs already started finish and are kept.
pub fn run_pending(
    out: &Path,
    runs: &[RunSpec],
    jobs: usize,
    progress: &mut dyn FnMut(),
) -> Result<(), SweepError> {
    let next = AtomicUsize::new(0);
    let stop = AtomicBool::new(false);
    let (tx, rx) = mpsc::channel::<Result<(), SweepError>>();
    let mut first_error = None;
    std::thread::scope(|scope| {
        for _ in 0..jobs.max(1).min(runs.len()) {
            let tx = tx.clone();
            let (next, stop) = (&next, &stop);
            scope.spawn(move || loop {
                if stop.load(Ordering::Relaxed) {
                    break;
                }
                let i = next.fetch_add(1, Ordering::Relaxed);
                let Some(spec) = runs.get(i) else { break };
                let done = run_one(spec).and_then(|rec| store(out, &rec));
                if done.is_err() {
                    stop.store(true, Ordering::Relaxed);
                }
                if tx.send(done).is_err() {
                    break;
                }
            });
        }
        drop(tx);
        for done in rx {
            match done {
                Ok(()) => progress(),
                Err(e) => {
                    first_error.get_or_insert(e);
                }
            }
        }
    });
    first_error.map_or(Ok(()), Err)
}
