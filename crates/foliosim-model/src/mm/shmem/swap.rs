//! shmem and swap (mm/shmem.c): shmem_writeout moves a folio from its inode's page cache to the
//! swap cache for reclaim to write; shmem_swapin_folio brings a page back on read or write;
//! shmem_free_swap drops an entry when the file is truncated.
//!
//! The inode's slot holds one swap_map reference per page (swap_duplicate_nr in 6.18; before
//! 6.13 the byte was SWAP_MAP_SHMEM, which the model counts as the same single reference: it
//! differs only for fork's swap_duplicate, which never meets a shmem entry here).

use super::{account, is_shmem, Shmem, SHMEM_OWNER};
use crate::cpu_cost::CpuCost;
use crate::engine::Ctx;
use crate::mm::filemap::folio_wait_locked;
use crate::mm::folio::{flags, SwapEntry, NIL};
use crate::mm::gfp::Gfp;
use crate::mm::memcontrol::{swap as memcg_swap, try_charge};
use crate::mm::page_alloc::alloc_pages;
use crate::mm::swap_state::{
    folio_add_to_swap_cache, folio_add_to_swap_cache_read, folio_delete_from_swap_cache,
};
use crate::mm::vmstat::{MthpStat, VmEvent};
use crate::mm::{Kernel, MmError};
use crate::scenario::PMD_ORDER;
use std::collections::VecDeque;

/// shmem_writeout for a shmem folio reclaim isolated (`list`: where split tails go): split it
/// when it must be (no THP_SWAP, before 6.12, or straddling i_size), take swap slots (a large
/// folio that gets none is split and its head tries order 0), then replace the folio by its
/// swap entries in the inode and put it in the swap cache, dirty, for pageout to write.
/// False: no swap (redirty: reclaim activates it).
pub fn shmem_writeout(k: &mut Kernel, ctx: &mut Ctx, pfn: u32, list: &mut VecDeque<u32>) -> bool {
    if k.swap.devices.is_empty() {
        return false;
    }
    let order = k.folios.order[pfn as usize] as u32;
    if order > 0 && must_split(k, pfn, order) {
        split(k, ctx, pfn, list);
    }
    let memcg = k.folios.memcg(pfn as usize);
    let mut order = k.folios.order[pfn as usize] as u32;
    let mut entry = memcg_swap::alloc_charged(k, ctx, memcg, order);
    if entry.is_none() && order > 0 {
        // try_split. 6.18 counts no swpout_fallback here (that came after 6.18, with
        // "mm/shmem: add mTHP swpout fallback statistics in shmem_writeout()").
        split(k, ctx, pfn, list);
        order = 0;
        entry = memcg_swap::alloc_charged(k, ctx, memcg, 0);
    }
    let Some(entry) = entry else { return false };
    folio_add_to_swap_cache(k, ctx, pfn, entry, None);
    memcg_swap::record(k, pfn);
    let nr = 1u32 << order;
    for sub in 0..nr {
        k.swap
            .swap_duplicate(SwapEntry::new(entry.dev(), entry.offset() + sub));
    }
    delete_from_page_cache(k, pfn, entry, order);
    true
}

/// Must shmem_writeout split a large folio before taking slots?
fn must_split(k: &Kernel, pfn: u32, order: u32) -> bool {
    if !k.cfg.thp_swap || !k.cfg.shmem_swapout_large {
        return true;
    }
    // Swapping out a folio that crosses i_size would keep the part beyond it on swap.
    let (inode, first) = (
        k.folios.owner_mm(pfn as usize),
        k.folios.owner_index(pfn as usize),
    );
    let i_size = k.shmem.inode(inode).map_or(0, |i| i.i_size_pages);
    i_size > first && i_size < first + (1 << order)
}

/// shmem_delete_from_page_cache: the inode's slots of the folio hold its swap entries now.
fn delete_from_page_cache(k: &mut Kernel, pfn: u32, entry: SwapEntry, order: u32) {
    let (inode, first, memcg) = (
        k.folios.owner_mm(pfn as usize),
        k.folios.owner_index(pfn as usize),
        k.folios.memcg(pfn as usize),
    );
    let nr = 1u32 << order;
    let i = k.shmem.inode_mut(inode);
    for sub in 0..nr {
        let x = (first + sub) as usize;
        debug_assert_eq!(i.folios[x], pfn);
        i.folios[x] = NIL;
        i.swap[x] = SwapEntry::new(entry.dev(), entry.offset() + sub).raw();
    }
    i.nr_pages -= nr as u64;
    i.swapped += nr as u64;
    account(k, memcg, order, -(nr as i64));
}

/// split_folio_to_list of a shmem folio in its inode's page cache (unmapped): order-0 folios
/// in its slots, the tails on `list` beside the isolated head.
fn split(k: &mut Kernel, ctx: &mut Ctx, pfn: u32, list: &mut VecDeque<u32>) {
    let f = &mut k.folios;
    let i = pfn as usize;
    let order = f.order[i] as u32;
    let nr = 1u32 << order;
    let (inode, first, memcg) = (f.owner_mm(i), f.owner_index(i), f.memcg(i));
    ctx.spend(
        CpuCost::SplitHugePage,
        k.cost.split_folio_ns + k.cost.split_page_ns * nr as u64,
    );
    let inherited = f.flags[i] & (flags::DIRTY | flags::REFERENCED | flags::ACTIVE);
    f.set_order(pfn, 0);
    for sub in 1..nr {
        f.init(pfn + sub, 0, memcg, (inode, SHMEM_OWNER, first + sub));
        f.flags[(pfn + sub) as usize] |= inherited;
    }
    let ino = k.shmem.inode_mut(inode);
    for sub in 1..nr {
        ino.folios[(first + sub) as usize] = pfn + sub;
    }
    if order == PMD_ORDER {
        k.shmem.nr_thp_pages -= nr as u64;
        k.vmstat.count(VmEvent::ThpSplitPage, 1);
    }
    k.vmstat.count_mthp(order, MthpStat::Split);
    list.extend((1..nr).map(|sub| pfn + sub));
}

