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

/// The scales at which every seed's sizes stay meaningful: below 0.02 sizes hit their floors
/// (seed 001's 4 GiB machine its 64 MiB), so the machine no longer shrinks with the rest;
/// above 4 the machines reach terabytes (seed 002's 503 GiB).
pub const SCALE_MIN: f64 = 0.02;
pub const SCALE_MAX: f64 = 4.0;

/// `scale` within [`SCALE_MIN`] ..= [`SCALE_MAX`], or an error naming `what` (e.g. `--scale`).
pub fn check_scale(what: &str, scale: f64) -> Result<(), String> {
    if (SCALE_MIN..=SCALE_MAX).contains(&scale) {
        Ok(())
    } else {
        Err(format!(
            "{what} {scale} is out of range; allowed: {SCALE_MIN} ..= {SCALE_MAX} (below, sizes hit their floors; above, machines reach terabytes)"
        ))
    }
}

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
    // Every scenario checked before any runs: validation, and the host's memory.
    for &key in keys {
        for seed in 1..=seeds as u64 {
            let mut s = scenario(key, seed);
            s.costs = costs.clone();
            s.validate()?;
            crate::footprint::check_host(&s, None)?;
        }
    }
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
