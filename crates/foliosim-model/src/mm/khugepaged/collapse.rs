//! collapse_huge_page (mm/khugepaged.c, 6.18): replace the PTE-mapped pages of one 2 MiB range
//! with a new PMD-mapped THP.
//!
//! 1. Allocate (the mmap lock dropped): order 9 with khugepaged's gfp, GFP_TRANSHUGE when
//!    `khugepaged/defrag` is 1 (direct reclaim and compaction, no __GFP_NORETRY: the full slow
//!    path), GFP_TRANSHUGE_LIGHT otherwise; thp_collapse_alloc / thp_collapse_alloc_failed;
//!    then the memcg charge with the same gfp.
//! 2. mmap lock for read: revalidate the VMA and range; swap in the range's swap PTEs
//!    (__collapse_huge_page_swapin: do_swap_page each) if the scan counted some.
//! 3. mmap lock for write, held to the end: the mm's faults wait (mm/mmap_lock.rs).
//!    pmdp_collapse_flush (one range flush, IPIs on x86) and tlb_remove_table_sync_one (an IPI
//!    to every other CPU, waited for).
//! 4. __collapse_huge_page_isolate: recheck the PTEs (empty ones, swap PTEs, young), take each
//!    source folio off the LRU, a large folio once.
//! 5. __collapse_huge_page_copy: copy each mapped page, clear each empty one (memory traffic
//!    through hw/membw.rs: `copy_page_ns`, `clear_page_ns`); clear the PTEs and free the
//!    sources (a large source once, when its last PTE goes; out of the swap cache first).
//! 6. Map the new folio by the PMD (map_anon_folio_pmd_nopf: rmap, LRU) and release the lock.

use super::{vma_allowable_pmd, ScanResult, HPAGE_PMD_NR};
use crate::cpu_cost::CpuCost;
use crate::engine::Ctx;
use crate::hw::membw::Stream;
use crate::mm::folio::flags;
use crate::mm::gfp::Gfp;
use crate::mm::memcontrol::try_charge;
use crate::mm::memory::{release_unmapped_folio, swapin_pte};
use crate::mm::mmap::Pte;
use crate::mm::tlb::{charge, TlbCost};
use crate::mm::vmstat::VmEvent;
use crate::mm::{Kernel, MmError};
use crate::scenario::{PAGE_SIZE, PMD_ORDER};

/// alloc_hugepage_khugepaged_gfpmask; `transhuge` is the release's GFP_TRANSHUGE.
pub fn khugepaged_gfp(defrag: bool, transhuge: Gfp) -> Gfp {
    if defrag {
        transhuge
    } else {
        Gfp::GFP_TRANSHUGE_LIGHT
    }
}

/// collapse_huge_page for the range of `vma` at `start`; `unmapped`: swap PTEs the scan saw.
pub(super) fn collapse_huge_page(
    k: &mut Kernel,
    ctx: &mut Ctx,
    mm: u32,
    vma: u32,
    start: u32,
    unmapped: u32,
) -> ScanResult {
    let memcg = k.mms[mm as usize].memcg;
    let gfp = khugepaged_gfp(k.khugepaged.defrag, k.cfg.gfp_transhuge);
    // alloc_charge_folio (the fault policy may hold a page already, counted when allocated).
    let Some((pfn, fresh)) = k.cfg.thp_fault_alloc.collapse_alloc(k, ctx, gfp) else {
        k.vmstat.count(VmEvent::ThpCollapseAllocFailed, 1);
        return ScanResult::AllocHugePageFail;
    };
    if fresh {
        k.vmstat.count(VmEvent::ThpCollapseAlloc, 1);
    }
    if !try_charge(k, ctx, memcg, HPAGE_PMD_NR as u64, gfp) {
        k.free_pages(ctx, pfn, PMD_ORDER);
        return ScanResult::CgroupChargeFail;
    }
    let put_new = |k: &mut Kernel, ctx: &mut Ctx| {
        crate::mm::memcontrol::uncharge(k, ctx, memcg, HPAGE_PMD_NR as u64);
        k.free_pages(ctx, pfn, PMD_ORDER);
    };
    // mmap_read_lock, hugepage_vma_revalidate, find_pmd_or_thp_or_none: the allocation may
    // have reclaimed or migrated pages of the range, never removed the VMA (one step).
    k.mms[mm as usize].mmap_lock.read_lock(ctx);
    if let Err(result) = revalidate(k, mm, vma, start) {
        put_new(k, ctx);
        return result;
    }
    if unmapped > 0 {
        for index in start..start + HPAGE_PMD_NR {
            if !k.mms[mm as usize].vma(vma).ptes[index as usize].is_swap() {
                continue;
            }
            if let Err(e) = swapin_pte(k, ctx, mm, vma, index) {
                put_new(k, ctx);
                if e == MmError::OomKilled {
                    // The swap-in's allocation OOM-killed the process and its exit unmapped
                    // the range: hugepage_vma_revalidate fails (SCAN_ANY_PROCESS).
                    return revalidate(k, mm, vma, start)
                        .err()
                        .unwrap_or(ScanResult::Fail);
                }
                return ScanResult::Fail;
            }
        }
    }
    k.mms[mm as usize].mmap_lock.write_lock(ctx);
    ctx.spend(CpuCost::CollapseHugePage, k.cost.khugepaged_collapse_ns);
    let arch = k.cfg.tlb;
    arch.collapse_flush(k, ctx, mm);
    tlb_remove_table_sync_one(k, ctx);
    // The isolated sources are freed as their last PTE goes, below.
    if let Err((result, isolated)) = isolate(k, ctx, mm, vma, start) {
        // release_pte_pages: back on the LRU.
        for head in isolated {
            let cg = k.folios.memcg(head as usize) as usize;
            let nid = k.nodes.nid(head);
            k.memcgs[cg].lruvec_mut(nid).add_folio(&mut k.folios, head);
        }
        k.mms[mm as usize].mmap_lock.write_unlock(ctx);
        put_new(k, ctx);
        return result;
    }
    copy_and_free_sources(k, ctx, mm, vma, start);
    map_pmd(k, ctx, mm, vma, start, pfn, memcg);
    k.mms[mm as usize].mmap_lock.write_unlock(ctx);
    ScanResult::Succeed
}

