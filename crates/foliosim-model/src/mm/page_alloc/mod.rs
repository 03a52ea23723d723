//! The page allocator (mm/page_alloc.c, 6.18): one zone ("Normal", node 0) with buddy free
//! lists per order and migratetype in 2 MiB pageblocks (buddy.rs, migratetype.rs), fallback
//! between types (fallback.rs), per-CPU lists of orders 0..=3 and PMD order (pcp.rs),
//! watermarks with boosting (watermark.rs), the fast path (rmqueue.rs) and __alloc_pages with
//! its slow path (slowpath.rs), and the /proc views (views.rs).

pub mod buddy;
pub mod fallback;
pub mod isolate;
pub mod migratetype;
pub mod pcp;
pub mod rmqueue;
pub mod slowpath;
mod slowpath_v4_1;
pub mod views;
pub mod watermark;

pub use fallback::ExtfragStats;
pub use migratetype::{MigrateType, PAGEBLOCK_NR_PAGES, PAGEBLOCK_ORDER};
pub use slowpath::{alloc_pages, alloc_pages_memalloc, free_pages_memalloc, slowpath_of, Slowpath};
pub use watermark::{AllocFlags, WatermarkSysctl, Watermarks, Wmark};

use super::vmstat::{VmEvent, VmStat};
use crate::engine::lock::SimLock;
use crate::engine::Ctx;
pub use buddy::FreeArea;
use pcp::{order_to_pindex, pcp_allowed_order, pindex_to_order, PerCpuPages, PCP_BATCH_SCALE_MAX};

pub const MAX_PAGE_ORDER: u32 = 10;
/// PAGE_ALLOC_COSTLY_ORDER: above this, allocations are "costly" and give up easily.
pub const PAGE_ALLOC_COSTLY_ORDER: u32 = 3;
/// How many blocks ahead free_pcppages_bulk prefetches the buddies it will merge with.
const PCP_FREE_PREFETCH: usize = 4;
/// Zone lock hold per block moved between the buddy lists and a pcp list or a caller. estimate.
const ZONE_LOCK_HOLD_NS_PER_BLOCK: u64 = 40;

pub struct Zone {
    /// zone_start_pfn.
    pub start_pfn: u32,
    /// managed_pages (the model's zone spans exactly its managed pages).
    pub nr_pages: u32,
    area: FreeArea,
    pcp: Vec<PerCpuPages>,
    /// pcp->batch and pcp->high of every CPU (zone_batchsize, zone_highsize).
    pub pcp_batch: u32,
    pub pcp_high: u32,
    pub sysctl: WatermarkSysctl,
    /// zone->_watermark[].
    pub wmark: Watermarks,
    /// zone->watermark_boost, added to every watermark (wmark_pages).
    pub watermark_boost: u64,
    /// ZONE_BOOSTED_WATERMARK: a boost happened; the next allocation that may wake kswapd does.
    pub boosted_watermark: bool,
    pub lock: SimLock,
    /// The zone's vm events (pgalloc_normal, pgfree), folded into /proc/vmstat by
    /// Kernel::vm_events: the allocator runs where only the zone is at hand.
    pub events: VmStat,
    pub extfrag: ExtfragStats,
    /// kswapd balances this zone to WMARK_PROMO (NUMA_BALANCING_MEMORY_TIERING).
    pub balance_to_promo: bool,
    /// This node's bit of thp_avail_nodes (seed 001's RFC, mm/thp_fault_alloc/): set by every
    /// free of a block of pageblock order or more; only that policy reads or clears it.
    pub thp_avail: bool,
    /// NR_FREE_PAGES's per-CPU differentials and folds (mm/vmstat/fold.rs).
    pub nr_free_stat: crate::mm::vmstat::fold::ZoneStatItem,
}

impl Zone {
    /// The sysctls at boot: min_free_kbytes from the zone size, the default factors.
    pub fn default_sysctl(nr_pages: u32) -> WatermarkSysctl {
        WatermarkSysctl {
            min_free_kbytes: watermark::calculate_min_free_kbytes(nr_pages as u64),
            watermark_scale_factor: watermark::DEFAULT_WATERMARK_SCALE_FACTOR,
            watermark_boost_factor: watermark::DEFAULT_WATERMARK_BOOST_FACTOR,
        }
    }

    /// A zone of `nr_pages` free pages for `cpus` CPUs. Memory reaches the buddy lists as
    /// memblock_free_all hands it over: in MAX_PAGE_ORDER blocks, lowest pfn first, each to
    /// the tail, so the lowest pfns are allocated first.
    pub fn new(nr_pages: u32, cpus: usize, sysctl: WatermarkSysctl) -> Zone {
        Zone::new_span(0, nr_pages, cpus, sysctl)
    }

    /// A zone of node memory starting at `start_pfn` (zone_start_pfn): its free area is indexed
    /// by pfn, so the pfns below the start are never free in it.
    pub fn new_span(start_pfn: u32, nr_pages: u32, cpus: usize, sysctl: WatermarkSysctl) -> Zone {
        Self::try_new_span(start_pfn, nr_pages, cpus, sysctl).unwrap_or_else(|e| panic!("{e}"))
    }

