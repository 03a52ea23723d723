//! The fuzz targets' bodies (fuzz/, docs/fuzz-and-soak.md): each takes the fuzzer's bytes as
//! one input the program reads (a scenario, a costs file, a trace) and must return, whatever
//! the bytes, without a panic. They live in the library so that a plain `cargo test` replays
//! the kept corpus through them (tests/it/fuzz_corpus.rs) without a fuzzer.
//!
//! An input that parses and validates also runs, bounded by [`Limits`]: checked before the run
//! (simulator memory, tasks, operations) and during it (steps, deterministic where wall time is
//! not). A run may end in an error (out of memory with `kernel.oom = "fail"`, a deadlock of a
//! trace's barriers, the step limit); a broken invariant is a bug and panics, as does a
//! validated input that does not survive its own serialization.
//!
//! Adding a target (e.g. `foliosim fit`'s tables): a function here taking `&[u8]` that parses,
//! validates and uses the input, a 3-line file in fuzz/fuzz_targets/, a `[[bin]]` in
//! fuzz/Cargo.toml, seeds in fuzz/corpus/NAME/, and its name in [`TARGETS`].

use crate::scenario::Scenario;
use crate::workload::trace::{self, Trace};
use crate::{RunOptions, SimError};

/// A fuzz target's body: one input in, what became of it out.
pub type Target = fn(&[u8]) -> Outcome;

/// Every target: its name (fuzz/fuzz_targets/NAME.rs, fuzz/corpus/NAME/) and its body.
pub const TARGETS: &[(&str, Target)] = &[
    ("scenario", scenario_toml),
    ("costs", costs_file),
    ("trace", trace_file),
];

/// How big a validated input may be and still run.
#[derive(Debug, Clone, Copy)]
pub struct Limits {
    /// The simulator memory the footprint pre-flight estimates (footprint.rs).
    pub footprint_bytes: u64,
    pub machine_memory_bytes: u64,
    pub tasks: usize,
    pub ops: usize,
    /// Scheduler steps (`RunOptions::max_steps`).
    pub steps: u64,
}

/// Small enough that an input runs in well under a second with invariants checked.
pub const LIMITS: Limits = Limits {
    footprint_bytes: 64 << 20,
    machine_memory_bytes: 256 << 20,
    tasks: 64,
    ops: 100_000,
    steps: 20_000,
};

/// What became of one input.
#[derive(Debug)]
pub enum Outcome {
    /// Refused by the parser or the validation, with the message a user would read.
    Rejected(String),
    /// Valid, but beyond [`LIMITS`] (the message says which).
    TooBig(String),
    /// Ran to the end.
    Ran,
    /// Ran and ended in an error the model may give (not a bug).
    RunError(String),
}

/// A scenario file (`Scenario::from_toml_str`): parse, validate, round-trip, run.
pub fn scenario_toml(data: &[u8]) -> Outcome {
    let Ok(text) = std::str::from_utf8(data) else {
        return Outcome::Rejected("not UTF-8".into());
    };
    match Scenario::from_toml_str(text) {
        Ok(s) => run_validated(s),
        Err(e) => Outcome::Rejected(e.to_string()),
    }
}

/// The scenario a costs file or a trace is tried in: 2 CPUs, 64 MiB, a zram device with zswap
/// in front, 64K and 2M THP (most of the costs are charged somewhere in it).
pub const BASE_SCENARIO: &str = r#"
seed = 7
[machine]
cpus = 2
memory = "64M"
[[machine.swap]]
kind = "zram"
size = "32M"
[kernel]
version = "6.18"
[sysfs]
thp_enabled = "always"
[sysfs.hugepages]
"64K" = "always"
[sysfs.zswap]
enabled = true
[[memcg]]
name = "m"
max = "24M"
[[workload]]
kind = "usemem"
nproc = 2
size = "16M"
memcg = "m"
"#;

