//! Swap devices: swap_map reference counts, the swap cache's slot -> folio map, device selection
//! and the slot (de)allocation entry points (mm/swapfile.c, mm/swap_state.c). Which slots a
//! request gets is the allocator policy's business (mm/swap_alloc/).

use super::folio::{SwapEntry, NIL};
use super::swap_alloc::SwapAllocator;
use super::swap_devstore::RamStore;
use super::workingset::{slot_folio, slot_shadow, Shadow};
use crate::cpu_cost::CpuCost;
use crate::engine::cost::CostModel;
use crate::engine::lock::SimLock;
use crate::engine::Ctx;
use crate::hw::blockdev::BlockDevice;
use crate::scenario::PMD_ORDER;

/// SWAPFILE_CLUSTER: slots per cluster, = pages per PMD.
pub const SWAPFILE_CLUSTER: u32 = 1 << PMD_ORDER;
pub const MAX_SWAPFILES: usize = 16;
/// SWAP_BATCH: entries one get_swap_pages() call hands the slot cache.
pub const SWAP_BATCH: usize = 64;
/// SWAP_SLOTS_CACHE_SIZE: entries the per-CPU return buffer gathers before releasing them.
pub const SWAP_SLOTS_CACHE_SIZE: usize = SWAP_BATCH;
/// swap_map: a folio for this slot is in (or entering) the swap cache.
pub const SWAP_HAS_CACHE: u8 = 0x40;
pub const SWAP_MAP_BAD: u8 = 0x3f;
pub const SWAP_MAP_MAX: u8 = 0x3e;

/// Split slots [offset, offset + nr) at cluster boundaries: (cluster, slots in it).
pub fn cluster_pieces(offset: u32, nr: u32) -> impl Iterator<Item = (u32, u32)> {
    let end = offset + nr;
    let mut slot = offset;
    std::iter::from_fn(move || {
        if slot >= end {
            return None;
        }
        let c = slot / SWAPFILE_CLUSTER;
        let piece = ((c + 1) * SWAPFILE_CLUSTER).min(end) - slot;
        slot += piece;
        Some((c, piece))
    })
}

/// Where a slot's data is (one byte per slot): every slot a PTE still references and no
/// swap-cache folio holds is in exactly one of these places.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[repr(u8)]
pub enum SlotData {
    None,
    /// Written to the swap device (for zram and brd: in their memory).
    Device,
    /// An entry in zswap.
    Zswap,
    /// The swap zero map (6.12+): an all-zero page, no data kept.
    Zero,
}

#[inline]
pub fn swap_count(byte: u8) -> u8 {
    byte & !SWAP_HAS_CACHE
}

/// What every allocator policy shares about one device: the map and its locks.
pub struct SwapMap {
    pub id: usize,
    /// Slots including the header (slot 0) and the unusable tail of the last cluster.
    pub max: u32,
    /// Usable slots.
    pub pages: u32,
    pub inuse_pages: u32,
    pub swap_map: Vec<u8>,
    /// Swap cache: slot -> head pfn of the folio, NIL when none, or the shadow entry of a
    /// folio reclaim evicted from it (the xarray of swap_state.c; mm/workingset.rs).
    pub swap_cache: Vec<u32>,
    /// Where each slot's data is.
    pub data: Vec<SlotData>,
    /// Non-rotational (SWP_SOLIDSTATE).
    pub solidstate: bool,
    /// SWP_SYNCHRONOUS_IO (brd, zram).
    pub synchronous_io: bool,
    /// SWP_BLKDEV: a block device. A swap file on a filesystem has no large entries.
    pub blkdev: bool,
    /// SWP_PAGE_DISCARD (`swapon --discard`): freed clusters are discarded before reuse.
    pub discard: bool,
    /// Clusters the allocator queued for discard since the device last heard of it.
    pub discarded_clusters: Vec<u32>,
    /// The block device wants swap_slot_free_notify for each freed slot (zram).
    pub slot_free_notify: bool,
    /// si->lock
    pub lock: SimLock,
}

