//! Seed 000, "Swap-out mTHP without splitting" (Ryan Roberts v4): vm-scalability usemem, 70
//! processes x 1 GiB in a 40 GiB memcg, 35 GiB RAM-disk swap, 8 CPUs; 4K / 64K / 2M folios;
//! kernel 6.9 (split before swap-out) against 6.10 (whole). Throughput is relative to the
//! 6.9 4K mean, as in the seed's table.

use super::GIB;
use crate::reproduce::{run_grid, Runs};
use crate::scenario::{
    format_size, Bytes, Kernel, Machine, MemcgSpec, Release, Scenario, SwapDeviceKind,
    SwapDeviceSpec, Sysfs, ThpDefrag, TlbKind, UsememSpec, WorkloadSpec,
};
use crate::{RunResult, SimError};
use serde::Serialize;
use std::collections::BTreeMap;

/// 8 x DDR4-3200 x 8 bytes.
pub const ALTRA_MEMORY_BANDWIDTH_BYTES_PER_S: u64 = 204_800_000_000;

pub const SIZES: [&str; 3] = ["4K", "64K", "2M"];
pub const KERNELS: [Release; 2] = [Release::V6_9, Release::V6_10];

/// The seed's 24-run table (mean and std of throughput relative to base-4K, %), and the first
/// 6-run means; keyed by (kernel, size).
pub fn seed_table() -> BTreeMap<(&'static str, &'static str), (f64, f64, f64)> {
    BTreeMap::from([
        (("6.9", "4K"), (0.0, 3.2, 0.0)),
        (("6.9", "64K"), (-9.1, 10.1, -14.6)),
        (("6.9", "2M"), (88.9, 6.8, 87.4)),
        (("6.10", "4K"), (0.5, 3.1, 1.4)),
        (("6.10", "64K"), (44.7, 8.3, 44.2)),
        (("6.10", "2M"), (93.3, 7.8, 97.7)),
    ])
}

/// `bytes` x `scale`, at least `floor`, rounded down to whole 2 MiB (PMD) units.
pub fn scaled(bytes: u64, scale: f64, floor: u64) -> Bytes {
    let v = (bytes as f64 * scale) as u64;
    // Keep sizes whole 2 MiB units so every folio size divides them.
    Bytes((v.max(floor) >> 21 << 21).max(2 << 20))
}

/// The experiment's scenario for one kernel, folio size and seed. `scale` multiplies every size
/// (memory per process, memcg limit, swap, machine memory).
pub fn scenario(kernel: Release, size: &str, scale: f64, seed: u64) -> Scenario {
    Scenario {
        seed,
        machine: Machine {
            cpus: 8,
            // The seed's VM size is not given. The RAM disk's pages are machine memory (brd
            // holds a page per swapped page, up to 30 GiB here) beside the 40 GiB memcg, so the
            // VM had more than 70 GiB; 80 GiB keeps the memcg the binding limit.
            memory: scaled(80 * GIB, scale, 128 << 20),
            // Ampere Altra VM (Neoverse N1), 8 vCPUs: broadcast TLBI, contpte.
            cost_profile: "arm64-vm-8cpu".into(),
            tlb: TlbKind::Arm64Tlbi,
            // Altra: 8 channels of DDR4-3200, 204.8 GB/s peak per socket (AnandTech's Altra
            // review). The VM's share of it is not given; the peak is an upper bound.
            memory_bandwidth_bytes_per_s: ALTRA_MEMORY_BANDWIDTH_BYTES_PER_S,
            swap_devices: vec![SwapDeviceSpec::new(
                SwapDeviceKind::Ramdisk,
                scaled(35 * GIB, scale, 8 << 20),
            )],
            // Scaled with the sizes, so each process gets as many slices as at full scale.
            sched_slice_ns: ((3_000_000.0 * scale) as u64).max(10_000),
            iaa: None,
            disk: None,
            nodes: vec![],
            node_distance: None,
            tlb_geometry: None,
            // The seed's silicon: the Altra's cited line transfers (docs/seed000.md "Which
            // machine"); a guest's vCPUs move lines as the host cores they run on.
            profile: Some("ampere-altra-80c".into()),
            topology: None,
            kvm_guest: false,
            kernel_memory: false,
            start: None,
        },
        kernel: Kernel {
            version: kernel,
            ..Kernel::default()
        },
        // The seed's kernel (6.6-rc4 + anonfolio) charged large folios with GFP_KERNEL: at the
        // memcg limit the charge reclaims. From 6.9 the charge uses the THP gfp, and `defrag =
        // always` is the setting under which it still reclaims outside MADV_HUGEPAGE.
        sysfs: Sysfs {
            defrag: Some(ThpDefrag::Always),
            ..Sysfs::only_size(size)
        },
        sysctl: Default::default(),
        memcgs: vec![MemcgSpec::with_max(
            "usemem",
            Some(scaled(40 * GIB, scale, 32 << 20)),
        )],
        workloads: vec![super::usemem_70x1g(scale)],
        files: vec![],
        tmpfs: vec![],
        costs: BTreeMap::new(),
        check_invariants: false,
        report: Default::default(),
        mempolicy: Default::default(),
    }
}

