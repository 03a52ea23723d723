//! What a run produces: kernel-named counters, workload results, lock contention, engine stats.
//! Everything here is simulated; nothing depends on the wall clock, so the JSON of a scenario
//! and seed is identical byte for byte on every run.

pub mod observers;
/// The `[report]` table is schema (scenario/report.rs); its old path stays.
pub use crate::scenario::report as spec;
pub mod timeline;
pub mod timeseries;

use crate::engine::lock::LockStats;
use crate::workload::WorkloadResult;
use serde::Serialize;
use std::collections::BTreeMap;

#[derive(Debug, Clone, Serialize, PartialEq)]
pub struct LockReport {
    /// Kernel name of the lock, e.g. `si->lock`.
    pub name: String,
    /// Which instance: a device, a memcg, the zone.
    pub instance: String,
    #[serde(flatten)]
    pub stats: LockStats,
}

/// A kernel thread's share of the run (what `ps`/schedstat would show for it).
#[derive(Debug, Clone, Serialize, PartialEq)]
pub struct ThreadTimes {
    /// The name `ps` shows, e.g. `kswapd0`.
    pub name: String,
    /// CPU time (a kernel thread's is all system time).
    pub sys_ns: u64,
    /// Time asleep waiting for I/O.
    pub iowait_ns: u64,
    /// Times it was woken (by the kernel event it waits for, or its timer).
    pub wakeups: u64,
}

/// A process the OOM killer killed (the kernel's "Killed process" line, and its cause).
#[derive(Debug, Clone, Serialize, PartialEq)]
pub struct OomKillReport {
    pub at_ns: u64,
    /// Its tasks (one per thread), by name, and the index of their `[[workload]]`.
    pub tasks: Vec<String>,
    pub workload: usize,
    /// The memcg it ran in ("/" is the root).
    pub memcg: String,
    /// What ran out: `global` (the page allocator) or `memcg <name>` (memory.max).
    pub constraint: String,
    /// oom_badness when chosen (rss + swap entries + page-table pages, plus oom_score_adj
    /// thousandths of RAM + swap, or of the memcg's limit).
    pub points: i64,
    pub rss_pages: u64,
    pub swap_ents: u64,
    pub pgtables_pages: u64,
    pub oom_score_adj: i16,
    /// Killed with its memcg by memory.oom.group rather than chosen.
    pub group: bool,
}

#[derive(Debug, Clone, Serialize, PartialEq)]
pub struct RunResult {
    pub foliosim_version: String,
    pub kernel: String,
    pub swap_allocator: String,
    pub seed: u64,
    /// Simulated time from start until the last task exited.
    pub simulated_ns: u64,
    /// Engine steps (one fault with its reclaim, or one operation).
    pub steps: u64,
    /// CPU time of the workloads' tasks in user space and in the kernel (time(1)'s user and
    /// sys: kernel threads' time is not in it, see `kernel_threads`).
    pub cpu_user_ns: u64,
    pub cpu_sys_ns: u64,
    /// Time the workloads' tasks slept waiting for I/O (swap-in reads, discards), summed over
    /// tasks (schedstat iowait_sum): neither user nor sys time.
    pub cpu_iowait_ns: u64,
    /// The kernel threads the run had (zswap's shrink worker, ...), in creation order.
    pub kernel_threads: Vec<ThreadTimes>,
    /// /proc/vmstat and hugepages-*/stats/* deltas over the run, kernel names.
    pub counters: BTreeMap<String, u64>,
    /// Per memcg, by name ("/" is the root): the events the kernel also counts per memcg
    /// (cgroup v2 memory.stat names: pgscan_direct, pgsteal_direct, pgactivate, pgdeactivate),
    /// memcg-limit reclaim included.
    pub memcg_stats: BTreeMap<String, BTreeMap<String, u64>>,
    pub workloads: Vec<WorkloadResult>,
    /// Lock contention as `perf lock contention` would total it.
    pub locks: Vec<LockReport>,
    pub swap_devices: Vec<crate::hw::blockdev::BlockDevStats>,
    /// /sys/block/zramN/mm_stat of each zram swap device, in swap priority order.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub zram_mm_stat: Vec<crate::mm::zram::MmStat>,
    /// /sys/kernel/debug/zswap/* when zswap is on.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub zswap: Option<crate::mm::zswap::ZswapStats>,
    /// IAA devices' work (iaa_crypto wq_stats summed), when the machine has them.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub iaa: Option<crate::hw::iaa::IaaDeviceStats>,
    /// The CPU time of every task, kernel threads included, by the work that spent it
    /// (cpu_cost.rs: kernel functions, cost-table fields, "<lock> spin/handoff/held", "user:
    /// ..."); "... contention" is a memory-bandwidth stream's extra time of sharing. The
    /// values add up to the tasks' user and system time.
    pub cpu_time_ns: BTreeMap<String, u64>,
    /// The page allocator at the end of the run.
    pub page_alloc: PageAllocReport,
    /// Counters over simulated time (`[report] sample_interval`), when asked for.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub timeseries: Option<timeseries::TimeSeries>,
    /// Processes the OOM killer killed, in order (`kernel.oom = "kill"`).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub oom_kills: Vec<OomKillReport>,
    /// The TLBs (hw/tlb_cache.rs): perf's TLB events and the "TLB shootdowns" line of
    /// /proc/interrupts; absent when nothing was flushed or accessed through the model.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub tlb: Option<crate::hw::tlb_cache::TlbReport>,
}

