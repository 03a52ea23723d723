//! Memory compaction (mm/compaction.c, 6.18): move movable folios out of the way so free
//! pages merge into blocks of a wanted order.
//!
//! A compaction run (`compact_zone`, compact_zone.rs) walks a migrate scanner up from the
//! zone's start (migrate_scanner.rs) and a free scanner down from its end (free_scanner.rs):
//! the first isolates folios from the LRU, the second free pages to migrate them into
//! (mm/migrate/), until the scanners meet or the wanted order is free. Both resume where the
//! last run stopped (cached pfns) and skip pageblocks where isolation recently failed (skip
//! bits, skip.rs). Costly-order direct compaction runs only where it can help (suitable.rs,
//! with the fragmentation index of fragmentation.rs) and backs off after sync failures
//! (defer.rs). kcompactd (kcompactd.rs) compacts in the background, woken by kswapd, and
//! proactively every 500 ms while the node's fragmentation score is high.
//!
//! Simplified, as the kernel's fast searches are hints over the same scan: fast_find_migrateblock
//! and fast_isolate_freepages are not modelled (the linear scanners find the same blocks, so
//! compact_*_scanned are upper bounds of the kernel's); zsmalloc's movable_ops pages are not
//! migrated (their blocks cannot be emptied); the zone's LRU pages are never too many to
//! isolate (too_many_isolated).

mod compact_zone;
mod control;
pub mod defer;
pub mod era;
pub mod fragmentation;
mod free_scanner;
pub mod kcompactd;
mod migrate_scanner;
pub mod skip;
pub mod suitable;

pub use compact_zone::compact_zone;
pub use control::{CompactControl, Contended};
pub use era::CompactionEra;
pub use kcompactd::{wakeup_kcompactd, KcompactdState};
pub use suitable::compaction_zonelist_suitable;

use super::gfp::Gfp;
use super::migrate::MigrateMode;
use super::page_alloc::migratetype::PAGEBLOCK_NR_PAGES;
use super::page_alloc::AllocFlags;
use super::Kernel;
use crate::engine::Ctx;
use crate::scenario::Scenario;

/// COMPACT_CLUSTER_MAX (= SWAP_CLUSTER_MAX): folios isolated per migration batch.
pub const COMPACT_CLUSTER_MAX: u32 = 32;
/// COMPACT_MAX_DEFER_SHIFT: compaction is skipped at most 1 << 6 times after failures.
pub const COMPACT_MAX_DEFER_SHIFT: u32 = 6;

/// enum compact_result, in the kernel's order (results of several zones combine by max).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum CompactResult {
    /// The fragmentation index says a failure would be for lack of memory.
    NotSuitableZone,
    /// Not suitable: too few free pages to migrate into, or compaction not allowed.
    Skipped,
    /// Deferred after recent failures at this order (defer_compaction).
    Deferred,
    /// No block of the order is free yet (compact_finished, internal).
    NoSuitablePage,
    /// Go on scanning (internal).
    Continue,
    /// Scanned the whole zone without producing a free block of the order.
    Complete,
    /// Scanned from the cached positions to where the scanners met: part of the zone.
    PartialSkipped,
    /// Stopped on lock contention (async) or a migration target shortage.
    Contended,
    /// A free block of the order exists now (or was captured).
    Success,
}

/// enum compact_priority: lower is more thorough.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum CompactPriority {
    SyncFull = 0,
    SyncLight = 1,
    Async = 2,
}

/// INIT_COMPACT_PRIORITY / DEF_COMPACT_PRIORITY.
pub const INIT_COMPACT_PRIORITY: CompactPriority = CompactPriority::Async;
pub const DEF_COMPACT_PRIORITY: CompactPriority = CompactPriority::SyncLight;
/// MIN_COMPACT_PRIORITY and, for costly orders, MIN_COMPACT_COSTLY_PRIORITY.
pub const MIN_COMPACT_PRIORITY: CompactPriority = CompactPriority::SyncFull;
pub const MIN_COMPACT_COSTLY_PRIORITY: CompactPriority = CompactPriority::SyncLight;