#[derive(Debug, Clone, Serialize)]
pub struct Row {
    pub kernel: String,
    pub size: String,
    pub runs: u32,
    pub throughput_mib_s: f64,
    /// Mean and sample std of throughput relative to the 6.9 4K mean, %.
    pub mean_rel_pct: f64,
    pub std_rel_pct: f64,
    pub seed_mean_rel_pct: f64,
    pub seed_std_rel_pct: f64,
    /// Counters, means over runs: the per-size ones for this size (0 for 4K).
    pub swpout: f64,
    pub swpout_fallback: f64,
    pub split: f64,
    pub pswpout: f64,
    pub thp_swpout: f64,
    pub nr_tlb_remote_flush: f64,
    pub simulated_s: f64,
    /// CPU time by named cost (RunResult::cpu_time_ns), ms per GiB the workload wrote; means.
    pub cpu_ms_per_gib: BTreeMap<String, f64>,
}

#[derive(Debug, Clone, Serialize)]
pub struct Report {
    pub scale: f64,
    pub seeds: u32,
    /// Costs overridden for this reproduction (empty: the profile as measured).
    pub costs: BTreeMap<String, f64>,
    pub rows: Vec<Row>,
}

/// Run every (kernel, size, seed); `runs` says on how many threads and whom to tell.
pub fn reproduce(
    scale: f64,
    seeds: u32,
    check_invariants: bool,
    runs: &mut Runs,
) -> Result<Report, SimError> {
    reproduce_with_costs(scale, seeds, check_invariants, &BTreeMap::new(), runs)
}

