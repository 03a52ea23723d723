//! Reverse mapping: find and clear the PTEs that map a folio (mm/rmap.c try_to_unmap_one for an
//! anonymous folio in the swap cache: each PTE becomes a swap PTE holding one slot reference).

use super::folio::flags;
use super::huge_memory::split_huge_pmd;
use super::mmap::Pte;
use super::tlb::TlbUnmapBatch;
use super::Kernel;
use crate::cpu_cost::CpuCost;
use crate::engine::Ctx;

/// CPU time of folio_referenced on the folio at `pfn`: the walk, plus a step per further PTE
/// of a PTE-mapped large folio (folio_referenced_one's page_vma_mapped_walk visits each; a
/// PMD mapping is one entry). Further mappings of a shared folio are not priced apart.
pub fn folio_referenced_ns(k: &Kernel, pfn: u32) -> u64 {
    let f = &k.folios;
    let nr = f.nr_pages(pfn);
    let ptes = if nr == 1 || f.test(pfn, flags::PMD_MAPPED) {
        1
    } else {
        (f.mapcount(pfn as usize) as u32).min(nr)
    };
    k.cost.folio_referenced_ns + k.cost.folio_referenced_pte_ns * ptes.saturating_sub(1) as u64
}

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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::scenario::Scenario;

    #[test]
    fn folio_referenced_steps_over_each_pte_of_a_pte_mapped_large_folio() {
        let text = "[machine]\nmemory = \"64M\"\n[[workload]]\nkind = \"usemem\"\nnproc = 1\nsize = \"1M\"\n";
        let mut k = Kernel::new(&Scenario::from_toml_str(text).unwrap());
        let (walk, step) = (k.cost.folio_referenced_ns, k.cost.folio_referenced_pte_ns);
        k.folios.init(1024, 0, 0, (0, 0, 0));
        k.folios.set_mapcount(1024, 1);
        assert_eq!(folio_referenced_ns(&k, 1024), walk);
        // 64K, all 16 PTEs mapped: the walk and 15 more steps; 3 mapped: 2 more.
        k.folios.init(2048, 4, 0, (0, 0, 0));
        k.folios.set_mapcount(2048, 16);
        assert_eq!(folio_referenced_ns(&k, 2048), walk + 15 * step);
        k.folios.set_mapcount(2048, 3);
        assert_eq!(folio_referenced_ns(&k, 2048), walk + 2 * step);
        // PMD-mapped: one entry.
        k.folios.init(4096, 9, 0, (0, 0, 0));
        k.folios.set_mapcount(4096, 512);
        k.folios.set(4096, flags::PMD_MAPPED);
        assert_eq!(folio_referenced_ns(&k, 4096), walk);
    }
}
