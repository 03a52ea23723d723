//! The cluster-list allocator as merged for 6.12 (spec-swap.md §5.1): per-CPU per-order next
//! offset, then the free list, then nonfull[order] clusters (each moved to frag[order] as it is
//! tried), then up to frag_cluster_nr[order] fragment clusters, then (order 0 only) stealing
//! from higher orders' frag and nonfull clusters. Everything, allocation and free, runs under
//! si->lock: the device lock is held for the whole slot-cache refill.

use super::cluster_lists::{ClusterLists, List, NR_ORDERS};
use super::discard::DiscardQueue;
use super::{SwapAllocator, SwapAllocatorEntry};
use crate::engine::cost::CostModel;
use crate::engine::Ctx;
use crate::mm::folio::SwapEntry;
use crate::mm::swapfile::{cluster_pieces, SwapMap, SWAPFILE_CLUSTER};
use crate::scenario::PMD_ORDER;

/// SWAP_NEXT_INVALID
const NEXT_INVALID: u32 = 0;

pub struct ClusterListsC12 {
    lists: ClusterLists,
    /// percpu_cluster.next[order], per CPU.
    next: Vec<[u32; NR_ORDERS]>,
    discard: DiscardQueue,
}

/// Work done inside one si->lock section, for its hold time.
#[derive(Default)]
struct Work {
    /// alloc_swap_scan_cluster calls: each costs what one allocation does in 6.18.
    scans: u64,
    probes: u64,
    list_moves: u64,
}

/// The registry's row (mod.rs `registry!`).
pub const ENTRY: SwapAllocatorEntry = SwapAllocatorEntry {
    name: "cluster-lists-c12",
    doc: "6.12 (Chris Li / Kairui Song): free/nonfull/frag/full/discard cluster lists under si->lock",
    mthp_reserve: true,
    new: |map, ncpus, reserve| Box::new(ClusterListsC12::new(map, ncpus, reserve)),
};

impl ClusterListsC12 {
    pub fn new(map: &SwapMap, ncpus: usize, reserve_percent: u32) -> ClusterListsC12 {
        ClusterListsC12 {
            lists: ClusterLists::new(map, reserve_percent),
            next: vec![[NEXT_INVALID; NR_ORDERS]; ncpus],
            discard: DiscardQueue::default(),
        }
    }

    fn move_to(&mut self, c: u32, list: List, work: &mut Work) {
        self.lists.move_to_tail(c, list);
        work.list_moves += 1;
    }

    /// alloc_swap_scan_cluster: take the first free aligned range of `c` from `from`; a free
    /// cluster moves to nonfull[order], a full one to the full list.
    fn scan_cluster(
        &mut self,
        map: &mut SwapMap,
        c: u32,
        from: u32,
        order: u32,
        work: &mut Work,
    ) -> (Option<u32>, u32) {
        if !self.lists.usable(c, order) {
            return (None, NEXT_INVALID);
        }
        work.scans += 1;
        let Some(found) = self.lists.scan(map, c, from, order, &mut work.probes) else {
            return (None, NEXT_INVALID);
        };
        let was_free = matches!(
            self.lists.on[c as usize],
            Some(List::Free | List::FreeReserved)
        );
        let next = self.lists.take(map, found, order);
        if self.lists.count[c as usize] as u32 == SWAPFILE_CLUSTER {
            self.move_to(c, List::Full, work);
        } else if was_free {
            self.move_to(c, List::Nonfull(order as u8), work);
        }
        (Some(found), next.unwrap_or(NEXT_INVALID))
    }

    /// cluster_alloc_swap_entry for one range.
    fn alloc_one(
        &mut self,
        map: &mut SwapMap,
        ctx: &mut Ctx,
        order: u32,
        work: &mut Work,
    ) -> Option<u32> {
        let cpu = ctx.cpu;
        loop {
            let (found, next) = self.search(map, cpu, order, work);
            if let Some(found) = found {
                self.next[cpu][order as usize] = next;
                return Some(found);
            }
            self.next[cpu][order as usize] = NEXT_INVALID;
            // Out of clusters: wait for pending discards, then try again.
            if !self.discard.run_all(&mut self.lists, ctx) {
                return None;
            }
        }
    }

