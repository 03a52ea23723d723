//! Swap-in through the swap cache, with readahead (mm/swap_state.c, 6.18: swapin_readahead,
//! swap_vma_readahead, __read_swap_cache_async, swap_cache_get_folio; mm/memory.c's
//! should_try_to_free_swap), for devices without SWP_SYNCHRONOUS_IO (an SSD, a disk, a swap
//! file): zram and brd bypass the swap cache (mm/memory.rs do_swap_page).
//!
//! The faulting page is read into a swap-cache folio and, around it, the other swapped-out
//! pages of its VMA within a window (swap_vma_ra_win): at most 2^page-cluster pages (8 by
//! default, 32 at most), inside the VMA and the faulting page's 2 MiB block, placed after the
//! fault when the VMA's faults go up one page at a time, before it when they go down, else
//! centred. Its size follows __swapin_nr_pages: with no readahead hit since the last fault,
//! one page unless this fault is next to the last one (then 2); with `hits`, hits + 2 rounded
//! up to a power of two (at least 4); never below half the last window. Readahead pages are
//! marked PG_readahead and counted as swap_ra; a fault that finds one counts swap_ra_hit and
//! widens the VMA's next window. The reads of adjacent slots go in one request (the block
//! plug merges them); the fault waits (iowait) for its own page only.
//!
//! After mapping, the faulting page's slot is kept, with the folio clean in the swap cache, so
//! reclaim can drop it again without writing (a page that came from zswap is dirty: zswap
//! gave its copy up), unless the fault was a write or swap is more than half full
//! (should_try_to_free_swap: vm_swap_full); then folio_free_swap frees the slot and dirties
//! the folio.
//!
//! Not modelled: cluster readahead (swap_cluster_readahead: the 2^page-cluster aligned slots
//! around the faulting one), which the kernel uses instead while a rotational swap device is
//! on or `vma_ra_enabled` is 0; the model uses VMA readahead for every device (a slot does not
//! record which page it holds). A large folio found in the swap cache is mapped whole from
//! 6.10 on (mm/memory.rs map_swapcache_folio), one page per fault before.

use super::folio::{flags, SwapEntry, NIL};
use super::memcontrol::{try_charge, uncharge};
use super::memory::VmFault;
use super::mmap::MmStruct;
use super::page_alloc::alloc_pages;
use super::page_io::swap_read_batch;
use super::swap_state::{
    folio_add_to_swap_cache_read, folio_delete_from_swap_cache, folio_swapped,
};
use super::swapfile::{swap_count, Swap};
use super::vmstat::VmEvent;
use super::{Kernel, KernelConfig};
use crate::engine::Ctx;
use crate::mm::gfp::Gfp;
use crate::scenario::PMD_ORDER;

/// vm.page-cluster at boot: readahead windows of up to 2^3 pages.
pub const DEFAULT_PAGE_CLUSTER: u32 = 3;
/// SWAP_RA_ORDER_CEILING (64-bit): VMA readahead windows of at most 2^5 pages.
const SWAP_RA_ORDER_CEILING: u32 = 5;
/// SWAP_RA_HITS_MAX: the hit count fits in the low bits of swap_readahead_info.
const SWAP_RA_HITS_MAX: u32 = 63;

/// vma->swap_readahead_info: the last swap fault's page, its window, and the readahead hits
/// since.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct SwapRaInfo {
    /// Page index of the last swap fault (NIL: none yet).
    pub prev_index: u32,
    pub win: u32,
    pub hits: u32,
}

impl Default for SwapRaInfo {
    fn default() -> Self {
        SwapRaInfo {
            prev_index: NIL,
            win: 0,
            hits: 0,
        }
    }
}

/// __swapin_nr_pages: the readahead window after `hits` hits.
pub fn swapin_nr_pages(prev: u32, offset: u32, hits: u32, max_pages: u32, prev_win: u32) -> u32 {
    let mut pages = hits + 2;
    if pages == 2 {
        // No hits to judge by: read ahead only for a fault next to the last one.
        let adjacent = prev != NIL && (offset == prev.wrapping_add(1) || prev == offset + 1);
        if !adjacent {
            pages = 1;
        }
    } else {
        pages = pages.next_power_of_two().max(4);
    }
    // Don't shrink readahead too fast.
    pages.min(max_pages).max(prev_win / 2)
}

