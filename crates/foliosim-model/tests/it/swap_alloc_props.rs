//! Properties of the swap slot allocators, driven through the public API with random sequences
//! of allocations (random CPU, order, batch size) and frees (whole ranges or pieces of them, as
//! `release_range` in swapfile.rs hands runs back).

use foliosim_model::engine::cost::CostModel;
use foliosim_model::engine::Ctx;
use foliosim_model::mm::folio::SwapEntry;
use foliosim_model::mm::swap_alloc::{new_allocator, SwapAllocator};
use foliosim_model::mm::swapfile::{SwapMap, SWAPFILE_CLUSTER, SWAP_HAS_CACHE};
use foliosim_model::scenario::{SwapAllocatorKind, PMD_ORDER};
use proptest::prelude::*;

const CLUSTER: u32 = SWAPFILE_CLUSTER;

#[derive(Debug, Clone)]
enum Op {
    /// Allocate on `cpu % ncpus`; `order_pick` chooses among the orders the policy stores whole;
    /// `batch` asks for 64 ranges at order 0 (the slot cache refill).
    Alloc {
        cpu: usize,
        order_pick: usize,
        batch: bool,
    },
    /// Free live range `pick % live.len()`: the whole of it, or the piece [lo, hi) of it in
    /// fractions of its length.
    Free {
        pick: usize,
        whole: bool,
        lo: u8,
        hi: u8,
    },
}

fn op() -> impl Strategy<Value = Op> {
    prop_oneof![
        3 => (0usize..8, 0usize..64, any::<bool>()).prop_map(|(cpu, order_pick, batch)| Op::Alloc { cpu, order_pick, batch }),
        2 => (any::<usize>(), any::<bool>(), any::<u8>(), any::<u8>()).prop_map(|(pick, whole, lo, hi)| Op::Free { pick, whole, lo, hi }),
    ]
}

struct Harness {
    kind: SwapAllocatorKind,
    map: SwapMap,
    alloc: Box<dyn SwapAllocator>,
    cost: CostModel,
    ncpus: usize,
    /// Live ranges (offset, nr), as the test's folios would own them.
    live: Vec<(u32, u32)>,
    /// Per slot: handed out and not freed since.
    owned: Vec<bool>,
    orders: Vec<u32>,
}

impl Harness {
    fn new(kind: SwapAllocatorKind, pages: u64, ncpus: usize) -> Harness {
        let map = SwapMap::new(0, pages, true, true, false);
        let alloc = new_allocator(kind, &map, ncpus, 0);
        let orders: Vec<u32> = (0..=PMD_ORDER)
            .filter(|&o| alloc.swapout_whole(o))
            .collect();
        let owned = vec![false; map.swap_map.len()];
        Harness {
            kind,
            map,
            alloc,
            cost: CostModel::profile("vm-6.18-2cpu").unwrap(),
            ncpus,
            live: Vec::new(),
            owned,
            orders,
        }
    }

    fn wholly_free_cluster(&self) -> Option<u32> {
        (1..self.map.nr_clusters()).find(|&c| self.map.range_free(c * CLUSTER, CLUSTER))
    }

    fn check(&self, what: &str) -> Result<(), TestCaseError> {
        self.alloc.check(&self.map).map_err(|e| {
            TestCaseError::fail(format!("{:?} after {what}: check: {e}", self.kind))
        })?;
        let inuse = self
            .map
            .swap_map
            .iter()
            .enumerate()
            .filter(|&(s, &b)| b == SWAP_HAS_CACHE && self.owned[s])
            .count() as u32;
        prop_assert_eq!(
            inuse,
            self.map.inuse_pages,
            "{:?} after {}: owned slots vs inuse_pages",
            self.kind,
            what
        );
        Ok(())
    }

