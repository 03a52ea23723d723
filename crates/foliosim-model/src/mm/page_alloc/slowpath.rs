//! __alloc_pages (mm/page_alloc.c, 6.18): the fast path at the low watermark, then
//! __alloc_pages_slowpath: wake kswapd, retry at the min watermark, direct compaction
//! (mm/compaction/), direct reclaim, and the retry rules each gfp asks for, up to the point
//! where the kernel would call the OOM killer. The release's slow path is a [`Slowpath`]
//! (4.1's in slowpath_v4_1.rs); the steps they share are here.

use super::watermark::{zone_watermark_ok, AllocFlags, Wmark};
use super::{Zone, MAX_PAGE_ORDER, PAGE_ALLOC_COSTLY_ORDER};
use crate::engine::Ctx;
use crate::mm::compaction::{
    self, CompactPriority, CompactResult, DirectCompaction, DEF_COMPACT_PRIORITY,
    INIT_COMPACT_PRIORITY, MIN_COMPACT_COSTLY_PRIORITY, MIN_COMPACT_PRIORITY,
};
use crate::mm::folio::FolioTable;
use crate::mm::gfp::Gfp;
use crate::mm::mempolicy::policy::NO_INTERLEAVE_INDEX;
use crate::mm::numa::get_page_from_freelist as get_page_from_freelist_node;
use crate::mm::oom_kill::{out_of_memory, OomConstraint};
use crate::mm::page_alloc::migratetype::MigrateType;
use crate::mm::preempt::{self, AllocResume};
use crate::mm::vmscan::kswapd::{wakeup_kswapd, KswapdState, MAX_RECLAIM_RETRIES};
use crate::mm::vmscan::{do_try_to_free_pages, try_to_free_pages, DirectReclaim};
use crate::mm::vmstat::VmEvent;
use crate::mm::Kernel;
use crate::scenario::{MmChange, Release};

/// __alloc_pages_slowpath as a kernel release has it: what to do once the fast path failed.
pub trait Slowpath: Sync {
    fn alloc_pages_slowpath(
        &self,
        k: &mut Kernel,
        ctx: &mut Ctx,
        gfp: Gfp,
        order: u32,
    ) -> Option<u32>;
}

/// The slow path of `release`: 4.1's until the OOM detection rework (the release table).
pub fn slowpath_of(release: Release) -> &'static dyn Slowpath {
    if release.has(MmChange::OomDetectionRework) {
        &SlowpathV6_18
    } else {
        &super::slowpath_v4_1::SlowpathV4_1
    }
}

/// The slow path since 4.x's rework (should_reclaim_retry, compaction priorities), as 6.18
/// has it; the model's other 6.x releases share it.
pub struct SlowpathV6_18;

impl Slowpath for SlowpathV6_18 {
    fn alloc_pages_slowpath(
        &self,
        k: &mut Kernel,
        ctx: &mut Ctx,
        gfp: Gfp,
        order: u32,
    ) -> Option<u32> {
        alloc_pages_slowpath(k, ctx, gfp, order)
    }
}

/// MAX_COMPACT_RETRIES.
const MAX_COMPACT_RETRIES: u32 = 16;

/// The fast path's flags (alloc_flags_nofragment): ALLOC_KSWAPD from __GFP_KSWAPD_RECLAIM, and
/// ALLOC_NOFRAGMENT as for ZONE_NORMAL on machines with a ZONE_DMA32 below it (x86-64, arm64):
/// the first pass does not fall back to fragmenting another type's pageblock.
fn fast_path_flags(gfp: Gfp) -> AllocFlags {
    let mut flags = AllocFlags::WMARK_LOW.with(AllocFlags::NOFRAGMENT);
    if gfp.contains(Gfp::KSWAPD_RECLAIM) {
        flags = flags.with(AllocFlags::KSWAPD);
    }
    flags
}