impl SwapMap {
    /// The folio the swap cache holds at slot `offset` (not a shadow).
    #[inline]
    pub fn cached_folio(&self, offset: u32) -> Option<u32> {
        slot_folio(self.swap_cache[offset as usize])
    }

    pub fn new(
        id: usize,
        size_pages: u64,
        solidstate: bool,
        synchronous_io: bool,
        discard: bool,
    ) -> SwapMap {
        let clusters = size_pages.div_ceil(SWAPFILE_CLUSTER as u64) as u32;
        let max = size_pages as u32;
        let total = clusters * SWAPFILE_CLUSTER;
        let mut swap_map = vec![0u8; total as usize];
        // Slot 0 holds the swap header; the tail past `max` does not exist.
        swap_map[0] = SWAP_MAP_BAD;
        for b in &mut swap_map[max as usize..] {
            *b = SWAP_MAP_BAD;
        }
        SwapMap {
            id,
            max,
            pages: max - 1,
            inuse_pages: 0,
            swap_map,
            swap_cache: vec![NIL; total as usize],
            data: vec![SlotData::None; total as usize],
            solidstate,
            synchronous_io,
            blkdev: true,
            discard,
            discarded_clusters: Vec::new(),
            slot_free_notify: false,
            lock: SimLock::new("si->lock", crate::cpu_cost::SI_LOCK),
        }
    }

    pub fn nr_slots(&self) -> u32 {
        self.swap_map.len() as u32
    }

    pub fn nr_clusters(&self) -> u32 {
        self.nr_slots() / SWAPFILE_CLUSTER
    }

    /// Non-zero swap_map bytes per cluster: what every policy's cluster count must equal.
    pub fn cluster_usage(&self) -> Vec<u16> {
        self.swap_map
            .chunks(SWAPFILE_CLUSTER as usize)
            .map(|chunk| chunk.iter().filter(|&&b| b != 0).count() as u16)
            .collect()
    }

    /// Check a policy's per-cluster counts against swap_map.
    pub fn check_cluster_counts(&self, counts: &[u16]) -> Result<(), String> {
        for (c, (&used, &count)) in self.cluster_usage().iter().zip(counts).enumerate() {
            if used != count {
                return Err(format!(
                    "cluster {c}: count {count} but {used} slots in use"
                ));
            }
        }
        Ok(())
    }

    pub fn free_pages(&self) -> u32 {
        self.pages - self.inuse_pages
    }

    /// Are all `nr` slots from `offset` free (swap_map 0)?
    #[inline]
    pub fn range_free(&self, offset: u32, nr: u32) -> bool {
        self.swap_map[offset as usize..(offset + nr) as usize]
            .iter()
            .all(|&b| b == 0)
    }

    /// The per-slot release work of `nr` slots that the policy's free path does under its lock:
    /// swap_entry_range_free / swap_entries_free (clear the bytes, memcg swap uncharge) and
    /// swap_range_free (zswap invalidate, shadows, accounting, the device's slot-free notify).
    pub fn swap_range_free_ns(&self, cost: &CostModel, nr: u32) -> u64 {
        let notify_ns = if self.slot_free_notify {
            cost.zram_slot_free_notify_ns
        } else {
            0
        };
        (cost.swap_entry_free_ns + notify_ns) * nr as u64
    }

    /// Mark a range allocated: HAS_CACHE with no count (the folio is about to enter the cache).
    pub fn take_range(&mut self, offset: u32, nr: u32) {
        for b in &mut self.swap_map[offset as usize..(offset + nr) as usize] {
            assert_eq!(*b, 0, "swap slot {offset}+ allocated while in use");
            *b = SWAP_HAS_CACHE;
        }
        self.inuse_pages += nr;
    }
}

/// One swap device: the shared map, its allocator policy, and the block device behind it.
pub struct SwapInfo {
    pub prio: i32,
    pub map: SwapMap,
    pub allocator: Box<dyn SwapAllocator>,
    pub bdev: BlockDevice,
    /// What the device keeps in machine memory (zram, brd).
    pub store: RamStore,
}

