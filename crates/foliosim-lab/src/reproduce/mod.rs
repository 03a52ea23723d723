//! `foliosim reproduce <seed>`: run a seed document's experiment and print its table beside ours.
pub mod capture;
pub mod seed000;
pub mod seed001;
pub mod seed001_table;
pub mod seed002;
pub mod seed003;
pub mod seed004;

use crate::scenario::WorkloadSpec;
use crate::{run, RunResult, Scenario, SimError};
use std::collections::BTreeMap;

pub const GIB: u64 = 1 << 30;

/// Seeds 000 and 002's workload: `usemem -n 70 1g` (each process writes its 1 GiB, scaled) in
/// the memcg `usemem`.
pub fn usemem_70x1g(scale: f64) -> WorkloadSpec {
    WorkloadSpec::Usemem {
        nproc: 70,
        size: seed000::scaled(GIB, scale, 2 << 20),
        memcg: Some("usemem".into()),
        madv_hugepage: false,
        pageout_after_write: false,
        content: None,
        oom_score_adj: 0,
    }
}

/// Run `scenario(key, seed)` for every key and seeds 1..=`seeds`, with the invariant checker
/// as asked and `costs` overriding the profile; `progress(done, total)` after each run.
pub fn run_grid<K: Ord + Copy>(
    keys: &[K],
    seeds: u32,
    check_invariants: bool,
    costs: &BTreeMap<String, f64>,
    scenario: impl Fn(K, u64) -> Scenario,
    progress: &mut dyn FnMut(usize, usize),
) -> Result<BTreeMap<K, Vec<RunResult>>, SimError> {
    let total = keys.len() * seeds as usize;
    let mut results: BTreeMap<K, Vec<RunResult>> = BTreeMap::new();
    for &key in keys {
        for seed in 1..=seeds as u64 {
            let mut s = scenario(key, seed);
            s.check_invariants = check_invariants;
            s.costs = costs.clone();
            capture::prepare(&mut s);
            let r = run(&s)?;
            capture::keep(&s, &r);
            results.entry(key).or_default().push(r);
            progress(results.values().map(Vec::len).sum(), total);
        }
    }
    Ok(results)
}