/// __alloc_pages: a naturally aligned block of 2^order pages for a request of `gfp`, or None
/// where the kernel would fail the allocation or invoke the OOM killer (the caller decides:
/// an order-0 fault reports OOM, a large folio falls back to a smaller order).
pub fn alloc_pages(k: &mut Kernel, ctx: &mut Ctx, gfp: Gfp, order: u32) -> Option<u32> {
    assert!(order <= MAX_PAGE_ORDER, "order {order} > MAX_PAGE_ORDER");
    // alloc_pages_noprof: a user task's policy applies to an allocation without a VMA
    // (page cache, slab, page tables) unless it asks for __GFP_THISNODE.
    if k.alloc_nodes.is_none() && k.current.mempolicy.is_some() && !gfp.contains(Gfp::THISNODE) {
        let pol = k.current.mempolicy;
        let ilx = NO_INTERLEAVE_INDEX;
        return crate::mm::mempolicy::alloc_pages_mpol(
            k,
            ctx,
            gfp,
            order,
            pol.as_ref(),
            ilx,
            false,
        );
    }
    // A fault's allocation that stopped in its slow path goes on there (mm/preempt.rs).
    if let Some(st) = k.current.take_alloc(gfp, order) {
        return slowpath_retry(k, ctx, gfp, order, st);
    }
    let flags = fast_path_flags(gfp);
    if let Some(pfn) = get_page_from_freelist(k, ctx, gfp, order, flags) {
        return Some(pfn);
    }
    let slowpath = k.cfg.slowpath;
    slowpath.alloc_pages_slowpath(k, ctx, gfp, order)
}

/// An allocation by reclaim itself (PF_MEMALLOC: zram, zswap and brd storing what is being
/// swapped out), which may use every free page (ALLOC_NO_WATERMARKS) and never reclaims. As
/// the model always has, a failure drains the per-CPU lists and tries once more (the kernel
/// would fail it). A movable one (zsmalloc's zspages) is marked as having movable_ops; free it
/// with [`free_pages_memalloc`].
pub fn alloc_pages_memalloc(
    zone: &mut Zone,
    kswapd: &mut KswapdState,
    folios: &FolioTable,
    ctx: &mut Ctx,
    gfp: Gfp,
    order: u32,
) -> Option<u32> {
    let pfn = memalloc(zone, kswapd, folios, ctx, gfp, order)?;
    if gfp.migratetype() == MigrateType::Movable {
        zone.area.set_movable_ops(pfn, order, true);
    }
    Some(pfn)
}

/// Free what [`alloc_pages_memalloc`] allocated with the same `gfp`.
pub fn free_pages_memalloc(zone: &mut Zone, ctx: &mut Ctx, gfp: Gfp, pfn: u32, order: u32) {
    if gfp.migratetype() == MigrateType::Movable {
        zone.area.set_movable_ops(pfn, order, false);
    }
    zone.free(ctx, pfn, order);
}

fn memalloc(
    zone: &mut Zone,
    kswapd: &mut KswapdState,
    folios: &FolioTable,
    ctx: &mut Ctx,
    gfp: Gfp,
    order: u32,
) -> Option<u32> {
    let fast = fast_path_flags(gfp);
    if let Some(pfn) = zone.get_page_from_freelist(kswapd, folios, ctx, gfp, order, fast) {
        return Some(pfn);
    }
    let alloc_flags = gfp_to_alloc_flags(gfp, order);
    if alloc_flags.has(AllocFlags::KSWAPD) {
        wakeup_kswapd(zone, kswapd, gfp, order);
    }
    let reserve = AllocFlags::NO_WATERMARKS.with(AllocFlags(alloc_flags.0 & AllocFlags::KSWAPD.0));
    if let Some(pfn) = zone.get_page_from_freelist(kswapd, folios, ctx, gfp, order, reserve) {
        return Some(pfn);
    }
    if zone.nr_pcp_pages() == 0 {
        return None;
    }
    zone.drain_all_pages(ctx);
    zone.get_page_from_freelist(kswapd, folios, ctx, gfp, order, reserve)
}

/// gfp_to_alloc_flags: the slow path's flags: the min watermark, kswapd wakeups, and a
/// little more of the reserves for __GFP_HIGH and for requests that cannot reclaim.
pub fn gfp_to_alloc_flags(gfp: Gfp, order: u32) -> AllocFlags {
    let mut flags = AllocFlags::WMARK_MIN.with(AllocFlags::CPUSET);
    if gfp.contains(Gfp::HIGH) {
        flags = flags.with(AllocFlags::MIN_RESERVE);
    }
    if gfp.contains(Gfp::KSWAPD_RECLAIM) {
        flags = flags.with(AllocFlags::KSWAPD);
    }
    if !gfp.allow_blocking() {
        if !gfp.contains(Gfp::NOMEMALLOC) {
            flags = flags.with(AllocFlags::NON_BLOCK);
            if order > 0 && flags.has(AllocFlags::MIN_RESERVE) {
                flags = flags.with(AllocFlags::HIGHATOMIC);
            }
        }
        if flags.has(AllocFlags::MIN_RESERVE) {
            flags = flags.without(AllocFlags::CPUSET);
        }
    }
    flags
}

