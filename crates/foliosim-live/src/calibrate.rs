//! `foliosim calibrate`: microbenchmarks on the live kernel that fill the sim's cost model.
//!
//! Each benchmark sets only the knobs it needs (through the same journaled guard as a live run)
//! and times a loop in this process: anonymous faults per folio size (allocation and zeroing
//! included), the user store loop, munmap, MADV_PAGEOUT and swap-in per folio size to zram and
//! to a swap file, munmap of swapped-out pages (the per-slot release, zram's slot-free notify
//! included), zram compression per codec, and folio split (a PAGEOUT of one page of each
//! large folio splits it). Costs the sim names directly go to `[costs]` (a scenario or
//! `--costs FILE` loads them); every raw number goes to `[measured]`; `[provenance]` says which
//! machine and kernel they came from. Then the CPU-to-CPU costs (calibrate_hw.rs,
//! calibrate_ipi.rs: line transfers, lock handoffs, IPIs), which change no host setting and
//! are all `--hw-only` measures. `[machine]` (topology, TLB kind) and `[sources]` (each cost's
//! provenance) make the file a machine profile too (`--machine-profile FILE`,
//! foliosim::hw::profile::ProfileFile).

use crate::counters::{meminfo_bytes, THP_DIR};
use crate::settings::HostGuard;
use crate::swapdev;
use crate::LiveOptions;
use anyhow::{bail, Context, Result};
use foliosim::engine::cost::CostModel;
use foliosim::hw::profile::MachineTable;
use foliosim::scenario::{Bytes, SwapDeviceKind, SwapDeviceSpec};
use serde::Serialize;
use std::collections::BTreeMap;
use std::time::Instant;

const PAGE: usize = 4096;
const MADV_PAGEOUT: i32 = 21;
const MADV_HUGEPAGE: i32 = 14;
/// Folio sizes with a sim fault cost, and the cost's name.
const FAULT_SIZES: &[(usize, &str)] = &[
    (4 << 10, "fault_4k_ns"),
    (8 << 10, "fault_8k_ns"),
    (16 << 10, "fault_16k_ns"),
    (32 << 10, "fault_32k_ns"),
    (64 << 10, "fault_64k_ns"),
    (128 << 10, "fault_128k_ns"),
    (256 << 10, "fault_256k_ns"),
    (512 << 10, "fault_512k_ns"),
    (1 << 20, "fault_1m_ns"),
    (2 << 20, "fault_2m_ns"),
];

#[derive(Debug, Clone, Serialize)]
pub struct CalibrationReport {
    /// The machine as a profile: name, description, TLB kind, topology.
    pub machine: MachineTable,
    pub provenance: BTreeMap<String, String>,
    /// Named costs of the sim's cost model (engine/cost.rs NAMES), ns.
    pub costs: BTreeMap<String, f64>,
    /// Where each cost comes from (measured / fit, and how).
    pub sources: BTreeMap<String, String>,
    /// Every raw measurement, ns per folio or per page as the name says.
    pub measured: BTreeMap<String, f64>,
}

impl CalibrationReport {
    pub fn to_toml(&self) -> String {
        let mut out = String::from(
            "# foliosim cost model measured by `foliosim calibrate` on the machine below.\n\
             # A machine profile: `foliosim run --machine-profile FILE` (or machine.profile =\n\
             # \"FILE\"); or costs only: `foliosim run --costs FILE` (the [costs] table; a\n\
             # scenario's own [costs] win). [measured] holds every raw number behind them.\n",
        );
        out.push_str(&toml::to_string(self).expect("report serializes"));
        out
    }

    pub fn to_table(&self) -> String {
        let mut out = String::new();
        for (k, v) in &self.provenance {
            out.push_str(&format!("{k:<24} {v}\n"));
        }
        out.push_str("\ncost (sim name)                      ns  source\n");
        for (k, v) in &self.costs {
            let source = self.sources.get(k).map_or("", |s| s.as_str());
            let short: String = source.chars().take(60).collect();
            out.push_str(&format!("{k:<30} {v:>12.0}  {short}\n"));
        }
        out.push_str("\nmeasurement                                        ns\n");
        for (k, v) in &self.measured {
            out.push_str(&format!("{k:<44} {v:>12.0}\n"));
        }
        out
    }
}