/// All swap devices plus the per-CPU slot cache (mm/swap_slots.c, up to 6.13).
pub struct Swap {
    /// Sorted by priority, highest first (the swap_avail list order).
    pub devices: Vec<SwapInfo>,
    /// Per CPU: allocated order-0 entries not yet handed to a folio.
    pub slot_cache: Vec<Vec<SwapEntry>>,
    /// Per CPU: slots whose last reference went one at a time, waiting to be released together
    /// (slots_ret). Each keeps HAS_CACHE until then, as __swap_entry_free_locked leaves it.
    pub slots_ret: Vec<Vec<SwapEntry>>,
    pub slot_cache_active: bool,
    pub ncpus: usize,
    /// Ranges released since the kernel last freed their data (zswap entries, zram objects):
    /// swap_range_free's zswap_invalidate and slot-free notify, applied by
    /// Kernel::free_released_slots before the next allocation and at the end of each step.
    pub released: Vec<(SwapEntry, u32)>,
}

impl Swap {
    pub fn nr_swap_pages(&self) -> u64 {
        self.devices.iter().map(|d| d.map.free_pages() as u64).sum()
    }

    /// Would a folio of `order` be swapped out whole by the first device's allocator? (A device
    /// whose policy never stores this order makes reclaim split the folio up front.)
    pub fn swapout_whole(&self, order: u32) -> bool {
        self.devices
            .first()
            .is_some_and(|d| d.allocator.swapout_whole(order))
    }

    /// folio_alloc_swap / get_swap_pages: slots for a folio of `order`. Order 0 goes through the
    /// per-CPU slot cache where the policy has one; a large order tries only the first device.
    pub fn alloc(&mut self, ctx: &mut Ctx, cost: &CostModel, order: u32) -> Option<SwapEntry> {
        if order == 0
            && self
                .devices
                .first()
                .is_some_and(|d| d.allocator.uses_slot_cache())
        {
            self.update_slot_cache_active(ctx, cost);
            if self.slot_cache_active {
                if self.slot_cache[ctx.cpu].is_empty() {
                    let mut batch = Vec::with_capacity(SWAP_BATCH);
                    self.get_swap_pages(ctx, cost, 0, SWAP_BATCH, &mut batch);
                    batch.reverse();
                    self.slot_cache[ctx.cpu] = batch;
                }
                if let Some(e) = self.slot_cache[ctx.cpu].pop() {
                    return Some(e);
                }
            }
        }
        let mut out = Vec::with_capacity(1);
        self.get_swap_pages(ctx, cost, order, 1, &mut out);
        out.pop()
    }

    /// Allocate up to `n` ranges of 2^order slots, walking devices by priority.
    fn get_swap_pages(
        &mut self,
        ctx: &mut Ctx,
        cost: &CostModel,
        order: u32,
        n: usize,
        out: &mut Vec<SwapEntry>,
    ) {
        for dev in self.devices.iter_mut() {
            // scan_swap_map_slots / cluster_alloc_swap_entry: a swap file cannot take a large
            // folio whole; the caller splits it and counts the fallback.
            if order > 0 && !dev.map.blkdev {
                return;
            }
            if dev.map.free_pages() >= 1 << order {
                dev.allocator
                    .alloc(&mut dev.map, ctx, cost, order, n - out.len(), out);
                dev.flush_discards();
            }
            if out.len() == n || order > 0 {
                return;
            }
        }
    }

    /// The slot cache works only while free swap is plentiful (swap_slots.c thresholds);
    /// deactivating it drains both halves (__drain_swap_slots_cache).
    fn update_slot_cache_active(&mut self, ctx: &mut Ctx, cost: &CostModel) {
        let free = self.nr_swap_pages();
        let per_cpus = (SWAP_BATCH * self.ncpus) as u64;
        if self.slot_cache_active && free < 2 * per_cpus {
            self.slot_cache_active = false;
            for cpu in 0..self.ncpus {
                let cached = std::mem::take(&mut self.slot_cache[cpu]);
                self.swapcache_free_entries(ctx, cost, cached);
                let returned = std::mem::take(&mut self.slots_ret[cpu]);
                self.swapcache_free_entries(ctx, cost, returned);
            }
        } else if !self.slot_cache_active && free > 5 * per_cpus {
            self.slot_cache_active = true;
        }
    }

