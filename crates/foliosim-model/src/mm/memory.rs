//! Faults and unmapping (mm/memory.c): the anonymous fault choosing a folio order with
//! fallback (alloc_anon_folio, do_huge_pmd_anonymous_page), swap-in (do_swap_page: outside the
//! swap cache from zram and brd, through it with readahead from other devices:
//! swap_readahead.rs), and zap of a range (zap_pte_range) freeing folios and swap entries in
//! batches.

use super::folio::{flags, SwapEntry};
use super::gfp::Gfp;
use super::huge_memory::deferred_split::deferred_split_folio;
use super::huge_memory::{
    split_folio, split_huge_pmd, suitable_orders, vma_thp_gfp_mask, OrderList,
};
use super::khugepaged::khugepaged_enter_vma;
use super::memcontrol::try_charge;
use super::mmap::{MmStruct, Pte};
use super::oom_kill::oom_error;
use super::page_alloc::alloc_pages;
use super::page_io::swap_read_folio;
use super::preempt::{FaultResume, TaskResume};
use super::swap_readahead::{free_swap_after_fault, swap_update_readahead, swap_vma_readahead};
use super::swap_state::{folio_delete_from_swap_cache, folio_swapped};
use super::vmstat::{MthpStat, VmEvent};
use super::{Kernel, MmError};
use crate::cpu_cost::CpuCost;
use crate::engine::Ctx;
use crate::hw::membw::Stream;
use crate::scenario::{PAGE_SIZE, PMD_ORDER};

/// struct vm_fault: what a fault is about, built once by handle_mm_fault and handed down
/// its path by reference.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct VmFault {
    pub mm: u32,
    pub vma: u32,
    /// The faulting page, as an index into the VMA (vmf->address).
    pub index: u32,
    /// FAULT_FLAG_WRITE.
    pub write: bool,
    /// A user access: its allocation may stop to give up the CPU (mm/preempt.rs).
    pub preemptible: bool,
    /// The order a fault that stopped resumes at (mm/preempt.rs); None: a new fault.
    pub resumed: Option<u32>,
}

impl VmFault {
    /// A new fault on page `index` of `vma`; a store if `write`.
    pub fn new(mm: u32, vma: u32, index: u32, write: bool) -> VmFault {
        VmFault {
            mm,
            vma,
            index,
            write,
            preemptible: false,
            resumed: None,
        }
    }
}

/// The task touches page `index` of `vma` (a store if `write`). Returns how many pages from
/// `index` on (up to `end`) this step covered: a fault maps a whole folio, and the task's
/// stores to the rest of it cost only the store itself.
pub fn touch(
    k: &mut Kernel,
    ctx: &mut Ctx,
    mm: u32,
    vma: u32,
    index: u32,
    end: u32,
    write: bool,
) -> Result<u32, MmError> {
    let vmf = VmFault::new(mm, vma, index, write);
    touch_timed(k, ctx, &vmf, end).map(|(covered, _)| covered)
}

/// [`touch`] of the page of `vmf` (a store if `vmf.write`), faulting if it is not mapped as
/// the access needs; also returns the time of the task's own loads and stores (user time: the
/// faults they took are system time).
pub fn touch_timed(
    k: &mut Kernel,
    ctx: &mut Ctx,
    vmf: &VmFault,
    end: u32,
) -> Result<(u32, u64), MmError> {
    let VmFault {
        mm,
        vma,
        index,
        write,
        ..
    } = *vmf;
    let pte = k.mms[mm as usize].vma(vma).ptes[index as usize];
    // A file VMA's unmapped and page-cache pages fault through the page cache
    // (mm/filemap/fault.rs); its anonymous (COW) pages are handled below.
    if k.mms[mm as usize].vma_file(vma).is_some()
        && (pte.is_none() || super::filemap::fault::maps_file_page(&k.folios, pte))
    {
        return super::filemap::fault::touch_file(k, ctx, vmf, end);
    }
    let covered = if !pte.is_present() {
        // A user access: its allocation may stop to give up the CPU.
        let vmf = VmFault {
            preemptible: true,
            ..*vmf
        };
        let (start, order) = handle_fault(k, ctx, vmf)?;
        (start + (1 << order)).min(end) - index
    } else if !pte.is_plain_for(write) {
        // A NUMA hinting PTE, or a store to a write-protected one.
        handle_pte_fault(k, ctx, vmf);
        1
    } else {
        // A fault that stopped (mm/preempt.rs) finds its page mapped meanwhile: it is over.
        k.current.clear();
        // Present: walk on through present PTEs (bounded: one step is at most a PMD's worth).
        let ptes = &k.mms[mm as usize].vma(vma).ptes;
        let mut n = 0;
        let limit = end.min(index + (1 << PMD_ORDER));
        while index + n < limit && ptes[(index + n) as usize].is_plain_for(write) {
            let head = k.folios.head_of(ptes[(index + n) as usize].pfn());
            if k.folios.test(head, flags::FILE) {
                break;
            }
            k.folios
                .set(head, flags::YOUNG | if write { flags::DIRTY } else { 0 });
            n += 1;
        }
        n
    };
    // The store loop streams through memory shared with the other CPUs.
    let bytes = covered as u64 * PAGE_SIZE;
    let user_ns = k.membw.transfer(
        ctx,
        Stream::UserStore,
        bytes as f64,
        k.cost.user_write_page_ns * covered as u64,
    );
    Ok((covered, user_ns))
}

