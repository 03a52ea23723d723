//! Per-CPU TLBs, and the caches a page walk or a data access ends in: analytic, never an
//! entry-by-entry simulation (docs/tlb-model.md).
//!
//! Each CPU holds two kinds of translations:
//! - the running task's **hot set** (its code, stack and small hot data pages, declared by the
//!   workload): always warm unless the TLB was flushed or another task ran. After a full flush
//!   the task's next user-mode run refills it, one page walk per entry (iTLB for code, dTLB
//!   loads and stores for data). A step runs atomically, so flushes from other CPUs land
//!   inside it: each one after the first that hits a CPU still running the flushed mm's task
//!   costs one more refill (the IPI interrupted user code, which refilled the set before the
//!   next IPI), charged at the task's next run. This is what flushes move in XSBench's
//!   iTLB-load-misses and dTLB-store-misses (seed 004).
//! - **uniformly random accesses** over large ranges, mapped by a mix of 4 KiB and 2 MiB pages:
//!   steady-state hit probabilities of each level (L1 dTLB per page size, the shared STLB, and
//!   for the data and the walked page-table entries the L1D, L2 and LLC) from the level's
//!   capacity against the CPU's recent mix of ranges, by Che's approximation of an LRU cache
//!   under independent references (H. Che, Y. Tung, Z. Wang, "Hierarchical Web caching systems:
//!   modeling, design and experimental results", IEEE JSAC 20(7), 2002). A flush costs these
//!   ranges only a refill of what was resident (at most the STLB's entries), which is small
//!   beside the steady misses of a working set far above reach.
//!
//! Counters follow the x86 PMU events perf names (perf's generic dTLB-load-misses,
//! dTLB-store-misses and iTLB-load-misses are the completed page walks on Intel cores,
//! DTLB_LOAD_MISSES.WALK_COMPLETED and friends, arch/x86/events/intel/core.c): a full flush
//! of a CPU's TLB counts one ITLB.ITLB_FLUSH, one TLB_FLUSH.DTLB_THREAD and one
//! TLB_FLUSH.STLB_ANY; a single-page INVLPG counts one DTLB_THREAD and one STLB_ANY (estimate:
//! the events count flush operations, and INVLPG leaves the iTLB's large structure alone). The
//! "TLB shootdowns" line of /proc/interrupts counts IPIs received per CPU (x86 only; arm64's
//! broadcast TLBI interrupts nobody and is counted as `tlbi_received` instead).

use crate::engine::cost::CostModel;
use crate::scenario::{Bytes, TlbKind};
use serde::Serialize;
use std::collections::BTreeMap;

/// No task's hot set is loaded.
pub const NO_TASK: u32 = u32::MAX;
/// Ranges a CPU accessed are weighed by exp(-accesses since / this): the mix of ranges its
/// TLB serves. Long against one op's accesses, so a workload cycling through a few ranges
/// (XSBench's three grids) keeps a steady mix and its solution is reused; a phase change
/// takes over after about this many accesses. estimate.
const PROFILE_WINDOW_ACCESSES: f64 = 16_000_000.0;
/// Ranges remembered per CPU; the least used is forgotten past this.
const PROFILE_MAX_RANGES: usize = 16;
/// A solution is reused while every range's share and 2 MiB fraction moved less than this.
const RESOLVE_TOLERANCE: f64 = 0.02;
const LINE_BYTES: f64 = 64.0;
/// Bytes of one page-table entry (PTE or PMD).
const PT_ENTRY_BYTES: f64 = 8.0;

/// `[machine.tlb_geometry]`: plain data of the schema (scenario/spec_types.rs).
pub use crate::scenario::TlbGeometrySpec;

/// One CPU's TLB and cache sizes.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct TlbGeometry {
    pub name: String,
    pub l1d_4k_entries: u32,
    pub l1d_2m_entries: u32,
    pub l1i_4k_entries: u32,
    pub stlb_entries: u32,
    pub l1d_bytes: u64,
    pub l2_bytes: u64,
    pub llc_bytes_per_cpu: u64,
}