    /// Do single-slot frees go through the per-CPU return buffer (use_swap_slot_cache)?
    fn slots_ret_active(&self) -> bool {
        self.slot_cache_active
            && self
                .devices
                .first()
                .is_some_and(|d| d.allocator.uses_slot_cache())
    }

    /// free_swap_slot: a slot whose last reference went joins this CPU's return buffer; a full
    /// buffer is released first, in one batch.
    fn free_swap_slot(&mut self, ctx: &mut Ctx, cost: &CostModel, entry: SwapEntry) {
        if self.slots_ret[ctx.cpu].len() >= SWAP_SLOTS_CACHE_SIZE {
            let batch = std::mem::replace(
                &mut self.slots_ret[ctx.cpu],
                Vec::with_capacity(SWAP_SLOTS_CACHE_SIZE),
            );
            self.swapcache_free_entries(ctx, cost, batch);
        }
        self.slots_ret[ctx.cpu].push(entry);
    }

    /// swapcache_free_entries: release HAS_CACHE-only slots, grouped by device (each device's
    /// lock taken once for its group; the policy says which lock and for how long).
    fn swapcache_free_entries(
        &mut self,
        ctx: &mut Ctx,
        cost: &CostModel,
        mut entries: Vec<SwapEntry>,
    ) {
        entries.sort_by_key(|e| e.dev());
        for group in entries.chunk_by(|a, b| a.dev() == b.dev()) {
            let dev = &mut self.devices[group[0].dev()];
            let offsets: Vec<u32> = group.iter().map(|e| e.offset()).collect();
            for &slot in &offsets {
                let b = &mut dev.map.swap_map[slot as usize];
                assert_eq!(
                    *b, SWAP_HAS_CACHE,
                    "slot {slot} released from the slot cache"
                );
                *b = 0;
                // swap_range_free: clear_shadow_from_swap_cache.
                dev.map.swap_cache[slot as usize] = NIL;
            }
            dev.map.inuse_pages -= offsets.len() as u32;
            self.released.extend(group.iter().map(|&e| (e, 1)));
            dev.allocator
                .on_free_slots(&mut dev.map, ctx, cost, &offsets);
            dev.flush_discards();
        }
    }

    /// add_to_swap_cache: the folio at `pfn` now owns slots [entry, entry + nr).
    pub fn add_to_swap_cache(
        &mut self,
        ctx: &mut Ctx,
        cost: &CostModel,
        entry: SwapEntry,
        nr: u32,
        pfn: u32,
    ) {
        let map = &mut self.devices[entry.dev()].map;
        for slot in entry.offset()..entry.offset() + nr {
            debug_assert_eq!(map.swap_map[slot as usize], SWAP_HAS_CACHE);
            debug_assert_eq!(
                map.swap_cache[slot as usize], NIL,
                "a fresh slot holds nothing"
            );
            map.swap_cache[slot as usize] = pfn;
        }
        ctx.spend(CpuCost::SwapMapUpdate, cost.swap_map_update_ns * nr as u64);
    }

    /// swapcache_prepare + the swap cache insert of a swap-in: slot `entry`, which PTEs refer
    /// to, gains SWAP_HAS_CACHE and the folio at `pfn`, in place of the shadow it returns.
    pub fn swapcache_prepare(
        &mut self,
        ctx: &mut Ctx,
        cost: &CostModel,
        entry: SwapEntry,
        pfn: u32,
    ) -> Option<Shadow> {
        let map = &mut self.devices[entry.dev()].map;
        let b = &mut map.swap_map[entry.offset() as usize];
        debug_assert!(
            swap_count(*b) > 0 && *b & SWAP_HAS_CACHE == 0,
            "swapcache_prepare on slot {entry:?} with map {b:#x}"
        );
        *b |= SWAP_HAS_CACHE;
        let old = std::mem::replace(&mut map.swap_cache[entry.offset() as usize], pfn);
        ctx.spend(CpuCost::SwapMapUpdate, cost.swap_map_update_ns);
        slot_shadow(old)
    }

