//! Compaction's memory between runs (mm/compaction.c): where each scanner resumes (the cached
//! pfns) and which pageblocks to skip (PB_migrate_skip, one bit per pageblock beside its
//! migratetype). A block is marked when a scanner found nothing to isolate in it, or when the
//! migrate scanner starts isolating from it (so a parallel compactor leaves it alone). The bits
//! are cleared when kswapd goes to sleep after a direct compaction met its scanners
//! (compact_blockskip_flush), or when compaction restarts after the longest deferral.

use super::{pageblock_end_pfn, pageblock_start_pfn, CompactControl, ZoneCompaction};
use crate::cpu_cost::CpuCost;
use crate::engine::Ctx;
use crate::mm::folio::{flags, FolioTable};
use crate::mm::migrate::MigrateMode;
use crate::mm::mmzone::PgData;
use crate::mm::page_alloc::migratetype::{MigrateType, PAGEBLOCK_NR_PAGES, PAGEBLOCK_ORDER};
use crate::mm::page_alloc::Zone;
use crate::mm::page_alloc::PAGE_ALLOC_COSTLY_ORDER;
use crate::mm::Kernel;

impl ZoneCompaction {
    /// reset_cached_positions: the next run starts anew at both ends of the zone.
    pub fn reset_cached_positions(&mut self, start_pfn: u32, nr_pages: u32) {
        self.cached_migrate_pfn = [start_pfn; 2];
        self.cached_free_pfn = pageblock_start_pfn(start_pfn + nr_pages - 1);
    }
}

/// isolation_suitable: is the pageblock of `pfn` worth scanning?
pub(super) fn isolation_suitable(zone: &Zone, cc: &CompactControl, pfn: u32) -> bool {
    cc.ignore_skip_hint || !zone.pageblock_skip(pfn)
}

/// test_and_set_skip: mark the pageblock of `pfn`; was it marked already?
pub(super) fn test_and_set_skip(zone: &mut Zone, cc: &CompactControl, pfn: u32) -> bool {
    if cc.ignore_skip_hint {
        return false;
    }
    let skip = zone.pageblock_skip(pfn);
    if !skip {
        zone.set_pageblock_skip(pfn, true);
    }
    skip
}

/// update_cached_migrate: the migrate scanner is done with the block of `pfn`; async and
/// sync runs resume after it (async runs only move the async position).
pub(super) fn update_cached_migrate(z: &mut ZoneCompaction, cc: &CompactControl, pfn: u32) {
    let pfn = pageblock_end_pfn(pfn);
    if pfn > z.cached_migrate_pfn[0] {
        z.cached_migrate_pfn[0] = pfn;
    }
    if cc.mode != MigrateMode::Async && pfn > z.cached_migrate_pfn[1] {
        z.cached_migrate_pfn[1] = pfn;
    }
}

/// update_pageblock_skip: the free scanner emptied the block of `block_pfn`: mark it, and
/// resume below it (`pfn`) next time.
pub(super) fn update_pageblock_skip(pgdat: &mut PgData, block_pfn: u32, pfn: u32) {
    pgdat.zone.set_pageblock_skip(block_pfn, true);
    let z = &mut pgdat.compact;
    if pfn < z.cached_free_pfn {
        z.cached_free_pfn = pfn;
    }
}

/// pageblock_skip_persistent: the page at `pfn` belongs to a folio of at least a pageblock,
/// which no compaction can break up.
pub(super) fn pageblock_skip_persistent(f: &FolioTable, pfn: u32) -> bool {
    f.folio_of(pfn)
        .is_some_and(|head| f.order[head as usize] as u32 >= PAGEBLOCK_ORDER)
}

/// __reset_isolation_pfn: clear the skip bit of the pageblock of `pfn` if a sample of its
/// pages (one in 8) finds an LRU page (a migration source) or a free one (a target).
fn reset_isolation_pfn(
    k: &mut Kernel,
    ctx: &mut Ctx,
    nid: usize,
    pfn: u32,
    check_source: bool,
    check_target: bool,
) -> bool {
    if pageblock_skip_persistent(&k.folios, pfn) {
        return false;
    }
    if check_source && check_target && !k.pgdat[nid].zone.pageblock_skip(pfn) {
        return true;
    }
    if !check_source && check_target && k.pgdat[nid].zone.pageblock_mt(pfn) != MigrateType::Movable
    {
        return false;
    }
    let start = pageblock_start_pfn(pfn);
    let zone = &k.pgdat[nid].zone;
    let end = (pageblock_end_pfn(pfn) - 1).min(zone.start_pfn + zone.nr_pages - 1);
    let mut p = start;
    while p <= end {
        ctx.spend(CpuCost::CompactScan, k.cost.compact_scan_pfn_ns);
        let lru = check_source
            && k.folios
                .folio_of(p)
                .is_some_and(|h| k.folios.test(h, flags::LRU));
        let buddy = check_target && k.pgdat[nid].zone.free_area().buddy_order(p).is_some();
        if lru || buddy {
            k.pgdat[nid].zone.set_pageblock_skip(start, false);
            return true;
        }
        p += 1 << PAGE_ALLOC_COSTLY_ORDER;
    }
    false
}

