//! Folio metadata, struct-of-arrays indexed by the head pfn (struct folio / page flags).
//!
//! Only the head pfn's entries are meaningful; a folio of order n covers pfns
//! [head, head + 2^n). An anonymous folio here has one owner (mm, vma, page index), which is what
//! rmap needs to find its PTEs: the model has no fork yet, so anon_vma chains are not needed.
//! A page-cache folio (flag FILE) reuses the owner fields: owner_mm holds the file id and
//! owner_index the page index in the file; its PTEs are found through the file's i_mmap
//! (mm/filemap.rs), so the per-pfn arrays do not grow.

use std::collections::BTreeMap;

use super::page_alloc::MAX_PAGE_ORDER;
use super::per_order::PerOrder;

pub const NIL: u32 = u32::MAX;

/// The flags under which a folio has a completion time (`FolioTable::writeback_done_ns`).
const IO_FLAGS: flags::Flags = flags::WRITEBACK | flags::LOCKED;

pub mod flags {
    pub type Flags = u16;
    pub const LRU: Flags = 1 << 0;
    pub const ACTIVE: Flags = 1 << 1;
    /// Accessed bit: some PTE (or the PMD) mapping the folio was accessed since the last
    /// folio_referenced(), which clears it. Set by the hardware on access, so by every touch.
    pub const YOUNG: Flags = 1 << 2;
    pub const SWAPCACHE: Flags = 1 << 3;
    pub const DIRTY: Flags = 1 << 4;
    pub const WRITEBACK: Flags = 1 << 5;
    /// Mapped by one PMD entry (a THP not yet split into PTE mappings).
    pub const PMD_MAPPED: Flags = 1 << 6;
    /// Allocated (head of a live folio).
    pub const ALLOCATED: Flags = 1 << 7;
    /// PG_referenced: reclaim found the folio young once already (folio_check_references sets
    /// it on the first sighting and activates on the second); the fault does not set it.
    pub const REFERENCED: Flags = 1 << 8;
    /// PG_partially_mapped: a large anon folio some of whose pages were unmapped; it is on its
    /// memcg's deferred split queue (mm/huge_memory/deferred_split.rs).
    pub const PARTIALLY_MAPPED: Flags = 1 << 9;
    /// Isolated from its LRU list for migration (compaction), off every list until migrated
    /// or put back; never set between steps.
    pub const ISOLATED: Flags = 1 << 10;

    // The page cache's flags (mm/filemap.rs), from the top bit down.
    /// A page-cache folio: owner_mm is the file id, owner_index the page index in the file,
    /// owner_vma is unused (the file's i_mmap finds the PTEs).
    pub const FILE: Flags = 1 << 15;
    /// PG_readahead: the async readahead trigger of a readahead window (mm/readahead.rs).
    pub const READAHEAD: Flags = 1 << 14;
    /// PG_locked with !PG_uptodate: a read of the folio is in flight until
    /// `writeback_done_ns()` (u64::MAX while its bio is not submitted yet).
    pub const LOCKED: Flags = 1 << 13;
    /// PG_reclaim: reclaim wants the folio once its writeback completes (rotated to the
    /// inactive tail then, folio_rotate_reclaimable).
    pub const RECLAIM: Flags = 1 << 12;
    /// PG_workingset: the folio was active before (deactivated or refaulted while active).
    pub const WORKINGSET: Flags = 1 << 11;
}

/// A swap entry: device index in the top 4 bits, slot offset in the low 28 (1 TiB per device).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct SwapEntry(u32);

impl SwapEntry {
    pub const OFFSET_BITS: u32 = 28;
    pub fn new(dev: usize, offset: u32) -> SwapEntry {
        debug_assert!(dev < 16 && offset < 1 << Self::OFFSET_BITS);
        SwapEntry((dev as u32) << Self::OFFSET_BITS | offset)
    }
    pub fn dev(self) -> usize {
        (self.0 >> Self::OFFSET_BITS) as usize
    }
    pub fn offset(self) -> u32 {
        self.0 & ((1 << Self::OFFSET_BITS) - 1)
    }
    pub fn raw(self) -> u32 {
        self.0
    }
    pub fn from_raw(raw: u32) -> SwapEntry {
        SwapEntry(raw)
    }
}

