//! Taking pages off the free lists (mm/page_alloc.c): get_page_from_freelist checks the zone's
//! watermark and calls rmqueue, which serves pcp orders from this CPU's list (refilled in
//! batches by rmqueue_bulk) and other orders from the buddy lists directly.

use super::fallback::RmqueueMode;
use super::migratetype::MigrateType;
use super::pcp::{order_to_pindex, pcp_allowed_order};
use super::watermark::{zone_watermark_ok, AllocFlags, Wmark};
use super::{Zone, ZONE_LOCK_HOLD_NS_PER_BLOCK};
use crate::engine::Ctx;
use crate::mm::folio::FolioTable;
use crate::mm::gfp::Gfp;
use crate::mm::vmscan::kswapd::{wakeup_kswapd, KswapdState};
use crate::mm::vmstat::VmEvent;

impl Zone {
    /// get_page_from_freelist for the model's one zone: the watermark the flags name (plus
    /// the boost) must hold, unless ALLOC_NO_WATERMARKS. A pass under ALLOC_NOFRAGMENT that
    /// finds nothing is retried without it (UMA: every zone was tried).
    pub fn get_page_from_freelist(
        &mut self,
        kswapd: &mut KswapdState,
        folios: &FolioTable,
        ctx: &mut Ctx,
        gfp: Gfp,
        order: u32,
        mut alloc_flags: AllocFlags,
    ) -> Option<u32> {
        let mt = gfp.migratetype();
        let page = self.try_zone(kswapd, folios, ctx, order, alloc_flags, mt);
        if page.is_some() || !alloc_flags.has(AllocFlags::NOFRAGMENT) {
            return page;
        }
        alloc_flags = alloc_flags.without(AllocFlags::NOFRAGMENT);
        self.try_zone_again(kswapd, folios, ctx, order, alloc_flags, mt)
    }

    /// One pass of get_page_from_freelist over the zone: its watermark, then rmqueue.
    #[inline]
    fn try_zone(
        &mut self,
        kswapd: &mut KswapdState,
        folios: &FolioTable,
        ctx: &mut Ctx,
        order: u32,
        alloc_flags: AllocFlags,
        mt: MigrateType,
    ) -> Option<u32> {
        let mark = self.wmark_pages(alloc_flags.wmark());
        let usable = alloc_flags.has(AllocFlags::NO_WATERMARKS)
            || self.zone_watermark_fast(order, mark, alloc_flags);
        if !usable {
            return None;
        }
        self.rmqueue(kswapd, folios, ctx, order, alloc_flags, mt)
    }

    /// The pass without ALLOC_NOFRAGMENT, out of line: the first pass nearly always serves.
    #[inline(never)]
    fn try_zone_again(
        &mut self,
        kswapd: &mut KswapdState,
        folios: &FolioTable,
        ctx: &mut Ctx,
        order: u32,
        alloc_flags: AllocFlags,
        mt: MigrateType,
    ) -> Option<u32> {
        self.try_zone(kswapd, folios, ctx, order, alloc_flags, mt)
    }

    /// zone_watermark_fast: the order-0 shortcut, then __zone_watermark_ok; a __GFP_HIGH
    /// order-0 request at the min watermark ignores the boost.
    #[inline]
    pub fn zone_watermark_fast(&self, order: u32, mark: u64, alloc_flags: AllocFlags) -> bool {
        let free = self.area.nr_free_pages as i64;
        if order == 0 {
            let reserved = if alloc_flags.has(AllocFlags::RESERVES) {
                0
            } else {
                self.area.nr_free_highatomic as i64
            };
            if free - reserved.min(free) > mark as i64 {
                return true;
            }
        }
        if zone_watermark_ok(&self.area, order, mark, alloc_flags, free) {
            return true;
        }
        if order == 0
            && alloc_flags.has(AllocFlags::MIN_RESERVE)
            && self.watermark_boost > 0
            && alloc_flags.wmark() == Wmark::Min
        {
            return zone_watermark_ok(&self.area, 0, self.wmark.min_pages, alloc_flags, free);
        }
        false
    }

