//! The buddy free lists (mm/page_alloc.c): free_area[order].free_list[migratetype], merging on
//! free, splitting on allocation, and the per-pageblock migratetype.
//!
//! Each list is doubly linked through two dense per-pfn arrays, so a buddy is unlinked in O(1)
//! and pages go to a list's head or tail as the kernel puts them (allocation takes the head;
//! a free whose buddy's buddy is free goes to the tail, where it waits to merge further).

use super::migratetype::{MigrateType, MIGRATE_TYPES, PAGEBLOCK_NR_PAGES, PAGEBLOCK_ORDER};
use super::MAX_PAGE_ORDER;
use crate::mm::folio::{flags, FolioTable};
use crate::mm::per_order::{PerOrder, NR_ORDERS};

pub const NR_PAGE_ORDERS: usize = MAX_PAGE_ORDER as usize + 1;
/// The order byte of a pfn that heads no free buddy block (PageBuddy clear); a free block's
/// head stores its order + 1.
const NOT_BUDDY: u8 = 0;
const NIL: u32 = u32::MAX;
const NEXT: usize = 0;
const PREV: usize = 1;

pub struct FreeArea {
    nr_pages: u32,
    head: [[u32; MIGRATE_TYPES]; NR_PAGE_ORDERS],
    tail: [[u32; MIGRATE_TYPES]; NR_PAGE_ORDERS],
    /// Blocks on each list (free_area[order].nr_free is the sum over types).
    nr_blocks: [[u32; MIGRATE_TYPES]; NR_PAGE_ORDERS],
    /// Per free block: [next, prev] on its list, in the table of its order (mm/per_order.rs:
    /// a pfn heads a free block of one order at a time; meaningless for blocks not free). The
    /// tables in place: the list operations look links up between stores.
    links: PerOrder<[u32; 2], [Vec<[u32; 2]>; NR_ORDERS]>,
    /// Per pfn: order + 1 of the free block it heads (PageBuddy + buddy_order), or NOT_BUDDY.
    buddy_order: Vec<u8>,
    /// Per pageblock: its MigrateType.
    pageblock_mt: Vec<u8>,
    /// Per pageblock: PB_migrate_skip, compaction's hint that isolation recently failed
    /// there (mm/compaction/skip.rs), one bit per block.
    pageblock_skip: Vec<u64>,
    /// The direct compactor's capture_control while it runs (mm/compaction/): a block of its
    /// order freed meanwhile is handed to it instead of the free lists.
    pub capture: Option<Capture>,
    /// Pageblocks of each type (/proc/pagetypeinfo's "Number of blocks type").
    pub nr_pageblocks: [u32; MIGRATE_TYPES],
    /// NR_FREE_PAGES: pages on the free lists, isolated pageblocks excluded. Pages on per-CPU
    /// lists are not free pages to the kernel (the watermarks do not see them).
    pub nr_free_pages: u64,
    /// zone->nr_free_highatomic.
    pub nr_free_highatomic: u64,
    /// One bit per pfn: allocated to a movable user that is not an LRU folio (zsmalloc's
    /// pages, which have movable_ops). prep_move_freepages_block counts these and the LRU
    /// folios' pages as the pageblock's movable pages.
    movable_ops: Vec<u64>,
    /// MIGRC (mm/migrate/flush/migrc.rs): per free pfn, the generation of the TLB flush still
    /// owed for its stale entries (0: none). Empty unless the policy is on.
    mgen: Vec<u16>,
    /// current->mgen: the latest generation taken off the lists since the last check.
    taken_mgen: u16,
}

impl FreeArea {
    /// Empty lists; every pageblock MOVABLE, as memmap_init_range leaves them at boot.
    pub fn new(nr_pages: u32) -> FreeArea {
        Self::try_new(nr_pages).unwrap_or_else(|e| panic!("{e}"))
    }

