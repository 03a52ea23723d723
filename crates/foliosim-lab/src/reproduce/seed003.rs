//! Seed 003, "mTHP and SWAP allocator" (Chris Li, Kairui Song, LPC 2024): three experiments.
//! 1. thp_swap_allocator_test (64 MiB zram, 64K mTHP) fallback % per iteration on 6.10 (Ryan
//!    v4), 6.12 (cluster lists, C12) and 6.18 (C18) with and without -a, and on 6.18 with
//!    mTHP swap-in off and on (spec-swap.md §15 gives the expected shapes).
//! 2. A kernel-build mix with 64K mTHP: swap-out fallback % over the build, per kernel.
//! 3. make -j96 in a 1 GiB memcg without mTHP: elapsed, user and system time and the wait
//!    on si->lock before (C12) and after (C18) the lock split.
//!
//! `scale` multiplies the sizes of experiments 2 and 3 (memcg, heap sizes, swap) and the
//! iteration count of 1, whose sizes are the tool's constants.

use super::seed000::mean_std;
use super::Runs;
use crate::scenario::{
    Bytes, KbuildSpec, Kernel, Machine, MemcgSpec, Release, Scenario, SwapDeviceKind,
    SwapDeviceSpec, Sysfs, ThpDefrag, ThpSwapAllocatorTestSpec, WorkloadSpec,
};
use crate::workload::FallbackPoint;
use crate::{RunResult, SimError};
use serde::Serialize;
use std::collections::BTreeMap;

/// The allocator test's device (its header: zram, 64 MiB) and iterations (its loop: 100).
const TEST_SWAP_BYTES: u64 = 64 << 20;
const TEST_ITERATIONS: u32 = 100;

fn kernel(version: Release, swapin_mthp: Option<bool>) -> Kernel {
    Kernel {
        version,
        swapin_mthp,
        ..Kernel::default()
    }
}

/// thp_swap_allocator_test as its header sets the machine up.
pub fn allocator_test_scenario(
    kernel: Kernel,
    aligned_swapin: bool,
    iterations: u32,
    seed: u64,
) -> Scenario {
    Scenario {
        seed,
        machine: Machine {
            cpus: 2,
            memory: Bytes(1 << 30),
            swap_devices: vec![SwapDeviceSpec::new(
                SwapDeviceKind::Ramdisk,
                Bytes(TEST_SWAP_BYTES),
            )],
            ..Machine::default()
        },
        kernel,
        sysfs: Sysfs::only_size("64K"),
        sysctl: Default::default(),
        memcgs: vec![],
        workloads: vec![WorkloadSpec::ThpSwapAllocatorTest(
            ThpSwapAllocatorTestSpec {
                aligned_swapin,
                small_folios: false,
                iterations,
                memcg: None,
                content: None,
                oom_score_adj: 0,
            },
        )],
        files: vec![],
        tmpfs: vec![],
        costs: BTreeMap::new(),
        check_invariants: false,
        report: Default::default(),
        mempolicy: Default::default(),
    }
}

/// Compile jobs per make slot: a defconfig build compiles thousands of files, so its 96 slots
/// stay busy; with two or three jobs per slot the elapsed time would be the longest slot's
/// tail, not the build's throughput.
const KBUILD_JOBS_PER_SLOT: u32 = 10;
/// Memory sizes relative to the seed's (1G memcg, 8-256 MiB compiler heaps): each job's share
/// of the memcg against its heap is the seed's, and a run is 16x shorter.
const KBUILD_SIZE: f64 = 1.0 / 16.0;
/// Re-touch passes per job (each over a random tenth of its heap). Measured: gcc -O2 on a 2 MB
/// C file (299 MB peak RSS, 9.4 s user) swapped in 1.45-2.0 pages per heap page with a memcg of
/// 21% of its RSS and 45 with 11% (tools/measure/cc_refaults.sh, docs/seed003-lock-split.md).
/// A job's share here is ~15% of the mean heap, where that curve gives ~8.6 (log-interpolated);
/// 115 passes make the build swap in 8.67 pages per heap page.
const KBUILD_PHASES: u32 = 115;

