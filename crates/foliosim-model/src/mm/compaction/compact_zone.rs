//! compact_zone (mm/compaction.c): one compaction run over the zone: isolate a batch of folios,
//! migrate them into free pages taken from the other end, until the scanners meet, the wanted
//! order is free, or a block is captured.

use super::fragmentation::{fragmentation_score_wmark, fragmentation_score_zone};
use super::free_scanner::release_free_list;
use super::migrate_scanner::{isolate_migratepages, IsolateMigrate};
use super::suitable::compaction_suit_allocation_order;
use super::{pageblock_start_pfn, CompactControl, CompactResult};
use crate::engine::Ctx;
use crate::mm::migrate::{migrate_pages, putback_movable_pages, MigrateMode, MigrateReason};
use crate::mm::page_alloc::migratetype::PAGEBLOCK_NR_PAGES;
use crate::mm::page_alloc::watermark::Wmark;
use crate::mm::page_alloc::MAX_PAGE_ORDER;
use crate::mm::vmstat::VmEvent;
use crate::mm::Kernel;
use crate::scenario::PMD_ORDER;

/// compact_scanners_met: the free scanner is at or below the migrate scanner's pageblock.
fn compact_scanners_met(cc: &CompactControl) -> bool {
    cc.free_pfn / PAGEBLOCK_NR_PAGES <= cc.migrate_pfn / PAGEBLOCK_NR_PAGES
}

/// __compact_finished.
fn compact_finished_inner(k: &mut Kernel, cc: &CompactControl) -> CompactResult {
    if compact_scanners_met(cc) {
        // The next run starts anew; after a direct compaction, kswapd clears the skip bits
        // when it next sleeps (kcompactd leaves that decision to allocation requests).
        let pgdat = &mut k.pgdat[cc.nid];
        pgdat
            .compact
            .reset_cached_positions(pgdat.zone.start_pfn, pgdat.zone.nr_pages);
        if cc.direct_compaction {
            k.pgdat[cc.nid].compact.blockskip_flush = true;
        }
        return if cc.whole_zone {
            CompactResult::Complete
        } else {
            CompactResult::PartialSkipped
        };
    }
    let ret = if cc.proactive_compaction {
        if k.pgdat[cc.nid].kswapd.woken {
            return CompactResult::PartialSkipped;
        }
        let score = fragmentation_score_zone(k.pgdat[cc.nid].zone.free_area());
        if score > fragmentation_score_wmark(&k.compaction, true) {
            CompactResult::Continue
        } else {
            CompactResult::Success
        }
    } else {
        if cc.is_via_compact_memory() {
            return CompactResult::Continue;
        }
        // Always finish the pageblock being scanned (fewer fallbacks later).
        if !cc.migrate_pfn.is_multiple_of(PAGEBLOCK_NR_PAGES) {
            return CompactResult::Continue;
        }
        if k.cfg.compaction_era.finish_at_low_watermark
            && !k.pgdat[cc.nid].zone.watermark_ok(
                cc.order as u32,
                k.pgdat[cc.nid].zone.wmark_pages(Wmark::Low),
                cc.alloc_flags,
            )
        {
            return CompactResult::Continue;
        }
        let area = k.pgdat[cc.nid].zone.free_area();
        let mt = cc.migratetype;
        for order in cc.order as u32..=MAX_PAGE_ORDER {
            // Free at this order on the request's own lists, or claimable from another type.
            if !area.free_area_empty(order, mt)
                || k.pgdat[cc.nid].zone.has_claimable_fallback(order, mt)
            {
                return CompactResult::Success;
            }
        }
        CompactResult::NoSuitablePage
    };
    if cc.contended.is_contended() {
        return CompactResult::Contended;
    }
    ret
}

/// compact_finished: NoSuitablePage means go on.
fn compact_finished(k: &mut Kernel, cc: &CompactControl) -> CompactResult {
    match compact_finished_inner(k, cc) {
        CompactResult::NoSuitablePage => CompactResult::Continue,
        ret => ret,
    }
}