/// handle_pte_fault on a present PTE that the access cannot use: a NUMA hinting fault
/// (do_numa_page), then, for a store, a write-protect fault (do_wp_page).
pub fn handle_pte_fault(k: &mut Kernel, ctx: &mut Ctx, vmf: &VmFault) {
    let VmFault {
        mm,
        vma,
        index,
        write,
        ..
    } = *vmf;
    let pte = k.mms[mm as usize].vma(vma).ptes[index as usize];
    if pte.is_protnone() {
        super::numa_balancing::do_numa_page(k, ctx, vmf);
    }
    let pte = k.mms[mm as usize].vma(vma).ptes[index as usize];
    if write && pte.is_present() && pte.is_wrprotect() {
        super::numa_balancing::do_wp_page(k, ctx, vmf);
    }
    let head = k
        .folios
        .head_of(k.mms[mm as usize].vma(vma).ptes[index as usize].pfn());
    k.folios
        .set(head, flags::YOUNG | if write { flags::DIRTY } else { 0 });
}

/// handle_mm_fault on a page that is not present: a file VMA's page through the page cache
/// (do_fault), a new anonymous folio, or a swap-in. Returns the first page index mapped and
/// the folio's order (0 for a file page: fault-around maps its neighbours separately).
pub fn handle_mm_fault(
    k: &mut Kernel,
    ctx: &mut Ctx,
    mm: u32,
    vma: u32,
    index: u32,
    write: bool,
) -> Result<(u32, u32), MmError> {
    handle_fault(k, ctx, VmFault::new(mm, vma, index, write))
}

/// handle_fault between lru_gen_enter_fault and lru_gen_exit_fault: folios the fault adds to
/// the LRU are marked for MGLRU's youngest generation.
fn handle_fault(k: &mut Kernel, ctx: &mut Ctx, vmf: VmFault) -> Result<(u32, u32), MmError> {
    let outer = std::mem::replace(&mut k.in_lru_fault, true);
    let start_ns = ctx.now_ns;
    let r = handle_fault_in(k, ctx, vmf);
    k.in_lru_fault = outer;
    // A fault stopped to reschedule still holds the lock; it ends when the fault resumes.
    if !matches!(r, Err(MmError::Resched)) {
        k.mms[vmf.mm as usize].mmap_lock.read_unlock(ctx, start_ns);
    }
    r
}

/// handle_mm_fault; a `preemptible` one (a user access) may stop inside the allocation of an
/// anonymous or swapped-in folio to give up the CPU (`MmError::Resched`) and resumes when
/// called again for the same page (mm/preempt.rs): counted and charged once.
fn handle_fault_in(k: &mut Kernel, ctx: &mut Ctx, mut vmf: VmFault) -> Result<(u32, u32), MmError> {
    let VmFault { mm, vma, index, .. } = vmf;
    let pte = k.mms[mm as usize].vma(vma).ptes[index as usize];
    debug_assert!(!pte.is_present());
    if pte.is_hole() {
        return Err(MmError::Segv { vma, index });
    }
    if k.kmem.enabled {
        super::pgtable::pte_alloc(k, ctx, mm, vma, index)?;
    }
    vmf.resumed = k.current.resume_fault(mm, vma, index);
    if vmf.resumed.is_none() {
        k.vmstat.count(VmEvent::Pgfault, 1);
        k.mms[mm as usize].mmap_lock.read_lock(ctx);
    }
    if pte.is_none() {
        if let Some(vf) = k.mms[mm as usize].vma_file(vma) {
            super::filemap::fault::do_fault(k, ctx, &vmf, vf)?;
            return Ok((index, 0));
        }
    }
    k.current.may_stop = vmf.preemptible;
    let done = if pte.is_swap() {
        do_swap_page(k, ctx, &vmf, pte.swap_entry())
    } else {
        do_anonymous_page(k, ctx, &vmf)
    };
    k.current.may_stop = false;
    if done != Err(MmError::Resched) {
        k.current.clear();
    }
    done
}