/// __gfp_pfmemalloc_flags for the model's callers, which never run in PF_MEMALLOC context
/// here: only __GFP_MEMALLOC (without __GFP_NOMEMALLOC) opens the reserves.
pub(super) fn gfp_pfmemalloc_flags(gfp: Gfp) -> Option<AllocFlags> {
    (gfp.contains(Gfp::MEMALLOC) && !gfp.contains(Gfp::NOMEMALLOC))
        .then_some(AllocFlags::NO_WATERMARKS)
}

/// get_page_from_freelist from the allocating CPU's node (the default local policy).
pub(super) fn get_page_from_freelist(
    k: &mut Kernel,
    ctx: &mut Ctx,
    gfp: Gfp,
    order: u32,
    alloc_flags: AllocFlags,
) -> Option<u32> {
    let nid = k.alloc_nid(ctx);
    get_page_from_freelist_node(k, ctx, nid, gfp, order, alloc_flags)
}

/// wake_all_kswapds: the kswapd of every node of the zonelist that has one.
pub(super) fn wake_all_kswapds(k: &mut Kernel, ctx: &Ctx, gfp: Gfp, order: u32) {
    let nid = k.alloc_nid(ctx);
    for zone_nid in k.nodes.reclaim_zonelist_vec(nid, gfp, k.alloc_nodemask()) {
        let pgdat = &mut k.pgdat[zone_nid];
        wakeup_kswapd(&pgdat.zone, &mut pgdat.kswapd, gfp, order);
    }
}

/// The locals of __alloc_pages_slowpath that live across its retry loop, and where it is in
/// the loop: saved when a user fault's allocation stops to give up the CPU (mm/preempt.rs).
#[derive(Debug, Clone, Copy)]
pub struct SlowpathState {
    alloc_flags: AllocFlags,
    compact_result: CompactResult,
    compact_priority: CompactPriority,
    compaction_retries: u32,
    no_progress_loops: u32,
    /// At `retry:` (None), or in __perform_reclaim.
    reclaim: Option<DirectReclaim>,
}

/// The allocation stops: its state goes with the task until it resumes.
fn stop(k: &mut Kernel, gfp: Gfp, order: u32, state: SlowpathState) -> Option<u32> {
    k.current.alloc = Some(AllocResume { gfp, order, state });
    None
}

/// __alloc_pages_slowpath.
fn alloc_pages_slowpath(k: &mut Kernel, ctx: &mut Ctx, gfp: Gfp, order: u32) -> Option<u32> {
    assert!(
        !gfp.contains(Gfp::NOFAIL),
        "__GFP_NOFAIL is not modelled: no caller of the model may need it"
    );
    let can_direct_reclaim = gfp.allow_blocking();
    let costly = order > PAGE_ALLOC_COSTLY_ORDER;
    let alloc_flags = gfp_to_alloc_flags(gfp, order);
    let mut st = SlowpathState {
        alloc_flags,
        compact_result: CompactResult::Skipped,
        compact_priority: DEF_COMPACT_PRIORITY,
        compaction_retries: 0,
        no_progress_loops: 0,
        reclaim: None,
    };

    if alloc_flags.has(AllocFlags::KSWAPD) {
        wake_all_kswapds(k, ctx, gfp, order);
    }
    if let Some(pfn) = get_page_from_freelist(k, ctx, gfp, order, alloc_flags) {
        return Some(pfn);
    }

    // Costly orders, and high orders that are not movable, try compaction before reclaim:
    // there may well be enough free base pages.
    if can_direct_reclaim
        && (costly || (order > 0 && gfp.migratetype() != MigrateType::Movable))
        && gfp_pfmemalloc_flags(gfp).is_none()
    {
        let dc = alloc_pages_direct_compact(
            k,
            ctx,
            gfp,
            order,
            alloc_flags,
            INIT_COMPACT_PRIORITY,
            true,
        );
        let result = dc.result;
        st.compact_result = result;
        if dc.page.is_some() {
            return dc.page;
        }
        if costly && gfp.contains(Gfp::NORETRY) {
            // THP faults under defrag=always (not madvised): compaction found nothing
            // suitable or is deferred, and reclaim is unlikely to free whole pageblocks.
            if matches!(result, CompactResult::Skipped | CompactResult::Deferred) {
                return None;
            }
            st.compact_priority = INIT_COMPACT_PRIORITY;
        }
    }
    slowpath_retry(k, ctx, gfp, order, st)
}