/// The `[costs]` table of a calibrate file.
pub fn load_costs(path: &std::path::Path) -> Result<BTreeMap<String, f64>> {
    // A device (`/dev/zero`) would be read for ever: regular files only.
    let text = foliosim::footprint::read_toml(path)
        .with_context(|| format!("reading {}", path.display()))?;
    foliosim::engine::cost::CostModel::parse_costs_file(&text)
        .map_err(|e| anyhow::anyhow!("{}: {e}", path.display()))
}

fn provenance() -> BTreeMap<String, String> {
    let read = |p: &str| {
        std::fs::read_to_string(p)
            .map(|s| s.trim().to_string())
            .unwrap_or_default()
    };
    let cpuinfo = read("/proc/cpuinfo");
    let model = cpuinfo
        .lines()
        .find_map(|l| {
            l.strip_prefix("model name")
                .map(|r| r.trim_start_matches([' ', '\t', ':']))
        })
        .unwrap_or("unknown")
        .to_string();
    let virt = if cpuinfo.contains(" hypervisor") {
        "guest (hypervisor flag)"
    } else {
        "bare metal (no hypervisor flag)"
    };
    let mut p = BTreeMap::new();
    p.insert("kernel_release".into(), read("/proc/sys/kernel/osrelease"));
    p.insert("kernel_version".into(), read("/proc/version"));
    p.insert("hostname".into(), read("/proc/sys/kernel/hostname"));
    p.insert("cpu_model".into(), model);
    p.insert("virtualization".into(), virt.into());
    p.insert(
        "cpus".into(),
        std::thread::available_parallelism()
            .map_or(1, |n| n.get())
            .to_string(),
    );
    p.insert(
        "mem_total_bytes".into(),
        meminfo_bytes(&read("/proc/meminfo"), "MemTotal")
            .unwrap_or(0)
            .to_string(),
    );
    p.insert(
        "measured_at_unix_s".into(),
        std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |d| d.as_secs())
            .to_string(),
    );
    p.insert("foliosim_version".into(), env!("CARGO_PKG_VERSION").into());
    p
}

/// An anonymous mapping aligned to 2 MiB, unmapped on drop.
struct Area {
    addr: *mut u8,
    len: usize,
}

impl Area {
    fn new(len: usize, hugepage: bool) -> Result<Area> {
        let pad = 2 << 20;
        // SAFETY: anonymous private mapping, trimmed to an aligned subrange.
        let raw = unsafe {
            libc::mmap(
                std::ptr::null_mut(),
                len + pad,
                libc::PROT_READ | libc::PROT_WRITE,
                libc::MAP_PRIVATE | libc::MAP_ANONYMOUS,
                -1,
                0,
            )
        };
        if raw == libc::MAP_FAILED {
            bail!("mmap: {}", std::io::Error::last_os_error());
        }
        let start = raw as usize;
        let aligned = (start + pad - 1) & !(pad - 1);
        // SAFETY: trimming our own mapping.
        unsafe {
            if aligned > start {
                libc::munmap(raw, aligned - start);
            }
            let end = aligned + len;
            if start + len + pad > end {
                libc::munmap(end as *mut libc::c_void, start + len + pad - end);
            }
        }
        let area = Area {
            addr: aligned as *mut u8,
            len,
        };
        if hugepage {
            area.madvise(0, len, MADV_HUGEPAGE)?;
        }
        Ok(area)
    }

    fn madvise(&self, offset: usize, len: usize, advice: i32) -> Result<()> {
        // SAFETY: the range lies within our mapping.
        if unsafe { libc::madvise(self.addr.add(offset).cast(), len, advice) } != 0 {
            bail!("madvise({advice}): {}", std::io::Error::last_os_error());
        }
        Ok(())
    }

