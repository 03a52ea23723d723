//! Seed 002 (Kanchana Sridhar, "zswap: store mTHP folios", RFC on 6.10): usemem 70 x 1 GiB in
//! a memcg with memory.high 40 GiB on a dual-socket Sapphire Rapids (2 x 56 cores, 503 GiB,
//! 176 GiB zram, 4 IAA devices per socket), 64K and 2M folios, three ways out of memory:
//! whole to zram (6.10), per page into zswap with lz4, per page into zswap with deflate-iaa
//! (compress verification on). The seed's tables beside ours: throughput, sys time, counters.
//!
//! What decides it in the model, nothing of it set from the seed: zram's pool is charged to no
//! memcg, zswap's is charged by the compressed byte to the folio's memcg, so with zswap the
//! memcg must push out about 1 / (1 - compressed ratio) times as many pages to get under
//! memory.high; each store costs a compression on the CPU (lz4) or a device round trip (IAA).

use crate::reproduce::seed000::{mean_std, scaled};
use crate::reproduce::GIB;
use crate::reproduce::{run_grid, Runs};
use crate::scenario::{
    format_size, Bytes, IaaSpec, Kernel, Machine, MemcgSpec, Release, Scenario, SwapDeviceKind,
    SwapDeviceSpec, Sysfs, UsememSpec, WorkloadSpec, ZswapKnobs, ZswapLargeFolios,
};
use crate::{RunResult, SimError};
use serde::Serialize;
use std::collections::BTreeMap;
use std::fmt::Write;

/// The three configurations of the seed's tables, in its row order.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Serialize)]
pub enum Config {
    /// v6.10 mainline, zswap off: large folios go whole to zram (lzo-rle).
    ZramLzoRle,
    /// The RFC on 6.10, zswap lz4 in front of the same zram.
    ZswapLz4,
    /// The RFC, zswap deflate-iaa (IAA, verify_compress on, one synchronous job per page).
    ZswapDeflateIaa,
}

impl Config {
    pub const ALL: [Config; 3] = [
        Config::ZramLzoRle,
        Config::ZswapLz4,
        Config::ZswapDeflateIaa,
    ];

    pub fn name(self) -> &'static str {
        match self {
            Config::ZramLzoRle => "v6.10 ZRAM lzo-rle",
            Config::ZswapLz4 => "RFC ZSWAP lz4",
            Config::ZswapDeflateIaa => "RFC ZSWAP deflate-iaa",
        }
    }
}

pub const SIZES: [&str; 2] = ["64K", "2M"];

/// 2 sockets x 8 channels x DDR5-4800 x 8 bytes, the peak (Intel's SPR-SP platform: 8 DDR5
/// channels per socket, 4800 MT/s at one DIMM per channel; the seed's 503 GiB fits 16 x 32 GB,
/// one per channel). An upper bound, as seed 000's Altra figure: the sustained rate is lower.
pub const SPR_2S_MEMORY_BANDWIDTH_BYTES_PER_S: u64 = 614_400_000_000;

/// The seed's numbers per (config, size): throughput KB/s, sys s, and its counters.
struct SeedRow {
    throughput_kb_s: f64,
    sys_s: f64,
    /// pswpout, zswpout, per-size swpout (zram) or zswpout (zswap); None where not given.
    pswpout: Option<f64>,
    zswpout: Option<f64>,
}

