//! The free scanner (mm/compaction.c): migration targets are free blocks isolated high in the
//! zone. A short search of the movable free lists comes first (fast_isolate_freepages, for a
//! block in the top quarter of the range left between the scanners, and the free pages of its
//! pageblock); then the linear scan, from the zone's end down towards the migrate scanner, of
//! movable pageblocks (isolate_freepages). compaction_alloc hands the isolated blocks out.

use super::skip::{isolation_suitable, update_pageblock_skip};
use super::{
    pageblock_end_pfn, pageblock_start_pfn, CompactControl, Contended, COMPACT_CLUSTER_MAX,
};
use crate::cpu_cost::CpuCost;
use crate::engine::Ctx;
use crate::mm::folio::flags;
use crate::mm::migrate::MigrateMode;
use crate::mm::mmzone::PgData;
use crate::mm::page_alloc::buddy::NR_PAGE_ORDERS;
use crate::mm::page_alloc::migratetype::{MigrateType, PAGEBLOCK_NR_PAGES, PAGEBLOCK_ORDER};
use crate::mm::page_alloc::Zone;
use crate::mm::vmstat::VmEvent;
use crate::mm::Kernel;

/// suitable_migration_target: may the free scanner take pages from the pageblock starting at
/// `pfn`? Not if it starts with a free block of the wanted order (that is the goal, not a
/// target); otherwise only movable pageblocks (any with ignore_block_suitable).
fn suitable_migration_target(zone: &Zone, cc: &CompactControl, pfn: u32) -> bool {
    if let Some(order) = zone.free_area().buddy_order(pfn) {
        let wanted = if cc.order > 0 {
            cc.order as u32
        } else {
            PAGEBLOCK_ORDER
        };
        if order >= wanted {
            return false;
        }
    }
    cc.ignore_block_suitable || zone.pageblock_mt(pfn) == MigrateType::Movable
}

/// isolate_freepages_block: isolate the free blocks of [*start, end) every `stride` pfns
/// until there are as many free pages as pages to migrate. Advances `start` to where it
/// stopped. Returns the pages isolated.
fn isolate_freepages_block(
    k: &mut Kernel,
    ctx: &mut Ctx,
    cc: &mut CompactControl,
    start: &mut u32,
    end: u32,
    stride: u32,
) -> u32 {
    let mut pfn = *start;
    let (mut nr_scanned, mut total_isolated, mut blocks) = (0u64, 0u32, 0u64);
    while pfn < end {
        if pfn.is_multiple_of(COMPACT_CLUSTER_MAX) && cc.should_abort(&k.cfg, ctx) {
            break;
        }
        nr_scanned += 1;
        ctx.spend(CpuCost::CompactScan, k.cost.compact_scan_pfn_ns);
        let f = &k.folios;
        if f.test(pfn, flags::ALLOCATED) && f.order[pfn as usize] > 0 {
            // A large folio: skip it at once.
            let nr = f.nr_pages(pfn);
            if pfn + nr <= end {
                pfn += nr - 1;
                nr_scanned += nr as u64 - 1;
            }
            pfn += stride;
            continue;
        }
        let Some(order) = k.pgdat[cc.nid].zone.free_area().buddy_order(pfn) else {
            pfn += stride;
            continue;
        };
        let isolated = k.pgdat[cc.nid].zone.isolate_free_page(pfn, order);
        // isolate_freepages_block ends with MIGRC's check (check_flush_task_mgen).
        crate::mm::migrate::flush::migrc::check_flush_task_mgen(k, ctx);
        if isolated == 0 {
            // Below the min watermark: stop.
            break;
        }
        blocks += 1;
        nr_scanned += isolated as u64 - 1;
        total_isolated += isolated;
        cc.nr_freepages += isolated;
        cc.freepages[order as usize].push_back(pfn);
        if cc.nr_migratepages <= cc.nr_freepages {
            pfn += isolated;
            break;
        }
        pfn += isolated - 1 + stride;
    }
    if blocks > 0 {
        // One zone->lock hold for the block's isolations; an async compactor notes a wait.
        let ns = k.cost.compact_isolate_free_ns * blocks;
        if k.pgdat[cc.nid].zone.compact_lock(ctx, ns) && cc.mode == MigrateMode::Async {
            cc.contended = Contended::Lock;
        }
    }
    *start = pfn.min(end);
    cc.total_free_scanned += nr_scanned;
    if total_isolated > 0 {
        k.vmstat
            .count(VmEvent::CompactIsolated, total_isolated as u64);
    }
    total_isolated
}