/// The fields of a folio that only its head has, one record per folio in the table of its
/// order (mm/per_order.rs): 32 bytes a folio, 2 a base page for a 64K folio. The fields whose
/// empty value is NIL are stored XOR NIL, so that a record never written reads as empty.
#[derive(Clone, Copy)]
#[repr(C)]
pub struct FolioRec {
    owner_mm: u32,
    owner_vma: u32,
    /// Page index of the head within the owner VMA.
    pub owner_index: u32,
    /// First swap slot, valid while SWAPCACHE is set.
    swap: u32,
    lru_prev: u32,
    lru_next: u32,
    /// Number of PTEs (or the PMD, counted as 2^order) mapping pages of this folio.
    pub mapcount: u16,
    pub memcg: u16,
    /// MGLRU's bits of folio->flags (mm/vmscan/lru_gen/): the generation + 1 in the low
    /// bits (0: on no generation list), LRU_REFS above (accesses through file descriptors).
    pub lru_gen: u8,
}

// SAFETY: integers only; all zero is the empty record (NIL owner, swap and links).
unsafe impl bytemuck::Zeroable for FolioRec {}

/// A NIL-default field's stored form, and back (the same XOR).
#[inline]
fn nil0(v: u32) -> u32 {
    v ^ NIL
}

/// The per-pfn order bytes, readable by index anywhere and written only by the FolioTable:
/// the record lookups rely on every stored order being at most MAX_PAGE_ORDER.
pub struct OrderBytes(Vec<u8>);

impl std::ops::Index<usize> for OrderBytes {
    type Output = u8;
    #[inline]
    fn index(&self, pfn: usize) -> &u8 {
        &self.0[pfn]
    }
}

impl OrderBytes {
    pub fn as_vec(&self) -> &Vec<u8> {
        &self.0
    }
}

pub struct FolioTable {
    /// Per pfn: the order of the folio this pfn heads, or last headed (the key to its record).
    /// Written only by `init` and `set_order`.
    pub order: OrderBytes,
    /// Per pfn: the page flags of the folio this pfn heads.
    pub flags: Vec<flags::Flags>,
    recs: PerOrder<FolioRec>,
    /// The deferred split queue's [prev, next] of each large folio on it (_deferred_list),
    /// in the table of its order: the tables of orders 0 and 1 are never touched.
    deferred: PerOrder<[u32; 2]>,
    /// Time writeback completes by head pfn, for the folios with WRITEBACK or LOCKED set (for
    /// a folio being read, the time the read completes). Not a per-pfn array: only the folios
    /// under I/O at one moment need it (a few thousand), and the flags keep the hot checks at
    /// one array read. An entry lives exactly while either flag is set (clear, init and
    /// release drop it; mm/invariants.rs checks it).
    writeback_done: BTreeMap<u32, u64>,
    /// Folios in the swap cache on non-contiguous slots (the `non-contiguous` swap-out
    /// fallback), by head pfn: page i's slot. Any other folio's page i is at `swap[head] + i`.
    pub scattered: BTreeMap<u32, Box<[SwapEntry]>>,
    /// FOLL_PIN references by head pfn (folio->_pincount, one per pinned page: mm/gup.rs).
    /// Sparse: pins are rare, and a pinned folio is never migrated or reclaimed.
    pub pins: BTreeMap<u32, u32>,
}

/// The contiguous slot ranges of a folio in the swap cache, in page order.
pub enum SwapRuns {
    One(Option<(SwapEntry, u32)>),
    Many(std::vec::IntoIter<(SwapEntry, u32)>),
}

impl Iterator for SwapRuns {
    type Item = (SwapEntry, u32);
    fn next(&mut self) -> Option<(SwapEntry, u32)> {
        match self {
            SwapRuns::One(run) => run.take(),
            SwapRuns::Many(runs) => runs.next(),
        }
    }
}

impl FolioTable {
    pub fn new(nr_pages: u32) -> FolioTable {
        Self::try_new(nr_pages).unwrap_or_else(|e| panic!("{e}"))
    }

