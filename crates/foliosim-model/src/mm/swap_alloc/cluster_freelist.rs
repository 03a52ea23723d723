//! The free-cluster-list scanner shared by the <= 6.11 allocators (scan_swap_map_slots,
//! scan_swap_map_try_ssd_cluster): only free clusters are on a list; a CPU fills "its" cluster
//! from a per-CPU, per-order next offset; once it leaves a cluster, the cluster is on no list
//! until every slot in it is free again. Order 0 falls back to a linear scan of swap_map that
//! takes any free slot, including inside other CPUs' high-order clusters ("stealing").

use crate::engine::cost::CostModel;
use crate::engine::Ctx;
use crate::mm::folio::{SwapEntry, NIL};
use crate::mm::swapfile::{cluster_pieces, SwapMap, SWAPFILE_CLUSTER};
use crate::scenario::PMD_ORDER;

/// SWAP_NEXT_INVALID: slot 0 is the header, never a next offset.
const NEXT_INVALID: u32 = 0;
/// SWAP_CLUSTER_COLS for 512-slot clusters: the initial free list interleaves columns.
const SWAP_CLUSTER_COLS: u32 = 32;
const NR_ORDERS: usize = PMD_ORDER as usize + 1;

pub struct ClusterFreelist {
    /// cluster_info.count: non-zero swap_map bytes in the cluster (BAD bytes included).
    count: Vec<u16>,
    /// CLUSTER_FLAG_FREE: on the free list.
    is_free: Vec<bool>,
    free_next: Vec<u32>,
    free_head: u32,
    free_tail: u32,
    nr_free_clusters: u32,
    /// percpu_cluster.next[order], per CPU.
    next: Vec<[u32; NR_ORDERS]>,
    /// cluster_next_cpu: where this CPU's linear scan resumes.
    scan_cursor: Vec<u32>,
    /// Only non-rotational devices get cluster_info: a rotational one has no free list and
    /// is scanned linearly.
    has_clusters: bool,
}

impl ClusterFreelist {
    /// swapon: count the header and tail, then build the free list column by column.
    pub fn new(map: &SwapMap, ncpus: usize) -> ClusterFreelist {
        let nr = map.nr_clusters();
        let count = map.cluster_usage();
        let mut s = ClusterFreelist {
            count,
            is_free: vec![false; nr as usize],
            free_next: vec![NIL; nr as usize],
            free_head: NIL,
            free_tail: NIL,
            nr_free_clusters: 0,
            next: vec![[NEXT_INVALID; NR_ORDERS]; ncpus],
            scan_cursor: vec![1; ncpus],
            has_clusters: map.solidstate,
        };
        if !s.has_clusters {
            return s;
        }
        let cols = SWAP_CLUSTER_COLS.min(nr);
        for col in 0..cols {
            let mut c = col;
            while c < nr {
                if s.count[c as usize] == 0 {
                    s.push_free_tail(c);
                }
                c += cols;
            }
        }
        s
    }

    fn push_free_tail(&mut self, c: u32) {
        debug_assert!(!self.is_free[c as usize]);
        self.is_free[c as usize] = true;
        self.free_next[c as usize] = NIL;
        if self.free_tail == NIL {
            self.free_head = c;
        } else {
            self.free_next[self.free_tail as usize] = c;
        }
        self.free_tail = c;
        self.nr_free_clusters += 1;
    }

    fn pop_free_head(&mut self) -> u32 {
        let c = self.free_head;
        assert_ne!(c, NIL, "pop from an empty free cluster list");
        self.free_head = self.free_next[c as usize];
        if self.free_head == NIL {
            self.free_tail = NIL;
        }
        self.is_free[c as usize] = false;
        self.nr_free_clusters -= 1;
        c
    }

    pub fn nr_free_clusters(&self) -> u32 {
        self.nr_free_clusters
    }

    /// Allocate up to `n` ranges of 2^order slots under one si->lock section.
    pub fn alloc(
        &mut self,
        map: &mut SwapMap,
        ctx: &mut Ctx,
        cost: &CostModel,
        order: u32,
        n: usize,
        out: &mut Vec<SwapEntry>,
    ) {
        let mut probes = 0u64;
        let taken_before = out.len() as u64;
        let nr = 1u32 << order;
        for _ in 0..n {
            let found = if map.solidstate {
                self.try_ssd_cluster(map, ctx.cpu, order, &mut probes)
            } else {
                None
            };
            // Order 0 (and everything on a rotational device, which has no clusters) falls back
            // to scanning swap_map; large orders never do.
            let found = found.or_else(|| {
                if order == 0 {
                    self.linear_scan(map, ctx.cpu, &mut probes)
                } else {
                    None
                }
            });
            match found {
                Some(offset) => {
                    self.take(map, offset, nr);
                    out.push(SwapEntry::new(map.id, offset));
                }
                None => break,
            }
        }
        map.lock.hold(
            ctx,
            cost.swap_alloc_ns
                + (out.len() as u64 - taken_before) * cost.swap_alloc_range_ns
                + probes * cost.swap_slot_scan_ns,
        );
    }

