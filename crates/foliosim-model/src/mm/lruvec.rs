//! LRU lists of a memcg (struct lruvec; list handling of mm/swap.c), intrusive through the folio
//! table. Folios enter at the head; reclaim takes from the tail (the oldest). Anonymous folios
//! are on the anon lists, page-cache folios (flag FILE) on the file lists.
//!
//! With MGLRU enabled (`lrugen.enabled`), folios go onto its generations instead
//! (mm/vmscan/lru_gen/): the list operations here follow a folio's generation bits, as
//! lruvec_add_folio / lruvec_del_folio do through lru_gen_add_folio / lru_gen_del_folio.

use super::folio::{flags, FolioTable, NIL};
use super::vmscan::lru_gen::{folio_lru_gen, LruGen};
use crate::engine::lock::SimLock;
use std::cmp::Reverse;
use std::collections::BinaryHeap;

#[derive(Debug, Clone)]
pub struct LruList {
    head: u32,
    tail: u32,
    pub nr_folios: u64,
    pub nr_pages: u64,
}

impl Default for LruList {
    fn default() -> Self {
        LruList {
            head: NIL,
            tail: NIL,
            nr_folios: 0,
            nr_pages: 0,
        }
    }
}

impl LruList {
    pub fn tail(&self) -> Option<u32> {
        (self.tail != NIL).then_some(self.tail)
    }

    pub fn add_head(&mut self, folios: &mut FolioTable, pfn: u32) {
        // The page count first: its order byte is the key the record access reads too.
        let nr = folios.nr_pages(pfn) as u64;
        folios.set_lru_links(pfn as usize, NIL, self.head);
        if self.head != NIL {
            folios.set_lru_prev(self.head as usize, pfn);
        } else {
            self.tail = pfn;
        }
        self.head = pfn;
        self.nr_folios += 1;
        self.nr_pages += nr;
    }

    /// Insert `pfn` right after `after` (a split's tail pages follow their head).
    pub fn add_after(&mut self, folios: &mut FolioTable, after: u32, pfn: u32) {
        let next = folios.lru_next(after as usize);
        folios.set_lru_links(pfn as usize, after, next);
        folios.set_lru_next(after as usize, pfn);
        if next != NIL {
            folios.set_lru_prev(next as usize, pfn);
        } else {
            self.tail = pfn;
        }
        self.nr_folios += 1;
        self.nr_pages += folios.nr_pages(pfn) as u64;
    }

    pub fn add_tail(&mut self, folios: &mut FolioTable, pfn: u32) {
        let nr = folios.nr_pages(pfn) as u64;
        folios.set_lru_links(pfn as usize, self.tail, NIL);
        if self.tail != NIL {
            folios.set_lru_next(self.tail as usize, pfn);
        } else {
            self.head = pfn;
        }
        self.tail = pfn;
        self.nr_folios += 1;
        self.nr_pages += nr;
    }

    pub fn remove(&mut self, folios: &mut FolioTable, pfn: u32) {
        let nr = folios.nr_pages(pfn) as u64;
        let (prev, next) = folios.take_lru_links(pfn as usize);
        if prev != NIL {
            folios.set_lru_next(prev as usize, next);
        } else {
            debug_assert_eq!(self.head, pfn);
            self.head = next;
        }
        if next != NIL {
            folios.set_lru_prev(next as usize, prev);
        } else {
            debug_assert_eq!(self.tail, pfn);
            self.tail = prev;
        }
        self.nr_folios -= 1;
        self.nr_pages -= nr;
    }

    /// Folios from head to tail, for the invariant checker.
    pub fn iter<'a>(&self, folios: &'a FolioTable) -> impl Iterator<Item = u32> + 'a {
        let mut cur = self.head;
        std::iter::from_fn(move || {
            (cur != NIL).then(|| {
                let pfn = cur;
                cur = folios.lru_next(pfn as usize);
                pfn
            })
        })
    }
}

/// The LRU lists of one memcg on the single node.
pub struct Lruvec {
    pub inactive_anon: LruList,
    pub active_anon: LruList,
    pub inactive_file: LruList,
    pub active_file: LruList,
    /// lruvec->anon_cost / file_cost: recent reclaim cost of each type (rotations, and I/O
    /// weighted by SWAP_CLUSTER_MAX), decayed; get_scan_count balances on it.
    pub anon_cost: u64,
    pub file_cost: u64,
    /// lruvec->nonresident_age: pages evicted and activated here and in descendant memcgs,
    /// the clock of refault distances (mm/workingset.rs).
    pub nonresident_age: u64,
    /// lruvec->refaults: WORKINGSET_ACTIVATE_ANON / _FILE when reclaim of this target last
    /// ended (snapshot_refaults).
    pub refaults: [u64; 2],
    pub lru_lock: SimLock,
    /// MGLRU's generations (struct lru_gen_folio), used when `lrugen.enabled`.
    pub lrugen: LruGen,
    /// Folios reclaim wrote to an asynchronous device, by the time their write completes.
    writeback: BinaryHeap<Reverse<(u64, u32)>>,
}

