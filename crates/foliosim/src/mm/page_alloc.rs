//! Physical memory: one zone with a binary buddy allocator (mm/page_alloc.c) and per-CPU
//! order-0 page lists (pcp).
//!
//! Free blocks are kept per order in a dense stack; each free block's head pfn records its order
//! and its position in that stack, so a buddy can be found and unlinked in O(1) when merging.

use crate::engine::lock::SimLock;
use crate::engine::Ctx;

pub const MAX_PAGE_ORDER: u32 = 10;
const NOT_FREE: u8 = u8::MAX;
/// pcp->batch for a zone of this size: pages moved between pcp and buddy per refill / drain.
pub const PCP_BATCH: usize = 63;
/// pcp->high: a CPU keeping more free order-0 pages than this drains a batch.
pub const PCP_HIGH: usize = 6 * PCP_BATCH;
/// Zone lock hold per block moved between the buddy lists and a pcp list. estimate.
const ZONE_LOCK_HOLD_NS_PER_BLOCK: u64 = 40;

pub struct Zone {
    pub nr_pages: u32,
    free_area: Vec<Vec<u32>>,
    /// Per pfn: the order of the free block it heads, or NOT_FREE.
    free_order: Vec<u8>,
    /// Per pfn heading a free block: its index in `free_area[order]`.
    free_pos: Vec<u32>,
    pcp: Vec<Vec<u32>>,
    /// Free pages, buddy plus pcp.
    pub nr_free: u64,
    /// The min watermark (min_free_kbytes): ordinary allocations leave this many pages free;
    /// only reclaim itself (PF_MEMALLOC: zram, zswap and brd storing what it swaps out) may use
    /// them. The model has no low/high watermarks or kswapd yet.
    pub min_pages: u64,
    pub lock: SimLock,
}

/// init_per_zone_wmark_min: min_free_kbytes = sqrt(16 x lowmem KiB), within 128 KiB..256 MiB.
fn min_free_pages(nr_pages: u64) -> u64 {
    let kbytes = (nr_pages * 4 * 16).isqrt().clamp(128, 256 * 1024);
    kbytes / 4
}

impl Zone {
    pub fn new(nr_pages: u32, cpus: usize) -> Zone {
        let mut zone = Zone {
            nr_pages,
            free_area: (0..=MAX_PAGE_ORDER).map(|_| Vec::new()).collect(),
            free_order: vec![NOT_FREE; nr_pages as usize],
            free_pos: vec![0; nr_pages as usize],
            pcp: vec![Vec::new(); cpus],
            nr_free: 0,
            min_pages: min_free_pages(nr_pages as u64),
            lock: SimLock::new("zone->lock"),
        };
        // Hand memory to the buddy lists in the largest aligned blocks that fit, from the top
        // down, so low pfns are popped first (stack order).
        let mut blocks = Vec::new();
        let mut pfn = 0u32;
        while pfn < nr_pages {
            let mut order = MAX_PAGE_ORDER;
            while order > 0 && (pfn % (1 << order) != 0 || pfn + (1 << order) > nr_pages) {
                order -= 1;
            }
            blocks.push((pfn, order));
            pfn += 1 << order;
        }
        for &(pfn, order) in blocks.iter().rev() {
            zone.push_free(pfn, order);
            zone.nr_free += 1 << order;
        }
        zone
    }

    fn push_free(&mut self, pfn: u32, order: u32) {
        let list = &mut self.free_area[order as usize];
        self.free_order[pfn as usize] = order as u8;
        self.free_pos[pfn as usize] = list.len() as u32;
        list.push(pfn);
    }

    fn unlink_free(&mut self, pfn: u32, order: u32) {
        let list = &mut self.free_area[order as usize];
        let pos = self.free_pos[pfn as usize] as usize;
        debug_assert_eq!(list[pos], pfn);
        let last = list.pop().expect("unlink from an empty free list");
        if last != pfn {
            list[pos] = last;
            self.free_pos[last as usize] = pos as u32;
        }
        self.free_order[pfn as usize] = NOT_FREE;
    }