/// As [`reproduce`], with named costs of the profile overridden (validated by the caller with
/// `Scenario::validate`).
pub fn reproduce_with_costs(
    scale: f64,
    seeds: u32,
    check_invariants: bool,
    costs: &BTreeMap<String, f64>,
    runs: &mut Runs,
) -> Result<Report, SimError> {
    let keys: Vec<(usize, usize)> = (0..KERNELS.len())
        .flat_map(|ki| (0..SIZES.len()).map(move |si| (ki, si)))
        .collect();
    let results = run_grid(
        &keys,
        seeds,
        check_invariants,
        costs,
        |(ki, si), seed| scenario(KERNELS[ki], SIZES[si], scale, seed),
        |(ki, si)| format!("{} {}", KERNELS[ki].name(), SIZES[si]),
        runs,
    )?;
    let throughput = |r: &RunResult| r.workloads[0].throughput_bytes_per_s;
    let usemem_bytes = match &scenario(KERNELS[0], SIZES[0], scale, 1).workloads[0] {
        WorkloadSpec::Usemem(UsememSpec { size, .. }) => size.0,
        _ => unreachable!("seed 000 runs usemem"),
    };
    let base = &results[&(0, 0)];
    let base_mean = base.iter().map(throughput).sum::<f64>() / base.len() as f64;
    let table = seed_table();
    let mut rows = Vec::new();
    for (&(ki, si), runs) in &results {
        let kernel = KERNELS[ki].name();
        let size = SIZES[si];
        let rel: Vec<f64> = runs
            .iter()
            .map(|r| 100.0 * (throughput(r) / base_mean - 1.0))
            .collect();
        let (mean, std) = mean_std(&rel);
        let order = Bytes::parse(size).unwrap().pages().trailing_zeros();
        let per_size = |stat: &str| {
            if order == 0 {
                0.0
            } else {
                let name = format!("{}/stats/{stat}", crate::mm::vmstat::hugepages_dir(order));
                runs.iter().map(|r| r.counter(&name) as f64).sum::<f64>() / runs.len() as f64
            }
        };
        let avg = |name: &str| {
            runs.iter().map(|r| r.counter(name) as f64).sum::<f64>() / runs.len() as f64
        };
        let (seed_mean, seed_std, _) = table[&(kernel.as_str(), size)];
        let mut cpu_ms_per_gib = BTreeMap::new();
        for r in runs {
            let gib = r.workloads[0].tasks as f64 * usemem_bytes as f64 / (1u64 << 30) as f64;
            for (name, ns) in &r.cpu_time_ns {
                *cpu_ms_per_gib.entry(name.clone()).or_insert(0.0) +=
                    *ns as f64 / 1e6 / gib / runs.len() as f64;
            }
        }
        rows.push(Row {
            kernel,
            size: size.into(),
            runs: runs.len() as u32,
            throughput_mib_s: runs.iter().map(throughput).sum::<f64>()
                / runs.len() as f64
                / (1 << 20) as f64,
            mean_rel_pct: mean,
            std_rel_pct: std,
            seed_mean_rel_pct: seed_mean,
            seed_std_rel_pct: seed_std,
            swpout: per_size("swpout"),
            swpout_fallback: per_size("swpout_fallback"),
            split: per_size("split"),
            pswpout: avg("pswpout"),
            thp_swpout: avg("thp_swpout"),
            nr_tlb_remote_flush: avg("nr_tlb_remote_flush"),
            simulated_s: runs.iter().map(|r| r.simulated_ns as f64).sum::<f64>()
                / runs.len() as f64
                / 1e9,
            cpu_ms_per_gib,
        });
    }
    Ok(Report {
        scale,
        seeds,
        costs: costs.clone(),
        rows,
    })
}

pub fn mean_std(values: &[f64]) -> (f64, f64) {
    let n = values.len() as f64;
    let mean = values.iter().sum::<f64>() / n;
    let var = if values.len() > 1 {
        values.iter().map(|v| (v - mean).powi(2)).sum::<f64>() / (n - 1.0)
    } else {
        0.0
    };
    (mean, var.sqrt())
}

impl Report {
    pub fn to_table(&self) -> String {
        // The sizes this scale gives (the seed's: 70 x 1G, memcg 40G, swap 35G).
        let s = scenario(KERNELS[0], SIZES[0], self.scale, 1);
        let size = |b: Option<Bytes>| b.map_or("-".into(), |b| format_size(b.0));
        let per_proc = match &s.workloads[0] {
            WorkloadSpec::Usemem(UsememSpec { size: b, .. }) => size(Some(*b)),
            _ => unreachable!("seed 000 runs usemem"),
        };
        let mut out = format!(
            "seed 000: usemem 70 x {per_proc}, memcg {}, ramdisk swap {}, 8 CPUs (scale {}, {} seeds)\n\
             throughput relative to the 6.9 4K mean; seed = Ryan Roberts' 24-run table\n\n",
            size(s.memcgs[0].max),
            size(s.machine.swap_devices.first().map(|d| d.size)),
            self.scale,
            self.seeds
        );
        // Only what differs from the profile (a costs file lists every cost).
        let profile = crate::engine::cost::CostModel::profile("arm64-vm-8cpu");
        for (name, value) in &self.costs {
            let same = profile
                .as_ref()
                .and_then(|p| p.get(name))
                .is_some_and(|v| v == value.round() as u64);
            if !same {
                out.push_str(&format!("cost override: {name} = {value} ns\n"));
            }
        }
        out.push_str(
            "kernel size | seed mean_rel  std | ours mean_rel  std |  MiB/s | swpout  swpout_fallback  split | pswpout  thp_swpout  remote_flush\n",
        );
        for r in &self.rows {
            out.push_str(&format!(
                "{:<6} {:<4} | {:>12.1}% {:>4.1}% | {:>12.1}% {:>4.1}% | {:>6.0} | {:>6.0} {:>16.0} {:>6.0} | {:>7.0} {:>11.0} {:>13.0}\n",
                r.kernel,
                r.size,
                r.seed_mean_rel_pct,
                r.seed_std_rel_pct,
                r.mean_rel_pct,
                r.std_rel_pct,
                r.throughput_mib_s,
                r.swpout,
                r.swpout_fallback,
                r.split,
                r.pswpout,
                r.thp_swpout,
                r.nr_tlb_remote_flush
            ));
        }
        out.push_str("\nCPU time by cost, ms per GiB written (all CPUs; \"contention\": extra time of sharing)\n");
        out.push_str(&format!("{:<48}", "cost"));
        for r in &self.rows {
            out.push_str(&format!(" {:>9}", format!("{} {}", r.kernel, r.size)));
        }
        out.push('\n');
        for name in self.cpu_costs_by_time() {
            out.push_str(&format!("{name:<48}"));
            for r in &self.rows {
                out.push_str(&format!(
                    " {:>9.1}",
                    r.cpu_ms_per_gib.get(name).copied().unwrap_or(0.0)
                ));
            }
            out.push('\n');
        }
        out
    }
}

