//! One live run: refuse unless allowed and safe, apply the scenario to the host, run the tasks,
//! read the counters, restore the host.

use crate::cgroup::Memcg;
use crate::counters;
use crate::exec::{self, LiveTask};
use crate::settings::{self, HostGuard};
use crate::swapdev;
use crate::Refusal;
use anyhow::{Context, Result};
use foliosim::registry::LruPolicyKind;
use foliosim::scenario::tmpfs::{ShmemEnabled, ShmemSizeEnabled};
use foliosim::scenario::{
    Bytes, KhugepagedKnobs, LruGenKnobs, Scenario, Sysfs, ThpEnabled, VmSysctl, ZswapKnobs,
    PAGE_SIZE, PMD_ORDER,
};
use foliosim::workload::{self, Op, WorkloadResult};
use serde::Serialize;
use std::collections::BTreeMap;
use std::os::unix::fs::DirBuilderExt;
use std::path::Path;
use std::time::{Duration, Instant};

#[derive(Debug, Clone, Default)]
pub struct LiveOptions {
    /// The explicit opt-in (`--live`, `allow_live=True`).
    pub allow_live: bool,
    /// Kill the tasks and restore if the workload runs longer than this.
    pub timeout: Option<Duration>,
    /// Allow turning zswap on (`--enable-zswap`). zswap itself is turned off again after the
    /// run, but 6.18 stops swapping mTHP in whole for the rest of the boot once zswap has been
    /// enabled (`zswap_never_enabled()`), which cannot be undone.
    pub enable_zswap: bool,
}

/// RAM kept free beyond the scenario's own needs.
const HEADROOM_BYTES: u64 = 512 << 20;

#[derive(Debug, Clone, Serialize)]
pub struct LiveResult {
    pub backend: String,
    pub foliosim_version: String,
    /// `uname -r` of the host.
    pub kernel_release: String,
    /// The scenario's sim kernel profile (what `validate` compares against).
    pub kernel_profile: String,
    pub seed: u64,
    /// From the release of the tasks until the last exited.
    pub wall_ns: u64,
    /// CPU time of the task processes (time(1)'s user and sys).
    pub cpu_user_ns: u64,
    pub cpu_sys_ns: u64,
    /// /proc/vmstat and hugepages-*/stats/* event deltas over the run, kernel (= sim) names.
    pub counters: BTreeMap<String, u64>,
    /// Deltas of levels (nr_* in vmstat, hugepages-*/stats/nr_anon…).
    pub gauges: BTreeMap<String, i64>,
    pub workloads: Vec<WorkloadResult>,
    /// Per zram device we created (`zram0` …): mm_stat/*, io_stat/*, stat/* at the end.
    pub zram: BTreeMap<String, BTreeMap<String, i64>>,
    /// Per scenario memcg: memory.stat and peak usage at the end (the memcg is fresh).
    pub memcgs: BTreeMap<String, BTreeMap<String, i64>>,
    /// Other processes' minor faults during the run: what they may add to the host-wide
    /// fault counters (others.rs).
    pub other_faults: crate::others::OtherFaults,
    /// The disks under the run's swap files and loop devices: their writes during the run.
    pub swap_disks: Vec<crate::diskstat::DiskWrites>,
    /// Settings written, `path = value`.
    pub settings: Vec<String>,
    /// Tasks that did not complete, and why.
    pub task_failures: Vec<String>,
    /// Where the live run differs from what the scenario describes (host size, CPUs…).
    pub notes: Vec<String>,
    /// What was restored from a killed earlier run's journal before this one started.
    pub recovered: Vec<String>,
}

impl LiveResult {
    pub fn to_json(&self) -> String {
        serde_json::to_string_pretty(self).expect("results always serialize")
    }

    pub fn to_table(&self) -> String {
        let mut out = format!(
            "live: kernel {} (sim profile {})  seed {}  wall {:.3} s  user {:.3} s  sys {:.3} s\n",
            self.kernel_release,
            self.kernel_profile,
            self.seed,
            self.wall_ns as f64 / 1e9,
            self.cpu_user_ns as f64 / 1e9,
            self.cpu_sys_ns as f64 / 1e9
        );
        for w in &self.workloads {
            out.push_str(&format!(
                "{:<10} tasks {:>5}  throughput {:>10.1} MiB/s  longest {:.3} s\n",
                w.kind,
                w.tasks,
                w.throughput_bytes_per_s / (1 << 20) as f64,
                w.elapsed_ns_max as f64 / 1e9
            ));
        }
        for f in &self.task_failures {
            out.push_str(&format!("task failed: {f}\n"));
        }
        for n in &self.notes {
            out.push_str(&format!("note: {n}\n"));
        }
        let sim_names = foliosim::mm::vmstat::VmStat::default().to_map();
        out.push_str("\ncounter (the sim's counters, non-zero)        value\n");
        for (name, value) in &self.counters {
            if *value != 0 && sim_names.contains_key(name) {
                out.push_str(&format!("{name:<40} {value:>12}\n"));
            }
        }
        for (dev, stats) in &self.zram {
            out.push_str(&format!("\n{dev}\n"));
            for (k, v) in stats.iter().filter(|(_, v)| **v != 0) {
                out.push_str(&format!("  {k:<38} {v:>12}\n"));
            }
        }
        for (name, stats) in &self.memcgs {
            out.push_str(&format!("\nmemcg {name}\n"));
            for k in [
                "rss",
                "anon",
                "swap",
                "pgfault",
                "pgmajfault",
                "memory.max_usage_in_bytes",
                "memory.peak",
                "memory.failcnt",
                "memory.events.oom_kill",
            ] {
                if let Some(v) = stats.get(k) {
                    out.push_str(&format!("  {k:<38} {v:>12}\n"));
                }
            }
        }
        out
    }
}