impl TlbGeometry {
    pub const PRESETS: &'static [&'static str] = &["golden-cove", "neoverse-n1"];

    /// The named preset.
    /// - golden-cove (Sapphire Rapids, the seed 004 host's Xeon Gold 6430): L1 iTLB 256 x 4K
    ///   entries (Intel Optimization Reference Manual, Golden Cove TLB table, as summarised in
    ///   my-knowledge-base-bmo.pages.dev "Intel Golden Cove Microarchitecture"); L1 dTLB 96 x 4K
    ///   (up from 64 in Willow Cove: cpunews.net Alder Lake architecture analysis, p. 5) and
    ///   32 x 2M, STLB 2048 shared 4K/2M (the same manual's table; not re-read here); L1D
    ///   48 KiB, L2 2 MiB, LLC 1.875 MiB per core (hardwaretimes.com "Sapphire Rapids-SP cache
    ///   hierarchy"; bbabo.net on the SPR tile: "2 MB L2 and 1.875 MB of L3 per core").
    /// - neoverse-n1 (Ampere Altra, seed 000's host): L1 iTLB 48 and L1 dTLB 48 entries, fully
    ///   associative, every page size; L2 TLB 1280 entries, 5-way, unified; L1D 64 KiB; L2
    ///   1 MiB (Pellegrini et al., "The Arm Neoverse N1 Platform", IEEE Micro 40(2), 2020, as
    ///   summarised in a CS 433 report on the N1); LLC per core: Altra's 32 MiB system cache
    ///   over 80 cores, 400 KiB (estimate from Ampere's product brief, not re-read here).
    pub fn preset(name: &str) -> Option<TlbGeometry> {
        let g = match name {
            "golden-cove" => TlbGeometry {
                name: name.into(),
                l1d_4k_entries: 96,
                l1d_2m_entries: 32,
                l1i_4k_entries: 256,
                stlb_entries: 2048,
                l1d_bytes: 48 << 10,
                l2_bytes: 2 << 20,
                llc_bytes_per_cpu: 1920 << 10,
            },
            "neoverse-n1" => TlbGeometry {
                name: name.into(),
                l1d_4k_entries: 48,
                l1d_2m_entries: 0,
                l1i_4k_entries: 48,
                stlb_entries: 1280,
                l1d_bytes: 64 << 10,
                l2_bytes: 1 << 20,
                llc_bytes_per_cpu: 400 << 10,
            },
            _ => return None,
        };
        Some(g)
    }

    /// The scenario's geometry: the spec's preset (or the architecture's), then its overrides.
    /// Err: the field and what is allowed.
    pub fn from_spec(
        spec: Option<&TlbGeometrySpec>,
        tlb: TlbKind,
    ) -> Result<TlbGeometry, (String, String, String)> {
        let default = match tlb {
            TlbKind::X86Ipi => "golden-cove",
            TlbKind::Arm64Tlbi => "neoverse-n1",
        };
        let Some(spec) = spec else {
            return Ok(TlbGeometry::preset(default).expect("a known preset"));
        };
        let name = spec.preset.as_deref().unwrap_or(default);
        let mut g = TlbGeometry::preset(name).ok_or_else(|| {
            (
                "machine.tlb_geometry.preset".to_string(),
                format!("`{name}`"),
                TlbGeometry::PRESETS.join(", "),
            )
        })?;
        let entries = [
            (
                "l1d_4k_entries",
                spec.l1d_4k_entries,
                &mut g.l1d_4k_entries,
                1,
            ),
            (
                "l1d_2m_entries",
                spec.l1d_2m_entries,
                &mut g.l1d_2m_entries,
                0,
            ),
            (
                "l1i_4k_entries",
                spec.l1i_4k_entries,
                &mut g.l1i_4k_entries,
                1,
            ),
            ("stlb_entries", spec.stlb_entries, &mut g.stlb_entries, 1),
        ];
        for (field, value, slot, min) in entries {
            if let Some(v) = value {
                if v < min || v > 1 << 20 {
                    return Err((
                        format!("machine.tlb_geometry.{field}"),
                        v.to_string(),
                        format!("{min} ..= 1048576"),
                    ));
                }
                *slot = v;
            }
        }
        let bytes = [
            ("l1d_bytes", spec.l1d_bytes, &mut g.l1d_bytes),
            ("l2_bytes", spec.l2_bytes, &mut g.l2_bytes),
            (
                "llc_bytes_per_cpu",
                spec.llc_bytes_per_cpu,
                &mut g.llc_bytes_per_cpu,
            ),
        ];
        for (field, value, slot) in bytes {
            if let Some(Bytes(v)) = value {
                if !(4096..=1 << 36).contains(&v) {
                    return Err((
                        format!("machine.tlb_geometry.{field}"),
                        v.to_string(),
                        "4K ..= 64G".into(),
                    ));
                }
                *slot = v;
            }
        }
        if spec != &TlbGeometrySpec::default() {
            g.name = format!("{name} (modified)");
        }
        Ok(g)
    }
}

/// A task's hot set: pages it uses all the time, in entries of each TLB.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct HotSet {
    pub code_pages: u32,
    /// Data pages read (hot tables, the top of a search tree).
    pub load_pages: u32,
    /// Data pages written (the stack, per-thread accumulators).
    pub store_pages: u32,
}

/// Page walks a refill of a hot set took.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct Refill {
    pub code_walks: u32,
    pub load_walks: u32,
    pub store_walks: u32,
    pub ns: u64,
}

/// One op's random accesses: `count` uniform over `pages` 4 KiB pages, a fraction
/// `huge_frac` of them mapped by 2 MiB entries.
#[derive(Debug, Clone, Copy)]
pub struct RandomAccess {
    /// Which range (the caller's identity of mm, VMA and page range).
    pub key: u64,
    pub pages: u64,
    pub huge_frac: f64,
    pub count: u64,
    pub write: bool,
    /// Accesses the code keeps in flight at once (1: each depends on the previous).
    pub mlp: u32,
}