/// A costs file (`CostModel::parse_costs_file`), applied to [`BASE_SCENARIO`] as
/// `foliosim run --costs` applies it: validated with the scenario, then run.
pub fn costs_file(data: &[u8]) -> Outcome {
    let Ok(text) = std::str::from_utf8(data) else {
        return Outcome::Rejected("not UTF-8".into());
    };
    let costs = match crate::engine::cost::CostModel::parse_costs_file(text) {
        Ok(c) => c,
        Err(e) => return Outcome::Rejected(e),
    };
    let mut s = Scenario::from_toml_str(BASE_SCENARIO).expect("the base scenario is valid");
    s.costs = costs;
    match s.validate() {
        Ok(()) => run_validated(s),
        Err(e) => Outcome::Rejected(e.to_string()),
    }
}

/// A trace file, gzipped or not (`Trace::parse_bytes`): parse, round-trip its text form, then
/// replay it in [`BASE_SCENARIO`] (its usemem replaced by the trace; scale and THP advice
/// taken from the input's length, so the corpus covers them).
pub fn trace_file(data: &[u8]) -> Outcome {
    let t = match Trace::parse_bytes(data) {
        Ok(t) => t,
        Err(e) => return Outcome::Rejected(e.to_string()),
    };
    let again = Trace::parse(&t.to_text());
    assert!(
        again.as_ref() == Ok(&t),
        "a parsed trace must read back from its text form: {again:?}"
    );
    let path = trace::register("fuzz-trace", t);
    let scale = [1.0, 0.5, 2.0, 0.01][data.len() % 4];
    let madv = data.len().is_multiple_of(3);
    let text = BASE_SCENARIO.replace(
        "kind = \"usemem\"\nnproc = 2\nsize = \"16M\"",
        &format!("kind = \"trace\"\npath = \"{path}\"\nscale = {scale}\nmadv_hugepage = {madv}"),
    );
    let outcome = match Scenario::from_toml_str(&text) {
        Ok(s) => run_validated(s),
        Err(e) => Outcome::Rejected(e.to_string()),
    };
    trace::unregister(&path);
    outcome
}

/// A validated scenario: its TOML must read back; then it runs within [`LIMITS`], invariants
/// checked.
pub fn run_validated(mut s: Scenario) -> Outcome {
    let text = s.to_toml_string();
    if let Err(e) = Scenario::from_toml_str(&text) {
        panic!("a validated scenario must read back from its own TOML: {e}\n{text}");
    }
    if let Err(why) = fits(&s, &LIMITS) {
        return Outcome::TooBig(why);
    }
    s.check_invariants = true;
    let opts = RunOptions {
        max_steps: Some(LIMITS.steps),
        ..RunOptions::default()
    };
    match crate::run_with(&s, &opts, &mut |_, _| {}) {
        Ok(_) => Outcome::Ran,
        Err(e @ SimError::Invariant { .. }) => {
            panic!("invariant broken: {e}\nscenario:\n{text}")
        }
        Err(e) => Outcome::RunError(e.to_string()),
    }
}

/// Whether `s` fits `limits` (checked without building its tasks when the footprint alone is
/// too big).
pub fn fits(s: &Scenario, limits: &Limits) -> Result<(), String> {
    let footprint = crate::footprint::estimate(s).total_bytes();
    if footprint > limits.footprint_bytes {
        return Err(format!("footprint {footprint} B"));
    }
    if s.machine.memory.0 > limits.machine_memory_bytes {
        return Err(format!("machine.memory {} B", s.machine.memory.0));
    }
    let (mut tasks, mut ops) = (0, 0);
    for w in &s.workloads {
        for t in crate::workload::tasks_for(w, s) {
            tasks += 1;
            ops += t.ops.len();
        }
    }
    if tasks > limits.tasks || ops > limits.ops {
        return Err(format!("{tasks} tasks, {ops} ops"));
    }
    Ok(())
}