/// next_search_order: the next free list order to search, round robin below cc.order; None
/// once the search wrapped around to where it started.
fn next_search_order(cc: &mut CompactControl, order: i32) -> Option<i32> {
    let mut order = order - 1;
    if order < 0 {
        order = cc.order - 1;
    }
    if order == cc.search_order {
        cc.search_order -= 1;
        if cc.search_order < 0 {
            cc.search_order = cc.order - 1;
        }
        return None;
    }
    Some(order)
}

/// fast_isolate_freepages: look through the tails of the movable free lists (orders below the
/// target, round robin from the last order that worked) for a block in the top quarter of
/// the range left between the scanners (top half if that fails), isolate it and the free
/// pages around it in its pageblock. Each list is rotated so the next search sees other
/// blocks. Searches shorten after failures; the first search of a run looks deeper.
fn fast_isolate_freepages(k: &mut Kernel, ctx: &mut Ctx, cc: &mut CompactControl) {
    if cc.order <= 0 {
        return;
    }
    let mut limit = (cc.freelist_scan_limit() >> 1).max(1);
    let mut scan_start = false;
    if cc.free_pfn >= k.pgdat[cc.nid].compact.init_free_pfn {
        limit = PAGEBLOCK_NR_PAGES >> 1;
        scan_start = true;
    }
    let distance = cc.free_pfn.saturating_sub(cc.migrate_pfn);
    let min_pfn = pageblock_start_pfn(cc.free_pfn - (distance >> 1));
    let low_pfn = pageblock_start_pfn(cc.free_pfn - (distance >> 2)).max(min_pfn);
    cc.search_order = cc.search_order.min(cc.order - 1);
    let (mut nr_scanned, mut highest) = (0u64, 0u32);
    let mut page: Option<u32> = None;
    let mut order = Some(cc.search_order);
    while let Some(o) = order.filter(|&o| o >= 0 && page.is_none()) {
        let ou = o as u32;
        if k.pgdat[cc.nid].zone.free_area().nr_free(ou) == 0 {
            order = next_search_order(cc, o);
            continue;
        }
        let zone = &k.pgdat[cc.nid].zone;
        let tail = scan_free_list_tail(zone, ou, (low_pfn, min_pfn), &mut limit, &mut highest);
        nr_scanned += tail.scanned as u64;
        page = tail.page;
        let mut last_seen = tail.last_seen;
        if page.is_some() {
            cc.fast_search_fail = 0;
            cc.search_order = o;
        } else if tail.high_pfn > 0 {
            page = Some(tail.high_pfn);
            last_seen = page;
        }
        ctx.spend(
            CpuCost::CompactScan,
            k.cost.compact_scan_pfn_ns * tail.scanned as u64,
        );
        // Reorder so the next search starts with what this one did not see.
        if let Some(pfn) = last_seen {
            k.pgdat[cc.nid]
                .zone
                .rotate_free_list(ou, MigrateType::Movable, pfn, true);
        }
        // The order the loop goes on from (the search ends on an isolation failure).
        let mut from = o;
        if let Some(pfn) = page {
            let isolated = isolate_fast_block(k, ctx, cc, pfn, ou);
            if isolated > 0 {
                nr_scanned += isolated as u64 - 1;
            } else {
                // Below the watermark.
                from = cc.search_order + 1;
                page = None;
            }
        }
        k.pgdat[cc.nid]
            .zone
            .compact_lock(ctx, k.cost.compact_isolate_free_ns);
        if cc.nr_freepages >= cc.nr_migratepages {
            break;
        }
        if tail.scanned >= limit {
            limit = (limit >> 1).max(1);
        }
        order = next_search_order(cc, from);
    }
    cc.total_free_scanned += nr_scanned;
    if page.is_none() {
        page = fast_search_failed(&k.pgdat[cc.nid], cc, scan_start, highest, min_pfn);
    }
    let z = &mut k.pgdat[cc.nid].compact;
    if highest > 0 && highest >= z.cached_free_pfn {
        z.cached_free_pfn = highest - PAGEBLOCK_NR_PAGES;
    }
    if let Some(pfn) = page {
        fast_isolate_around(k, ctx, cc, pfn);
    }
}

