//! `foliosim reproduce <seed>`: run a seed document's experiment and print its table beside ours.
pub mod capture;
pub mod seed000;
pub mod seed001;
pub mod seed001_table;
pub mod seed002;
pub mod seed003;
pub mod seed004;

use crate::scenario::{UsememSpec, WorkloadSpec};
use crate::{run, RunResult, Scenario, SimError};
use std::collections::BTreeMap;

pub const GIB: u64 = 1 << 30;

/// The scales at which every seed's sizes stay meaningful: below 0.02 sizes hit their floors
/// (seed 001's 4 GiB machine its 64 MiB), so the machine no longer shrinks with the rest;
/// above 4 the machines reach terabytes (seed 002's 503 GiB).
pub const SCALE_MIN: f64 = 0.02;
pub const SCALE_MAX: f64 = 4.0;
/// Seed 004 scales XSBench's lookups only, never memory (seed004.rs), so no size floor
/// applies; its lookups reach their floor (16,000) at 9.4e-6. 0.001 keeps it a decade below
/// the scale its shape test and docs use (0.002, seconds) and far above that floor.
pub const SCALE_MIN_SEED004: f64 = 0.001;

/// The smallest scale of seed `which` (0 ..= 4) and why it is there.
fn scale_floor(which: u32) -> (f64, &'static str) {
    if which == 4 {
        (SCALE_MIN_SEED004, "seed 004 scales its lookups only")
    } else {
        (SCALE_MIN, "below, sizes hit their floors")
    }
}

/// `scale` within [`scale_floor`] ..= [`SCALE_MAX`] for seed `which`, or an error naming `what`
/// (e.g. `--scale`).
pub fn check_scale(what: &str, which: u32, scale: f64) -> Result<(), String> {
    let (min, why) = scale_floor(which);
    if (min..=SCALE_MAX).contains(&scale) {
        Ok(())
    } else {
        Err(format!(
            "{what} {scale} is out of range for seed {which:03}; allowed: {min} ..= {SCALE_MAX} ({why}; above, machines reach terabytes)"
        ))
    }
}

/// The most runs per configuration: the seeds ran at most 24; 1000 x a seed's configurations
/// stays within a sweep's [`crate::sweep::plan::MAX_PLAN_RUNS`].
pub const SEEDS_MAX: u32 = 1000;

/// `seeds` within 1 ..= [`SEEDS_MAX`], or an error naming `what` (e.g. `--seeds`).
pub fn check_seeds(what: &str, seeds: u32) -> Result<(), String> {
    if (1..=SEEDS_MAX).contains(&seeds) {
        Ok(())
    } else {
        Err(format!("{what}: found {seeds}; allowed: 1 ..= {SEEDS_MAX}"))
    }
}

/// Seeds 000 and 002's workload: `usemem -n 70 1g` (each process writes its 1 GiB, scaled) in
/// the memcg `usemem`.
pub fn usemem_70x1g(scale: f64) -> WorkloadSpec {
    WorkloadSpec::Usemem(UsememSpec {
        nproc: 70,
        size: seed000::scaled(GIB, scale, 2 << 20),
        memcg: Some("usemem".into()),
        madv_hugepage: false,
        pageout_after_write: false,
        content: None,
        oom_score_adj: 0,
        threads: 0,
        sleep_s: 0,
        repeat: 1,
    })
}

/// A finished run of a reproduction, for a progress report.
pub struct Finished<'a> {
    /// Runs finished so far, this one included.
    pub done: usize,
    pub total: usize,
    /// The run's configuration and seed, e.g. `6.10 64K seed 2`.
    pub label: &'a str,
    /// Its wall time, s: not a result (it varies run to run).
    pub wall_s: f64,
}

/// How a reproduction runs its independent runs: on `jobs` threads, `progress` told of each
/// run as it finishes. The report is the same whatever the job count.
pub struct Runs<'p> {
    jobs: usize,
    progress: Box<dyn FnMut(&Finished) + 'p>,
    /// `machine.profile` for every run (`--machine-profile`); None keeps the seed's.
    machine_profile: Option<String>,
    /// The machines run on so far (`machine_line`), each once, in order.
    machines: Vec<String>,
}

/// A reproduction header's line for the machine of `s`: the profile, its topology, and where
/// the run's costs come from (measured, cited, fitted, estimate; overrides apart).
pub fn machine_line(s: &Scenario) -> String {
    let m = &s.machine;
    let Some(profile) = m.machine_profile() else {
        return format!("machine: unknown profile {:?}", m.profile);
    };
    let topology = match m.topology_spec() {
        Some(t) => format!(
            "{} sockets x {} LLCs x {} cores x {} threads, {} of {} CPUs",
            t.sockets,
            t.llcs_per_socket,
            t.cores_per_llc,
            t.threads_per_core,
            m.cpus,
            t.cpus()
        ),
        None => format!("no topology, {} CPUs", m.cpus),
    };
    format!(
        "machine: {} ({topology}; cost profile {}{}); costs: {}",
        profile.name,
        m.cost_profile,
        if m.kvm_guest { "; KVM guest" } else { "" },
        profile.provenance_summary(&m.cost_profile, &s.costs)
    )
}

