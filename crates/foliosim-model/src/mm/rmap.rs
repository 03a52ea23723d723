//! Reverse mapping: find and clear the PTEs that map a folio (mm/rmap.c try_to_unmap_one for an
//! anonymous folio in the swap cache: each PTE becomes a swap PTE holding one slot reference).

use super::folio::flags;
use super::huge_memory::split_huge_pmd;
use super::mmap::Pte;
use super::tlb::TlbUnmapBatch;
use super::Kernel;
use crate::cpu_cost::CpuCost;
use crate::engine::Ctx;

/// try_to_unmap(folio, TTU_BATCH_FLUSH [| TTU_SPLIT_HUGE_PMD]): replace every PTE mapping the
/// folio with its swap entry and queue the TLB flush.
pub fn try_to_unmap(k: &mut Kernel, ctx: &mut Ctx, pfn: u32, tlb: &mut TlbUnmapBatch) {
    let f = &mut k.folios;
    let (mm, vma, index) = f.owner(pfn as usize);
    let nr = f.nr_pages(pfn);
    if f.test(pfn, flags::PMD_MAPPED) {
        // TTU_SPLIT_HUGE_PMD: the PMD mapping is split to PTEs first.
        split_huge_pmd(k, ctx, mm, pfn);
    }
    let f = &mut k.folios;
    let ptes = &mut k.mms[mm as usize].vma_mut(vma).ptes;
    let mut unmapped = 0u32;
    for i in 0..nr {
        let slot = &mut ptes[(index + i) as usize];
        if slot.is_present() && slot.pfn() == pfn + i {
            let entry = f.page_swap_entry(pfn, i);
            *slot = Pte::swap(entry);
            k.swap.swap_duplicate(entry);
            unmapped += 1;
        }
    }
    let mapcount = f.mapcount_mut(pfn as usize);
    assert_eq!(
        unmapped as u16, *mapcount,
        "folio {pfn}: mapcount disagrees with its PTEs"
    );
    *mapcount = 0;
    let mm_struct = &mut k.mms[mm as usize];
    super::access::pte_cleared(mm_struct.vma_mut(vma), index, nr);
    mm_struct.rss_anon -= unmapped as u64;
    mm_struct.swap_ents += unmapped as u64;
    ctx.spend(CpuCost::TryToUnmap, k.cost.pte_unmap_ns * unmapped as u64);
    let (order, dirty) = (f.order[pfn as usize] as u32, f.test(pfn, flags::DIRTY));
    tlb.add(k, ctx, mm, order, unmapped, dirty);
}
