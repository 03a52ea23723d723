//! __alloc_pages_slowpath as 4.1 has it (mm/page_alloc.c, v4.1), for seed 001's kernel.
//!
//! One pass: wake kswapd, try the min watermark, compact (async at first), reclaim, then
//! either loop (orders up to PAGE_ALLOC_COSTLY_ORDER, while reclaim progresses) or compact
//! once more and give up. A THP request (is_thp_gfp_mask: GFP_TRANSHUGE, __GFP_NORETRY
//! included) gives up before reclaim when compaction is deferred or was contended; a fault
//! compacts async only, khugepaged (a kernel thread) sync-light after reclaim. Without
//! should_reclaim_retry, compaction priorities and should_compact_retry (4.7's rework).

use super::slowpath::get_page_from_freelist;
use super::slowpath::{
    alloc_pages_direct_compact, alloc_pages_direct_reclaim, alloc_pages_may_oom,
    gfp_pfmemalloc_flags, gfp_to_alloc_flags, wake_all_kswapds, Slowpath,
};
use super::watermark::AllocFlags;
use super::PAGE_ALLOC_COSTLY_ORDER;
use crate::engine::Ctx;
use crate::mm::compaction::{CompactPriority, CompactResult, Contended};
use crate::mm::gfp::Gfp;
use crate::mm::Kernel;

pub struct SlowpathV4_1;

/// is_thp_gfp_mask: every bit of 4.1's GFP_TRANSHUGE, which had __GFP_NORETRY and
/// __GFP_NO_KSWAPD (no __GFP_KSWAPD_RECLAIM here).
fn is_thp_gfp_mask(gfp: Gfp) -> bool {
    gfp.contains(Gfp::GFP_TRANSHUGE.noretry()) && !gfp.contains(Gfp::KSWAPD_RECLAIM)
}

/// should_alloc_retry: never with __GFP_NORETRY; always for orders up to
/// PAGE_ALLOC_COSTLY_ORDER; costly ones only with __GFP_REPEAT (the model has no caller
/// that sets it).
fn should_alloc_retry(gfp: Gfp, order: u32) -> bool {
    !gfp.contains(Gfp::NORETRY) && order <= PAGE_ALLOC_COSTLY_ORDER
}

impl Slowpath for SlowpathV4_1 {
    fn alloc_pages_slowpath(
        &self,
        k: &mut Kernel,
        ctx: &mut Ctx,
        gfp: Gfp,
        order: u32,
    ) -> Option<u32> {
        assert!(
            !gfp.contains(Gfp::NOFAIL),
            "__GFP_NOFAIL is not modelled: no caller of the model may need it"
        );
        let is_thp = is_thp_gfp_mask(gfp);
        let kthread = k.kthreads.current(ctx.cpu).is_some();
        let mut migration_mode = CompactPriority::Async;
        let alloc_flags = gfp_to_alloc_flags(gfp, order);
        if alloc_flags.has(AllocFlags::KSWAPD) {
            wake_all_kswapds(k, ctx, gfp, order);
        }
        loop {
            // rebalance:
            if let Some(pfn) = get_page_from_freelist(k, ctx, gfp, order, alloc_flags) {
                return Some(pfn);
            }
            // __alloc_pages_high_priority for __GFP_MEMALLOC.
            if let Some(reserve) = gfp_pfmemalloc_flags(gfp) {
                let page = get_page_from_freelist(k, ctx, gfp, order, reserve);
                if page.is_some() {
                    return page;
                }
            }
            if !gfp.allow_blocking() {
                return None;
            }
            let dc =
                alloc_pages_direct_compact(k, ctx, gfp, order, alloc_flags, migration_mode, false);
            if dc.page.is_some() {
                return dc.page;
            }
            if is_thp {
                // Sync compaction failed recently: do not disrupt the system with reclaim.
                if dc.result == CompactResult::Deferred || dc.contended == Contended::Lock {
                    return None;
                }
                // A fault asked to reschedule does not add reclaim to its latency.
                if dc.contended == Contended::Sched && !kthread {
                    return None;
                }
            }
            // THP faults stay async; everything else, khugepaged included, syncs lightly.
            if !is_thp || kthread {
                migration_mode = CompactPriority::SyncLight;
            }
            let (page, progress) = alloc_pages_direct_reclaim(k, ctx, gfp, order, alloc_flags);
            if page.is_some() {
                return page;
            }
            if should_alloc_retry(gfp, order) {
                if progress == 0 {
                    // Reclaim made no progress: the OOM killer, then retry if it killed.
                    let (page, did_some_progress) = alloc_pages_may_oom(k, ctx, gfp, order);
                    if page.is_some() || !did_some_progress {
                        return page;
                    }
                }
                // wait_iff_congested: the model has no congestion to wait for.
                continue;
            }
            // Costly and __GFP_NORETRY requests compact once more after reclaim.
            return alloc_pages_direct_compact(
                k,
                ctx,
                gfp,
                order,
                alloc_flags,
                migration_mode,
                false,
            )
            .page;
        }
    }
}