fn kernel_release() -> String {
    std::fs::read_to_string("/proc/sys/kernel/osrelease")
        .map(|s| s.trim().to_string())
        .unwrap_or_else(|_| "unknown".into())
}

/// Memory the scenario's tasks map and write to tmpfs (all at once, as the live backend runs
/// them).
pub fn footprint_bytes(scenario: &Scenario) -> u64 {
    workload::all_ops(scenario)
        .map(|op| match op {
            Op::Mmap { nr_pages, .. } => nr_pages as u64 * PAGE_SIZE,
            // tmpfs pages stay in RAM or in swap (zram: in RAM again).
            Op::ShmemWrite { nr, .. } => nr as u64 * PAGE_SIZE,
            _ => 0,
        })
        .sum()
}

/// A policy chosen by name that is not the one the kernel runs (`kernel.swap_allocator`,
/// `kernel.lru_policy`: a registered alternative, docs/extending.md) exists only in the sim:
/// the host kernel would run its own, and a comparison would be of something else.
fn check_policies_are_the_kernels(scenario: &Scenario) -> Result<(), Refusal> {
    let kernel = &scenario.kernel;
    if let Some(chosen) = kernel.swap_allocator {
        let (release_default, _) = kernel.version.swap_allocator();
        if chosen != release_default {
            return Err(Refusal::Unsupported(format!(
                "scenario field `kernel.swap_allocator`: found {chosen}, but {} runs {release_default}; a chosen allocator exists only in the sim (remove the field to run live)",
                kernel.version.name()
            )));
        }
    }
    if let Some(chosen) = kernel.lru_policy {
        let kernel_policy = LruPolicyKind::of_lru_gen(scenario.sysfs.lru_gen.enabled());
        if chosen != kernel_policy {
            return Err(Refusal::Unsupported(format!(
                "scenario field `kernel.lru_policy`: found {chosen}, but with this `sysfs.lru_gen` the kernel runs {kernel_policy}; a chosen LRU policy exists only in the sim (remove the field to run live)"
            )));
        }
    }
    Ok(())
}

/// The checks made before touching anything: opt-in, root, supported swap kinds and knobs,
/// enough free memory.
pub fn preflight(scenario: &Scenario, opts: &LiveOptions) -> Result<()> {
    if !opts.allow_live {
        return Err(Refusal::NotAllowed.into());
    }
    // SAFETY: geteuid has no preconditions.
    let uid = unsafe { libc::geteuid() };
    if uid != 0 {
        return Err(Refusal::NotRoot(uid).into());
    }
    if scenario.sysfs.thp_enabled == ThpEnabled::Inherit {
        return Err(Refusal::Unsupported(
            "scenario field `sysfs.thp_enabled`: found inherit; allowed live: always, madvise, never (the top-level knob has nothing to inherit from)".into(),
        )
        .into());
    }
    // The host's NUMA layout is not the live backend's to change: a scenario with memory-only
    // nodes needs a host that has them, and NUMA balancing and demotion settings are not
    // applied live yet.
    let host_nodes = std::fs::read_dir("/sys/devices/system/node")
        .map(|d| {
            d.filter_map(Result::ok)
                .filter(|e| {
                    let name = e.file_name();
                    let name = name.to_string_lossy();
                    name.starts_with("node") && name[4..].parse::<u32>().is_ok()
                })
                .count()
        })
        .unwrap_or(1);
    if scenario.machine.nodes.len() + 1 > host_nodes {
        return Err(Refusal::Unsupported(format!(
            "scenario field `machine.node`: found {} node(s) beyond node 0, but this host has {host_nodes} NUMA node(s)",
            scenario.machine.nodes.len()
        ))
        .into());
    }
    if scenario.sysctl.kernel != Default::default() || scenario.sysfs.numa != Default::default() {
        return Err(Refusal::Unsupported(
            "scenario fields `sysctl.kernel` / `sysfs.numa` (NUMA balancing, demotion): not applied by the live backend yet".into(),
        )
        .into());
    }
    check_policies_are_the_kernels(scenario)?;
    let lru_gen = &scenario.sysfs.lru_gen;
    if host_lru_gen().is_none() && (lru_gen.enabled == Some(true) || lru_gen.min_ttl_ms.is_some()) {
        return Err(Refusal::Unsupported(
            "scenario field `sysfs.lru_gen`: MGLRU settings given, but this kernel has no /sys/kernel/mm/lru_gen (CONFIG_LRU_GEN)".into(),
        )
        .into());
    }
    for (i, dev) in scenario.machine.swap_devices.iter().enumerate() {
        swapdev::check_supported(i, dev).map_err(|e| Refusal::Unsupported(e.to_string()))?;
    }
    if scenario.sysfs.zswap.enabled && !Path::new("/sys/module/zswap/parameters/enabled").exists() {
        return Err(Refusal::Unsupported(
            "scenario field `sysfs.zswap.enabled`: found true, but this kernel has no zswap".into(),
        )
        .into());
    }
    // Enabling zswap flips a boot-long switch (zswap_never_enabled) that turns mTHP swap-in
    // off until reboot: not restorable, so only with the explicit flag.
    if scenario.sysfs.zswap.enabled && !zswap_enabled_on_host() && !opts.enable_zswap {
        return Err(Refusal::Unsupported(
            "scenario field `sysfs.zswap.enabled`: found true, but zswap is off on this host and turning it on cannot be fully undone (the kernel disables mTHP swap-in until reboot once zswap has been enabled); pass --enable-zswap (Python: enable_zswap=True) to allow it".into(),
        )
        .into());
    }
    let (_, cgroup) =
        crate::cgroup::memory_root().map_err(|e| Refusal::Unsupported(e.to_string()))?;
    if cgroup == crate::cgroup::Version::V1 {
        for (i, spec) in scenario.memcgs.iter().enumerate() {
            if let Some(field) = crate::cgroup::v2_only_field(spec) {
                return Err(Refusal::Unsupported(format!(
                    "scenario field `memcg[{i}].{field}`: cgroup v2 only, and this host's memory controller is v1"
                ))
                .into());
            }
        }
    } else {
        let workload_memcgs: Vec<Option<&str>> =
            scenario.workloads.iter().map(|w| w.memcg()).collect();
        crate::cgroup::check_no_internal_processes(&scenario.memcgs, &workload_memcgs)
            .map_err(|e| Refusal::Unsupported(format!("scenario field {e}")))?;
    }
    // Resident pages are capped by the memcg, but what is swapped to zram stays in RAM
    // (compressed, at worst 1:1), so the whole footprint must fit.
    let footprint = footprint_bytes(scenario);
    let needed = footprint + HEADROOM_BYTES;
    let available = counters::mem_available_bytes().unwrap_or(0);
    if needed > available {
        return Err(Refusal::NotEnoughMemory {
            needed_mib: needed >> 20,
            available_mib: available >> 20,
            what: format!(
                "{} MiB mapped by the tasks + {} MiB headroom",
                footprint >> 20,
                HEADROOM_BYTES >> 20
            ),
        }
        .into());
    }
    Ok(())
}