/// The fault's allocation of an `order` folio stopped to give up the CPU: the fault unwinds,
/// to resume at that order.
fn fault_stopped(current: &mut TaskResume, vmf: &VmFault, order: u32) -> MmError {
    current.fault = Some(FaultResume {
        mm: vmf.mm,
        vma: vmf.vma,
        index: vmf.index,
        order,
    });
    MmError::Resched
}

/// do_anonymous_page: try each suitable enabled order, highest first; an order whose range is
/// not wholly unmapped, whose allocation fails, or whose charge fails falls back to the next.
/// Returns the folio's first page index and order. A fault `resumed` at an order goes on with
/// that order's allocation (the larger ones were given up before it stopped).
fn do_anonymous_page(k: &mut Kernel, ctx: &mut Ctx, vmf: &VmFault) -> Result<(u32, u32), MmError> {
    let VmFault {
        mm,
        vma,
        index,
        resumed,
        ..
    } = *vmf;
    let memcg = k.mms[mm as usize].memcg;
    // vmf_anon_prepare: the VMA has an anon_vma from its first fault on.
    k.mms[mm as usize].vma_mut(vma).anon_vma = true;
    let vma_ref = k.mms[mm as usize].vma(vma);
    // alloc_anon_folio / vma_alloc_anon_folio_pmd: allocation and charge use the THP gfp.
    let gfp = vma_thp_gfp_mask(k.cfg.thp_defrag, vma_ref, k.cfg.gfp_transhuge);
    let madvised = vma_ref.thp == crate::mm::mmap::ThpAdvice::Hugepage;
    let candidates: OrderList = suitable_orders(&k.cfg, vma_ref, index)
        .filter(|&order| order <= resumed.unwrap_or(u32::MAX))
        .filter(|&order| {
            let start = index & !((1 << order) - 1);
            vma_ref.ptes[start as usize..(start + (1 << order)) as usize]
                .iter()
                .all(|p| p.is_none())
        })
        .collect();
    if candidates.first() == Some(&PMD_ORDER) && resumed.is_none() {
        // do_huge_pmd_anonymous_page registers the mm before it allocates.
        khugepaged_enter_vma(k, ctx.now_ns, mm, vma);
    }
    for &order in candidates.iter() {
        let start = index & !((1 << order) - 1);
        // The PMD allocation may be left to khugepaged (mm/thp_fault_alloc/).
        let policy = k.cfg.thp_fault_alloc;
        let tried = order != PMD_ORDER || resumed == Some(order) || policy.fault_may_try(k);
        let alloc = |k: &mut Kernel, ctx: &mut Ctx| {
            crate::mm::mempolicy::vma_alloc_folio(k, ctx, gfp, order, madvised, start)
        };
        let Some(pfn) = tried.then(|| alloc(k, ctx)).flatten() else {
            if k.current.alloc_stopped() {
                return Err(fault_stopped(&mut k.current, vmf, order));
            }
            k.vmstat.count_mthp(order, MthpStat::AnonFaultFallback);
            if order == PMD_ORDER {
                k.vmstat.count(VmEvent::ThpFaultFallback, 1);
                policy.fault_failed(k, ctx.now_ns);
            }
            continue;
        };
        if !try_charge(k, ctx, memcg, 1 << order, gfp) {
            k.free_pages(ctx, pfn, order);
            k.vmstat
                .count_mthp(order, MthpStat::AnonFaultFallbackCharge);
            k.vmstat.count_mthp(order, MthpStat::AnonFaultFallback);
            if order == PMD_ORDER {
                k.vmstat.count(VmEvent::ThpFaultFallbackCharge, 1);
                k.vmstat.count(VmEvent::ThpFaultFallback, 1);
            }
            continue;
        }
        map_new_folio(k, ctx, vmf, start, pfn, order, memcg);
        k.vmstat.count_mthp(order, MthpStat::AnonFaultAlloc);
        if order == PMD_ORDER {
            k.vmstat.count(VmEvent::ThpFaultAlloc, 1);
        }
        return Ok((start, order));
    }
    let pfn = match alloc_order0_charged(k, ctx, memcg, index) {
        Err(MmError::Resched) => return Err(fault_stopped(&mut k.current, vmf, 0)),
        pfn => pfn?,
    };
    map_new_folio(k, ctx, vmf, index, pfn, 0, memcg);
    Ok((index, 0))
}