/// Seed 003's kernel build, `make -j96` in a 1 GiB memcg: a build in steady state (960 jobs),
/// swapping to zram, on a bare-metal x86 server (`x86-server` costs), whose compiler jobs
/// revisit their heap at the rate measured from gcc. The swap device is the one of Kairui
/// Song's kernel-build tests behind the seed's numbers ("mm, swap: rework of swap allocator
/// locks", Oct 2024: "linux kernel build using tmpfs and ZRAM ... make -j64 with 1G memcg and
/// 4k pages"; its make -j96 rows use a 10G ZRAM); 16 GiB here (scaled with the rest), as this
/// workload's peak swapped-out set passes 10 GiB in some seeds. `size` is "4K" (no mTHP) or
/// an mTHP size; `scale` multiplies every memory size further.
pub fn kbuild_scenario(kernel: Kernel, size: &str, scale: f64, seed: u64) -> Scenario {
    let scale = scale * KBUILD_SIZE;
    let scaled = |bytes: u64| Bytes(((bytes as f64 * scale) as u64 >> 21 << 21).max(4 << 20));
    Scenario {
        seed,
        machine: Machine {
            cpus: 96,
            memory: scaled(64 << 30),
            // At least 256 clusters: every one of the 96 CPUs may hold a cluster per order in
            // use, and a smaller device runs out of swap to per-CPU clusters alone.
            swap_devices: vec![SwapDeviceSpec::new(
                SwapDeviceKind::Zram,
                scaled(16 << 30).max(Bytes(512 << 20)),
            )],
            cost_profile: "x86-server".into(),
            ..Machine::default()
        },
        kernel,
        // The seed does not give `defrag`. `always` lets a 64K folio's charge reclaim at the
        // memcg limit (with the default `madvise` it falls back to 4K there), so the swap
        // allocator sees as many 64K swap-outs as the fault path can make.
        sysfs: Sysfs {
            defrag: Some(ThpDefrag::Always),
            ..Sysfs::only_size(size)
        },
        sysctl: Default::default(),
        memcgs: vec![MemcgSpec::with_max("build", Some(scaled(1 << 30)))],
        workloads: vec![WorkloadSpec::Kbuild(KbuildSpec {
            jobs: 96 * KBUILD_JOBS_PER_SLOT,
            jobs_concurrent: 96,
            rss_min: Bytes(((8u64 << 20) as f64 * scale) as u64).max(Bytes(64 << 10)),
            rss_max: Bytes(((256u64 << 20) as f64 * scale) as u64).max(Bytes(2 << 20)),
            user_ns_per_page: 40_000,
            phases: KBUILD_PHASES,
            tmpfs: None,
            object_size_min: Bytes(crate::workload::kbuild::OBJECT_SIZE_MIN_BYTES),
            object_size_max: Bytes(crate::workload::kbuild::OBJECT_SIZE_MAX_BYTES),
            compiler: crate::scenario::KbuildCompiler::OneHeap,
            memcg: Some("build".into()),
            content: None,
            oom_score_adj: 0,
        })],
        files: vec![],
        tmpfs: vec![],
        costs: BTreeMap::new(),
        check_invariants: false,
        report: Default::default(),
        mempolicy: Default::default(),
    }
}

#[derive(Debug, Clone, Serialize)]
pub struct AllocatorTestRow {
    pub kernel: String,
    pub allocator: String,
    pub aligned_swapin: bool,
    pub swapin_mthp: bool,
    /// Fallback % per iteration (mean over seeds).
    pub fallback_percent: Vec<f64>,
    /// 64K swpout in the first and in the last iteration (mean over seeds).
    pub swpout_first: f64,
    pub swpout_last: f64,
    /// spec-swap.md §15's expected shape for this row (the seed and S-DATA figures).
    pub expected: String,
}

#[derive(Debug, Clone, Serialize)]
pub struct KbuildFallbackRow {
    pub kernel: String,
    pub allocator: String,
    /// Fallback % of mTHP swap-out per tenth of the build (first seed).
    pub series: Vec<FallbackPoint>,
    pub fallback_percent_total: f64,
    pub expected: String,
}

#[derive(Debug, Clone, Serialize)]
pub struct LockSplitRow {
    pub kernel: String,
    pub allocator: String,
    pub elapsed_s: f64,
    pub elapsed_s_std: f64,
    pub user_s: f64,
    pub sys_s: f64,
    /// Total wait on si->lock over the run, all CPUs (perf lock contention's total).
    pub si_lock_wait_s: f64,
    pub si_lock_acquisitions: f64,
    pub ci_lock_wait_s: f64,
    /// Total wait on the memcg's lruvec->lru_lock (the other lock reclaim contends on).
    pub lru_lock_wait_s: f64,
    pub seed_elapsed_s: f64,
    pub seed_user_s: f64,
    pub seed_sys_s: f64,
    pub seed_si_lock_wait: String,
}

#[derive(Debug, Clone, Serialize)]
pub struct Report {
    pub scale: f64,
    pub seeds: u32,
    pub iterations: u32,
    pub kbuild_jobs: u32,
    pub allocator_test: Vec<AllocatorTestRow>,
    pub kbuild_fallback: Vec<KbuildFallbackRow>,
    pub lock_split: Vec<LockSplitRow>,
}