/// The compaction sysctls (/proc/sys/vm).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct CompactionSysctl {
    /// extfrag_threshold: costly orders are compacted only above this fragmentation index.
    pub extfrag_threshold: u32,
    /// compaction_proactiveness: 0 disables proactive compaction.
    pub proactiveness: u32,
    /// compaction_proactiveness_leeway (no scenario knob: the kernel's 10).
    pub proactiveness_leeway: u32,
    /// compact_unevictable_allowed (CONFIG_COMPACT_UNEVICTABLE_DEFAULT = 1 without RT).
    pub unevictable_allowed: bool,
}

impl CompactionSysctl {
    pub fn from_scenario(scenario: &Scenario) -> CompactionSysctl {
        let vm = &scenario.sysctl.vm;
        CompactionSysctl {
            extfrag_threshold: vm.extfrag_threshold.unwrap_or(500),
            proactiveness: vm.compaction_proactiveness.unwrap_or(20),
            proactiveness_leeway: 10,
            unevictable_allowed: vm.compact_unevictable_allowed.unwrap_or(1) == 1,
        }
    }
}

/// The zone's compaction state (struct zone's compact_* fields).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ZoneCompaction {
    /// compact_cached_free_pfn: where the free scanner resumes.
    pub cached_free_pfn: u32,
    /// compact_cached_migrate_pfn[async, sync]: where the migrate scanner resumes.
    pub cached_migrate_pfn: [u32; 2],
    /// compact_init_migrate_pfn / compact_init_free_pfn: the first blocks worth scanning, as
    /// the last skip-bit reset found them.
    pub init_migrate_pfn: u32,
    pub init_free_pfn: u32,
    /// compact_considered, compact_defer_shift, compact_order_failed (defer.rs).
    pub considered: u32,
    pub defer_shift: u32,
    pub order_failed: u32,
    /// compact_blockskip_flush: a direct compaction met its scanners; kswapd clears the skip
    /// bits when it next goes to sleep.
    pub blockskip_flush: bool,
}

impl ZoneCompaction {
    pub fn new(start_pfn: u32, nr_pages: u32) -> ZoneCompaction {
        let mut z = ZoneCompaction {
            cached_free_pfn: 0,
            cached_migrate_pfn: [0; 2],
            init_migrate_pfn: 0,
            init_free_pfn: 0,
            considered: 0,
            defer_shift: 0,
            order_failed: 0,
            blockskip_flush: false,
        };
        // The init pfns stay 0 (the zeroed struct zone) until the first skip-bit reset: until
        // then every fast free-list search is a run's first, deeper one.
        z.reset_cached_positions(start_pfn, nr_pages);
        z
    }
}

/// Compaction's part of the kernel: the sysctls (the zones' and kcompactd's state are per
/// node, in mm/mmzone.rs).
#[derive(Debug, Clone)]
pub struct Compaction {
    pub sysctl: CompactionSysctl,
}

impl Compaction {
    pub fn new(scenario: &Scenario) -> Compaction {
        Compaction {
            sysctl: CompactionSysctl::from_scenario(scenario),
        }
    }
}

/// pageblock_start_pfn.
#[inline]
pub(crate) fn pageblock_start_pfn(pfn: u32) -> u32 {
    pfn & !(PAGEBLOCK_NR_PAGES - 1)
}

/// pageblock_end_pfn: the start of the next pageblock.
#[inline]
pub(crate) fn pageblock_end_pfn(pfn: u32) -> u32 {
    pageblock_start_pfn(pfn) + PAGEBLOCK_NR_PAGES
}

/// gfp_compaction_allowed: compaction may block on I/O (__GFP_IO).
fn gfp_compaction_allowed(gfp: Gfp) -> bool {
    gfp.contains(Gfp::IO)
}

/// What a direct compaction gave its caller.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct DirectCompaction {
    pub result: CompactResult,
    /// The block captured for the caller, if any.
    pub page: Option<u32>,
    /// Why an async run stopped early, if it did (the 4.1 slow path acts on it).
    pub contended: Contended,
}

impl DirectCompaction {
    /// Compaction did not run.
    pub fn skipped() -> DirectCompaction {
        DirectCompaction {
            result: CompactResult::Skipped,
            page: None,
            contended: Contended::None,
        }
    }
}

