//! Falling back to another migratetype (mm/page_alloc.c, 6.18): __rmqueue tries the request's
//! own lists, then claims a whole pageblock of another type (__rmqueue_claim), then steals a
//! single block leaving its pageblock's type alone (__rmqueue_steal), remembering across a
//! bulk refill which mode worked.

use super::migratetype::{MigrateType, PAGEBLOCK_NR_PAGES, PAGEBLOCK_ORDER};
use super::watermark::{boost_watermark, AllocFlags};
use super::{Zone, MAX_PAGE_ORDER};
use crate::mm::folio::FolioTable;

/// enum rmqueue_mode (no CMA; a successful claim returns to Normal, so Claim is never kept).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RmqueueMode {
    Normal,
    Steal,
}

/// What the mm_page_alloc_extfrag tracepoint reports, counted: every allocation served from
/// another type's list, those that took less than a pageblock (fragmenting: the kernel's
/// "fragmenting" field), and those after which the pageblock is the request's type
/// ("change_ownership").
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, serde::Serialize)]
pub struct ExtfragStats {
    pub events: u64,
    pub fragmenting: u64,
    pub change_ownership: u64,
}

/// should_try_claim_block: is taking a whole pageblock worth trying for a fallback of this
/// order? Always for large blocks; for unmovable/reclaimable requests regardless of size (they
/// would pollute the block permanently); movable requests just steal small blocks.
pub fn should_try_claim_block(order: u32, start_mt: MigrateType) -> bool {
    order >= PAGEBLOCK_ORDER
        || order >= PAGEBLOCK_ORDER / 2
        || matches!(start_mt, MigrateType::Reclaimable | MigrateType::Unmovable)
}

/// Why find_suitable_fallback found nothing.
enum NoFallback {
    /// -1: no block of that order on a fallback list.
    Empty,
    /// -2: orders this low are not worth claiming.
    TooLowToClaim,
}

impl Zone {
    /// find_suitable_fallback.
    fn find_suitable_fallback(
        &self,
        order: u32,
        mt: MigrateType,
        claimable: bool,
    ) -> Result<MigrateType, NoFallback> {
        if claimable && !should_try_claim_block(order, mt) {
            return Err(NoFallback::TooLowToClaim);
        }
        if self.area.nr_free(order) == 0 {
            return Err(NoFallback::Empty);
        }
        mt.fallbacks()
            .into_iter()
            .find(|&f| !self.area.free_area_empty(order, f))
            .ok_or(NoFallback::Empty)
    }

    /// find_suitable_fallback(claimable) found a list: __compact_finished's test that an
    /// allocation of `mt` would claim a block of `order` from another type.
    pub fn has_claimable_fallback(&self, order: u32, mt: MigrateType) -> bool {
        self.find_suitable_fallback(order, mt, true).is_ok()
    }

    /// __rmqueue: one block of `order` for a request of type `mt`.
    pub(super) fn rmqueue_block(
        &mut self,
        folios: &FolioTable,
        order: u32,
        mt: MigrateType,
        alloc_flags: AllocFlags,
        mode: &mut RmqueueMode,
    ) -> Option<u32> {
        if *mode == RmqueueMode::Normal {
            if let Some(pfn) = self.area.rmqueue_smallest(order, mt) {
                return Some(pfn);
            }
        }
        if *mode != RmqueueMode::Steal {
            if let Some(pfn) = self.rmqueue_claim(folios, order, mt, alloc_flags) {
                // Replenished the request's own lists.
                *mode = RmqueueMode::Normal;
                return Some(pfn);
            }
        }
        if !alloc_flags.has(AllocFlags::NOFRAGMENT) {
            if let Some(pfn) = self.rmqueue_steal(order, mt) {
                *mode = RmqueueMode::Steal;
                return Some(pfn);
            }
        }
        None
    }

