//! `foliosim validate`: the sim and the live kernel side by side. Every counter both report is a
//! row; rows whose value depends only on policy (how many folios of which size were faulted and
//! swapped out whole or split) are checked against a tolerance, the rest (timing, reclaim
//! heuristics, host noise) are shown for information. Across scenarios that run the same
//! workload, the throughput ordering of the sim must match the live kernel's.

use crate::others::OtherFaults;
use crate::probe::SwapinMthpProbe;
use crate::run::LiveResult;
use foliosim::scenario::{
    CgroupVersion, Scenario, SwapDeviceKind, ThpDefrag, PAGE_SIZE, PMD_ORDER,
};
use foliosim::workload::{self, Op};
use foliosim::RunResult;
use serde::Serialize;
use std::collections::BTreeMap;

const THROUGHPUT_ROW: &str = "workload throughput MiB/s";

/// Counts at or below this on both sides are noise (other processes on the host, the runner).
pub const DEFAULT_MIN_COUNT: u64 = 64;

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Check {
    /// A policy row within the tolerance.
    Ok,
    /// A policy row outside the tolerance.
    Miss,
    /// A policy row too small on both sides to judge.
    Noise,
    /// Not checked: timing or heuristics the sim does not claim to match.
    Info,
    /// A policy row outside the tolerance that host state named in its note explains: other
    /// processes' faults in a host-wide counter, or live runs that disagree among themselves
    /// more than the tolerance with the sim inside their range.
    Host,
}

#[derive(Debug, Clone, Serialize)]
pub struct Row {
    pub name: String,
    pub sim: f64,
    pub live: f64,
    /// (live - sim) / sim; for shares, live - sim (fraction points); None when both are 0.
    pub diff: Option<f64>,
    pub check: Check,
    /// Why an info row is not checked, or what a policy row measures.
    pub note: String,
}

impl Row {
    /// The row as the table prints it: counts whole, shares in points, others in percent.
    fn to_line(&self) -> String {
        let fmt = |v: f64| {
            if v.fract() == 0.0 && v.abs() < 1e15 {
                format!("{v:.0}")
            } else {
                format!("{v:.4}")
            }
        };
        let diff = match self.diff {
            None => "-".to_string(),
            Some(d) if d.is_infinite() => "new".to_string(),
            Some(d) if self.name.ends_with("share") || self.name.contains("share ") => {
                format!("{:+.1}pt", d * 100.0)
            }
            Some(d) => format!("{:+.1}%", d * 100.0),
        };
        let check = match self.check {
            Check::Ok => "ok",
            Check::Miss => "MISS",
            Check::Noise => "noise",
            Check::Info => "info",
            Check::Host => "host",
        };
        format!(
            "  {:<44} {:>14} {:>14} {:>9}  {:<6} {}\n",
            self.name,
            fmt(self.sim),
            fmt(self.live),
            diff,
            check,
            self.note
        )
    }
}

#[derive(Debug, Clone, Serialize)]
pub struct Comparison {
    pub scenario: String,
    pub sim_profile: String,
    pub live_kernel: String,
    pub rows: Vec<Row>,
    pub misses: usize,
    /// Throughput (bytes/s) summed over workloads: (sim, live median over the live runs).
    pub throughput_bytes_per_s: (f64, f64),
    /// Throughput of every live run (the counters are the median of the runs').
    pub live_runs_throughput_bytes_per_s: Vec<f64>,
    /// The scenario's workloads, to group comparable scenarios.
    #[serde(skip)]
    group: String,
    pub live_task_failures: Vec<String>,
    pub live_notes: Vec<String>,
}

#[derive(Debug, Clone, Serialize)]
pub struct OrderRow {
    pub group: String,
    pub scenario: String,
    pub sim_ratio: f64,
    /// Median of the live runs, and their range, relative to the group's first scenario.
    pub live_ratio: f64,
    pub live_ratio_min: f64,
    pub live_ratio_max: f64,
    pub sim_rank: usize,
    pub live_rank: usize,
}

#[derive(Debug, Clone, Serialize)]
pub struct Report {
    pub tolerance: f64,
    pub min_count: u64,
    pub scenarios: Vec<Comparison>,
    /// Throughput relative to the first scenario of each group of same-workload scenarios.
    pub throughput_order: Vec<OrderRow>,
    /// Pairs the live runs order without overlap that the sim orders the other way.
    pub ordering_disagreements: Vec<(String, String)>,
    /// Pairs whose live ranges overlap: the live runs do not order them.
    pub ordering_ties_live: usize,
    /// Pairs the sim puts within the tolerance of each other: it claims no order for them.
    pub ordering_ties_sim: usize,
    pub ordering_agrees: bool,
    pub misses: usize,
    pub pass: bool,
}

/// Would the sim swap large folios back in whole (alloc_swap_folio) in this scenario: its
/// profile does, a swap device is synchronous (zram, ramdisk) and a size below PMD is enabled?
pub fn sim_swaps_in_mthp(s: &Scenario) -> bool {
    let below_pmd = (1u32 << PMD_ORDER) - 2; // orders 1 ..= PMD_ORDER - 1
    s.kernel.swapin_mthp()
        && s.machine
            .swap_devices
            .iter()
            .any(|d| matches!(d.kind, SwapDeviceKind::Zram | SwapDeviceKind::Ramdisk))
        && (s.sysfs.orders_enabled(true) | s.sysfs.orders_enabled(false)) & below_pmd != 0
}

