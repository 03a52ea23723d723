//! Unit tests per mechanism of the page allocator, and a property test of random allocation
//! and free sequences against the allocator's invariants.

use super::*;
use crate::mm::folio::{self, FolioTable};
use crate::mm::gfp::Gfp;
use crate::mm::vmscan::kswapd::KswapdState;
use proptest::prelude::*;

fn ctx() -> Ctx<'static> {
    Ctx::new(0, 0)
}

fn zone(nr_pages: u32, cpus: usize) -> Zone {
    Zone::new(nr_pages, cpus, Zone::default_sysctl(nr_pages))
}

const MOVABLE: Gfp = Gfp::GFP_HIGHUSER_MOVABLE;
const UNMOVABLE: Gfp = Gfp::GFP_KERNEL;

/// A zone with the folio table its movable allocations go into (as LRU folios, which is what
/// makes a page movable to the fallback's pageblock claim).
struct Mem {
    z: Zone,
    f: FolioTable,
    c: Ctx<'static>,
    kswapd: KswapdState,
}

impl Mem {
    fn new(nr_pages: u32, cpus: usize) -> Mem {
        Mem {
            z: zone(nr_pages, cpus),
            f: FolioTable::new(nr_pages),
            c: ctx(),
            kswapd: KswapdState::default(),
        }
    }

    fn alloc_flags(&mut self, gfp: Gfp, order: u32, flags: AllocFlags) -> Option<u32> {
        let pfn = self.z.get_page_from_freelist(
            &mut self.kswapd,
            &self.f,
            &mut self.c,
            gfp,
            order,
            flags,
        )?;
        if gfp.migratetype() == MigrateType::Movable {
            self.f.init(pfn, order, 0, (0, 0, 0));
            self.f.set(pfn, folio::flags::LRU);
        }
        Some(pfn)
    }

    /// One allocation as the fast path makes it (low watermark, NOFRAGMENT first).
    fn alloc(&mut self, gfp: Gfp, order: u32) -> Option<u32> {
        let flags = AllocFlags::WMARK_LOW
            .with(AllocFlags::NOFRAGMENT)
            .with(AllocFlags::KSWAPD);
        self.alloc_flags(gfp, order, flags)
    }

    /// One allocation ignoring the watermarks.
    fn alloc_any(&mut self, gfp: Gfp, order: u32) -> Option<u32> {
        self.alloc_flags(gfp, order, AllocFlags::NO_WATERMARKS)
    }

    fn free(&mut self, pfn: u32, order: u32) {
        if self.f.test(pfn, folio::flags::ALLOCATED) {
            self.f.release(pfn);
        }
        self.z.free(&mut self.c, pfn, order);
    }
}

#[test]
fn a_new_zone_is_max_order_blocks_all_movable() {
    let z = zone(4096 + 512 + 3, 1);
    let blocks = z.free_blocks_by_order();
    assert_eq!(blocks[10], 4);
    assert_eq!(blocks[9], 1);
    assert_eq!((blocks[1], blocks[0]), (1, 1));
    assert_eq!(z.nr_free_pages(), 4611);
    assert_eq!(
        z.free_area().nr_pageblocks[MigrateType::Movable as usize],
        10
    );
    z.check().unwrap();
}

#[test]
fn watermarks_of_a_1_gib_zone_follow_the_kernels_formula() {
    // 262144 pages: min_free_kbytes = sqrt(16 x 1 GiB in KiB) = 4096 -> min 1024 pages;
    // the step is max(1024 / 4, 262144 x 10 / 10000 = 262) = 262.
    let z = zone(262_144, 4);
    assert_eq!(z.sysctl.min_free_kbytes, 4096);
    assert_eq!(
        (z.wmark.min_pages, z.wmark.low_pages, z.wmark.high_pages),
        (1024, 1286, 1548)
    );
    // pcp: batch 63, high = max(low / 4 CPUs, 4 x batch) = 321.
    assert_eq!((z.pcp_batch, z.pcp_high), (63, 321));
}

#[test]
fn buddy_merging_across_a_pcp_drain_restores_the_initial_blocks() {
    let mut m = Mem::new(8192, 2);
    let before = m.z.free_blocks_by_order();
    let mut pages = Vec::new();
    for i in 0..200 {
        m.c.cpu = i % 2;
        pages.push(m.alloc(MOVABLE, 0).unwrap());
    }
    let a = m.alloc(MOVABLE, 3).unwrap();
    let b = m.alloc(MOVABLE, 9).unwrap();
    m.z.check().unwrap();
    for (i, p) in pages.into_iter().enumerate() {
        m.c.cpu = (i + 1) % 2;
        m.free(p, 0);
    }
    m.free(a, 3);
    m.free(b, 9);
    assert!(m.z.nr_pcp_pages() > 0, "frees wait on the per-CPU lists");
    assert!(
        m.z.nr_free_pages() < 8192,
        "pcp pages are not NR_FREE_PAGES"
    );
    m.z.drain_all_pages(&mut m.c);
    assert_eq!(m.z.nr_pcp_pages(), 0);
    assert_eq!(m.z.free_blocks_by_order(), before);
    assert_eq!(m.z.nr_free_pages(), 8192);
    m.z.check().unwrap();
}

