//! The cluster lists shared by the 6.12+ allocators (Chris Li / Kairui Song, seed 003): every
//! cluster is on exactly one list (free, nonfull[order], frag[order], full, discard) or isolated
//! while a CPU works in it; a cluster serves the order of its first allocation (`ci->order`)
//! except for order-0 "stealing". The two policies (cluster_lists_c12.rs, cluster_lists_c18.rs)
//! differ in the order they search the lists and in which lock guards what.
//!
//! Lists are intrusive doubly linked lists through per-cluster arrays, indexed by cluster.

use crate::mm::folio::NIL;
use crate::mm::swapfile::{SwapMap, SWAPFILE_CLUSTER};
use crate::scenario::PMD_ORDER;

pub const NR_ORDERS: usize = PMD_ORDER as usize + 1;

/// Which list a cluster is on (C18's `ci->flags`; C12's flag bits say the same).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum List {
    /// Wholly free. With an mTHP reserve, reserved free clusters are on `FreeReserved`.
    Free,
    FreeReserved,
    /// Had a free since it was last allocated from (per order).
    Nonfull(u8),
    /// Allocation in it failed or it is some CPU's current cluster (per order).
    Frag(u8),
    Full,
    /// Freed, waiting for its discard to complete before reuse.
    Discard,
}

const NR_LISTS: usize = 4 + 2 * NR_ORDERS;

impl List {
    fn index(self) -> usize {
        match self {
            List::Free => 0,
            List::FreeReserved => 1,
            List::Full => 2,
            List::Discard => 3,
            List::Nonfull(o) => 4 + o as usize,
            List::Frag(o) => 4 + NR_ORDERS + o as usize,
        }
    }
}

#[derive(Clone, Copy, Default)]
struct ListHead {
    head: u32,
    tail: u32,
    len: u32,
}

pub struct ClusterLists {
    /// cluster_info.count: non-zero swap_map bytes (BAD included).
    pub count: Vec<u16>,
    /// ci->order: the order this cluster serves; 0 once it is free again.
    pub order: Vec<u8>,
    /// The list a cluster is on; None while isolated (C18 CLUSTER_FLAG_NONE).
    pub on: Vec<Option<List>>,
    /// Part of the mTHP-only reserve (seed 003's proposal): never used by order 0.
    pub reserved: Vec<bool>,
    prev: Vec<u32>,
    next: Vec<u32>,
    lists: [ListHead; NR_LISTS],
}

impl ClusterLists {
    /// setup_clusters: clusters already holding the header or the unusable tail go to
    /// nonfull[0]; the others to the free list in ascending order. The last
    /// `reserve_percent` of the clusters form the mTHP reserve.
    pub fn new(map: &SwapMap, reserve_percent: u32) -> ClusterLists {
        let nr = map.nr_clusters() as usize;
        let count = map.cluster_usage();
        let nr_reserved = nr * reserve_percent as usize / 100;
        let empty = ListHead {
            head: NIL,
            tail: NIL,
            len: 0,
        };
        let mut s = ClusterLists {
            count,
            order: vec![0; nr],
            on: vec![None; nr],
            reserved: (0..nr).map(|c| c >= nr - nr_reserved).collect(),
            prev: vec![NIL; nr],
            next: vec![NIL; nr],
            lists: [empty; NR_LISTS],
        };
        for c in 0..nr as u32 {
            let list = if s.count[c as usize] > 0 {
                List::Nonfull(0)
            } else {
                s.free_list_of(c)
            };
            s.move_to_tail(c, list);
        }
        s
    }

    pub fn nr_clusters(&self) -> u32 {
        self.count.len() as u32
    }

    /// The free list a cluster returns to.
    pub fn free_list_of(&self, c: u32) -> List {
        if self.reserved[c as usize] {
            List::FreeReserved
        } else {
            List::Free
        }
    }

    pub fn head(&self, list: List) -> Option<u32> {
        let h = self.lists[list.index()].head;
        (h != NIL).then_some(h)
    }

    pub fn len(&self, list: List) -> u32 {
        self.lists[list.index()].len
    }

    /// The cluster after `c` on its list.
    pub fn next_on_list(&self, c: u32) -> Option<u32> {
        let n = self.next[c as usize];
        (n != NIL).then_some(n)
    }

    /// Take `c` off whatever list it is on (isolate it).
    pub fn unlink(&mut self, c: u32) {
        let Some(list) = self.on[c as usize].take() else {
            return;
        };
        let (p, n) = (self.prev[c as usize], self.next[c as usize]);
        let l = &mut self.lists[list.index()];
        if p == NIL {
            l.head = n;
        } else {
            self.next[p as usize] = n;
        }
        if n == NIL {
            l.tail = p;
        } else {
            self.prev[n as usize] = p;
        }
        l.len -= 1;
        self.prev[c as usize] = NIL;
        self.next[c as usize] = NIL;
    }

