//! `foliosim reproduce <seed>`: run a seed document's experiment and print its table beside ours.
pub mod seed000;
pub mod seed002;
pub mod seed003;

use crate::{run, RunResult, Scenario, SimError};
use std::collections::BTreeMap;

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
            results.entry(key).or_default().push(run(&s)?);
            progress(results.values().map(Vec::len).sum(), total);
        }
    }
    Ok(results)
}