/// (kernel, swapin_mthp override, expected shape without -a, with -a)
fn allocator_test_configs() -> Vec<(Release, Option<bool>, &'static str, &'static str)> {
    vec![
        (
            Release::V6_10,
            None,
            "~100% from iteration 1",
            "~86% in iteration 1, then 100%",
        ),
        (
            Release::V6_12,
            None,
            "0%, 42%, 68%, 82%, then 90-97% from ~6",
            "~0% (occasional 0.4-3.6%)",
        ),
        (
            Release::V6_18,
            Some(false),
            "as 6.12 (no mTHP swap-in): climbing to 90%+",
            "~0%",
        ),
        (
            Release::V6_18,
            Some(true),
            "0% every iteration, swpout ~945-953",
            "~0%",
        ),
    ]
}

fn allocator_name(r: &RunResult) -> String {
    r.swap_allocator.clone()
}

/// Wait (s) and acquisitions of every instance of the lock called `name`.
fn lock_totals(r: &RunResult, name: &str) -> (f64, f64) {
    r.locks
        .iter()
        .filter(|l| l.name == name)
        .fold((0.0, 0.0), |(w, a), l| {
            (
                w + l.stats.wait_ns_total as f64 / 1e9,
                a + l.stats.acquisitions as f64,
            )
        })
}

/// The kernels of the kbuild fallback experiment, and of the lock-split experiment.
const FALLBACK_KERNELS: [Release; 3] = [Release::V6_10, Release::V6_12, Release::V6_18];
const LOCK_KERNELS: [Release; 2] = [Release::V6_12, Release::V6_18];

/// Run all three experiments (their runs together, on the threads `runs` gives).
pub fn reproduce(
    scale: f64,
    seeds: u32,
    check_invariants: bool,
    costs: &BTreeMap<String, f64>,
    runs: &mut Runs,
) -> Result<Report, SimError> {
    let iterations =
        ((TEST_ITERATIONS as f64 * scale).round() as u32).clamp(5, 10 * TEST_ITERATIONS);
    let kbuild_jobs = 96 * KBUILD_JOBS_PER_SLOT;
    let configs = allocator_test_configs();
    let planned = planned_runs(&configs, scale, seeds, iterations);
    let mut results = runs.run_all(planned, check_invariants, costs)?.into_iter();
    let mut next = || results.next().expect("one result per planned run");
    let mut allocator_test = Vec::new();
    for (version, swapin, expected_plain, expected_aligned) in configs {
        for aligned in [false, true] {
            let runs: Vec<RunResult> = (0..seeds).map(|_| next()).collect();
            let expected = if aligned {
                expected_aligned
            } else {
                expected_plain
            };
            let k = kernel(version, swapin);
            allocator_test.push(allocator_test_row(version, &k, aligned, expected, &runs));
        }
    }
    let kbuild_fallback = FALLBACK_KERNELS
        .iter()
        .map(|&version| kbuild_fallback_row(version, &next()))
        .collect();
    let mut lock_split = Vec::new();
    for version in LOCK_KERNELS {
        let runs: Vec<RunResult> = (0..seeds).map(|_| next()).collect();
        lock_split.push(lock_split_row(version, &runs));
    }
    Ok(Report {
        scale,
        seeds,
        iterations,
        kbuild_jobs,
        allocator_test,
        kbuild_fallback,
        lock_split,
    })
}

/// Every run of the three experiments, in the order `reproduce` reads their results back.
fn planned_runs(
    configs: &[(Release, Option<bool>, &str, &str)],
    scale: f64,
    seeds: u32,
    iterations: u32,
) -> Vec<(String, Scenario)> {
    let mut planned = Vec::new();
    for &(version, swapin, _, _) in configs {
        for aligned in [false, true] {
            for seed in 1..=seeds as u64 {
                let s = allocator_test_scenario(kernel(version, swapin), aligned, iterations, seed);
                let a = if aligned { " -a" } else { "" };
                let swapin = match swapin {
                    Some(on) => format!(" swapin_mthp {}", if on { "on" } else { "off" }),
                    None => String::new(),
                };
                let label = format!("allocator test {}{swapin}{a} seed {seed}", version.name());
                planned.push((label, s));
            }
        }
    }
    for version in FALLBACK_KERNELS {
        let s = kbuild_scenario(kernel(version, None), "64K", scale, 1);
        planned.push((format!("kbuild 64K {} seed 1", version.name()), s));
    }
    for version in LOCK_KERNELS {
        for seed in 1..=seeds as u64 {
            let s = kbuild_scenario(kernel(version, None), "4K", scale, seed);
            planned.push((format!("kbuild 4K {} seed {seed}", version.name()), s));
        }
    }
    planned
}

