//! The cluster-list allocator of 6.15-6.18 (spec-swap.md §5.2): a per-CPU fast path that
//! keeps allocating in the cluster this CPU used last (under that cluster's ci->lock only),
//! and a slow path that isolates clusters from the lists: nonfull[order] first, one free
//! cluster, then only one fragment cluster; order 0 finally steals from higher orders.
//! si->lock is taken only to move a cluster between lists. No slot cache.
//!
//! The kernel's per-CPU cursor (percpu_swap_cluster) is global across devices; here each
//! device keeps its own, which is the same while large orders only ever use the first device.
//! Rotational devices share one cursor per order under global_cluster_lock.

use super::cluster_lists::{ClusterLists, List, NR_ORDERS};
use super::discard::DiscardQueue;
use super::{SwapAllocator, SwapAllocatorEntry};
use crate::engine::cost::CostModel;
use crate::engine::lock::{LockStats, SimLock};
use crate::engine::Ctx;
use crate::mm::folio::SwapEntry;
use crate::mm::swapfile::{cluster_pieces, SwapMap, SWAPFILE_CLUSTER};
use crate::scenario::PMD_ORDER;

pub struct ClusterListsC18 {
    lists: ClusterLists,
    /// percpu_swap_cluster.offset[order] per CPU (one shared row on a rotational device).
    next: Vec<[Option<u32>; NR_ORDERS]>,
    /// ci->lock of each cluster.
    ci_locks: Vec<SimLock>,
    /// Serialises all allocation on a rotational device.
    global_cluster_lock: Option<SimLock>,
    discard: DiscardQueue,
}

/// The registry's row (mod.rs `registry!`).
pub const ENTRY: SwapAllocatorEntry = SwapAllocatorEntry {
    name: "cluster-lists-c18",
    doc: "6.14-6.18: the cluster lists with a per-CPU cluster fast path; ci->lock inside a cluster",
    mthp_reserve: true,
    new: |map, ncpus, reserve| Box::new(ClusterListsC18::new(map, ncpus, reserve)),
};

impl ClusterListsC18 {
    pub fn new(map: &SwapMap, ncpus: usize, reserve_percent: u32) -> ClusterListsC18 {
        let lists = ClusterLists::new(map, reserve_percent);
        let rotational = !map.solidstate;
        ClusterListsC18 {
            ci_locks: vec![SimLock::new("ci->lock", crate::cpu_cost::CI_LOCK); lists.nr_clusters() as usize],
            lists,
            next: vec![[None; NR_ORDERS]; if rotational { 1 } else { ncpus }],
            global_cluster_lock: rotational.then(|| SimLock::new("global_cluster_lock", crate::cpu_cost::GLOBAL_CLUSTER_LOCK)),
            discard: DiscardQueue::default(),
        }
    }

    fn cursor(&mut self, cpu: usize, order: u32) -> &mut Option<u32> {
        let row = if self.global_cluster_lock.is_some() {
            0
        } else {
            cpu
        };
        &mut self.next[row][order as usize]
    }

    /// move_cluster: a list change under si->lock.
    fn move_cluster(
        &mut self,
        map: &mut SwapMap,
        ctx: &mut Ctx,
        cost: &CostModel,
        c: u32,
        list: List,
    ) {
        self.lists.move_to_tail(c, list);
        map.lock.hold(ctx, cost.swap_cluster_list_move_ns);
    }

    /// relocate_cluster: after an allocation attempt, file the cluster by how full it is.
    fn relocate(&mut self, map: &mut SwapMap, ctx: &mut Ctx, cost: &CostModel, c: u32) {
        let i = c as usize;
        let on = self.lists.on[i];
        let count = self.lists.count[i] as u32;
        let target = if on == Some(List::Discard) {
            return;
        } else if count == 0 {
            self.lists.free_list_of(c)
        } else if count < SWAPFILE_CLUSTER {
            List::Frag(self.lists.order[i])
        } else {
            List::Full
        };
        if on != Some(target) {
            self.move_cluster(map, ctx, cost, c, target);
        }
    }

    /// alloc_swap_scan_cluster with ci->lock held: take the first free aligned range from
    /// `from`, relocate the cluster, remember where to continue.
    fn scan_cluster(
        &mut self,
        map: &mut SwapMap,
        ctx: &mut Ctx,
        cost: &CostModel,
        c: u32,
        from: u32,
        order: u32,
    ) -> Option<u32> {
        let mut probes = 0;
        let start = if self.lists.count[c as usize] == 0 {
            c * SWAPFILE_CLUSTER
        } else {
            from
        };
        let found = self.lists.scan(map, c, start, order, &mut probes);
        let next = found.and_then(|offset| self.lists.take(map, offset, order));
        let range_ns = if found.is_some() {
            cost.swap_alloc_range_ns
        } else {
            0
        };
        self.ci_locks[c as usize].hold(
            ctx,
            cost.swap_alloc_ns + range_ns + probes * cost.swap_slot_scan_ns,
        );
        self.relocate(map, ctx, cost, c);
        *self.cursor(ctx.cpu, order) = next;
        found
    }

