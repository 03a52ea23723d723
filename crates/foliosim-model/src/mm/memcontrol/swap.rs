//! Swap charged to memcgs (cgroup v2): memory.swap.max/current (mem_cgroup_try_charge_swap
//! when a folio gets slots, __mem_cgroup_uncharge_swap when a slot is freed), the memcg each
//! slot is charged to (mm/swap_cgroup.c), the swap space a memcg has left
//! (mem_cgroup_get_nr_swap_pages) and mem_cgroup_swap_full's swap.max half.

use super::page_counter::{self, charge_chain, Counter};
use super::{memcg_memory_event, MemCgroup, MemcgEvent, ROOT_MEMCG};
use crate::engine::Ctx;
use crate::mm::folio::SwapEntry;
use crate::mm::Kernel;

const NONE: u16 = u16::MAX;

/// swap_cgroup: per device, per slot, the memcg the slot is charged to.
#[derive(Debug, Clone, Default)]
pub struct SwapCgroup {
    ids: Vec<Vec<u16>>,
}

impl SwapCgroup {
    pub fn new(device_slots: &[u32]) -> SwapCgroup {
        SwapCgroup {
            ids: device_slots
                .iter()
                .map(|&n| vec![NONE; n as usize])
                .collect(),
        }
    }

    /// lookup_swap_cgroup_id
    pub fn lookup(&self, entry: SwapEntry) -> Option<u16> {
        let id = self.ids[entry.dev()][entry.offset() as usize];
        (id != NONE).then_some(id)
    }

    /// Slots charged to each memcg itself (for the invariants).
    pub fn counts(&self, nr_memcgs: usize) -> Vec<u64> {
        let mut n = vec![0; nr_memcgs];
        for &id in self.ids.iter().flatten().filter(|&&id| id != NONE) {
            n[id as usize] += 1;
        }
        n
    }
}

/// Does this memcg's swap go through memory.swap.* ? (v2 only; the root is never charged.)
fn charges_swap(memcgs: &[MemCgroup], memcg: u16) -> bool {
    memcg != ROOT_MEMCG && memcgs[memcg as usize].on_dfl
}

/// mem_cgroup_try_charge_swap's counter half: charge `nr_pages` of swap to `memcg` and its
/// ancestors; over a swap.max it fails, counting memory.swap.events `max` and `fail`. (The
/// kernel allocates the slots first and frees them on failure; the model charges first.)
pub fn try_charge_swap(k: &mut Kernel, memcg: u16, nr_pages: u64) -> bool {
    if !charges_swap(&k.memcgs, memcg) {
        return true;
    }
    if page_counter::try_charge(&mut k.memcgs, Counter::Swap, memcg, nr_pages).is_ok() {
        return true;
    }
    memcg_memory_event(k, memcg, MemcgEvent::SwapMax);
    memcg_memory_event(k, memcg, MemcgEvent::SwapFail);
    false
}

/// __mem_cgroup_try_charge_swap called with no entry: folio_alloc_swap found no free slots
/// (it calls the charge even then, for this event). memory.swap.events `fail` on cgroup v2,
/// the root's memcg included; v1 (memsw accounting) has no such event.
pub fn swap_alloc_failed(k: &mut Kernel, memcg: u16) {
    if k.memcgs[memcg as usize].on_dfl {
        memcg_memory_event(k, memcg, MemcgEvent::SwapFail);
    }
}

/// folio_alloc_swap's slots with their charge: 2^order slots charged to `memcg`, or None
/// (memory.swap.max refused them, or no range was free: either counts `fail`).
pub fn alloc_charged(k: &mut Kernel, ctx: &mut Ctx, memcg: u16, order: u32) -> Option<SwapEntry> {
    if !try_charge_swap(k, memcg, 1 << order) {
        return None;
    }
    let entry = k.swap_alloc(ctx, order);
    if entry.is_none() {
        cancel_charge_swap(k, memcg, 1 << order);
        swap_alloc_failed(k, memcg);
    }
    entry
}

/// Give back a swap charge whose slots were never taken.
pub fn cancel_charge_swap(k: &mut Kernel, memcg: u16, nr_pages: u64) {
    if charges_swap(&k.memcgs, memcg) {
        page_counter::uncharge(&mut k.memcgs, Counter::Swap, memcg, nr_pages);
    }
}

/// swap_cgroup_record: the folio at `pfn` (charged already) now owns its slots.
pub fn record(k: &mut Kernel, pfn: u32) {
    let memcg = k.folios.memcg(pfn as usize);
    for (run, nr) in k.folios.swap_runs(pfn) {
        let off = run.offset() as usize;
        k.swap_cgroup.ids[run.dev()][off..off + nr as usize].fill(memcg);
    }
}

/// __mem_cgroup_uncharge_swap: slots [first, first + nr) were freed.
pub fn uncharge_swap(k: &mut Kernel, first: SwapEntry, nr: u32) {
    let off = first.offset() as usize;
    for i in off..off + nr as usize {
        let id = std::mem::replace(&mut k.swap_cgroup.ids[first.dev()][i], NONE);
        if id != NONE && charges_swap(&k.memcgs, id) {
            page_counter::uncharge(&mut k.memcgs, Counter::Swap, id, 1);
        }
    }
}

/// mem_cgroup_get_nr_swap_pages: free swap slots, less for a memcg whose swap.max (or an
/// ancestor's) leaves it fewer.
pub fn get_nr_swap_pages(k: &Kernel, memcg: u16) -> u64 {
    let mut nr = k.swap.nr_swap_pages();
    if charges_swap(&k.memcgs, memcg) {
        for id in charge_chain(&k.memcgs, memcg) {
            let cg = &k.memcgs[id as usize];
            nr = nr.min(cg.swap_max_pages.saturating_sub(cg.swap_usage_pages));
        }
    }
    nr
}

/// mem_cgroup_swap_full: vm_swap_full, or the memcg or an ancestor has used half its
/// swap.max (swap.high is not modelled).
pub fn mem_cgroup_swap_full(memcgs: &[MemCgroup], memcg: u16, vm_swap_full: bool) -> bool {
    if vm_swap_full {
        return true;
    }
    charges_swap(memcgs, memcg)
        && charge_chain(memcgs, memcg).any(|id| {
            let cg = &memcgs[id as usize];
            cg.swap_usage_pages * 2 >= cg.swap_max_pages
        })
}