fn seed_row(config: Config, size: &str) -> SeedRow {
    // The vmstat table gives one RFC column (the lz4 runs); deflate-iaa's counters are not
    // published.
    let counters = |pswpout: f64, zswpout: f64| match config {
        Config::ZramLzoRle => (Some(pswpout), Some(zswpout)),
        Config::ZswapLz4 => (Some(0.0), Some(zswpout)),
        Config::ZswapDeflateIaa => (None, None),
    };
    let (throughput_kb_s, sys_s, (pswpout, zswpout)) = match (config, size) {
        (Config::ZramLzoRle, "64K") => (111_180.0, 1049.69, counters(7_823_984.0, 1_410.0)),
        (Config::ZswapLz4, "64K") => (115_996.0, 1178.20, counters(0.0, 15_175_113.0)),
        (Config::ZswapDeflateIaa, "64K") => (166_048.0, 626.12, counters(0.0, 0.0)),
        (Config::ZramLzoRle, _) => (136_617.0, 1044.40, counters(8_630_272.0, 1_388.0)),
        (Config::ZswapLz4, _) => (137_360.0, 1035.79, counters(0.0, 15_379_163.0)),
        (Config::ZswapDeflateIaa, _) => (179_097.0, 571.31, counters(0.0, 0.0)),
    };
    SeedRow {
        throughput_kb_s,
        sys_s,
        pswpout,
        zswpout,
    }
}