    /// [`Zone::new_span`], or an error when the host refuses the memory of its free area.
    pub fn try_new_span(
        start_pfn: u32,
        nr_pages: u32,
        cpus: usize,
        sysctl: WatermarkSysctl,
    ) -> Result<Zone, crate::footprint::AllocFailed> {
        let end_pfn = start_pfn + nr_pages;
        let mut zone = Zone {
            start_pfn,
            nr_pages,
            area: FreeArea::try_new(end_pfn)?,
            pcp: (0..cpus).map(|_| PerCpuPages::default()).collect(),
            pcp_batch: 0,
            pcp_high: 0,
            sysctl,
            wmark: Watermarks::default(),
            watermark_boost: 0,
            boosted_watermark: false,
            lock: SimLock::new("zone->lock", crate::cpu_cost::ZONE_LOCK),
            events: VmStat::default(),
            extfrag: ExtfragStats::default(),
            thp_avail: true,
            balance_to_promo: false,
            nr_free_stat: crate::mm::vmstat::fold::ZoneStatItem::new(nr_pages as u64, cpus),
        };
        zone.setup_per_zone_wmarks();
        let mut pfn = start_pfn;
        while pfn < end_pfn {
            let mut order = MAX_PAGE_ORDER;
            while order > 0 && (!pfn.is_multiple_of(1 << order) || pfn + (1 << order) > end_pfn) {
                order -= 1;
            }
            zone.area.free_pages_ok(pfn, order, true);
            pfn += 1 << order;
        }
        Ok(zone)
    }

    /// setup_per_zone_wmarks, then zone_pcp_update for the new low watermark.
    pub fn setup_per_zone_wmarks(&mut self) {
        self.wmark = watermark::setup_per_zone_wmarks(self.nr_pages as u64, &self.sysctl);
        self.watermark_boost = 0;
        self.pcp_batch = pcp::zone_batchsize(self.nr_pages as u64);
        self.pcp_high = pcp::zone_highsize(self.wmark.low_pages, self.pcp_batch, self.pcp.len());
    }

    /// NR_FREE_PAGES: pages on the buddy lists (not those on per-CPU lists).
    pub fn nr_free_pages(&self) -> u64 {
        self.area.nr_free_pages
    }

    /// Pages on every CPU's lists.
    pub fn nr_pcp_pages(&self) -> u64 {
        self.pcp.iter().map(|p| p.count as u64).sum()
    }

    /// wmark_pages: a watermark plus the boost.
    pub fn wmark_pages(&self, w: Wmark) -> u64 {
        self.wmark.get(w) + self.watermark_boost
    }

    /// zone_watermark_ok against the current free pages.
    pub fn watermark_ok(&self, order: u32, mark: u64, alloc_flags: AllocFlags) -> bool {
        watermark::zone_watermark_ok(
            &self.area,
            order,
            mark,
            alloc_flags,
            self.area.nr_free_pages as i64,
        )
    }

    /// The buddy lists, for checks made from outside the allocator (compaction, tests).
    pub fn free_area(&self) -> &FreeArea {
        &self.area
    }

    /// The buddy lists to rebuild whole (a host snapshot's start, mm/snapshot/).
    pub fn free_area_mut(&mut self) -> &mut FreeArea {
        &mut self.area
    }

    /// The pageblock type of `pfn`.
    pub fn pageblock_mt(&self, pfn: u32) -> MigrateType {
        self.area.pageblock_mt(pfn)
    }

    /// free_unref_page with a MIGRC generation (folio_put_mgen): the block keeps the tag on
    /// the per-CPU list and in the buddy lists until it is taken again.
    pub fn free_mgen(&mut self, ctx: &mut Ctx, pfn: u32, order: u32, gen: u16) {
        self.area.tag_mgen(pfn, order, gen);
        self.free(ctx, pfn, order);
    }

    /// Free blocks will mostly be of `order` or larger (FreeArea::advise_sparse_below).
    pub fn advise_sparse_below(&self, order: u32) {
        self.area.advise_sparse_below(order);
    }

    /// MIGRC tags on this zone's free pages.
    pub fn enable_mgen(&mut self) {
        self.area.enable_mgen();
    }

    /// current->mgen for this zone's allocations since the last check (take-and-zero).
    pub fn take_mgen(&mut self) -> u16 {
        self.area.take_mgen()
    }

