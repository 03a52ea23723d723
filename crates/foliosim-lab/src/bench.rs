//! `foliosim bench`: the engine's speed and memory on the seed scenarios and a 1 TiB machine
//! (issue 13), one row per scenario: steps per wall second and per CPU second, simulated
//! seconds per wall second and per CPU second, simulator bytes per simulated base page (RAM
//! plus swap), wall and CPU seconds. On a shared machine the CPU-second figures are the ones
//! to compare (wall time also counts waiting for a CPU).
//!
//! Memory is the process's peak resident set (VmHWM), reset before each row through
//! /proc/self/clear_refs so that a row does not inherit the previous row's peak; the
//! simulator's own estimate ([`crate::footprint::estimate`]) is printed beside it. Wall and CPU time
//! and RSS are measured around runs and never reach their results.

use crate::reproduce::{seed000, seed002, seed003};
use crate::scenario::{Kernel, Release, Scenario};
use std::time::Instant;

/// Simulated base page.
const PAGE_BYTES: u64 = 4096;

/// One scenario of the suite.
pub struct BenchCase {
    pub name: String,
    pub scenario: Scenario,
}

/// One measured row.
#[derive(Debug, Clone, serde::Serialize)]
pub struct BenchRow {
    pub name: String,
    pub steps: u64,
    pub wall_s: f64,
    /// CPU time of the process during the row (user + system, getrusage), if known: on a
    /// shared machine wall time also counts waiting for a CPU.
    pub cpu_s: Option<f64>,
    pub simulated_s: f64,
    /// Simulated base pages of RAM plus swap slots.
    pub base_pages: u64,
    /// Peak resident set of the process during the row (VmHWM), if /proc has it.
    pub peak_rss_bytes: Option<u64>,
    /// The simulator's estimate of its own memory for the scenario (footprint.rs).
    pub estimate_bytes: u64,
}

impl BenchRow {
    /// Steps per wall second.
    pub fn steps_per_s(&self) -> f64 {
        self.steps as f64 / self.wall_s.max(1e-9)
    }
    /// Steps per CPU second (per wall second where CPU time is unknown): per core.
    pub fn steps_per_cpu_s(&self) -> f64 {
        self.steps as f64 / self.cpu_s.unwrap_or(self.wall_s).max(1e-9)
    }
    pub fn simulated_per_wall(&self) -> f64 {
        self.simulated_s / self.wall_s.max(1e-9)
    }
    /// Simulated seconds per CPU second (per wall second where CPU time is unknown).
    pub fn simulated_per_cpu(&self) -> f64 {
        self.simulated_s / self.cpu_s.unwrap_or(self.wall_s).max(1e-9)
    }
    /// Peak RSS per simulated base page (the estimate's when RSS is unknown).
    pub fn bytes_per_page(&self) -> f64 {
        self.peak_rss_bytes.unwrap_or(self.estimate_bytes) as f64 / self.base_pages.max(1) as f64
    }
    pub fn estimate_bytes_per_page(&self) -> f64 {
        self.estimate_bytes as f64 / self.base_pages.max(1) as f64
    }
}

/// The 1 TiB machine of issue 13: 128 CPUs, 256 usemem processes of 4 GiB with 64K folios in
/// a 768 GiB memcg, swapping a quarter of it to a 512 GiB SSD; every size times `scale`.
pub fn usemem_1t_64k(scale: f64) -> Scenario {
    let size = |bytes: u64| format!("{}M", ((bytes as f64 * scale) as u64 >> 20).max(2));
    let text = format!(
        r#"
seed = 1
[machine]
cpus = 128
memory = "{mem}"
cost_profile = "x86-server"
[[machine.swap]]
kind = "ssd"
size = "{swap}"
[kernel]
version = "6.18"
[sysfs]
thp_enabled = "never"
defrag = "always"
[sysfs.hugepages]
"64K" = "always"
"2M" = "never"
[[memcg]]
name = "usemem"
max = "{memcg}"
[[workload]]
kind = "usemem"
nproc = 256
size = "{per_proc}"
memcg = "usemem"
"#,
        mem = size(1 << 40),
        swap = size(512 << 30),
        memcg = size(768 << 30),
        per_proc = size(4 << 30),
    );
    Scenario::from_toml_str(&text).expect("the 1 TiB bench scenario is valid")
}