#[test]
fn order_0_refills_in_batches_and_thp_goes_through_the_pcp() {
    let mut m = Mem::new(262_144, 1);
    m.alloc(MOVABLE, 0).unwrap();
    // nr_pcp_alloc: the first refill takes batch (63) pages, one is handed out.
    assert_eq!(m.z.nr_pcp_pages(), 62);
    // PMD order: a refill takes max(batch >> 9, 2) = 2 blocks.
    let thp = m.alloc(MOVABLE, 9).unwrap();
    assert_eq!(m.z.nr_pcp_pages(), 62 + 512);
    let thp2 = m.alloc(MOVABLE, 9).unwrap();
    assert_eq!(thp2, thp + 512, "the refill's second block, in pfn order");
    assert_eq!(m.z.nr_pcp_pages(), 62);
    m.z.check().unwrap();
}

#[test]
fn freeing_past_pcp_high_drains_to_the_buddy_lists() {
    let mut m = Mem::new(262_144, 1);
    let pages: Vec<u32> = (0..1000).map(|_| m.alloc(MOVABLE, 0).unwrap()).collect();
    for p in pages {
        m.free(p, 0);
        assert!(
            m.z.nr_pcp_pages() < m.z.pcp_high as u64,
            "count stays under high"
        );
    }
    m.z.check().unwrap();
}

#[test]
fn unmovable_request_claims_a_whole_free_pageblock() {
    let mut m = Mem::new(4096, 1);
    let pfn = m.alloc(UNMOVABLE, 0).unwrap();
    // The first pass (NOFRAGMENT) claims the largest movable block: both its pageblocks.
    assert_eq!(m.z.pageblock_mt(pfn), MigrateType::Unmovable);
    let nr = m.z.free_area().nr_pageblocks;
    assert_eq!(nr[MigrateType::Unmovable as usize], 2);
    assert_eq!(nr[MigrateType::Movable as usize], 6);
    assert_eq!(m.z.extfrag.events, 1);
    assert_eq!(m.z.extfrag.fragmenting, 0);
    assert_eq!(m.z.extfrag.change_ownership, 1);
    assert_eq!(
        m.z.watermark_boost, 0,
        "no boost for a whole-pageblock claim"
    );
    m.z.check().unwrap();
}

/// A zone whose every page is allocated movable (order 0), then `free` ranges freed and the
/// pcp lists drained: pageblocks with those free pages and the rest movable.
fn fragmented(free: &[(u32, u32)]) -> (Mem, Vec<bool>) {
    let mut m = Mem::new(4096, 1);
    let mut held = vec![false; 4096];
    while let Some(p) = m.alloc_any(MOVABLE, 0) {
        held[p as usize] = true;
    }
    assert!(held.iter().all(|&h| h));
    for &(start, end) in free {
        for p in start..end {
            m.free(p, 0);
            held[p as usize] = false;
        }
    }
    m.z.drain_all_pages(&mut m.c);
    m.z.check().unwrap();
    (m, held)
}

#[test]
fn fallback_claims_a_pageblock_that_is_mostly_free() {
    // 300 free pages in pageblock 0: free + alike (0 for unmovable from movable when the rest
    // is movable) = 300 >= 256.
    let (mut m, _) = fragmented(&[(0, 300)]);
    let pfn = m.alloc(UNMOVABLE, 0).unwrap();
    assert!(pfn < 512);
    assert_eq!(m.z.pageblock_mt(0), MigrateType::Unmovable);
    assert_eq!(m.z.extfrag.events, 1);
    assert_eq!(
        m.z.extfrag.fragmenting, 1,
        "the block it came from was under a pageblock"
    );
    assert_eq!(m.z.extfrag.change_ownership, 1);
    // Its other free pages went to the unmovable lists with it.
    let unmovable_free: u32 = (0..=MAX_PAGE_ORDER)
        .map(|o| m.z.free_area().nr_blocks(o, MigrateType::Unmovable) << o)
        .sum();
    assert_eq!(unmovable_free as u64 + m.z.nr_pcp_pages(), 299);
    m.z.check().unwrap();
}