/// hugepage_vma_revalidate + check_pmd_state for a range still to be collapsed.
fn revalidate(k: &Kernel, mm: u32, vma: u32, start: u32) -> Result<(), ScanResult> {
    let m = &k.mms[mm as usize];
    if m.mm_users == 0 {
        return Err(ScanResult::VmaCheck);
    }
    let Some(v) = m.vmas.get(vma as usize).and_then(|v| v.as_ref()) else {
        return Err(ScanResult::VmaCheck);
    };
    if !vma_allowable_pmd(&k.cfg, v) {
        return Err(ScanResult::VmaCheck);
    }
    let ptes = &v.ptes[start as usize..(start + HPAGE_PMD_NR) as usize];
    if ptes.iter().all(|p| p.is_none()) {
        return Err(ScanResult::PmdNone);
    }
    if ptes[0].is_present()
        && k.folios
            .test(k.folios.head_of(ptes[0].pfn()), flags::PMD_MAPPED)
    {
        return Err(ScanResult::PmdMapped);
    }
    Ok(())
}

/// tlb_remove_table_sync_one: with MMU_GATHER_RCU_TABLE_FREE (x86, arm64) an IPI to every
/// other CPU, waited for, so that no GUP-fast walker still sees the old page table. Costed as
/// a shootdown's IPI round (hw/ipi.rs: by the number and spread of the other CPUs) without
/// the flushes. Each other CPU books the interrupt's entry and exit to whatever it runs next
/// (`Ipi::receive_ns`: tlb_remove_table_smp_sync itself does nothing; on this VM the
/// delivery's exits, as a bare IPI measured there costs its receiver what a shootdown does).
fn tlb_remove_table_sync_one(k: &mut Kernel, ctx: &mut Ctx) {
    let ncpus = k.nr_cpus();
    let others = ncpus as u64 - 1;
    let receive_ns = k.ipi.receive_ns(&k.cost);
    if receive_ns > 0 {
        for (cpu, c) in k.percpu.iter_mut().enumerate() {
            if cpu != ctx.cpu {
                c.irq_ns += receive_ns;
            }
        }
    }
    let farthest = crate::hw::ipi::farthest(
        k.topology.as_ref(),
        ctx.cpu,
        (0..ncpus).filter(|&c| c != ctx.cpu),
    );
    let ns = k.ipi.send_ns(&k.cost, others, farthest);
    if ns > 0 {
        charge(ctx, TlbCost::Ipi, ns);
    }
}