/// An order-0 page for a fault at page `index` of its VMA (vma_alloc_folio with
/// GFP_HIGHUSER_MOVABLE: the allocator reclaims and retries), charged with memcg reclaim and
/// retries when over the limit; failure of either is OOM.
/// `MmError::Resched`: the allocation stopped to give up the CPU (mm/preempt.rs).
pub(super) fn alloc_order0_charged(
    k: &mut Kernel,
    ctx: &mut Ctx,
    memcg: u16,
    index: u32,
) -> Result<u32, MmError> {
    let gfp = Gfp::GFP_HIGHUSER_MOVABLE;
    let Some(pfn) = crate::mm::mempolicy::vma_alloc_folio(k, ctx, gfp, 0, false, index) else {
        if k.current.alloc_stopped() {
            return Err(MmError::Resched);
        }
        return Err(oom_error(k, ctx, None));
    };
    if !try_charge(k, ctx, memcg, 1, Gfp::KERNEL) {
        k.free_pages(ctx, pfn, 0);
        return Err(oom_error(k, ctx, Some(memcg)));
    }
    Ok(pfn)
}

/// Set up, map (PTEs, or one PMD for PMD order) from page `start` of the fault's VMA and
/// add to the LRU a newly allocated folio.
pub(super) fn map_new_folio(
    k: &mut Kernel,
    ctx: &mut Ctx,
    vmf: &VmFault,
    start: u32,
    pfn: u32,
    order: u32,
    memcg: u16,
) {
    let (mm, vma) = (vmf.mm, vmf.vma);
    let nr = 1u32 << order;
    k.folios.init(pfn, order, memcg, (mm, vma, start));
    k.folios.set(
        pfn,
        flags::DIRTY
            | flags::YOUNG
            | if order == PMD_ORDER {
                flags::PMD_MAPPED
            } else {
                0
            },
    );
    k.folios.set_mapcount(pfn as usize, nr as u16);
    let m = &mut k.mms[mm as usize];
    for (i, pte) in m.vma_mut(vma).ptes[start as usize..(start + nr) as usize]
        .iter_mut()
        .enumerate()
    {
        *pte = Pte::present(pfn + i as u32);
    }
    m.rss_anon += nr as u64;
    k.folio_add_lru(ctx, pfn);
    // The measured fault includes clear_page of every page: that part is memory traffic.
    let fault_ns = k.cost.fault_folio_ns(order);
    let clear_ns = (k.cost.clear_page_ns * nr as u64).min(fault_ns);
    ctx.spend(CpuCost::DoAnonymousPage, fault_ns - clear_ns);
    k.membw.transfer(
        ctx,
        Stream::ClearPage,
        (nr as u64 * PAGE_SIZE) as f64,
        clear_ns,
    );
}