/// What one look down a free list's tail found (fast_isolate_freepages' inner loop).
struct TailScan {
    scanned: u32,
    /// A block in the top quarter of the range: taken.
    page: Option<u32>,
    /// Else the highest block seen in the top half, or 0.
    high_pfn: u32,
    /// The last block looked at: the list is rotated to start after it.
    last_seen: Option<u32>,
}

/// The movable free list of `order`, from its tail: stop at the first block at or above
/// `low_pfn`; each new best block at or above `min_pfn` halves `limit`; `highest` keeps the
/// highest pageblock seen.
fn scan_free_list_tail(
    zone: &Zone,
    order: u32,
    (low_pfn, min_pfn): (u32, u32),
    limit: &mut u32,
    highest: &mut u32,
) -> TailScan {
    let mut tail = TailScan {
        scanned: 0,
        page: None,
        high_pfn: 0,
        last_seen: None,
    };
    let free_area = zone.free_area();
    for pfn in free_area.list_rev(order, MigrateType::Movable) {
        tail.scanned += 1;
        tail.last_seen = Some(pfn);
        if pfn >= *highest {
            *highest = pageblock_start_pfn(pfn);
        }
        if pfn >= low_pfn {
            tail.page = Some(pfn);
            break;
        }
        if pfn >= min_pfn && pfn > tail.high_pfn {
            tail.high_pfn = pfn;
            // A candidate: shorten the search.
            *limit >>= 1;
        }
        if tail.scanned >= *limit {
            break;
        }
    }
    tail
}

/// Isolate the free block the fast search chose; 0 when the watermark refuses it.
fn isolate_fast_block(
    k: &mut Kernel,
    ctx: &mut Ctx,
    cc: &mut CompactControl,
    pfn: u32,
    order: u32,
) -> u32 {
    let isolated = k.pgdat[cc.nid].zone.isolate_free_page(pfn, order);
    crate::mm::migrate::flush::migrc::check_flush_task_mgen(k, ctx);
    if isolated > 0 {
        cc.nr_freepages += isolated;
        cc.freepages[order as usize].push_back(pfn);
        k.vmstat.count(VmEvent::CompactIsolated, isolated as u64);
    }
    isolated
}

/// The fast search found nothing. If it was the first of a run, the linear scan starts at the
/// highest block seen above the half mark, or (direct compaction) at the half mark; returns
/// the block whose neighbours to isolate, if any.
fn fast_search_failed(
    pgdat: &PgData,
    cc: &mut CompactControl,
    scan_start: bool,
    highest: u32,
    min_pfn: u32,
) -> Option<u32> {
    cc.fast_search_fail += 1;
    let mut page = None;
    if !scan_start {
        return page;
    }
    if highest >= min_pfn {
        page = Some(highest);
        cc.free_pfn = highest;
    } else if cc.direct_compaction && min_pfn < pgdat.end_pfn() {
        if suitable_migration_target(&pgdat.zone, cc, min_pfn) {
            page = Some(min_pfn);
        }
        cc.free_pfn = min_pfn;
    }
    page
}

/// fast_isolate_around: isolate the free pages of the pageblock of `pfn` too (not in async
/// direct compaction, which minimises scanning); a pageblock emptied of them is marked skip.
fn fast_isolate_around(k: &mut Kernel, ctx: &mut Ctx, cc: &mut CompactControl, pfn: u32) {
    if cc.nr_freepages >= cc.nr_migratepages
        || (cc.direct_compaction && cc.mode == MigrateMode::Async)
    {
        return;
    }
    let mut start = pageblock_start_pfn(pfn);
    let end = pageblock_end_pfn(pfn).min(k.pgdat[cc.nid].end_pfn());
    isolate_freepages_block(k, ctx, cc, &mut start, end, 1);
    if start == end {
        k.pgdat[cc.nid].zone.set_pageblock_skip(pfn, true);
    }
}