/// Configure the sim like the host where the host's state decides what the scenario leaves
/// open: mTHP swap-in (the probe; the host may have lost it since boot), `defrag` when the
/// scenario does not set it (the live run then keeps the host's value) and the memory
/// controller's cgroup version. Returns a note for each change.
pub fn configure_sim_like_host(
    s: &mut Scenario,
    swapin_probe: Option<&SwapinMthpProbe>,
    host_defrag: Option<ThpDefrag>,
    host_cgroup: Option<CgroupVersion>,
) -> Vec<String> {
    let mut notes = vec![];
    if let Some(v) = host_cgroup.filter(|&v| v != s.kernel.cgroup) {
        s.kernel.cgroup = v;
        let name = if v == CgroupVersion::V1 { "v1" } else { "v2" };
        notes.push(format!(
            "the host's memory controller is cgroup {name}; sim run with kernel.cgroup = \"{name}\""
        ));
    }
    if let Some(probe) = swapin_probe.filter(|_| sim_swaps_in_mthp(s)) {
        match probe.verdict() {
            Ok(false) => {
                s.kernel.swapin_mthp = Some(false);
                notes.push(format!(
                    "{}; sim run with kernel.swapin_mthp = false",
                    probe.describe()
                ));
            }
            Ok(true) => {}
            Err(_) => notes.push(format!(
                "{}; sim run with its profile's mTHP swap-in",
                probe.describe()
            )),
        }
    }
    if let (None, Some(host)) = (s.sysfs.defrag, host_defrag) {
        s.sysfs.defrag = Some(host);
        notes.push(format!(
            "the scenario leaves defrag unset, so the live run kept the host's `{}`; sim run with it",
            host.name()
        ));
    }
    notes
}

/// Policy-only counters (spec: they follow from the allocation and swap-out policy alone).
fn is_policy(name: &str) -> bool {
    const VMSTAT: &[&str] = &[
        "pswpout",
        "thp_swpout",
        "thp_swpout_fallback",
        "thp_fault_alloc",
        "thp_fault_fallback",
        "thp_fault_fallback_charge",
        // tmpfs: which size shmem_alloc_and_add_folio gets (2M: thp_file_*).
        "thp_file_alloc",
        "thp_file_fallback",
        "thp_file_fallback_charge",
        "zswpout",
    ];
    const MTHP: &[&str] = &[
        "anon_fault_alloc",
        "anon_fault_fallback",
        "anon_fault_fallback_charge",
        "swpout",
        "swpout_fallback",
        "zswpout",
        "shmem_alloc",
        "shmem_fallback",
        "shmem_fallback_charge",
    ];
    if let Some(rest) = name.strip_prefix("hugepages-") {
        return rest
            .rsplit_once("/stats/")
            .is_some_and(|(_, stat)| MTHP.contains(&stat));
    }
    VMSTAT.contains(&name)
}

/// Why an information row is not held to the tolerance.
fn info_note(name: &str) -> &'static str {
    let stat = name.rsplit('/').next().unwrap_or(name);
    match stat {
        "pgfault" => "live counts every process's faults (runner, mkswap, host) and swap-in faults",
        "pgmajfault" | "pswpin" | "swpin" => {
            "swap-in: readahead and mTHP swap-in differ by release"
        }
        "pgscan_direct" | "pgsteal_direct" | "pgscan_anon" | "pgsteal_anon" | "pgactivate"
        | "pgdeactivate" | "allocstall_movable" => {
            "reclaim heuristics (batching, LRU aging), not modelled count for count"
        }
        s if s.starts_with("nr_tlb") => "TLB flush batching and lazy mm_cpumask differ",
        s if s.starts_with("workingset_activate") || s.starts_with("workingset_restore") => {
            "evicted with the root as target, the host's own page cache counts in the workingset"
        }
        "split" | "split_failed" | "thp_split_page" | "thp_split_pmd" | "thp_split_page_failed" => {
            "split counts: checked through swpout_fallback"
        }
        "oom_kill" => "should be 0 on both",
        _ => "not a policy counter",
    }
}

fn rel(sim: f64, live: f64) -> Option<f64> {
    if sim == 0.0 && live == 0.0 {
        None
    } else if sim == 0.0 {
        Some(f64::INFINITY)
    } else {
        Some((live - sim) / sim)
    }
}

/// With a device that completes writes later (a disk, a swap file), reclaim writes more folios
/// while earlier writes are in flight, and frees each only when it meets it again, rotated to
/// the inactive tail (folio_end_writeback -> folio_rotate_reclaimable). The pages written but
/// not yet freed when the tasks exit are freed by the exit, not by reclaim: pswpout counts
/// them, pgsteal does not. How many depends on when the device completed the last writes, so
/// on the host's disk load; the live runs on this VM varied from under 1k to 33k pages
/// (docs/live-host-effects.md).
fn written_ahead_row(
    scenario: &Scenario,
    sim: &RunResult,
    live: &BTreeMap<String, u64>,
) -> Option<Row> {
    let asynchronous = scenario
        .machine
        .swap_devices
        .iter()
        .any(|d| !matches!(d.kind, SwapDeviceKind::Zram | SwapDeviceKind::Ramdisk));
    let ahead = |c: &BTreeMap<String, u64>| {
        let get = |k: &str| c.get(k).copied().unwrap_or(0) as f64;
        get("pswpout") - get("pgsteal_anon")
    };
    let (s, l) = (ahead(&sim.counters), ahead(live));
    asynchronous.then(|| Row {
        name: "pswpout - pgsteal_anon (written, freed by exit)".into(),
        sim: s,
        live: l,
        diff: rel(s, l),
        check: Check::Info,
        note:
            "written while earlier writes were in flight, not yet reclaimed at exit: device timing"
                .into(),
    })
}