/// What the accesses cost and missed.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct AccessCost {
    pub ns: u64,
    /// Expected L1 dTLB misses (STLB hits and walks) and page walks.
    pub l1_misses: f64,
    pub walks: f64,
    /// Mean time per access.
    pub ns_per_access: f64,
}

/// The PMU's view of one CPU (expected counts as f64: the model is analytic).
#[derive(Debug, Clone, Default, PartialEq)]
pub struct TlbPmu {
    pub dtlb_loads: f64,
    pub dtlb_stores: f64,
    /// L1 dTLB misses that hit the STLB.
    pub dtlb_load_stlb_hits: f64,
    pub dtlb_store_stlb_hits: f64,
    /// Completed page walks (perf dTLB-load-misses / dTLB-store-misses / iTLB-load-misses).
    pub dtlb_load_walks: f64,
    pub dtlb_store_walks: f64,
    pub itlb_walks: f64,
    pub itlb_flush: u64,
    pub dtlb_thread_flush: u64,
    pub stlb_any_flush: u64,
    /// TLB shootdown IPIs received (/proc/interrupts "TLB shootdowns").
    pub shootdowns: u64,
    /// arm64: broadcast TLBI operations that reached this CPU.
    pub tlbi_received: u64,
    /// User time spent in page walks and STLB lookups.
    pub walk_ns: f64,
}

#[derive(Debug, Clone)]
struct ProfileEntry {
    key: u64,
    pages: f64,
    huge_frac: f64,
    weight: f64,
    /// Full flushes since this range was last accessed (counted as for the hot set): each
    /// empties its resident entries once more.
    flushes: u32,
}

/// Per-range hit probabilities of the CPU's current mix.
#[derive(Debug, Clone, Default)]
struct Solution {
    keys: Vec<u64>,
    shares: Vec<f64>,
    huge: Vec<f64>,
    /// Per range: P(L1 dTLB miss), P(walk), ns per access before overlap, ns of TLB work,
    /// translations resident in the STLB.
    l1_miss: Vec<f64>,
    walk: Vec<f64>,
    stall_ns: Vec<f64>,
    tlb_ns: Vec<f64>,
    resident: Vec<f64>,
}

#[derive(Debug, Clone)]
pub struct CpuTlb {
    /// The task whose hot set is loaded, and its mm.
    warm_task: u32,
    warm_mm: u32,
    warm_hot: HotSet,
    /// The hot set the last full flush emptied, and how many more flushes hit it while its
    /// task kept running (each a refill beyond the one its next run makes).
    lost_hot: HotSet,
    refills_between: u32,
    profile: Vec<ProfileEntry>,
    solution: Option<Solution>,
    pub pmu: TlbPmu,
}

impl CpuTlb {
    fn new() -> CpuTlb {
        CpuTlb {
            warm_task: NO_TASK,
            warm_mm: NO_TASK,
            warm_hot: HotSet::default(),
            lost_hot: HotSet::default(),
            refills_between: 0,
            profile: Vec::new(),
            solution: None,
            pmu: TlbPmu::default(),
        }
    }

    /// The loaded hot set, when one is warm.
    pub fn warm_hot_set(&self) -> Option<HotSet> {
        (self.warm_task != NO_TASK).then_some(self.warm_hot)
    }
}

/// Every CPU's TLB.
#[derive(Debug, Clone)]
pub struct TlbCache {
    pub geometry: TlbGeometry,
    pub cpus: Vec<CpuTlb>,
    /// arm64: broadcast TLBIs issued, each reaching every CPU.
    pub tlbi_broadcasts: u64,
}

/// What the report shows: perf's event names summed over CPUs, /proc/interrupts per CPU.
#[derive(Debug, Clone, Serialize, PartialEq)]
pub struct TlbReport {
    pub geometry: TlbGeometry,
    /// perf event name -> count (system-wide, `perf stat -a`).
    pub perf: BTreeMap<String, u64>,
    /// "TLB shootdowns" per CPU (x86: IPIs received).
    pub shootdowns_per_cpu: Vec<u64>,
    /// arm64: broadcast TLBI operations reaching each CPU.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub tlbi_received_per_cpu: Vec<u64>,
    /// User time in page walks and STLB lookups, all CPUs.
    pub walk_ns: u64,
}

impl TlbCache {
    pub fn new(geometry: TlbGeometry, ncpus: usize) -> TlbCache {
        TlbCache {
            geometry,
            cpus: vec![CpuTlb::new(); ncpus],
            tlbi_broadcasts: 0,
        }
    }