/// do_swap_page: map the page from the swap cache if its folio is still there; otherwise, on
/// a synchronous device (zram, brd), read it into a new folio outside the swap cache: large
/// when alloc_swap_folio finds a whole swapped-out mTHP (6.13+), else order 0, and free the
/// swap copy; on any other device, read it with its neighbours through the swap cache
/// (mm/swap_readahead.rs), keeping the slot after a read fault. Returns the first page index
/// mapped and the order.
/// A fault `resumed` at an order goes on with that order's allocation.
fn do_swap_page(
    k: &mut Kernel,
    ctx: &mut Ctx,
    vmf: &VmFault,
    entry: SwapEntry,
) -> Result<(u32, u32), MmError> {
    let VmFault {
        mm,
        vma,
        index,
        write,
        resumed,
        ..
    } = *vmf;
    if resumed.is_none() {
        ctx.spend(CpuCost::DoSwapPage, k.cost.swapin_fault_ns);
    }
    let memcg = k.mms[mm as usize].memcg;
    let dirty = if write { flags::DIRTY } else { 0 };
    if let Some(head) = k.swap.lookup(entry) {
        // Still in the swap cache (under writeback, read ahead, or kept by an earlier read
        // fault): wait for a read in flight (folio_lock), then map the page of that folio.
        super::filemap::folio_wait_locked(k, ctx, head);
        swap_update_readahead(k, mm, vma, index, head);
        let idx = k.folios.swap_page_index(head, entry);
        if k.cfg.map_swapcache_folio_whole {
            if let Some(start) = swapcache_folio_range(k, vmf, head, idx) {
                map_swapcache_folio(k, ctx, vmf, start, head);
                return Ok((start, k.folios.order[head as usize] as u32));
            }
        }
        map_swapcache_page(k, ctx, vmf, head + idx, entry);
        return Ok((index, 0));
    }
    if resumed.is_none() {
        k.vmstat.count(VmEvent::Pgmajfault, 1);
    }
    if !k.swap.devices[entry.dev()].map.synchronous_io {
        // swapin_readahead: through the swap cache (mm/swap_readahead.rs).
        let pfn = match alloc_order0_charged(k, ctx, memcg, index) {
            Err(MmError::Resched) => return Err(fault_stopped(&mut k.current, vmf, 0)),
            pfn => pfn?,
        };
        if !swap_pte_same(&k.mms[mm as usize], vma, index, entry) {
            return Err(swapin_killed(k, ctx, memcg, pfn, 0));
        }
        if !swap_vma_readahead(k, ctx, vmf, entry, pfn, memcg) {
            return Err(MmError::OomKilled);
        }
        map_swapcache_page(k, ctx, vmf, pfn, entry);
        return Ok((index, 0));
    }
    let (pfn, start, order) = match alloc_swap_folio(k, ctx, vmf, entry)? {
        Some(found) => found,
        None => match alloc_order0_charged(k, ctx, memcg, index) {
            Err(MmError::Resched) => return Err(fault_stopped(&mut k.current, vmf, 0)),
            pfn => (pfn?, index, 0),
        },
    };
    if !swap_pte_same(&k.mms[mm as usize], vma, index, entry) {
        return Err(swapin_killed(k, ctx, memcg, pfn, order));
    }
    let nr = 1u32 << order;
    let first = SwapEntry::new(entry.dev(), entry.offset() - (index - start));
    // get_shadow_from_swap_cache, before the slots are freed below.
    let shadow = k.swap.shadow(entry);
    swap_read_folio(k, ctx, first, order, memcg);
    k.folios.init(pfn, order, memcg, (mm, vma, start));
    k.folios.set(pfn, flags::YOUNG | dirty);
    if let Some(shadow) = shadow {
        super::workingset::workingset_refault(k, pfn, shadow);
    }
    k.folios.set_mapcount(pfn as usize, nr as u16);
    let ptes = &mut k.mms[mm as usize].vma_mut(vma).ptes[start as usize..(start + nr) as usize];
    for (i, pte) in ptes.iter_mut().enumerate() {
        *pte = Pte::present(pfn + i as u32);
    }
    // swap_free_nr + swapcache_clear: the bypass path leaves no swap cache copy behind.
    k.swap.put_refs(ctx, &k.cost, first, nr);
    k.folio_add_lru(ctx, pfn);
    let m = &mut k.mms[mm as usize];
    m.rss_anon += nr as u64;
    m.swap_ents -= nr as u64;
    Ok((start, order))
}

/// do_swap_page's pte_same check after its allocations: still the swap PTE of `entry`? Not
/// when the allocation OOM-killed the process the fault is for (khugepaged swapping in for
/// it; a task's own fault is never torn down under it) and its exit unmapped the VMA; in the
/// kernel the oom_reaper zaps the PTE and do_swap_page goes to out_nomap.
fn swap_pte_same(m: &MmStruct, vma: u32, index: u32, entry: SwapEntry) -> bool {
    m.is_mapped(vma) && {
        let pte = m.vma(vma).ptes[index as usize];
        pte.is_swap() && pte.swap_entry() == entry
    }
}

/// The fault's process was killed under its swap-in (!swap_pte_same): give back the folio
/// allocated and charged for it.
fn swapin_killed(k: &mut Kernel, ctx: &mut Ctx, memcg: u16, pfn: u32, order: u32) -> MmError {
    super::memcontrol::uncharge(k, ctx, memcg, 1 << order);
    k.free_pages(ctx, pfn, order);
    MmError::OomKilled
}

/// do_swap_page's end for a page of a swap-cache folio: map it, drop the PTE's slot
/// reference (swap_free_nr), and free the slot if the fault was a write or swap is nearly
/// full (should_try_to_free_swap); otherwise the folio stays cached, clean, on its slot.
fn map_swapcache_page(k: &mut Kernel, ctx: &mut Ctx, vmf: &VmFault, page: u32, entry: SwapEntry) {
    let VmFault {
        mm,
        vma,
        index,
        write,
        ..
    } = *vmf;
    let head = k.folios.head_of(page);
    k.mms[mm as usize].vma_mut(vma).ptes[index as usize] = Pte::present(page);
    *k.folios.mapcount_mut(head as usize) += 1;
    k.folios
        .set(head, flags::YOUNG | if write { flags::DIRTY } else { 0 });
    k.swap.put_refs(ctx, &k.cost, entry, 1);
    let m = &mut k.mms[mm as usize];
    m.rss_anon += 1;
    m.swap_ents -= 1;
    free_swap_after_fault(k, ctx, head, write);
}