    /// Store one word every `stride` bytes (faults each folio once when stride = folio size).
    fn poke(&self, stride: usize) {
        let mut off = 0;
        while off < self.len {
            // SAFETY: within the mapping.
            unsafe { std::ptr::write_volatile(self.addr.add(off) as *mut u64, off as u64 | 1) };
            off += stride;
        }
    }

    /// Store every word (usemem's loop), distinct values so pages are not same-filled.
    fn fill(&self) {
        let words = self.len / 8;
        let p = self.addr as *mut u64;
        for w in 0..words {
            // SAFETY: within the mapping.
            unsafe { std::ptr::write_volatile(p.add(w), w as u64 | 1 << 40) };
        }
    }
}

impl Drop for Area {
    fn drop(&mut self) {
        // SAFETY: our mapping.
        unsafe { libc::munmap(self.addr.cast(), self.len) };
    }
}

fn median(mut v: Vec<f64>) -> f64 {
    v.sort_by(f64::total_cmp);
    v[v.len() / 2]
}

fn timed(f: impl FnOnce() -> Result<()>) -> Result<f64> {
    let t = Instant::now();
    f()?;
    Ok(t.elapsed().as_nanos() as f64)
}

/// `timed` for work that cannot fail.
fn elapsed_ns(f: impl FnOnce()) -> f64 {
    let t = Instant::now();
    f();
    t.elapsed().as_nanos() as f64
}

/// Enable exactly one folio size (4K: none) for MADV_HUGEPAGE areas.
fn only_size(guard: &mut HostGuard, size: usize) -> Result<()> {
    for (s, _) in FAULT_SIZES.iter().skip(1) {
        let path = format!("{THP_DIR}/hugepages-{}kB/enabled", s / 1024);
        if std::path::Path::new(&path).exists() {
            guard.set_sysfs(&path, if *s == size { "madvise" } else { "never" })?;
        }
    }
    Ok(())
}

/// Measure this machine: everything (root: the host part changes sysfs knobs and swap
/// devices, journaled and restored), or with `hw_only` just the CPU-to-CPU costs, which
/// change no host setting and need no root.
pub fn calibrate(
    opts: &LiveOptions,
    quick: bool,
    hw_only: bool,
    progress: &mut dyn FnMut(&str),
) -> Result<CalibrationReport> {
    if !opts.allow_live {
        return Err(crate::Refusal::NotAllowed.into());
    }
    let (mut costs, mut measured) = if hw_only {
        Default::default()
    } else {
        calibrate_host(quick, progress)?
    };
    let mut sources: BTreeMap<String, String> =
        costs.keys().map(|k| (k.clone(), host_source(k))).collect();
    let hw = crate::calibrate_hw::measure(crate::calibrate_hw::Effort::new(quick), progress)?;
    costs.extend(hw.costs);
    sources.extend(hw.sources);
    measured.extend(hw.measured);
    let mut provenance = provenance();
    for (k, note) in hw.notes {
        provenance.insert(format!("not_measured_{k}"), note);
    }
    provenance.insert(
        "measurements".into(),
        if hw_only {
            "cpu-to-cpu only (--hw-only)"
        } else {
            "host and cpu-to-cpu"
        }
        .into(),
    );
    Ok(CalibrationReport {
        machine: machine_table(&provenance, hw.topology),
        provenance,
        costs,
        sources,
        measured,
    })
}

/// The profile's name and description from the host, the TLB kind of its architecture.
fn machine_table(
    provenance: &BTreeMap<String, String>,
    topology: Option<foliosim::scenario::TopologySpec>,
) -> MachineTable {
    let get = |k: &str| provenance.get(k).map_or("unknown", |s| s.as_str());
    MachineTable {
        name: format!("calibrated-{}", get("hostname")),
        description: format!(
            "measured by `foliosim calibrate --live` on {} ({}), Linux {}",
            get("cpu_model"),
            get("virtualization"),
            get("kernel_release")
        ),
        tlb: Some(if cfg!(target_arch = "aarch64") {
            foliosim::scenario::TlbKind::Arm64Tlbi
        } else {
            foliosim::scenario::TlbKind::X86Ipi
        }),
        topology,
    }
}