/// The suite: full scale, or `quick` (scaled down to run in seconds).
pub fn cases(quick: bool) -> Vec<BenchCase> {
    let (s000, s002, s003, s1t) = if quick {
        (0.02, 0.01, 0.05, 1.0 / 512.0)
    } else {
        (1.0, 0.1, 1.0, 1.0)
    };
    let k618 = Kernel {
        version: Release::V6_18,
        ..Kernel::default()
    };
    let case = |name: String, scenario: Scenario| BenchCase { name, scenario };
    vec![
        case(
            format!("seed000 usemem 4K x{s000}"),
            seed000::scenario(Release::V6_10, "4K", s000, 1),
        ),
        case(
            format!("seed000 usemem 64K x{s000}"),
            seed000::scenario(Release::V6_10, "64K", s000, 1),
        ),
        case(
            format!("seed002 zswap lz4 64K x{s002}"),
            seed002::scenario(seed002::Config::ZswapLz4, "64K", s002, 1),
        ),
        case(
            format!("seed003 kbuild 4K x{s003}"),
            seed003::kbuild_scenario(k618, "4K", s003, 1),
        ),
        case(
            format!(
                "1TiB 128cpu usemem 64K x{}",
                if quick { "1/512" } else { "1" }
            ),
            usemem_1t_64k(s1t),
        ),
    ]
}

/// Base pages the scenario simulates: RAM plus every swap device's slots.
fn base_pages(s: &Scenario) -> u64 {
    let swap: u64 = s.machine.swap_devices.iter().map(|d| d.size.0).sum();
    (s.machine.memory.0 + swap) / PAGE_BYTES
}

/// Reset the process's peak RSS (VmHWM) to its current RSS; false where /proc cannot.
fn reset_peak_rss() -> bool {
    std::fs::write("/proc/self/clear_refs", "5").is_ok()
}

/// VmHWM of this process, bytes.
pub fn peak_rss_bytes() -> Option<u64> {
    let status = std::fs::read_to_string("/proc/self/status").ok()?;
    let line = status.lines().find(|l| l.starts_with("VmHWM:"))?;
    let kib: u64 = line.split_whitespace().nth(1)?.parse().ok()?;
    Some(kib * 1024)
}

/// User plus system CPU time of this process, seconds.
fn cpu_time_s() -> Option<f64> {
    #[cfg(unix)]
    {
        // SAFETY: getrusage writes the struct it is given.
        let mut u: libc::rusage = unsafe { std::mem::zeroed() };
        if unsafe { libc::getrusage(libc::RUSAGE_SELF, &mut u) } != 0 {
            return None;
        }
        let s = |t: libc::timeval| t.tv_sec as f64 + t.tv_usec as f64 / 1e6;
        Some(s(u.ru_utime) + s(u.ru_stime))
    }
    #[cfg(not(unix))]
    None
}

/// Run one case and measure it.
pub fn run_case(case: &BenchCase) -> Result<BenchRow, crate::SimError> {
    let resettable = reset_peak_rss();
    let cpu_before = cpu_time_s();
    let wall = Instant::now();
    let r = crate::run(&case.scenario)?;
    let wall_s = wall.elapsed().as_secs_f64();
    let cpu_s = cpu_before.zip(cpu_time_s()).map(|(a, b)| b - a);
    Ok(BenchRow {
        name: case.name.clone(),
        steps: r.steps,
        wall_s,
        cpu_s,
        simulated_s: r.simulated_ns as f64 / 1e9,
        base_pages: base_pages(&case.scenario),
        peak_rss_bytes: if resettable { peak_rss_bytes() } else { None },
        estimate_bytes: crate::footprint::estimate(&case.scenario).total_bytes(),
    })
}

pub fn header() -> String {
    format!(
        "{:34} {:>10} {:>9} {:>9} {:>10} {:>9} {:>10} {:>9} {:>9} {:>8} {:>8}",
        "scenario",
        "steps",
        "M steps/s",
        "M st/cpus",
        "sim s/wall",
        "sim s/cpu",
        "base pages",
        "B/page",
        "est B/pg",
        "wall s",
        "cpu s"
    )
}

pub fn format_row(r: &BenchRow) -> String {
    let rss = match r.peak_rss_bytes {
        Some(_) => format!("{:.1}", r.bytes_per_page()),
        None => "-".to_string(),
    };
    format!(
        "{:34} {:>10} {:>9.3} {:>9.3} {:>10.3} {:>9.3} {:>10} {:>9} {:>9.1} {:>8.2} {:>8}",
        r.name,
        r.steps,
        r.steps_per_s() / 1e6,
        r.steps_per_cpu_s() / 1e6,
        r.simulated_per_wall(),
        r.simulated_per_cpu(),
        r.base_pages,
        rss,
        r.estimate_bytes_per_page(),
        r.wall_s,
        r.cpu_s.map_or("-".to_string(), |c| format!("{c:.2}"))
    )
}