pub fn zswap_enabled_on_host() -> bool {
    settings::read_knob("/sys/module/zswap/parameters/enabled").is_ok_and(|v| v == "Y" || v == "1")
}

/// Every knob the scenario sets, as (sysfs path, value), in the order to write them.
/// /sys/kernel/mm/lru_gen (CONFIG_LRU_GEN).
pub const LRU_GEN_DIR: &str = "/sys/kernel/mm/lru_gen";

/// Which reclaim the host runs: Some(true) for MGLRU (`enabled` has LRU_GEN_CORE, bit 0, set:
/// the file reads `0x0007`-style hex), Some(false) for the classic LRU, None when the kernel
/// has no MGLRU at all.
pub fn host_lru_gen() -> Option<bool> {
    lru_gen_core(&settings::read_knob(&format!("{LRU_GEN_DIR}/enabled")).ok()?)
}

/// LRU_GEN_CORE of an `enabled` value (`0x0007`, or a plain number).
fn lru_gen_core(text: &str) -> Option<bool> {
    let text = text.trim();
    let caps = match text.strip_prefix("0x") {
        Some(hex) => u32::from_str_radix(hex, 16).ok()?,
        None => text.parse().ok()?,
    };
    Some(caps & 1 != 0)
}

/// What the notes say of the host's reclaim against the scenario's.
fn lru_gen_note(scenario: &Scenario) -> String {
    let host = match host_lru_gen() {
        Some(true) => "MGLRU (lru_gen enabled)",
        Some(false) => "the classic LRU (lru_gen present, disabled)",
        None => "the classic LRU (no CONFIG_LRU_GEN)",
    };
    let lg = &scenario.sysfs.lru_gen;
    match lg.enabled {
        Some(on) => format!(
            "host reclaim was {host}; set to {} for this run and restored after it",
            if on { "MGLRU" } else { "the classic LRU" }
        ),
        None if host_lru_gen() == Some(true) => format!(
            "host reclaim is {host} but the scenario leaves `sysfs.lru_gen.enabled` unset: the sim models the classic LRU; set it to compare like with like"
        ),
        None => format!("host reclaim is {host}, as the sim models"),
    }
}

pub fn host_settings(scenario: &Scenario) -> Vec<(String, String)> {
    let s = &scenario.sysfs;
    let mut out = thp_settings(s);
    khugepaged_settings(&s.khugepaged, &mut out);
    lru_gen_settings(&s.lru_gen, &mut out);
    zswap_settings(&s.zswap, &mut out);
    // After the THP knobs: enabling PMD THP makes khugepaged raise min_free_kbytes, which a
    // scenario's own value must then override.
    vm_sysctl_settings(&scenario.sysctl.vm, &mut out);
    out
}

/// `enabled` as the kernel spells it.
fn thp_enabled_name(e: ThpEnabled) -> String {
    match e {
        ThpEnabled::Always => "always",
        ThpEnabled::Madvise => "madvise",
        ThpEnabled::Inherit => "inherit",
        ThpEnabled::Never => "never",
    }
    .to_string()
}