#[test]
fn fallback_steals_one_block_and_boosts_when_the_pageblock_is_mostly_used() {
    // 100 free pages in pageblock 1 (below the low watermark: allocate ignoring it): 100 < 256,
    // so no claim; one block is stolen.
    let (mut m, _) = fragmented(&[(512, 612)]);
    let flags = AllocFlags::NO_WATERMARKS.with(AllocFlags::KSWAPD);
    let pfn = m.alloc_flags(UNMOVABLE, 0, flags).unwrap();
    assert!((512..612).contains(&pfn));
    assert_eq!(
        m.z.pageblock_mt(512),
        MigrateType::Movable,
        "the pageblock keeps its type"
    );
    assert_eq!(m.z.extfrag.events, 1);
    assert_eq!(m.z.extfrag.change_ownership, 0);
    // The failed claim boosted the watermarks by a pageblock and flagged kswapd's wakeup,
    // which the same allocation (ALLOC_KSWAPD) then made.
    assert_eq!(m.z.watermark_boost, 512);
    assert!(!m.z.boosted_watermark);
    assert!(m.kswapd.woken);
    m.z.check().unwrap();
}

#[test]
fn movable_requests_steal_small_blocks_without_trying_to_claim() {
    let mut m = Mem::new(4096, 1);
    // Two unmovable pageblocks (claimed whole by the first request), all but 3 pages used.
    for _ in 0..1021 {
        m.alloc_any(UNMOVABLE, 0).unwrap();
    }
    // Refills grew (alloc_factor): give back what waits on the unmovable pcp list.
    m.z.drain_all_pages(&mut m.c);
    let mut movable = 0;
    while m.alloc_any(MOVABLE, 0).is_some() {
        movable += 1;
    }
    assert_eq!(movable, 4096 - 1021);
    // The last 3 movable pages came from the unmovable pageblock's small blocks: stolen
    // without a claim attempt (so no boost), the pageblock still unmovable.
    assert_eq!(m.z.extfrag.events, 1 + 3);
    assert_eq!(m.z.watermark_boost, 0);
    let nr = m.z.free_area().nr_pageblocks;
    assert_eq!(
        (
            nr[MigrateType::Unmovable as usize],
            nr[MigrateType::Movable as usize]
        ),
        (2, 6)
    );
    m.z.check().unwrap();
}

#[test]
fn watermark_needs_a_free_block_of_the_order() {
    // Every other page free: plenty of order-0 free pages, no order-1 block.
    let evens: Vec<_> = (0..2048).map(|i| (2 * i, 2 * i + 1)).collect();
    let (m, _) = fragmented(&evens);
    assert_eq!(m.z.nr_free_pages(), 2048);
    let min = m.z.wmark_pages(Wmark::Min);
    assert!(m.z.watermark_ok(0, min, AllocFlags::WMARK_MIN));
    assert!(!m.z.watermark_ok(1, min, AllocFlags::WMARK_MIN));
    // And order-0 fails once the free pages are at the mark.
    assert!(!m.z.watermark_ok(0, 2048, AllocFlags::WMARK_MIN));
}

#[test]
fn buddyinfo_and_pagetypeinfo_print_as_the_kernel_does() {
    let z = zone(4096 + 512 + 3, 1);
    assert_eq!(
        z.buddyinfo(),
        "Node 0, zone   Normal      1      1      0      0      0      0      0      0      0      1      4 \n"
    );
    let p = z.pagetypeinfo();
    let lines: Vec<&str> = p.lines().collect();
    assert_eq!(lines[0], "Page block order: 9");
    assert_eq!(lines[1], "Pages per block:  512");
    assert_eq!(lines[2], "");
    assert_eq!(
        lines[3],
        "Free pages count per migrate type at order       0      1      2      3      4      5      6      7      8      9     10 "
    );
    assert_eq!(
        lines[5],
        "Node    0, zone   Normal, type      Movable      1      1      0      0      0      0      0      0      0      1      4 "
    );
    assert_eq!(
        lines[10],
        "Number of blocks type     Unmovable      Movable  Reclaimable   HighAtomic      Isolate "
    );
    assert_eq!(
        lines[11],
        "Node 0, zone   Normal            0           10            0            0            0 "
    );
}

