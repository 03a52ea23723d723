//! The migrate scanner (mm/compaction.c): from the zone's start up towards the free scanner,
//! isolate movable folios from the LRU a pageblock at a time (isolate_migratepages), at most
//! COMPACT_CLUSTER_MAX pages per batch. Async direct compaction only scans pageblocks of the
//! request's migratetype and gives up on an order-aligned chunk at its first unmovable page
//! (nothing of that chunk can become free). For costly orders, a pageblock to start from is
//! first looked for on the free lists (fast_find_migrateblock: one that already has free
//! pages needs fewer migrations to be emptied).

use super::skip::{
    isolation_suitable, pageblock_skip_persistent, test_and_set_skip, update_cached_migrate,
};
use super::{
    pageblock_end_pfn, pageblock_start_pfn, CompactControl, Contended, COMPACT_CLUSTER_MAX,
};
use crate::cpu_cost::CpuCost;
use crate::engine::Ctx;
use crate::mm::folio::{flags, FolioTable};
use crate::mm::migrate::{folio_isolate_lru, putback_movable_pages, MigrateMode};
use crate::mm::page_alloc::migratetype::{MigrateType, PAGEBLOCK_NR_PAGES, PAGEBLOCK_ORDER};
use crate::mm::page_alloc::PAGE_ALLOC_COSTLY_ORDER;
use crate::mm::vmstat::VmEvent;
use crate::mm::Kernel;

/// isolate_migrate_t. The model never has too many pages isolated (too_many_isolated) and no
/// task gets a fatal signal.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum IsolateMigrate {
    /// Nothing isolated: go on scanning.
    None,
    /// Folios isolated: migrate them.
    Success,
    /// Before 5.1: an async run was asked to reschedule; what was isolated goes back.
    Abort,
}

/// suitable_migration_source: may the migrate scanner take folios from the pageblock of
/// `pfn`? Not from one a folio of pageblock size fills; async direct compaction only from
/// pageblocks of its own migratetype.
fn suitable_migration_source(k: &Kernel, cc: &CompactControl, pfn: u32) -> bool {
    if pageblock_skip_persistent(&k.folios, pfn) {
        return false;
    }
    if cc.mode != MigrateMode::Async || !cc.direct_compaction {
        return true;
    }
    k.pgdat[cc.nid].zone.pageblock_mt(pfn) == cc.migratetype
}

/// skip_isolation_on_order: folios of the target order or above are not worth moving (the
/// allocation would have found a free one); nor are those of a pageblock or more.
fn skip_isolation_on_order(order: u32, target_order: i32) -> bool {
    (target_order >= 0 && order as i32 >= target_order) || order >= PAGEBLOCK_ORDER
}

/// block_end_pfn: the end of the `order`-aligned block holding `pfn`.
fn block_end_pfn(pfn: u32, order: i32) -> u32 {
    let size = 1u32 << order.max(0);
    (pfn + 1).next_multiple_of(size)
}

/// update_fast_start_pfn: remember the lowest block the fast search jumped to.
fn update_fast_start_pfn(cc: &mut CompactControl, pfn: u32) {
    if cc.fast_start_pfn == u32::MAX {
        return;
    }
    if cc.fast_start_pfn == 0 {
        cc.fast_start_pfn = pfn;
    }
    cc.fast_start_pfn = cc.fast_start_pfn.min(pfn);
}

/// reinit_migrate_pfn: after a failed fast search, go on linearly from the lowest block a
/// fast search found (once), else from where the scanner is.
fn reinit_migrate_pfn(cc: &mut CompactControl) -> u32 {
    if cc.fast_start_pfn == 0 || cc.fast_start_pfn == u32::MAX {
        return cc.migrate_pfn;
    }
    cc.migrate_pfn = cc.fast_start_pfn;
    cc.fast_start_pfn = u32::MAX;
    cc.migrate_pfn
}

