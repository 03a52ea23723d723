//! Running a soak case and judging it; writing a failing one out.

use super::Case;
use crate::mm::MmError;
use crate::scenario::{TraceSpec, WorkloadSpec};
use crate::workload::trace::{self, Trace};
use crate::{RunOptions, SimError};
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::path::{Path, PathBuf};

#[derive(Debug, Clone, PartialEq)]
pub enum Verdict {
    /// Ran to the end.
    Passed,
    /// Ended out of memory with nothing to kill (`kernel.oom = "fail"`, or every task at
    /// oom_score_adj -1000): an outcome the model may give, not a failure.
    OutOfMemory,
    /// Reached the step limit first (a long case, not a failure).
    Cut,
    /// A panic, a broken invariant, a deadlock, an invalid generated scenario or trace, or
    /// any other error: what went wrong.
    Failed(String),
}

/// Run `case` (at most `max_steps` scheduler steps), invariants checked.
pub fn run_case(case: &Case, max_steps: u64) -> Verdict {
    let text = case.trace.to_text();
    if let Err(e) = Trace::parse(&text) {
        return Verdict::Failed(format!("the generator made an invalid trace: {e}"));
    }
    let path = trace::register(&format!("soak-{}", case.seed), case.trace.clone());
    let outcome = catch_unwind(AssertUnwindSafe(|| {
        case.scenario
            .validate()
            .map_err(|e| format!("the generator made an invalid scenario: {e}"))?;
        let opts = RunOptions {
            max_steps: Some(max_steps),
            ..RunOptions::default()
        };
        Ok(crate::run_with(&case.scenario, &opts, &mut |_, _| {}))
    }));
    trace::unregister(&path);
    match outcome {
        Err(panic) => Verdict::Failed(format!("panic: {}", panic_message(&panic))),
        Ok(Err(invalid)) => Verdict::Failed(invalid),
        Ok(Ok(Ok(_))) => Verdict::Passed,
        Ok(Ok(Err(e))) => judge(&e),
    }
}

fn judge(e: &SimError) -> Verdict {
    match e {
        SimError::StepLimit { .. } => Verdict::Cut,
        SimError::Mm {
            error:
                MmError::MemcgOom { .. }
                | MmError::GlobalOom
                | MmError::MemcgOomNoVictim { .. }
                | MmError::GlobalOomNoVictim,
            ..
        } => Verdict::OutOfMemory,
        e => Verdict::Failed(e.to_string()),
    }
}

fn panic_message(panic: &Box<dyn std::any::Any + Send>) -> String {
    panic
        .downcast_ref::<&str>()
        .map(|s| s.to_string())
        .or_else(|| panic.downcast_ref::<String>().cloned())
        .unwrap_or_else(|| "(no message)".into())
}

/// Write `case` into `dir` as `soak-SEED.toml` (and `soak-SEED.trace` when it replays one,
/// named by its absolute path in the TOML), headed by how to rerun it and `why` it failed.
/// Returns the TOML's path.
pub fn write_case(case: &Case, dir: &Path, why: &str) -> std::io::Result<PathBuf> {
    std::fs::create_dir_all(dir)?;
    let mut s = case.scenario.clone();
    if case.has_trace() {
        let trace_file = dir.join(format!("soak-{}.trace", case.seed));
        std::fs::write(&trace_file, case.trace.to_text())?;
        let abs = std::fs::canonicalize(&trace_file)?;
        for w in &mut s.workloads {
            if let WorkloadSpec::Trace(TraceSpec { path, .. }) = w {
                *path = abs.display().to_string();
            }
        }
    }
    let toml_file = dir.join(format!("soak-{}.toml", case.seed));
    let why: String = why.lines().map(|l| format!("#   {l}\n")).collect();
    let text = format!(
        "# foliosim soak case {seed}: rerun with `foliosim soak --seed {seed}` (or `foliosim run` of\n\
         # this file, without the soak's step limit). It failed with:\n{why}{}",
        s.to_toml_string(),
        seed = case.seed
    );
    std::fs::write(&toml_file, text)?;
    Ok(toml_file)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::soak::MAX_STEPS;
    use crate::Scenario;

    /// A usemem of `size` on a 32 MiB machine without swap; `oom = "fail"` when asked. The
    /// trace (checked though unused) is soak case 0's.
    fn case(size: &str, oom_fails: bool) -> Case {
        let oom = if oom_fails {
            "[kernel]\noom = \"fail\"\n"
        } else {
            ""
        };
        let text = format!(
            "seed = 1\n{oom}[machine]\ncpus = 1\nmemory = \"32M\"\n\
             [[workload]]\nkind = \"usemem\"\nnproc = 1\nsize = \"{size}\"\n"
        );
        Case {
            seed: 1,
            scenario: Scenario::from_toml_str(&text).unwrap(),
            trace: crate::soak::case(0).trace,
        }
    }

    /// Each kind of ending has its own verdict: only a run to its end passes (the soak once
    /// counted out-of-memory endings and step-limit cuts as passes).
    #[test]
    fn each_kind_of_ending_has_its_own_verdict() {
        assert_eq!(run_case(&case("4M", false), MAX_STEPS), Verdict::Passed);
        assert_eq!(run_case(&case("4M", false), 1), Verdict::Cut);
        assert_eq!(
            run_case(&case("64M", true), MAX_STEPS),
            Verdict::OutOfMemory
        );
        let mut invalid = case("4M", false);
        invalid.scenario.workloads.clear();
        match run_case(&invalid, MAX_STEPS) {
            Verdict::Failed(why) => assert!(why.contains("invalid scenario"), "{why}"),
            other => panic!("an invalid scenario is a failure, not {other:?}"),
        }
    }
}