    /// A full flush of `cpu`'s TLB (CR3 write / INVPCID all-context, or the IPI handler's
    /// flush_tlb_func doing a full flush): every translation is gone. `interrupts_user`: the
    /// flush is an IPI or broadcast reaching a CPU that runs a task of the flushed mm, whose
    /// user code refilled what an earlier flush in the same step emptied.
    pub fn flush_all(&mut self, cpu: usize, interrupts_user: bool) {
        let c = &mut self.cpus[cpu];
        c.pmu.itlb_flush += 1;
        c.pmu.dtlb_thread_flush += 1;
        c.pmu.stlb_any_flush += 1;
        if c.warm_task != NO_TASK {
            c.lost_hot = c.warm_hot;
        } else if interrupts_user && c.lost_hot != HotSet::default() {
            c.refills_between = c.refills_between.saturating_add(1);
        }
        c.warm_task = NO_TASK;
        c.warm_mm = NO_TASK;
        for e in &mut c.profile {
            if e.flushes == 0 || interrupts_user {
                e.flushes = e.flushes.saturating_add(1);
            }
        }
    }

    /// `cpu` runs another mm than `mms`, whose translations it may still hold under another
    /// ASID: they are invalidated lazily (x86 flushes at the next switch back, as the mm's
    /// tlb_gen moved): the warm state goes, uncounted (estimate: that flush is not counted).
    pub fn forget_mms(&mut self, cpu: usize, mms: &[u32]) {
        let c = &mut self.cpus[cpu];
        if mms.contains(&c.warm_mm) {
            c.warm_task = NO_TASK;
            c.warm_mm = NO_TASK;
            for e in &mut c.profile {
                e.flushes = e.flushes.max(1);
            }
        }
    }

    /// `nr` single-page invalidations (INVLPG, or TLBI VAE1 locally): hot sets survive
    /// (estimate: the pages flushed are not the hot ones).
    pub fn flush_pages(&mut self, cpu: usize, nr: u64) {
        let p = &mut self.cpus[cpu].pmu;
        p.dtlb_thread_flush += nr;
        p.stlb_any_flush += nr;
    }

    /// `cpu` took a TLB shootdown IPI.
    pub fn shootdown_received(&mut self, cpu: usize) {
        self.cpus[cpu].pmu.shootdowns += 1;
    }

    /// arm64: `nr` broadcast TLBIs reached every CPU (one count for all: O(1)).
    pub fn tlbi_broadcast(&mut self, nr: u64) {
        self.tlbi_broadcasts += nr;
    }

    /// Task `task` of `mm` runs user code on `cpu` with hot set `hot`: refill what is not
    /// warm (all of it after a flush; the data part only after another thread of the same mm
    /// ran there; everything after another process). The walks' page-table entries are hot
    /// in the L2 (estimate).
    pub fn run_user(
        &mut self,
        cpu: usize,
        task: u32,
        mm: u32,
        hot: HotSet,
        cost: &CostModel,
    ) -> Refill {
        let g = &self.geometry;
        let hot = HotSet {
            code_pages: hot.code_pages.min(g.l1i_4k_entries),
            load_pages: hot.load_pages.min(g.l1d_4k_entries),
            store_pages: hot
                .store_pages
                .min(g.l1d_4k_entries - hot.load_pages.min(g.l1d_4k_entries)),
        };
        let c = &mut self.cpus[cpu];
        if c.warm_task == task && c.warm_hot == hot {
            return Refill::default();
        }
        let code_walks = if c.warm_mm == mm && c.warm_task != NO_TASK {
            0
        } else {
            hot.code_pages
        };
        // The refills made between flushes that interrupted the task, in its (lost) hot set.
        let between = std::mem::take(&mut c.refills_between);
        let lost = std::mem::take(&mut c.lost_hot);
        let again = |pages: u32| between.saturating_mul(pages);
        let (code_walks, load_walks, store_walks) = (
            code_walks.saturating_add(again(lost.code_pages)),
            hot.load_pages.saturating_add(again(lost.load_pages)),
            hot.store_pages.saturating_add(again(lost.store_pages)),
        );
        let r = Refill {
            code_walks,
            load_walks,
            store_walks,
            ns: (code_walks + load_walks + store_walks) as u64
                * (cost.tlb_walk_ns + cost.cache_l2_hit_ns),
        };
        c.warm_task = task;
        c.warm_mm = mm;
        c.warm_hot = hot;
        c.pmu.itlb_walks += r.code_walks as f64;
        c.pmu.dtlb_load_walks += r.load_walks as f64;
        c.pmu.dtlb_store_walks += r.store_walks as f64;
        c.pmu.dtlb_loads += r.load_walks as f64;
        c.pmu.dtlb_stores += r.store_walks as f64;
        c.pmu.walk_ns += r.ns as f64;
        r
    }

