//! Seed 001 (Vlastimil Babka, "Outsourcing page fault THP allocations to khugepaged", RFC on
//! 4.1-rc2): mmtests' thpscale on a 4-CPU single-node machine, 1 to 16 threads, with
//! `defrag=always` and `defrag=never`, mainline against the RFC (`kernel.thp_fault_alloc =
//! "thp-avail-nodes"`). The seed's latency, % huge and vmstat tables beside ours.
//!
//! The machine: 4 CPUs; its memory is not given, but its THP fault counts fix it: 14,322 THP
//! faults over six thread counts is 2,387 per run, and thpscale faults 1.2 x MAPSIZE / 2 MiB
//! per run with MAPSIZE = 80% of RAM: 4 GiB. Its DMA32 + Normal zones are one zone here. The
//! work file is on an SSD (the seed does not say). No swap: its Swap Ins/Outs are 0.
//!
//! Each thread count is one run from boot (mmtests drops caches between thread counts; the
//! seed's fragmentation comes from thpscale's own hole punching and file reads); the seed's
//! vmstat rows are deltas over all six, so ours are sums over the six runs.

use super::seed001_table::{SeedTables, ALWAYS, NEVER, THREADS};
use crate::reproduce::seed000::scaled;
use crate::reproduce::GIB;
use crate::reproduce::{run_grid, Runs};
use crate::stats::{percent_better, Better, Summary};
use crate::workload::thpscale::default_total_size;
use crate::{RunResult, Scenario, SimError};
use serde::Serialize;
use std::collections::BTreeMap;
use std::fmt::Write;

#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Serialize)]
pub enum Defrag {
    Always,
    Never,
}

/// Mainline 4.1-rc2, or with the RFC's four patches.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Serialize)]
pub enum Policy {
    Baseline,
    Rfc,
}

pub const DEFRAGS: [Defrag; 2] = [Defrag::Always, Defrag::Never];
pub const POLICIES: [Policy; 2] = [Policy::Baseline, Policy::Rfc];

/// The seed box's memory (see the module comment).
const MEMORY_BYTES: u64 = 4 * GIB;

pub fn scenario(defrag: Defrag, policy: Policy, threads: u32, scale: f64, seed: u64) -> Scenario {
    let memory = scaled(MEMORY_BYTES, scale, 64 << 20);
    let total = default_total_size(memory);
    let memory = memory.0;
    let text = format!(
        r#"
seed = {seed}
[machine]
cpus = 4
memory = {memory}
[machine.disk]
kind = "ssd"
size = {disk}
[[file]]
name = "thpscale-work"
size = {file}
[kernel]
version = "4.1"
thp_fault_alloc = "{policy}"
[sysfs]
thp_enabled = "always"
defrag = "{defrag}"
[[workload]]
kind = "thpscale"
threads = {threads}
total_size = {total}
file = "thpscale-work"
"#,
        disk = 2 * memory,
        // thpscale's work file: MAPSIZE + 16 MiB, whole pages.
        file = (total.0 + (16 << 20)).next_multiple_of(4096),
        total = total.0,
        policy = match policy {
            Policy::Baseline => "direct",
            Policy::Rfc => "thp-avail-nodes",
        },
        defrag = match defrag {
            Defrag::Always => "always",
            Defrag::Never => "never",
        },
    );
    Scenario::from_toml_str(&text).expect("seed 001's scenario is valid")
}

/// Our figures for one (defrag, policy): per thread count, over every seed.
#[derive(Debug, Clone, Serialize)]
pub struct Column {
    pub defrag: Defrag,
    pub policy: Policy,
    /// Per thread count (THREADS order): fault-base and fault-huge latency (µs) and % huge.
    pub fault_base_us: Vec<Option<Summary>>,
    pub fault_huge_us: Vec<Option<Summary>>,
    pub percent_huge: Vec<f64>,
    /// Counter deltas summed over the thread counts (mean over seeds).
    pub counters: BTreeMap<String, f64>,
    /// Simulated seconds of the six runs (mean over seeds), and the tasks' user + sys.
    pub elapsed_s: f64,
    pub sys_s: f64,
    pub khugepaged_sys_s: f64,
}

#[derive(Debug, Clone, Serialize)]
pub struct Report {
    pub scale: f64,
    pub seeds: u32,
    pub columns: Vec<Column>,
}

/// The seed's vmstat rows and the counters they are made of.
const VMSTAT_ROWS: [(&str, &[&str]); 17] = [
    (
        "Allocation stalls",
        &[
            "allocstall_movable",
            "allocstall_normal",
            "allocstall_dma32",
        ],
    ),
    ("Direct pages scanned", &["pgscan_direct"]),
    ("Kswapd pages scanned", &["pgscan_kswapd"]),
    ("Kswapd pages reclaimed", &["pgsteal_kswapd"]),
    ("Direct pages reclaimed", &["pgsteal_direct"]),
    ("THP fault alloc", &["thp_fault_alloc"]),
    ("THP collapse alloc", &["thp_collapse_alloc"]),
    ("THP splits", &["thp_split_page"]),
    ("THP fault fallback", &["thp_fault_fallback"]),
    ("THP collapse fail", &["thp_collapse_alloc_failed"]),
    ("Compaction stalls", &["compact_stall"]),
    ("Compaction success", &["compact_success"]),
    ("Compaction failures", &["compact_fail"]),
    ("Page migrate success", &["pgmigrate_success"]),
    ("Compaction pages isolated", &["compact_isolated"]),
    ("Compaction migrate scanned", &["compact_migrate_scanned"]),
    ("Compaction free scanned", &["compact_free_scanned"]),
];