/// The zone at the end of a run, as the kernel shows it (mm/page_alloc/).
#[derive(Debug, Clone, Serialize, PartialEq)]
pub struct PageAllocReport {
    /// /proc/buddyinfo.
    pub buddyinfo: String,
    /// /proc/pagetypeinfo.
    pub pagetypeinfo: String,
    /// NR_FREE_PAGES (the buddy lists; pages on per-CPU lists are not counted).
    pub nr_free_pages: u64,
    /// zone->_watermark[], pages, and the boost left on them.
    pub watermarks: crate::mm::page_alloc::Watermarks,
    pub watermark_boost_pages: u64,
    /// Allocations served from another migratetype's free lists, as the
    /// mm_page_alloc_extfrag tracepoint reports them.
    pub extfrag: crate::mm::page_alloc::ExtfragStats,
}

impl PageAllocReport {
    pub fn of(zone: &crate::mm::page_alloc::Zone) -> PageAllocReport {
        PageAllocReport {
            buddyinfo: zone.buddyinfo(),
            pagetypeinfo: zone.pagetypeinfo(),
            nr_free_pages: zone.nr_free_pages(),
            watermarks: zone.wmark,
            watermark_boost_pages: zone.watermark_boost,
            extfrag: zone.extfrag,
        }
    }
}

impl OomKillReport {
    /// One line, as the kernel's log has it.
    pub fn line(&self) -> String {
        format!(
            "oom-kill at {:.3} s ({}{}): killed {} (workload {}) in memcg {}, points {}, rss {} pages, swap {} pages, pgtables {} pages, oom_score_adj {}",
            self.at_ns as f64 / 1e9,
            self.constraint,
            if self.group { ", memory.oom.group" } else { "" },
            self.tasks.join(", "),
            self.workload,
            self.memcg,
            self.points,
            self.rss_pages,
            self.swap_ents,
            self.pgtables_pages,
            self.oom_score_adj
        )
    }
}

impl RunResult {
    pub fn to_json(&self) -> String {
        serde_json::to_string_pretty(self).expect("results always serialize")
    }

    pub fn counter(&self, name: &str) -> u64 {
        *self
            .counters
            .get(name)
            .unwrap_or_else(|| panic!("no counter named {name}"))
    }

    /// The engine's speed over a run that took `wall_s` seconds of wall time (not a result: it
    /// varies run to run).
    pub fn speed_line(&self, wall_s: f64) -> String {
        format!(
            "{} steps in {wall_s:.2} s wall = {:.2} M steps/s; {:.2} simulated s = {:.3} simulated s per wall s",
            self.steps,
            self.steps as f64 / wall_s / 1e6,
            self.simulated_ns as f64 / 1e9,
            self.simulated_ns as f64 / 1e9 / wall_s
        )
    }

    /// `cpu_time_ns`, the largest first (ties by name).
    pub fn cpu_time_by_time(&self) -> Vec<(&str, u64)> {
        let mut v: Vec<(&str, u64)> = self
            .cpu_time_ns
            .iter()
            .map(|(n, &ns)| (n.as_str(), ns))
            .collect();
        v.sort_by(|a, b| b.1.cmp(&a.1).then(a.0.cmp(b.0)));
        v
    }