/// isolate_freepages: a search of the free lists first; failing that, walk pageblocks down
/// from the free scanner's position to the migrate scanner's block, isolating until there are
/// enough targets. Runs look at every 32nd pfn of blocks that give nothing (async from the
/// start), back to every pfn once they find pages.
pub(super) fn isolate_freepages(k: &mut Kernel, ctx: &mut Ctx, cc: &mut CompactControl) {
    if k.cfg.compaction_era.fast_search {
        fast_isolate_freepages(k, ctx, cc);
        if cc.nr_freepages > 0 {
            return;
        }
    }
    let zone_end = k.pgdat[cc.nid].end_pfn();
    let mut isolate_start = cc.free_pfn;
    let mut block_start = pageblock_start_pfn(isolate_start) as i64;
    let mut block_end = (block_start as u32 + PAGEBLOCK_NR_PAGES).min(zone_end);
    let low_pfn = pageblock_end_pfn(cc.migrate_pfn) as i64;
    let mut stride = if k.cfg.compaction_era.free_stride && cc.mode == MigrateMode::Async {
        COMPACT_CLUSTER_MAX
    } else {
        1
    };
    while block_start >= low_pfn {
        let block = block_start as u32;
        if block.is_multiple_of(COMPACT_CLUSTER_MAX * PAGEBLOCK_NR_PAGES)
            && cc.should_abort(&k.cfg, ctx)
        {
            break;
        }
        let zone = &k.pgdat[cc.nid].zone;
        if suitable_migration_target(zone, cc, block) && isolation_suitable(zone, cc, block) {
            let nr_isolated =
                isolate_freepages_block(k, ctx, cc, &mut isolate_start, block_end, stride);
            if isolate_start == block_end {
                update_pageblock_skip(&mut k.pgdat[cc.nid], block, block - PAGEBLOCK_NR_PAGES);
            }
            if cc.nr_freepages >= cc.nr_migratepages || cc.contended == Contended::Sched {
                if isolate_start >= block_end {
                    // Resume at the block below next time: this one may hold more.
                    isolate_start = block - PAGEBLOCK_NR_PAGES;
                }
                break;
            } else if isolate_start < block_end {
                // Isolation failed early (the watermark): do not go on.
                break;
            }
            if k.cfg.compaction_era.free_stride {
                stride = if nr_isolated > 0 {
                    1
                } else {
                    (stride << 1).min(COMPACT_CLUSTER_MAX)
                };
            }
        }
        block_end = block;
        block_start -= PAGEBLOCK_NR_PAGES as i64;
        isolate_start = block_start.max(0) as u32;
    }
    cc.free_pfn = isolate_start;
}

/// compaction_alloc: a target block for a folio of `order`, from the isolated free pages (the
/// smallest list that fits, split down), isolating more once if there are none.
pub(super) fn compaction_alloc(
    k: &mut Kernel,
    ctx: &mut Ctx,
    cc: &mut CompactControl,
    order: u32,
) -> Option<u32> {
    let mut isolated_more = false;
    loop {
        let found = (order as usize..NR_PAGE_ORDERS).find(|&o| !cc.freepages[o].is_empty());
        let Some(mut start_order) = found else {
            if isolated_more || cc.contended == Contended::Sched {
                return None;
            }
            isolate_freepages(k, ctx, cc);
            isolated_more = true;
            continue;
        };
        let pfn = cc.freepages[start_order].pop_front().unwrap();
        while start_order > order as usize {
            start_order -= 1;
            cc.freepages[start_order].push_front(pfn + (1 << start_order));
        }
        cc.nr_freepages -= 1 << order;
        cc.nr_migratepages -= 1 << order;
        return Some(pfn);
    }
}

/// compaction_free: an unused target goes back to the isolated free pages.
pub(super) fn compaction_free(cc: &mut CompactControl, pfn: u32, order: u32) {
    cc.freepages[order as usize].push_front(pfn);
    cc.nr_freepages += 1 << order;
    cc.nr_migratepages += 1 << order;
}

/// release_free_list: the free pages left isolated go back to the allocator. Returns the
/// highest pfn released.
pub(super) fn release_free_list(zone: &mut Zone, ctx: &mut Ctx, cc: &mut CompactControl) -> u32 {
    let mut high_pfn = 0;
    for order in 0..NR_PAGE_ORDERS {
        for pfn in std::mem::take(&mut cc.freepages[order]) {
            zone.free(ctx, pfn, order as u32);
            high_pfn = high_pfn.max(pfn);
        }
    }
    cc.nr_freepages = 0;
    high_pfn
}