    /// [`FolioTable::new`], or an error when the host refuses the memory.
    pub fn try_new(nr_pages: u32) -> Result<FolioTable, crate::footprint::AllocFailed> {
        use crate::footprint::try_zeroed_vec;
        let n = nr_pages as usize;
        let max = crate::mm::page_alloc::MAX_PAGE_ORDER;
        Ok(FolioTable {
            order: OrderBytes(try_zeroed_vec(n, "folio orders")?),
            flags: try_zeroed_vec(n, "folio flags")?,
            recs: PerOrder::try_new(nr_pages, max, "folio records")?,
            deferred: PerOrder::try_new(nr_pages, max, "deferred split links")?,
            writeback_done: BTreeMap::new(),
            scattered: BTreeMap::new(),
            pins: BTreeMap::new(),
        })
    }

    /// The record of the folio headed by `pfn` (by its order byte).
    #[inline]
    pub fn rec(&self, pfn: usize) -> &FolioRec {
        let order = self.order[pfn] as u32;
        // SAFETY: `order` has an entry for `pfn`, so `pfn` is below the tables' nr_pages, and
        // only `init` and `set_order` store an order, each checked against MAX_PAGE_ORDER.
        unsafe { self.recs.get_unchecked(order, pfn) }
    }
    #[inline]
    pub fn rec_mut(&mut self, pfn: usize) -> &mut FolioRec {
        let order = self.order[pfn] as u32;
        // SAFETY: as in `rec`.
        unsafe { self.recs.get_unchecked_mut(order, pfn) }
    }
    #[inline]
    pub fn mapcount(&self, pfn: usize) -> u16 {
        self.rec(pfn).mapcount
    }
    #[inline]
    pub fn mapcount_mut(&mut self, pfn: usize) -> &mut u16 {
        &mut self.rec_mut(pfn).mapcount
    }
    #[inline]
    pub fn set_mapcount(&mut self, pfn: usize, v: u16) {
        self.rec_mut(pfn).mapcount = v;
    }
    #[inline]
    pub fn memcg(&self, pfn: usize) -> u16 {
        self.rec(pfn).memcg
    }
    #[inline]
    pub fn owner_mm(&self, pfn: usize) -> u32 {
        nil0(self.rec(pfn).owner_mm)
    }
    #[inline]
    pub fn owner_vma(&self, pfn: usize) -> u32 {
        nil0(self.rec(pfn).owner_vma)
    }
    #[inline]
    pub fn owner_index(&self, pfn: usize) -> u32 {
        self.rec(pfn).owner_index
    }
    /// (owner_mm, owner_vma, owner_index) through one record read (rmap's walk needs all
    /// three; each accessor alone looks the record up again).
    #[inline]
    pub fn owner(&self, pfn: usize) -> (u32, u32, u32) {
        let rec = self.rec(pfn);
        (nil0(rec.owner_mm), nil0(rec.owner_vma), rec.owner_index)
    }
    /// The first swap slot's raw entry (NIL unless in the swap cache).
    #[inline]
    pub fn swap(&self, pfn: usize) -> u32 {
        nil0(self.rec(pfn).swap)
    }
    #[inline]
    pub fn set_swap(&mut self, pfn: usize, raw: u32) {
        self.rec_mut(pfn).swap = nil0(raw);
    }
    #[inline]
    pub fn lru_prev(&self, pfn: usize) -> u32 {
        nil0(self.rec(pfn).lru_prev)
    }
    #[inline]
    pub fn lru_next(&self, pfn: usize) -> u32 {
        nil0(self.rec(pfn).lru_next)
    }
    /// The folio's LRU links (prev, next), through one record read.
    #[inline]
    pub fn lru_links(&self, pfn: usize) -> (u32, u32) {
        let rec = self.rec(pfn);
        (nil0(rec.lru_prev), nil0(rec.lru_next))
    }
    /// Set both LRU links of the folio through one record access (each setter alone looks
    /// the record up again: the order byte, then the table of that order).
    #[inline]
    pub fn set_lru_links(&mut self, pfn: usize, prev: u32, next: u32) {
        let rec = self.rec_mut(pfn);
        rec.lru_prev = nil0(prev);
        rec.lru_next = nil0(next);
    }
    /// list_del on the folio's side: its links (prev, next), reset to NIL, in one record
    /// access.
    #[inline]
    pub fn take_lru_links(&mut self, pfn: usize) -> (u32, u32) {
        let rec = self.rec_mut(pfn);
        let links = (nil0(rec.lru_prev), nil0(rec.lru_next));
        rec.lru_prev = nil0(NIL);
        rec.lru_next = nil0(NIL);
        links
    }
    #[inline]
    pub fn set_lru_prev(&mut self, pfn: usize, v: u32) {
        self.rec_mut(pfn).lru_prev = nil0(v);
    }
    #[inline]
    pub fn set_lru_next(&mut self, pfn: usize, v: u32) {
        self.rec_mut(pfn).lru_next = nil0(v);
    }
    #[inline]
    pub fn lru_gen(&self, pfn: usize) -> u8 {
        self.rec(pfn).lru_gen
    }
    #[inline]
    pub fn lru_gen_mut(&mut self, pfn: usize) -> &mut u8 {
        &mut self.rec_mut(pfn).lru_gen
    }
    #[inline]
    pub fn set_lru_gen(&mut self, pfn: usize, v: u8) {
        self.rec_mut(pfn).lru_gen = v;
    }