/// swap_vma_ra_win: the pages [start, end) of `vma` to read for a fault at `index`, and the
/// window is remembered (hits reset).
fn swap_vma_ra_win(cfg: &KernelConfig, m: &mut MmStruct, vma: u32, index: u32) -> (u32, u32) {
    let max_win = 1 << cfg.page_cluster.min(SWAP_RA_ORDER_CEILING);
    if max_win == 1 {
        return (index, index + 1);
    }
    let v = m.vma_mut(vma);
    let ra = v.swap_ra;
    let win = swapin_nr_pages(ra.prev_index, index, ra.hits, max_win, ra.win);
    v.swap_ra = SwapRaInfo {
        prev_index: index,
        win,
        hits: 0,
    };
    if win == 1 {
        return (index, index + 1);
    }
    let left = if ra.prev_index != NIL && index == ra.prev_index + 1 {
        index as i64
    } else if ra.prev_index != NIL && ra.prev_index == index + 1 {
        index as i64 - win as i64 + 1
    } else {
        index as i64 - ((win as i64 - 1) / 2)
    };
    let right = left + win as i64;
    let block = (index & !((1 << PMD_ORDER) - 1)) as i64;
    let start = left.max(0).max(block) as u32;
    let end = right.min(v.nr_pages as i64).min(block + (1 << PMD_ORDER)) as u32;
    (start, end)
}

/// swap_vma_readahead for the swap PTE at `index` of `vma`, whose folio `target` the caller
/// allocated and charged: every other swapped-out page of the window not in the swap cache
/// gets a folio too (allocated, charged; skipped when that fails), all enter the swap cache
/// and their reads are submitted; returns when the target's data is in.
///
/// False: an allocation or charge OOM-killed the process the fault is for (khugepaged swaps
/// in for another process) and its exit unmapped the VMA; the folios this call had added to
/// the swap cache went with the zap of their PTEs, the target too (freed here if not yet
/// added). The kernel's oom_reaper zaps those PTEs and do_swap_page finds !pte_same.
pub fn swap_vma_readahead(
    k: &mut Kernel,
    ctx: &mut Ctx,
    vmf: &VmFault,
    entry: SwapEntry,
    target: u32,
    memcg: u16,
) -> bool {
    let (mm, vma, index) = (vmf.mm, vmf.vma, vmf.index);
    let (start, end) = swap_vma_ra_win(&k.cfg, &mut k.mms[mm as usize], vma, index);
    // Readahead allocations reclaim like the fault's, but never stop it (mm/preempt.rs).
    let may_stop = std::mem::replace(&mut k.current.may_stop, false);
    let mut reads: Vec<(SwapEntry, u32)> = Vec::with_capacity((end - start) as usize);
    let mut target_added = false;
    for i in start..end {
        if !k.mms[mm as usize].is_mapped(vma) {
            break;
        }
        let (e, pfn) = if i == index {
            (entry, target)
        } else {
            let pte = k.mms[mm as usize].vma(vma).ptes[i as usize];
            if !pte.is_swap() {
                continue;
            }
            let e = pte.swap_entry();
            // __read_swap_cache_async: cached already, or a slot no longer in use.
            let byte = k.swap.devices[e.dev()].map.swap_map[e.offset() as usize];
            if k.swap.lookup(e).is_some() || swap_count(byte) == 0 {
                continue;
            }
            let Some(pfn) = alloc_pages(k, ctx, Gfp::GFP_HIGHUSER_MOVABLE, 0) else {
                continue;
            };
            if !try_charge(k, ctx, memcg, 1, Gfp::KERNEL) {
                // The page may be on a lower node: free it to its own node's zone.
                k.free_pages(ctx, pfn, 0);
                continue;
            }
            if !k.mms[mm as usize].is_mapped(vma) {
                uncharge(k, ctx, memcg, 1);
                k.free_pages(ctx, pfn, 0);
                break;
            }
            (e, pfn)
        };
        target_added |= i == index;
        k.folios.init(pfn, 0, memcg, (mm, vma, i));
        // Locked until its read completes: reclaim and migration leave it alone.
        k.folios.set(pfn, flags::LOCKED);
        k.folios.set_writeback_done_ns(pfn, u64::MAX);
        if let Some(shadow) = folio_add_to_swap_cache_read(k, ctx, pfn, e) {
            super::workingset::workingset_refault(k, pfn, shadow);
        }
        k.folio_add_lru(ctx, pfn);
        if i != index {
            k.folios.set(pfn, flags::READAHEAD);
            k.vmstat.count(VmEvent::SwapRa, 1);
        }
        reads.push((e, pfn));
    }
    k.current.may_stop = may_stop;
    let alive = k.mms[mm as usize].is_mapped(vma);
    if !alive {
        // The exit's zap freed the cache-only folios (free_swap_and_cache_nr).
        reads.retain(|&(e, pfn)| k.swap.lookup(e) == Some(pfn));
        if !target_added {
            uncharge(k, ctx, memcg, 1);
            k.free_pages(ctx, target, 0);
        }
    }
    swap_read_batch(k, ctx, &mut reads, memcg);
    if alive {
        super::filemap::folio_wait_locked(k, ctx, target);
    }
    alive
}