/// Where a cost of the host part comes from (its `[sources]` entry).
fn host_source(name: &str) -> String {
    let how = match name {
        "page_free_ns" | "folio_free_ns" => "fit: munmap of 4K and 2M areas, per page and per folio",
        "split_page_ns" | "split_folio_ns" => "fit: split cost through 16K and 256K folios",
        "zram_slot_free_notify_ns" => "split of fit: munmap of swapped-out 4K pages less the profile's zap, swap_map and release costs",
        _ => "measured: median of the repetitions",
    };
    format!("{how} (`foliosim calibrate --live`; raw figures in [measured])")
}

/// The host part: faults, stores, munmap, swap-out and swap-in, split, codecs (root).
fn calibrate_host(quick: bool, progress: &mut dyn FnMut(&str)) -> Result<Tables> {
    // SAFETY: geteuid has no preconditions.
    let uid = unsafe { libc::geteuid() };
    if uid != 0 {
        return Err(crate::Refusal::NotRoot(uid).into());
    }
    let region: usize = if quick { 32 << 20 } else { 128 << 20 };
    let reps = if quick { 3 } else { 5 };
    let needed = (region as u64) * 3 + (512 << 20);
    let available = crate::counters::mem_available_bytes().unwrap_or(0);
    if needed > available {
        return Err(crate::Refusal::NotEnoughMemory {
            needed_mib: needed >> 20,
            available_mib: available >> 20,
            what: "calibration regions".into(),
        }
        .into());
    }
    let mut guard = HostGuard::acquire()?;
    let result = measure(&mut guard, region, reps, progress);
    let restored = guard.restore();
    let tables = result?;
    restored?;
    Ok(tables)
}

fn check_interrupt() -> Result<()> {
    if crate::settings::interrupted() {
        bail!("interrupted by a signal; settings restored");
    }
    Ok(())
}

type Tables = (BTreeMap<String, f64>, BTreeMap<String, f64>);

fn measure(
    guard: &mut HostGuard,
    region: usize,
    reps: usize,
    progress: &mut dyn FnMut(&str),
) -> Result<Tables> {
    guard.set_sysfs(&format!("{THP_DIR}/enabled"), "madvise")?;
    guard.set_sysfs(&format!("{THP_DIR}/defrag"), "madvise")?;
    guard
        .set_sysfs("/sys/module/zswap/parameters/enabled", "N")
        .ok();
    let mut c = Calibration {
        guard,
        region,
        reps,
        progress,
        costs: BTreeMap::new(),
        m: BTreeMap::new(),
    };
    c.faults()?;
    c.stores_and_munmap()?;
    // Swap-out (MADV_PAGEOUT) and swap-in per folio size, to zram and to a swap file.
    let swap_size = Bytes((region as u64 * 2).next_power_of_two());
    for (kind, label) in [
        (SwapDeviceKind::Zram, "zram"),
        (SwapDeviceKind::File, "file"),
    ] {
        check_interrupt()?;
        c.swap_device(kind, label, swap_size)?;
    }
    c.zram_slot_free_notify();
    c.codecs(swap_size)?;
    Ok((c.costs, c.m))
}

/// A calibration under way: the host, the region and repetitions each measurement takes,
/// and what it has found (profile costs, and the measurements behind them).
struct Calibration<'a> {
    guard: &'a mut HostGuard,
    region: usize,
    reps: usize,
    progress: &'a mut dyn FnMut(&str),
    costs: BTreeMap<String, f64>,
    m: BTreeMap<String, f64>,
}