/// The THP knobs: `enabled` (top level and per size), `defrag`, `shmem_enabled`.
fn thp_settings(s: &Sysfs) -> Vec<(String, String)> {
    let thp = counters::THP_DIR;
    let name = thp_enabled_name;
    let mut out = vec![(format!("{thp}/enabled"), name(s.thp_enabled))];
    // Every size the host has, as the sim resolves it: listed sizes as given, others never
    // (2M: inherit).
    per_size(
        "enabled",
        &s.hugepages,
        ThpEnabled::Inherit,
        ThpEnabled::Never,
        &mut out,
        name,
    );
    if let Some(d) = s.defrag {
        out.push((format!("{thp}/defrag"), d.name().into()));
    }
    // tmpfs: only deny and force act on mounts (their huge= decides the rest); written as the
    // sim resolves it, so a host left at deny or force does not decide the run.
    let shmem = format!("{thp}/shmem_enabled");
    if Path::new(&shmem).exists() {
        out.push((shmem, shmem_enabled_name(s.shmem_enabled).into()));
    }
    shmem_size_settings(s, &mut out);
    out
}

/// Per-size `hugepages-*/shmem_enabled` (anonymous shmem only in 6.18), written only when the
/// scenario lists a size: then every size the host has, unlisted ones at the kernel's defaults
/// (2M inherit, others never), so the host's earlier values do not decide the run.
fn shmem_size_settings(s: &Sysfs, out: &mut Vec<(String, String)>) {
    if s.hugepages_shmem.is_empty() {
        return;
    }
    let (inherit, never) = (ShmemSizeEnabled::Inherit, ShmemSizeEnabled::Never);
    per_size(
        "shmem_enabled",
        &s.hugepages_shmem,
        inherit,
        never,
        out,
        |v| v.name().into(),
    );
}

/// `hugepages-<size>/<knob>` for every size the host has: a size `listed` takes its value,
/// others the kernel's default (2M `pmd_default`, the rest `default`).
fn per_size<V: Copy>(
    knob: &str,
    listed: &BTreeMap<String, V>,
    pmd_default: V,
    default: V,
    out: &mut Vec<(String, String)>,
    name: impl Fn(V) -> String,
) {
    let thp = counters::THP_DIR;
    for order in 1..=PMD_ORDER {
        let size = PAGE_SIZE << order;
        let path = format!("{thp}/hugepages-{}kB/{knob}", size / 1024);
        if !Path::new(&path).exists() {
            continue;
        }
        let value = listed
            .iter()
            .find(|(k, _)| Bytes::parse(k).is_ok_and(|b| b.0 == size))
            .map_or(
                if order == PMD_ORDER {
                    pmd_default
                } else {
                    default
                },
                |(_, v)| *v,
            );
        out.push((path, name(value)));
    }
}

fn khugepaged_settings(k: &KhugepagedKnobs, out: &mut Vec<(String, String)>) {
    let thp = counters::THP_DIR;
    let kh = |n: &str| format!("{thp}/khugepaged/{n}");
    if let Some(v) = k.defrag {
        out.push((kh("defrag"), u8::from(v).to_string()));
    }
    for (n, v) in [
        ("pages_to_scan", k.pages_to_scan),
        ("scan_sleep_millisecs", k.scan_sleep_millisecs),
        ("alloc_sleep_millisecs", k.alloc_sleep_millisecs),
        ("max_ptes_none", k.max_ptes_none),
        ("max_ptes_swap", k.max_ptes_swap),
        ("max_ptes_shared", k.max_ptes_shared),
    ] {
        if let Some(v) = v {
            out.push((kh(n), v.to_string()));
        }
    }
}

/// MGLRU: only what the scenario gives (restored after the run like the THP knobs).
fn lru_gen_settings(lg: &LruGenKnobs, out: &mut Vec<(String, String)>) {
    if host_lru_gen().is_some() {
        if let Some(on) = lg.enabled {
            if host_lru_gen() != Some(on) {
                out.push((
                    format!("{LRU_GEN_DIR}/enabled"),
                    if on { "y" } else { "n" }.into(),
                ));
            }
        }
        if let Some(ms) = lg.min_ttl_ms {
            out.push((format!("{LRU_GEN_DIR}/min_ttl_ms"), ms.to_string()));
        }
    }
}

fn zswap_settings(z: &ZswapKnobs, out: &mut Vec<(String, String)>) {
    let zs = "/sys/module/zswap/parameters";
    if Path::new(zs).exists() {
        if let Some(c) = &z.compressor {
            out.push((format!("{zs}/compressor"), c.clone()));
        }
        if let Some(p) = z.max_pool_percent {
            out.push((format!("{zs}/max_pool_percent"), p.to_string()));
        }
        if let Some(p) = z.accept_threshold_percent {
            out.push((format!("{zs}/accept_threshold_percent"), p.to_string()));
        }
        if let Some(on) = z.shrinker_enabled {
            out.push((
                format!("{zs}/shrinker_enabled"),
                if on { "Y" } else { "N" }.into(),
            ));
        }
        out.push((
            format!("{zs}/enabled"),
            if z.enabled { "Y" } else { "N" }.into(),
        ));
    }
}