    /// scan_list: isolate clusters from the head of `list` (isolate_lock_cluster, si->lock)
    /// and scan each; only the first unless `scan_all`. Clusters this order may not use
    /// (the mTHP reserve, for order 0) are passed over as a failed trylock would be.
    fn scan_list(
        &mut self,
        map: &mut SwapMap,
        ctx: &mut Ctx,
        cost: &CostModel,
        list: List,
        order: u32,
        scan_all: bool,
    ) -> Option<u32> {
        loop {
            let mut c = self.lists.head(list);
            while let Some(cluster) = c.filter(|&cl| !self.lists.usable(cl, order)) {
                c = self.lists.next_on_list(cluster);
            }
            map.lock.hold(ctx, cost.swap_cluster_list_move_ns);
            let c = c?;
            self.lists.unlink(c);
            if let Some(found) = self.scan_cluster(map, ctx, cost, c, c * SWAPFILE_CLUSTER, order) {
                return Some(found);
            }
            if !scan_all {
                return None;
            }
        }
    }

    /// swap_alloc_fast: continue in the cluster this CPU used last for this order.
    fn alloc_fast(
        &mut self,
        map: &mut SwapMap,
        ctx: &mut Ctx,
        cost: &CostModel,
        order: u32,
    ) -> Option<u32> {
        let offset = (*self.cursor(ctx.cpu, order))?;
        let c = offset / SWAPFILE_CLUSTER;
        if !self.lists.usable(c, order) {
            return None;
        }
        self.scan_cluster(map, ctx, cost, c, offset, order)
    }

    /// cluster_alloc_swap_entry: the slow path.
    fn alloc_slow(
        &mut self,
        map: &mut SwapMap,
        ctx: &mut Ctx,
        cost: &CostModel,
        order: u32,
    ) -> Option<u32> {
        let o = order as u8;
        let free_lists: &[List] = if order > 0 {
            &[List::FreeReserved, List::Free]
        } else {
            &[List::Free]
        };
        let free_first = map.discard;
        let try_free = |s: &mut Self, map: &mut SwapMap, ctx: &mut Ctx| {
            free_lists
                .iter()
                .find(|&&l| s.lists.head(l).is_some())
                .and_then(|&l| s.scan_list(map, ctx, cost, l, order, false))
        };
        if free_first {
            if let Some(found) = try_free(self, map, ctx) {
                return Some(found);
            }
        }
        if order < PMD_ORDER {
            if let Some(found) = self.scan_list(map, ctx, cost, List::Nonfull(o), order, true) {
                return Some(found);
            }
        }
        if !free_first {
            if let Some(found) = try_free(self, map, ctx) {
                return Some(found);
            }
        }
        if order < PMD_ORDER {
            if let Some(found) = self.scan_list(map, ctx, cost, List::Frag(o), order, false) {
                return Some(found);
            }
        }
        if order > 0 {
            return None;
        }
        for high in 1..=PMD_ORDER as u8 {
            for list in [List::Frag(high), List::Nonfull(high)] {
                if let Some(found) = self.scan_list(map, ctx, cost, list, 0, true) {
                    return Some(found);
                }
            }
        }
        None
    }
}

impl SwapAllocator for ClusterListsC18 {
    fn name(&self) -> &'static str {
        "cluster-lists-c18"
    }
    fn uses_slot_cache(&self) -> bool {
        false
    }

    /// folio_alloc_swap: one range per call (no slot cache).
    fn alloc(
        &mut self,
        map: &mut SwapMap,
        ctx: &mut Ctx,
        cost: &CostModel,
        order: u32,
        n: usize,
        out: &mut Vec<SwapEntry>,
    ) {
        self.discard.complete_ready(&mut self.lists, ctx.now_ns);
        for _ in 0..n {
            let lock_start_ns = ctx.now_ns;
            let mut found = self.alloc_fast(map, ctx, cost, order);
            if found.is_none() {
                found = self.alloc_slow(map, ctx, cost, order);
            }
            // Order 0 out of clusters: wait for pending discards and retry once.
            if found.is_none() && order == 0 && self.discard.run_all(&mut self.lists, ctx) {
                found = self.alloc_slow(map, ctx, cost, order);
            }
            if let Some(lock) = &mut self.global_cluster_lock {
                // Held across the whole allocation: book it from where it started.
                lock.hold_spent_since(ctx, lock_start_ns);
            }
            match found {
                Some(offset) => out.push(SwapEntry::new(map.id, offset)),
                None => break,
            }
        }
    }

    /// swap_entries_free with ci->lock; si->lock only when the cluster changes list.
    fn on_free(
        &mut self,
        map: &mut SwapMap,
        ctx: &mut Ctx,
        cost: &CostModel,
        offset: u32,
        nr: u32,
    ) {
        for (c, piece) in cluster_pieces(offset, nr) {
            let release_ns = map.swap_range_free_ns(cost, piece);
            self.ci_locks[c as usize].hold(ctx, release_ns);
            if self.lists.put(c, piece) {
                if map.discard {
                    self.discard
                        .queue(&mut self.lists, map, c, ctx.now_ns, cost);
                    map.lock.hold(ctx, cost.swap_cluster_list_move_ns);
                } else {
                    self.move_cluster(map, ctx, cost, c, self.lists.free_list_of(c));
                }
            } else if !matches!(self.lists.on[c as usize], Some(List::Nonfull(_))) {
                let o = self.lists.order[c as usize];
                self.move_cluster(map, ctx, cost, c, List::Nonfull(o));
            }
        }
    }

    fn check(&self, map: &SwapMap) -> Result<(), String> {
        self.lists.check(map)
    }

    fn extra_locks(&self) -> Vec<(&'static str, LockStats)> {
        let mut ci = LockStats::default();
        for l in &self.ci_locks {
            ci.add(&l.stats);
        }
        let mut out = vec![("ci->lock", ci)];
        if let Some(l) = &self.global_cluster_lock {
            out.push((l.name, l.stats.clone()));
        }
        out
    }
}