/// The allocator test's fallback series, averaged over the seeds' runs.
fn allocator_test_row(
    version: Release,
    k: &Kernel,
    aligned: bool,
    expected: &str,
    runs: &[RunResult],
) -> AllocatorTestRow {
    let series: Vec<&Vec<FallbackPoint>> = runs
        .iter()
        .map(|r| &r.workloads[0].fallback_series)
        .collect();
    let mean_at = |i: usize, f: &dyn Fn(&FallbackPoint) -> f64| {
        series.iter().map(|s| f(&s[i])).sum::<f64>() / series.len() as f64
    };
    let n = series[0].len();
    AllocatorTestRow {
        kernel: version.name(),
        allocator: allocator_name(&runs[0]),
        aligned_swapin: aligned,
        swapin_mthp: k.swapin_mthp(),
        fallback_percent: (0..n)
            .map(|i| mean_at(i, &|p| p.fallback_percent))
            .collect(),
        swpout_first: mean_at(0, &|p| p.swpout as f64),
        swpout_last: mean_at(n - 1, &|p| p.swpout as f64),
        expected: expected.into(),
    }
}

/// kbuild's 64K swap-out fallback over the run.
fn kbuild_fallback_row(version: Release, r: &RunResult) -> KbuildFallbackRow {
    let total_out = r.counter("hugepages-64kB/stats/swpout");
    let total_fb = r.counter("hugepages-64kB/stats/swpout_fallback");
    KbuildFallbackRow {
        kernel: version.name(),
        allocator: allocator_name(r),
        fallback_percent_total: FallbackPoint::new(0, 0, total_out, total_fb).fallback_percent,
        series: r.workloads[0].fallback_series.clone(),
        expected: match version {
            Release::V6_10 => "~99%",
            _ => "~1% to ~90% (<10% for 64K), growing with fragmentation",
        }
        .into(),
    }
}

/// kbuild's time and swap lock waits, averaged over the seeds' runs, beside the seed's.
fn lock_split_row(version: Release, runs: &[RunResult]) -> LockSplitRow {
    let avg = |f: &dyn Fn(&RunResult) -> f64| runs.iter().map(f).sum::<f64>() / runs.len() as f64;
    let elapsed: Vec<f64> = runs
        .iter()
        .map(|r| r.workloads[0].elapsed_ns_max as f64 / 1e9)
        .collect();
    let (elapsed_s, elapsed_s_std) = mean_std(&elapsed);
    let before = version == Release::V6_12;
    LockSplitRow {
        kernel: version.name(),
        allocator: allocator_name(&runs[0]),
        elapsed_s,
        elapsed_s_std,
        user_s: avg(&|r| r.cpu_user_ns as f64 / 1e9),
        sys_s: avg(&|r| r.cpu_sys_ns as f64 / 1e9),
        si_lock_wait_s: avg(&|r| lock_totals(r, "si->lock").0),
        si_lock_acquisitions: avg(&|r| lock_totals(r, "si->lock").1),
        ci_lock_wait_s: avg(&|r| lock_totals(r, "ci->lock").0),
        lru_lock_wait_s: avg(&|r| lock_totals(r, "lruvec->lru_lock").0),
        seed_elapsed_s: if before { 302.95 } else { 218.35 },
        seed_user_s: if before { 2506.66 } else { 2637.94 },
        seed_sys_s: if before { 14856.77 } else { 9384.29 },
        seed_si_lock_wait: if before {
            "1.6 min per 5 s"
        } else {
            "< 5 s per 5 s"
        }
        .into(),
    }
}

fn percents(values: impl Iterator<Item = f64>) -> String {
    values
        .map(|v| format!("{v:>3.0}"))
        .collect::<Vec<_>>()
        .join(" ")
}

