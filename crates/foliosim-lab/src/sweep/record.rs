//! One finished run of a sweep, as stored in `<out>/runs/<id>.json` the moment it finishes:
//! its counters (kernel names) and run metrics. A rerun of the sweep skips every run whose
//! file is there and holds the same scenario.

use super::plan::RunSpec;
use super::SweepError;
use crate::RunResult;
use foliosim_model::workload::WorkloadResult;
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

/// A metric's value: counts and nanoseconds are integers, rates floats.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
#[serde(untagged)]
pub enum Num {
    Int(i64),
    Float(f64),
}

impl Num {
    pub fn as_f64(self) -> f64 {
        match self {
            Num::Int(i) => i as f64,
            Num::Float(f) => f,
        }
    }
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RunRecord {
    pub id: String,
    pub foliosim_version: String,
    pub seed: u64,
    /// The scenario that ran, every default written out (checked on resume).
    pub scenario_toml: String,
    /// Run metrics: simulated time, CPU times, per-workload throughput, lock waits, kernel
    /// threads' CPU time, per-memcg memory.stat.
    pub metrics: BTreeMap<String, Num>,
    /// /proc/vmstat and hugepages-*/stats/* deltas, kernel names.
    pub counters: BTreeMap<String, u64>,
    /// Counters over simulated time, when the scenario asks for them (`[report]
    /// sample_interval`); absent otherwise, so unsampled records read as before.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub timeseries: Option<crate::report::timeseries::TimeSeries>,
}

fn int(v: u64) -> Num {
    Num::Int(i64::try_from(v).unwrap_or(i64::MAX))
}

/// A workload's own figures, as its program prints them: thpscale's fault latency (µs) per
/// kind and % huge (a run has one thread count: a table's rows set it), usemem's lines.
fn workload_metrics(m: &mut BTreeMap<String, Num>, prefix: &str, w: &WorkloadResult) {
    if let Some(t) = &w.thpscale {
        for (kind, summary) in [
            ("fault_base_us", &t.fault_base_us),
            ("fault_huge_us", &t.fault_huge_us),
        ] {
            let Some(s) = summary else { continue };
            m.insert(format!("{prefix}.{kind}.samples"), int(s.samples as u64));
            for (stat, v) in [("min", s.min), ("amean", s.amean), ("max", s.max)] {
                m.insert(format!("{prefix}.{kind}.{stat}"), Num::Float(v));
            }
            // NaN with one sample (as mmtests): left out rather than a NaN column.
            if s.stddev.is_finite() {
                m.insert(format!("{prefix}.{kind}.stddev"), Num::Float(s.stddev));
            }
        }
        m.insert(format!("{prefix}.percent_huge"), Num::Float(t.percent_huge));
    }
    if let Some(u) = &w.usemem {
        m.insert(format!("{prefix}.total_kb_per_s"), int(u.total_kb_per_s));
        let per_task: Vec<f64> = u.lines.iter().map(|l| l.kb_per_s as f64).collect();
        if let Some(s) = foliosim_model::stats::Summary::of(&per_task) {
            for (stat, v) in [("min", s.min), ("amean", s.amean), ("max", s.max)] {
                m.insert(format!("{prefix}.task_kb_per_s.{stat}"), Num::Float(v));
            }
        }
    }
}

/// The metrics of a run, by column name.
pub fn metrics_of(r: &RunResult) -> BTreeMap<String, Num> {
    let mut m = BTreeMap::new();
    m.insert("simulated_ns".into(), int(r.simulated_ns));
    m.insert("steps".into(), int(r.steps));
    m.insert("cpu_user_ns".into(), int(r.cpu_user_ns));
    m.insert("cpu_sys_ns".into(), int(r.cpu_sys_ns));
    m.insert("cpu_iowait_ns".into(), int(r.cpu_iowait_ns));
    // A workload's columns are prefixed by its kind, and by kind and index among that kind
    // when the scenario has several of one kind (usemem, usemem1, ...).
    for (i, w) in r.workloads.iter().enumerate() {
        let same_kind = r.workloads.iter().filter(|x| x.kind == w.kind).count();
        let prefix = if same_kind > 1 {
            let nth = r.workloads[..i].iter().filter(|x| x.kind == w.kind).count();
            format!("{}{nth}", w.kind)
        } else {
            w.kind.clone()
        };
        m.insert(
            format!("{prefix}.throughput_bytes_per_s"),
            Num::Float(w.throughput_bytes_per_s),
        );
        m.insert(format!("{prefix}.elapsed_ns_max"), int(w.elapsed_ns_max));
        workload_metrics(&mut m, &prefix, w);
        // XSBench's figures, and its lookup phase's counters per lookup: independent of how
        // many lookups ran, so a table of any run length compares (seed 004's fit).
        if let Some(x) = &w.xsbench {
            m.insert(
                format!("{prefix}.lookups_per_s"),
                Num::Float(x.lookups_per_s),
            );
            for (name, &v) in &x.phase_counters {
                let per_lookup = v as f64 / x.lookups.max(1) as f64;
                m.insert(
                    format!("{prefix}.per_lookup.{name}"),
                    Num::Float(per_lookup),
                );
            }
        }
    }
    // Lock contention per lock name, all instances together (perf lock contention's totals).
    let mut locks: BTreeMap<&str, (u64, u64)> = BTreeMap::new();
    for l in &r.locks {
        let e = locks.entry(l.name.as_str()).or_default();
        e.0 += l.stats.contended;
        e.1 += l.stats.wait_ns_total;
    }
    for (name, (contended, wait)) in locks {
        m.insert(format!("lock.{name}.contended"), int(contended));
        m.insert(format!("lock.{name}.wait_ns_total"), int(wait));
    }
    for t in &r.kernel_threads {
        m.insert(format!("kthread.{}.sys_ns", t.name), int(t.sys_ns));
    }
    for (cg, stats) in &r.memcg_stats {
        for (name, v) in stats {
            m.insert(format!("memcg.{cg}.{name}"), int(*v));
        }
    }
    m
}

impl RunRecord {
    pub fn new(spec: &RunSpec, r: &RunResult) -> RunRecord {
        RunRecord {
            id: spec.id.clone(),
            foliosim_version: r.foliosim_version.clone(),
            seed: spec.seed,
            scenario_toml: spec.scenario_toml.clone(),
            metrics: metrics_of(r),
            counters: r.counters.clone(),
            timeseries: r.timeseries.clone(),
        }
    }