    /// The deferred split queue's [prev, next] of the large folio at `head`
    /// (mm/huge_memory/deferred_split.rs), stored XOR NIL.
    #[inline]
    pub fn deferred_link(&self, head: u32) -> (u32, u32) {
        let [prev, next] = *self
            .deferred
            .get(self.order[head as usize] as u32, head as usize);
        (nil0(prev), nil0(next))
    }
    #[inline]
    pub fn set_deferred_prev(&mut self, head: u32, v: u32) {
        let o = self.order[head as usize] as u32;
        self.deferred.get_mut(o, head as usize)[0] = nil0(v);
    }
    #[inline]
    pub fn set_deferred_next(&mut self, head: u32, v: u32) {
        let o = self.order[head as usize] as u32;
        self.deferred.get_mut(o, head as usize)[1] = nil0(v);
    }

    /// The run's anonymous folios are mostly of `order` or larger: the tables of smaller
    /// orders will be touched sparsely (splits, fallbacks), on base pages.
    pub fn advise_sparse_below(&self, order: u32) {
        self.recs.advise_sparse_below(order);
        self.deferred.advise_sparse_below(order);
    }

    /// A split changes a head's order (split_folio: the head becomes an order-0 folio): its
    /// record moves to the table of the new order.
    pub fn set_order(&mut self, pfn: u32, order: u32) {
        assert!(order <= MAX_PAGE_ORDER, "order {order} of pfn {pfn}");
        let rec = *self.rec(pfn as usize);
        self.order.0[pfn as usize] = order as u8;
        *self.rec_mut(pfn as usize) = rec;
    }

    /// folio_maybe_dma_pinned: is any page of the folio at `pfn` pinned?
    #[inline]
    pub fn is_pinned(&self, pfn: u32) -> bool {
        !self.pins.is_empty() && self.pins.contains_key(&pfn)
    }