impl Report {
    pub fn to_table(&self) -> String {
        let mut out = format!(
            "seed 003: mTHP and the swap allocator (scale {}, {} seeds)\n\n\
             1. thp_swap_allocator_test, 64 MiB RAM-backed swap, 64K mTHP: fallback % per \
             iteration ({} iterations; first 10 and the mean of the last 10)\n",
            self.scale, self.seeds, self.iterations
        );
        out.push_str("kernel allocator          -a swapin_mthp | iterations 1-10                          | last10 | swpout it1 itN | expected (spec §15)\n");
        for r in &self.allocator_test {
            let n = r.fallback_percent.len();
            let last10 = r.fallback_percent[n.saturating_sub(10)..]
                .iter()
                .sum::<f64>()
                / r.fallback_percent[n.saturating_sub(10)..].len() as f64;
            out.push_str(&format!(
                "{:<6} {:<18} {:<2} {:<11} | {:<40} | {:>5.0}% | {:>10.0} {:>3.0} | {}\n",
                r.kernel,
                r.allocator,
                if r.aligned_swapin { "-a" } else { "" },
                r.swapin_mthp,
                percents(r.fallback_percent.iter().take(10).copied()),
                last10,
                r.swpout_first,
                r.swpout_last,
                r.expected
            ));
        }
        out.push_str(&format!(
            "\n2. kernel build: make -j96 ({} jobs, {} re-touch passes), 1G memcg, sizes x{}, 64K mTHP: fallback % per tenth of the build\n",
            self.kbuild_jobs, KBUILD_PHASES, KBUILD_SIZE
        ));
        out.push_str("kernel allocator          | tenths 1-10                              | total  | seed\n");
        for r in &self.kbuild_fallback {
            out.push_str(&format!(
                "{:<6} {:<18} | {:<40} | {:>5.1}% | {}\n",
                r.kernel,
                r.allocator,
                percents(r.series.iter().map(|p| p.fallback_percent)),
                r.fallback_percent_total,
                r.expected
            ));
        }
        out.push_str(
            "\n3. the same build without mTHP (bare-metal x86 costs): before/after the si->lock split\n",
        );
        out.push_str("kernel allocator          | elapsed s (std)  user s    sys s | si->lock wait s  acquisitions | ci->lock wait s | lru_lock wait s | seed: elapsed  user  sys  si->lock wait\n");
        for r in &self.lock_split {
            out.push_str(&format!(
                "{:<6} {:<18} | {:>9.3} ({:.3}) {:>7.1} {:>8.1} | {:>15.4} {:>13.0} | {:>15.4} | {:>15.3} | {:>7.0} {:>5.0} {:>6.0}  {}\n",
                r.kernel,
                r.allocator,
                r.elapsed_s,
                r.elapsed_s_std,
                r.user_s,
                r.sys_s,
                r.si_lock_wait_s,
                r.si_lock_acquisitions,
                r.ci_lock_wait_s,
                r.lru_lock_wait_s,
                r.seed_elapsed_s,
                r.seed_user_s,
                r.seed_sys_s,
                r.seed_si_lock_wait
            ));
        }
        out
    }
}

/// Cover-letter figures: mTHP swap-out fallback % per iteration of the allocator test, and
/// the share of elapsed time spent waiting for the swap locks per configuration.
pub fn cover_figures(report: &serde_json::Value) -> Vec<String> {
    use super::fig::{num, rows, text};
    use crate::report::svg::{bar_chart, line_chart, Series};
    let label = |r: &serde_json::Value| {
        let mut l = format!("{} {}", text(r, "kernel"), text(r, "allocator"));
        for flag in ["aligned_swapin", "swapin_mthp"] {
            if r[flag].as_bool() == Some(true) {
                l.push_str(&format!(" +{flag}"));
            }
        }
        l
    };
    let tests = rows(report, "allocator_test");
    let series: Vec<Series> = tests
        .iter()
        .map(|r| Series {
            label: label(r),
            points: r["fallback_percent"]
                .as_array()
                .map(|a| {
                    a.iter()
                        .enumerate()
                        .map(|(i, v)| ((i + 1) as f64, v.as_f64().unwrap_or(f64::NAN)))
                        .collect()
                })
                .unwrap_or_default(),
        })
        .collect();
    let locks = rows(report, "lock_split");
    let share = |f: &str| -> Vec<Option<f64>> {
        locks
            .iter()
            .map(|r| Some(100.0 * num(r, f)? / num(r, "elapsed_s")?.max(1e-12)))
            .collect()
    };
    vec![
        line_chart(
            "thp_swap_allocator_test: 64K swap-out fallback % per iteration",
            "iteration",
            "% of mTHP swap-outs falling back",
            &series,
        ),
        bar_chart(
            "kbuild: swap lock wait as % of elapsed time",
            "lock wait / elapsed, % (summed over CPUs)",
            &locks.iter().map(|r| label(r)).collect::<Vec<_>>(),
            &[
                ("si->lock".into(), share("si_lock_wait_s")),
                ("ci->lock".into(), share("ci_lock_wait_s")),
                ("lru_lock".into(), share("lru_lock_wait_s")),
            ],
        ),
    ]
}
