//! `foliosim soak`: random valid scenarios and traces (foliosim_lab::soak) run with the invariant
//! checker on, case after case; a failing case's seed is printed and the case written out.

use anyhow::{bail, Result};
use clap::Args;
use foliosim_lab::soak::{self, Verdict};
use std::time::{Duration, Instant};

#[derive(Args)]
pub struct SoakArgs {
    /// Run exactly case SEED (what a failure printed) and stop.
    #[arg(long, conflicts_with_all = ["first_seed", "cases", "minutes"])]
    seed: Option<u64>,
    /// The first case; the next ones follow it (SEED+1, ...).
    #[arg(long, default_value_t = 0)]
    first_seed: u64,
    /// Stop after this many cases.
    #[arg(long)]
    cases: Option<u64>,
    /// Stop after this many minutes of wall time (default: 1, unless --cases is given).
    #[arg(long, value_parser = crate::minutes)]
    minutes: Option<f64>,
    /// Where failing cases are written (soak-SEED.toml, and soak-SEED.trace).
    #[arg(long, default_value = "soak-failures")]
    out: std::path::PathBuf,
    /// The most scheduler steps a case may take before it is cut.
    #[arg(long, default_value_t = soak::MAX_STEPS, value_parser = clap::value_parser!(u64).range(1..))]
    max_steps: u64,
    /// Print each case's seed and verdict.
    #[arg(long)]
    verbose: bool,
    /// A case that has used this many seconds of CPU hangs inside one step (the step limit
    /// cannot end it): it is written out and the soak stops.
    #[arg(long, default_value_t = 120, value_parser = clap::value_parser!(u64).range(1..))]
    case_timeout: u64,
}

/// Run `case` on a thread of its own, watched: a case whose thread has used `case_timeout`
/// seconds of CPU is written out, its seed printed, and the process exits (a thread cannot be
/// stopped). CPU time, not wall time: a soak at nice 19 on a busy machine waits for a CPU far
/// longer than it runs, and that is no hang.
fn run_watched(case: &soak::Case, args: &SoakArgs) -> Result<Verdict> {
    let (tx, rx) = std::sync::mpsc::channel();
    let (clock_tx, clock_rx) = std::sync::mpsc::channel();
    let (mine, max_steps) = (case.clone(), args.max_steps);
    std::thread::spawn(move || {
        let _ = clock_tx.send(thread_cpu_clock());
        let _ = tx.send(soak::run_case(&mine, max_steps));
    });
    let clock = clock_rx.recv().ok().flatten();
    let limit = Duration::from_secs(args.case_timeout);
    let started = std::time::Instant::now();
    loop {
        match rx.recv_timeout(Duration::from_secs(1)) {
            Ok(verdict) => return Ok(verdict),
            Err(std::sync::mpsc::RecvTimeoutError::Timeout) => {
                // Without a CPU clock for the thread, wall time is the bound.
                let used = clock.map_or_else(|| started.elapsed(), cpu_time_of);
                if used < limit {
                    continue;
                }
            }
            Err(std::sync::mpsc::RecvTimeoutError::Disconnected) => {
                bail!("soak case {} ended without a verdict", case.seed)
            }
        }
        let why = format!("hangs: still running after {} s of CPU", args.case_timeout);
        let file = soak::write_case(case, &args.out, &why)?;
        eprintln!(
            "soak: FAILED seed {}: {why}\n      written to {}",
            case.seed,
            file.display()
        );
        std::process::exit(2);
    }
}

/// The calling thread's CPU-time clock (pthread_getcpuclockid), readable from other threads.
fn thread_cpu_clock() -> Option<libc::clockid_t> {
    let mut clock: libc::clockid_t = 0;
    // SAFETY: pthread_self() is the calling thread, and `clock` is a valid out-pointer.
    let rc = unsafe { libc::pthread_getcpuclockid(libc::pthread_self(), &mut clock) };
    (rc == 0).then_some(clock)
}

/// CPU time used so far by the thread whose clock is `clock`.
fn cpu_time_of(clock: libc::clockid_t) -> Duration {
    let mut ts = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: `ts` is a valid out-pointer; a clock of a thread that ended gives an error.
    if unsafe { libc::clock_gettime(clock, &mut ts) } != 0 {
        return Duration::ZERO;
    }
    Duration::new(ts.tv_sec as u64, ts.tv_nsec as u32)
}

#[derive(Default)]
struct Tally {
    cases: u64,
    passed: u64,
    out_of_memory: u64,
    cut: u64,
    failed: Vec<u64>,
}

impl Tally {
    fn line(&self, elapsed: Duration) -> String {
        format!(
            "{} cases in {:.0} s: {} passed, {} out of memory, {} cut at the step limit, {} failed",
            self.cases,
            elapsed.as_secs_f64(),
            self.passed,
            self.out_of_memory,
            self.cut,
            self.failed.len()
        )
    }
}

pub fn soak(args: SoakArgs) -> Result<()> {
    // A panicking case is caught and reported with its seed: one line for where, no
    // backtrace (rerun the seed for one).
    std::panic::set_hook(Box::new(|info| {
        let at = info
            .location()
            .map(|l| format!("{}:{}", l.file(), l.line()))
            .unwrap_or_default();
        eprintln!("soak: panic at {at}");
    }));
    let start = Instant::now();
    let (first, cases, deadline) = match args.seed {
        Some(seed) => (seed, Some(1), None),
        None => {
            let minutes = args.minutes.or(args.cases.is_none().then_some(1.0));
            (
                args.first_seed,
                args.cases,
                minutes.map(|m| Duration::from_secs_f64(m * 60.0)),
            )
        }
    };
    let mut tally = Tally::default();
    let mut last_report = Instant::now();
    for seed in first.. {
        if cases.is_some_and(|n| tally.cases >= n) || deadline.is_some_and(|d| start.elapsed() >= d)
        {
            break;
        }
        let case = soak::case(seed);
        let case_start = Instant::now();
        let verdict = run_watched(&case, &args)?;
        tally.cases += 1;
        if args.verbose || args.seed.is_some() {
            eprintln!(
                "soak: seed {seed}: {verdict:?} ({:.2} s)",
                case_start.elapsed().as_secs_f64()
            );
        }
        match verdict {
            Verdict::Passed => tally.passed += 1,
            Verdict::OutOfMemory => tally.out_of_memory += 1,
            Verdict::Cut => tally.cut += 1,
            Verdict::Failed(why) => {
                let file = soak::write_case(&case, &args.out, &why)?;
                eprintln!(
                    "soak: FAILED seed {seed}: {why}\n      rerun: foliosim soak --seed {seed}; written to {}",
                    file.display()
                );
                tally.failed.push(seed);
            }
        }
        if last_report.elapsed() >= Duration::from_secs(10) {
            eprintln!("soak: {} (last seed {seed})", tally.line(start.elapsed()));
            last_report = Instant::now();
        }
    }
    println!("soak: {}", tally.line(start.elapsed()));
    if !tally.failed.is_empty() {
        let seeds: Vec<String> = tally.failed.iter().map(|s| s.to_string()).collect();
        bail!(
            "failing seeds: {} (cases written to {})",
            seeds.join(", "),
            args.out.display()
        );
    }
    Ok(())
}