    #[inline]
    pub fn nr_pages(&self, pfn: u32) -> u32 {
        1 << self.order[pfn as usize]
    }
    #[inline]
    pub fn test(&self, pfn: u32, flag: flags::Flags) -> bool {
        self.flags[pfn as usize] & flag != 0
    }
    #[inline]
    pub fn set(&mut self, pfn: u32, flag: flags::Flags) {
        self.flags[pfn as usize] |= flag;
    }
    #[inline]
    pub fn clear(&mut self, pfn: u32, flag: flags::Flags) {
        let fl = &mut self.flags[pfn as usize];
        let io = *fl & IO_FLAGS;
        *fl &= !flag;
        // `flag` is a constant at nearly every call: this folds away unless it is an I/O flag.
        if flag & IO_FLAGS != 0 && io != 0 && *fl & IO_FLAGS == 0 {
            self.forget_io(pfn);
        }
    }
    /// When the folio's writeback (WRITEBACK) or read (LOCKED) completes; one of them is set.
    #[inline]
    pub fn writeback_done_ns(&self, pfn: u32) -> u64 {
        debug_assert!(self.test(pfn, IO_FLAGS), "folio {pfn} is under no I/O");
        *self
            .writeback_done
            .get(&pfn)
            .expect("a folio under I/O has its completion time")
    }
    /// Record when the folio's I/O completes; the caller has set WRITEBACK or LOCKED.
    #[inline]
    pub fn set_writeback_done_ns(&mut self, pfn: u32, done_ns: u64) {
        debug_assert!(self.test(pfn, IO_FLAGS), "folio {pfn} is under no I/O");
        self.writeback_done.insert(pfn, done_ns);
    }
    /// Folios with a completion time (invariants).
    pub fn writeback_done_pfns(&self) -> impl Iterator<Item = u32> + '_ {
        self.writeback_done.keys().copied()
    }
    /// The slot of the folio's first page.
    pub fn swap_entry(&self, pfn: u32) -> SwapEntry {
        debug_assert!(self.test(pfn, flags::SWAPCACHE));
        SwapEntry::from_raw(self.swap(pfn as usize))
    }

    /// The slot of page `i` of the folio at `pfn` (in the swap cache).
    #[inline]
    pub fn page_swap_entry(&self, pfn: u32, i: u32) -> SwapEntry {
        match self.scattered_slots(pfn) {
            Some(slots) => slots[i as usize],
            None => {
                let first = self.swap_entry(pfn);
                SwapEntry::new(first.dev(), first.offset() + i)
            }
        }
    }

    /// The slots of the folio at `pfn` if it is on non-contiguous ones. Nearly always none:
    /// the map is then empty and not searched.
    #[inline(always)]
    fn scattered_slots(&self, pfn: u32) -> Option<&[SwapEntry]> {
        if self.scattered.is_empty() {
            return None;
        }
        self.scattered.get(&pfn).map(|slots| &slots[..])
    }

    /// Which page of the folio at `pfn` (in the swap cache) sits in slot `entry`.
    pub fn swap_page_index(&self, pfn: u32, entry: SwapEntry) -> u32 {
        match self.scattered_slots(pfn) {
            Some(slots) => slots
                .iter()
                .position(|&e| e == entry)
                .expect("the swap cache points at a folio that owns the slot")
                as u32,
            None => entry.offset() - self.swap_entry(pfn).offset(),
        }
    }

    /// The folio's slots as contiguous runs (one for a folio on contiguous slots). Always
    /// inline: the callers' loops then see the one run of the common case.
    #[inline(always)]
    pub fn swap_runs(&self, pfn: u32) -> SwapRuns {
        match self.scattered_slots(pfn) {
            None => SwapRuns::One(Some((self.swap_entry(pfn), self.nr_pages(pfn)))),
            Some(slots) => Self::scattered_runs(slots),
        }
    }

    /// swap_runs of a folio on non-contiguous slots (rare: kept out of line).
    #[inline(never)]
    fn scattered_runs(slots: &[SwapEntry]) -> SwapRuns {
        let mut runs: Vec<(SwapEntry, u32)> = Vec::new();
        for &e in slots.iter() {
            match runs.last_mut() {
                Some((first, n)) if first.dev() == e.dev() && first.offset() + *n == e.offset() => {
                    *n += 1
                }
                _ => runs.push((e, 1)),
            }
        }
        SwapRuns::Many(runs.into_iter())
    }

    /// Prefetch the entries of `pfn` that freeing or reclaiming its folio reads.
    #[inline]
    pub fn prefetch(&self, pfn: u32) {
        use crate::engine::prefetch::prefetch;
        let i = pfn as usize;
        prefetch(&self.flags, i);
        prefetch(self.order.as_vec(), i);
        // The record's address needs the order byte: one load here, the record's line ahead.
        crate::engine::prefetch::prefetch_ptr(self.rec(i));
    }

    /// Set up a freshly allocated folio.
    pub fn init(&mut self, pfn: u32, order: u32, memcg: u16, owner: (u32, u32, u32)) {
        let i = pfn as usize;
        assert!(order <= MAX_PAGE_ORDER, "order {order} of pfn {pfn}");
        let io = std::mem::replace(&mut self.flags[i], flags::ALLOCATED) & IO_FLAGS != 0;
        self.order.0[i] = order as u8;
        *self.recs.get_mut(order, i) = FolioRec {
            owner_mm: nil0(owner.0),
            owner_vma: nil0(owner.1),
            owner_index: owner.2,
            swap: nil0(NIL),
            lru_prev: nil0(NIL),
            lru_next: nil0(NIL),
            mapcount: 0,
            memcg,
            lru_gen: 0,
        };
        if io {
            self.forget_io(pfn);
        }
    }

    #[inline]
    pub fn release(&mut self, pfn: u32) {
        let i = pfn as usize;
        debug_assert!(
            self.flags[i] & (flags::LRU | flags::SWAPCACHE) == 0,
            "freeing folio {pfn} still on LRU or in swap cache"
        );
        let io = std::mem::take(&mut self.flags[i]) & IO_FLAGS != 0;
        let rec = self.rec_mut(i);
        rec.owner_mm = nil0(NIL);
        rec.mapcount = 0;
        // Writeback observed late: a folio may go with WRITEBACK still set.
        if io {
            self.forget_io(pfn);
        }
        // The model's pin holder goes away with the mapping (mm/gup.rs).
        if !self.pins.is_empty() {
            self.forget_pin(pfn);
        }
    }

    // The two maps' removals out of line: inline they kept `init` and `release` from being
    // inlined into every allocation and free.
    #[inline(never)]
    fn forget_io(&mut self, pfn: u32) {
        self.writeback_done.remove(&pfn);
    }

    #[inline(never)]
    fn forget_pin(&mut self, pfn: u32) {
        self.pins.remove(&pfn);
    }
}