    fn alloc(&mut self, cpu: usize, order_pick: usize, batch: bool) -> Result<(), TestCaseError> {
        let cpu = cpu % self.ncpus;
        let order = self.orders[order_pick % self.orders.len()];
        let n = if order == 0 && batch { 64 } else { 1 };
        let nr = 1u32 << order;
        let free_before = self.map.free_pages();
        let free_cluster = self.wholly_free_cluster();
        let mut ctx = Ctx::new(cpu, 0);
        let mut out: Vec<SwapEntry> = Vec::new();
        self.alloc
            .alloc(&mut self.map, &mut ctx, &self.cost, order, n, &mut out);
        prop_assert!(out.len() <= n);
        for e in &out {
            let off = e.offset();
            prop_assert_eq!(e.dev(), 0);
            prop_assert_eq!(
                off % nr,
                0,
                "{:?}: order-{} range at {} is not aligned",
                self.kind,
                order,
                off
            );
            prop_assert_eq!(
                off / CLUSTER,
                (off + nr - 1) / CLUSTER,
                "{:?}: order-{} range at {} crosses a cluster",
                self.kind,
                order,
                off
            );
            prop_assert!(
                off >= 1 && off + nr <= self.map.max,
                "{:?}: range {}+{} outside the device",
                self.kind,
                off,
                nr
            );
            for s in off..off + nr {
                prop_assert!(
                    !self.owned[s as usize],
                    "{:?}: slot {} handed out twice",
                    self.kind,
                    s
                );
                prop_assert_eq!(
                    self.map.swap_map[s as usize],
                    SWAP_HAS_CACHE,
                    "{:?}: slot {} not HAS_CACHE",
                    self.kind,
                    s
                );
                self.owned[s as usize] = true;
            }
            self.live.push((off, nr));
        }
        prop_assert_eq!(self.map.free_pages(), free_before - out.len() as u32 * nr);
        if order == 0 {
            prop_assert_eq!(
                out.len() as u32,
                (n as u32).min(free_before),
                "{:?}: order-0 x{} on cpu {} got {} with {} free",
                self.kind,
                n,
                cpu,
                out.len(),
                free_before
            );
        } else if let Some(c) = free_cluster {
            prop_assert_eq!(
                out.len(),
                1,
                "{:?}: order {} failed on cpu {} though cluster {} is wholly free",
                self.kind,
                order,
                cpu,
                c
            );
        }
        self.check(&format!("alloc order {order} x{n} cpu {cpu}"))
    }

    /// What release_range does: swap_map to 0, inuse_pages down, then the policy's on_free.
    fn free(&mut self, pick: usize, whole: bool, lo: u8, hi: u8) -> Result<(), TestCaseError> {
        if self.live.is_empty() {
            return Ok(());
        }
        let (off, nr) = self.live.swap_remove(pick % self.live.len());
        let (a, b) = if whole {
            (0, nr)
        } else {
            let (x, y) = ((lo as u32 * nr) / 256, (hi as u32 * nr) / 256);
            let (a, b) = (x.min(y), x.max(y) + 1);
            (a, b.min(nr))
        };
        if a > 0 {
            self.live.push((off, a));
        }
        if b < nr {
            self.live.push((off + b, nr - b));
        }
        for s in off + a..off + b {
            prop_assert!(self.owned[s as usize]);
            self.owned[s as usize] = false;
            self.map.swap_map[s as usize] = 0;
        }
        self.map.inuse_pages -= b - a;
        let mut ctx = Ctx::new(0, 0);
        self.alloc
            .on_free(&mut self.map, &mut ctx, &self.cost, off + a, b - a);
        self.check(&format!("free {}+{}", off + a, b - a))
    }
}

fn run(kind: SwapAllocatorKind, pages: u64, ncpus: usize, ops: &[Op]) -> Result<(), TestCaseError> {
    let mut h = Harness::new(kind, pages, ncpus);
    h.check("swapon")?;
    for op in ops {
        match *op {
            Op::Alloc {
                cpu,
                order_pick,
                batch,
            } => h.alloc(cpu, order_pick, batch)?,
            Op::Free {
                pick,
                whole,
                lo,
                hi,
            } => h.free(pick, whole, lo, hi)?,
        }
    }
    // Free everything: the device is empty again and every cluster but 0 is wholly free.
    while !h.live.is_empty() {
        h.free(0, true, 0, 0)?;
    }
    prop_assert_eq!(h.map.inuse_pages, 0);
    for c in 1..h.map.nr_clusters() {
        let full = (c + 1) * CLUSTER <= h.map.max;
        if full {
            let mut ctx = Ctx::new(0, 0);
            let mut out = Vec::new();
            if h.alloc.swapout_whole(PMD_ORDER) {
                h.alloc
                    .alloc(&mut h.map, &mut ctx, &h.cost, PMD_ORDER, 1, &mut out);
                prop_assert_eq!(out.len(), 1, "{:?}: empty device refused a PMD range", kind);
                h.live.push((out[0].offset(), CLUSTER));
                for s in out[0].offset()..out[0].offset() + CLUSTER {
                    h.owned[s as usize] = true;
                }
                h.check("final PMD alloc")?;
            }
        }
    }
    Ok(())
}