    /// move_cluster: to the tail of `list`.
    pub fn move_to_tail(&mut self, c: u32, list: List) {
        self.unlink(c);
        let l = &mut self.lists[list.index()];
        self.prev[c as usize] = l.tail;
        if l.tail == NIL {
            l.head = c;
        } else {
            self.next[l.tail as usize] = c;
        }
        l.tail = c;
        l.len += 1;
        self.on[c as usize] = Some(list);
    }

    /// Can a request of `order` allocate in `c`? (cluster_is_usable, minus the swap table.)
    pub fn usable(&self, c: u32, order: u32) -> bool {
        let usable_list = !matches!(self.on[c as usize], Some(List::Full | List::Discard));
        let i = c as usize;
        usable_list
            && (self.count[i] == 0 || self.order[i] as u32 == order || order == 0)
            && !(order == 0 && self.reserved[i])
    }

    /// alloc_swap_scan_cluster's search: the first naturally aligned range of 2^order free
    /// slots in `c` at or after `from`. `probes` counts the ranges tested.
    pub fn scan(
        &self,
        map: &SwapMap,
        c: u32,
        from: u32,
        order: u32,
        probes: &mut u64,
    ) -> Option<u32> {
        let nr = 1u32 << order;
        if self.count[c as usize] as u32 + nr > SWAPFILE_CLUSTER {
            return None;
        }
        let end = (c + 1) * SWAPFILE_CLUSTER;
        let mut offset = from.max(c * SWAPFILE_CLUSTER) & !(nr - 1);
        while offset + nr <= end {
            *probes += 1;
            if map.range_free(offset, nr) {
                return Some(offset);
            }
            offset += nr;
        }
        None
    }

    /// Account a range taken in `c` (cluster_alloc_range): an empty cluster adopts the order.
    /// Returns the next offset to try in this cluster, or None when it is full or passed.
    pub fn take(&mut self, map: &mut SwapMap, offset: u32, order: u32) -> Option<u32> {
        let c = offset / SWAPFILE_CLUSTER;
        let nr = 1u32 << order;
        if self.count[c as usize] == 0 {
            self.order[c as usize] = order as u8;
        }
        map.take_range(offset, nr);
        self.count[c as usize] += nr as u16;
        let next = offset + nr;
        (self.count[c as usize] < SWAPFILE_CLUSTER as u16 && next < (c + 1) * SWAPFILE_CLUSTER)
            .then_some(next)
    }

    /// Drop `nr` slots from `c`'s count. Returns true when the cluster became empty.
    pub fn put(&mut self, c: u32, nr: u32) -> bool {
        let count = &mut self.count[c as usize];
        assert!(
            *count as u32 >= nr,
            "cluster {c} count {count} below freed {nr}"
        );
        *count -= nr as u16;
        if *count == 0 {
            self.order[c as usize] = 0;
        }
        *count == 0
    }

    /// Counts match swap_map; every cluster is on the list its state allows (none is left
    /// isolated between steps); list links and lengths are consistent.
    pub fn check(&self, map: &SwapMap) -> Result<(), String> {
        let mut seen = vec![false; self.count.len()];
        for idx in 0..NR_LISTS {
            let l = self.lists[idx];
            let (mut c, mut prev, mut len) = (l.head, NIL, 0);
            while c != NIL {
                if seen[c as usize] {
                    return Err(format!("cluster {c} is on two lists (or twice on one)"));
                }
                seen[c as usize] = true;
                if self.on[c as usize].map(List::index) != Some(idx)
                    || self.prev[c as usize] != prev
                {
                    return Err(format!("cluster {c}: list links disagree with its flag"));
                }
                len += 1;
                prev = c;
                c = self.next[c as usize];
            }
            if len != l.len || prev != l.tail {
                return Err(format!(
                    "list {idx}: {len} clusters linked, length says {}",
                    l.len
                ));
            }
        }
        map.check_cluster_counts(&self.count)?;
        for (c, chunk) in map.swap_map.chunks(SWAPFILE_CLUSTER as usize).enumerate() {
            let used = chunk.iter().filter(|&&b| b != 0).count();
            let ok = match self.on[c] {
                None => false,
                Some(List::Free | List::FreeReserved) => used == 0,
                Some(List::Full) => used == SWAPFILE_CLUSTER as usize,
                Some(List::Discard) => true,
                Some(List::Nonfull(o) | List::Frag(o)) => {
                    used > 0 && used < SWAPFILE_CLUSTER as usize && o == self.order[c]
                }
            };
            if !ok {
                return Err(format!(
                    "cluster {c} with {used} slots in use (order {}) is on {:?}",
                    self.order[c], self.on[c]
                ));
            }
        }
        Ok(())
    }
}
