//! The random soak, in the manner of deterministic simulation testing (docs/fuzz-and-soak.md):
//! from one seed, a random valid scenario (every kernel release and policy, machine, memcg
//! setup and workload kind the scenario offers) and a random trace (the operation sequence its
//! `trace` workloads replay), run with the invariant checker on. The case is a function of the
//! seed alone, so `foliosim soak --seed S` reruns exactly case S; a failing case is written out
//! as a scenario TOML (and its trace) that `foliosim run` reproduces.

mod gen;
pub mod kernel;
pub mod machine;
mod run;
mod trace_gen;
pub mod workloads;

pub use run::{run_case, write_case, Verdict};

use crate::scenario::{Scenario, WorkloadSpec};
use crate::workload::trace::{Trace, MEM_PREFIX};
use gen::Gen;
use std::collections::BTreeMap;

/// The most scheduler steps a case runs (then it is cut: `Verdict::Cut`). With the scenario
/// sizes below, a case takes well under a second.
pub const MAX_STEPS: u64 = 200_000;

/// One soak case: its scenario and the trace its `trace` workloads replay (held in memory as
/// `mem:soak-SEED` while it runs).
#[derive(Debug, Clone)]
pub struct Case {
    pub seed: u64,
    pub scenario: Scenario,
    pub trace: Trace,
}

impl Case {
    /// The path its trace workloads name.
    pub fn trace_path(&self) -> String {
        format!("{MEM_PREFIX}soak-{}", self.seed)
    }

    pub fn has_trace(&self) -> bool {
        self.scenario
            .workloads
            .iter()
            .any(|w| matches!(w, WorkloadSpec::Trace(_)))
    }
}

/// Case `seed`.
pub fn case(seed: u64) -> Case {
    let mut g = Gen::new(seed, "soak-scenario");
    let kernel = kernel::kernel(&mut g);
    let memcgs = workloads::memcgs(&mut g, kernel.cgroup);
    let trace_path = format!("{MEM_PREFIX}soak-{seed}");
    let mut files = Vec::new();
    let nr_workloads = g.pick(&[1, 1, 2, 3]);
    let specs = (0..nr_workloads)
        .map(|_| {
            let kind = g.pick(&workloads::KINDS);
            workloads::workload(&mut g, kind, &memcgs, &mut files, &trace_path)
        })
        .collect();
    let disk_bytes = (!files.is_empty()).then(|| files.iter().map(|f| f.size.0).sum());
    let cluster_lists = kernel.swap_allocator().entry().mthp_reserve;
    let machine = machine::machine(&mut g, cluster_lists, disk_bytes);
    let mut sysfs = kernel::sysfs(&mut g, kernel.version, machine.iaa.is_some());
    sysfs.lru_gen = kernel::lru_gen(&mut Gen::new(seed, "soak-lru_gen"), kernel.version);
    let sysctl = kernel::sysctl(&mut g, machine.memory.0);
    let mut costs = BTreeMap::new();
    if g.chance(20) {
        for _ in 0..g.range(1, 3) {
            let name = g.pick(crate::engine::cost::CostModel::NAMES);
            costs.insert(name.to_string(), g.pick(&[0.0, 1.0, 1000.0, 1e6]));
        }
    }
    let report = crate::report::spec::ReportSpec {
        sample_interval: g.maybe(10, |g| {
            use crate::report::spec::SampleInterval;
            g.pick(&[SampleInterval::Every(100_000), SampleInterval::Auto])
        }),
    };
    let events = Gen::new(seed, "soak-trace-length").range(20, 600) as usize;
    let trace = trace_gen::trace(&mut Gen::new(seed, "soak-trace"), events, 8192);
    Case {
        seed,
        scenario: Scenario {
            seed,
            machine,
            kernel,
            sysfs,
            sysctl,
            memcgs,
            workloads: specs,
            files,
            tmpfs: Vec::new(),
            costs,
            check_invariants: true,
            report,
            mempolicy: Default::default(),
        },
        trace,
    }
}