/// Small devices (2..=8 clusters, sometimes with a partial last cluster) so the sequences reach
/// full and near-full states.
fn pages() -> impl Strategy<Value = u64> {
    (2u64..=8, prop_oneof![Just(0u64), 1u64..CLUSTER as u64])
        .prop_map(|(c, extra)| c * CLUSTER as u64 + extra)
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 200, ..ProptestConfig::default() })]

    #[test]
    fn legacy_allocator(pages in pages(), ncpus in 1usize..=4, ops in prop::collection::vec(op(), 1..300)) {
        run(SwapAllocatorKind::Legacy, pages, ncpus, &ops)?;
    }

    #[test]
    fn percpu_order_allocator(pages in pages(), ncpus in 1usize..=4, ops in prop::collection::vec(op(), 1..300)) {
        run(SwapAllocatorKind::PercpuOrder, pages, ncpus, &ops)?;
    }

    #[test]
    fn cluster_lists_c12_allocator(pages in pages(), ncpus in 1usize..=4, ops in prop::collection::vec(op(), 1..300)) {
        run(SwapAllocatorKind::ClusterListsC12, pages, ncpus, &ops)?;
    }

    #[test]
    fn cluster_lists_c18_allocator(pages in pages(), ncpus in 1usize..=4, ops in prop::collection::vec(op(), 1..300)) {
        run(SwapAllocatorKind::ClusterListsC18, pages, ncpus, &ops)?;
    }
}

const ALL_KINDS: [SwapAllocatorKind; 4] = [
    SwapAllocatorKind::Legacy,
    SwapAllocatorKind::PercpuOrder,
    SwapAllocatorKind::ClusterListsC12,
    SwapAllocatorKind::ClusterListsC18,
];

/// Fill a device with order 0 only, then free scattered single slots: order 0 still finds each
/// one (the linear scan), and a large order fails (no free cluster) without disturbing anything.
#[test]
fn order0_finds_every_last_slot() {
    for kind in ALL_KINDS {
        let mut h = Harness::new(kind, 4 * CLUSTER as u64, 2);
        while h.map.free_pages() > 0 {
            h.alloc(h.map.free_pages() as usize, 0, true).unwrap();
        }
        h.alloc(0, 0, true).unwrap();
        assert_eq!(h.map.free_pages(), 0);
        h.live.sort();
        for i in (0..h.live.len())
            .step_by(97)
            .collect::<Vec<_>>()
            .into_iter()
            .rev()
        {
            h.free(i, true, 0, 0).unwrap();
        }
        let large = *h.orders.last().unwrap();
        let mut out = Vec::new();
        h.alloc
            .alloc(&mut h.map, &mut Ctx::new(1, 0), &h.cost, large, 1, &mut out);
        assert!(
            out.is_empty(),
            "{kind:?}: order {large} allocated with no free cluster"
        );
        h.check("failed large alloc").unwrap();
        while h.map.free_pages() > 0 {
            h.alloc(1, 0, false).unwrap();
        }
    }
}

/// A rotational device (kind = "hdd": solidstate false) has no swap clusters in the kernel
/// before 6.12 (cluster_info is NULL), so scan_swap_map_slots takes any free slot. Order-0
/// allocation must therefore succeed while any slot is free. Regression: the linear scan once
/// skipped every slot of a "free" cluster, so allocation stopped after cluster 0.
#[test]
fn rotational_device_order0_uses_every_slot() {
    for kind in ALL_KINDS {
        let mut map = SwapMap::new(0, 4 * CLUSTER as u64, false, false, false);
        let mut alloc = new_allocator(kind, &map, 1, 0);
        let cost = CostModel::profile("vm-6.18-2cpu").unwrap();
        let mut got = 0u32;
        while map.free_pages() > 0 {
            let mut out = Vec::new();
            alloc.alloc(&mut map, &mut Ctx::new(0, 0), &cost, 0, 64, &mut out);
            assert!(
                !out.is_empty(),
                "{kind:?}: rotational device refused order 0 after {got} slots with {} of {} free",
                map.free_pages(),
                map.pages
            );
            got += out.len() as u32;
            alloc.check(&map).unwrap();
        }
    }
}

