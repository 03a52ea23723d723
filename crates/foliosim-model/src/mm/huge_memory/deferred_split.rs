//! The deferred split queue (mm/huge_memory.c: deferred_split_folio, deferred_split_count,
//! deferred_split_scan, __folio_unqueue_deferred_split). An anonymous large folio that a zap
//! leaves partially mapped (munmap or MADV_DONTNEED of part of it) is queued here, flagged
//! PARTIALLY_MAPPED, on its memcg's queue (6.18 keeps one per memcg, the root memcg's included,
//! and one per node for folios without a memcg, which the model has none of). The queue's
//! shrinker (mm/shrinker.rs) splits queued folios under memory pressure; the split frees their
//! unmapped pages. A folio leaves the queue when it is split or freed.
//!
//! The list is intrusive (the kernel keeps _deferred_list in a tail page): a folio's links are
//! kept in a table of its order (`FolioTable::deferred_link`), touched only for queued folios.
//! Folios of order < 2 are never queued (no room for the list in the kernel either).
//!
//! Not modelled: 6.18 also queues every newly mapped PMD THP, not partially mapped, for the
//! underused-THP shrinker (thp_underused), which splits a THP with more than max_ptes_none
//! zero-filled pages. At the default max_ptes_none (511) it never splits one; the model has no
//! zero-filled contents to count.

use crate::engine::Ctx;
use crate::mm::folio::{flags, FolioTable, NIL};
use crate::mm::huge_memory::split_folio;
use crate::mm::vmstat::{MthpStat, VmEvent};
use crate::mm::Kernel;
use crate::scenario::PMD_ORDER;

/// One memcg's queue (struct deferred_split) and its shrinker state.
#[derive(Debug, Clone)]
pub struct DeferredSplitQueue {
    head: u32,
    tail: u32,
    /// split_queue_len: folios queued.
    pub split_queue_len: u64,
    /// The shrinker's nr_deferred for this memcg: scan work carried over (mm/shrinker.rs).
    pub nr_deferred: u64,
}

impl Default for DeferredSplitQueue {
    fn default() -> Self {
        DeferredSplitQueue {
            head: NIL,
            tail: NIL,
            split_queue_len: 0,
            nr_deferred: 0,
        }
    }
}

impl DeferredSplitQueue {
    fn add_tail(&mut self, f: &mut FolioTable, pfn: u32) {
        f.set_deferred_prev(pfn, self.tail);
        f.set_deferred_next(pfn, NIL);
        if self.tail != NIL {
            f.set_deferred_next(self.tail, pfn);
        } else {
            self.head = pfn;
        }
        self.tail = pfn;
        self.split_queue_len += 1;
    }

    fn remove(&mut self, f: &mut FolioTable, pfn: u32) {
        let (prev, next) = f.deferred_link(pfn);
        if prev != NIL {
            f.set_deferred_next(prev, next);
        } else {
            self.head = next;
        }
        if next != NIL {
            f.set_deferred_prev(next, prev);
        } else {
            self.tail = prev;
        }
        f.set_deferred_prev(pfn, NIL);
        f.set_deferred_next(pfn, NIL);
        self.split_queue_len -= 1;
    }

    /// The queued folios, oldest first.
    pub fn iter<'a>(&self, f: &'a FolioTable) -> impl Iterator<Item = u32> + 'a {
        let mut at = self.head;
        std::iter::from_fn(move || {
            (at != NIL).then(|| {
                let pfn = at;
                at = f.deferred_link(pfn).1;
                pfn
            })
        })
    }
}