/// try_to_compact_pages: direct compaction for a block of `order`, zone by zone along the
/// zonelist of node `nid` (only `nid` with __GFP_THISNODE) until one yields a block.
pub fn try_to_compact_pages(
    k: &mut Kernel,
    ctx: &mut Ctx,
    nid: usize,
    gfp: Gfp,
    order: u32,
    alloc_flags: AllocFlags,
    prio: CompactPriority,
) -> DirectCompaction {
    let mut out = DirectCompaction::skipped();
    if !gfp_compaction_allowed(gfp) {
        return out;
    }
    for zone_nid in k.nodes.reclaim_zonelist_vec(nid, gfp, k.alloc_nodemask()) {
        if prio > MIN_COMPACT_PRIORITY && k.pgdat[zone_nid].compact.compaction_deferred(order) {
            out.result = out.result.max(CompactResult::Deferred);
            continue;
        }
        let mut cc = CompactControl::direct(zone_nid, order, gfp, prio, alloc_flags);
        let status = compact_one_zone(k, ctx, &mut out, &mut cc);
        // The allocation will succeed in this zone (or a block was captured): stop.
        if status == CompactResult::Success || out.page.is_some() {
            break;
        }
        // An async run that met contention gives up rather than trying other zones.
        if prio == CompactPriority::Async && status == CompactResult::Contended {
            break;
        }
    }
    out
}

/// try_to_compact_pages' step for one zone: compact it, then defer or reset its deferral.
fn compact_one_zone(
    k: &mut Kernel,
    ctx: &mut Ctx,
    out: &mut DirectCompaction,
    cc: &mut CompactControl,
) -> CompactResult {
    let start_ns = ctx.now_ns;
    let (status, page) = compact_zone_order(k, ctx, cc);
    crate::engine::trace::span("direct compaction", "", start_ns, ctx.now_ns);
    out.page = page;
    out.contended = cc.contended;
    out.result = out.result.max(status);
    let (nid, order) = (cc.nid, cc.order as u32);
    if status == CompactResult::Success {
        // Expected to succeed, not known to: the caller resets fully if it does.
        k.pgdat[nid].compact.compaction_defer_reset(order, false);
    } else if cc.mode != MigrateMode::Async // prio != COMPACT_PRIO_ASYNC
        && matches!(
            status,
            CompactResult::Complete | CompactResult::PartialSkipped
        )
    {
        k.pgdat[nid].compact.defer_compaction(order);
    }
    status
}

/// compact_zone_order: one direct compaction of the zone, with a capture_control installed
/// (task_capc: not for kernel threads).
fn compact_zone_order(
    k: &mut Kernel,
    ctx: &mut Ctx,
    cc: &mut CompactControl,
) -> (CompactResult, Option<u32>) {
    let (nid, order) = (cc.nid, cc.order as u32);
    let capture = k.cfg.compaction_era.capture && k.kthreads.current(ctx.cpu).is_none();
    if capture {
        k.pgdat[nid].zone.set_capture(order, cc.migratetype);
    }
    let mut ret = compact_zone(k, ctx, cc, capture);
    let page = if capture {
        k.pgdat[nid].zone.take_capture()
    } else {
        None
    };
    if page.is_some() {
        ret = CompactResult::Success;
        // prep_new_page of the captured block: its MIGRC tags are flushed for first.
        crate::mm::migrate::flush::migrc::check_flush_task_mgen(k, ctx);
    }
    (ret, page)
}

/// __alloc_pages_direct_compact after the allocation succeeded: the skip bits stay (no flush
/// by kswapd), and the zone's deferral is reset for this order (page_zone(page)).
pub fn compaction_alloc_succeeded(k: &mut Kernel, pfn: u32, order: u32) {
    let nid = k.nodes.nid(pfn);
    let zone = &mut k.pgdat[nid].compact;
    zone.blockskip_flush = false;
    zone.compaction_defer_reset(order, true);
}

/// `echo 1 > /proc/sys/vm/compact_memory` (compact_nodes): every node's zone (that the model
/// compacts), MIGRATE_SYNC, skip hints ignored.
pub fn compact_memory(k: &mut Kernel, ctx: &mut Ctx) {
    for nid in 0..k.nr_nodes() {
        if k.pgdat[nid].has_kthreads {
            kcompactd::compact_node(k, ctx, nid, false);
        }
    }
}