/// /proc/sys/vm knobs the scenario gives.
fn vm_sysctl_settings(vm: &VmSysctl, out: &mut Vec<(String, String)>) {
    for (name, value) in [
        ("min_free_kbytes", vm.min_free_kbytes),
        (
            "watermark_scale_factor",
            vm.watermark_scale_factor.map(u64::from),
        ),
        (
            "watermark_boost_factor",
            vm.watermark_boost_factor.map(u64::from),
        ),
        ("extfrag_threshold", vm.extfrag_threshold.map(u64::from)),
        (
            "compaction_proactiveness",
            vm.compaction_proactiveness.map(u64::from),
        ),
        (
            "compact_unevictable_allowed",
            vm.compact_unevictable_allowed.map(u64::from),
        ),
        ("swappiness", vm.swappiness.map(u64::from)),
        ("page-cluster", vm.page_cluster.map(u64::from)),
    ] {
        if let Some(v) = value {
            out.push((format!("/proc/sys/vm/{name}"), v.to_string()));
        }
    }
}

/// `shmem_enabled` as the kernel spells it.
fn shmem_enabled_name(v: ShmemEnabled) -> &'static str {
    match v {
        ShmemEnabled::Always => "always",
        ShmemEnabled::WithinSize => "within_size",
        ShmemEnabled::Advise => "advise",
        ShmemEnabled::Never => "never",
        ShmemEnabled::Deny => "deny",
        ShmemEnabled::Force => "force",
    }
}

/// Run a scenario on the live kernel. The host is restored before this returns, also on error.
pub fn run(scenario: &Scenario, opts: &LiveOptions) -> Result<LiveResult> {
    preflight(scenario, opts)?;
    let mut guard = HostGuard::acquire()?;
    let result = run_holding(scenario, opts, &mut guard);
    let restored = guard.restore();
    let mut result = result?;
    restored?;
    result.recovered = guard.recovered.clone();
    Ok(result)
}

fn check_interrupt() -> Result<()> {
    if settings::interrupted() {
        anyhow::bail!("interrupted by a signal; settings restored");
    }
    Ok(())
}

fn run_holding(
    scenario: &Scenario,
    opts: &LiveOptions,
    guard: &mut HostGuard,
) -> Result<LiveResult> {
    let mut notes = host_notes(scenario)?;
    let mut applied = vec![];
    for (path, value) in host_settings(scenario) {
        check_interrupt()?;
        guard.set_sysfs(&path, &value)?;
        applied.push(format!("{path} = {value}"));
    }
    let (zram_ids, disks) = create_swap_areas(guard, scenario, &mut applied)?;
    // Before the memcgs, so a restore (newest first) kills the tasks before it unmounts.
    let tmpfs_dirs = crate::tmpfs::mount_all(
        guard,
        &scenario.tmpfs,
        scenario.machine.memory,
        &mut applied,
    )?;
    let memcgs = create_memcgs(guard, scenario, &mut applied)?;
    let file_dir = create_files(guard, scenario, &mut applied)?;
    let mut tasks = live_tasks(scenario, &memcgs, &file_dir, &tmpfs_dirs)?;
    if pin_one_per_cpu(&mut tasks, scenario.machine.cpus as usize) {
        let n: usize = tasks.iter().map(|t| 1 + t.threads.len()).sum();
        notes.push(format!(
            "{n} task(s) pinned one per CPU, as the sim places them when no task waits for a CPU"
        ));
    }
    check_interrupt()?;
    let mut result = run_measured(scenario, opts, &tasks, disks, notes)?;
    result.zram = zram_ids
        .iter()
        .map(|id| (format!("zram{id}"), counters::zram_stats(*id)))
        .collect();
    result.memcgs = memcgs
        .iter()
        .map(|(name, cg)| (name.clone(), cg.stats()))
        .collect();
    result.settings = applied;
    Ok(result)
}

/// Run the tasks between two snapshots of the host's counters and of `disks`: the result
/// but for what the caller created (zram, memcgs, settings).
fn run_measured(
    scenario: &Scenario,
    opts: &LiveOptions,
    tasks: &[LiveTask],
    mut disks: Vec<String>,
    mut notes: Vec<String>,
) -> Result<LiveResult> {
    // Let writes to sysfs settle (khugepaged wakes on some) before the first snapshot.
    let before = counters::snapshot();
    let others_before = crate::others::snapshot();
    disks.sort();
    disks.dedup();
    let disks_before: Vec<_> = disks.iter().map(|d| crate::diskstat::read(d)).collect();
    let outcome = exec::run_tasks(tasks, &stop_reason(opts))?;
    let after = counters::snapshot();
    let other_faults = crate::others::between(&others_before, &crate::others::snapshot());
    notes.extend(other_faults.note());
    let swap_disks: Vec<_> = disks
        .iter()
        .zip(disks_before)
        .filter_map(|(d, before)| {
            let w = crate::diskstat::DiskWrites::between(d, before?, crate::diskstat::read(d)?);
            notes.push(w.note());
            Some(w)
        })
        .collect();
    let (events, gauges) = counters::delta(&before, &after);
    let workloads = workload::report_all(
        &scenario.workloads,
        &scenario.files,
        outcome.tasks.iter().map(|t| workload::TaskOutput {
            workload: t.workload,
            marks: &t.marks,
            latencies: &t.latencies,
        }),
    );
    Ok(LiveResult {
        backend: "live".into(),
        foliosim_version: env!("CARGO_PKG_VERSION").into(),
        kernel_release: kernel_release(),
        kernel_profile: scenario.kernel.version.name(),
        seed: scenario.seed,
        wall_ns: outcome.wall_ns,
        cpu_user_ns: outcome.user_ns,
        cpu_sys_ns: outcome.sys_ns,
        counters: events,
        gauges,
        workloads,
        zram: BTreeMap::new(),
        memcgs: BTreeMap::new(),
        other_faults,
        swap_disks,
        settings: vec![],
        task_failures: outcome
            .tasks
            .iter()
            .filter_map(|t| t.failure.as_ref().map(|f| format!("{}: {f}", t.name)))
            .collect(),
        notes,
        recovered: vec![],
    })
}