proptest! {
    /// Random alloc/free sequences of every order, migratetype and CPU: no page handed out
    /// twice, blocks aligned, the allocator's invariants hold, and free (buddy + pcp) plus
    /// allocated is the zone.
    #[test]
    fn random_sequences_keep_the_invariants(
        ops in prop::collection::vec((0u32..=10, 0u8..3, any::<bool>(), any::<u16>()), 1..300)
    ) {
        let total = 8192u32;
        let mut m = Mem::new(total, 2);
        let mut owned = vec![false; total as usize];
        let mut live: Vec<(u32, u32)> = Vec::new();
        for (order, mt, alloc_op, pick) in ops {
            m.c.cpu = (pick % 2) as usize;
            let gfp = [Gfp::GFP_KERNEL, MOVABLE, Gfp::GFP_KERNEL | Gfp::RECLAIMABLE][mt as usize];
            if alloc_op || live.is_empty() {
                let got = if pick % 7 == 0 {
                    m.alloc_any(gfp, order)
                } else {
                    m.alloc(gfp, order)
                };
                if let Some(pfn) = got {
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
                m.free(pfn, order);
            }
            if pick % 31 == 0 {
                m.z.drain_all_pages(&mut m.c);
            }
            let free = m.z.check().map_err(TestCaseError::fail)?;
            let allocated: u64 = live.iter().map(|&(_, o)| 1u64 << o).sum();
            prop_assert_eq!(m.z.nr_free_pages() + m.z.nr_pcp_pages() + allocated, total as u64);
            for p in 0..total as usize {
                prop_assert!(!(free[p] && owned[p]), "pfn {} free and owned", p);
                prop_assert!(free[p] || owned[p], "pfn {} neither free nor owned", p);
            }
        }
    }
}

proptest! {
    /// rmqueue_smallest_bulk takes the blocks, and leaves the lists, as repeated
    /// __rmqueue_smallest would, whatever the free blocks and the run's length.
    #[test]
    fn bulk_takes_match_one_by_one_takes(
        free in prop::collection::vec(any::<bool>(), 256),
        order in 0u32..=3,
        max in 1u32..200,
    ) {
        let mut one = FreeArea::new(4096);
        for (i, _) in free.iter().enumerate().filter(|(_, &f)| f) {
            // Blocks of mixed orders, some merging into larger ones.
            one.free_pages_ok(i as u32 * 16, (i % 5) as u32, i % 3 == 0);
        }
        let mut bulk = FreeArea::new(4096);
        for (i, _) in free.iter().enumerate().filter(|(_, &f)| f) {
            bulk.free_pages_ok(i as u32 * 16, (i % 5) as u32, i % 3 == 0);
        }
        let mut expect = std::collections::VecDeque::new();
        while expect.len() < max as usize {
            let Some(pfn) = one.rmqueue_smallest(order, MigrateType::Movable) else { break };
            expect.push_back(pfn);
        }
        let mut got = std::collections::VecDeque::new();
        let taken = bulk.rmqueue_smallest_bulk(order, MigrateType::Movable, max, &mut got);
        prop_assert_eq!(taken as usize, got.len());
        prop_assert_eq!(&got, &expect);
        prop_assert_eq!(bulk.nr_free_pages, one.nr_free_pages);
        for o in 0..=MAX_PAGE_ORDER {
            prop_assert_eq!(
                bulk.list(o, MigrateType::Movable).collect::<Vec<_>>(),
                one.list(o, MigrateType::Movable).collect::<Vec<_>>()
            );
        }
        bulk.check().map_err(TestCaseError::fail)?;
    }
}

proptest! {
    /// free_pcppages_bulk's shortcut: freeing a block and then its buddy leaves the lists as
    /// freeing the pair as one block of the order above.
    #[test]
    fn a_block_then_its_buddy_free_as_the_pair(
        free in prop::collection::vec(any::<bool>(), 256),
        order in 0u32..=3,
        pick in any::<u16>(),
    ) {
        let build = || {
            let mut a = FreeArea::new(4096);
            for (i, _) in free.iter().enumerate().filter(|(_, &f)| f) {
                a.free_pages_ok(i as u32 * 16, (i % 5) as u32, i % 3 == 0);
            }
            a
        };
        let (mut one, mut pair) = (build(), build());
        let is_free = one.check().map_err(TestCaseError::fail)?;
        // An allocated pair of buddies of `order`, the first found from `pick` on.
        let step = 2u32 << order;
        let Some(first) = (0..4096 / step)
            .map(|k| (pick as u32 / step + k) % (4096 / step) * step)
            .find(|&p| (p..p + step).all(|q| !is_free[q as usize]))
        else {
            return Ok(());
        };
        let (p, q) = if pick % 2 == 0 { (first, first + (1 << order)) } else { (first + (1 << order), first) };
        let mt = one.pageblock_mt(p);
        one.free_one_page(p, order, mt, false);
        one.free_one_page(q, order, mt, false);
        pair.free_one_page(first, order + 1, mt, false);
        prop_assert_eq!(pair.nr_free_pages, one.nr_free_pages);
        for o in 0..=MAX_PAGE_ORDER {
            prop_assert_eq!(
                pair.list(o, mt).collect::<Vec<_>>(),
                one.list(o, mt).collect::<Vec<_>>()
            );
        }
        pair.check().map_err(TestCaseError::fail)?;
    }
}