    /// [`FreeArea::new`], or an error when the host refuses the memory of its links.
    pub fn try_new(nr_pages: u32) -> Result<FreeArea, crate::footprint::AllocFailed> {
        let nr_blocks = nr_pages.div_ceil(PAGEBLOCK_NR_PAGES) as usize;
        let mut nr_pageblocks = [0; MIGRATE_TYPES];
        nr_pageblocks[MigrateType::Movable as usize] = nr_blocks as u32;
        Ok(FreeArea {
            nr_pages,
            head: [[NIL; MIGRATE_TYPES]; NR_PAGE_ORDERS],
            tail: [[NIL; MIGRATE_TYPES]; NR_PAGE_ORDERS],
            nr_blocks: [[0; MIGRATE_TYPES]; NR_PAGE_ORDERS],
            // Both all zero (NOT_BUDDY): allocated zeroed, touched only where pages are freed.
            links: PerOrder::try_new(nr_pages, MAX_PAGE_ORDER, "free list links")?,
            buddy_order: vec![NOT_BUDDY; nr_pages as usize],
            pageblock_mt: vec![MigrateType::Movable as u8; nr_blocks],
            pageblock_skip: vec![0; nr_blocks.div_ceil(64)],
            capture: None,
            nr_pageblocks,
            nr_free_pages: 0,
            nr_free_highatomic: 0,
            movable_ops: vec![0; (nr_pages as usize).div_ceil(64)],
            mgen: Vec::new(),
            taken_mgen: 0,
        })
    }

    /// Free blocks will mostly be of `order` or larger: base pages for the smaller orders'
    /// link tables (mm/per_order.rs).
    pub fn advise_sparse_below(&self, order: u32) {
        self.links.advise_sparse_below(order);
    }

    /// Track MIGRC generations on free pages.
    pub fn enable_mgen(&mut self) {
        self.mgen = vec![0; self.nr_pages as usize];
    }

    /// Tag the block at `pfn` as freed with its flush owed for generation `gen`.
    pub fn tag_mgen(&mut self, pfn: u32, order: u32, gen: u16) {
        if !self.mgen.is_empty() {
            self.mgen[pfn as usize..(pfn + (1 << order)) as usize].fill(gen);
        }
    }

    /// Pages of a block leave the free lists (or a pcp list): their tags go to the taker.
    pub fn take_block_mgen(&mut self, pfn: u32, order: u32) {
        if self.mgen.is_empty() {
            return;
        }
        for tag in &mut self.mgen[pfn as usize..(pfn + (1 << order)) as usize] {
            if *tag != 0 {
                self.taken_mgen = crate::mm::migrate::flush::migrc::mgen_latest(
                    self.taken_mgen,
                    std::mem::take(tag),
                );
            }
        }
    }

    /// The MIGRC tag of `pfn` (0: none, or not tracked), and current->mgen not yet checked.
    pub fn mgen_of(&self, pfn: u32) -> u16 {
        self.mgen.get(pfn as usize).copied().unwrap_or(0)
    }

    pub fn unchecked_mgen(&self) -> u16 {
        self.taken_mgen
    }

    /// Take-and-zero current->mgen (check_flush_task_mgen).
    pub fn take_mgen(&mut self) -> u16 {
        std::mem::take(&mut self.taken_mgen)
    }

    pub fn nr_pages(&self) -> u32 {
        self.nr_pages
    }

    /// get_pfnblock_migratetype.
    #[inline]
    pub fn pageblock_mt(&self, pfn: u32) -> MigrateType {
        MigrateType::from_index(self.pageblock_mt[(pfn >> PAGEBLOCK_ORDER) as usize])
    }

    /// set_pageblock_migratetype.
    pub fn set_pageblock_mt(&mut self, pfn: u32, mt: MigrateType) {
        let slot = &mut self.pageblock_mt[(pfn >> PAGEBLOCK_ORDER) as usize];
        self.nr_pageblocks[*slot as usize] -= 1;
        self.nr_pageblocks[mt as usize] += 1;
        *slot = mt as u8;
    }