/// Where the host differs from the scenario's machine, said before anything is changed.
fn host_notes(scenario: &Scenario) -> Result<Vec<String>> {
    let mut notes = vec![lru_gen_note(scenario)];
    let other_swaps: Vec<_> = swapdev::active_swaps()?
        .into_iter()
        .filter(|p| !p.contains(swapdev::PREFIX) && !p.starts_with("/dev/zram"))
        .collect();
    if !other_swaps.is_empty() {
        notes.push(format!(
            "the host already swaps to {} (left alone; it takes swap-outs too)",
            other_swaps.join(", ")
        ));
    }
    let cpus = std::thread::available_parallelism().map_or(1, |n| n.get()) as u32;
    if cpus != scenario.machine.cpus {
        notes.push(format!(
            "host has {cpus} CPUs, the scenario's machine {}",
            scenario.machine.cpus
        ));
    }
    let footprint = footprint_bytes(scenario);
    let limited = scenario.memcgs.iter().any(|c| c.max.is_some());
    if footprint > scenario.machine.memory.0 && !limited {
        notes.push(format!(
            "the tasks map {} MiB, more than the scenario's machine.memory, but the host is larger and there is no memcg limit: the sim reclaims, the live run may not",
            footprint >> 20
        ));
    }
    if scenario.sysfs.zswap.enabled && !zswap_enabled_on_host() {
        notes.push(
            "zswap turned on for this run (--enable-zswap) and off again after it; this host now swaps mTHP in as order 0 until reboot".into(),
        );
    }
    notes.extend(one_shot_note(scenario));
    Ok(notes)
}

/// swapon of every `machine.swap` device: the zram ids created, and the disks under the
/// others (whose writes the result reports).
fn create_swap_areas(
    guard: &mut HostGuard,
    scenario: &Scenario,
    applied: &mut Vec<String>,
) -> Result<(Vec<u32>, Vec<String>)> {
    let mut zram_ids = vec![];
    let mut disks: Vec<String> = vec![];
    for (i, dev) in scenario.machine.swap_devices.iter().enumerate() {
        check_interrupt()?;
        let area = swapdev::create(guard, i, dev, &scenario.sysfs.zram.comp_algorithm)
            .with_context(|| format!("creating machine.swap[{i}]"))?;
        applied.push(format!(
            "swapon {} ({}, {} bytes, priority {})",
            area.path,
            format!("{:?}", area.kind).to_lowercase(),
            dev.size.0,
            dev.priority
        ));
        zram_ids.extend(area.zram_id);
        if area.zram_id.is_none() {
            disks.extend(crate::diskstat::device_of(&area.path));
        }
    }
    Ok((zram_ids, disks))
}

/// The scenario's memcgs, by name. Parents come first in the scenario (validated), so each
/// parent exists when its children are created; removal (the journal, undone in reverse)
/// takes children first.
fn create_memcgs(
    guard: &mut HostGuard,
    scenario: &Scenario,
    applied: &mut Vec<String>,
) -> Result<BTreeMap<String, Memcg>> {
    let mut memcgs: BTreeMap<String, Memcg> = BTreeMap::new();
    for spec in &scenario.memcgs {
        check_interrupt()?;
        let parent = spec.parent.as_ref().map(|p| &memcgs[p]);
        let cg = Memcg::create(guard, spec, parent)?;
        applied.push(format!(
            "memcg {} max {}",
            cg.path.display(),
            spec.max.map_or("none".into(), |b| b.0.to_string())
        ));
        memcgs.insert(spec.name.clone(), cg);
    }
    Ok(memcgs)
}