    /// __rmqueue_smallest: the smallest free block of at least `order`, split down.
    fn rmqueue(&mut self, order: u32) -> Option<u32> {
        let found = (order..=MAX_PAGE_ORDER).find(|&o| !self.free_area[o as usize].is_empty())?;
        let pfn = *self.free_area[found as usize].last().unwrap();
        self.unlink_free(pfn, found);
        // expand(): give back the upper halves.
        for o in (order..found).rev() {
            self.push_free(pfn + (1 << o), o);
        }
        self.nr_free -= 1 << order;
        Some(pfn)
    }

    /// __free_one_page: merge with free buddies as far as possible.
    fn free_one(&mut self, mut pfn: u32, mut order: u32) {
        self.nr_free += 1 << order;
        while order < MAX_PAGE_ORDER {
            let buddy = pfn ^ (1 << order);
            if buddy >= self.nr_pages || self.free_order[buddy as usize] != order as u8 {
                break;
            }
            self.unlink_free(buddy, order);
            pfn &= !(1 << order);
            order += 1;
        }
        self.push_free(pfn, order);
    }

    /// Allocate a naturally aligned block of 2^order pages; order 0 goes through this CPU's pcp.
    /// On failure the pcp lists are drained into the buddy lists and the allocation retried
    /// (as __alloc_pages_direct_reclaim's drain_all_pages does).
    pub fn alloc(&mut self, ctx: &mut Ctx, order: u32) -> Option<u32> {
        if self.nr_free < self.min_pages + (1 << order) {
            return None;
        }
        self.alloc_no_watermarks(ctx, order)
    }

    /// An allocation by reclaim itself (ALLOC_NO_WATERMARKS): may take the reserve below the
    /// min watermark.
    pub fn alloc_no_watermarks(&mut self, ctx: &mut Ctx, order: u32) -> Option<u32> {
        if let Some(pfn) = self.alloc_once(ctx, order) {
            return Some(pfn);
        }
        if self.pcp.iter().all(|p| p.is_empty()) {
            return None;
        }
        let drained: Vec<u32> = self.pcp.iter_mut().flat_map(|p| p.drain(..)).collect();
        self.lock
            .hold(ctx, ZONE_LOCK_HOLD_NS_PER_BLOCK * drained.len() as u64);
        for pfn in drained {
            self.nr_free -= 1;
            self.free_one(pfn, 0);
        }
        self.alloc_once(ctx, order)
    }

    fn alloc_once(&mut self, ctx: &mut Ctx, order: u32) -> Option<u32> {
        if order == 0 {
            if self.pcp[ctx.cpu].is_empty() {
                let mut batch = Vec::with_capacity(PCP_BATCH);
                for _ in 0..PCP_BATCH {
                    match self.rmqueue(0) {
                        Some(pfn) => batch.push(pfn),
                        None => break,
                    }
                }
                self.lock
                    .hold(ctx, ZONE_LOCK_HOLD_NS_PER_BLOCK * batch.len().max(1) as u64);
                // Pop from the end: keep the lowest pfn first out.
                batch.reverse();
                self.nr_free += batch.len() as u64;
                self.pcp[ctx.cpu] = batch;
            }
            let pfn = self.pcp[ctx.cpu].pop()?;
            self.nr_free -= 1;
            return Some(pfn);
        }
        let pfn = self.rmqueue(order);
        self.lock.hold(ctx, ZONE_LOCK_HOLD_NS_PER_BLOCK);
        pfn
    }