/// __alloc_pages_slowpath from its `retry:` label, or from within __perform_reclaim, as
/// `st` says: where a slow path begins its loop, and where a stopped one resumes.
pub(super) fn slowpath_retry(
    k: &mut Kernel,
    ctx: &mut Ctx,
    gfp: Gfp,
    order: u32,
    mut st: SlowpathState,
) -> Option<u32> {
    let can_direct_reclaim = gfp.allow_blocking();
    let costly = order > PAGE_ALLOC_COSTLY_ORDER;
    loop {
        if st.reclaim.is_none() {
            // retry:
            if st.alloc_flags.has(AllocFlags::KSWAPD) {
                wake_all_kswapds(k, ctx, gfp, order);
            }
            if let Some(reserve) = gfp_pfmemalloc_flags(gfp) {
                st.alloc_flags = AllocFlags(reserve.0 | (st.alloc_flags.0 & AllocFlags::KSWAPD.0));
            }
            if let Some(pfn) = get_page_from_freelist(k, ctx, gfp, order, st.alloc_flags) {
                return Some(pfn);
            }
            // The caller will not reclaim: nothing can be balanced.
            if !can_direct_reclaim {
                return None;
            }
            st.reclaim = Some(DirectReclaim::default());
        }
        let mut dr = st.reclaim.expect("in reclaim");
        let Some(progress) = perform_reclaim(k, ctx, gfp, &mut dr) else {
            st.reclaim = Some(dr);
            return stop(k, gfp, order, st);
        };
        st.reclaim = None;
        let page = direct_reclaim_alloc(k, ctx, gfp, order, st.alloc_flags, progress);
        if page.is_some() {
            return page;
        }
        let dc = alloc_pages_direct_compact(
            k,
            ctx,
            gfp,
            order,
            st.alloc_flags,
            st.compact_priority,
            true,
        );
        if order > 0 {
            st.compact_result = dc.result;
        }
        if dc.page.is_some() {
            return dc.page;
        }
        if gfp.contains(Gfp::NORETRY) {
            return None;
        }
        // Costly orders loop only with __GFP_RETRY_MAYFAIL (and compaction to loop for).
        if costly && !gfp.contains(Gfp::RETRY_MAYFAIL) {
            return None;
        }
        let nid = k.alloc_nid(ctx);
        let retry = should_reclaim_retry(
            k,
            nid,
            order,
            st.alloc_flags,
            progress > 0,
            &mut st.no_progress_loops,
        ) || (progress > 0
            && should_compact_retry(
                k,
                nid,
                order,
                st.compact_result,
                &mut st.compact_priority,
                &mut st.compaction_retries,
            ));
        if retry {
            // should_reclaim_retry's cond_resched before the retry.
            if preempt::cond_resched(k, ctx) {
                preempt::note_stop(k, ctx, false);
                return stop(k, gfp, order, st);
            }
            continue;
        }
        // Reclaim has failed: the OOM killer, and a retry while it makes progress.
        let (page, did_some_progress) = alloc_pages_may_oom(k, ctx, gfp, order);
        if page.is_some() {
            return page;
        }
        if did_some_progress {
            st.no_progress_loops = 0;
            continue;
        }
        return None;
    }
}