    /// A human table: workloads, then non-zero counters, then contended locks, then the CPU
    /// time by the work that spent it.
    pub fn to_table(&self) -> String {
        let mut out = String::new();
        out.push_str(&format!(
            "kernel {}  swap_allocator {}  seed {}  simulated {:.3} s  steps {}\n",
            self.kernel,
            self.swap_allocator,
            self.seed,
            self.simulated_ns as f64 / 1e9,
            self.steps
        ));
        out.push_str(&format!(
            "cpu user {:.3} s  sys {:.3} s  iowait {:.3} s\n",
            self.cpu_user_ns as f64 / 1e9,
            self.cpu_sys_ns as f64 / 1e9,
            self.cpu_iowait_ns as f64 / 1e9
        ));
        for t in &self.kernel_threads {
            out.push_str(&format!(
                "{:<24} sys {:.3} s  iowait {:.3} s  wakeups {}\n",
                t.name,
                t.sys_ns as f64 / 1e9,
                t.iowait_ns as f64 / 1e9,
                t.wakeups
            ));
        }
        for w in &self.workloads {
            out.push_str(&format!(
                "{:<10} tasks {:>5}  throughput {:>10.1} MiB/s  longest {:.3} s\n",
                w.kind,
                w.tasks,
                w.throughput_bytes_per_s / (1 << 20) as f64,
                w.elapsed_ns_max as f64 / 1e9
            ));
        }
        for x in self.workloads.iter().filter_map(|w| w.xsbench.as_ref()) {
            out.push_str(&format!(
                "xsbench    threads {}  lookups {}  runtime {:.3} s  lookups/s {:.0}\n",
                x.threads, x.lookups, x.runtime_s, x.lookups_per_s
            ));
        }
        for u in self.workloads.iter().filter_map(|w| w.usemem.as_ref()) {
            for l in &u.lines {
                out.push_str(&format!("usemem     {}\n", l.text()));
            }
            out.push_str(&format!("usemem     total {} KB/s\n", u.total_kb_per_s));
        }
        for kill in &self.oom_kills {
            out.push_str(&format!("{}\n", kill.line()));
        }
        out.push_str("\ncounter                                       value\n");
        for (name, value) in self.counters.iter().filter(|(_, v)| **v != 0) {
            out.push_str(&format!("{name:<40} {value:>12}\n"));
        }
        if let Some(tlb) = &self.tlb {
            out.push_str(&format!("\nperf (TLB model, {})\n", tlb.geometry.name));
            for (name, value) in tlb.perf.iter().filter(|(_, v)| **v != 0) {
                out.push_str(&format!("{name:<40} {value:>12}\n"));
            }
            let per_cpu: Vec<String> = tlb
                .shootdowns_per_cpu
                .iter()
                .map(|v| v.to_string())
                .collect();
            out.push_str(&format!("TLB: {}  TLB shootdowns\n", per_cpu.join(" ")));
        }
        for (memcg, stats) in &self.memcg_stats {
            let nonzero: Vec<_> = stats.iter().filter(|(_, v)| **v != 0).collect();
            if nonzero.is_empty() {
                continue;
            }
            out.push_str(&format!("\nmemcg {memcg} memory.stat\n"));
            for (name, value) in nonzero {
                out.push_str(&format!("  {name:<38} {value:>12}\n"));
            }
        }
        out.push_str("\nlock                    instance           acquired  contended  wait total ms  wait max us\n");
        for l in &self.locks {
            out.push_str(&format!(
                "{:<23} {:<16} {:>10} {:>10} {:>14.3} {:>12.1}\n",
                l.name,
                l.instance,
                l.stats.acquisitions,
                l.stats.contended,
                l.stats.wait_ns_total as f64 / 1e6,
                l.stats.wait_ns_max as f64 / 1e3
            ));
        }
        let total_ns: u64 = self.cpu_time_ns.values().sum();
        out.push_str("\nCPU time by the work that spent it                   ms   share\n");
        for (name, ns) in self.cpu_time_by_time() {
            out.push_str(&format!(
                "{name:<48} {:>10.3} {:>6.1}%\n",
                ns as f64 / 1e6,
                100.0 * ns as f64 / total_ns.max(1) as f64
            ));
        }
        out
    }
}