    pub fn to_json(&self) -> String {
        serde_json::to_string_pretty(self).expect("records always serialize")
    }
}

/// Run one planned run on the sim.
pub fn run_one(spec: &RunSpec) -> Result<RunRecord, SweepError> {
    let scenario = crate::Scenario::from_toml_str(&spec.scenario_toml)
        .map_err(|e| SweepError::Invalid(format!("run {}: {e}", spec.id)))?;
    let result = crate::run(&scenario).map_err(|e| SweepError::Run {
        run: describe(spec),
        message: e.to_string(),
    })?;
    Ok(RunRecord::new(spec, &result))
}

/// `kernel.version=6.9 size=64K seed=3` for messages.
pub fn describe(spec: &RunSpec) -> String {
    let mut parts: Vec<String> = spec.axes.iter().map(|(k, v)| format!("{k}={v}")).collect();
    parts.push(format!("seed={}", spec.seed));
    parts.join(" ")
}

pub fn runs_dir(out: &Path) -> PathBuf {
    out.join("runs")
}

fn record_path(out: &Path, id: &str) -> PathBuf {
    runs_dir(out).join(format!("{id}.json"))
}

fn io(path: &Path) -> impl FnOnce(std::io::Error) -> SweepError + '_ {
    move |source| SweepError::Io {
        path: path.display().to_string(),
        source,
    }
}

/// Write a record where a rerun finds it: to a temporary name, then renamed, so a killed
/// sweep leaves whole files or none.
pub fn store(out: &Path, record: &RunRecord) -> Result<(), SweepError> {
    let dir = runs_dir(out);
    std::fs::create_dir_all(&dir).map_err(io(&dir))?;
    let path = record_path(out, &record.id);
    let tmp = dir.join(format!(".{}.{}.tmp", record.id, std::process::id()));
    std::fs::write(&tmp, record.to_json()).map_err(io(&tmp))?;
    std::fs::rename(&tmp, &path).map_err(io(&path))
}

/// A record file is there (cheap: for progress; `load` checks it).
pub fn is_stored(out: &Path, spec: &RunSpec) -> bool {
    record_path(out, &spec.id).exists()
}

/// The stored record of a planned run, if it is there, whole, and of the same scenario.
pub fn load(out: &Path, spec: &RunSpec) -> Option<RunRecord> {
    let text = std::fs::read_to_string(record_path(out, &spec.id)).ok()?;
    let r: RunRecord = serde_json::from_str(&text).ok()?;
    (r.id == spec.id && r.scenario_toml == spec.scenario_toml && r.seed == spec.seed).then_some(r)
}

#[cfg(test)]
mod tests {
    use super::*;
    use foliosim_model::stats::Summary;
    use foliosim_model::workload::thpscale::ThpscaleResult;
    use foliosim_model::workload::usemem::{UsememLine, UsememResult};

    #[test]
    fn thpscale_and_usemem_figures_are_metrics() {
        let line = |kb_per_s| UsememLine {
            bytes: 1,
            usecs: 1,
            kb_per_s,
        };
        let results = [
            WorkloadResult {
                kind: "thpscale".into(),
                thpscale: Some(ThpscaleResult {
                    threads: 4,
                    fault_base_us: None,
                    fault_huge_us: Summary::of(&[100.0, 300.0]),
                    percent_huge: 75.0,
                }),
                ..WorkloadResult::default()
            },
            WorkloadResult {
                kind: "usemem".into(),
                usemem: Some(UsememResult {
                    lines: vec![line(10), line(30)],
                    total_kb_per_s: 40,
                }),
                ..WorkloadResult::default()
            },
        ];
        let mut m = BTreeMap::new();
        for w in &results {
            workload_metrics(&mut m, &w.kind, w);
        }
        let get = |k: &str| m.get(k).map(|v| v.as_f64());
        assert_eq!(get("thpscale.fault_huge_us.amean"), Some(200.0));
        assert_eq!(get("thpscale.fault_huge_us.max"), Some(300.0));
        assert_eq!(get("thpscale.fault_huge_us.samples"), Some(2.0));
        assert_eq!(get("thpscale.percent_huge"), Some(75.0));
        assert_eq!(get("thpscale.fault_base_us.amean"), None, "no base faults");
        assert_eq!(get("usemem.total_kb_per_s"), Some(40.0));
        assert_eq!(get("usemem.task_kb_per_s.min"), Some(10.0));
        assert_eq!(get("usemem.task_kb_per_s.amean"), Some(20.0));
    }
}