    /// __folio_migrate_mapping for a folio in the swap cache: its slots [entry, entry + nr),
    /// cached and possibly still referenced by swap PTEs (a count besides SWAP_HAS_CACHE),
    /// now point at the new folio at `pfn`.
    pub fn replace_swap_cache(
        &mut self,
        ctx: &mut Ctx,
        cost: &CostModel,
        entry: SwapEntry,
        nr: u32,
        pfn: u32,
    ) {
        let map = &mut self.devices[entry.dev()].map;
        for slot in entry.offset()..entry.offset() + nr {
            debug_assert!(map.swap_map[slot as usize] & SWAP_HAS_CACHE != 0);
            debug_assert!(slot_folio(map.swap_cache[slot as usize]).is_some());
            map.swap_cache[slot as usize] = pfn;
        }
        ctx.spend(CpuCost::SwapMapUpdate, cost.swap_map_update_ns * nr as u64);
    }

    /// The swap cache's slot `entry` now holds the page at `pfn` (a split folio's page).
    pub fn set_swap_cache_page(&mut self, entry: SwapEntry, pfn: u32) {
        let map = &mut self.devices[entry.dev()].map;
        debug_assert!(slot_folio(map.swap_cache[entry.offset() as usize]).is_some());
        map.swap_cache[entry.offset() as usize] = pfn;
    }

    /// Swap cache lookup (filemap_get_folio on the swap address space).
    pub fn lookup(&self, entry: SwapEntry) -> Option<u32> {
        self.devices[entry.dev()].map.cached_folio(entry.offset())
    }

    /// The shadow entry slot `entry` holds (get_shadow_from_swap_cache).
    pub fn shadow(&self, entry: SwapEntry) -> Option<Shadow> {
        slot_shadow(self.devices[entry.dev()].map.swap_cache[entry.offset() as usize])
    }

    /// swap_duplicate: a PTE now refers to this slot.
    pub fn swap_duplicate(&mut self, entry: SwapEntry) {
        let b = &mut self.devices[entry.dev()].map.swap_map[entry.offset() as usize];
        assert!(
            *b != 0 && swap_count(*b) < SWAP_MAP_MAX,
            "swap_duplicate on slot {:?} with map {b:#x}",
            entry
        );
        *b += 1;
    }

    /// delete_from_swap_cache + put_swap_folio: the folio leaves the cache, leaving `shadow`
    /// (reclaim's eviction) or nothing in its slots; slots with no PTE reference left are
    /// freed (all together when the whole range is cache-only), and lose the shadow.
    pub fn delete_from_swap_cache(
        &mut self,
        ctx: &mut Ctx,
        cost: &CostModel,
        entry: SwapEntry,
        nr: u32,
        shadow: Option<Shadow>,
    ) {
        let map = &mut self.devices[entry.dev()].map;
        let left = shadow.map_or(NIL, Shadow::raw);
        map.swap_cache[entry.offset() as usize..(entry.offset() + nr) as usize].fill(left);
        ctx.spend(CpuCost::SwapMapUpdate, cost.swap_map_update_ns * nr as u64);
        self.clear_cache_flag(ctx, cost, entry, nr);
    }

    /// Clear HAS_CACHE over a range (put_swap_folio): a large range that is all cache-only is
    /// released whole; otherwise slot by slot, those reaching 0 through free_swap_slot.
    fn clear_cache_flag(&mut self, ctx: &mut Ctx, cost: &CostModel, entry: SwapEntry, nr: u32) {
        let map = &self.devices[entry.dev()].map;
        let whole = nr > 1
            && map.swap_map[entry.offset() as usize..(entry.offset() + nr) as usize]
                .iter()
                .all(|&b| b == SWAP_HAS_CACHE);
        self.drop_slots(ctx, cost, entry, nr, whole, |slot, b, _| {
            assert!(
                *b & SWAP_HAS_CACHE != 0,
                "slot {slot} of dev {} leaves the swap cache without HAS_CACHE",
                entry.dev()
            );
            *b &= !SWAP_HAS_CACHE;
        });
    }