/// A process per task of each workload, with the tasks that share its mm as its threads.
fn live_tasks(
    scenario: &Scenario,
    memcgs: &BTreeMap<String, Memcg>,
    file_dir: &Option<std::path::PathBuf>,
    tmpfs_dirs: &[std::path::PathBuf],
) -> Result<Vec<LiveTask>> {
    let mut tasks: Vec<LiveTask> = vec![];
    for (w, spec) in scenario.workloads.iter().enumerate() {
        let mut specs = workload::tasks_for(spec, scenario);
        workload::namespace_barriers(w, &mut specs);
        // Index in `tasks` of the process of each task of this workload.
        let mut process_of: Vec<usize> = vec![];
        for t in specs {
            if let Some(i) = t.shares_mm_with {
                let &p = process_of.get(i).with_context(|| {
                    format!("task {}: shares_mm_with {i} names no earlier task", t.name)
                })?;
                process_of.push(p);
                tasks[p].threads.push(exec::LiveThread {
                    name: t.name,
                    ops: t.ops,
                    cpu: None,
                });
                continue;
            }
            let cgroup_procs = match &t.memcg {
                Some(name) => Some(
                    memcgs
                        .get(name)
                        .with_context(|| format!("memcg `{name}` not created"))?
                        .procs_file(),
                ),
                None => None,
            };
            process_of.push(tasks.len());
            tasks.push(LiveTask {
                name: t.name,
                workload: w,
                cgroup_procs,
                ops: t.ops,
                cpu: None,
                threads: vec![],
                file_dir: file_dir.clone(),
                tmpfs_dirs: tmpfs_dirs.to_vec(),
                seed: scenario.seed,
                oom_score_adj: scenario.workloads[w].oom_score_adj(),
            });
        }
    }
    Ok(tasks)
}

/// Why the tasks must stop now, if they must: a signal, or `opts.timeout` passed.
fn stop_reason(opts: &LiveOptions) -> impl Fn() -> Option<String> + '_ {
    let deadline = opts.timeout.map(|t| Instant::now() + t);
    move || {
        if settings::interrupted() {
            return Some("interrupted by a signal; tasks killed, settings restored".into());
        }
        if deadline.is_some_and(|d| Instant::now() > d) {
            return Some(format!(
                "timed out after {:?}; tasks killed, settings restored",
                opts.timeout.unwrap()
            ));
        }
        None
    }
}

/// The host-wide actions a scenario takes that no journal can undo (docs/live-safety.md):
/// dropping the clean page cache and compacting memory. They lose nothing (clean pages are
/// read back, compaction only moves pages), and `--live` is their opt-in.
fn one_shot_note(scenario: &Scenario) -> Option<String> {
    let files = !scenario.files.is_empty();
    let mut what = vec![];
    if files || workload::all_ops(scenario).any(|op| matches!(op, Op::DropCaches)) {
        what.push("drop_caches (the host's clean page cache)");
    }
    if workload::all_ops(scenario).any(|op| matches!(op, Op::CompactMemory)) {
        what.push("compact_memory");
    }
    (!what.is_empty()).then(|| {
        format!(
            "one-shot host-wide actions, not undone (nothing to undo: docs/live-safety.md): {}",
            what.join(", ")
        )
    })
}

/// With no more tasks than CPUs the sim keeps each task on its own CPU for the whole run. Pin
/// the live tasks the same way: once the scheduler has moved a task, its mm_cpumask holds both
/// CPUs (x86 trims it about once a second) and every reclaim flush IPIs the other CPU. Measured
/// here: usemem 4K to a swap file took 0.6 s or 1.8 s of sys time depending on that alone
/// (~1 TLB shootdown per swapped-out folio in the slow runs, /proc/interrupts TLB).
fn pin_one_per_cpu(tasks: &mut [LiveTask], scenario_cpus: usize) -> bool {
    // The CPUs this process may run on (affinity included), as exec::run_tasks numbers them.
    let allowed = std::thread::available_parallelism().map_or(1, |n| n.get());
    let nr_tasks: usize = tasks.iter().map(|t| 1 + t.threads.len()).sum();
    if nr_tasks > scenario_cpus.min(allowed) {
        return false;
    }
    let mut cpu = 0;
    for t in tasks.iter_mut() {
        t.cpu = Some(cpu);
        cpu += 1;
        for th in t.threads.iter_mut() {
            th.cpu = Some(cpu);
            cpu += 1;
        }
    }
    true
}

/// Create the scenario's `[[file]]`s (random bytes, written back) in a directory of this run
/// in the state directory, removed on restore, then drop the page cache so they start uncached as in the sim (mmtests
/// does the same before thpscale). None when the scenario has no files.
pub fn create_files(
    guard: &mut HostGuard,
    scenario: &Scenario,
    applied: &mut Vec<String>,
) -> Result<Option<std::path::PathBuf>> {
    let needs_dir = !scenario.files.is_empty()
        || workload::all_ops(scenario).any(|op| matches!(op, Op::CreateFile { .. }));
    if !needs_dir {
        return Ok(None);
    }
    // Beside the journal (a restore after a reboot finds it), made by us alone (mkdir fails if
    // the name is taken), 0700: nothing in it is anyone else's.
    let dir = guard.dir().join(format!("files-{}", std::process::id()));
    let total: u64 = scenario.files.iter().map(|f| f.size.0).sum();
    let free = free_bytes(guard.dir()).unwrap_or(0);
    if total + HEADROOM_BYTES > free {
        anyhow::bail!(
            "the scenario's files need {} MiB in {}, which has {} MiB free",
            total >> 20,
            guard.dir().display(),
            free >> 20
        );
    }
    let change = settings::Change::Dir {
        path: dir.display().to_string(),
    };
    guard.record(change.clone())?;
    if let Err(e) = std::fs::DirBuilder::new().mode(0o700).create(&dir) {
        guard.unrecord(&change)?;
        return Err(e).with_context(|| {
            format!(
                "creating {} (refused: it must not exist yet)",
                dir.display()
            )
        });
    }
    for (id, f) in scenario.files.iter().enumerate() {
        check_interrupt()?;
        let path = crate::files::path(&dir, id as u32);
        crate::files::create(&path, f.size.0, scenario.seed ^ id as u64)
            .with_context(|| format!("creating file[{id}] `{}`", f.name))?;
        applied.push(format!(
            "file {} ({}, {} bytes)",
            path.display(),
            f.name,
            f.size.0
        ));
    }
    crate::files::drop_caches()?;
    applied.push("drop_caches = 1".into());
    Ok(Some(dir))
}

