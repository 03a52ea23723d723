//! What compaction asks of the allocator (mm/page_alloc.c, mm/compaction.c): taking a free
//! block off the lists for a migration target (__isolate_free_page), this CPU's lists drained
//! so freed pages merge (drain_local_pages), the capture of a freed block by a direct compactor
//! (capture_control), and the pageblock skip bits.

use super::buddy::Capture;
use super::migratetype::{MigrateType, PAGEBLOCK_NR_PAGES, PAGEBLOCK_ORDER};
use super::watermark::{zone_watermark_ok, AllocFlags};
use super::{Zone, ZONE_LOCK_HOLD_NS_PER_BLOCK};
use crate::engine::Ctx;

impl Zone {
    /// __isolate_free_page: take the free block of `order` at `pfn` off its list for a
    /// compactor, as if allocated (the order-0 min watermark, without the boost, plus its size
    /// must hold). A block of at least half a pageblock turns its pageblocks movable. Returns
    /// the pages isolated (0: the watermark refused).
    pub fn isolate_free_page(&mut self, pfn: u32, order: u32) -> u32 {
        debug_assert_eq!(self.area.buddy_order(pfn), Some(order));
        let mt = self.area.pageblock_mt(pfn);
        if mt != MigrateType::Isolate {
            let mark = self.wmark.min_pages + (1u64 << order);
            let free = self.area.nr_free_pages as i64;
            if !zone_watermark_ok(&self.area, 0, mark, AllocFlags::CMA, free) {
                return 0;
            }
        }
        self.area.del_and_account(pfn, order, mt);
        if order + 1 >= PAGEBLOCK_ORDER {
            let end = pfn + (1 << order);
            let mut block = pfn & !(PAGEBLOCK_NR_PAGES - 1);
            while block < end {
                // move_freepages_block: only ordinary (mergeable) pageblocks change.
                let block_mt = self.area.pageblock_mt(block);
                if block_mt.is_mergeable() && block_mt != MigrateType::Movable {
                    self.area
                        .move_freepages_block(block, block_mt, MigrateType::Movable);
                    self.area.set_pageblock_mt(block, MigrateType::Movable);
                }
                block += PAGEBLOCK_NR_PAGES;
            }
        }
        1 << order
    }

    /// drain_local_pages: this CPU's per-CPU lists back to the buddy lists, so pages a
    /// compactor freed there merge (and may be captured).
    pub fn drain_local_pages(&mut self, ctx: &mut Ctx) {
        let count = self.pcp[ctx.cpu].count;
        if count > 0 {
            self.free_pcppages_bulk(ctx, ctx.cpu, count, 0);
        }
    }

    /// Install a direct compactor's capture_control (current->capture_control).
    pub fn set_capture(&mut self, order: u32, migratetype: MigrateType) {
        debug_assert!(self.area.capture.is_none());
        self.area.capture = Some(Capture {
            order,
            migratetype,
            page: None,
        });
    }

    /// Remove the capture_control; the block captured, if any (off every list, no longer
    /// counted free: the caller owns it).
    pub fn take_capture(&mut self) -> Option<u32> {
        self.area.capture.take().and_then(|c| c.page)
    }

    /// Has a block been captured by the installed capture_control?
    pub fn captured(&self) -> bool {
        self.area.capture.is_some_and(|c| c.page.is_some())
    }

    /// move_freelist_head / move_freelist_tail on the `mt` list of `order`.
    pub fn rotate_free_list(&mut self, order: u32, mt: MigrateType, pfn: u32, to_head: bool) {
        if to_head {
            self.area.rotate_to_head(order, mt, pfn);
        } else {
            self.area.rotate_to_tail(order, mt, pfn);
        }
    }

    /// get_pageblock_skip.
    #[inline]
    pub fn pageblock_skip(&self, pfn: u32) -> bool {
        self.area.pageblock_skip(pfn)
    }