/// __collapse_huge_page_isolate: recheck the PTEs and take the source folios off the LRU. On
/// failure, returns it and the folios isolated so far.
fn isolate(
    k: &mut Kernel,
    ctx: &mut Ctx,
    mm: u32,
    vma: u32,
    start: u32,
) -> Result<(), (ScanResult, Vec<u32>)> {
    // max_ptes_shared never trips: without fork no folio is mapped by another mm.
    let max_none = k.khugepaged.max_ptes_none;
    let mut isolated: Vec<u32> = Vec::new();
    let (mut none_or_zero, mut referenced) = (0u32, 0u32);
    let mut result = ScanResult::Succeed;
    let mut examined = 0u64;
    for index in start..start + HPAGE_PMD_NR {
        examined += 1;
        let pte = k.mms[mm as usize].vma(vma).ptes[index as usize];
        if pte.is_none() {
            none_or_zero += 1;
            if none_or_zero > max_none {
                k.vmstat.count(VmEvent::ThpScanExceedNonePte, 1);
                result = ScanResult::ExceedNonePte;
                break;
            }
            continue;
        }
        if !pte.is_present() {
            result = ScanResult::PteNonPresent;
            break;
        }
        let head = k.folios.head_of(pte.pfn());
        // A large source folio is isolated once (the kernel's compound_pagelist).
        let seen = isolated.last() == Some(&head) || isolated.contains(&head);
        if !seen {
            if k.folios.test(head, flags::WRITEBACK) {
                result = ScanResult::PageCount;
                break;
            }
            if !k.folios.test(head, flags::LRU) {
                result = ScanResult::PageLru;
                break;
            }
            // folio_isolate_lru
            let cg = k.folios.memcg(head as usize) as usize;
            let lruvec = k.memcgs[cg].lruvec_mut(k.nodes.nid(head));
            lruvec.del_folio(&mut k.folios, head);
            lruvec.lru_lock.hold(ctx, k.cost.lru_move_ns);
            isolated.push(head);
        }
        if k.folios.test(head, flags::YOUNG | flags::REFERENCED) {
            referenced += 1;
        }
    }
    ctx.spend(
        CpuCost::KhugepagedScan,
        k.cost.khugepaged_scan_pte_ns * examined,
    );
    if result == ScanResult::Succeed && referenced == 0 {
        result = ScanResult::LackReferencedPage;
    }
    if result == ScanResult::Succeed {
        Ok(())
    } else {
        Err((result, isolated))
    }
}

/// __collapse_huge_page_copy and __collapse_huge_page_copy_succeeded: copy or clear every page
/// of the range into the new folio, clear the old PTEs and free the sources.
fn copy_and_free_sources(k: &mut Kernel, ctx: &mut Ctx, mm: u32, vma: u32, start: u32) {
    let ptes = &k.mms[mm as usize].vma(vma).ptes[start as usize..(start + HPAGE_PMD_NR) as usize];
    let present = ptes.iter().filter(|p| p.is_present()).count() as u64;
    let none = HPAGE_PMD_NR as u64 - present;
    k.membw.transfer(
        ctx,
        Stream::CopyPage,
        (2 * present * PAGE_SIZE) as f64,
        k.cost.copy_page_ns * present,
    );
    k.membw.transfer(
        ctx,
        Stream::ClearPage,
        (none * PAGE_SIZE) as f64,
        k.cost.clear_page_ns * none,
    );
    for index in start..start + HPAGE_PMD_NR {
        let pte = k.mms[mm as usize].vma(vma).ptes[index as usize];
        if !pte.is_present() {
            continue;
        }
        let head = k.folios.head_of(pte.pfn());
        k.mms[mm as usize].vma_mut(vma).ptes[index as usize] = Pte::NONE;
        k.mms[mm as usize].rss_anon -= 1;
        *k.folios.mapcount_mut(head as usize) -= 1;
        ctx.spend(CpuCost::CollapseHugePage, k.cost.zap_pte_ns);
        // free_swap_cache + folio_putback_lru (__collapse_huge_page_copy_succeeded): isolated,
        // so off the LRU; one the swap cache keeps (a PTE elsewhere still refers to a slot of
        // it) goes back on the LRU.
        if k.folios.mapcount(head as usize) == 0 && !release_unmapped_folio(k, ctx, head) {
            let cg = k.folios.memcg(head as usize) as usize;
            let nid = k.nodes.nid(head);
            k.memcgs[cg].lruvec_mut(nid).add_folio(&mut k.folios, head);
        }
    }
}

/// map_anon_folio_pmd_nopf for the new folio at `pfn`: one PMD over the range (its 512 PTE
/// slots in the model), rmap, LRU; MM_ANONPAGES counts the 512 pages.
fn map_pmd(k: &mut Kernel, ctx: &mut Ctx, mm: u32, vma: u32, start: u32, pfn: u32, memcg: u16) {
    k.folios.init(pfn, PMD_ORDER, memcg, (mm, vma, start));
    k.folios
        .set(pfn, flags::DIRTY | flags::YOUNG | flags::PMD_MAPPED);
    k.folios.set_mapcount(pfn as usize, HPAGE_PMD_NR as u16);
    let m = &mut k.mms[mm as usize];
    for (i, pte) in m.vma_mut(vma).ptes[start as usize..(start + HPAGE_PMD_NR) as usize]
        .iter_mut()
        .enumerate()
    {
        *pte = Pte::present(pfn + i as u32);
    }
    m.rss_anon += HPAGE_PMD_NR as u64;
    k.folio_add_lru(ctx, pfn);
}