/// fast_find_migrateblock: for a costly order at the start of a pageblock, look at the heads
/// of the movable free lists (orders below the target, down to PAGE_ALLOC_COSTLY_ORDER) for a
/// free block in the first part of the range between the scanners (the first half when the
/// scanner starts, an eighth later) whose pageblock is not marked skip: that pageblock needs
/// the fewest migrations to be emptied. The list is rotated so the next search sees others.
fn fast_find_migrateblock(k: &mut Kernel, ctx: &mut Ctx, cc: &mut CompactControl) -> u32 {
    let pfn = cc.migrate_pfn;
    if !k.cfg.compaction_era.fast_search
        || cc.ignore_skip_hint
        || cc.finish_pageblock
        || !pfn.is_multiple_of(PAGEBLOCK_NR_PAGES)
        || cc.order <= PAGE_ALLOC_COSTLY_ORDER as i32
        || (cc.direct_compaction && cc.migratetype != MigrateType::Movable)
    {
        return pfn;
    }
    let limit = cc.freelist_scan_limit();
    let mut distance = cc.free_pfn.saturating_sub(cc.migrate_pfn) >> 1;
    if cc.migrate_pfn != k.pgdat[cc.nid].zone.start_pfn {
        distance >>= 2;
    }
    let high_pfn = pageblock_start_pfn(cc.migrate_pfn + distance);
    let mut nr_scanned = 0u32;
    let mut found: Option<(u32, u32)> = None;
    let mut order = cc.order - 1;
    while order >= PAGE_ALLOC_COSTLY_ORDER as i32 && found.is_none() && nr_scanned < limit {
        let o = order as u32;
        order -= 1;
        if k.pgdat[cc.nid].zone.free_area().nr_free(o) == 0 {
            continue;
        }
        let mut rotate_after: Option<u32> = None;
        for free_pfn in k.pgdat[cc.nid]
            .zone
            .free_area()
            .list(o, MigrateType::Movable)
        {
            let over = nr_scanned >= limit;
            nr_scanned += 1;
            if over {
                rotate_after = Some(free_pfn);
                break;
            }
            if free_pfn < high_pfn {
                // Skip blocks skipped recently.
                if k.pgdat[cc.nid].zone.pageblock_skip(free_pfn) {
                    continue;
                }
                rotate_after = Some(free_pfn);
                found = Some((o, free_pfn));
                break;
            }
        }
        k.pgdat[cc.nid].zone.compact_lock(ctx, 0);
        if let Some(free_pfn) = rotate_after {
            k.pgdat[cc.nid]
                .zone
                .rotate_free_list(o, MigrateType::Movable, free_pfn, false);
        }
    }
    ctx.spend(
        CpuCost::CompactScan,
        k.cost.compact_scan_pfn_ns * nr_scanned as u64,
    );
    cc.total_migrate_scanned += nr_scanned as u64;
    match found {
        Some((_, free_pfn)) => {
            update_fast_start_pfn(cc, free_pfn);
            cc.fast_search_fail = 0;
            pageblock_start_pfn(free_pfn)
        }
        None => {
            cc.fast_search_fail += 1;
            reinit_migrate_pfn(cc)
        }
    }
}

/// isolate_migratepages: isolate from the first suitable pageblock at or after the migrate
/// scanner (or the block the fast search found), not crossing the free scanner.
pub(super) fn isolate_migratepages(
    k: &mut Kernel,
    ctx: &mut Ctx,
    cc: &mut CompactControl,
) -> IsolateMigrate {
    let mut low_pfn = fast_find_migrateblock(k, ctx, cc);
    // The fast search checked the skip bit already.
    let mut fast_find_block = low_pfn != cc.migrate_pfn && cc.fast_search_fail == 0;
    let mut block_start = pageblock_start_pfn(low_pfn);
    let mut block_end = pageblock_end_pfn(low_pfn);
    while block_end <= cc.free_pfn {
        // The skip bit is checked once per block, at its start.
        let at_block_start = low_pfn.is_multiple_of(PAGEBLOCK_NR_PAGES);
        let skipped = at_block_start
            && !fast_find_block
            && !isolation_suitable(&k.pgdat[cc.nid].zone, cc, block_start);
        fast_find_block = false;
        if !skipped {
            if suitable_migration_source(k, cc, block_start) {
                isolate_migratepages_block(k, ctx, cc, low_pfn, block_end);
                if cc.contended == Contended::Sched {
                    return IsolateMigrate::Abort;
                }
                break;
            }
            update_cached_migrate(&mut k.pgdat[cc.nid].compact, cc, block_end);
        }
        low_pfn = block_end;
        cc.migrate_pfn = block_end;
        block_start = block_end;
        block_end += PAGEBLOCK_NR_PAGES;
    }
    if cc.nr_migratepages > 0 {
        IsolateMigrate::Success
    } else {
        IsolateMigrate::None
    }
}

