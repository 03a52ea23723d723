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

/// Run `runs` on `jobs` threads, storing each record under `out` the moment it finishes;
/// `progress(run, wall_s)` on this thread after each. On a failed run no new run starts; the
/// runs already started finish and are kept, and the error is the first failed run's in plan
/// order.
pub fn run_pending(
    out: &Path,
    runs: &[RunSpec],
    jobs: usize,
    progress: &mut dyn FnMut(&RunSpec, f64),
) -> Result<(), SweepError> {
    map_indexed(
        runs.len(),
        jobs,
        |i| {
            let wall = std::time::Instant::now();
            run_one(&runs[i]).and_then(|rec| store(out, &rec))?;
            Ok(wall.elapsed().as_secs_f64())
        },
        &mut |i, done| {
            if let Ok(wall_s) = done {
                progress(&runs[i], *wall_s)
            }
        },
    )
    .map(|_| ())
}

/// Threads' stack: a run recurses no deeper on a worker than on the main thread (8 MiB).
const WORKER_STACK_BYTES: usize = 8 << 20;

/// `work(i)` for every i in 0..n on `jobs` threads (at least 1), each index taken in order;
/// `done(i, &result)` on the calling thread as each finishes (in finishing order, for
/// progress only). The results come back in index order, so thread timing reaches nothing
/// but `done`'s order. After a failure no new index starts; the error returned is the one of
/// the lowest failed index, and as every lower index had started, that is the same error
/// whatever the job count.
pub fn map_indexed<R: Send, E: Send>(
    n: usize,
    jobs: usize,
    work: impl Fn(usize) -> Result<R, E> + Sync,
    done: &mut dyn FnMut(usize, &Result<R, E>),
) -> Result<Vec<R>, E> {
    let next = AtomicUsize::new(0);
    let stop = AtomicBool::new(false);
    let mut slots: Vec<Option<Result<R, E>>> = (0..n).map(|_| None).collect();
    let (tx, rx) = mpsc::channel::<(usize, Result<R, E>)>();
    std::thread::scope(|scope| {
        for _ in 0..jobs.max(1).min(n) {
            let tx = tx.clone();
            let (next, stop, work) = (&next, &stop, &work);
            std::thread::Builder::new()
                .stack_size(WORKER_STACK_BYTES)
                .spawn_scoped(scope, move || loop {
                    if stop.load(Ordering::Relaxed) {
                        break;
                    }
                    let i = next.fetch_add(1, Ordering::Relaxed);
                    if i >= n {
                        break;
                    }
                    let r = work(i);
                    if r.is_err() {
                        stop.store(true, Ordering::Relaxed);
                    }
                    if tx.send((i, r)).is_err() {
                        break;
                    }
                })
                .expect("spawning a worker thread");
        }
        drop(tx);
        for (i, r) in rx {
            done(i, &r);
            slots[i] = Some(r);
        }
    });
    let mut out = Vec::with_capacity(n);
    for slot in slots {
        match slot {
            Some(Ok(r)) => out.push(r),
            Some(Err(e)) => return Err(e),
            // Not started: a lower index failed, and its error comes first.
            None => {}
        }
    }
    Ok(out)
}