    /// change_pageblock_range: every pageblock of a block of `order` >= pageblock_order.
    pub fn change_pageblock_range(&mut self, pfn: u32, order: u32, mt: MigrateType) {
        debug_assert!(order >= PAGEBLOCK_ORDER);
        for block in 0..1u32 << (order - PAGEBLOCK_ORDER) {
            self.set_pageblock_mt(pfn + block * PAGEBLOCK_NR_PAGES, mt);
        }
    }

    /// get_pageblock_skip.
    #[inline]
    pub fn pageblock_skip(&self, pfn: u32) -> bool {
        let block = (pfn >> PAGEBLOCK_ORDER) as usize;
        self.pageblock_skip[block / 64] >> (block % 64) & 1 != 0
    }

    /// set_pageblock_skip / clear_pageblock_skip.
    pub fn set_pageblock_skip(&mut self, pfn: u32, skip: bool) {
        let block = (pfn >> PAGEBLOCK_ORDER) as usize;
        debug_assert!(pfn < self.nr_pages, "skip bit of pfn {pfn} past the zone");
        let word = &mut self.pageblock_skip[block / 64];
        if skip {
            *word |= 1 << (block % 64);
        } else {
            *word &= !(1 << (block % 64));
        }
    }

    /// Prefetch what freeing the block at `pfn` reads first: its buddy's order byte and order-0
    /// list links.
    #[inline]
    pub fn prefetch(&self, pfn: u32) {
        crate::engine::prefetch::prefetch(&self.buddy_order, pfn as usize);
        if pfn ^ 1 < self.nr_pages {
            crate::engine::prefetch::prefetch_ptr(self.links.get(0, (pfn ^ 1) as usize));
        }
    }

    /// The order of the free block `pfn` heads, if it heads one.
    #[inline]
    pub fn buddy_order(&self, pfn: u32) -> Option<u32> {
        let o = self.buddy_order[pfn as usize];
        (o != NOT_BUDDY).then(|| o as u32 - 1)
    }

    /// free_area[order].nr_free.
    pub fn nr_free(&self, order: u32) -> u32 {
        self.nr_blocks[order as usize].iter().sum()
    }

    pub fn nr_blocks(&self, order: u32, mt: MigrateType) -> u32 {
        self.nr_blocks[order as usize][mt as usize]
    }

    #[inline]
    pub fn free_area_empty(&self, order: u32, mt: MigrateType) -> bool {
        self.head[order as usize][mt as usize] == NIL
    }

    /// get_page_from_free_area: the list's head.
    #[inline]
    pub fn head(&self, order: u32, mt: MigrateType) -> Option<u32> {
        let h = self.head[order as usize][mt as usize];
        (h != NIL).then_some(h)
    }