    /// `a.count` random accesses on `cpu`: their cost (user time) and TLB misses.
    pub fn random_access(&mut self, cpu: usize, a: RandomAccess, cost: &CostModel) -> AccessCost {
        if a.count == 0 || a.pages == 0 {
            return AccessCost::default();
        }
        let geometry = self.geometry.clone();
        let c = &mut self.cpus[cpu];
        // The CPU's mix: older ranges fade with the accesses made since.
        let fade = (-(a.count as f64) / PROFILE_WINDOW_ACCESSES).exp();
        for e in &mut c.profile {
            e.weight *= fade;
        }
        let at = match c.profile.iter().position(|e| e.key == a.key) {
            Some(i) => i,
            None => {
                if c.profile.len() >= PROFILE_MAX_RANGES {
                    let least = (0..c.profile.len())
                        .min_by(|&i, &j| c.profile[i].weight.total_cmp(&c.profile[j].weight))
                        .expect("a full profile");
                    c.profile.swap_remove(least);
                }
                c.profile.push(ProfileEntry {
                    key: a.key,
                    pages: 0.0,
                    huge_frac: 0.0,
                    weight: 0.0,
                    flushes: 0,
                });
                c.profile.len() - 1
            }
        };
        let e = &mut c.profile[at];
        e.pages = a.pages as f64;
        e.huge_frac = a.huge_frac.clamp(0.0, 1.0);
        e.weight += a.count as f64;
        let refills = std::mem::take(&mut e.flushes);
        let hot = if c.warm_task != NO_TASK {
            c.warm_hot
        } else {
            HotSet::default()
        };
        if !c.solution.as_ref().is_some_and(|s| s.fits(&c.profile)) {
            c.solution = Some(Solution::solve(&c.profile, &geometry, hot, cost));
        }
        let s = c.solution.as_ref().expect("solved above");
        let i = s
            .keys
            .iter()
            .position(|&k| k == a.key)
            .expect("the range is in its solution");
        let n = a.count as f64;
        let mut walks = n * s.walk[i];
        let mut l1_misses = n * s.l1_miss[i];
        let mut tlb_ns = n * s.tlb_ns[i];
        // After each flush the range's resident translations are walked for again (at most
        // every access that would have hit).
        if refills > 0 {
            let extra = (s.resident[i] * refills as f64).min(n * (1.0 - s.walk[i]));
            walks += extra;
            l1_misses = (l1_misses + extra).min(n);
            tlb_ns += extra * (cost.tlb_walk_ns + cost.cache_llc_hit_ns) as f64;
        }
        let mlp = a.mlp.max(1) as f64;
        let l1 = cost.cache_l1_hit_ns as f64;
        let stall = n * (s.stall_ns[i] - s.tlb_ns[i]) + tlb_ns - n * l1;
        let total_ns = n * l1 + stall.max(0.0) / mlp;
        let p = &mut c.pmu;
        if a.write {
            p.dtlb_stores += n;
            p.dtlb_store_walks += walks;
            p.dtlb_store_stlb_hits += l1_misses - walks;
        } else {
            p.dtlb_loads += n;
            p.dtlb_load_walks += walks;
            p.dtlb_load_stlb_hits += l1_misses - walks;
        }
        p.walk_ns += tlb_ns / mlp;
        AccessCost {
            ns: total_ns.round() as u64,
            l1_misses,
            walks,
            ns_per_access: total_ns / n,
        }
    }

    /// The model's sanity (mm/invariants.rs): hot sets within their TLBs, counters that add
    /// up.
    pub fn check(&self) -> Result<(), String> {
        let g = &self.geometry;
        for (cpu, c) in self.cpus.iter().enumerate() {
            if let Some(h) = c.warm_hot_set() {
                if h.code_pages > g.l1i_4k_entries
                    || h.load_pages + h.store_pages > g.l1d_4k_entries
                {
                    return Err(format!(
                        "cpu {cpu}: warm hot set {h:?} exceeds the L1 TLBs of {}",
                        g.name
                    ));
                }
            }
            let p = &c.pmu;
            let counts = [
                p.dtlb_loads,
                p.dtlb_stores,
                p.dtlb_load_stlb_hits,
                p.dtlb_store_stlb_hits,
                p.dtlb_load_walks,
                p.dtlb_store_walks,
                p.itlb_walks,
                p.walk_ns,
            ];
            if counts.iter().any(|v| !v.is_finite() || *v < -1e-6) {
                return Err(format!(
                    "cpu {cpu}: a TLB counter is negative or not finite: {p:?}"
                ));
            }
            // A walk is an L1 miss that also missed the STLB: misses >= walks, accesses >=
            // misses.
            let eps = 1e-6 * (1.0 + p.dtlb_loads + p.dtlb_stores);
            if p.dtlb_load_walks + p.dtlb_load_stlb_hits > p.dtlb_loads + eps
                || p.dtlb_store_walks + p.dtlb_store_stlb_hits > p.dtlb_stores + eps
            {
                return Err(format!("cpu {cpu}: more dTLB misses than accesses: {p:?}"));
            }
            if p.itlb_flush > p.dtlb_thread_flush || p.dtlb_thread_flush > p.stlb_any_flush {
                return Err(format!(
                    "cpu {cpu}: a full flush counts on every structure: itlb {} dtlb {} stlb {}",
                    p.itlb_flush, p.dtlb_thread_flush, p.stlb_any_flush
                ));
            }
        }
        Ok(())
    }