/// do_swap_page (6.10+): may the large swap-cache folio `head`, whose page `idx` the fault
/// `vmf` wants, be mapped whole? Its range must lie in the VMA and the fault's PMD, and its
/// PTEs must still be the folio's slots in order (swap_pte_batch). Returns its first index.
fn swapcache_folio_range(k: &Kernel, vmf: &VmFault, head: u32, idx: u32) -> Option<u32> {
    let VmFault { mm, vma, index, .. } = *vmf;
    let nr = k.folios.nr_pages(head);
    if nr == 1 || k.folios.scattered.contains_key(&head) {
        return None;
    }
    let start = index - idx;
    let pmd_start = index & !((1 << PMD_ORDER) - 1);
    let v = k.mms[mm as usize].vma(vma);
    if start < pmd_start || start + nr > (pmd_start + (1 << PMD_ORDER)).min(v.nr_pages) {
        return None;
    }
    let first = k.folios.swap_entry(head);
    let contiguous = (0..nr).all(|i| {
        let pte = v.ptes[(start + i) as usize];
        pte.is_swap() && pte.swap_entry() == SwapEntry::new(first.dev(), first.offset() + i)
    });
    contiguous.then_some(start)
}

/// do_swap_page's end for a whole large swap-cache folio (6.10, "entirely map large folios
/// found in swapcache"): its PTEs from `start` map it, its slots lose the PTEs' references
/// (swap_free_nr), and it leaves the swap cache if no other reference remains and the fault
/// was a write or swap is nearly full (should_try_to_free_swap -> folio_free_swap).
fn map_swapcache_folio(k: &mut Kernel, ctx: &mut Ctx, vmf: &VmFault, start: u32, head: u32) {
    let VmFault { mm, vma, write, .. } = *vmf;
    let nr = k.folios.nr_pages(head);
    let ptes = &mut k.mms[mm as usize].vma_mut(vma).ptes[start as usize..(start + nr) as usize];
    for (i, pte) in ptes.iter_mut().enumerate() {
        *pte = Pte::present(head + i as u32);
    }
    *k.folios.mapcount_mut(head as usize) += nr as u16;
    k.folios
        .set(head, flags::YOUNG | if write { flags::DIRTY } else { 0 });
    k.swap.put_refs(ctx, &k.cost, k.folios.swap_entry(head), nr);
    let m = &mut k.mms[mm as usize];
    m.rss_anon += nr as u64;
    m.swap_ents -= nr as u64;
    free_swap_after_fault(k, ctx, head, write);
}

/// do_swap_page for the swap PTE at `index` of `vma`, as khugepaged's
/// __collapse_huge_page_swapin calls it (a read fault). Returns the first page index mapped
/// and the order.
pub(crate) fn swapin_pte(
    k: &mut Kernel,
    ctx: &mut Ctx,
    mm: u32,
    vma: u32,
    index: u32,
) -> Result<(u32, u32), MmError> {
    let pte = k.mms[mm as usize].vma(vma).ptes[index as usize];
    debug_assert!(pte.is_swap());
    do_swap_page(
        k,
        ctx,
        &VmFault::new(mm, vma, index, false),
        pte.swap_entry(),
    )
}