    /// The blocks of one list, head first.
    pub fn list(&self, order: u32, mt: MigrateType) -> impl Iterator<Item = u32> + '_ {
        let mut cur = self.head[order as usize][mt as usize];
        std::iter::from_fn(move || {
            (cur != NIL).then(|| {
                let p = cur;
                cur = self.links.get(order, p as usize)[NEXT];
                p
            })
        })
    }

    /// The blocks of one list, tail first (list_for_each_entry_reverse).
    pub fn list_rev(&self, order: u32, mt: MigrateType) -> impl Iterator<Item = u32> + '_ {
        let mut cur = self.tail[order as usize][mt as usize];
        std::iter::from_fn(move || {
            (cur != NIL).then(|| {
                let p = cur;
                cur = self.links.get(order, p as usize)[PREV];
                p
            })
        })
    }

    /// move_freelist_head: rotate the list so that `pfn` is first (the blocks before it go to
    /// the tail, in order): compaction's free-list searches skip what they saw last time.
    pub fn rotate_to_head(&mut self, order: u32, mt: MigrateType, pfn: u32) {
        let (o, m, p) = (order as usize, mt as usize, pfn as usize);
        debug_assert_eq!(self.buddy_order[p], order as u8 + 1);
        if self.head[o][m] == pfn {
            return;
        }
        let (old_head, old_tail) = (self.head[o][m], self.tail[o][m]);
        let prev = self.links.get(order, p)[PREV];
        self.links.get_mut(order, old_tail as usize)[NEXT] = old_head;
        self.links.get_mut(order, old_head as usize)[PREV] = old_tail;
        self.links.get_mut(order, p)[PREV] = NIL;
        self.links.get_mut(order, prev as usize)[NEXT] = NIL;
        self.head[o][m] = pfn;
        self.tail[o][m] = prev;
    }

    /// move_freelist_tail: rotate the list so that `pfn` is last.
    pub fn rotate_to_tail(&mut self, order: u32, mt: MigrateType, pfn: u32) {
        let next = self.links.get(order, pfn as usize)[NEXT];
        if next != NIL {
            self.rotate_to_head(order, mt, next);
        }
    }

    /// account_freepages.
    #[inline]
    pub fn account(&mut self, nr_pages: i64, mt: MigrateType) {
        if mt == MigrateType::Isolate {
            return;
        }
        self.nr_free_pages = self.nr_free_pages.checked_add_signed(nr_pages).unwrap();
        if mt == MigrateType::HighAtomic {
            self.nr_free_highatomic = self
                .nr_free_highatomic
                .checked_add_signed(nr_pages)
                .unwrap();
        }
    }

    /// __add_to_free_list + set_buddy_order (no accounting).
    // Inlined: a few loads and stores, done per merge and per free.
    #[inline(always)]
    fn add(&mut self, pfn: u32, order: u32, mt: MigrateType, tail: bool) {
        debug_assert_eq!(self.buddy_order[pfn as usize], NOT_BUDDY);
        let (o, m) = (order as usize, mt as usize);
        let p = pfn as usize;
        if self.head[o][m] == NIL {
            self.head[o][m] = pfn;
            self.tail[o][m] = pfn;
            *self.links.get_mut(order, p) = [NIL, NIL];
        } else if tail {
            let t = self.tail[o][m];
            self.links.get_mut(order, t as usize)[NEXT] = pfn;
            *self.links.get_mut(order, p) = [NIL, t];
            self.tail[o][m] = pfn;
        } else {
            let h = self.head[o][m];
            self.links.get_mut(order, h as usize)[PREV] = pfn;
            *self.links.get_mut(order, p) = [h, NIL];
            self.head[o][m] = pfn;
        }
        self.nr_blocks[o][m] += 1;
        self.buddy_order[p] = order as u8 + 1;
    }

    /// __del_page_from_free_list (no accounting).
    // Inlined: a few loads and stores, done per merge and per free.
    #[inline(always)]
    fn del(&mut self, pfn: u32, order: u32, mt: MigrateType) {
        let (o, m, p) = (order as usize, mt as usize, pfn as usize);
        debug_assert_eq!(
            self.buddy_order[p],
            order as u8 + 1,
            "pfn {pfn} is no order-{order} buddy"
        );
        let [next, prev] = *self.links.get(order, p);
        if prev == NIL {
            debug_assert_eq!(self.head[o][m], pfn, "pfn {pfn} is not on the {mt:?} list");
            self.head[o][m] = next;
        } else {
            self.links.get_mut(order, prev as usize)[NEXT] = next;
        }
        if next == NIL {
            self.tail[o][m] = prev;
        } else {
            self.links.get_mut(order, next as usize)[PREV] = prev;
        }
        self.nr_blocks[o][m] -= 1;
        self.buddy_order[p] = NOT_BUDDY;
    }

    /// del_page_from_free_list.
    pub fn del_and_account(&mut self, pfn: u32, order: u32, mt: MigrateType) {
        self.take_block_mgen(pfn, order);
        self.del(pfn, order, mt);
        self.account(-(1i64 << order), mt);
    }

    /// move_to_free_list: to the tail of another type's list.
    fn move_to(&mut self, pfn: u32, order: u32, old: MigrateType, new: MigrateType) {
        self.del(pfn, order, old);
        self.add(pfn, order, new, true);
        self.account(-(1i64 << order), old);
        self.account(1i64 << order, new);
    }

    /// expand: hand the upper halves of a block split from `high` down to `low` back to the
    /// head of `mt`'s lists. Returns the pages put back.
    pub fn expand(&mut self, pfn: u32, low: u32, mut high: u32, mt: MigrateType) -> u64 {
        let mut added = 0;
        while high > low {
            high -= 1;
            self.add(pfn + (1 << high), high, mt, false);
            added += 1u64 << high;
        }
        added
    }

    /// page_del_and_expand.
    pub fn del_and_expand(&mut self, pfn: u32, low: u32, high: u32, mt: MigrateType) {
        self.take_block_mgen(pfn, high);
        self.del(pfn, high, mt);
        let kept = (1u64 << high) - self.expand(pfn, low, high, mt);
        self.account(-(kept as i64), mt);
    }

    /// __rmqueue_smallest: the head of the smallest non-empty list of `mt` at or above `order`,
    /// split down to `order`.
    pub fn rmqueue_smallest(&mut self, order: u32, mt: MigrateType) -> Option<u32> {
        for current in order..=MAX_PAGE_ORDER {
            if let Some(pfn) = self.head(current, mt) {
                self.del_and_expand(pfn, order, current, mt);
                return Some(pfn);
            }
        }
        None
    }

    /// __rmqueue_smallest repeated up to `max` times, the blocks appended to `list` in the
    /// order taken. Returns how many were taken (fewer once `mt` has no block of `order` or
    /// more). Splitting a block leaves one half on each list from its order down to `order`,
    /// all empty before (else a smaller block would have been taken), so the next takes walk
    /// the block upwards from its head; taking a run of it at once and putting back what is
    /// left leaves the lists as the one-by-one takes would.
    pub fn rmqueue_smallest_bulk(
        &mut self,
        order: u32,
        mt: MigrateType,
        max: u32,
        list: &mut std::collections::VecDeque<u32>,
    ) -> u32 {
        let mut taken = 0;
        while taken < max {
            let Some(current) = (order..=MAX_PAGE_ORDER).find(|&o| !self.free_area_empty(o, mt))
            else {
                break;
            };
            let pfn = self.head[current as usize][mt as usize];
            let n = (max - taken).min(1 << (current - order));
            self.take_block_mgen(pfn, current);
            self.del(pfn, current, mt);
            list.extend((0..n).map(|i| pfn + (i << order)));
            // What is left of the block, in aligned blocks upwards: a run ending at the
            // block's end, so each block is of the order of its offset's lowest set bit.
            let (mut off, end) = (n << order, 1u32 << current);
            while off < end {
                let o = off.trailing_zeros();
                self.add(pfn + off, o, mt, false);
                off += 1 << o;
            }
            self.account(-((n as i64) << order), mt);
            taken += n;
        }
        taken
    }

    /// __free_one_page: merge with free buddies as far as possible and put the result on its
    /// type's list, at the tail when `to_tail` (FPI_TO_TAIL) or when a further merge looks
    /// likely (buddy_merge_likely), else at the head.
    pub fn free_one_page(&mut self, mut pfn: u32, mut order: u32, mt: MigrateType, to_tail: bool) {
        debug_assert_eq!(pfn % (1 << order), 0);
        self.account(1 << order, mt);
        // Nothing below installs or removes a capture_control: tested once per free.
        let capturing = self.capture.is_some();
        while order < MAX_PAGE_ORDER {
            if capturing
                && self
                    .capture
                    .as_mut()
                    .is_some_and(|c| c.take(pfn, order, mt))
            {
                // compaction_capture: the whole merged block goes to the compactor, taken as
                // from a free list (its MIGRC tags and its buddies' go to the taker).
                self.take_block_mgen(pfn, order);
                self.account(-(1i64 << order), mt);
                return;
            }
            let buddy = pfn ^ (1 << order);
            // Past the zone's end (buddy_order spans it) there is no buddy.
            if self.buddy_order.get(buddy as usize) != Some(&(order as u8 + 1)) {
                break;
            }
            let mut buddy_mt = mt;
            if order >= PAGEBLOCK_ORDER {
                // Free pages of isolated or highatomic blocks never merge with other types.
                buddy_mt = self.pageblock_mt(buddy);
                if buddy_mt != mt && !(mt.is_mergeable() && buddy_mt.is_mergeable()) {
                    break;
                }
            }
            self.del(buddy, order, buddy_mt);
            if buddy_mt != mt {
                // The merged block takes our type, so expand() later splits onto the right lists.
                self.account(-(1i64 << order), buddy_mt);
                self.account(1i64 << order, mt);
                self.change_pageblock_range(buddy, order, mt);
            }
            pfn &= !(1 << order);
            order += 1;
        }
        let tail = to_tail || self.buddy_merge_likely(pfn, order);
        self.add(pfn, order, mt, tail);
    }

    /// buddy_merge_likely: below the second-largest order, is the buddy of the block one order
    /// up free? Then this block is likely to merge twice soon.
    fn buddy_merge_likely(&self, pfn: u32, order: u32) -> bool {
        if order >= MAX_PAGE_ORDER - 1 {
            return false;
        }
        let higher = pfn & !(1 << order);
        let higher_buddy = higher ^ (1 << (order + 1));
        self.buddy_order.get(higher_buddy as usize) == Some(&(order as u8 + 2))
    }

    /// split_large_buddy + __free_one_page: a block larger than a pageblock is freed one
    /// pageblock at a time, each onto its own pageblock's type.
    pub fn free_pages_ok(&mut self, pfn: u32, order: u32, to_tail: bool) {
        let step = order.min(PAGEBLOCK_ORDER);
        for chunk in (pfn..pfn + (1 << order)).step_by(1 << step) {
            let mt = self.pageblock_mt(chunk);
            self.free_one_page(chunk, step, mt, to_tail);
        }
    }

    /// prep_move_freepages_block: the pageblock around `pfn` (None if it runs past the zone),
    /// its free pages, and its movable pages: those of LRU folios (PageLRU) and those with
    /// movable_ops. Pages on per-CPU lists are neither.
    pub fn prep_move_freepages_block(
        &self,
        pfn: u32,
        folios: &FolioTable,
    ) -> Option<(u32, u32, u32)> {
        let start = pfn & !(PAGEBLOCK_NR_PAGES - 1);
        let end = start + PAGEBLOCK_NR_PAGES;
        if end > self.nr_pages {
            return None;
        }
        let (mut free, mut movable) = (0, 0);
        let mut p = start;
        while p < end {
            if let Some(o) = self.buddy_order(p) {
                free += 1 << o;
                p += 1 << o;
            } else if folios.test(p, flags::ALLOCATED) {
                // A folio lies within one pageblock (order <= pageblock_order, aligned).
                let n = folios.nr_pages(p);
                if folios.test(p, flags::LRU) {
                    movable += n;
                }
                p += n;
            } else {
                movable += self.is_movable_ops(p) as u32;
                p += 1;
            }
        }
        Some((start, free, movable))
    }

    /// __move_freepages_block: every free block of the pageblock at `start` to `new`'s lists
    /// (the caller sets the pageblock's type). Returns the pages moved.
    pub fn move_freepages_block(&mut self, start: u32, old: MigrateType, new: MigrateType) -> u32 {
        let mut moved = 0;
        let mut p = start;
        while p < start + PAGEBLOCK_NR_PAGES {
            match self.buddy_order(p) {
                Some(o) => {
                    self.move_to(p, o, old, new);
                    moved += 1 << o;
                    p += 1 << o;
                }
                None => p += 1,
            }
        }
        moved
    }

    /// Mark or clear a block allocated to a non-LRU movable user (__SetPageMovableOps).
    pub fn set_movable_ops(&mut self, pfn: u32, order: u32, movable: bool) {
        let (first, n) = (pfn as usize, 1usize << order);
        if n >= 64 {
            let words = &mut self.movable_ops[first / 64..(first + n) / 64];
            words.fill(if movable { u64::MAX } else { 0 });
        } else {
            let mask = ((1u64 << n) - 1) << (first % 64);
            let w = &mut self.movable_ops[first / 64];
            if movable {
                *w |= mask;
            } else {
                *w &= !mask;
            }
        }
    }

    pub fn is_movable_ops(&self, pfn: u32) -> bool {
        self.movable_ops[pfn as usize / 64] >> (pfn % 64) & 1 != 0
    }

    /// Invariants of the lists: links, orders, alignment, types, counts. Returns a bitmap of
    /// the free pages for the caller's cross-checks.
    pub fn check(&self) -> Result<Vec<bool>, String> {
        let mut free = vec![false; self.nr_pages as usize];
        let (mut nr_free, mut nr_highatomic) = (0u64, 0u64);
        for order in 0..=MAX_PAGE_ORDER {
            for mt in MigrateType::ALL {
                let count = self.check_free_list(order, mt, &mut free)?;
                if mt != MigrateType::Isolate {
                    nr_free += (count as u64) << order;
                }
                if mt == MigrateType::HighAtomic {
                    nr_highatomic += (count as u64) << order;
                }
            }
        }
        let heads = self.buddy_order.iter().filter(|&&o| o != NOT_BUDDY).count();
        let listed: u32 = self.nr_blocks.iter().flatten().sum();
        if heads != listed as usize {
            return Err(format!(
                "{heads} pfns are marked PageBuddy but the lists hold {listed} blocks"
            ));
        }
        if nr_free != self.nr_free_pages || nr_highatomic != self.nr_free_highatomic {
            return Err(format!(
                "NR_FREE_PAGES {} / nr_free_highatomic {} but the lists hold {nr_free} / {nr_highatomic}",
                self.nr_free_pages, self.nr_free_highatomic
            ));
        }
        self.check_pageblock_skip()?;
        if let Some(c) = &self.capture {
            return Err(format!("a capture_control is left installed: {c:?}"));
        }
        self.check_pageblock_types()?;
        Ok(free)
    }

    /// One free_area[order].free_list[mt]: links, tail and count; marks its pages in `free`.
    /// Returns the blocks it holds.
    fn check_free_list(
        &self,
        order: u32,
        mt: MigrateType,
        free: &mut [bool],
    ) -> Result<u32, String> {
        let (o, m) = (order as usize, mt as usize);
        let mut count = 0;
        let mut prev = NIL;
        let mut cur = self.head[o][m];
        while cur != NIL {
            if self.links.get(order, cur as usize)[PREV] != prev {
                return Err(format!(
                    "order-{order} {mt:?} list: pfn {cur} has a bad prev link"
                ));
            }
            self.check_free_block(order, mt, cur, free)?;
            count += 1;
            prev = cur;
            cur = self.links.get(order, cur as usize)[NEXT];
        }
        if prev != self.tail[o][m] {
            return Err(format!(
                "order-{order} {mt:?} list: tail is {} but the last block is {prev}",
                self.tail[o][m]
            ));
        }
        if count != self.nr_blocks[o][m] {
            return Err(format!(
                "order-{order} {mt:?} list holds {count} blocks, nr_free says {}",
                self.nr_blocks[o][m]
            ));
        }
        Ok(count)
    }

    /// One free block at `cur` on the order-`order` `mt` list: its buddy order, alignment,
    /// pageblock types, and pages free once and without movable_ops.
    fn check_free_block(
        &self,
        order: u32,
        mt: MigrateType,
        cur: u32,
        free: &mut [bool],
    ) -> Result<(), String> {
        if self.buddy_order[cur as usize] != order as u8 + 1 {
            return Err(format!(
                "pfn {cur} on the order-{order} {mt:?} list has buddy order {}",
                self.buddy_order[cur as usize] as i64 - 1
            ));
        }
        if !cur.is_multiple_of(1 << order) || cur + (1 << order) > self.nr_pages {
            return Err(format!(
                "order-{order} free block at pfn {cur} is misaligned or past the zone"
            ));
        }
        let blocks = (1u32 << order.saturating_sub(PAGEBLOCK_ORDER)).max(1);
        for b in 0..blocks {
            let block_mt = self.pageblock_mt(cur + b * PAGEBLOCK_NR_PAGES);
            if block_mt != mt {
                return Err(format!("order-{order} free block at pfn {cur} is on the {mt:?} list in a {block_mt:?} pageblock"));
            }
        }
        for p in cur..cur + (1 << order) {
            if std::mem::replace(&mut free[p as usize], true) {
                return Err(format!("pfn {p} is in two free blocks"));
            }
            if self.is_movable_ops(p) {
                return Err(format!("free pfn {p} is marked as having movable_ops"));
            }
        }
        Ok(())
    }

    /// No pageblock skip bit past the zone.
    fn check_pageblock_skip(&self) -> Result<(), String> {
        let nr_blocks = self.pageblock_mt.len();
        for (w, &word) in self.pageblock_skip.iter().enumerate() {
            let valid = (nr_blocks - (w * 64).min(nr_blocks)).min(64);
            let valid_mask = if valid == 64 {
                u64::MAX
            } else {
                (1u64 << valid) - 1
            };
            if word & !valid_mask != 0 {
                return Err(format!(
                    "pageblock skip bits set past the zone's {nr_blocks} pageblocks"
                ));
            }
        }
        Ok(())
    }

    /// The per-type pageblock counters match the pageblock types.
    fn check_pageblock_types(&self) -> Result<(), String> {
        let mut by_type = [0u32; MIGRATE_TYPES];
        for &mt in &self.pageblock_mt {
            by_type[mt as usize] += 1;
        }
        if by_type != self.nr_pageblocks {
            return Err(format!(
                "pageblock types count {by_type:?} but the counters say {:?}",
                self.nr_pageblocks
            ));
        }
        Ok(())
    }
}