    /// Totals for the run's report; None when nothing was counted.
    pub fn report(&self) -> Option<TlbReport> {
        let mut total = TlbPmu::default();
        for c in &self.cpus {
            let p = &c.pmu;
            total.dtlb_loads += p.dtlb_loads;
            total.dtlb_stores += p.dtlb_stores;
            total.dtlb_load_stlb_hits += p.dtlb_load_stlb_hits;
            total.dtlb_store_stlb_hits += p.dtlb_store_stlb_hits;
            total.dtlb_load_walks += p.dtlb_load_walks;
            total.dtlb_store_walks += p.dtlb_store_walks;
            total.itlb_walks += p.itlb_walks;
            total.itlb_flush += p.itlb_flush;
            total.dtlb_thread_flush += p.dtlb_thread_flush;
            total.stlb_any_flush += p.stlb_any_flush;
            total.shootdowns += p.shootdowns;
            total.walk_ns += p.walk_ns;
        }
        total.tlbi_received = self.tlbi_broadcasts;
        if total == TlbPmu::default() {
            return None;
        }
        let r = |v: f64| v.round() as u64;
        let perf = BTreeMap::from([
            ("dTLB-loads".to_string(), r(total.dtlb_loads)),
            ("dTLB-stores".to_string(), r(total.dtlb_stores)),
            ("dTLB-load-misses".to_string(), r(total.dtlb_load_walks)),
            ("dTLB-store-misses".to_string(), r(total.dtlb_store_walks)),
            ("iTLB-load-misses".to_string(), r(total.itlb_walks)),
            (
                "dtlb_load_misses.stlb_hit".to_string(),
                r(total.dtlb_load_stlb_hits),
            ),
            (
                "dtlb_store_misses.stlb_hit".to_string(),
                r(total.dtlb_store_stlb_hits),
            ),
            ("itlb.itlb_flush".to_string(), total.itlb_flush),
            ("tlb_flush.dtlb_thread".to_string(), total.dtlb_thread_flush),
            ("tlb_flush.stlb_any".to_string(), total.stlb_any_flush),
        ]);
        let arm = self.tlbi_broadcasts > 0;
        Some(TlbReport {
            geometry: self.geometry.clone(),
            perf,
            shootdowns_per_cpu: self.cpus.iter().map(|c| c.pmu.shootdowns).collect(),
            tlbi_received_per_cpu: if arm {
                vec![self.tlbi_broadcasts; self.cpus.len()]
            } else {
                Vec::new()
            },
            walk_ns: r(total.walk_ns),
        })
    }
}

impl Solution {
    /// Still valid for `profile`: the same ranges, shares and 2 MiB fractions within the
    /// tolerance.
    fn fits(&self, profile: &[ProfileEntry]) -> bool {
        if profile.len() != self.keys.len() {
            return false;
        }
        let total: f64 = profile.iter().map(|e| e.weight).sum();
        profile.iter().zip(0..).all(|(e, i)| {
            self.keys[i] == e.key
                && (e.weight / total - self.shares[i]).abs() <= RESOLVE_TOLERANCE * self.shares[i]
                && (e.huge_frac - self.huge[i]).abs() <= RESOLVE_TOLERANCE
        })
    }

