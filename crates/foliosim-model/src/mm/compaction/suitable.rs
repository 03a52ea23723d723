//! Is compaction worth running (mm/compaction.c)? It needs free order-0 pages to migrate into
//! (the watermark plus compact_gap), and for costly orders a fragmentation index above
//! vm.extfrag_threshold: below it, the failure is for lack of memory, which only reclaim fixes.

use super::fragmentation::fragmentation_index;
use super::{CompactResult, Compaction};
use crate::mm::gfp::Gfp;
use crate::mm::page_alloc::slowpath::zone_reclaimable_pages;
use crate::mm::page_alloc::watermark::zone_watermark_ok;
use crate::mm::page_alloc::{AllocFlags, Wmark, Zone, PAGE_ALLOC_COSTLY_ORDER};
use crate::mm::vmscan::kswapd::compact_gap;
use crate::mm::Kernel;

/// __compaction_suitable: would `free_pages` meet the order-0 watermark (low for costly
/// orders, min otherwise) with compact_gap(order) to spare for migration targets?
pub fn compaction_suitable_free(zone: &Zone, order: u32, free_pages: u64) -> bool {
    let wmark = if order > PAGE_ALLOC_COSTLY_ORDER {
        Wmark::Low
    } else {
        Wmark::Min
    };
    let mark = zone.wmark_pages(wmark) + compact_gap(order);
    zone_watermark_ok(
        zone.free_area(),
        0,
        mark,
        AllocFlags::CMA,
        free_pages as i64,
    )
}

/// compaction_suitable: enough free pages, and for costly orders fragmentation (not a lack of
/// memory) behind the failure.
pub fn compaction_suitable(zone: &Zone, c: &Compaction, order: u32) -> bool {
    if !compaction_suitable_free(zone, order, zone.nr_free_pages()) {
        return false;
    }
    if order > PAGE_ALLOC_COSTLY_ORDER {
        let fragindex = fragmentation_index(zone.free_area(), order);
        if fragindex >= 0 && fragindex as u32 <= c.sysctl.extfrag_threshold {
            return false;
        }
    }
    true
}

/// compaction_suit_allocation_order: Success if the allocation would succeed now, Skipped if
/// compaction is unlikely to help, else Continue. Costly async compaction (THP faults) also
/// wants the low watermark plus compact_gap in free pages.
pub fn compaction_suit_allocation_order(
    zone: &Zone,
    c: &Compaction,
    order: u32,
    alloc_flags: AllocFlags,
    is_async: bool,
) -> CompactResult {
    let mark = zone.wmark_pages(alloc_flags.wmark());
    if zone.watermark_ok(order, mark, alloc_flags) {
        return CompactResult::Success;
    }
    if order > PAGE_ALLOC_COSTLY_ORDER && is_async && !alloc_flags.has(AllocFlags::CMA) {
        let mark = zone.wmark_pages(Wmark::Low) + compact_gap(order);
        if !zone.watermark_ok(0, mark, AllocFlags(0)) {
            return CompactResult::Skipped;
        }
    }
    if !compaction_suitable(zone, c, order) {
        return CompactResult::Skipped;
    }
    CompactResult::Continue
}

/// compaction_zonelist_suitable: after a skipped compaction, could reclaim make a zone of the
/// zonelist suitable? Counts a share of the reclaimable pages (1 / order of them: not worth
/// thrashing for one high-order allocation) with the free ones.
pub fn compaction_zonelist_suitable(k: &Kernel, nid: usize, gfp: Gfp, order: u32) -> bool {
    k.nodes
        .reclaim_zonelist(nid, gfp, k.alloc_nodemask())
        .any(|n| {
            let available = zone_reclaimable_pages(k, n) / order.max(1) as u64
                + k.pgdat[n].zone.nr_free_pages();
            compaction_suitable_free(&k.pgdat[n].zone, order, available)
        })
}