/// The experiment's scenario for one configuration, folio size and seed; `scale` multiplies
/// every size (memory per process, memory.high, zram, machine memory).
pub fn scenario(config: Config, size: &str, scale: f64, seed: u64) -> Scenario {
    let zswap = config != Config::ZramLzoRle;
    let compressor = match config {
        Config::ZramLzoRle => None,
        Config::ZswapLz4 => Some("lz4".to_string()),
        Config::ZswapDeflateIaa => Some("deflate-iaa".to_string()),
    };
    Scenario {
        seed,
        machine: Machine {
            // Dual-socket Sapphire Rapids, 56 cores per socket, core clock fixed at 2.5 GHz.
            cpus: 112,
            memory: scaled(503 * GIB, scale, 256 << 20),
            // Bare-metal x86: this VM's measured kernel-path costs, bare-metal IPIs, on the
            // seed's machine profile (docs/seed002.md "Which machine").
            cost_profile: "x86-server".into(),
            profile: Some("sapphire-rapids-2s-112c".into()),
            // Not the 2-vCPU VM's 28 GB/s, which capped 70 usemem streams on 112 cores
            // (docs/seed002.md "Where the sys time goes").
            memory_bandwidth_bytes_per_s: SPR_2S_MEMORY_BANDWIDTH_BYTES_PER_S,
            swap_devices: vec![SwapDeviceSpec::new(
                SwapDeviceKind::Zram,
                scaled(176 * GIB, scale, 64 << 20),
            )],
            sched_slice_ns: ((3_000_000.0 * scale) as u64).max(10_000),
            iaa: (config == Config::ZswapDeflateIaa).then_some(IaaSpec {
                sockets: 2,
                devices_per_socket: 4,
                verify_compress: true,
                batch: false,
            }),
            ..Machine::default()
        },
        kernel: Kernel {
            version: Release::V6_10,
            zswap_large_folios: Some(if zswap {
                ZswapLargeFolios::PerPageRfc
            } else {
                ZswapLargeFolios::Reject
            }),
            ..Kernel::default()
        },
        sysfs: Sysfs {
            zswap: ZswapKnobs {
                enabled: zswap,
                compressor,
                ..ZswapKnobs::default()
            },
            ..Sysfs::only_size(size)
        },
        sysctl: Default::default(),
        memcgs: vec![MemcgSpec {
            high: Some(scaled(40 * GIB, scale, 32 << 20)),
            ..MemcgSpec::with_max("usemem", None)
        }],
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
    pub config: String,
    pub size: String,
    pub runs: u32,
    /// usemem's KB/s per process (KB = 1024 bytes), averaged over processes; mean and std over
    /// seeds.
    pub throughput_kb_s: f64,
    pub throughput_std_kb_s: f64,
    /// Relative to the zram row of the same size, %.
    pub throughput_rel_pct: f64,
    pub seed_throughput_kb_s: f64,
    pub seed_throughput_rel_pct: f64,
    /// System CPU time of the workload, s (the seed: perf's sys time), and relative to zram.
    pub sys_s: f64,
    pub sys_rel_pct: f64,
    pub seed_sys_s: f64,
    pub seed_sys_rel_pct: f64,
    /// Means over runs; counters scaled back to full size (divided by `scale`).
    pub pswpout: f64,
    pub zswpout: f64,
    pub seed_pswpout: Option<f64>,
    pub seed_zswpout: Option<f64>,
    pub size_swpout: f64,
    pub size_zswpout: f64,
    pub thp_swpout: f64,
    /// Simulated duration of the run, s (mean over seeds).
    pub simulated_s: f64,
}

#[derive(Debug, Clone, Serialize)]
pub struct Report {
    pub scale: f64,
    pub seeds: u32,
    pub rows: Vec<Row>,
}

/// Run every (config, size, seed); `runs` says on how many threads and whom to tell.
pub fn reproduce(
    scale: f64,
    seeds: u32,
    check_invariants: bool,
    costs: &BTreeMap<String, f64>,
    runs: &mut Runs,
) -> Result<Report, SimError> {
    let keys: Vec<(usize, Config)> = (0..SIZES.len())
        .flat_map(|si| Config::ALL.map(|config| (si, config)))
        .collect();
    let results = run_grid(
        &keys,
        seeds,
        check_invariants,
        costs,
        |(si, config), seed| scenario(config, SIZES[si], scale, seed),
        |(si, config)| format!("{} {}", config.name(), SIZES[si]),
        runs,
    )?;
    // usemem prints one line per process; the seed's figure matches their average (70 x 111
    // MB/s is the 7.8 GB/s such a machine swaps at; the sum would be a 10-minute run at 111 MB/s
    // for 1049 s of sys time on 112 cores).
    let throughput_kb = |r: &RunResult| {
        r.workloads[0].throughput_bytes_per_s / 1024.0 / r.workloads[0].tasks.max(1) as f64
    };
    let sys_s = |r: &RunResult| r.cpu_sys_ns as f64 / 1e9 / scale;
    let mut rows = Vec::new();
    for (&(si, config), runs) in &results {
        let size = SIZES[si];
        let base = &results[&(si, Config::ZramLzoRle)];
        let (base_tp, _) = mean_std(&base.iter().map(throughput_kb).collect::<Vec<_>>());
        let (base_sys, _) = mean_std(&base.iter().map(sys_s).collect::<Vec<_>>());
        let (tp, tp_std) = mean_std(&runs.iter().map(throughput_kb).collect::<Vec<_>>());
        let (sys, _) = mean_std(&runs.iter().map(sys_s).collect::<Vec<_>>());
        let avg = |name: &str| {
            runs.iter().map(|r| r.counter(name) as f64).sum::<f64>() / runs.len() as f64 / scale
        };
        let order = Bytes::parse(size).unwrap().pages().trailing_zeros();
        let dir = crate::mm::vmstat::hugepages_dir(order);
        let seed = seed_row(config, size);
        let seed_base = seed_row(Config::ZramLzoRle, size);
        rows.push(Row {
            config: config.name().into(),
            size: size.into(),
            runs: runs.len() as u32,
            throughput_kb_s: tp,
            throughput_std_kb_s: tp_std,
            throughput_rel_pct: 100.0 * (tp / base_tp - 1.0),
            seed_throughput_kb_s: seed.throughput_kb_s,
            seed_throughput_rel_pct: 100.0
                * (seed.throughput_kb_s / seed_base.throughput_kb_s - 1.0),
            sys_s: sys,
            sys_rel_pct: 100.0 * (sys / base_sys - 1.0),
            seed_sys_s: seed.sys_s,
            seed_sys_rel_pct: 100.0 * (seed.sys_s / seed_base.sys_s - 1.0),
            pswpout: avg("pswpout"),
            zswpout: avg("zswpout"),
            seed_pswpout: seed.pswpout,
            seed_zswpout: seed.zswpout,
            size_swpout: avg(&format!("{dir}/stats/swpout")),
            size_zswpout: avg(&format!("{dir}/stats/zswpout")),
            thp_swpout: avg("thp_swpout"),
            simulated_s: runs
                .iter()
                .map(|r| r.simulated_ns as f64 / 1e9)
                .sum::<f64>()
                / runs.len() as f64,
        });
    }
    Ok(Report { scale, seeds, rows })
}

impl Report {
    pub fn to_table(&self) -> String {
        let mut out = String::new();
        // The sizes this scale gives (the seed's: 70 x 1G, memory.high 40G, 176G zram).
        let s = scenario(Config::ZramLzoRle, "64K", self.scale, 1);
        let size = |b: Option<Bytes>| b.map_or("-".into(), |b| format_size(b.0));
        let per_proc = match &s.workloads[0] {
            WorkloadSpec::Usemem(UsememSpec { size: b, .. }) => size(Some(*b)),
            _ => unreachable!("seed 002 runs usemem"),
        };
        let _ = writeln!(
            out,
            "seed 002: usemem 70 x {per_proc}, memory.high {}, {} zram (scale {}, {} seed(s)); counters scaled to full size",
            size(s.memcgs[0].high),
            size(s.machine.swap_devices.first().map(|d| d.size)),
            self.scale,
            self.seeds
        );
        let _ = writeln!(
            out,
            "{:<5} {:<22} {:>12} {:>8} {:>8} | {:>9} {:>7} {:>7} | {:>11} {:>11} | {:>11} {:>11}",
            "size",
            "config",
            "KB/s/proc",
            "vs zram",
            "seed",
            "sys s",
            "vs zram",
            "seed",
            "pswpout",
            "seed",
            "zswpout",
            "seed"
        );
        let opt = |v: Option<f64>| v.map_or("-".to_string(), |v| format!("{v:.0}"));
        for r in &self.rows {
            let _ = writeln!(
                out,
                "{:<5} {:<22} {:>12.0} {:>+7.1}% {:>+7.1}% | {:>9.1} {:>+6.1}% {:>+6.1}% | {:>11.0} {:>11} | {:>11.0} {:>11}",
                r.size,
                r.config,
                r.throughput_kb_s,
                r.throughput_rel_pct,
                r.seed_throughput_rel_pct,
                r.sys_s,
                r.sys_rel_pct,
                r.seed_sys_rel_pct,
                r.pswpout,
                opt(r.seed_pswpout),
                r.zswpout,
                opt(r.seed_zswpout),
            );
        }
        let _ = writeln!(
            out,
            "per-size swpout / zswpout and thp_swpout (means, full size):"
        );
        for r in &self.rows {
            let _ = writeln!(
                out,
                "  {:<5} {:<22} swpout {:>10.0}  zswpout {:>10.0}  thp_swpout {:>8.0}",
                r.size, r.config, r.size_swpout, r.size_zswpout, r.thp_swpout
            );
        }
        out
    }
}

/// Cover-letter figures: throughput and system time per configuration and size, ours beside
/// the seed's.
pub fn cover_figures(report: &serde_json::Value) -> Vec<String> {
    use super::fig::{num, rows, text};
    use crate::report::svg::bar_chart;
    let rows = rows(report, "rows");
    let labels: Vec<String> = rows
        .iter()
        .map(|r| format!("{} {}", text(r, "config"), text(r, "size")))
        .collect();
    let col = |f: &str, scale: f64| -> Vec<Option<f64>> {
        rows.iter().map(|r| num(r, f).map(|v| v * scale)).collect()
    };
    vec![
        bar_chart(
            "usemem throughput per configuration",
            "throughput, MiB/s (higher is better)",
            &labels,
            &[
                ("the seed".into(), col("seed_throughput_kb_s", 1.0 / 1024.0)),
                ("foliosim".into(), col("throughput_kb_s", 1.0 / 1024.0)),
            ],
        ),
        bar_chart(
            "System time per configuration",
            "sys time, s (lower is better; the seed's at its own scale)",
            &labels,
            &[
                ("the seed".into(), col("seed_sys_s", 1.0)),
                ("foliosim".into(), col("sys_s", 1.0)),
            ],
        ),
    ]
}
