//! A folio entering and leaving the swap cache (mm/swap_state.c): on one range of slots, or,
//! under the non-contiguous swap-out fallback, on slots scattered over the device.

use super::folio::{flags, SwapEntry};
use super::swapfile::swap_count;
use super::workingset::Shadow;
use super::Kernel;
use crate::engine::Ctx;

/// add_to_swap_cache: the folio at `pfn` owns `first`.. (contiguous) or `scattered` (page i on
/// slot i). The slots were allocated with SWAP_HAS_CACHE.
pub fn folio_add_to_swap_cache(
    k: &mut Kernel,
    ctx: &mut Ctx,
    pfn: u32,
    first: SwapEntry,
    scattered: Option<Box<[SwapEntry]>>,
) {
    if let Some(slots) = scattered {
        debug_assert_eq!(slots.len() as u32, k.folios.nr_pages(pfn));
        k.folios.scattered.insert(pfn, slots);
    }
    k.folios.set_swap(pfn as usize, first.raw());
    k.folios.set(pfn, flags::SWAPCACHE | flags::DIRTY);
    k.pagecache.nr_swapcache += k.folios.nr_pages(pfn) as u64;
    for (run, nr) in k.folios.swap_runs(pfn) {
        k.swap.add_to_swap_cache(ctx, &k.cost, run, nr, pfn);
    }
}

/// delete_from_swap_cache + put_swap_folio: the folio leaves the cache, run by run, leaving
/// `shadow` in its slots when reclaim evicted it (__remove_mapping).
pub fn folio_delete_from_swap_cache(
    k: &mut Kernel,
    ctx: &mut Ctx,
    pfn: u32,
    shadow: Option<Shadow>,
) {
    for (run, nr) in k.folios.swap_runs(pfn) {
        k.swap.delete_from_swap_cache(ctx, &k.cost, run, nr, shadow);
    }
    // Nearly always empty: no search then.
    if !k.folios.scattered.is_empty() {
        k.folios.scattered.remove(&pfn);
    }
    k.folios.clear(pfn, flags::SWAPCACHE);
    k.pagecache.nr_swapcache -= k.folios.nr_pages(pfn) as u64;
}

/// folio_swapped: does a PTE (of any mm) still refer to a slot of the swap-cache folio at
/// `pfn`? Then the folio is the only copy of those slots' data, or their data's way back.
pub fn folio_swapped(k: &Kernel, pfn: u32) -> bool {
    k.folios.swap_runs(pfn).any(|(first, nr)| {
        let map = &k.swap.devices[first.dev()].map.swap_map;
        map[first.offset() as usize..(first.offset() + nr) as usize]
            .iter()
            .any(|&b| swap_count(b) > 0)
    })
}

/// __read_swap_cache_async's swapcache_prepare + add_to_swap_cache: the new order-0 folio at
/// `pfn` is to be read from `entry` (a slot PTEs refer to), which gains SWAP_HAS_CACHE. The
/// folio is clean: the slot holds its data. Returns the shadow the slot held.
pub fn folio_add_to_swap_cache_read(
    k: &mut Kernel,
    ctx: &mut Ctx,
    pfn: u32,
    entry: SwapEntry,
) -> Option<Shadow> {
    k.folios.set_swap(pfn as usize, entry.raw());
    k.folios.set(pfn, flags::SWAPCACHE);
    k.pagecache.nr_swapcache += 1;
    k.swap.swapcache_prepare(ctx, &k.cost, entry, pfn)
}