/// shmem_swapin_folio: page `index` of `inode` is on swap. The folio still in the swap cache is
/// taken back whole; otherwise an order-0 folio, charged to the memcg the slot is charged to,
/// is read (no readahead). Either way it returns to the page cache dirty, leaves the swap cache
/// and drops the inode's swap references.
pub fn shmem_swapin_folio(
    k: &mut Kernel,
    ctx: &mut Ctx,
    inode: u32,
    index: u32,
    memcg: u16,
) -> Result<u32, MmError> {
    let entry = SwapEntry::from_raw(k.shmem.inode_mut(inode).swap[index as usize]);
    let pfn = match k.swap.lookup(entry) {
        Some(pfn) => {
            folio_wait_locked(k, ctx, pfn);
            wait_writeback(k, ctx, pfn);
            pfn
        }
        None => read_folio(k, ctx, inode, index, entry, memcg)?,
    };
    // The folio's first page and its entry (a large folio's slots are consecutive).
    let head_entry = k.folios.swap_entry(pfn);
    let nr = k.folios.nr_pages(pfn);
    let order = k.folios.order[pfn as usize] as u32;
    let first = k.folios.owner_index(pfn as usize);
    let ino = k.shmem.inode_mut(inode);
    for sub in 0..nr {
        let x = (first + sub) as usize;
        debug_assert_eq!(ino.swap[x], head_entry.raw() + sub);
        ino.swap[x] = NIL;
        ino.folios[x] = pfn;
    }
    ino.nr_pages += nr as u64;
    ino.swapped -= nr as u64;
    account(k, k.folios.memcg(pfn as usize), order, nr as i64);
    folio_delete_from_swap_cache(k, ctx, pfn, None);
    k.folios.set(pfn, flags::DIRTY);
    k.swap.put_refs(ctx, &k.cost, head_entry, nr);
    k.free_released_slots(ctx);
    Ok(pfn)
}

/// folio_wait_writeback: sleep (iowait) until the folio's swap write completes.
fn wait_writeback(k: &mut Kernel, ctx: &mut Ctx, pfn: u32) {
    if k.folios.test(pfn, flags::WRITEBACK) {
        let done_ns = k.folios.writeback_done_ns(pfn);
        if done_ns > ctx.now_ns {
            ctx.wait_until(done_ns, crate::engine::WaitKind::Io);
        }
    }
}

/// shmem_swapin_cluster without readahead: a new order-0 folio in the swap cache for `entry`,
/// read synchronously, on the LRU.
fn read_folio(
    k: &mut Kernel,
    ctx: &mut Ctx,
    inode: u32,
    index: u32,
    entry: SwapEntry,
    memcg: u16,
) -> Result<u32, MmError> {
    let charge_to = k.swap_cgroup.lookup(entry).unwrap_or(memcg);
    let gfp = Gfp::GFP_HIGHUSER_MOVABLE;
    let Some(pfn) = alloc_pages(k, ctx, gfp, 0) else {
        return Err(crate::mm::oom_kill::oom_error(k, ctx, None));
    };
    if !try_charge(k, ctx, charge_to, 1, gfp) {
        k.free_pages(ctx, pfn, 0);
        return Err(crate::mm::oom_kill::oom_error(k, ctx, Some(charge_to)));
    }
    k.folios
        .init(pfn, 0, charge_to, (inode, SHMEM_OWNER, index));
    let shadow = folio_add_to_swap_cache_read(k, ctx, pfn, entry);
    crate::mm::page_io::swap_read_folio(k, ctx, entry, 0, charge_to);
    if let Some(shadow) = shadow {
        crate::mm::workingset::workingset_refault(k, pfn, shadow);
    }
    k.folio_add_lru(ctx, pfn);
    Ok(pfn)
}

/// shmem_free_swap -> free_swap_and_cache: the inode drops its reference; a folio left only
/// in the swap cache goes too (unless its write is still in flight: reclaim frees it then).
pub fn shmem_free_swap(k: &mut Kernel, ctx: &mut Ctx, entry: SwapEntry) {
    for head in k.swap.put_refs(ctx, &k.cost, entry, 1) {
        crate::mm::memory::release_unmapped_folio(k, ctx, head);
    }
    k.free_released_slots(ctx);
}

/// Swap references the inodes hold, per device and slot (for the invariants).
pub fn count_swap_refs(shmem: &Shmem, refs: &mut [Vec<u8>]) -> Result<(), String> {
    for (id, inode) in shmem.inodes.iter().enumerate() {
        let Some(inode) = inode else { continue };
        for &raw in inode.swap.iter().filter(|&&r| r != NIL) {
            let e = SwapEntry::from_raw(raw);
            let slot = &mut refs[e.dev()][e.offset() as usize];
            *slot = slot
                .checked_add(1)
                .ok_or_else(|| format!("shmem inode {id}: more than 255 refs on one slot"))?;
        }
    }
    Ok(())
}

/// Does the folio at `pfn` belong to shmem and sit in the swap cache only?
pub fn in_swap_cache_only(k: &Kernel, pfn: u32) -> bool {
    is_shmem(k, pfn) && k.folios.test(pfn, flags::SWAPCACHE)
}