    /// rmqueue: pcp orders from the CPU's list, then (or else) the buddy lists. After a boost,
    /// the first allocation allowed to wake kswapd does.
    fn rmqueue(
        &mut self,
        kswapd: &mut KswapdState,
        folios: &FolioTable,
        ctx: &mut Ctx,
        order: u32,
        alloc_flags: AllocFlags,
        mt: MigrateType,
    ) -> Option<u32> {
        let mut page = None;
        if pcp_allowed_order(order) {
            page = self.rmqueue_pcplist(folios, ctx, order, mt, alloc_flags);
        }
        if page.is_none() {
            page = self.rmqueue_buddy(folios, ctx, order, alloc_flags, mt);
            if page.is_some() {
                self.nr_free_stat.mod_state(ctx, -(1 << order), 1);
            }
        }
        if alloc_flags.has(AllocFlags::KSWAPD) && self.boosted_watermark {
            self.boosted_watermark = false;
            wakeup_kswapd(self, kswapd, Gfp(0), 0);
        }
        if page.is_some() {
            self.events.count(VmEvent::PgallocNormal, 1 << order);
        }
        page
    }

    /// rmqueue_pcplist + __rmqueue_pcplist.
    fn rmqueue_pcplist(
        &mut self,
        folios: &FolioTable,
        ctx: &mut Ctx,
        order: u32,
        mt: MigrateType,
        alloc_flags: AllocFlags,
    ) -> Option<u32> {
        let cpu = ctx.cpu;
        let pindex = order_to_pindex(mt, order);
        let (batch, high) = (self.pcp_batch, self.pcp_high);
        let pcp = &mut self.pcp[cpu];
        pcp.free_count >>= 1;
        if pcp.lists[pindex].is_empty() {
            let count = pcp.nr_pcp_alloc(order, batch, high);
            let alloced = self.rmqueue_bulk(folios, ctx, order, count, mt, alloc_flags, pindex);
            self.pcp[cpu].count += alloced << order;
        }
        let pcp = &mut self.pcp[cpu];
        let pfn = pcp.lists[pindex].pop_front()?;
        pcp.count -= 1 << order;
        // __rmqueue_pcplist: a page freed to the list carries its MIGRC tag (page->private).
        self.area.take_block_mgen(pfn, order);
        Some(pfn)
    }

    /// rmqueue_bulk: up to `count` blocks onto the tail of the CPU's list, under one hold of
    /// the zone lock, keeping the fallback mode that worked. Returns the blocks taken.
    #[allow(clippy::too_many_arguments)]
    #[inline(never)]
    fn rmqueue_bulk(
        &mut self,
        folios: &FolioTable,
        ctx: &mut Ctx,
        order: u32,
        count: u32,
        mt: MigrateType,
        alloc_flags: AllocFlags,
        pindex: usize,
    ) -> u32 {
        let mut mode = RmqueueMode::Normal;
        let mut taken = 0;
        while taken < count {
            if mode == RmqueueMode::Normal {
                // __rmqueue's first try, for as many blocks as the request's lists hold.
                let list = &mut self.pcp[ctx.cpu].lists[pindex];
                taken += self
                    .area
                    .rmqueue_smallest_bulk(order, mt, count - taken, list);
                if taken == count {
                    break;
                }
            }
            let Some(pfn) = self.rmqueue_block(folios, order, mt, alloc_flags, &mut mode) else {
                break;
            };
            self.pcp[ctx.cpu].lists[pindex].push_back(pfn);
            taken += 1;
        }
        self.lock
            .hold(ctx, ZONE_LOCK_HOLD_NS_PER_BLOCK * taken.max(1) as u64);
        self.nr_free_stat.mod_state(ctx, -(1 << order), taken);
        taken
    }

    /// rmqueue_buddy: one block straight from the buddy lists; reserves of the highatomic
    /// pageblocks for the requests allowed them.
    #[inline(never)]
    fn rmqueue_buddy(
        &mut self,
        folios: &FolioTable,
        ctx: &mut Ctx,
        order: u32,
        alloc_flags: AllocFlags,
        mt: MigrateType,
    ) -> Option<u32> {
        self.lock.hold(ctx, ZONE_LOCK_HOLD_NS_PER_BLOCK);
        let highatomic =
            |zone: &mut Zone| zone.area.rmqueue_smallest(order, MigrateType::HighAtomic);
        if alloc_flags.has(AllocFlags::HIGHATOMIC) {
            if let Some(pfn) = highatomic(self) {
                return Some(pfn);
            }
        }
        let mut mode = RmqueueMode::Normal;
        if let Some(pfn) = self.rmqueue_block(folios, order, mt, alloc_flags, &mut mode) {
            return Some(pfn);
        }
        if alloc_flags.has(AllocFlags::OOM.with(AllocFlags::NON_BLOCK)) {
            return highatomic(self);
        }
        None
    }
}