    fn solve(profile: &[ProfileEntry], g: &TlbGeometry, hot: HotSet, cost: &CostModel) -> Solution {
        let total: f64 = profile
            .iter()
            .map(|e| e.weight)
            .sum::<f64>()
            .max(f64::MIN_POSITIVE);
        let n = profile.len();
        let shares: Vec<f64> = profile.iter().map(|e| e.weight / total).collect();
        // Translations: per range, the 4 KiB-mapped pages and the 2 MiB entries.
        let small: Vec<(f64, f64)> = profile
            .iter()
            .zip(&shares)
            .map(|(e, s)| (e.pages * (1.0 - e.huge_frac), s * (1.0 - e.huge_frac)))
            .collect();
        let huge: Vec<(f64, f64)> = profile
            .iter()
            .zip(&shares)
            .map(|(e, s)| {
                let entries = if e.huge_frac > 0.0 {
                    (e.pages * e.huge_frac / 512.0).max(1.0)
                } else {
                    0.0
                };
                (entries, s * e.huge_frac)
            })
            .collect();
        let hot_data = (hot.load_pages + hot.store_pages) as f64;
        let l1_4k_cap = (g.l1d_4k_entries as f64 - hot_data).max(1.0);
        let (h1_small, h1_huge) = if g.l1d_2m_entries > 0 {
            (
                che_hits(&small, l1_4k_cap),
                che_hits(&huge, g.l1d_2m_entries as f64),
            )
        } else {
            let both: Vec<(f64, f64)> = small.iter().chain(&huge).copied().collect();
            let h = che_hits(&both, l1_4k_cap);
            (h[..n].to_vec(), h[n..].to_vec())
        };
        let stlb_cap = (g.stlb_entries as f64 - hot_data - hot.code_pages as f64).max(1.0);
        let both: Vec<(f64, f64)> = small.iter().chain(&huge).copied().collect();
        let hs = che_hits(&both, stlb_cap);
        let mut l1_miss = vec![0.0; n];
        let mut walk = vec![0.0; n];
        let mut resident = vec![0.0; n];
        for i in 0..n {
            let f = profile[i].huge_frac;
            let (s4, s2) = (hs[i], hs[n + i].max(0.0));
            // Inclusive: an L1 hit is an STLB hit.
            let (l4, l2) = (h1_small[i].min(s4), h1_huge[i].min(s2));
            l1_miss[i] = (1.0 - f) * (1.0 - l4) + f * (1.0 - l2);
            walk[i] = (1.0 - f) * (1.0 - s4) + f * (1.0 - s2);
            resident[i] = small[i].0 * s4 + huge[i].0 * s2;
        }
        // Caches: each range's data lines, and the page-table lines its walks read.
        let mut lines: Vec<(f64, f64)> = profile
            .iter()
            .zip(&shares)
            .map(|(e, s)| ((e.pages * 4096.0 / LINE_BYTES).max(1.0), *s))
            .collect();
        lines.extend(profile.iter().zip(&shares).enumerate().map(|(i, (e, s))| {
            let entries = e.pages * (1.0 - e.huge_frac) + e.pages * e.huge_frac / 512.0;
            (
                (entries * PT_ENTRY_BYTES / LINE_BYTES).max(1.0),
                s * walk[i],
            )
        }));
        let l1c = che_hits(&lines, g.l1d_bytes as f64 / LINE_BYTES);
        let l2c = che_hits(&lines, g.l2_bytes as f64 / LINE_BYTES);
        let llc = che_hits(
            &lines,
            (g.l2_bytes + g.llc_bytes_per_cpu) as f64 / LINE_BYTES,
        );
        let latency = |j: usize| {
            let (h1, h2) = (l1c[j], l2c[j].max(l1c[j]));
            let h3 = llc[j].max(h2);
            h1 * cost.cache_l1_hit_ns as f64
                + (h2 - h1) * cost.cache_l2_hit_ns as f64
                + (h3 - h2) * cost.cache_llc_hit_ns as f64
                + (1.0 - h3) * cost.dram_latency_ns as f64
        };
        let mut stall_ns = vec![0.0; n];
        let mut tlb_ns = vec![0.0; n];
        for i in 0..n {
            tlb_ns[i] = (l1_miss[i] - walk[i]).max(0.0) * cost.tlb_stlb_hit_ns as f64
                + walk[i] * (cost.tlb_walk_ns as f64 + latency(n + i));
            stall_ns[i] = tlb_ns[i] + latency(i);
        }
        Solution {
            keys: profile.iter().map(|e| e.key).collect(),
            shares,
            huge: profile.iter().map(|e| e.huge_frac).collect(),
            l1_miss,
            walk,
            stall_ns,
            tlb_ns,
            resident,
        }
    }
}