/// struct capture_control of a direct compactor: the order and type it compacts for, and the
/// block captured for it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Capture {
    pub order: u32,
    pub migratetype: MigrateType,
    pub page: Option<u32>,
}

impl Capture {
    /// compaction_capture: take a block of `order` being freed (while merging) if it is
    /// exactly the order wanted, not an isolated block, and not a small movable block wanted
    /// by a non-movable request (it would pollute a movable pageblock).
    fn take(&mut self, pfn: u32, order: u32, mt: MigrateType) -> bool {
        if self.page.is_some() || order != self.order || mt == MigrateType::Isolate {
            return false;
        }
        if order < PAGEBLOCK_ORDER
            && mt == MigrateType::Movable
            && self.migratetype != MigrateType::Movable
        {
            return false;
        }
        self.page = Some(pfn);
        true
    }
}

impl FreeArea {
    /// Simulator bytes per page frame of the per-pfn arrays and (spread over their pages) the
    /// per-pageblock ones, from their element types (crate::footprint).
    pub fn bytes_per_pfn() -> f64 {
        fn elem_bytes<T>(_: &[T]) -> usize {
            std::mem::size_of::<T>()
        }
        let a = FreeArea::new(0);
        // The links as if every free block were a base page (at most).
        (size_of::<[u32; 2]>() + elem_bytes(&a.buddy_order)) as f64
            + elem_bytes(&a.movable_ops) as f64 / 64.0
            + (elem_bytes(&a.pageblock_mt) as f64 + elem_bytes(&a.pageblock_skip) as f64 / 64.0)
                / PAGEBLOCK_NR_PAGES as f64
    }
}