    pub fn free(&mut self, ctx: &mut Ctx, pfn: u32, order: u32) {
        debug_assert_eq!(pfn % (1 << order), 0, "free of a misaligned block");
        debug_assert_eq!(
            self.free_order[pfn as usize], NOT_FREE,
            "double free of pfn {pfn}"
        );
        if order == 0 {
            let cpu = ctx.cpu;
            self.nr_free += 1;
            self.pcp[cpu].push(pfn);
            if self.pcp[cpu].len() > PCP_HIGH {
                let drain: Vec<u32> = self.pcp[cpu].drain(..PCP_BATCH).collect();
                for p in drain {
                    self.nr_free -= 1;
                    self.free_one(p, 0);
                }
                self.lock
                    .hold(ctx, ZONE_LOCK_HOLD_NS_PER_BLOCK * PCP_BATCH as u64);
            }
            return;
        }
        self.free_one(pfn, order);
        self.lock.hold(ctx, ZONE_LOCK_HOLD_NS_PER_BLOCK);
    }

    /// Free pages per order in the buddy lists (pcp pages count as order-0 free).
    pub fn free_blocks_by_order(&self) -> Vec<usize> {
        self.free_area.iter().map(|l| l.len()).collect()
    }

    /// Every free page (buddy or pcp), for the invariant checker: a bitmap over pfns.
    pub fn free_bitmap(&self) -> Vec<bool> {
        let mut free = vec![false; self.nr_pages as usize];
        for (order, list) in self.free_area.iter().enumerate() {
            for &pfn in list {
                for p in pfn..pfn + (1 << order) {
                    assert!(
                        !free[p as usize],
                        "pfn {p} is free twice in the buddy lists"
                    );
                    free[p as usize] = true;
                }
            }
        }
        for pcp in &self.pcp {
            for &pfn in pcp {
                assert!(
                    !free[pfn as usize],
                    "pfn {pfn} is on a pcp list and free elsewhere"
                );
                free[pfn as usize] = true;
            }
        }
        free
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn ctx() -> Ctx {
        Ctx {
            cpu: 0,
            now_ns: 0,
            step_start_ns: 0,
            lock_handoff_ns: 0,
            sleep_ns: 0,
            iowait_ns: 0,
        }
    }

    #[test]
    fn merges_back_to_the_initial_blocks() {
        let mut z = Zone::new(4096, 1);
        let before = z.free_blocks_by_order();
        let mut c = ctx();
        let a = z.alloc(&mut c, 3).unwrap();
        let b = z.alloc(&mut c, 9).unwrap();
        z.free(&mut c, a, 3);
        z.free(&mut c, b, 9);
        assert_eq!(z.free_blocks_by_order(), before);
        assert_eq!(z.nr_free, 4096);
    }

    proptest! {
        /// Random alloc/free sequences: no page handed out twice, blocks aligned to their order,
        /// free + allocated == total at every step.
        #[test]
        fn no_double_allocation_and_alignment(ops in prop::collection::vec((0u32..=10, any::<bool>(), any::<u16>()), 1..300)) {
            let total = 8192u32;
            let mut z = Zone::new(total, 2);
            let mut owned = vec![false; total as usize];
            let mut live: Vec<(u32, u32)> = Vec::new();
            let mut c = ctx();
            for (order, alloc, pick) in ops {
                c.cpu = (pick % 2) as usize;
                if alloc || live.is_empty() {
                    if let Some(pfn) = z.alloc(&mut c, order) {
                        prop_assert_eq!(pfn % (1 << order), 0, "misaligned order-{} block", order);
                        for p in pfn..pfn + (1 << order) {
                            prop_assert!(!owned[p as usize], "pfn {} allocated twice", p);
                            owned[p as usize] = true;
                        }
                        live.push((pfn, order));
                    }
                } else {
                    let (pfn, order) = live.swap_remove(pick as usize % live.len());
                    for p in pfn..pfn + (1 << order) { owned[p as usize] = false; }
                    z.free(&mut c, pfn, order);
                }
                let allocated: u64 = live.iter().map(|&(_, o)| 1u64 << o).sum();
                prop_assert_eq!(z.nr_free + allocated, total as u64);
                let free = z.free_bitmap();
                for p in 0..total as usize { prop_assert!(!(free[p] && owned[p]), "pfn {} free and owned", p); }
            }
        }
    }
}