fn written_bytes(scenario: &Scenario) -> u64 {
    workload::all_ops(scenario)
        .map(|op| match op {
            Op::Touch {
                nr, write: true, ..
            } => nr as u64 * PAGE_SIZE,
            _ => 0,
        })
        .sum()
}

/// Each counter's median over the live runs, and its range (min, max).
type LiveCounters = (BTreeMap<String, u64>, BTreeMap<String, (u64, u64)>);

fn median_counters(runs: &[LiveResult]) -> LiveCounters {
    let mut values: BTreeMap<&str, Vec<u64>> = BTreeMap::new();
    for run in runs {
        for (k, &v) in &run.counters {
            values.entry(k).or_default().push(v);
        }
    }
    let mut median = BTreeMap::new();
    let mut range = BTreeMap::new();
    for (k, mut v) in values {
        // A run that lacks the counter counted none.
        v.resize(runs.len(), 0);
        v.sort_unstable();
        median.insert(k.to_string(), v[v.len() / 2]);
        range.insert(k.to_string(), (v[0], v[v.len() - 1]));
    }
    (median, range)
}

/// The order of a per-size fault counter (`hugepages-64kB/stats/anon_fault_*`, or the PMD
/// size's `thp_fault_*`): the rows other processes' faults may add to.
fn fault_row_order(name: &str) -> Option<u32> {
    if name.starts_with("thp_fault_") {
        return Some(PMD_ORDER);
    }
    let (size, stat) = name.strip_prefix("hugepages-")?.split_once("kB/stats/")?;
    let pages = size.parse::<u64>().ok()? * 1024 / PAGE_SIZE;
    (stat.starts_with("anon_fault_") && pages.is_power_of_two()).then(|| pages.trailing_zeros())
}

/// At most how many of a fault row's counts other processes took (others.rs): every other
/// process's faults in a size the run sets to `always`, those of processes with MADV_HUGEPAGE
/// memory in a size set to `madvise`.
fn others_bound(name: &str, scenario: &Scenario, others: &OtherFaults) -> u64 {
    let Some(order) = fault_row_order(name) else {
        return 0;
    };
    if scenario.sysfs.orders_enabled(false) & 1 << order != 0 {
        others.all_minflt
    } else if scenario.sysfs.orders_enabled(true) & 1 << order != 0 {
        others.madvised_minflt
    } else {
        0
    }
}

/// A policy row's check, and the note of one host state explains: other processes' faults
/// (`others`: only ever added to the live count) or live runs that disagree among themselves
/// (`range`: the sim within it, widened by the tolerance, is not a miss).
fn policy_check(
    (s, l): (f64, f64),
    range: (u64, u64),
    others: u64,
    tolerance: f64,
    min_count: u64,
) -> (Check, String) {
    if s.max(l) <= min_count as f64 {
        return (Check::Noise, String::new());
    }
    if rel(s, l).is_some_and(|d| d.abs() <= tolerance) {
        return (Check::Ok, String::new());
    }
    let within = |live: f64| rel(s, live).is_some_and(|d| d.abs() <= tolerance);
    if others > 0 && l > s && within((l - others as f64).max(s)) {
        let note = format!(
            "other processes' faults count here too (up to {others} during the run; see the live notes)"
        );
        return (Check::Host, note);
    }
    let (lo, hi) = (range.0 as f64, range.1 as f64);
    if lo < hi && s >= lo * (1.0 - tolerance) && s <= hi * (1.0 + tolerance) {
        let note = format!(
            "live runs range {lo}-{hi}, more than the tolerance apart; the sim is within their range"
        );
        return (Check::Host, note);
    }
    (Check::Miss, String::new())
}

/// Compare the sim with the live runs: every counter's median over `live_runs` (the first
/// run's notes and task failures).
pub fn compare(
    name: &str,
    scenario: &Scenario,
    sim: &RunResult,
    live_runs: &[LiveResult],
    tolerance: f64,
    min_count: u64,
) -> Comparison {
    let live = &live_runs[0];
    let (live_counters, live_range) = median_counters(live_runs);
    // A shootdown microbenchmark makes its flush counts policy: one per operation.
    let tlb_scenario = is_tlb_scenario(scenario);
    let others = largest_other_faults(live_runs);
    let mut rows = vec![];
    for (k, &s) in &sim.counters {
        let Some(&l) = live_counters.get(k) else {
            continue;
        };
        let (s, l) = (s as f64, l as f64);
        let policy = is_policy(k) || (tlb_scenario && k.starts_with("nr_tlb_remote_flush"));
        let (check, note) = if policy {
            let bound = others_bound(k, scenario, &others);
            policy_check((s, l), live_range[k], bound, tolerance, min_count)
        } else {
            (Check::Info, info_note(k).to_string())
        };
        rows.push(Row {
            name: k.clone(),
            sim: s,
            live: l,
            diff: rel(s, l),
            check,
            note,
        });
    }
    rows.extend(fallback_share_rows(
        &sim.counters,
        &live_counters,
        tolerance,
        min_count,
    ));
    let pswpout_range = live_range.get("pswpout").copied().unwrap_or_default();
    rows.extend(pswpout_per_gib_row(
        scenario,
        (&sim.counters, &live_counters),
        pswpout_range,
        tolerance,
        min_count,
    ));
    rows.extend(written_ahead_row(scenario, sim, &live_counters));
    // Summed over workloads, as usemem's lines are summed.
    let tput = |w: &[foliosim::workload::WorkloadResult]| {
        w.iter().map(|w| w.throughput_bytes_per_s).sum::<f64>()
    };
    let throughput = (tput(&sim.workloads), tput(&live.workloads));
    rows.extend(time_rows(sim, live, throughput));
    rows.extend(thpscale_rows(sim, live, tolerance, min_count));
    rows.extend(tlb_rows(sim, live, tlb_scenario, tolerance, min_count));
    let misses = rows.iter().filter(|r| r.check == Check::Miss).count();
    Comparison {
        scenario: name.into(),
        sim_profile: sim.kernel.clone(),
        live_kernel: live.kernel_release.clone(),
        rows,
        misses,
        throughput_bytes_per_s: throughput,
        live_runs_throughput_bytes_per_s: vec![throughput.1],
        group: group_key(scenario),
        live_task_failures: live.task_failures.clone(),
        live_notes: live.notes.clone(),
    }
}