    /// scan_swap_map_try_ssd_cluster + the in-cluster scan in steps of 2^order.
    fn try_ssd_cluster(
        &mut self,
        map: &SwapMap,
        cpu: usize,
        order: u32,
        probes: &mut u64,
    ) -> Option<u32> {
        let nr = 1u32 << order;
        // At most: the current cluster, then the free-list head (always wholly free).
        for _ in 0..3 {
            let mut offset = self.next[cpu][order as usize];
            if offset == NEXT_INVALID {
                if self.free_head == NIL {
                    return None;
                }
                offset = self.free_head * SWAPFILE_CLUSTER;
            }
            let cluster = offset / SWAPFILE_CLUSTER;
            let end = (cluster + 1) * SWAPFILE_CLUSTER;
            let mut found = None;
            while offset + nr <= end {
                *probes += 1;
                if map.range_free(offset, nr) {
                    found = Some(offset);
                    break;
                }
                offset += nr;
            }
            match found {
                // A free cluster that is not the list head is nobody's: conflict, start over.
                Some(_) if self.is_free[cluster as usize] && self.free_head != cluster => {
                    self.next[cpu][order as usize] = NEXT_INVALID;
                }
                Some(offset) => {
                    self.next[cpu][order as usize] = if offset + nr < end {
                        offset + nr
                    } else {
                        NEXT_INVALID
                    };
                    return Some(offset);
                }
                None => self.next[cpu][order as usize] = NEXT_INVALID,
            }
        }
        unreachable!("the free-list head cluster always has a free aligned range")
    }

    /// The unlocked linear scan of scan_swap_map_slots: first free slot from this CPU's cursor,
    /// wrapping once, ignoring which CPU is filling the cluster.
    fn linear_scan(&mut self, map: &SwapMap, cpu: usize, probes: &mut u64) -> Option<u32> {
        let slots = map.nr_slots();
        let start = self.scan_cursor[cpu].clamp(1, slots - 1);
        let found = (start..slots).chain(1..start).find(|&s| {
            *probes += 1;
            map.swap_map[s as usize] == 0 && !self.is_free[(s / SWAPFILE_CLUSTER) as usize]
        })?;
        self.scan_cursor[cpu] = found + 1;
        Some(found)
    }

    fn take(&mut self, map: &mut SwapMap, offset: u32, nr: u32) {
        let c = offset / SWAPFILE_CLUSTER;
        if self.is_free[c as usize] {
            assert_eq!(
                self.free_head, c,
                "allocation inside free cluster {c} that is not the free-list head"
            );
            self.pop_free_head();
        }
        map.take_range(offset, nr);
        self.count[c as usize] += nr as u16;
    }

    /// A range released under si->lock (swap_entry_range_free).
    pub fn on_free(
        &mut self,
        map: &mut SwapMap,
        ctx: &mut Ctx,
        cost: &CostModel,
        offset: u32,
        nr: u32,
    ) {
        map.lock.hold(ctx, map.swap_range_free_ns(cost, nr));
        self.dec_cluster_info_page(offset, nr);
    }

    /// Slots back from the per-CPU return buffer, released under one si->lock hold
    /// (swapcache_free_entries).
    pub fn on_free_slots(
        &mut self,
        map: &mut SwapMap,
        ctx: &mut Ctx,
        cost: &CostModel,
        slots: &[u32],
    ) {
        map.lock
            .hold(ctx, map.swap_range_free_ns(cost, slots.len() as u32));
        for &slot in slots {
            self.dec_cluster_info_page(slot, 1);
        }
    }

    /// dec_cluster_info_page: cluster counts drop; an emptied cluster joins the free list.
    fn dec_cluster_info_page(&mut self, offset: u32, nr: u32) {
        for (c, piece) in cluster_pieces(offset, nr) {
            let count = &mut self.count[c as usize];
            assert!(
                *count as u32 >= piece,
                "cluster {c} count {count} below freed {piece}"
            );
            *count -= piece as u16;
            if *count == 0 && self.has_clusters {
                self.push_free_tail(c);
            }
        }
    }

    pub fn check(&self, map: &SwapMap) -> Result<(), String> {
        let mut on_list = vec![false; self.count.len()];
        let mut c = self.free_head;
        let mut listed = 0;
        while c != NIL {
            if on_list[c as usize] {
                return Err(format!("cluster {c} is on the free list twice"));
            }
            on_list[c as usize] = true;
            listed += 1;
            c = self.free_next[c as usize];
        }
        if listed != self.nr_free_clusters {
            return Err(format!(
                "free list holds {listed} clusters, nr_free_clusters says {}",
                self.nr_free_clusters
            ));
        }
        map.check_cluster_counts(&self.count)?;
        for (c, chunk) in map.swap_map.chunks(SWAPFILE_CLUSTER as usize).enumerate() {
            let used = chunk.iter().filter(|&&b| b != 0).count();
            if on_list[c] != self.is_free[c]
                || (self.has_clusters && self.is_free[c] != (used == 0))
            {
                return Err(format!(
                    "cluster {c}: free flag {}, on free list {}, slots in use {used}",
                    self.is_free[c], on_list[c]
                ));
            }
        }
        Ok(())
    }
}