/// Che's approximation: hit probability of each class of (items, share of accesses) in an
/// LRU cache of `capacity` entries under independent references. The characteristic time T
/// solves sum items * (1 - exp(-share / items * T)) = capacity; a class hits with
/// 1 - exp(-share / items * T). Everything fits: all hit.
pub fn che_hits(classes: &[(f64, f64)], capacity: f64) -> Vec<f64> {
    let live = |&(items, share): &(f64, f64)| items > 0.0 && share > 0.0;
    let items: f64 = classes.iter().filter(|c| live(c)).map(|c| c.0).sum();
    if items <= capacity {
        return classes
            .iter()
            .map(|c| if live(c) { 1.0 } else { 0.0 })
            .collect();
    }
    let filled = |t: f64| -> f64 {
        classes
            .iter()
            .filter(|c| live(c))
            .map(|&(n, s)| n * -(-s / n * t).exp_m1())
            .sum()
    };
    let mut hi = capacity.max(1.0);
    while filled(hi) < capacity {
        hi *= 2.0;
    }
    let mut lo = 0.0;
    for _ in 0..48 {
        let mid = 0.5 * (lo + hi);
        if filled(mid) < capacity {
            lo = mid;
        } else {
            hi = mid;
        }
    }
    let t = 0.5 * (lo + hi);
    classes
        .iter()
        .map(|c| {
            if live(c) {
                -(-c.1 / c.0 * t).exp_m1()
            } else {
                0.0
            }
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn cache() -> (TlbCache, CostModel) {
        let g = TlbGeometry::preset("golden-cove").unwrap();
        (
            TlbCache::new(g, 2),
            CostModel::profile("vm-6.18-2cpu").unwrap(),
        )
    }

    fn access(pages: u64, huge_frac: f64, count: u64) -> RandomAccess {
        RandomAccess {
            key: 7,
            pages,
            huge_frac,
            count,
            write: false,
            mlp: 1,
        }
    }

    #[test]
    fn che_hits_follow_reach() {
        // One class of N items, capacity C < N: hit ratio ~ C / N.
        let h = che_hits(&[(1000.0, 1.0)], 100.0);
        assert!((h[0] - 0.1).abs() < 1e-9, "{h:?}");
        assert_eq!(che_hits(&[(10.0, 1.0)], 100.0), vec![1.0]);
        // A hotter class hits more.
        let h = che_hits(&[(100.0, 0.9), (10_000.0, 0.1)], 200.0);
        assert!(h[0] > 0.9 && h[1] < 0.05, "{h:?}");
    }

    #[test]
    fn a_flush_makes_the_hot_set_miss_once() {
        let (mut t, cost) = cache();
        let hot = HotSet {
            code_pages: 20,
            load_pages: 10,
            store_pages: 4,
        };
        let first = t.run_user(0, 1, 5, hot, &cost);
        assert_eq!(
            (first.code_walks, first.load_walks, first.store_walks),
            (20, 10, 4)
        );
        assert_eq!(t.run_user(0, 1, 5, hot, &cost), Refill::default());
        t.flush_all(0, false);
        let again = t.run_user(0, 1, 5, hot, &cost);
        assert_eq!((again.code_walks, again.store_walks), (20, 4));
        assert!(again.ns > 0);
        // Another thread of the same mm: its data, not the shared code.
        let other = t.run_user(0, 2, 5, hot, &cost);
        assert_eq!((other.code_walks, other.load_walks), (0, 10));
        // The other CPU was not flushed.
        t.run_user(1, 3, 5, hot, &cost);
        t.flush_all(0, false);
        assert_eq!(t.run_user(1, 3, 5, hot, &cost), Refill::default());
        let p = &t.cpus[0].pmu;
        assert_eq!(
            (p.itlb_flush, p.dtlb_thread_flush, p.stlb_any_flush),
            (2, 2, 2)
        );
        assert_eq!(p.itlb_walks, 40.0);
        assert_eq!(p.dtlb_store_walks, 12.0);
        t.check().unwrap();
    }

    #[test]
    fn flushes_interrupting_a_running_task_each_cost_a_refill() {
        let (mut t, cost) = cache();
        let hot = HotSet {
            code_pages: 8,
            load_pages: 6,
            store_pages: 2,
        };
        t.run_user(0, 1, 5, hot, &cost);
        // Three IPIs land inside the task's step: the first empties the set, the task's
        // user code refills it before each of the other two.
        for _ in 0..3 {
            t.flush_all(0, true);
        }
        let r = t.run_user(0, 1, 5, hot, &cost);
        assert_eq!((r.code_walks, r.load_walks, r.store_walks), (24, 18, 6));
        // Flushes of an idle CPU (nothing refills in between) cost one refill.
        t.flush_all(0, false);
        t.flush_all(0, false);
        let r = t.run_user(0, 1, 5, hot, &cost);
        assert_eq!((r.code_walks, r.load_walks, r.store_walks), (8, 6, 2));
        t.check().unwrap();
    }

    #[test]
    fn random_accesses_miss_by_reach() {
        let (mut t, cost) = cache();
        // 64 pages fit the L1 dTLB: no misses.
        let small = t.random_access(0, access(64, 0.0, 1_000_000), &cost);
        assert!(small.walks < 1.0 && small.l1_misses < 1.0, "{small:?}");
        // 1.4 M pages (5.7 GB at 4K) far above the STLB's 2048: nearly every access walks.
        let (mut t, cost) = cache();
        let big = t.random_access(0, access(1_400_000, 0.0, 1_000_000), &cost);
        assert!(big.walks > 0.99 * 1_000_000.0, "{big:?}");
        // The same at 2 MiB: 2734 entries, within reach of the STLB mostly.
        let (mut t, cost) = cache();
        let thp = t.random_access(0, access(1_400_000, 1.0, 1_000_000), &cost);
        assert!(thp.walks < 0.35 * 1_000_000.0, "{thp:?}");
        assert!(thp.ns < big.ns);
        t.check().unwrap();
    }

    #[test]
    fn a_flush_barely_moves_a_large_working_set() {
        let (mut t, cost) = cache();
        let a = access(1_400_000, 0.0, 100_000);
        let steady = t.random_access(0, a, &cost);
        t.flush_all(0, false);
        let after = t.random_access(0, a, &cost);
        assert!(after.walks >= steady.walks);
        assert!(
            after.walks - steady.walks < 0.01 * steady.walks,
            "{steady:?} {after:?}"
        );
    }

    #[test]
    fn geometry_overrides_and_errors() {
        let spec = TlbGeometrySpec {
            stlb_entries: Some(1536),
            ..Default::default()
        };
        let g = TlbGeometry::from_spec(Some(&spec), TlbKind::X86Ipi).unwrap();
        assert_eq!((g.stlb_entries, g.l1d_4k_entries), (1536, 96));
        let g = TlbGeometry::from_spec(None, TlbKind::Arm64Tlbi).unwrap();
        assert_eq!(g.stlb_entries, 1280);
        let bad = TlbGeometrySpec {
            preset: Some("k8".into()),
            ..Default::default()
        };
        let (field, _, allowed) = TlbGeometry::from_spec(Some(&bad), TlbKind::X86Ipi).unwrap_err();
        assert_eq!(field, "machine.tlb_geometry.preset");
        assert!(allowed.contains("golden-cove"));
    }
}