/// __perform_reclaim with its cond_resched before and after try_to_free_pages: None when
/// the task stops at one of them or inside reclaim (`dr` says where).
fn perform_reclaim(k: &mut Kernel, ctx: &mut Ctx, gfp: Gfp, dr: &mut DirectReclaim) -> Option<u64> {
    if !dr.started && preempt::cond_resched(k, ctx) {
        preempt::note_stop(k, ctx, false);
        return None;
    }
    let reclaiming = dr.priority.is_some();
    let progress = do_try_to_free_pages(k, ctx, gfp, dr, true)?;
    if reclaiming && preempt::cond_resched(k, ctx) {
        // Stopped after reclaim: `dr` is done and resumes with its progress.
        preempt::note_stop(k, ctx, false);
        return None;
    }
    Some(progress)
}

/// __alloc_pages_may_oom: one last try at the high watermark (a parallel OOM kill may have
/// freed memory), then the OOM killer (mm/oom_kill.rs), except for costly orders,
/// __GFP_RETRY_MAYFAIL and __GFP_THISNODE, which fail. Returns the page and whether the OOM
/// killer made progress (killed a task: retry). A request without __GFP_FS, which the kernel
/// would keep retrying without a kill, fails here (no caller of the model makes one that
/// gets this far).
pub(super) fn alloc_pages_may_oom(
    k: &mut Kernel,
    ctx: &mut Ctx,
    gfp: Gfp,
    order: u32,
) -> (Option<u32>, bool) {
    let last = gfp.union(Gfp::HARDWALL).without(Gfp::DIRECT_RECLAIM);
    let flags = AllocFlags::WMARK_HIGH.with(AllocFlags::CPUSET);
    let page = get_page_from_freelist(k, ctx, last, order, flags);
    if page.is_some() {
        return (page, false);
    }
    // The OOM killer will not help higher order allocs, nor one that may fail or must stay
    // on its node.
    if order > PAGE_ALLOC_COSTLY_ORDER
        || gfp.contains(Gfp::RETRY_MAYFAIL)
        || gfp.contains(Gfp::THISNODE)
        || !gfp.contains(Gfp::FS)
    {
        return (None, false);
    }
    (None, out_of_memory(k, ctx, OomConstraint::None))
}

/// __alloc_pages_direct_reclaim: reclaim, then try the free lists; if that fails, drain the
/// per-CPU lists (pages may wait there) and try once more. Returns the page and the progress.
pub(super) fn alloc_pages_direct_reclaim(
    k: &mut Kernel,
    ctx: &mut Ctx,
    gfp: Gfp,
    order: u32,
    alloc_flags: AllocFlags,
) -> (Option<u32>, u64) {
    let progress = try_to_free_pages(k, ctx, gfp, order);
    (
        direct_reclaim_alloc(k, ctx, gfp, order, alloc_flags, progress),
        progress,
    )
}

/// __alloc_pages_direct_reclaim after __perform_reclaim made `progress`: the free lists, then
/// again after draining the per-CPU lists.
fn direct_reclaim_alloc(
    k: &mut Kernel,
    ctx: &mut Ctx,
    gfp: Gfp,
    order: u32,
    alloc_flags: AllocFlags,
    progress: u64,
) -> Option<u32> {
    if progress == 0 {
        return None;
    }
    let mut page = get_page_from_freelist(k, ctx, gfp, order, alloc_flags);
    if page.is_none() {
        // unreserve_highatomic_pageblock: the model reserves no highatomic blocks.
        drain_all_pages(k, ctx, gfp);
        page = get_page_from_freelist(k, ctx, gfp, order, alloc_flags);
    }
    page
}

/// __alloc_pages_direct_compact: compaction, then the free lists; `page` of the outcome is
/// the allocated block. compact_stall counts a run that was not skipped, and a deferred one
/// when `deferred_stalls` (6.18 counts it; 4.1 returned before counting);
/// compact_success / compact_fail its outcome.
pub(super) fn alloc_pages_direct_compact(
    k: &mut Kernel,
    ctx: &mut Ctx,
    gfp: Gfp,
    order: u32,
    alloc_flags: AllocFlags,
    prio: CompactPriority,
    deferred_stalls: bool,
) -> DirectCompaction {
    if order == 0 {
        return DirectCompaction::skipped();
    }
    let nid = k.alloc_nid(ctx);
    let mut dc = compaction::try_to_compact_pages(k, ctx, nid, gfp, order, alloc_flags, prio);
    if dc.result == CompactResult::Skipped
        || (dc.result == CompactResult::Deferred && !deferred_stalls)
    {
        return dc;
    }
    k.vmstat.count(VmEvent::CompactStall, 1);
    let page = dc
        .page
        .or_else(|| get_page_from_freelist(k, ctx, gfp, order, alloc_flags));
    if let Some(pfn) = page {
        compaction::compaction_alloc_succeeded(k, pfn, order);
        k.vmstat.count(VmEvent::CompactSuccess, 1);
    } else {
        k.vmstat.count(VmEvent::CompactFail, 1);
    }
    dc.page = page;
    dc
}