    /// Drop one PTE reference from each of `nr` slots (swap_free_nr / the first half of
    /// free_swap_and_cache_nr). Returns the pfns of swap-cache folios left with no reference
    /// (cache-only), for the caller to try to reclaim.
    /// A range of one cluster whose slots all hold exactly one reference and no cache is
    /// released whole (the __swap_entries_free fast path); otherwise slot by slot, those
    /// reaching 0 through free_swap_slot.
    pub fn put_refs(
        &mut self,
        ctx: &mut Ctx,
        cost: &CostModel,
        entry: SwapEntry,
        nr: u32,
    ) -> Vec<u32> {
        let map = &self.devices[entry.dev()].map;
        let whole = nr > 1
            && entry.offset() / SWAPFILE_CLUSTER == (entry.offset() + nr - 1) / SWAPFILE_CLUSTER
            && map.swap_map[entry.offset() as usize..(entry.offset() + nr) as usize]
                .iter()
                .all(|&b| b == 1);
        let mut cache_only = Vec::new();
        ctx.spend(CpuCost::SwapMapUpdate, cost.swap_map_update_ns * nr as u64);
        self.drop_slots(ctx, cost, entry, nr, whole, |slot, b, cached| {
            assert!(
                swap_count(*b) > 0,
                "swap_free on slot {slot} of dev {} with count 0",
                entry.dev()
            );
            *b -= 1;
            if *b == SWAP_HAS_CACHE && cached != NIL && cache_only.last() != Some(&cached) {
                cache_only.push(cached);
            }
        });
        cache_only
    }

    /// Max swap PTEs zap hands to one free_swap_and_cache_nr() call under this policy.
    pub fn zap_batch(&self) -> u32 {
        self.devices.first().map_or(1, |d| d.allocator.zap_batch())
    }
}

impl Swap {
    /// Apply `drop_ref(slot, swap_map byte, swap-cache pfn)` to each slot of [entry, entry + nr).
    /// The slots it leaves at 0 are released in runs of contiguous slots when `whole` (one
    /// range release) or when no return buffer is active; otherwise each goes through
    /// free_swap_slot.
    fn drop_slots(
        &mut self,
        ctx: &mut Ctx,
        cost: &CostModel,
        entry: SwapEntry,
        nr: u32,
        whole: bool,
        mut drop_ref: impl FnMut(u32, &mut u8, u32),
    ) {
        let buffered = !whole && self.slots_ret_active();
        let end = entry.offset() + nr;
        let mut run_start = None;
        for slot in entry.offset()..=end {
            let dev = &mut self.devices[entry.dev()];
            let freed = slot < end && {
                let cached = dev.map.cached_folio(slot).unwrap_or(NIL);
                let b = &mut dev.map.swap_map[slot as usize];
                drop_ref(slot, b, cached);
                *b == 0
            };
            if freed && buffered {
                dev.map.swap_map[slot as usize] = SWAP_HAS_CACHE;
                self.free_swap_slot(ctx, cost, SwapEntry::new(entry.dev(), slot));
                continue;
            }
            match (freed, run_start) {
                (true, None) => run_start = Some(slot),
                (false, Some(start)) => {
                    release_range(dev, ctx, cost, start, slot - start);
                    self.released
                        .push((SwapEntry::new(entry.dev(), start), slot - start));
                    run_start = None;
                }
                _ => {}
            }
        }
    }
}

/// swap_range_free: slots [offset, offset + nr) are free again.
fn release_range(dev: &mut SwapInfo, ctx: &mut Ctx, cost: &CostModel, offset: u32, nr: u32) {
    // swap_range_free: clear_shadow_from_swap_cache (no folio is cached on a free slot).
    dev.map.swap_cache[offset as usize..(offset + nr) as usize].fill(NIL);
    dev.map.inuse_pages -= nr;
    dev.allocator.on_free(&mut dev.map, ctx, cost, offset, nr);
    dev.flush_discards();
}

impl SwapInfo {
    /// Tell the device which clusters were discarded (TRIM: the FTL may drop their data).
    fn flush_discards(&mut self) {
        for c in self.map.discarded_clusters.drain(..) {
            self.bdev
                .discard(c as u64 * SWAPFILE_CLUSTER as u64, SWAPFILE_CLUSTER as u64);
        }
    }
}