fn free_bytes(path: &Path) -> Option<u64> {
    let c = std::ffi::CString::new(path.as_os_str().as_encoded_bytes()).ok()?;
    // SAFETY: statvfs into a zeroed local.
    let mut st: libc::statvfs = unsafe { std::mem::zeroed() };
    if unsafe { libc::statvfs(c.as_ptr(), &mut st) } != 0 {
        return None;
    }
    Some(st.f_bavail as u64 * st.f_frsize as u64)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_swap_allocator_the_release_does_not_run_is_refused() {
        let with = |allocator: &str| {
            Scenario::from_toml_str(&format!(
                "[kernel]\nversion = \"6.18\"\n{allocator}\n[[workload]]\nkind = \"usemem\"\nnproc = 1\nsize = \"1M\"\n"
            ))
            .unwrap()
        };
        let refused = check_policies_are_the_kernels(&with("swap_allocator = \"legacy\""))
            .unwrap_err()
            .to_string();
        assert!(
            refused
                .contains("`kernel.swap_allocator`: found legacy, but 6.18 runs cluster-lists-c18"),
            "{refused}"
        );
        // Naming the release's own allocator, or none, is what the host runs.
        check_policies_are_the_kernels(&with("swap_allocator = \"cluster-lists-c18\"")).unwrap();
        check_policies_are_the_kernels(&with("")).unwrap();
    }

    /// drop_caches acts outside the journal (nothing to undo): a scenario that makes the run
    /// write it says so in the run's notes; one that does not has no such note.
    #[test]
    fn a_run_that_drops_the_host_cache_says_so() {
        let file_read = Scenario::from_toml_str(
            "[machine.disk]\nkind = \"ssd\"\nsize = \"1G\"\n[[file]]\nname = \"data\"\n\
             size = \"8M\"\n[[workload]]\nkind = \"file_read\"\nfile = \"data\"\n",
        )
        .unwrap();
        let note = one_shot_note(&file_read).expect("a note for drop_caches");
        assert!(
            note.contains("drop_caches") && note.contains("not undone"),
            "{note}"
        );
        let usemem =
            Scenario::from_toml_str("[[workload]]\nkind = \"usemem\"\nnproc = 1\nsize = \"1M\"\n")
                .unwrap();
        assert_eq!(one_shot_note(&usemem), None);
    }

    #[test]
    fn lru_gen_enabled_is_read_from_its_hex_caps() {
        assert_eq!(lru_gen_core("0x0007\n"), Some(true));
        assert_eq!(lru_gen_core("0x0000"), Some(false));
        assert_eq!(lru_gen_core("0x0006"), Some(false));
        assert_eq!(lru_gen_core("1"), Some(true));
        assert_eq!(lru_gen_core("y"), None);
    }

    #[test]
    fn khugepaged_knobs_are_written_as_the_sim_applies_them() {
        let text = r#"
[sysfs.khugepaged]
defrag = false
pages_to_scan = 1024
scan_sleep_millisecs = 100
alloc_sleep_millisecs = 2000
max_ptes_none = 300
max_ptes_swap = 0
max_ptes_shared = 10
[[workload]]
kind = "usemem"
nproc = 1
size = "1M"
"#;
        let s = Scenario::from_toml_str(text).unwrap();
        let knobs = host_settings(&s);
        let value = |name: &str| {
            let path = format!("{}/khugepaged/{name}", counters::THP_DIR);
            knobs
                .iter()
                .find(|(p, _)| *p == path)
                .map(|(_, v)| v.clone())
        };
        for (name, v) in [
            ("defrag", "0"),
            ("pages_to_scan", "1024"),
            ("scan_sleep_millisecs", "100"),
            ("alloc_sleep_millisecs", "2000"),
            ("max_ptes_none", "300"),
            ("max_ptes_swap", "0"),
            ("max_ptes_shared", "10"),
        ] {
            assert_eq!(value(name).as_deref(), Some(v), "{name}");
        }
        let sim = foliosim::mm::khugepaged::Khugepaged::new(&s);
        assert_eq!(
            (sim.pages_to_scan, sim.max_ptes_none, sim.max_ptes_swap),
            (1024, 300, 0)
        );
        assert_eq!(
            (sim.scan_sleep_ns, sim.alloc_sleep_ns),
            (100_000_000, 2_000_000_000)
        );
        assert!(!sim.defrag);
        // Knobs the scenario leaves out are not written (the host keeps its values).
        let none = host_settings(
            &Scenario::from_toml_str(&text[text.find("[[workload]]").unwrap()..]).unwrap(),
        );
        assert!(!none.iter().any(|(p, _)| p.contains("/khugepaged/")));
    }
}