/// swap_cache_get_folio's readahead bookkeeping for a fault at `index` that found `head` in
/// the swap cache: a PG_readahead folio is a hit (swap_ra_hit) that widens the VMA's next
/// window; the fault becomes the VMA's last.
pub fn swap_update_readahead(k: &mut Kernel, mm: u32, vma: u32, index: u32, head: u32) {
    if k.folios.order[head as usize] > 0 {
        return;
    }
    let hit = k.folios.test(head, flags::READAHEAD);
    k.folios.clear(head, flags::READAHEAD);
    let ra = &mut k.mms[mm as usize].vma_mut(vma).swap_ra;
    ra.prev_index = index;
    if hit {
        ra.hits = (ra.hits + 1).min(SWAP_RA_HITS_MAX);
        k.vmstat.count(VmEvent::SwapRaHit, 1);
    }
}

/// vm_swap_full: less than half of the swap space is free.
pub fn vm_swap_full(swap: &Swap) -> bool {
    let total: u64 = swap.devices.iter().map(|d| d.map.pages as u64).sum();
    swap.nr_swap_pages() * 2 < total
}

/// should_try_to_free_swap then folio_free_swap after a swap fault mapped `head`: a write
/// fault, or swap more than half full (mem_cgroup_swap_full: the machine's, or half the
/// memcg's memory.swap.max used), takes the folio out of the swap cache and frees its
/// slots, unless it is under writeback or another PTE still refers to a slot
/// (folio_swapped); the folio is dirty then (the only copy). A large folio keeps its slots.
pub fn free_swap_after_fault(k: &mut Kernel, ctx: &mut Ctx, head: u32, write: bool) {
    let f = &mut k.folios;
    if !f.test(head, flags::SWAPCACHE) || f.scattered.contains_key(&head) {
        return;
    }
    if f.test(head, flags::WRITEBACK) {
        if f.writeback_done_ns(head) > ctx.now_ns {
            return;
        }
        // The write completed (folio_end_writeback, observed late).
        f.clear(head, flags::WRITEBACK);
    }
    let memcg = k.folios.memcg(head as usize);
    if !(write
        || crate::mm::memcontrol::swap::mem_cgroup_swap_full(
            &k.memcgs,
            memcg,
            vm_swap_full(&k.swap),
        ))
    {
        return;
    }
    if folio_swapped(k, head) {
        return;
    }
    folio_delete_from_swap_cache(k, ctx, head, None);
    k.folios.set(head, flags::DIRTY);
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_window_grows_with_hits_and_shrinks_by_halves() {
        // No hit, not adjacent: no readahead; adjacent: 2.
        assert_eq!(swapin_nr_pages(NIL, 10, 0, 8, 0), 1);
        assert_eq!(swapin_nr_pages(100, 10, 0, 8, 0), 1);
        assert_eq!(swapin_nr_pages(9, 10, 0, 8, 0), 2);
        assert_eq!(swapin_nr_pages(11, 10, 0, 8, 0), 2);
        // Hits: hits + 2 rounded up to a power of two, at least 4, at most the max.
        assert_eq!(swapin_nr_pages(NIL, 10, 1, 8, 0), 4);
        assert_eq!(swapin_nr_pages(NIL, 10, 3, 8, 0), 8);
        assert_eq!(swapin_nr_pages(NIL, 10, 20, 8, 0), 8);
        assert_eq!(swapin_nr_pages(NIL, 10, 20, 32, 0), 32);
        // Never below half the last window.
        assert_eq!(swapin_nr_pages(NIL, 10, 0, 8, 8), 4);
        assert_eq!(swapin_nr_pages(NIL, 10, 0, 8, 4), 2);
    }
}