/// drain_all_pages for the zones reclaim works on (the zonelist's nodes with CPUs).
fn drain_all_pages(k: &mut Kernel, ctx: &mut Ctx, gfp: Gfp) {
    let nid = k.alloc_nid(ctx);
    for zone_nid in k.nodes.reclaim_zonelist_vec(nid, gfp, k.alloc_nodemask()) {
        k.pgdat[zone_nid].zone.drain_all_pages(ctx);
    }
}

/// zone_reclaimable_pages: node `nid`'s file LRU pages, and the anon ones when there is swap
/// or a lower tier (can_reclaim_anon_pages) to reclaim them to.
pub fn zone_reclaimable_pages(k: &Kernel, nid: usize) -> u64 {
    let swap = k.swap.nr_swap_pages() > 0 || crate::mm::numa_balancing::can_demote(k, nid);
    k.memcgs
        .iter()
        .map(|cg| {
            let lv = cg.lruvec_of(nid);
            let anon = lv.lru_pages(false, false) + lv.lru_pages(false, true);
            lv.lru_pages(true, false) + lv.lru_pages(true, true) + if swap { anon } else { 0 }
        })
        .sum()
}

/// should_reclaim_retry: retry while reclaim progresses (costly orders never count as
/// progress), at most MAX_RECLAIM_RETRIES rounds without it, and only while reclaiming
/// everything reclaimable could meet the min watermark at this order.
fn should_reclaim_retry(
    k: &Kernel,
    nid: usize,
    order: u32,
    alloc_flags: AllocFlags,
    did_some_progress: bool,
    no_progress_loops: &mut u32,
) -> bool {
    if did_some_progress && order <= PAGE_ALLOC_COSTLY_ORDER {
        *no_progress_loops = 0;
    } else {
        *no_progress_loops += 1;
    }
    if *no_progress_loops > MAX_RECLAIM_RETRIES {
        // unreserve_highatomic_pageblock(force): nothing reserved in the model.
        return false;
    }
    // Any zone of node `nid`'s zonelist that could meet its min watermark with everything
    // reclaimed.
    k.nodes
        .reclaim_zonelist(nid, Gfp(0), k.alloc_nodemask())
        .any(|n| {
            let zone = &k.pgdat[n].zone;
            let available = zone_reclaimable_pages(k, n) + zone.nr_free_pages();
            let min = zone.wmark_pages(Wmark::Min);
            zone_watermark_ok(zone.free_area(), order, min, alloc_flags, available as i64)
        })
}

/// should_compact_retry (CONFIG_COMPACTION).
fn should_compact_retry(
    k: &Kernel,
    nid: usize,
    order: u32,
    result: CompactResult,
    priority: &mut CompactPriority,
    retries: &mut u32,
) -> bool {
    if order == 0 {
        return false;
    }
    if result == CompactResult::Skipped {
        // Not enough free pages to migrate into: retry if reclaim could change that.
        return compaction::compaction_zonelist_suitable(k, nid, Gfp(0), order);
    }
    if result == CompactResult::Success {
        // Raced with another allocation: retry a few times (costly: a quarter as many).
        let max = if order > PAGE_ALLOC_COSTLY_ORDER {
            MAX_COMPACT_RETRIES / 4
        } else {
            MAX_COMPACT_RETRIES
        };
        *retries += 1;
        if *retries <= max {
            return true;
        }
    }
    // Compaction failed: retry at the next priority, down to the lowest allowed.
    let min = if order > PAGE_ALLOC_COSTLY_ORDER {
        MIN_COMPACT_COSTLY_PRIORITY
    } else {
        MIN_COMPACT_PRIORITY
    };
    if *priority > min {
        *priority = match *priority {
            CompactPriority::Async => CompactPriority::SyncLight,
            _ => CompactPriority::SyncFull,
        };
        *retries = 0;
        return true;
    }
    false
}
