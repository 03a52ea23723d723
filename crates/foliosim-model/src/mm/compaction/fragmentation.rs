//! Fragmentation metrics (mm/vmstat.c, mm/compaction.c): the fragmentation index that says
//! whether a high-order failure is for lack of memory or for fragmentation, and the external
//! fragmentation behind proactive compaction's score.

use super::Compaction;
use crate::mm::page_alloc::buddy::FreeArea;
use crate::mm::page_alloc::MAX_PAGE_ORDER;
use crate::scenario::PMD_ORDER;

/// COMPACTION_HPAGE_ORDER: the order proactive compaction measures fragmentation against.
pub const COMPACTION_HPAGE_ORDER: u32 = PMD_ORDER;

/// struct contig_page_info.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct ContigPageInfo {
    pub free_pages: u64,
    pub free_blocks_total: u64,
    /// Free blocks of `suitable_order` the larger blocks could be split into.
    pub free_blocks_suitable: u64,
}

/// fill_contig_page_info.
pub fn fill_contig_page_info(area: &FreeArea, suitable_order: u32) -> ContigPageInfo {
    let mut info = ContigPageInfo::default();
    for order in 0..=MAX_PAGE_ORDER {
        let blocks = area.nr_free(order) as u64;
        info.free_blocks_total += blocks;
        info.free_pages += blocks << order;
        if order >= suitable_order {
            info.free_blocks_suitable += blocks << (order - suitable_order);
        }
    }
    info
}

/// __fragmentation_index: 0 when no block is free, -1000 when one of `order` is (the request
/// would succeed), else towards 0 when the free memory is too little, towards 1000 when it is
/// too fragmented.
pub fn fragmentation_index_of(info: ContigPageInfo, order: u32) -> i32 {
    if info.free_blocks_total == 0 {
        return 0;
    }
    if info.free_blocks_suitable > 0 {
        return -1000;
    }
    let requested = 1u64 << order;
    1000 - ((1000 + info.free_pages * 1000 / requested) / info.free_blocks_total) as i32
}

/// fragmentation_index of the zone at `order`.
pub fn fragmentation_index(area: &FreeArea, order: u32) -> i32 {
    fragmentation_index_of(fill_contig_page_info(area, order), order)
}

/// extfrag_for_order: the percentage of free pages in blocks smaller than `order`.
pub fn extfrag_for_order(area: &FreeArea, order: u32) -> u32 {
    let info = fill_contig_page_info(area, order);
    if info.free_pages == 0 {
        return 0;
    }
    ((info.free_pages - (info.free_blocks_suitable << order)) * 100 / info.free_pages) as u32
}

/// fragmentation_score_zone.
pub fn fragmentation_score_zone(area: &FreeArea) -> u32 {
    extfrag_for_order(area, COMPACTION_HPAGE_ORDER)
}

/// fragmentation_score_node: each zone's score weighted by its share of the node (one zone
/// here: zone pages / (node pages + 1)).
pub fn fragmentation_score_node(area: &FreeArea) -> u32 {
    let present = area.nr_pages() as u64;
    (present * fragmentation_score_zone(area) as u64 / (present + 1)) as u32
}

/// fragmentation_score_wmark: proactive compaction starts above the high mark and stops at
/// the low one (100 - proactiveness, plus the leeway).
pub fn fragmentation_score_wmark(c: &Compaction, low: bool) -> u32 {
    let wmark_low = 100 - c.sysctl.proactiveness;
    if low {
        wmark_low
    } else {
        (wmark_low + c.sysctl.proactiveness_leeway).min(100)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn index_tells_lack_of_memory_from_fragmentation() {
        let info = |free_pages, blocks, suitable| ContigPageInfo {
            free_pages,
            free_blocks_total: blocks,
            free_blocks_suitable: suitable,
        };
        assert_eq!(fragmentation_index_of(info(0, 0, 0), 9), 0);
        assert_eq!(fragmentation_index_of(info(4096, 2, 1), 9), -1000);
        // 1000 free pages in 1000 single pages: fragmentation.
        assert_eq!(fragmentation_index_of(info(1000, 1000, 0), 9), 998);
        // 500 free pages in 2 blocks of 250: too little memory for order 9.
        assert_eq!(fragmentation_index_of(info(500, 2, 0), 9), 12);
    }

    #[test]
    fn extfrag_counts_free_pages_below_the_order() {
        let mut area = FreeArea::new(4096);
        assert_eq!(extfrag_for_order(&area, 9), 0, "nothing free");
        area.free_pages_ok(0, 9, false);
        assert_eq!(extfrag_for_order(&area, 9), 0);
        for pfn in (1024..1536).step_by(2) {
            area.free_pages_ok(pfn, 0, false);
        }
        // 768 free pages, 256 of them in blocks below order 9.
        assert_eq!(extfrag_for_order(&area, 9), 33);
        assert_eq!(
            fragmentation_score_node(&area),
            32,
            "weighted by 4096 / 4097"
        );
    }
}