fn counter(r: &BTreeMap<String, u64>, k: &str) -> f64 {
    r.get(k).copied().unwrap_or(0) as f64
}

/// Other processes' faults during the live runs: each bound the largest any one run saw.
fn largest_other_faults(live_runs: &[LiveResult]) -> OtherFaults {
    live_runs
        .iter()
        .map(|r| r.other_faults.clone())
        .reduce(|a, b| OtherFaults {
            madvised_minflt: a.madvised_minflt.max(b.madvised_minflt),
            all_minflt: a.all_minflt.max(b.all_minflt),
            madvisers: a.madvisers.into_iter().chain(b.madvisers).collect(),
        })
        .unwrap_or_default()
}

/// swpout_fallback share per size (and overall): a fraction, compared in fraction points.
fn fallback_share_rows(
    sim: &BTreeMap<String, u64>,
    live: &BTreeMap<String, u64>,
    tolerance: f64,
    min_count: u64,
) -> Vec<Row> {
    let sizes: Vec<String> = sim
        .keys()
        .filter_map(|k| k.strip_suffix("/stats/swpout").map(str::to_string))
        .collect();
    let mut rows = vec![];
    let mut totals = [(0.0, 0.0), (0.0, 0.0)]; // (swpout, fallback) sim, live
    for size in &sizes {
        let out = format!("{size}/stats/swpout");
        let fb = format!("{size}/stats/swpout_fallback");
        let (so, sf) = (counter(sim, &out), counter(sim, &fb));
        let (lo, lf) = (counter(live, &out), counter(live, &fb));
        totals[0].0 += so;
        totals[0].1 += sf;
        totals[1].0 += lo;
        totals[1].1 += lf;
        if so + sf + lo + lf == 0.0 {
            continue;
        }
        rows.push(share_row(
            &format!("{size} swpout_fallback share"),
            (so, sf),
            (lo, lf),
            tolerance,
            min_count,
        ));
    }
    if totals.iter().any(|(a, b)| a + b > 0.0) {
        rows.push(share_row(
            "mTHP swpout_fallback share (all sizes)",
            totals[0],
            totals[1],
            tolerance,
            min_count,
        ));
    }
    rows
}

/// pswpout per GiB the workload writes (sim, live), when it writes any.
fn pswpout_per_gib_row(
    scenario: &Scenario,
    (sim, live): (&BTreeMap<String, u64>, &BTreeMap<String, u64>),
    range: (u64, u64),
    tolerance: f64,
    min_count: u64,
) -> Option<Row> {
    let gib = written_bytes(scenario) as f64 / (1u64 << 30) as f64;
    if gib <= 0.0 {
        return None;
    }
    let (s, l) = (counter(sim, "pswpout"), counter(live, "pswpout"));
    let (check, why) = policy_check((s, l), range, 0, tolerance, min_count);
    Some(Row {
        name: "pswpout per GiB written".into(),
        sim: s / gib,
        live: l / gib,
        diff: rel(s, l),
        check,
        note: match why.as_str() {
            "" => format!("{gib:.3} GiB written by the workload"),
            why => format!("{gib:.3} GiB written by the workload; {why}"),
        },
    })
}

/// Throughput, CPU and elapsed time: shown, never checked (host and cost model).
fn time_rows(sim: &RunResult, live: &LiveResult, throughput: (f64, f64)) -> Vec<Row> {
    let mib = (1u64 << 20) as f64;
    [
        (
            THROUGHPUT_ROW,
            throughput.0 / mib,
            throughput.1 / mib,
            "absolute speed: host and cost model (see the ordering table)",
        ),
        (
            "cpu sys s",
            sim.cpu_sys_ns as f64 / 1e9,
            live.cpu_sys_ns as f64 / 1e9,
            "kernel CPU time of the tasks",
        ),
        (
            "cpu user s",
            sim.cpu_user_ns as f64 / 1e9,
            live.cpu_user_ns as f64 / 1e9,
            "user CPU time of the tasks",
        ),
        (
            "elapsed s (sim: simulated, live: wall)",
            sim.simulated_ns as f64 / 1e9,
            live.wall_ns as f64 / 1e9,
            "from the tasks' start to the last exit",
        ),
    ]
    .into_iter()
    .map(|(label, s, l, note)| Row {
        name: label.into(),
        sim: s,
        live: l,
        diff: rel(s, l),
        check: Check::Info,
        note: note.into(),
    })
    .collect()
}

impl Comparison {
    /// One scenario's rows (those non-zero on a side), with the live runs' failures and notes.
    fn to_table(&self) -> String {
        let mut out = format!(
            "\n{}  (sim profile {}, live kernel {})\n",
            self.scenario, self.sim_profile, self.live_kernel
        );
        for f in &self.live_task_failures {
            out.push_str(&format!("  live task failed: {f}\n"));
        }
        for n in &self.live_notes {
            out.push_str(&format!("  live note: {n}\n"));
        }
        out.push_str(&format!(
            "  {:<44} {:>14} {:>14} {:>9}  {:<6} {}\n",
            "row", "sim", "live", "diff", "check", "note"
        ));
        let mut hidden = 0;
        for r in &self.rows {
            if r.sim == 0.0 && r.live == 0.0 {
                hidden += 1;
                continue;
            }
            out.push_str(&r.to_line());
        }
        out.push_str(&format!(
            "  ({hidden} counters are 0 on both sides; --format json lists them)\n"
        ));
        out
    }

