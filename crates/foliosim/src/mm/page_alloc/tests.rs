//! Unit tests per mechanism of the page allocator, and a property test of random allocation
//! and free sequences against the allocator's invariants.

use super::*;
use crate::mm::gfp::Gfp;
use crate::mm::vmscan::kswapd::KswapdState;
use proptest::prelude::*;

fn ctx() -> Ctx {
    Ctx {
        cpu: 0,
        now_ns: 0,
        step_start_ns: 0,
        lock_handoff_ns: 0,
        sleep_ns: 0,
    }
}

fn zone(nr_pages: u32, cpus: usize) -> Zone {
    Zone::new(nr_pages, cpus, Zone::default_sysctl(nr_pages))
}

const MOVABLE: Gfp = Gfp::GFP_HIGHUSER_MOVABLE;
const UNMOVABLE: Gfp = Gfp::GFP_KERNEL;

/// One allocation as the fast path makes it (low watermark, NOFRAGMENT first).
fn alloc(z: &mut Zone, c: &mut Ctx, gfp: Gfp, order: u32) -> Option<u32> {
    let flags = AllocFlags::WMARK_LOW
        .with(AllocFlags::NOFRAGMENT)
        .with(AllocFlags::KSWAPD);
    z.get_page_from_freelist(&mut KswapdState::default(), c, gfp, order, flags)
}

/// One allocation ignoring the watermarks.
fn alloc_any(z: &mut Zone, c: &mut Ctx, gfp: Gfp, order: u32) -> Option<u32> {
    z.get_page_from_freelist(
        &mut KswapdState::default(),
        c,
        gfp,
        order,
        AllocFlags::NO_WATERMARKS,
    )
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
    let mut z = zone(8192, 2);
    let before = z.free_blocks_by_order();
    let mut c = ctx();
    let mut pages = Vec::new();
    for i in 0..200 {
        c.cpu = i % 2;
        pages.push(alloc(&mut z, &mut c, MOVABLE, 0).unwrap());
    }
    let a = alloc(&mut z, &mut c, MOVABLE, 3).unwrap();
    let b = alloc(&mut z, &mut c, MOVABLE, 9).unwrap();
    z.check().unwrap();
    for (i, p) in pages.into_iter().enumerate() {
        c.cpu = (i + 1) % 2;
        z.free(&mut c, p, 0);
    }
    z.free(&mut c, a, 3);
    z.free(&mut c, b, 9);
    assert!(z.nr_pcp_pages() > 0, "frees wait on the per-CPU lists");
    assert!(z.nr_free_pages() < 8192, "pcp pages are not NR_FREE_PAGES");
    z.drain_all_pages(&mut c);
    assert_eq!(z.nr_pcp_pages(), 0);
    assert_eq!(z.free_blocks_by_order(), before);
    assert_eq!(z.nr_free_pages(), 8192);
    z.check().unwrap();
}

#[test]
fn order_0_refills_in_batches_and_thp_goes_through_the_pcp() {
    let mut z = zone(262_144, 1);
    let mut c = ctx();
    alloc(&mut z, &mut c, MOVABLE, 0).unwrap();
    // nr_pcp_alloc: the first refill takes batch (63) pages, one is handed out.
    assert_eq!(z.nr_pcp_pages(), 62);
    // PMD order: a refill takes max(batch >> 9, 2) = 2 blocks.
    let thp = alloc(&mut z, &mut c, MOVABLE, 9).unwrap();
    assert_eq!(z.nr_pcp_pages(), 62 + 512);
    let thp2 = alloc(&mut z, &mut c, MOVABLE, 9).unwrap();
    assert_eq!(thp2, thp + 512, "the refill's second block, in pfn order");
    assert_eq!(z.nr_pcp_pages(), 62);
    z.check().unwrap();
}

#[test]
fn freeing_past_pcp_high_drains_to_the_buddy_lists() {
    let mut z = zone(262_144, 1);
    let mut c = ctx();
    let pages: Vec<u32> = (0..1000)
        .map(|_| alloc(&mut z, &mut c, MOVABLE, 0).unwrap())
        .collect();
    for p in pages {
        z.free(&mut c, p, 0);
        assert!(
            z.nr_pcp_pages() < z.pcp_high as u64,
            "count stays under high"
        );
    }
    z.check().unwrap();
}

#[test]
fn unmovable_request_claims_a_whole_free_pageblock() {
    let mut z = zone(4096, 1);
    let mut c = ctx();
    let pfn = alloc(&mut z, &mut c, UNMOVABLE, 0).unwrap();
    // The first pass (NOFRAGMENT) claims the largest movable block: both its pageblocks.
    assert_eq!(z.pageblock_mt(pfn), MigrateType::Unmovable);
    let nr = z.free_area().nr_pageblocks;
    assert_eq!(nr[MigrateType::Unmovable as usize], 2);
    assert_eq!(nr[MigrateType::Movable as usize], 6);
    assert_eq!(z.extfrag.events, 1);
    assert_eq!(z.extfrag.fragmenting, 0);
    assert_eq!(z.extfrag.change_ownership, 1);
    assert_eq!(z.watermark_boost, 0, "no boost for a whole-pageblock claim");
    z.check().unwrap();
}

/// A zone whose every page is allocated movable (order 0), then `free` ranges freed and the
/// pcp lists drained: pageblocks with those free pages and the rest movable.
fn fragmented(free: &[std::ops::Range<u32>]) -> (Zone, Ctx, Vec<bool>) {
    let mut z = zone(4096, 1);
    let mut c = ctx();
    let mut held = vec![false; 4096];
    while let Some(p) = alloc_any(&mut z, &mut c, MOVABLE, 0) {
        held[p as usize] = true;
    }
    assert!(held.iter().all(|&h| h));
    for r in free {
        for p in r.clone() {
            z.free(&mut c, p, 0);
            held[p as usize] = false;
        }
    }
    z.drain_all_pages(&mut c);
    z.check().unwrap();
    (z, c, held)
}