impl Lruvec {
    pub fn new() -> Lruvec {
        Lruvec {
            inactive_anon: LruList::default(),
            active_anon: LruList::default(),
            inactive_file: LruList::default(),
            active_file: LruList::default(),
            anon_cost: 0,
            file_cost: 0,
            nonresident_age: 0,
            refaults: [0; 2],
            lru_lock: SimLock::new("lruvec->lru_lock", crate::cpu_cost::LRU_LOCK),
            lrugen: LruGen::default(),
            writeback: BinaryHeap::new(),
        }
    }

    /// pageout() set PG_reclaim on a folio now under writeback until `done_ns`.
    pub fn writeback_started(&mut self, pfn: u32, done_ns: u64) {
        self.writeback.push(Reverse((done_ns, pfn)));
    }

    /// folio_end_writeback -> folio_rotate_reclaimable for every write done by `now_ns`: the
    /// folio is clean and unmapped, so it moves to the inactive tail to be freed by the next
    /// scan instead of reclaim writing out more folios. Folios reclaim holds isolated, or that
    /// were freed or reused meanwhile, are left alone. Returns the pages rotated (PGROTATED).
    pub fn end_writeback(&mut self, folios: &mut FolioTable, now_ns: u64) -> u64 {
        let mut rotated = 0;
        while let Some(&Reverse((done_ns, pfn))) = self.writeback.peek() {
            if done_ns > now_ns {
                break;
            }
            self.writeback.pop();
            let ours =
                folios.test(pfn, flags::WRITEBACK) && folios.writeback_done_ns(pfn) == done_ns;
            if !ours {
                continue;
            }
            folios.clear(pfn, flags::WRITEBACK);
            rotated += self.rotate_reclaimable(folios, pfn);
        }
        rotated
    }

    /// folio_end_writeback -> folio_rotate_reclaimable: PG_reclaim set by reclaim (or
    /// drop_caches) sends a clean folio on the LRU to the inactive tail, active or not
    /// (lru_move_tail).
    /// Returns the pages rotated.
    pub fn rotate_reclaimable(&mut self, folios: &mut FolioTable, pfn: u32) -> u64 {
        if !folios.test(pfn, flags::RECLAIM) {
            return 0;
        }
        folios.clear(pfn, flags::RECLAIM);
        if folios.test(pfn, flags::DIRTY) || !folios.test(pfn, flags::LRU) {
            return 0;
        }
        self.lru_move_tail(folios, pfn);
        folios.nr_pages(pfn) as u64
    }

    /// lru_move_tail: off its list, deactivated, to the inactive tail (the oldest generation's
    /// tail under MGLRU), to be reclaimed next.
    fn lru_move_tail(&mut self, folios: &mut FolioTable, pfn: u32) {
        self.lruvec_del_folio(folios, pfn);
        folios.clear(pfn, flags::ACTIVE);
        self.lruvec_add_folio_tail(folios, pfn);
    }

    /// Pages under writeback whose write completes after `now_ns` (NR_WRITEBACK).
    pub fn writeback_in_flight(&self, folios: &FolioTable, now_ns: u64) -> u64 {
        self.writeback
            .iter()
            .filter(|Reverse((done_ns, pfn))| {
                *done_ns > now_ns
                    && folios.test(*pfn, flags::WRITEBACK)
                    && folios.writeback_done_ns(*pfn) == *done_ns
            })
            .map(|Reverse((_, pfn))| folios.nr_pages(*pfn) as u64)
            .sum()
    }

    /// The list of the folio's type (FILE) and state (ACTIVE), or its generation's.
    pub fn list_of(&mut self, folios: &FolioTable, pfn: u32) -> &mut LruList {
        if let Some(gen) = folio_lru_gen(folios, pfn) {
            return &mut self.lrugen.folios[gen][folios.test(pfn, flags::FILE) as usize];
        }
        self.classic_list_of(folios, pfn)
    }