fn ctx_at(cpu: usize, now_ns: u64) -> Ctx<'static> {
    Ctx::new(cpu, now_ns)
}

/// Seed 003's mTHP reserve: order 0 never takes or steals a reserved cluster, so a 64K range
/// is still there after order 0 has used every other slot.
#[test]
fn mthp_reserve_is_kept_from_order0() {
    let cost = CostModel::profile("vm-6.18-2cpu").unwrap();
    for kind in [
        SwapAllocatorKind::ClusterListsC12,
        SwapAllocatorKind::ClusterListsC18,
    ] {
        let mut map = SwapMap::new(0, 8 * CLUSTER as u64, true, true, false);
        let mut alloc = new_allocator(kind, &map, 2, 25);
        let reserved_from = 6 * CLUSTER;
        let mut got = 0;
        loop {
            let mut out = Vec::new();
            alloc.alloc(&mut map, &mut ctx_at(got % 2, 0), &cost, 0, 1, &mut out);
            let Some(e) = out.pop() else { break };
            assert!(
                e.offset() < reserved_from,
                "{kind:?}: order 0 in the reserve"
            );
            got += 1;
        }
        assert_eq!(
            got,
            6 * CLUSTER as usize - 1,
            "{kind:?}: every unreserved slot"
        );
        let mut out = Vec::new();
        alloc.alloc(&mut map, &mut ctx_at(0, 0), &cost, 4, 1, &mut out);
        assert_eq!(out.len(), 1, "{kind:?}: 64K from the reserve");
        alloc.check(&map).unwrap();
    }
}

/// On a discard device a freed cluster is reused only after its discard completes. Out of
/// clusters, 6.12 waits for pending discards for any order; 6.18 only for order 0, so its
/// PMD request fails meanwhile.
#[test]
fn discarded_cluster_waits_for_its_discard() {
    let cost = CostModel::profile("vm-6.18-2cpu").unwrap();
    for kind in [
        SwapAllocatorKind::ClusterListsC12,
        SwapAllocatorKind::ClusterListsC18,
    ] {
        let mut map = SwapMap::new(0, 2 * CLUSTER as u64, true, false, true);
        let mut alloc = new_allocator(kind, &map, 1, 0);
        let mut out = Vec::new();
        alloc.alloc(&mut map, &mut ctx_at(0, 0), &cost, PMD_ORDER, 1, &mut out);
        let e = out.pop().expect("the one free cluster");
        // Free it: swap_map to 0, then the policy queues the discard.
        for s in e.offset()..e.offset() + CLUSTER {
            map.swap_map[s as usize] = 0;
        }
        map.inuse_pages -= CLUSTER;
        alloc.on_free(&mut map, &mut ctx_at(0, 1000), &cost, e.offset(), CLUSTER);
        assert_eq!(map.discarded_clusters, vec![e.offset() / CLUSTER]);
        alloc.check(&map).unwrap();
        let done = 1000 + cost.swap_discard_cluster_ns;
        let mut early = ctx_at(0, 2000);
        alloc.alloc(&mut map, &mut early, &cost, PMD_ORDER, 1, &mut out);
        if kind == SwapAllocatorKind::ClusterListsC12 {
            assert_eq!(out.len(), 1, "C12 waits for the discard");
            assert!(early.now_ns >= done, "C12 waited until {}", early.now_ns);
            continue;
        }
        assert!(out.is_empty(), "{kind:?}: reused a cluster being discarded");
        // (The free itself took time under ci->lock before queueing the discard.)
        alloc.alloc(
            &mut map,
            &mut ctx_at(0, done + 1_000_000),
            &cost,
            PMD_ORDER,
            1,
            &mut out,
        );
        assert_eq!(out.len(), 1, "{kind:?}: discard completed");
        alloc.check(&map).unwrap();
    }
}