    /// Take the throughputs of repeated live runs: the median stands for the scenario.
    pub fn set_live_runs(&mut self, mut runs_bytes_per_s: Vec<f64>) {
        runs_bytes_per_s.sort_by(f64::total_cmp);
        let median = runs_bytes_per_s[runs_bytes_per_s.len() / 2];
        self.throughput_bytes_per_s.1 = median;
        if let Some(row) = self.rows.iter_mut().find(|r| r.name == THROUGHPUT_ROW) {
            row.live = median / (1u64 << 20) as f64;
            row.diff = rel(row.sim, row.live);
            row.note = format!(
                "absolute speed: host and cost model; live median of {} run(s)",
                runs_bytes_per_s.len()
            );
        }
        self.live_runs_throughput_bytes_per_s = runs_bytes_per_s;
    }

    fn live_range(&self) -> (f64, f64) {
        let r = &self.live_runs_throughput_bytes_per_s;
        (r[0], r[r.len() - 1])
    }
}

/// Scenarios that run the same amount of work the same way to the same kind of swap device
/// (they differ in folio size or knobs) are compared for throughput ordering.
fn group_key(scenario: &Scenario) -> String {
    let tasks: Vec<String> = scenario
        .workloads
        .iter()
        .flat_map(|w| workload::tasks(w, scenario.seed))
        .map(|t| format!("{}@{:?}", t.ops.len(), t.memcg))
        .collect();
    let limits: Vec<_> = scenario.memcgs.iter().map(|c| c.max).collect();
    let devices: Vec<_> = scenario
        .machine
        .swap_devices
        .iter()
        .map(|d| d.kind)
        .collect();
    format!(
        "{} {:?} {:?} {:?}",
        written_bytes(scenario),
        tasks,
        limits,
        devices
    )
}

fn is_tlb_scenario(scenario: &Scenario) -> bool {
    scenario
        .workloads
        .iter()
        .any(|w| matches!(w, foliosim::scenario::WorkloadSpec::TlbShootdown(_)))
}

/// The "TLB shootdowns" line of /proc/interrupts (IPIs received), all CPUs and per CPU: policy
/// in a shootdown microbenchmark (which CPU takes them is the scheduler's: information).
fn tlb_rows(
    sim: &RunResult,
    live: &LiveResult,
    tlb_scenario: bool,
    tolerance: f64,
    min_count: u64,
) -> Vec<Row> {
    use crate::counters::TLB_IRQ;
    let Some(live_total) = live.counters.get(TLB_IRQ) else {
        return vec![];
    };
    let per_cpu = sim
        .tlb
        .as_ref()
        .map(|t| t.shootdowns_per_cpu.clone())
        .unwrap_or_default();
    let (s, l) = (per_cpu.iter().sum::<u64>() as f64, *live_total as f64);
    let diff = rel(s, l);
    let check = if !tlb_scenario {
        Check::Info
    } else if s.max(l) <= min_count as f64 {
        Check::Noise
    } else if diff.is_some_and(|d| d.abs() <= tolerance) {
        Check::Ok
    } else {
        Check::Miss
    };
    let mut rows = vec![Row {
        name: "TLB shootdowns (all CPUs)".into(),
        sim: s,
        live: l,
        diff,
        check,
        note: if tlb_scenario {
            "IPIs received, /proc/interrupts (live: every process on the host)".into()
        } else {
            "IPIs received, /proc/interrupts: lazy mm_cpumask and batching differ".into()
        },
    }];
    for (cpu, &sv) in per_cpu.iter().enumerate() {
        let lv = live
            .counters
            .get(&format!("{TLB_IRQ}/cpu{cpu}"))
            .copied()
            .unwrap_or(0);
        rows.push(Row {
            name: format!("TLB shootdowns cpu{cpu}"),
            sim: sv as f64,
            live: lv as f64,
            diff: rel(sv as f64, lv as f64),
            check: Check::Info,
            note: "which CPU takes them is the scheduler's".into(),
        });
    }
    rows
}

/// thpscale's own results: the share of timed faults that got a THP (mincore said resident;
/// policy, in fraction points) and the mean fault latencies (host speed: information).
fn thpscale_rows(sim: &RunResult, live: &LiveResult, tolerance: f64, min_count: u64) -> Vec<Row> {
    let mut rows = vec![];
    let pairs = sim.workloads.iter().zip(&live.workloads);
    for (s, l) in pairs.filter_map(|(s, l)| Some((s.thpscale.as_ref()?, l.thpscale.as_ref()?))) {
        let count = |r: &foliosim::workload::thpscale::ThpscaleResult| {
            let n = |x: &Option<foliosim::stats::Summary>| x.as_ref().map_or(0, |x| x.samples);
            (n(&r.fault_huge_us) as f64, n(&r.fault_base_us) as f64)
        };
        // share_row's "fallback" here is the huge faults: the share is huge / all.
        let (sh, sb) = count(s);
        let (lh, lb) = count(l);
        let mut row = share_row(
            "thpscale fault-huge share",
            (sb, sh),
            (lb, lh),
            tolerance,
            min_count,
        );
        row.note = "huge / all timed faults (mincore); diff in fraction points".into();
        rows.push(row);
        for (name, sv, lv) in [
            (
                "thpscale fault-huge mean us",
                &s.fault_huge_us,
                &l.fault_huge_us,
            ),
            (
                "thpscale fault-base mean us",
                &s.fault_base_us,
                &l.fault_base_us,
            ),
        ] {
            let (sm, lm) = (
                sv.as_ref().map_or(0.0, |x| x.amean),
                lv.as_ref().map_or(0.0, |x| x.amean),
            );
            if sm == 0.0 && lm == 0.0 {
                continue;
            }
            rows.push(Row {
                name: name.into(),
                sim: sm,
                live: lm,
                diff: rel(sm, lm),
                check: Check::Info,
                note: "fault latency: host and cost model".into(),
            });
        }
    }
    rows
}