/// alloc_swap_folio (6.13+): the highest enabled order whose aligned range of PTEs holds
/// contiguous, aligned swap entries of one device, none in the swap cache; allocated and
/// charged, or the next order down (swpin_fallback). None: use order 0. A fault `resumed` at
/// an order starts there; `MmError::Resched`: the allocation stopped (mm/preempt.rs).
fn alloc_swap_folio(
    k: &mut Kernel,
    ctx: &mut Ctx,
    vmf: &VmFault,
    entry: SwapEntry,
) -> Result<Option<(u32, u32, u32)>, MmError> {
    let VmFault {
        mm,
        vma,
        index,
        resumed,
        ..
    } = *vmf;
    let dev = &k.swap.devices[entry.dev()];
    if !k.cfg.swapin_mthp || !dev.map.synchronous_io {
        return Ok(None);
    }
    let memcg = k.mms[mm as usize].memcg;
    let vma_ref = k.mms[mm as usize].vma(vma);
    let gfp = vma_thp_gfp_mask(k.cfg.thp_defrag, vma_ref, k.cfg.gfp_transhuge);
    let candidates: OrderList = suitable_orders(&k.cfg, vma_ref, index)
        .filter(|&order| order < PMD_ORDER && order <= resumed.unwrap_or(u32::MAX))
        .filter(|&order| {
            // can_swapin_thp: the virtual and swap offsets agree modulo the size, and every
            // PTE of the range is the next slot, not in the swap cache.
            let nr = 1u32 << order;
            let start = index & !(nr - 1);
            let first_offset = entry.offset().wrapping_sub(index - start);
            (entry.offset() ^ index) & (nr - 1) == 0
                && vma_ref.ptes[start as usize..(start + nr) as usize]
                    .iter()
                    .enumerate()
                    .all(|(i, p)| {
                        p.is_swap()
                            && p.swap_entry()
                                == SwapEntry::new(entry.dev(), first_offset + i as u32)
                            && dev.map.cached_folio(first_offset + i as u32).is_none()
                    })
        })
        .collect();
    for &order in candidates.iter() {
        let start = index & !((1 << order) - 1);
        let Some(pfn) = alloc_pages(k, ctx, gfp, order) else {
            if k.current.alloc_stopped() {
                return Err(fault_stopped(&mut k.current, vmf, order));
            }
            k.vmstat.count_mthp(order, MthpStat::SwpinFallback);
            continue;
        };
        if !try_charge(k, ctx, memcg, 1 << order, gfp) {
            k.free_pages(ctx, pfn, order);
            k.vmstat.count_mthp(order, MthpStat::SwpinFallbackCharge);
            k.vmstat.count_mthp(order, MthpStat::SwpinFallback);
            continue;
        }
        return Ok(Some((pfn, start, order)));
    }
    Ok(None)
}

/// How far ahead of itself zap_range prefetches: a freed folio costs ~1 µs of host time, so
/// a few PTEs hide the misses.
const ZAP_PREFETCH_PTES: u32 = 4;

/// PTEs one page table maps (PTRS_PER_PTE): a zap batch stays within one table.
const PTRS_PER_PTE: u32 = 1 << PMD_ORDER;

/// folio_pte_batch (zap's flags): how many PTEs from `index` (present, `pte`) map consecutive
/// pages of the folio at `head`, up to the folio's end, `end` and the page table's end. The
/// dirty and write bits may differ (FPB_IGNORE_DIRTY; the batch ignores writability and
/// the accessed bit too); anything else, such as a NUMA hinting PTE, ends the run.
fn folio_pte_batch(ptes: &[Pte], index: u32, pte: Pte, head: u32, nr_folio: u32, end: u32) -> u32 {
    let in_folio = nr_folio - (pte.pfn() - head);
    let table_end = (index | (PTRS_PER_PTE - 1)) + 1;
    let max_nr = in_folio.min(end - index).min(table_end - index);
    let mut nr = 1;
    while nr < max_nr && ptes[(index + nr) as usize].same_batch(pte, nr) {
        nr += 1;
    }
    nr
}