/// compact_zone: run compaction as `cc` says. `capture`: a capture_control is installed, so
/// the run stops once it holds a block.
// Follows compact_zone() in mm/compaction.c, one loop with its exits; a cut would hide them.
#[allow(clippy::too_many_lines)]
pub fn compact_zone(
    k: &mut Kernel,
    ctx: &mut Ctx,
    cc: &mut CompactControl,
    capture: bool,
) -> CompactResult {
    let zone = &k.pgdat[cc.nid].zone;
    let (start_pfn, end_pfn) = (zone.start_pfn, zone.start_pfn + zone.nr_pages);
    let sync = cc.mode != MigrateMode::Async;
    cc.total_migrate_scanned = 0;
    cc.total_free_scanned = 0;
    cc.nr_migratepages = 0;
    cc.nr_freepages = 0;
    cc.fast_start_pfn = 0;
    if !cc.is_via_compact_memory() {
        let ret = compaction_suit_allocation_order(
            &k.pgdat[cc.nid].zone,
            &k.compaction,
            cc.order as u32,
            cc.alloc_flags,
            cc.mode == MigrateMode::Async,
        );
        if ret != CompactResult::Continue {
            return ret;
        }
    }
    // Retried after the longest deferral: the skip bits may be stale.
    if k.pgdat[cc.nid].compact.compaction_restarting(cc.order) {
        super::skip::reset_isolation_suitable(k, ctx, cc.nid);
    }
    let z = &mut k.pgdat[cc.nid].compact;
    if cc.whole_zone {
        cc.migrate_pfn = start_pfn;
        cc.free_pfn = pageblock_start_pfn(end_pfn - 1);
    } else {
        cc.migrate_pfn = z.cached_migrate_pfn[sync as usize];
        cc.free_pfn = z.cached_free_pfn;
        if cc.free_pfn < start_pfn || cc.free_pfn >= end_pfn {
            cc.free_pfn = pageblock_start_pfn(end_pfn - 1);
            z.cached_free_pfn = cc.free_pfn;
        }
        if cc.migrate_pfn < start_pfn || cc.migrate_pfn >= end_pfn {
            cc.migrate_pfn = start_pfn;
            z.cached_migrate_pfn = [start_pfn; 2];
        }
        if cc.migrate_pfn <= z.init_migrate_pfn {
            cc.whole_zone = true;
        }
    }
    // The pageblock migrated from last (0 in the kernel: none).
    let mut last_migrated_pfn: Option<u32> = None;
    // Until a block with candidates is found, async runs keep the sync position in step.
    let mut update_cached = !sync && z.cached_migrate_pfn[0] == z.cached_migrate_pfn[1];
    let ret = 'run: loop {
        let ret = compact_finished(k, cc);
        if ret != CompactResult::Continue {
            break ret;
        }
        let iteration_start_pfn = cc.migrate_pfn;
        // A block migrated from and scanned again is finished this time (then marked skip).
        cc.finish_pageblock = k.cfg.compaction_era.finish_pageblock
            && last_migrated_pfn.is_some_and(|l| {
                pageblock_start_pfn(l) == pageblock_start_pfn(iteration_start_pfn)
            });
        loop {
            match isolate_migratepages(k, ctx, cc) {
                IsolateMigrate::None => {
                    if update_cached {
                        let z = &mut k.pgdat[cc.nid].compact;
                        z.cached_migrate_pfn[1] = z.cached_migrate_pfn[0];
                    }
                    break;
                }
                IsolateMigrate::Abort => {
                    let list = std::mem::take(&mut cc.migratepages);
                    putback_movable_pages(k, ctx, &list);
                    cc.nr_migratepages = 0;
                    break 'run CompactResult::Contended;
                }
                IsolateMigrate::Success => {
                    update_cached = false;
                    last_migrated_pfn = Some(pageblock_start_pfn(cc.migrate_pfn - 1));
                }
            }
            let mut list = std::mem::take(&mut cc.migratepages);
            let mode = cc.mode;
            let (rc, _) = migrate_pages(k, ctx, &mut list, cc, mode, MigrateReason::Compaction);
            cc.nr_migratepages = 0;
            if !list.is_empty() {
                putback_movable_pages(k, ctx, &list);
            }
            if let Err(e) = rc {
                debug_assert_eq!(e, crate::mm::migrate::MigrateError::NoMemory);
                // Out of targets before the scanners met.
                if !compact_scanners_met(cc) {
                    break 'run CompactResult::Contended;
                }
            }
            let failed = rc != Ok(0);
            // A partial failure in a block not finished: rescan the rest of it once (it is
            // then marked skip) rather than come back to it.
            if failed
                && !cc.migrate_pfn.is_multiple_of(PAGEBLOCK_NR_PAGES)
                && !cc.ignore_skip_hint
                && !cc.finish_pageblock
                && cc.mode < MigrateMode::Sync
                && k.cfg.compaction_era.finish_pageblock
            {
                cc.finish_pageblock = true;
                // A failed page in the block: draining will not make a THP of it.
                if cc.order == PMD_ORDER as i32 {
                    last_migrated_pfn = None;
                }
                continue;
            }
            if capture && k.pgdat[cc.nid].zone.captured() {
                break 'run CompactResult::Success;
            }
            break;
        }
        // check_drain: the migrate scanner left the order-aligned block it migrated from:
        // drain this CPU's lists so the freed pages merge (and compact_finished sees them).
        if cc.order > 0 {
            if let Some(last) = last_migrated_pfn {
                let current_block_start = cc.migrate_pfn & !((1u32 << cc.order) - 1);
                if last < current_block_start {
                    k.pgdat[cc.nid].zone.drain_local_pages(ctx);
                    last_migrated_pfn = None;
                }
            }
        }
    };
    // Release the free pages left isolated; the free scanner may restart up there.
    if cc.nr_freepages > 0 {
        let free_pfn = pageblock_start_pfn(release_free_list(&mut k.pgdat[cc.nid].zone, ctx, cc));
        let z = &mut k.pgdat[cc.nid].compact;
        if free_pfn > z.cached_free_pfn {
            z.cached_free_pfn = free_pfn;
        }
    }
    k.vmstat
        .count(VmEvent::CompactMigrateScanned, cc.total_migrate_scanned);
    k.vmstat
        .count(VmEvent::CompactFreeScanned, cc.total_free_scanned);
    debug_assert!(cc.migratepages.is_empty());
    ret
}