    /// set_pageblock_skip / clear_pageblock_skip.
    pub fn set_pageblock_skip(&mut self, pfn: u32, skip: bool) {
        self.area.set_pageblock_skip(pfn, skip);
    }

    /// A zone lock hold by a compactor: `ns` of work under zone->lock. Returns whether it
    /// waited for another holder (an async compactor's failed spin_trylock).
    pub fn compact_lock(&mut self, ctx: &mut Ctx, ns: u64) -> bool {
        let before = self.lock.stats.contended;
        self.lock.hold(ctx, ns.max(ZONE_LOCK_HOLD_NS_PER_BLOCK));
        self.lock.stats.contended > before
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::mm::page_alloc::watermark::WatermarkSysctl;

    fn zone() -> Zone {
        Zone::new(
            4096,
            1,
            WatermarkSysctl {
                min_free_kbytes: 128,
                watermark_scale_factor: 10,
                watermark_boost_factor: 0,
            },
        )
    }

    #[test]
    fn a_freed_block_of_the_wanted_order_is_captured_while_merging() {
        let mut z = zone();
        let mut c = Ctx::new(0, 0);
        let free0 = z.nr_free_pages();
        // Take one order-9 block, free it back as two order-8 halves with a compactor waiting.
        let pfn = z.area.rmqueue_smallest(9, MigrateType::Movable).unwrap();
        z.set_capture(9, MigrateType::Movable);
        z.free(&mut c, pfn, 8);
        assert!(!z.captured(), "half a block is not the order wanted");
        z.free(&mut c, pfn + 256, 8);
        assert_eq!(z.take_capture(), Some(pfn));
        assert_eq!(
            z.nr_free_pages(),
            free0 - 512,
            "the captured block is not free"
        );
        z.check().unwrap();
    }

    #[test]
    fn isolating_half_a_pageblock_makes_it_movable() {
        let mut z = zone();
        let pfn = z.area.rmqueue_smallest(9, MigrateType::Movable).unwrap();
        z.area.set_pageblock_mt(pfn, MigrateType::Unmovable);
        let mut c = Ctx::new(0, 0);
        z.free(&mut c, pfn, 8);
        z.free(&mut c, pfn + 256, 7);
        assert_eq!(z.isolate_free_page(pfn, 8), 256);
        assert_eq!(z.pageblock_mt(pfn), MigrateType::Movable);
        assert_eq!(
            z.free_area().buddy_order(pfn + 256),
            Some(7),
            "the rest of the block moved to the movable lists"
        );
        z.check().unwrap();
    }

    #[test]
    fn free_lists_rotate_keeping_their_order() {
        let mut z = zone();
        let mut c = Ctx::new(0, 0);
        let pfn = z.area.rmqueue_smallest(10, MigrateType::Movable).unwrap();
        // Order 4: straight to the buddy lists (no per-CPU list), no two of them buddies.
        for p in [0, 32, 64, 96] {
            z.free(&mut c, pfn + p, 4);
        }
        let list = |z: &Zone| z.area.list(4, MigrateType::Movable).collect::<Vec<_>>();
        let before = list(&z);
        assert_eq!(before.len(), 4);
        z.rotate_free_list(4, MigrateType::Movable, before[2], true);
        assert_eq!(list(&z), [before[2], before[3], before[0], before[1]]);
        z.rotate_free_list(4, MigrateType::Movable, before[0], false);
        assert_eq!(list(&z), [before[1], before[2], before[3], before[0]]);
        let rev: Vec<u32> = z.area.list_rev(4, MigrateType::Movable).collect();
        assert_eq!(rev, [before[0], before[3], before[2], before[1]]);
        z.check().unwrap();
    }

    #[test]
    fn skip_bits_are_per_pageblock() {
        let mut z = zone();
        z.set_pageblock_skip(600, true);
        assert!(z.pageblock_skip(512) && z.pageblock_skip(1023));
        assert!(!z.pageblock_skip(0) && !z.pageblock_skip(1024));
        z.set_pageblock_skip(1000, false);
        assert!(!z.pageblock_skip(512));
    }
}