#[test]
fn fallback_claims_a_pageblock_that_is_mostly_free() {
    // 300 free pages in pageblock 0: free + alike (0 for unmovable from movable when the rest
    // is movable) = 300 >= 256.
    let (mut z, mut c, _) = fragmented(&[0..300]);
    let pfn = alloc(&mut z, &mut c, UNMOVABLE, 0).unwrap();
    assert!(pfn < 512);
    assert_eq!(z.pageblock_mt(0), MigrateType::Unmovable);
    assert_eq!(z.extfrag.events, 1);
    assert_eq!(
        z.extfrag.fragmenting, 1,
        "the block it came from was under a pageblock"
    );
    assert_eq!(z.extfrag.change_ownership, 1);
    // Its other free pages went to the unmovable lists with it.
    let unmovable_free: u32 = (0..=MAX_PAGE_ORDER)
        .map(|o| z.free_area().nr_blocks(o, MigrateType::Unmovable) << o)
        .sum();
    assert_eq!(unmovable_free as u64 + z.nr_pcp_pages(), 299);
    z.check().unwrap();
}

#[test]
fn fallback_steals_one_block_and_boosts_when_the_pageblock_is_mostly_used() {
    // 100 free pages in pageblock 1 (below the low watermark: allocate ignoring it): 100 < 256,
    // so no claim; one block is stolen.
    let (mut z, mut c, _) = fragmented(&[512..612]);
    let flags = AllocFlags::NO_WATERMARKS.with(AllocFlags::KSWAPD);
    let mut kswapd = KswapdState::default();
    let pfn = z
        .get_page_from_freelist(&mut kswapd, &mut c, UNMOVABLE, 0, flags)
        .unwrap();
    assert!((512..612).contains(&pfn));
    assert_eq!(
        z.pageblock_mt(512),
        MigrateType::Movable,
        "the pageblock keeps its type"
    );
    assert_eq!(z.extfrag.events, 1);
    assert_eq!(z.extfrag.change_ownership, 0);
    // The failed claim boosted the watermarks by a pageblock and flagged kswapd's wakeup,
    // which the same allocation (ALLOC_KSWAPD) then made.
    assert_eq!(z.watermark_boost, 512);
    assert!(!z.boosted_watermark);
    assert!(kswapd.woken);
    z.check().unwrap();
}

#[test]
fn movable_requests_steal_small_blocks_without_trying_to_claim() {
    let mut z = zone(4096, 1);
    let mut c = ctx();
    // Two unmovable pageblocks (claimed whole by the first request), all but 3 pages used.
    for _ in 0..1021 {
        alloc_any(&mut z, &mut c, UNMOVABLE, 0).unwrap();
    }
    // Refills grew (alloc_factor): give back what waits on the unmovable pcp list.
    z.drain_all_pages(&mut c);
    let mut movable = 0;
    while alloc_any(&mut z, &mut c, MOVABLE, 0).is_some() {
        movable += 1;
    }
    assert_eq!(movable, 4096 - 1021);
    // The last 3 movable pages came from the unmovable pageblock's small blocks: stolen
    // without a claim attempt (so no boost), the pageblock still unmovable.
    assert_eq!(z.extfrag.events, 1 + 3);
    assert_eq!(z.watermark_boost, 0);
    let nr = z.free_area().nr_pageblocks;
    assert_eq!(
        (
            nr[MigrateType::Unmovable as usize],
            nr[MigrateType::Movable as usize]
        ),
        (2, 6)
    );
    z.check().unwrap();
}

#[test]
fn watermark_needs_a_free_block_of_the_order() {
    // Every other page free: plenty of order-0 free pages, no order-1 block.
    let evens: Vec<_> = (0..2048).map(|i| 2 * i..2 * i + 1).collect();
    let (z, _, _) = fragmented(&evens);
    assert_eq!(z.nr_free_pages(), 2048);
    let min = z.wmark_pages(Wmark::Min);
    assert!(z.watermark_ok(0, min, AllocFlags::WMARK_MIN));
    assert!(!z.watermark_ok(1, min, AllocFlags::WMARK_MIN));
    // And order-0 fails once the free pages are at the mark.
    assert!(!z.watermark_ok(0, 2048, AllocFlags::WMARK_MIN));
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
        let mut z = zone(total, 2);
        let mut owned = vec![false; total as usize];
        let mut live: Vec<(u32, u32)> = Vec::new();
        let mut c = ctx();
        for (order, mt, alloc_op, pick) in ops {
            c.cpu = (pick % 2) as usize;
            let gfp = [Gfp::GFP_KERNEL, MOVABLE, Gfp::GFP_KERNEL | Gfp::RECLAIMABLE][mt as usize];
            if alloc_op || live.is_empty() {
                let got = if pick % 7 == 0 {
                    alloc_any(&mut z, &mut c, gfp, order)
                } else {
                    alloc(&mut z, &mut c, gfp, order)
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
                z.free(&mut c, pfn, order);
            }
            if pick % 31 == 0 {
                z.drain_all_pages(&mut c);
            }
            let free = z.check().map_err(|e| TestCaseError::fail(e))?;
            let allocated: u64 = live.iter().map(|&(_, o)| 1u64 << o).sum();
            prop_assert_eq!(z.nr_free_pages() + z.nr_pcp_pages() + allocated, total as u64);
            for p in 0..total as usize {
                prop_assert!(!(free[p] && owned[p]), "pfn {} free and owned", p);
                prop_assert!(free[p] || owned[p], "pfn {} neither free nor owned", p);
            }
        }
    }
}