/// deferred_split_folio(folio, partially_mapped = true): the zap left the folio at `pfn`
/// partially mapped. Counted once per folio (thp_deferred_split_page for PMD size, the size's
/// split_deferred); a folio in the swap cache is left to reclaim.
pub fn deferred_split_folio(k: &mut Kernel, pfn: u32) {
    let f = &mut k.folios;
    let order = f.order[pfn as usize] as u32;
    if order <= 1 || f.test(pfn, flags::SWAPCACHE) || f.test(pfn, flags::PARTIALLY_MAPPED) {
        return;
    }
    f.set(pfn, flags::PARTIALLY_MAPPED);
    if order >= PMD_ORDER {
        k.vmstat.count(VmEvent::ThpDeferredSplitPage, 1);
    }
    k.vmstat.count_mthp(order, MthpStat::SplitDeferred);
    let memcg = f.memcg(pfn as usize) as usize;
    k.deferred_split[memcg].add_tail(f, pfn);
}

/// folio_unqueue_deferred_split: take the folio at `pfn` off its queue (it is being split or
/// freed).
#[inline]
pub fn folio_unqueue_deferred_split(
    queues: &mut [DeferredSplitQueue],
    f: &mut FolioTable,
    pfn: u32,
) {
    // Every free asks; few folios are queued: the test inline, the removal out of line.
    if f.test(pfn, flags::PARTIALLY_MAPPED) {
        unqueue_partially_mapped(queues, f, pfn);
    }
}

#[inline(never)]
fn unqueue_partially_mapped(queues: &mut [DeferredSplitQueue], f: &mut FolioTable, pfn: u32) {
    let memcg = f.memcg(pfn as usize) as usize;
    queues[memcg].remove(f, pfn);
    f.clear(pfn, flags::PARTIALLY_MAPPED);
}

/// deferred_split_count: the shrinker's count for a memcg's queue.
pub fn deferred_split_count(ds_queue: &DeferredSplitQueue) -> u64 {
    ds_queue.split_queue_len
}

/// deferred_split_scan: split up to `nr_to_scan` folios from the head of the memcg's queue (each
/// split frees the folio's unmapped pages). Returns the folios split, None for SHRINK_STOP (none
/// split and the queue is empty).
pub fn deferred_split_scan(
    k: &mut Kernel,
    ctx: &mut Ctx,
    memcg: u16,
    nr_to_scan: u64,
) -> Option<u64> {
    let mut split = 0;
    for _ in 0..nr_to_scan {
        let head = k.deferred_split[memcg as usize].head;
        if head == NIL {
            break;
        }
        // Every queued folio is partially mapped and not in the swap cache: the split (which
        // unqueues it) succeeds.
        split_folio(k, ctx, head, None);
        split += 1;
    }
    if split == 0 && k.deferred_split[memcg as usize].head == NIL {
        return None;
    }
    Some(split)
}

#[cfg(test)]
mod tests {
    use crate::mm::invariants::check;
    use crate::mm::memory::zap_range;
    use crate::mm::vmstat::{MthpStat, VmEvent};

    #[test]
    fn zapped_folios_queue_in_order_and_leave_when_freed() {
        let (mut k, mut ctx) = crate::mm::shrinker::tests::half_unmapped_thps(3);
        let q = &k.deferred_split[0];
        let heads: Vec<u32> = q.iter(&k.folios).collect();
        assert_eq!(heads.len(), 3);
        assert_eq!(k.vmstat.get(VmEvent::ThpDeferredSplitPage), 3);
        assert_eq!(k.vmstat.get(VmEvent::ThpSplitPmd), 3);
        assert_eq!(k.vmstat.get_mthp(9, MthpStat::SplitDeferred), 3);
        // Zapping more of a queued folio counts nothing new; zapping the rest frees it, which
        // takes it off the queue.
        zap_range(&mut k, &mut ctx, 0, 0, 512, 128);
        assert_eq!(k.vmstat.get(VmEvent::ThpDeferredSplitPage), 3);
        zap_range(&mut k, &mut ctx, 0, 0, 640, 128);
        let left: Vec<u32> = k.deferred_split[0].iter(&k.folios).collect();
        assert_eq!(left, [heads[0], heads[2]]);
        assert_eq!(k.deferred_split[0].split_queue_len, 2);
        check(&k).unwrap();
    }
}