    /// free_frozen_pages: orders the per-CPU lists take go to this CPU's list (draining a
    /// batch once it holds `high` pages); others straight to the buddy lists.
    pub fn free(&mut self, ctx: &mut Ctx, pfn: u32, order: u32) {
        debug_assert_eq!(pfn % (1 << order), 0, "free of a misaligned block");
        debug_assert!(
            self.area.buddy_order(pfn).is_none(),
            "double free of pfn {pfn}"
        );
        self.events.count(VmEvent::Pgfree, 1 << order);
        if order >= PAGEBLOCK_ORDER {
            self.thp_avail = true;
        }
        let mut mt = self.area.pageblock_mt(pfn);
        if !pcp_allowed_order(order) || mt == MigrateType::Isolate {
            self.free_one_page(ctx, pfn, order);
            return;
        }
        // Only the three pcp types have lists; a highatomic page waits on the movable one.
        if mt == MigrateType::HighAtomic {
            mt = MigrateType::Movable;
        }
        self.free_frozen_page_commit(ctx, pfn, order, mt);
    }

    /// free_one_page: straight to the buddy lists under the zone lock.
    fn free_one_page(&mut self, ctx: &mut Ctx, pfn: u32, order: u32) {
        self.area.free_pages_ok(pfn, order, false);
        self.lock.hold(ctx, ZONE_LOCK_HOLD_NS_PER_BLOCK);
        self.nr_free_stat.mod_state(ctx, 1 << order, 1);
    }

    /// free_frozen_page_commit.
    fn free_frozen_page_commit(&mut self, ctx: &mut Ctx, pfn: u32, order: u32, mt: MigrateType) {
        let (batch, high) = (self.pcp_batch, self.pcp_high);
        let pindex = order_to_pindex(mt, order);
        let pcp = &mut self.pcp[ctx.cpu];
        pcp.alloc_factor >>= 1;
        pcp.lists[pindex].push_front(pfn);
        pcp.count += 1 << order;
        if pcp.free_count < batch << PCP_BATCH_SCALE_MAX {
            pcp.free_count += 1 << order;
        }
        if pcp.count < high {
            return;
        }
        let mut to_free = pcp.nr_pcp_free(batch, high);
        while to_free > 0 && self.pcp[ctx.cpu].count > 0 {
            let chunk = to_free.min(batch);
            self.free_pcppages_bulk(ctx, ctx.cpu, chunk, pindex);
            to_free -= chunk;
        }
    }

    /// free_pcppages_bulk: give `count` pages of a CPU's lists back to the buddy lists, oldest
    /// first, going round the lists from `pindex`.
    fn free_pcppages_bulk(&mut self, ctx: &mut Ctx, cpu: usize, count: u32, mut pindex: usize) {
        let mut count = count.min(self.pcp[cpu].count) as i64;
        let mut blocks = 0;
        while count > 0 {
            pindex = self.pcp[cpu].next_nonempty(pindex);
            let order = pindex_to_order(pindex);
            // The blocks this list gives: oldest first, until `count` pages or the list run out.
            let pcp = &mut self.pcp[cpu];
            let list = &mut pcp.lists[pindex];
            let len = list.len();
            let nr = len.min((count as usize).div_ceil(1 << order));
            // The deque's two runs indexed directly: its iterators cost more per block.
            let (front, back) = list.as_slices();
            let at = |i: usize| match i.checked_sub(front.len()) {
                Some(j) => back[j],
                None => front[i],
            };
            // A block followed by its buddy (frees in pfn order, as a zap makes) would go on
            // a free list only to be taken off by the buddy's merge: with no compactor to
            // capture the first, the pair is freed as the block one order up (the lists end
            // as they would). Below pageblock order, so both are of one pageblock type.
            let pairs = order < PAGEBLOCK_ORDER && self.area.capture.is_none();
            let mut i = len;
            while i > len - nr {
                i -= 1;
                // The buddies of the next few start loading.
                if let Some(ahead) = i.checked_sub(PCP_FREE_PREFETCH) {
                    self.area.prefetch(at(ahead));
                }
                let pfn = at(i);
                let mt = self.area.pageblock_mt(pfn);
                if pairs && i > len - nr && at(i - 1) == pfn ^ (1 << order) {
                    i -= 1;
                    self.area
                        .free_one_page(pfn & !(1 << order), order + 1, mt, false);
                } else {
                    self.area.free_one_page(pfn, order, mt, false);
                }
            }
            list.truncate(len - nr);
            self.nr_free_stat.mod_state(ctx, 1 << order, nr as u32);
            count -= (nr as i64) << order;
            pcp.count -= (nr as u32) << order;
            blocks += nr as u64;
            pindex = (pindex + 1) % pcp::NR_PCP_LISTS;
        }
        self.lock.hold(ctx, ZONE_LOCK_HOLD_NS_PER_BLOCK * blocks);
    }

    /// drain_all_pages: every CPU's lists back to the buddy lists. Returns the pages drained.
    pub fn drain_all_pages(&mut self, ctx: &mut Ctx) -> u64 {
        let mut drained = 0;
        for cpu in 0..self.pcp.len() {
            let count = self.pcp[cpu].count;
            if count > 0 {
                self.free_pcppages_bulk(ctx, cpu, count, 0);
                drained += count as u64;
            }
        }
        drained
    }
}

#[cfg(test)]
mod tests;