impl Report {
    /// The CPU-time buckets of every row, the largest summed over the rows first.
    fn cpu_costs_by_time(&self) -> Vec<&String> {
        let mut sums: BTreeMap<&String, f64> = BTreeMap::new();
        for r in &self.rows {
            for (name, ms) in &r.cpu_ms_per_gib {
                *sums.entry(name).or_default() += ms;
            }
        }
        let mut names: Vec<(&String, f64)> = sums.into_iter().collect();
        names.sort_by(|a, b| b.1.total_cmp(&a.1).then(a.0.cmp(b.0)));
        names.into_iter().map(|(n, _)| n).collect()
    }
}

/// Cover-letter figures: throughput by mTHP size for each kernel, and what became of the large
/// folios at swap-out (whole, fallen back, split) per kernel and size: 6.10's difference.
pub fn cover_figures(report: &serde_json::Value) -> Vec<String> {
    use super::fig::{distinct, num, rows, text};
    use crate::report::svg::bar_chart;
    let rows = rows(report, "rows");
    let sizes = distinct(&rows, "size");
    let kernels = distinct(&rows, "kernel");
    let value = |k: &str, size: &str, field: &str| {
        rows.iter()
            .find(|r| text(r, "kernel") == k && text(r, "size") == size)
            .and_then(|r| num(r, field))
    };
    let per_kernel = |field: &str, scale: f64| -> Vec<(String, Vec<Option<f64>>)> {
        kernels
            .iter()
            .map(|k| {
                let vals = sizes
                    .iter()
                    .map(|s| value(k, s, field).map(|v| v * scale))
                    .collect();
                (format!("kernel {k}"), vals)
            })
            .collect()
    };
    let labels: Vec<String> = rows
        .iter()
        .map(|r| format!("{} {}", text(r, "kernel"), text(r, "size")))
        .collect();
    let counts = |field: &str| -> Vec<Option<f64>> { rows.iter().map(|r| num(r, field)).collect() };
    vec![
        bar_chart(
            "usemem throughput by mTHP size, 6.9 vs 6.10",
            "throughput, MiB/s (higher is better)",
            &sizes,
            &per_kernel("throughput_mib_s", 1.0),
        ),
        bar_chart(
            "Large folios at swap-out: whole, fallen back, split (6.9 vs 6.10)",
            "folios per run (mTHP swpout, swpout_fallback, split)",
            &labels,
            &[
                ("swapped out whole (swpout)".into(), counts("swpout")),
                (
                    "fell back (swpout_fallback)".into(),
                    counts("swpout_fallback"),
                ),
                ("split (split)".into(), counts("split")),
            ],
        ),
    ]
}