fn share_row(
    name: &str,
    (so, sf): (f64, f64),
    (lo, lf): (f64, f64),
    tolerance: f64,
    min_count: u64,
) -> Row {
    let share = |out: f64, fb: f64| {
        if out + fb == 0.0 {
            0.0
        } else {
            fb / (out + fb)
        }
    };
    let (s, l) = (share(so, sf), share(lo, lf));
    let diff = l - s;
    let check = if (so + sf).max(lo + lf) <= min_count as f64 {
        Check::Noise
    } else if diff.abs() <= tolerance {
        Check::Ok
    } else {
        Check::Miss
    };
    Row {
        name: name.into(),
        sim: s,
        live: l,
        diff: Some(diff),
        check,
        note: "fallback / (swpout + fallback); diff in fraction points".into(),
    }
}

impl Report {
    pub fn new(scenarios: Vec<Comparison>, tolerance: f64, min_count: u64) -> Report {
        let mut throughput_order = vec![];
        let mut ordering_disagreements = vec![];
        let mut ordering_ties_live = 0;
        let mut ordering_ties_sim = 0;
        let mut groups: Vec<&str> = scenarios.iter().map(|c| c.group.as_str()).collect();
        groups.dedup();
        groups.sort();
        groups.dedup();
        for (g, group) in groups.iter().enumerate() {
            let members: Vec<&Comparison> = scenarios
                .iter()
                .filter(|c| c.group == *group && c.throughput_bytes_per_s.0 > 0.0)
                .collect();
            if members.len() < 2 {
                continue;
            }
            let (s0, l0) = members[0].throughput_bytes_per_s;
            let l0 = l0.max(1.0);
            let rank = |pick: fn(&Comparison) -> f64, c: &Comparison| {
                members.iter().filter(|m| pick(m) > pick(c)).count() + 1
            };
            for c in &members {
                let (lo, hi) = c.live_range();
                throughput_order.push(OrderRow {
                    group: format!("group {}", g + 1),
                    scenario: c.scenario.clone(),
                    sim_ratio: c.throughput_bytes_per_s.0 / s0,
                    live_ratio: c.throughput_bytes_per_s.1 / l0,
                    live_ratio_min: lo / l0,
                    live_ratio_max: hi / l0,
                    sim_rank: rank(|m| m.throughput_bytes_per_s.0, c),
                    live_rank: rank(|m| m.throughput_bytes_per_s.1, c),
                });
            }
            for (i, a) in members.iter().enumerate() {
                for b in &members[i + 1..] {
                    let ((alo, ahi), (blo, bhi)) = (a.live_range(), b.live_range());
                    let live_faster_a = if ahi < blo {
                        false
                    } else if bhi < alo {
                        true
                    } else {
                        ordering_ties_live += 1;
                        continue;
                    };
                    let (sa, sb) = (a.throughput_bytes_per_s.0, b.throughput_bytes_per_s.0);
                    if (sa - sb).abs() <= tolerance * sa.max(sb) {
                        ordering_ties_sim += 1;
                        continue;
                    }
                    let sim_faster_a = sa > sb;
                    if live_faster_a != sim_faster_a {
                        ordering_disagreements.push((a.scenario.clone(), b.scenario.clone()));
                    }
                }
            }
        }
        let ordering_agrees = ordering_disagreements.is_empty();
        let misses: usize = scenarios.iter().map(|c| c.misses).sum();
        let pass = misses == 0 && ordering_agrees;
        Report {
            tolerance,
            min_count,
            scenarios,
            throughput_order,
            ordering_disagreements,
            ordering_ties_live,
            ordering_ties_sim,
            ordering_agrees,
            misses,
            pass,
        }
    }

    pub fn to_table(&self) -> String {
        let mut out = String::new();
        for c in &self.scenarios {
            out.push_str(&c.to_table());
        }
        if !self.throughput_order.is_empty() {
            out.push_str(&self.ordering_table());
        }
        out.push_str(&format!(
            "\n{}: {} policy row(s) outside {:.0}% (counts <= {} on both sides are noise)\n",
            if self.pass { "PASS" } else { "FAIL" },
            self.misses,
            self.tolerance * 100.0,
            self.min_count
        ));
        let host = self
            .scenarios
            .iter()
            .flat_map(|c| &c.rows)
            .filter(|r| r.check == Check::Host)
            .count();
        if host > 0 {
            out.push_str(&format!(
                "{host} more row(s) outside it that host state explains (check `host`: see their notes)\n"
            ));
        }
        out
    }