impl<'p> Runs<'p> {
    /// `jobs` threads (at least 1), no progress.
    pub fn new(jobs: usize) -> Runs<'p> {
        Runs {
            jobs: jobs.max(1),
            progress: Box::new(|_| {}),
            machine_profile: None,
            machines: Vec::new(),
        }
    }

    /// Every local core, no progress.
    pub fn all_cores() -> Runs<'p> {
        Runs::new(crate::sweep::local::default_jobs())
    }

    pub fn with_progress(self, progress: impl FnMut(&Finished) + 'p) -> Runs<'p> {
        Runs {
            progress: Box::new(progress),
            ..self
        }
    }

    pub fn jobs(&self) -> usize {
        self.jobs
    }

    /// Run every scenario on machine profile `name` (validated with each scenario).
    pub fn with_machine_profile(self, name: Option<String>) -> Runs<'p> {
        Runs {
            machine_profile: name,
            ..self
        }
    }

    /// The header of a reproduction: one line per machine its runs used.
    pub fn machine_header(&self) -> String {
        self.machines.iter().map(|l| format!("{l}\n")).collect()
    }

    /// Run every (label, scenario) with the invariant checker as asked and `costs` overriding
    /// the profile; the results in the scenarios' order. A capture (capture.rs) sees every run
    /// in that order too, on this thread.
    pub fn run_all(
        &mut self,
        planned: Vec<(String, Scenario)>,
        check_invariants: bool,
        costs: &BTreeMap<String, f64>,
    ) -> Result<Vec<RunResult>, SimError> {
        let (labels, scenarios): (Vec<String>, Vec<Scenario>) = planned
            .into_iter()
            .map(|(label, mut s)| {
                s.check_invariants = check_invariants;
                s.costs = costs.clone();
                if let Some(p) = &self.machine_profile {
                    s.machine.profile = Some(p.clone());
                }
                capture::prepare(&mut s);
                (label, s)
            })
            .unzip();
        // Every scenario checked before any runs: validation, and the host's memory.
        for s in &scenarios {
            s.validate()?;
            crate::footprint::check_host(s, None)?;
            let line = machine_line(s);
            if !self.machines.contains(&line) {
                self.machines.push(line);
            }
        }
        let total = scenarios.len();
        let mut done = 0;
        let progress = &mut self.progress;
        let results = crate::sweep::local::map_indexed(
            total,
            self.jobs,
            |i| {
                let wall = std::time::Instant::now();
                run(&scenarios[i]).map(|r| (r, wall.elapsed().as_secs_f64()))
            },
            &mut |i, r| {
                if let Ok((_, wall_s)) = r {
                    done += 1;
                    progress(&Finished {
                        done,
                        total,
                        label: &labels[i],
                        wall_s: *wall_s,
                    });
                }
            },
        )?;
        Ok(scenarios
            .iter()
            .zip(results)
            .map(|(s, (r, _))| {
                capture::keep(s, &r);
                r
            })
            .collect())
    }
}

/// Run `scenario(key, seed)` for every key and seeds 1..=`seeds` (as [`Runs::run_all`]), each
/// run labelled `label(key)` and its seed.
pub fn run_grid<K: Ord + Copy>(
    keys: &[K],
    seeds: u32,
    check_invariants: bool,
    costs: &BTreeMap<String, f64>,
    scenario: impl Fn(K, u64) -> Scenario,
    label: impl Fn(K) -> String,
    runs: &mut Runs,
) -> Result<BTreeMap<K, Vec<RunResult>>, SimError> {
    let grid: Vec<(K, u64)> = keys
        .iter()
        .flat_map(|&key| (1..=seeds as u64).map(move |seed| (key, seed)))
        .collect();
    let planned = grid
        .iter()
        .map(|&(key, seed)| (format!("{} seed {seed}", label(key)), scenario(key, seed)))
        .collect();
    let done = runs.run_all(planned, check_invariants, costs)?;
    let mut results: BTreeMap<K, Vec<RunResult>> = BTreeMap::new();
    for (&(key, _), r) in grid.iter().zip(done) {
        results.entry(key).or_default().push(r);
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn seed_004_scales_below_the_size_floors_of_the_others() {
        assert!(check_scale("--scale", 4, 0.002).is_ok(), "the tested scale");
        assert!(check_scale("--scale", 0, 0.002)
            .unwrap_err()
            .contains("allowed: 0.02 ..= 4"));
        let e = check_scale("--scale", 4, 0.0005).unwrap_err();
        assert!(e.contains("for seed 004; allowed: 0.001 ..= 4"), "{e}");
        assert!(check_scale("--scale", 4, 5.0).is_err());
    }
}