/// Why a page could not be isolated.
enum Fail {
    /// One page.
    Page,
    /// A folio too large to move: skip all of it.
    Folio(u32),
}

/// isolate_migratepages_block: isolate the movable LRU folios of [low_pfn, end_pfn), within
/// one pageblock, onto cc.migratepages; cc.migrate_pfn is where to go on.
fn isolate_migratepages_block(
    k: &mut Kernel,
    ctx: &mut Ctx,
    cc: &mut CompactControl,
    mut low_pfn: u32,
    end_pfn: u32,
) {
    let (mut nr_scanned, mut nr_isolated) = (0u64, 0u32);
    let mut valid_page: Option<u32> = None;
    let mut skip_updated = false;
    let mut locked: Option<u16> = None;
    cc.migrate_pfn = low_pfn;
    // Async direct compaction works in order-aligned chunks: one page that cannot move makes
    // the chunk useless, so what was isolated of it goes back and the scan jumps ahead.
    let skip_on_failure = k.cfg.compaction_era.skip_on_failure
        && cc.direct_compaction
        && cc.mode == MigrateMode::Async;
    let mut next_skip_pfn = if skip_on_failure {
        block_end_pfn(low_pfn, cc.order)
    } else {
        0
    };
    // ISOLATE_ASYNC_MIGRATE: everything but full sync leaves folios under writeback alone.
    let async_migrate = cc.mode != MigrateMode::Sync;
    while low_pfn < end_pfn {
        if low_pfn.is_multiple_of(COMPACT_CLUSTER_MAX) && cc.should_abort(&k.cfg, ctx) {
            break;
        }
        if skip_on_failure && low_pfn >= next_skip_pfn {
            if nr_isolated > 0 {
                // The previous chunk is all isolated: migrate it now.
                break;
            }
            next_skip_pfn = block_end_pfn(low_pfn, cc.order);
        }
        nr_scanned += 1;
        ctx.spend(CpuCost::CompactScan, k.cost.compact_scan_pfn_ns);
        if valid_page.is_none() && low_pfn.is_multiple_of(PAGEBLOCK_NR_PAGES) {
            if !isolation_suitable(&k.pgdat[cc.nid].zone, cc, low_pfn) {
                low_pfn = end_pfn;
                break;
            }
            valid_page = Some(low_pfn);
        }
        if let Some(order) = k.pgdat[cc.nid].zone.free_area().buddy_order(low_pfn) {
            // A free block: nothing to move, not a failure.
            let nr = 1u32 << order;
            low_pfn += nr;
            nr_scanned += nr as u64 - 1;
            continue;
        }
        let fail = match folio_isolatable(&k.folios, cc, low_pfn, async_migrate, ctx.now_ns) {
            Err(fail) => fail,
            Ok(head) => {
                let memcg = k.folios.memcg(head as usize);
                if locked != Some(memcg) {
                    locked = Some(memcg);
                    // Under the lock, the first time: claim the block (test_and_set_skip); one
                    // another compactor claimed is left to it, unless finishing it.
                    if let Some(vp) = valid_page.filter(|_| !skip_updated) {
                        skip_updated = true;
                        if test_and_set_skip(&mut k.pgdat[cc.nid].zone, cc, vp)
                            && !cc.finish_pageblock
                        {
                            low_pfn = end_pfn;
                            break;
                        }
                    }
                }
                let nr = isolate_folio_locked(k, ctx, cc, head, memcg);
                nr_isolated += nr;
                nr_scanned += nr as u64 - 1;
                low_pfn += nr;
                if cc.nr_migratepages >= COMPACT_CLUSTER_MAX
                    && !cc.finish_pageblock
                    && !cc.contended.is_contended()
                {
                    break;
                }
                continue;
            }
        };
        // isolate_fail:
        if let Fail::Folio(nr) = fail {
            low_pfn += nr - 1;
            nr_scanned += nr as u64 - 1;
        }
        if skip_on_failure {
            if nr_isolated > 0 {
                // Nothing of this chunk can become free: put back what was taken.
                putback_movable_pages(k, ctx, &std::mem::take(&mut cc.migratepages));
                cc.nr_migratepages = 0;
                nr_isolated = 0;
            }
            if low_pfn < next_skip_pfn {
                low_pfn = next_skip_pfn - 1;
                next_skip_pfn += 1 << cc.order;
            }
        }
        low_pfn += 1;
    }
    low_pfn = low_pfn.min(end_pfn);
    // The block is done: mark it when nothing came of it (or it was rescanned), and move the
    // cached position past it.
    if low_pfn == end_pfn && (nr_isolated == 0 || cc.finish_pageblock) {
        if let Some(vp) = valid_page.filter(|_| !skip_updated) {
            k.pgdat[cc.nid].zone.set_pageblock_skip(vp, true);
        }
        update_cached_migrate(&mut k.pgdat[cc.nid].compact, cc, low_pfn);
    }
    cc.total_migrate_scanned += nr_scanned;
    if nr_isolated > 0 {
        k.vmstat.count(VmEvent::CompactIsolated, nr_isolated as u64);
    }
    cc.migrate_pfn = low_pfn;
}