impl FolioTable {
    /// page_folio(): the head of the folio containing `pfn`. Tail pfns carry no flags, so the
    /// first aligned-down pfn that heads a live folio covering `pfn` is its head.
    #[inline]
    pub fn head_of(&self, pfn: u32) -> u32 {
        // folio_of's first candidate (order 0: `pfn` itself), inline: a head, or a base page.
        if self.test(pfn, flags::ALLOCATED) {
            return pfn;
        }
        self.folio_of(pfn)
            .unwrap_or_else(|| panic!("pfn {pfn} belongs to no folio"))
    }

    /// The head of the live folio covering `pfn`, if one does (a scanner's page_folio on any
    /// pfn: free, kernel-held and folio pages alike).
    pub fn folio_of(&self, pfn: u32) -> Option<u32> {
        (0..=crate::mm::page_alloc::MAX_PAGE_ORDER).find_map(|order| {
            let candidate = pfn & !((1u32 << order) - 1);
            (self.test(candidate, flags::ALLOCATED)
                && self.order[candidate as usize] as u32 >= order)
                .then_some(candidate)
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_record_never_written_reads_empty() {
        let f = FolioTable::new(1024);
        for pfn in [0, 17, 1023] {
            assert_eq!(
                (f.owner_mm(pfn), f.owner_vma(pfn), f.swap(pfn)),
                (NIL, NIL, NIL)
            );
            assert_eq!((f.lru_prev(pfn), f.lru_next(pfn)), (NIL, NIL));
            assert_eq!(
                (f.mapcount(pfn), f.memcg(pfn), f.owner_index(pfn)),
                (0, 0, 0)
            );
        }
        assert_eq!(f.deferred_link(64), (NIL, NIL));
    }

    #[test]
    fn a_split_moves_the_heads_record_and_leaves_the_tails_their_own() {
        let mut f = FolioTable::new(64);
        f.init(16, 4, 3, (7, 8, 100));
        f.set_mapcount(16, 16);
        f.set_lru_next(16, 32);
        // pfn 1's order-0 record has the same index (1) as this one, in another table.
        f.init(1, 0, 1, (9, 9, 9));
        assert_eq!(f.owner_mm(16), 7);
        f.set_order(16, 0);
        assert_eq!(
            (
                f.owner_mm(16),
                f.owner_index(16),
                f.memcg(16),
                f.mapcount(16),
                f.lru_next(16)
            ),
            (7, 100, 3, 16, 32)
        );
        f.init(17, 0, 3, (7, 8, 101));
        assert_eq!((f.owner_index(17), f.lru_prev(17)), (101, NIL));
        // Released, the record keeps no owner until the pfn heads a folio again.
        f.release(17);
        assert_eq!((f.owner_mm(17), f.mapcount(17)), (NIL, 0));
    }
}
