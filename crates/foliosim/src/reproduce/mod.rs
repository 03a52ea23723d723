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

/// The figures the seed's author would put in the cover letter, drawn from the report's JSON
/// (`seed_doc`: "000" ... "004"), each an SVG for the HTML report.
pub fn cover_figures(seed_doc: &str, report: &serde_json::Value) -> Vec<String> {
    match seed_doc.trim_start_matches('0') {
        "" => seed000::cover_figures(report),
        "1" => seed001::cover_figures(report),
        "2" => seed002::cover_figures(report),
        "3" => seed003::cover_figures(report),
        "4" => seed004::cover_figures(report),
        _ => Vec::new(),
    }
}

/// Helpers for the cover figures: a report's array of rows, a row's number and text.
pub(crate) mod fig {
    use serde_json::Value;

    pub fn rows<'a>(report: &'a Value, key: &str) -> Vec<&'a Value> {
        report[key]
            .as_array()
            .map(|a| a.iter().collect())
            .unwrap_or_default()
    }

    pub fn num(row: &Value, key: &str) -> Option<f64> {
        row[key].as_f64()
    }

    pub fn text(row: &Value, key: &str) -> String {
        match &row[key] {
            Value::String(s) => s.clone(),
            Value::Null => String::new(),
            v => v.to_string(),
        }
    }

    /// Distinct values of `key` in first-seen order.
    pub fn distinct(rows: &[&Value], key: &str) -> Vec<String> {
        let mut out: Vec<String> = Vec::new();
        for r in rows {
            let t = text(r, key);
            if !out.contains(&t) {
                out.push(t);
            }
        }
        out
    }
}