/// Take the folio headed at `head` off its LRU under its lruvec's lru_lock (an async
/// compaction that had to wait for the lock notes the contention) onto cc.migratepages;
/// returns its pages.
fn isolate_folio_locked(
    k: &mut Kernel,
    ctx: &mut Ctx,
    cc: &mut CompactControl,
    head: u32,
    memcg: u16,
) -> u32 {
    let nid = k.nodes.nid(head);
    let lru_lock = &mut k.memcgs[memcg as usize].lruvec_mut(nid).lru_lock;
    let before = lru_lock.stats.contended;
    lru_lock.hold(ctx, k.cost.lru_move_ns);
    if cc.mode == MigrateMode::Async && lru_lock.stats.contended > before {
        cc.contended = Contended::Lock;
    }
    ctx.spend(CpuCost::CompactIsolate, k.cost.compact_isolate_folio_ns);
    folio_isolate_lru(k, head);
    let nr = k.folios.nr_pages(head);
    cc.migratepages.push(head);
    cc.nr_migratepages += nr;
    nr
}

/// The checks before isolation: the folio headed at `pfn`, if it can be isolated for this
/// compaction. Pages that head no folio (tails, pages on per-CPU lists, pages the kernel holds
/// such as zsmalloc's: their movable_ops migration is not modelled) fail one by one.
fn folio_isolatable(
    f: &FolioTable,
    cc: &CompactControl,
    pfn: u32,
    async_migrate: bool,
    now_ns: u64,
) -> Result<u32, Fail> {
    if !f.test(pfn, flags::ALLOCATED) {
        return Err(Fail::Page);
    }
    let order = f.order[pfn as usize] as u32;
    if order > 0 && skip_isolation_on_order(order, cc.order) {
        return Err(Fail::Folio(1 << order));
    }
    if !f.test(pfn, flags::LRU) {
        return Err(Fail::Page);
    }
    // A pinned anonymous folio outside the swap cache (refcount above its mapcount) cannot
    // migrate: not worth isolating. One in the swap cache is isolated, and migration fails.
    if f.is_pinned(pfn) && !f.test(pfn, flags::SWAPCACHE) {
        return Err(Fail::Page);
    }
    // Unevictable folios (compact_unevictable_allowed) do not exist in the model yet.
    let under_writeback = f.test(pfn, flags::WRITEBACK) && f.writeback_done_ns(pfn) > now_ns;
    if async_migrate && under_writeback {
        return Err(Fail::Page);
    }
    Ok(pfn)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn chunks_and_orders() {
        assert_eq!(block_end_pfn(0, 9), 512);
        assert_eq!(block_end_pfn(511, 9), 512);
        assert_eq!(block_end_pfn(512, 9), 1024);
        assert_eq!(block_end_pfn(17, 4), 32);
        assert!(skip_isolation_on_order(9, -1), "a THP is never compacted");
        assert!(!skip_isolation_on_order(4, -1));
        assert!(skip_isolation_on_order(4, 4));
        assert!(!skip_isolation_on_order(3, 4));
    }
}