    fn search(
        &mut self,
        map: &mut SwapMap,
        cpu: usize,
        order: u32,
        work: &mut Work,
    ) -> (Option<u32>, u32) {
        let next = self.next[cpu][order as usize];
        if next != NEXT_INVALID {
            let r = self.scan_cluster(map, next / SWAPFILE_CLUSTER, next, order, work);
            if r.0.is_some() {
                return r;
            }
        }
        // A large order may use the mTHP reserve, and prefers it.
        let free_lists: &[List] = if order > 0 {
            &[List::FreeReserved, List::Free]
        } else {
            &[List::Free]
        };
        for &free in free_lists {
            if let Some(c) = self.lists.head(free) {
                let r = self.scan_cluster(map, c, c * SWAPFILE_CLUSTER, order, work);
                assert!(
                    r.0.is_some(),
                    "a free cluster always has a free aligned range"
                );
                return r;
            }
        }
        if order < PMD_ORDER {
            let o = order as u8;
            while let Some(c) = self.lists.head(List::Nonfull(o)) {
                self.move_to(c, List::Frag(o), work);
                let r = self.scan_cluster(map, c, c * SWAPFILE_CLUSTER, order, work);
                if r.0.is_some() {
                    return r;
                }
            }
            // frag_cluster_nr[order], counting the clusters just moved there.
            for _ in 0..self.lists.len(List::Frag(o)) {
                let Some(c) = self.lists.head(List::Frag(o)) else {
                    break;
                };
                self.move_to(c, List::Frag(o), work);
                let r = self.scan_cluster(map, c, c * SWAPFILE_CLUSTER, order, work);
                if r.0.is_some() {
                    return r;
                }
            }
        }
        if order > 0 {
            return (None, NEXT_INVALID);
        }
        // Order-0 stealing from the clusters of every higher order.
        for o in 1..=PMD_ORDER as u8 {
            for list in [List::Frag(o), List::Nonfull(o)] {
                let mut c = self.lists.head(list);
                while let Some(cluster) = c {
                    let r = self.scan_cluster(map, cluster, cluster * SWAPFILE_CLUSTER, 0, work);
                    if r.0.is_some() {
                        return r;
                    }
                    // Unusable (reserved): skip it without moving it.
                    c = self.lists.next_on_list(cluster);
                }
            }
        }
        (None, NEXT_INVALID)
    }
}

impl SwapAllocator for ClusterListsC12 {
    fn name(&self) -> &'static str {
        "cluster-lists-c12"
    }
    fn uses_slot_cache(&self) -> bool {
        true
    }

    fn alloc(
        &mut self,
        map: &mut SwapMap,
        ctx: &mut Ctx,
        cost: &CostModel,
        order: u32,
        n: usize,
        out: &mut Vec<SwapEntry>,
    ) {
        let mut work = Work::default();
        let taken_before = out.len() as u64;
        self.discard.complete_ready(&mut self.lists, ctx.now_ns);
        for _ in 0..n {
            match self.alloc_one(map, ctx, order, &mut work) {
                Some(offset) => out.push(SwapEntry::new(map.id, offset)),
                None => break,
            }
        }
        let taken = out.len() as u64 - taken_before;
        // A slot-cache refill is 64 cluster_alloc_swap_entry calls under one hold, each the
        // work of one 6.18 allocation.
        let hold_ns = work.scans * cost.swap_alloc_ns
            + taken * cost.swap_alloc_range_ns
            + work.probes * cost.swap_slot_scan_ns
            + work.list_moves * cost.swap_cluster_list_move_ns;
        map.lock.hold(ctx, hold_ns);
    }

    /// swap_entry_range_free under si->lock: dec_cluster_info_page.
    fn on_free(
        &mut self,
        map: &mut SwapMap,
        ctx: &mut Ctx,
        cost: &CostModel,
        offset: u32,
        nr: u32,
    ) {
        self.release(map, ctx, cost, [(offset, nr)]);
    }

    /// swapcache_free_entries: the return buffer's slots, one si->lock hold for all of them.
    fn on_free_slots(&mut self, map: &mut SwapMap, ctx: &mut Ctx, cost: &CostModel, slots: &[u32]) {
        self.release(map, ctx, cost, slots.iter().map(|&slot| (slot, 1)));
    }

    fn check(&self, map: &SwapMap) -> Result<(), String> {
        self.lists.check(map)
    }
}

impl ClusterListsC12 {
    /// Release slot ranges under one si->lock hold: per-slot release work plus list moves.
    fn release(
        &mut self,
        map: &mut SwapMap,
        ctx: &mut Ctx,
        cost: &CostModel,
        ranges: impl IntoIterator<Item = (u32, u32)>,
    ) {
        let mut work = Work::default();
        let mut nr_slots = 0;
        for (offset, nr) in ranges {
            self.dec_cluster_info_page(map, ctx, cost, offset, nr, &mut work);
            nr_slots += nr;
        }
        let hold_ns = map.swap_range_free_ns(cost, nr_slots)
            + work.list_moves * cost.swap_cluster_list_move_ns;
        map.lock.hold(ctx, hold_ns);
    }

    /// dec_cluster_info_page: an emptied cluster goes to the free (or discard) list, a full or
    /// fragment cluster that lost slots back to nonfull[order].
    fn dec_cluster_info_page(
        &mut self,
        map: &mut SwapMap,
        ctx: &mut Ctx,
        cost: &CostModel,
        offset: u32,
        nr: u32,
        work: &mut Work,
    ) {
        for (c, piece) in cluster_pieces(offset, nr) {
            if self.lists.put(c, piece) {
                if map.discard {
                    self.discard
                        .queue(&mut self.lists, map, c, ctx.now_ns, cost);
                    work.list_moves += 1;
                } else {
                    self.move_to(c, self.lists.free_list_of(c), work);
                }
            } else if !matches!(self.lists.on[c as usize], Some(List::Nonfull(_))) {
                let o = self.lists.order[c as usize];
                self.move_to(c, List::Nonfull(o), work);
            }
        }
    }
}