impl Calibration<'_> {
    /// Faults per folio size: one store per folio of a fresh MADV_HUGEPAGE area.
    fn faults(&mut self) -> Result<()> {
        let (region, reps) = (self.region, self.reps);
        for &(size, name) in FAULT_SIZES {
            check_interrupt()?;
            (self.progress)(&format!("fault {}K", size / 1024));
            only_size(self.guard, size)?;
            let mut per = vec![];
            // One untimed round first: it warms the allocator's per-CPU lists and page tables.
            for rep in 0..=reps {
                let area = Area::new(region, true)?;
                let ns = elapsed_ns(|| area.poke(size)) / (region / size) as f64;
                if rep > 0 {
                    per.push(ns);
                }
            }
            let ns = median(per);
            self.costs.insert(name.to_string(), ns.round());
            self.m
                .insert(format!("fault_{}k_ns_per_folio", size / 1024), ns);
        }
        Ok(())
    }

    /// The user store loop on present pages, and munmap per folio at 4K and 2M.
    fn stores_and_munmap(&mut self) -> Result<()> {
        let (region, reps) = (self.region, self.reps);
        only_size(self.guard, 4096)?;
        (self.progress)("user stores, munmap");
        let mut write = vec![];
        let mut unmap_4k = vec![];
        for _ in 0..reps {
            let area = Area::new(region, false)?;
            area.poke(PAGE);
            write.push(elapsed_ns(|| area.fill()) / (region / PAGE) as f64);
            unmap_4k.push(elapsed_ns(|| drop(area)) / (region / PAGE) as f64);
        }
        let write = median(write);
        self.costs
            .insert("user_write_page_ns".into(), write.round());
        self.m.insert("user_write_ns_per_page".into(), write);
        only_size(self.guard, 2 << 20)?;
        let mut unmap_2m = vec![];
        for _ in 0..reps {
            let area = Area::new(region, true)?;
            area.poke(2 << 20);
            unmap_2m.push(elapsed_ns(|| drop(area)) / (region >> 21) as f64);
        }
        let (u4, u2) = (median(unmap_4k), median(unmap_2m));
        self.m.insert("munmap_4k_ns_per_folio".into(), u4);
        self.m.insert("munmap_2m_ns_per_folio".into(), u2);
        // munmap of a 4K folio = zap_pte + folio_free + page_free; of a 2M folio = one PMD
        // zap + folio_free + 512 page_free. zap_pte_ns keeps the profile's value.
        let zap = 36.0;
        let page_free = ((u2 - u4) / 511.0).max(0.0);
        self.costs.insert("page_free_ns".into(), page_free.round());
        self.costs.insert(
            "folio_free_ns".into(),
            (u4 - zap - page_free).max(0.0).round(),
        );
        Ok(())
    }

    /// Swap-out and swap-in per folio size to one device, the release of its slots, and on
    /// zram the split of large folios.
    fn swap_device(&mut self, kind: SwapDeviceKind, label: &str, swap_size: Bytes) -> Result<()> {
        // Through serde, so the spec's other fields take their documented defaults.
        let spec = serde_json::from_str::<SwapDeviceSpec>(&format!(
            r#"{{"kind":"{label}","size":{},"priority":10}}"#,
            swap_size.0
        ))?;
        debug_assert_eq!(spec.kind, kind);
        let area_dev = swapdev::create(self.guard, 90, &spec, "lzo-rle")?;
        for size in [4096usize, 16 << 10, 64 << 10, 2 << 20] {
            check_interrupt()?;
            self.pageout_and_swapin(label, size)?;
        }
        self.release_swapped(label)?;
        if kind == SwapDeviceKind::Zram {
            self.split()?;
        }
        crate::swapdev::swapoff_if_active(&area_dev.path)?;
        if let Some(id) = area_dev.zram_id {
            crate::swapdev::zram_release(id, true)?;
        }
        Ok(())
    }

    /// MADV_PAGEOUT of a filled area of `size` folios, then one load per page to swap it in.
    fn pageout_and_swapin(&mut self, label: &str, size: usize) -> Result<()> {
        let (region, reps) = (self.region, self.reps);
        (self.progress)(&format!("pageout + swapin {}K to {label}", size / 1024));
        only_size(self.guard, size)?;
        let (mut out, mut inn) = (vec![], vec![]);
        for _ in 0..reps {
            let area = Area::new(region, true)?;
            area.fill();
            let folios = (region / size) as f64;
            out.push(timed(|| area.madvise(0, region, MADV_PAGEOUT))? / folios);
            inn.push(elapsed_ns(|| area.poke(PAGE)) / (region / PAGE) as f64);
        }
        self.m.insert(
            format!("pageout_{label}_{}k_ns_per_folio", size / 1024),
            median(out),
        );
        self.m.insert(
            format!("swapin_{label}_{}k_folios_ns_per_page", size / 1024),
            median(inn),
        );
        Ok(())
    }

    /// Releasing swapped-out slots: munmap of a 4K area MADV_PAGEOUT swapped out (zap of the
    /// swap PTEs, free_swap_and_cache_nr, swap_entries_free with the device's
    /// swap_slot_free_notify). To a swap file the folios may still sit in the swap cache
    /// (async writeback), so only the zram number feeds a cost.
    fn release_swapped(&mut self, label: &str) -> Result<()> {
        let (region, reps) = (self.region, self.reps);
        only_size(self.guard, 4096)?;
        (self.progress)(&format!("munmap of swapped-out 4K pages on {label}"));
        let mut release = vec![];
        for _ in 0..reps {
            let area = Area::new(region, true)?;
            area.fill();
            area.madvise(0, region, MADV_PAGEOUT)?;
            release.push(elapsed_ns(|| drop(area)) / (region / PAGE) as f64);
        }
        self.m.insert(
            format!("munmap_swapped_{label}_4k_ns_per_page"),
            median(release),
        );
        Ok(())
    }

    /// Split: PAGEOUT of the first page of each large folio splits it first.
    fn split(&mut self) -> Result<()> {
        let (region, reps) = (self.region, self.reps);
        let p4 = self.m["pageout_zram_4k_ns_per_folio"];
        let mut split = vec![];
        for size in [16usize << 10, 256 << 10] {
            (self.progress)(&format!("split {}K", size / 1024));
            only_size(self.guard, size)?;
            let mut per = vec![];
            for _ in 0..reps {
                let area = Area::new(region, true)?;
                area.fill();
                per.push(
                    timed(|| {
                        let mut off = 0;
                        while off < region {
                            area.madvise(off, PAGE, MADV_PAGEOUT)?;
                            off += size;
                        }
                        Ok(())
                    })? / (region / size) as f64,
                );
            }
            let ns = (median(per) - p4).max(0.0);
            self.m
                .insert(format!("split_{}k_ns_per_folio", size / 1024), ns);
            split.push((size / PAGE, ns));
        }
        // split = split_folio + pages x split_page, fitted through 16K and 256K.
        let ((n1, t1), (n2, t2)) = (split[0], split[1]);
        let per_page = ((t2 - t1) / (n2 - n1) as f64).max(0.0);
        self.costs.insert("split_page_ns".into(), per_page.round());
        self.costs.insert(
            "split_folio_ns".into(),
            (t1 - per_page * n1 as f64).max(0.0).round(),
        );
        Ok(())
    }

    /// The per-slot release on zram less the profile's zap, swap_map update and generic
    /// release (swap_range_free) costs: what zram_slot_free_notify (zram_free_page, zs_free)
    /// adds.
    fn zram_slot_free_notify(&mut self) {
        let profile = CostModel::profile("vm-6.18-2cpu").expect("built-in profile");
        let generic =
            (profile.zap_pte_ns + profile.swap_map_update_ns + profile.swap_entry_free_ns) as f64;
        self.costs.insert(
            "zram_slot_free_notify_ns".into(),
            (self.m["munmap_swapped_zram_4k_ns_per_page"] - generic)
                .max(0.0)
                .round(),
        );
    }

    /// Compression per codec: 4K PAGEOUT to a zram device using each codec the kernel offers.
    fn codecs(&mut self, swap_size: Bytes) -> Result<()> {
        only_size(self.guard, 4096)?;
        let offered = std::fs::read_to_string("/sys/block/zram0/comp_algorithm")
            .unwrap_or_else(|_| "lzo-rle".into());
        for codec in offered
            .split_whitespace()
            .map(|c| c.trim_matches(['[', ']']))
        {
            check_interrupt()?;
            (self.progress)(&format!("zram codec {codec}"));
            let spec = serde_json::from_str::<SwapDeviceSpec>(&format!(
                r#"{{"kind":"zram","size":{},"priority":10}}"#,
                swap_size.0
            ))?;
            let dev = swapdev::create(self.guard, 91, &spec, codec)?;
            self.codec_pageout(codec, dev.zram_id.unwrap_or(0))?;
            crate::swapdev::swapoff_if_active(&dev.path)?;
            if let Some(id) = dev.zram_id {
                crate::swapdev::zram_release(id, true)?;
            }
        }
        Ok(())
    }

    /// 4K PAGEOUT to zram device `zram_id` (using `codec`): its time and compression ratio.
    fn codec_pageout(&mut self, codec: &str, zram_id: u32) -> Result<()> {
        let (region, reps) = (self.region, self.reps);
        let mut per = vec![];
        for _ in 0..reps {
            let area = Area::new(region, false)?;
            area.fill();
            per.push(timed(|| area.madvise(0, region, MADV_PAGEOUT))? / (region / PAGE) as f64);
        }
        let ns = median(per);
        let stats = crate::counters::zram_stats(zram_id);
        let orig = stats.get("mm_stat/orig_data_size").copied().unwrap_or(0) as f64;
        let compr = stats.get("mm_stat/compr_data_size").copied().unwrap_or(0) as f64;
        self.m
            .insert(format!("zram_{codec}_pageout_4k_ns_per_page"), ns);
        if compr > 0.0 {
            self.m.insert(
                format!("zram_{codec}_ratio_x1000"),
                (orig / compr * 1000.0).round(),
            );
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use foliosim::hw::profile::ProfileFile;

    /// What calibrate writes is a profile file and a costs file.
    #[test]
    fn a_calibration_file_is_a_profile_and_a_costs_file() {
        let provenance = BTreeMap::from([
            ("hostname".to_string(), "box".to_string()),
            ("cpu_model".to_string(), "AMD EPYC".to_string()),
        ]);
        let mut hw = crate::calibrate_hw::HwTables::default();
        hw.set("line_transfer_llc_ns", 31.4, "measured: ping-pong".into());
        let costs = BTreeMap::from([("fault_4k_ns".to_string(), 1700.0)]);
        let mut sources: BTreeMap<String, String> =
            costs.keys().map(|k| (k.clone(), host_source(k))).collect();
        sources.extend(hw.sources);
        let mut all = costs.clone();
        all.extend(hw.costs);
        let report = CalibrationReport {
            machine: machine_table(
                &provenance,
                Some(foliosim::scenario::TopologySpec {
                    sockets: 1,
                    llcs_per_socket: 1,
                    cores_per_llc: 2,
                    threads_per_core: 1,
                }),
            ),
            provenance,
            costs: all,
            sources,
            measured: BTreeMap::from([("x_ns".to_string(), 1.5)]),
        };
        let text = report.to_toml();
        let profile = ProfileFile::parse(&text).unwrap();
        assert_eq!(profile.machine.name, "calibrated-box");
        assert_eq!(profile.costs["line_transfer_llc_ns"], 31.0);
        assert_eq!(profile.machine.topology.unwrap().cpus(), 2);
        let costs = CostModel::parse_costs_file(&text).unwrap();
        assert_eq!(costs.len(), 2);
        assert!(host_source("split_page_ns").starts_with("fit"));
    }
}