pub fn reproduce(
    scale: f64,
    seeds: u32,
    check_invariants: bool,
    costs: &BTreeMap<String, f64>,
    runs: &mut Runs,
) -> Result<Report, SimError> {
    let keys: Vec<(Defrag, Policy, usize)> = DEFRAGS
        .iter()
        .flat_map(|&d| POLICIES.iter().map(move |&p| (d, p)))
        .flat_map(|(d, p)| (0..THREADS.len()).map(move |t| (d, p, t)))
        .collect();
    let results = run_grid(
        &keys,
        seeds,
        check_invariants,
        costs,
        |(d, p, t), seed| scenario(d, p, THREADS[t], scale, seed),
        |(d, p, t)| format!("defrag {d:?} {p:?} {} threads", THREADS[t]),
        runs,
    )?;
    let mut columns = Vec::new();
    for defrag in DEFRAGS {
        for policy in POLICIES {
            let runs = |t: usize| &results[&(defrag, policy, t)];
            let mut col = Column {
                defrag,
                policy,
                fault_base_us: Vec::new(),
                fault_huge_us: Vec::new(),
                percent_huge: Vec::new(),
                counters: BTreeMap::new(),
                elapsed_s: 0.0,
                sys_s: 0.0,
                khugepaged_sys_s: 0.0,
            };
            for t in 0..THREADS.len() {
                let summary =
                    |pick: fn(&crate::workload::thpscale::ThpscaleResult) -> Option<Summary>| {
                        Summary::pooled(
                            runs(t)
                                .iter()
                                .filter_map(|r| r.workloads[0].thpscale.as_ref().and_then(pick)),
                        )
                    };
                col.fault_base_us.push(summary(|x| x.fault_base_us));
                col.fault_huge_us.push(summary(|x| x.fault_huge_us));
                let (n_base, n_huge) = (
                    col.fault_base_us[t].map_or(0, |s| s.samples),
                    col.fault_huge_us[t].map_or(0, |s| s.samples),
                );
                col.percent_huge.push(if n_base + n_huge == 0 {
                    0.0
                } else {
                    100.0 * n_huge as f64 / (n_base + n_huge) as f64
                });
                let n = runs(t).len() as f64;
                for r in runs(t) {
                    for (name, v) in &r.counters {
                        *col.counters.entry(name.clone()).or_default() += *v as f64 / n;
                    }
                    col.elapsed_s += r.simulated_ns as f64 / 1e9 / n;
                    col.sys_s += r.cpu_sys_ns as f64 / 1e9 / n;
                    col.khugepaged_sys_s += khugepaged_sys_s(r) / n;
                }
            }
            columns.push(col);
        }
    }
    Ok(Report {
        scale,
        seeds,
        columns,
    })
}

fn khugepaged_sys_s(r: &RunResult) -> f64 {
    r.kernel_threads
        .iter()
        .filter(|t| t.name == "khugepaged")
        .map(|t| t.sys_ns as f64 / 1e9)
        .sum()
}

impl Report {
    fn column(&self, defrag: Defrag, policy: Policy) -> &Column {
        self.columns
            .iter()
            .find(|c| c.defrag == defrag && c.policy == policy)
            .expect("every column was run")
    }

    pub fn to_table(&self) -> String {
        let mut out = String::new();
        let _ = writeln!(
            out,
            "seed 001: thpscale on 4 CPUs, {} MiB, kernel 4.1 model, baseline vs the RFC (scale {}, {} seeds)",
            scaled(MEMORY_BYTES, self.scale, 64 << 20).0 >> 20,
            self.scale,
            self.seeds
        );
        let _ = writeln!(
            out,
            "(% = mmtests' difference of the RFC against the baseline, positive = better)"
        );
        for (defrag, seed) in [(Defrag::Always, &ALWAYS), (Defrag::Never, &NEVER)] {
            self.latency_table(&mut out, defrag, seed);
            self.vmstat_table(&mut out, defrag, seed);
        }
        out
    }