/// __reset_isolation_suitable (reset_isolation_suitable for the node): after a direct
/// compaction met its scanners, clear the skip bits of the blocks that may be sources or
/// targets again, walking in from both ends, and restart the scanners at the first such blocks.
pub fn reset_isolation_suitable(k: &mut Kernel, ctx: &mut Ctx, nid: usize) {
    if !std::mem::take(&mut k.pgdat[nid].compact.blockskip_flush) {
        return;
    }
    let zone = &k.pgdat[nid].zone;
    let start_pfn = zone.start_pfn as i64;
    let end_pfn = start_pfn + zone.nr_pages as i64;
    let mut migrate_pfn: i64 = start_pfn;
    let mut free_pfn: i64 = end_pfn - 1;
    let (mut reset_migrate, mut reset_free) = (free_pfn, migrate_pfn);
    let (mut source_set, mut free_set) = (false, false);
    while migrate_pfn < free_pfn {
        if reset_isolation_pfn(k, ctx, nid, migrate_pfn as u32, true, source_set)
            && migrate_pfn < reset_migrate
        {
            source_set = true;
            reset_migrate = migrate_pfn;
            let z = &mut k.pgdat[nid].compact;
            z.init_migrate_pfn = reset_migrate as u32;
            z.cached_migrate_pfn = [reset_migrate as u32; 2];
        }
        if reset_isolation_pfn(k, ctx, nid, free_pfn as u32, free_set, true)
            && free_pfn > reset_free
        {
            free_set = true;
            reset_free = free_pfn;
            let z = &mut k.pgdat[nid].compact;
            z.init_free_pfn = reset_free as u32;
            z.cached_free_pfn = reset_free as u32;
        }
        migrate_pfn += PAGEBLOCK_NR_PAGES as i64;
        free_pfn -= PAGEBLOCK_NR_PAGES as i64;
    }
    // No suitable block reset: leave no distance between the scanners.
    if reset_migrate >= reset_free {
        let z = &mut k.pgdat[nid].compact;
        z.cached_migrate_pfn = [migrate_pfn.min(end_pfn - 1) as u32; 2];
        z.cached_free_pfn = free_pfn.max(start_pfn) as u32;
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::scenario::Scenario;

    #[test]
    fn skip_bits_are_cleared_only_after_a_direct_compaction_met_its_scanners() {
        let text = "[machine]\ncpus = 1\nmemory = \"64M\"\n[[workload]]\nkind = \"usemem\"\nnproc = 1\nsize = \"1M\"";
        let mut k = Kernel::new(&Scenario::from_toml_str(text).unwrap());
        let mut ctx = Ctx::new(0, 0);
        let nid = 0;
        for block in [0, 7, 30] {
            k.pgdat[nid]
                .zone
                .set_pageblock_skip(block * PAGEBLOCK_NR_PAGES, true);
        }
        reset_isolation_suitable(&mut k, &mut ctx, nid);
        assert!(
            k.pgdat[nid].zone.pageblock_skip(30 * PAGEBLOCK_NR_PAGES),
            "no flush asked"
        );
        k.pgdat[nid].compact.blockskip_flush = true;
        reset_isolation_suitable(&mut k, &mut ctx, nid);
        assert!(!k.pgdat[nid].compact.blockskip_flush);
        // All free: the walk from the top clears the blocks whose samples find a free block's
        // head (block 30 heads an order-10 block); the walk from the bottom looks for LRU
        // pages only until it finds one, and finds none.
        assert!(!k.pgdat[nid].zone.pageblock_skip(30 * PAGEBLOCK_NR_PAGES));
        assert!(
            k.pgdat[nid].zone.pageblock_skip(0)
                && k.pgdat[nid].zone.pageblock_skip(7 * PAGEBLOCK_NR_PAGES)
        );
        // No source found: the scanners are left met, so the next run ends at once.
        let z = &k.pgdat[nid].compact;
        assert!(z.cached_free_pfn < z.cached_migrate_pfn[0]);
    }
}