    /// Throughput relative to the first scenario of each group, and whether the orders agree.
    fn ordering_table(&self) -> String {
        let mut out = String::from(
            "\nthroughput relative to the first scenario of each same-workload group\n",
        );
        out.push_str(&format!(
            "  {:<8} {:<44} {:>9} {:>19} {:>9} {:>9}\n",
            "group", "scenario", "sim", "live median [range]", "sim rank", "live rank"
        ));
        for r in &self.throughput_order {
            out.push_str(&format!(
                "  {:<8} {:<44} {:>9.3} {:>7.3} [{:.2}-{:.2}] {:>9} {:>9}\n",
                r.group,
                r.scenario,
                r.sim_ratio,
                r.live_ratio,
                r.live_ratio_min,
                r.live_ratio_max,
                r.sim_rank,
                r.live_rank
            ));
        }
        for (a, b) in &self.ordering_disagreements {
            out.push_str(&format!(
                "  ordering DIFFERS: the live runs separate {a} and {b}; the sim orders them the other way\n"
            ));
        }
        if self.ordering_agrees {
            out.push_str(&format!(
                "  ordering agrees on every pair the live runs separate ({} pair(s) overlap live, {} the sim puts within {:.0}% of each other; neither is judged)\n",
                self.ordering_ties_live,
                self.ordering_ties_sim,
                self.tolerance * 100.0
            ));
        }
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn policy_rows_are_the_allocation_and_swapout_counters() {
        assert!(is_policy("pswpout"));
        assert!(is_policy("hugepages-64kB/stats/swpout_fallback"));
        assert!(is_policy("hugepages-2048kB/stats/anon_fault_alloc"));
        assert!(!is_policy("pgfault"));
        assert!(!is_policy("hugepages-64kB/stats/swpin"));
        // Whether a charge at the memcg limit may reclaim is policy (defrag, MADV_HUGEPAGE).
        assert!(is_policy("hugepages-64kB/stats/anon_fault_fallback_charge"));
        assert!(is_policy("thp_fault_fallback_charge"));
        // And which size a tmpfs write gets.
        assert!(is_policy("hugepages-64kB/stats/shmem_alloc"));
        assert!(is_policy("thp_file_fallback_charge"));
        assert!(!is_policy("thp_file_mapped"));
    }

    fn scenario(swap: &str, sizes: &str, extra: &str) -> Scenario {
        Scenario::from_toml_str(&format!(
            r#"
[machine]
memory = "1G"
[[machine.swap]]
kind = "{swap}"
size = "64M"
[kernel]
version = "6.18"
{extra}
[sysfs.hugepages]
{sizes}
[[workload]]
kind = "usemem"
nproc = 1
size = "1M"
"#
        ))
        .unwrap()
    }

    fn probe(swpin: u64) -> SwapinMthpProbe {
        SwapinMthpProbe {
            folios: 16,
            anon_fault_alloc: 16,
            swpout: 16,
            swpin,
            zswap_enabled: false,
        }
    }

    #[test]
    fn sim_swaps_in_mthp_only_from_sync_devices_with_a_size_below_pmd() {
        assert!(sim_swaps_in_mthp(&scenario(
            "zram",
            "\"64K\" = \"madvise\"",
            ""
        )));
        assert!(!sim_swaps_in_mthp(&scenario(
            "ssd",
            "\"64K\" = \"always\"",
            ""
        )));
        assert!(!sim_swaps_in_mthp(&scenario(
            "zram",
            "\"2M\" = \"always\"",
            ""
        )));
        assert!(!sim_swaps_in_mthp(&scenario(
            "zram",
            "\"64K\" = \"always\"",
            "swapin_mthp = false"
        )));
    }

    #[test]
    fn the_sim_follows_the_host_probe_and_defrag() {
        let base = scenario("zram", "\"64K\" = \"always\"", "");
        let mut s = base.clone();
        let notes = configure_sim_like_host(
            &mut s,
            Some(&probe(0)),
            Some(ThpDefrag::Madvise),
            Some(CgroupVersion::V1),
        );
        assert!(!s.kernel.swapin_mthp());
        assert_eq!(s.sysfs.defrag, Some(ThpDefrag::Madvise));
        assert_eq!(s.kernel.cgroup, CgroupVersion::V1);
        assert_eq!(notes.len(), 3, "{notes:?}");
        assert!(notes[0].contains("cgroup v1"), "{notes:?}");
        assert!(notes[1].contains("does not swap in mTHP"), "{notes:?}");
        assert!(notes[1].contains("kernel.swapin_mthp = false"), "{notes:?}");
        // A host that swaps mTHP in, and a scenario that sets defrag: nothing to change.
        let mut s = base.clone();
        s.sysfs.defrag = Some(ThpDefrag::Always);
        let notes = configure_sim_like_host(
            &mut s,
            Some(&probe(16)),
            Some(ThpDefrag::Madvise),
            Some(CgroupVersion::V2),
        );
        assert!(notes.is_empty() && s.kernel.swapin_mthp());
        assert_eq!(s.sysfs.defrag, Some(ThpDefrag::Always));
    }

    #[test]
    fn fault_rows_name_their_order() {
        assert_eq!(
            fault_row_order("hugepages-64kB/stats/anon_fault_alloc"),
            Some(4)
        );
        assert_eq!(
            fault_row_order("hugepages-2048kB/stats/anon_fault_fallback"),
            Some(9)
        );
        assert_eq!(fault_row_order("thp_fault_alloc"), Some(PMD_ORDER));
        assert_eq!(fault_row_order("hugepages-64kB/stats/swpout"), None);
        assert_eq!(fault_row_order("pswpout"), None);
    }

    #[test]
    fn other_processes_count_in_madvise_and_always_sizes_only() {
        let s = scenario("zram", "\"64K\" = \"madvise\"\n\"32K\" = \"always\"", "");
        let others = OtherFaults {
            madvised_minflt: 900,
            all_minflt: 5000,
            madvisers: vec!["sim[1] 900".into()],
        };
        let b = |n: &str| others_bound(n, &s, &others);
        assert_eq!(b("hugepages-64kB/stats/anon_fault_alloc"), 900);
        assert_eq!(b("hugepages-32kB/stats/anon_fault_alloc"), 5000);
        assert_eq!(b("hugepages-128kB/stats/anon_fault_alloc"), 0);
        assert_eq!(b("hugepages-64kB/stats/swpout"), 0);
    }

    #[test]
    fn host_state_explains_a_row_only_within_its_bound() {
        let check = |s, l, range, others| policy_check((s, l), range, others, 0.10, 64).0;
        // thp-swap-allocator-test beside a sim run madvising its arrays: 6080 vs 6951.
        assert_eq!(check(6080.0, 6951.0, (6951, 6951), 0), Check::Miss);
        assert_eq!(check(6080.0, 6951.0, (6951, 6951), 900), Check::Host);
        assert_eq!(check(6080.0, 6951.0, (6951, 6951), 100), Check::Miss);
        // Others only add: a live count below the sim is not theirs.
        assert_eq!(check(6080.0, 5000.0, (5000, 5000), 5000), Check::Miss);
        // usemem 64K to a swap file: live runs 66.9k-98.9k, median 82k; sim 65.6k.
        assert_eq!(check(65632.0, 82000.0, (66897, 98921), 0), Check::Host);
        assert_eq!(check(50000.0, 82000.0, (66897, 98921), 0), Check::Miss);
        assert_eq!(check(65632.0, 82000.0, (82000, 82000), 0), Check::Miss);
        assert_eq!(check(65632.0, 66000.0, (66000, 66000), 0), Check::Ok);
        assert_eq!(check(10.0, 60.0, (60, 60), 0), Check::Noise);
    }

    fn live_run(counters: &[(&str, u64)]) -> LiveResult {
        LiveResult {
            backend: "live".into(),
            foliosim_version: "test".into(),
            kernel_release: "test".into(),
            kernel_profile: "6.18".into(),
            seed: 1,
            wall_ns: 1,
            cpu_user_ns: 0,
            cpu_sys_ns: 0,
            counters: counters.iter().map(|&(k, v)| (k.to_string(), v)).collect(),
            gauges: Default::default(),
            workloads: vec![],
            zram: Default::default(),
            memcgs: Default::default(),
            other_faults: OtherFaults::default(),
            swap_disks: vec![],
            settings: vec![],
            task_failures: vec![],
            notes: vec![],
            recovered: vec![],
        }
    }

    #[test]
    fn live_counters_are_the_median_of_the_runs() {
        let runs = [
            live_run(&[("pswpout", 98921), ("zswpout", 5)]),
            live_run(&[("pswpout", 66897)]),
            live_run(&[("pswpout", 78456)]),
        ];
        let (median, range) = median_counters(&runs);
        assert_eq!(median["pswpout"], 78456);
        assert_eq!(range["pswpout"], (66897, 98921));
        // Absent from a run: none counted there.
        assert_eq!(median["zswpout"], 0);
        assert_eq!(range["zswpout"], (0, 5));
    }

    #[test]
    fn shares_compare_in_points() {
        let r = share_row("x", (90.0, 10.0), (85.0, 15.0), 0.10, 16);
        assert_eq!(r.check, Check::Ok);
        assert!((r.diff.unwrap() - 0.05).abs() < 1e-9);
        let r = share_row("x", (100.0, 0.0), (50.0, 50.0), 0.10, 16);
        assert_eq!(r.check, Check::Miss);
        let r = share_row("x", (3.0, 0.0), (0.0, 3.0), 0.10, 16);
        assert_eq!(r.check, Check::Noise);
    }

    fn comparison(name: &str, sim: f64, live_runs: &[f64]) -> Comparison {
        let mut c = Comparison {
            scenario: name.into(),
            sim_profile: "6.18".into(),
            live_kernel: "test".into(),
            rows: vec![],
            misses: 0,
            throughput_bytes_per_s: (sim, live_runs[0]),
            live_runs_throughput_bytes_per_s: vec![],
            group: "g".into(),
            live_task_failures: vec![],
            live_notes: vec![],
        };
        c.set_live_runs(live_runs.to_vec());
        c
    }

    #[test]
    fn ordering_is_judged_only_where_live_runs_do_not_overlap() {
        let agree = Report::new(
            vec![
                comparison("a", 3.0, &[12.0, 10.0, 11.0]),
                comparison("b", 2.0, &[11.5, 9.0, 10.5]),
                comparison("c", 1.0, &[1.0, 3.0, 2.0]),
            ],
            0.1,
            64,
        );
        assert!(agree.ordering_agrees && agree.pass);
        assert_eq!(agree.ordering_ties_live, 1);
        assert_eq!(agree.throughput_order[0].live_ratio, 1.0);
        assert_eq!(agree.throughput_order[2].live_ratio_max, 3.0 / 11.0);
        let differ = Report::new(
            vec![
                comparison("a", 3.0, &[12.0, 10.0, 11.0]),
                comparison("c", 4.0, &[1.0, 3.0, 2.0]),
            ],
            0.1,
            64,
        );
        assert!(!differ.pass);
        assert_eq!(
            differ.ordering_disagreements,
            vec![("a".to_string(), "c".to_string())]
        );
        // Live orders a first, the sim c by 0.2%: too close for the sim to claim an order.
        let sim_tie = Report::new(
            vec![
                comparison("a", 1.0, &[12.0, 10.0, 11.0]),
                comparison("c", 1.002, &[1.0, 3.0, 2.0]),
            ],
            0.1,
            64,
        );
        assert!(sim_tie.ordering_agrees && sim_tie.pass);
        assert_eq!(sim_tie.ordering_ties_sim, 1);
    }
}