    /// list_of for a folio known to be on no generation (MGLRU disabled, or its
    /// lru_gen_del_folio found none): its generation bits need no second look.
    fn classic_list_of(&mut self, folios: &FolioTable, pfn: u32) -> &mut LruList {
        debug_assert!(folio_lru_gen(folios, pfn).is_none());
        self.list(
            folios.test(pfn, flags::FILE),
            folios.test(pfn, flags::ACTIVE),
        )
    }

    pub fn list(&mut self, file: bool, active: bool) -> &mut LruList {
        match (file, active) {
            (false, false) => &mut self.inactive_anon,
            (false, true) => &mut self.active_anon,
            (true, false) => &mut self.inactive_file,
            (true, true) => &mut self.active_file,
        }
    }

    /// Pages on the four lists (and the generations).
    pub fn nr_pages(&self) -> u64 {
        self.inactive_anon.nr_pages
            + self.active_anon.nr_pages
            + self.inactive_file.nr_pages
            + self.active_file.nr_pages
            + self.lrugen.nr_pages()
    }

    /// NR_{IN,}ACTIVE_{ANON,FILE} of this lruvec: the classic list, plus under MGLRU the
    /// generations counted active or not (lru_gen_is_active).
    pub fn lru_pages(&self, file: bool, active: bool) -> u64 {
        let classic = match (file, active) {
            (false, false) => &self.inactive_anon,
            (false, true) => &self.active_anon,
            (true, false) => &self.inactive_file,
            (true, true) => &self.active_file,
        };
        classic.nr_pages + self.lrugen.lru_pages(file, active)
    }

    /// lru_gen_del_folio as lruvec_del_folio calls it: false if the folio was on no
    /// generation. Without MGLRU no folio is on one (its generations stay empty, which
    /// mm/invariants.rs checks), so the folio's generation bits need no look.
    #[inline]
    fn del_from_generation(&mut self, folios: &mut FolioTable, pfn: u32, reclaiming: bool) -> bool {
        self.lrugen.enabled && self.lrugen.del_folio(folios, pfn, reclaiming)
    }

    /// lruvec_add_folio: onto the list its flags name (PG_active kept), or a generation.
    pub fn lruvec_add_folio(&mut self, folios: &mut FolioTable, pfn: u32) {
        folios.set(pfn, flags::LRU);
        if self.lrugen.enabled {
            self.lrugen.add_folio(folios, pfn, false);
        } else {
            self.classic_list_of(folios, pfn).add_head(folios, pfn);
        }
    }

    /// lruvec_add_folio_tail (folio_rotate_reclaimable).
    pub fn lruvec_add_folio_tail(&mut self, folios: &mut FolioTable, pfn: u32) {
        folios.set(pfn, flags::LRU);
        if self.lrugen.enabled {
            self.lrugen.add_folio(folios, pfn, true);
        } else {
            self.classic_list_of(folios, pfn).add_tail(folios, pfn);
        }
    }

    /// lruvec_del_folio (folio_isolate_lru): off its list, PG_active kept (set when it left
    /// an active generation).
    pub fn lruvec_del_folio(&mut self, folios: &mut FolioTable, pfn: u32) {
        if !self.del_from_generation(folios, pfn, false) {
            self.classic_list_of(folios, pfn).remove(folios, pfn);
        }
        folios.clear(pfn, flags::LRU);
    }

    /// folio_add_lru from a fault (`in_fault`: lru_gen_in_fault): MGLRU adds the folio to
    /// the youngest generation (PG_active set, see lru_gen_add_folio's first case).
    pub fn folio_add_lru(&mut self, folios: &mut FolioTable, pfn: u32, in_fault: bool) {
        if self.lrugen.enabled && in_fault {
            folios.set(pfn, flags::ACTIVE);
        }
        self.add_folio(folios, pfn);
    }

    /// folio_add_lru: new folios start on the inactive list of their type, unless marked
    /// active before being added (a refault of the workingset, mm/workingset.rs).
    pub fn add_folio(&mut self, folios: &mut FolioTable, pfn: u32) {
        debug_assert!(!folios.test(pfn, flags::LRU));
        folios.set(pfn, flags::LRU);
        if self.lrugen.enabled {
            self.lrugen.add_folio(folios, pfn, false);
            return;
        }
        self.classic_list_of(folios, pfn).add_head(folios, pfn);
    }

    pub fn del_folio(&mut self, folios: &mut FolioTable, pfn: u32) {
        debug_assert!(folios.test(pfn, flags::LRU));
        if !self.del_from_generation(folios, pfn, true) {
            self.classic_list_of(folios, pfn).remove(folios, pfn);
        }
        folios.clear(pfn, flags::LRU | flags::ACTIVE);
    }
}

impl Default for Lruvec {
    fn default() -> Self {
        Self::new()
    }
}