    /// __rmqueue_claim: the largest fallback block first (roughly the pageblock with the most
    /// free pages), converting its pageblock to the request's type when enough of it is free
    /// or compatible. Under ALLOC_NOFRAGMENT only whole pageblocks are considered.
    fn rmqueue_claim(
        &mut self,
        folios: &FolioTable,
        order: u32,
        start_mt: MigrateType,
        alloc_flags: AllocFlags,
    ) -> Option<u32> {
        let min_order = if order < PAGEBLOCK_ORDER && alloc_flags.has(AllocFlags::NOFRAGMENT) {
            PAGEBLOCK_ORDER
        } else {
            order
        };
        for current in (min_order..=MAX_PAGE_ORDER).rev() {
            let fallback_mt = match self.find_suitable_fallback(current, start_mt, true) {
                Ok(mt) => mt,
                Err(NoFallback::Empty) => continue,
                Err(NoFallback::TooLowToClaim) => break,
            };
            let pfn = self.area.head(current, fallback_mt).unwrap();
            let claimed = self.try_to_claim_block(
                folios,
                pfn,
                current,
                order,
                start_mt,
                fallback_mt,
                alloc_flags,
            );
            if let Some(page) = claimed {
                self.trace_extfrag(page, current, start_mt);
                return Some(page);
            }
        }
        None
    }

    /// try_to_claim_block: take the pageblock(s) of a fallback block for `start_type`.
    #[allow(clippy::too_many_arguments)]
    fn try_to_claim_block(
        &mut self,
        folios: &FolioTable,
        pfn: u32,
        current_order: u32,
        order: u32,
        start_type: MigrateType,
        block_type: MigrateType,
        alloc_flags: AllocFlags,
    ) -> Option<u32> {
        // A free block of a pageblock or more: it is ours whole.
        if current_order >= PAGEBLOCK_ORDER {
            self.area.del_and_account(pfn, current_order, block_type);
            self.area
                .change_pageblock_range(pfn, current_order, start_type);
            let added = self.area.expand(pfn, order, current_order, start_type);
            self.area.account(added as i64, start_type);
            return Some(pfn);
        }
        // Mixing types in a pageblock: boost the watermarks so kswapd reclaims a little more
        // (it is woken after this allocation if the caller may wake it).
        if boost_watermark(
            &mut self.watermark_boost,
            &self.wmark,
            self.nr_pages as u64,
            self.sysctl.watermark_boost_factor,
        ) && alloc_flags.has(AllocFlags::KSWAPD)
        {
            self.boosted_watermark = true;
        }
        let (start, free_pages, movable_pages) =
            self.area.prep_move_freepages_block(pfn, folios)?;
        // Pages compatible with the request: movable ones for a movable request; for an
        // unmovable or reclaimable one falling back to a movable block, every allocated page
        // that is not movable; between unmovable and reclaimable, none can be told apart.
        let alike_pages = if start_type == MigrateType::Movable {
            movable_pages
        } else if block_type == MigrateType::Movable {
            PAGEBLOCK_NR_PAGES - (free_pages + movable_pages)
        } else {
            0
        };
        if free_pages + alike_pages >= 1 << (PAGEBLOCK_ORDER - 1) {
            self.area
                .move_freepages_block(start, block_type, start_type);
            self.area.set_pageblock_mt(start, start_type);
            return self.area.rmqueue_smallest(order, start_type);
        }
        None
    }

    /// __rmqueue_steal: the smallest fallback block that fits, split on its own type's lists;
    /// the pageblock keeps its type (the mixing that fragments memory for good when the
    /// request is unmovable).
    fn rmqueue_steal(&mut self, order: u32, start_mt: MigrateType) -> Option<u32> {
        for current in order..=MAX_PAGE_ORDER {
            let Ok(fallback_mt) = self.find_suitable_fallback(current, start_mt, false) else {
                continue;
            };
            let pfn = self.area.head(current, fallback_mt).unwrap();
            self.area.del_and_expand(pfn, order, current, fallback_mt);
            self.trace_extfrag(pfn, current, start_mt);
            return Some(pfn);
        }
        None
    }

    /// trace_mm_page_alloc_extfrag, counted.
    fn trace_extfrag(&mut self, pfn: u32, fallback_order: u32, alloc_mt: MigrateType) {
        self.extfrag.events += 1;
        if fallback_order < PAGEBLOCK_ORDER {
            self.extfrag.fragmenting += 1;
        }
        if self.area.pageblock_mt(pfn) == alloc_mt {
            self.extfrag.change_ownership += 1;
        }
    }
}
