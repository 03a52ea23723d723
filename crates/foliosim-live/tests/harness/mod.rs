//! The runner of the live and crash tests (`harness = false`): libtest cannot mark a test
//! ignored once it has started, and these tests learn only at run time whether this host can
//! run them (root, per-size mTHP, zram, a memory cgroup). A test that cannot run here returns
//! `Err(Ignored(reason))` and is reported as ignored, with the reason, never as passed.
//! `FOLIOSIM_LIVE=0` ignores every live test; `FOLIOSIM_LIVE=1` makes a host that cannot run
//! them a failure instead. Tests run one at a time, in order (they share the host). Accepts
//! libtest's usual arguments: name filters, `--exact`, `--skip`, `--list`; the others
//! (`--nocapture`, `--test-threads`, `--include-ignored`…) change nothing here.

#![allow(dead_code)]

use std::time::Instant;

/// Why a test did not run on this host.
#[derive(Debug)]
pub struct Ignored(pub String);

pub type Outcome = Result<(), Ignored>;

pub fn ignored(why: impl Into<String>) -> Ignored {
    Ignored(why.into())
}

/// Go on only where the live backend can run (and is not turned off with FOLIOSIM_LIVE=0).
pub fn require_live() -> Outcome {
    let gate = std::env::var("FOLIOSIM_LIVE").unwrap_or_default();
    if gate == "0" {
        return Err(ignored("FOLIOSIM_LIVE=0"));
    }
    match foliosim_live::live_capable() {
        Ok(()) => Ok(()),
        Err(why) if gate == "1" => {
            panic!("FOLIOSIM_LIVE=1, but the live backend cannot run here: {why}")
        }
        Err(why) => Err(ignored(format!(
            "live backend unavailable here: {why} (FOLIOSIM_LIVE=1 makes this a failure)"
        ))),
    }
}

pub struct Test {
    pub name: &'static str,
    pub run: fn() -> Outcome,
}

/// `harness_main!(a, b, c)`: the test binary's `main`, running those test functions.
#[macro_export]
macro_rules! harness_main {
    ($($name:ident),* $(,)?) => {
        fn main() {
            harness::run(&[$(harness::Test { name: stringify!($name), run: $name }),*]);
        }
    };
}

struct Args {
    filters: Vec<String>,
    skip: Vec<String>,
    exact: bool,
    list: bool,
}

fn parse_args() -> Args {
    let mut a = Args {
        filters: vec![],
        skip: vec![],
        exact: false,
        list: false,
    };
    let mut it = std::env::args().skip(1);
    while let Some(arg) = it.next() {
        match arg.as_str() {
            "--exact" => a.exact = true,
            "--list" => a.list = true,
            "--skip" => a.skip.extend(it.next()),
            // Options with a value we do not use.
            "--test-threads" | "--color" | "--format" | "-Z" | "--logfile" | "--shuffle-seed" => {
                it.next();
            }
            s if s.starts_with('-') => {}
            s => a.filters.push(s.to_string()),
        }
    }
    a
}

fn selected(a: &Args, name: &str) -> bool {
    let hit = |f: &String| {
        if a.exact {
            name == f
        } else {
            name.contains(f.as_str())
        }
    };
    (a.filters.is_empty() || a.filters.iter().any(hit))
        && !a.skip.iter().any(|s| name.contains(s.as_str()))
}

pub fn run(tests: &[Test]) {
    let args = parse_args();
    let chosen: Vec<&Test> = tests.iter().filter(|t| selected(&args, t.name)).collect();
    if args.list {
        for t in &chosen {
            println!("{}: test", t.name);
        }
        return;
    }
    let t0 = Instant::now();
    println!("\nrunning {} tests", chosen.len());
    let (mut passed, mut ignored_n, mut failed) = (0, 0, vec![]);
    for t in &chosen {
        let outcome = std::panic::catch_unwind(t.run);
        match outcome {
            Ok(Ok(())) => {
                passed += 1;
                println!("test {} ... ok", t.name);
            }
            Ok(Err(Ignored(why))) => {
                ignored_n += 1;
                println!("test {} ... ignored, {why}", t.name);
            }
            Err(_) => {
                failed.push(t.name);
                println!("test {} ... FAILED", t.name);
            }
        }
    }
    if !failed.is_empty() {
        println!("\nfailures:");
        for f in &failed {
            println!("    {f}");
        }
    }
    println!(
        "\ntest result: {}. {passed} passed; {} failed; {ignored_n} ignored; 0 measured; {} filtered out; finished in {:.2}s\n",
        if failed.is_empty() { "ok" } else { "FAILED" },
        failed.len(),
        tests.len() - chosen.len(),
        t0.elapsed().as_secs_f64()
    );
    if !failed.is_empty() {
        std::process::exit(101);
    }
}
