//! Set-ups the model's integration tests share: parse a scenario, run it, and panic with
//! what failed (a test's message then names the scenario's error, not an `unwrap`).

use foliosim_model::mm::Kernel;
use foliosim_model::sched::{run_tasks, SchedStats, Task};
use foliosim_model::{RunResult, Scenario};

/// A scenario from TOML text, validated.
pub fn parse(text: &str) -> Scenario {
    Scenario::from_toml_str(text).unwrap_or_else(|e| panic!("{e}"))
}

/// Run to completion; a failure names the kernel and seed.
pub fn run(s: &Scenario) -> RunResult {
    foliosim_model::run(s)
        .unwrap_or_else(|e| panic!("kernel {} seed {}: {e}", s.kernel.version.name(), s.seed))
}

/// A scenario from TOML text, validated, with the invariants checked as it runs.
pub fn checked(text: &str) -> Scenario {
    let mut s = parse(text);
    s.check_invariants = true;
    s
}

/// A kernel booted from a scenario's TOML text.
pub fn kernel(text: &str) -> Kernel {
    Kernel::new(&parse(text))
}

/// A scenario from TOML text built by a test, validated; a failure shows the text.
pub fn parse_shown(text: &str) -> Scenario {
    Scenario::from_toml_str(text).unwrap_or_else(|e| panic!("{e}\n{text}"))
}

/// Run `tasks` on `k` to their end with the scenario's seed and slice, invariants checked.
pub fn run_scenario_tasks(k: &mut Kernel, tasks: &mut Vec<Task>, s: &Scenario) -> SchedStats {
    run_tasks(
        k,
        tasks,
        s.seed,
        s.machine.sched_slice_ns,
        true,
        &mut |_, _| {},
    )
    .unwrap_or_else(|e| panic!("{e}"))
}

/// Run `tasks` on `k` to their end (seed 1, 3 ms slices, invariants checked).
pub fn run_tasks_checked(k: &mut Kernel, tasks: &mut Vec<Task>) -> SchedStats {
    const SLICE_NS: u64 = 3_000_000;
    run_tasks(k, tasks, 1, SLICE_NS, true, &mut |_, _| {})
        .unwrap_or_else(|e| panic!("run_tasks: {e}"))
}