/// zap_pte_range over [first, first + nr) of `vma`: unmap present pages (freeing folios left
/// unmapped) and drop swap entries, in runs of contiguous slots as large as the policy batches.
/// A PMD-mapped THP only partly in the range has its PMD split first (zap_pmd_range ->
/// __split_huge_pmd); a large folio left partly mapped goes on the deferred split queue
/// (__folio_remove_rmap -> deferred_split_folio). Returns the span of pages from the first to
/// the last present PTE cleared (0: none), which the caller's TLB flush covers
/// (tlb_finish_mmu).
pub fn zap_range(k: &mut Kernel, ctx: &mut Ctx, mm: u32, vma: u32, first: u32, nr: u32) -> u64 {
    super::tlb::flush_tlb_batched_pending(k, ctx, mm);
    let batch_max = k.swap.zap_batch();
    let end = first + nr;
    let mut index = first;
    let mut cleared: Option<(u32, u32)> = None;
    while index < end {
        let ptes = &k.mms[mm as usize].vma(vma).ptes;
        let pte = ptes[index as usize];
        // The folio met a few PTEs on: its per-pfn entries start loading now.
        if let Some(ahead) = ptes.get((index + ZAP_PREFETCH_PTES) as usize) {
            if ahead.is_present() {
                k.folios.prefetch(ahead.pfn());
            }
        }
        if pte.is_present() {
            cleared = Some((cleared.map_or(index, |c| c.0), index));
            let head = k.folios.head_of(pte.pfn());
            if k.folios.test(head, flags::FILE) {
                super::filemap::rmap::zap_file_pte(k, ctx, mm, vma, index, head);
                index += 1;
                continue;
            }
            let nr_folio = k.folios.nr_pages(head);
            // Pages unmapped, and page-table entries cleared: a whole PMD mapping is one
            // entry (a partial zap splits the PMD first), a run of PTEs one entry a page.
            let (count, entries) = if k.folios.test(head, flags::PMD_MAPPED) {
                let whole_pmd =
                    index == k.folios.owner_index(head as usize) && index + nr_folio <= end;
                if !whole_pmd {
                    split_huge_pmd(k, ctx, mm, head);
                    if !k.cfg.defer_partial_split {
                        // Before 4.5 the page split with its PMD: order-0 pages from here.
                        split_folio(k, ctx, head, None);
                        continue;
                    }
                }
                k.folios.clear(head, flags::PMD_MAPPED);
                (if whole_pmd { nr_folio } else { 1 }, 1)
            } else if k.cfg.zap_batches_ptes && nr_folio > 1 {
                let run = folio_pte_batch(ptes, index, pte, head, nr_folio, end);
                (run, run)
            } else {
                (1, 1)
            };
            let mapcount = {
                let mapcount = k.folios.mapcount_mut(head as usize);
                *mapcount -= count as u16;
                *mapcount as u32
            };
            let m = &mut k.mms[mm as usize];
            let v = m.vma_mut(vma);
            clear_ptes(&mut v.ptes[index as usize..(index + count) as usize]);
            super::access::pte_cleared(v, index, count);
            cleared = Some((cleared.map_or(index, |c| c.0), index + count - 1));
            m.rss_anon -= count as u64;
            ctx.spend(CpuCost::ZapPteRange, k.cost.zap_pte_ns * entries as u64);
            if mapcount == 0 {
                release_unmapped_folio(k, ctx, head);
            } else if mapcount < nr_folio {
                deferred_split_folio(k, head);
            }
            index += count;
        } else if pte.is_swap() {
            let entry = pte.swap_entry();
            let mut run = 1;
            let ptes = &k.mms[mm as usize].vma(vma).ptes;
            while run < batch_max && index + run < end && {
                let next = ptes[(index + run) as usize];
                next.is_swap()
                    && next.swap_entry() == SwapEntry::new(entry.dev(), entry.offset() + run)
            } {
                run += 1;
            }
            let ptes = &mut k.mms[mm as usize].vma_mut(vma).ptes;
            clear_ptes(&mut ptes[index as usize..(index + run) as usize]);
            k.mms[mm as usize].swap_ents -= run as u64;
            ctx.spend(CpuCost::ZapPteRange, k.cost.zap_pte_ns * run as u64);
            // free_swap_and_cache_nr: drop the references, then reclaim cache-only folios.
            for head in k.swap.put_refs(ctx, &k.cost, entry, run) {
                if k.folios.mapcount(head as usize) == 0 {
                    release_unmapped_folio(k, ctx, head);
                }
            }
            index += run;
        } else {
            index += 1;
        }
    }
    cleared.map_or(0, |(a, b)| (b - a + 1) as u64)
}

/// pte_clear over a range. Most zaps clear one PTE: one store, where a fill of the slice is
/// a call to memset.
#[inline]
fn clear_ptes(ptes: &mut [Pte]) {
    if let [pte] = ptes {
        *pte = Pte::NONE;
    } else {
        ptes.fill(Pte::NONE);
    }
}

/// A folio with no mapping left: free it now unless writeback still holds it (reclaim frees
/// it once the write completes). In the swap cache, it leaves the cache first, unless a swap
/// PTE still refers to one of its slots: then the cache keeps it, for reclaim or a swap fault
/// to find (free_swap_cache -> folio_free_swap refuses a folio_swapped one). Returns whether
/// the folio was freed.
pub(crate) fn release_unmapped_folio(k: &mut Kernel, ctx: &mut Ctx, head: u32) -> bool {
    if k.folios.test(head, flags::WRITEBACK) {
        return false;
    }
    if k.folios.test(head, flags::SWAPCACHE) {
        if folio_swapped(k, head) {
            return false;
        }
        folio_delete_from_swap_cache(k, ctx, head, None);
    }
    k.folio_free(ctx, head);
    true
}