    fn latency_table(&self, out: &mut String, defrag: Defrag, seed: &SeedTables) {
        let (base, rfc) = (
            self.column(defrag, Policy::Baseline),
            self.column(defrag, Policy::Rfc),
        );
        let _ = writeln!(
            out,
            "\ndefrag={:<6} fault latency (µs)    seed base     seed RFC        % |   ours base     ours RFC        %",
            format!("{defrag:?}").to_lowercase()
        );
        for (si, stat) in ["Min", "Amean", "Max"].iter().enumerate() {
            let idx = [0, 1, 4][si];
            for (kind, seed_rows, ours) in [
                (
                    "base",
                    &seed.base,
                    (&base.fault_base_us, &rfc.fault_base_us),
                ),
                (
                    "huge",
                    &seed.huge,
                    (&base.fault_huge_us, &rfc.fault_huge_us),
                ),
            ] {
                for (t, threads) in THREADS.iter().enumerate() {
                    let (sb, sr) = seed_rows[idx][t];
                    let get =
                        |s: &Option<Summary>| s.map_or(f64::NAN, |s| [s.min, s.amean, s.max][si]);
                    let (ob, or) = (get(&ours.0[t]), get(&ours.1[t]));
                    let _ = writeln!(
                        out,
                        "{stat:<8} fault-{kind}-{threads:<2}             {sb:>11.0} {sr:>12.0} {:>7.2}% | {ob:>11.0} {or:>12.0} {:>7.2}%",
                        percent_better(sr, sb, Better::Lower),
                        percent_better(or, ob, Better::Lower),
                    );
                }
            }
        }
        for (t, threads) in THREADS.iter().enumerate() {
            let (sb, sr) = seed.percent_huge[t];
            let (ob, or) = (base.percent_huge[t], rfc.percent_huge[t]);
            let _ = writeln!(
                out,
                "Percentage huge-{threads:<2}              {sb:>11.2} {sr:>12.2} {:>7.2}% | {ob:>11.2} {or:>12.2} {:>7.2}%",
                percent_better(sr, sb, Better::Higher),
                percent_better(or, ob, Better::Higher),
            );
        }
    }

    fn vmstat_table(&self, out: &mut String, defrag: Defrag, seed: &SeedTables) {
        let (base, rfc) = (
            self.column(defrag, Policy::Baseline),
            self.column(defrag, Policy::Rfc),
        );
        let _ = writeln!(
            out,
            "\ndefrag={:<6} vmstat, 6 runs          seed base     seed RFC  dir |   ours base     ours RFC  dir  agree",
            format!("{defrag:?}").to_lowercase()
        );
        let dir = |a: f64, b: f64| {
            if b > a * 1.05 {
                "up"
            } else if b < a * 0.95 {
                "down"
            } else {
                "="
            }
        };
        for (name, parts) in VMSTAT_ROWS {
            let Some(&(_, sb, sr)) = seed.vmstat.iter().find(|(n, _, _)| *n == name) else {
                continue;
            };
            let sum = |c: &Column| {
                parts
                    .iter()
                    .map(|p| c.counters.get(*p).copied().unwrap_or(0.0))
                    .sum::<f64>()
            };
            let (ob, or) = (sum(base), sum(rfc));
            let (ds, dour) = (dir(sb as f64, sr as f64), dir(ob, or));
            let _ = writeln!(
                out,
                "{name:<34} {sb:>11} {sr:>12} {ds:>4} | {ob:>11.0} {or:>12.0} {dour:>4}  {}",
                if ds == dour { "yes" } else { "no" }
            );
        }
        let _ = writeln!(
            out,
            "{:<34} {:>11.1} {:>12.1}      | {:>11.2} {:>12.2}   (khugepaged {:.3} s -> {:.3} s)",
            "System time (s)",
            seed.times_s[1].0,
            seed.times_s[1].1,
            base.sys_s,
            rfc.sys_s,
            base.khugepaged_sys_s,
            rfc.khugepaged_sys_s
        );
    }
}

/// Cover-letter figures: fault latency of a huge page and % of faults served huge, per
/// defrag mode and policy, over the thread counts.
pub fn cover_figures(report: &serde_json::Value) -> Vec<String> {
    use super::fig::{rows, text};
    use crate::report::svg::{line_chart, Series};
    let cols = rows(report, "columns");
    let label = |c: &serde_json::Value| {
        format!("defrag={} {}", text(c, "defrag"), text(c, "policy")).to_lowercase()
    };
    let by_threads = |c: &serde_json::Value, f: &dyn Fn(&serde_json::Value) -> Option<f64>| {
        c.as_array()
            .map(|a| {
                a.iter()
                    .zip(THREADS)
                    .map(|(v, t)| (t as f64, f(v).unwrap_or(f64::NAN)))
                    .collect()
            })
            .unwrap_or_default()
    };
    let series = |field: &str, f: &dyn Fn(&serde_json::Value) -> Option<f64>| -> Vec<Series> {
        cols.iter()
            .map(|c| Series {
                label: label(c),
                points: by_threads(&c[field], f),
            })
            .collect()
    };
    let mean_ms = |v: &serde_json::Value| v["amean"].as_f64().map(|us| us / 1000.0);
    vec![
        line_chart(
            "thpscale: huge-page fault latency by defrag mode",
            "threads",
            "fault-huge latency, mean, ms",
            &series("fault_huge_us", &mean_ms),
        ),
        line_chart(
            "thpscale: % of faults served by a huge page",
            "threads",
            "% huge",
            &series("percent_huge", &|v| v.as_f64()),
        ),
    ]
}
