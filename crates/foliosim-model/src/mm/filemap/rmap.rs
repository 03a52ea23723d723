//! Reverse mapping of page-cache folios (mm/rmap.c rmap_walk_file): the PTEs of file page
//! `index` are found through the file's i_mmap, one per VMA that covers the index.
//!
//! The model keeps one accessed bit per folio (flags::YOUNG), not one per PTE: a folio mapped
//! by several VMAs counts as referenced by one of them (folio_referenced returns 0 or 1).

use super::super::folio::flags;
use super::super::mmap::Pte;
use super::super::tlb::TlbUnmapBatch;
use super::super::Kernel;
use super::folio_mark_accessed;
use crate::cpu_cost::CpuCost;
use crate::engine::Ctx;

/// Call `f(k, mm, vma, vma_index)` for each VMA of file `file` covering page `index`.
pub fn for_each_pte(
    k: &mut Kernel,
    file: u32,
    index: u32,
    mut f: impl FnMut(&mut Kernel, u32, u32, u32),
) {
    let mut i = 0;
    while let Some(m) = k.pagecache.files[file as usize]
        .as_ref()
        .and_then(|fl| fl.i_mmap.get(i).copied())
    {
        i += 1;
        if let Some(vi) = m.vma_index(index) {
            f(k, m.mm, m.vma, vi);
        }
    }
}

/// folio_referenced for a page-cache folio: an unmapped one has no PTE to look at (the walk
/// returns at once); a mapped one costs a walk that tests and clears the accessed bit.
pub fn folio_referenced_file(k: &mut Kernel, ctx: &mut Ctx, pfn: u32) -> u32 {
    let f = &mut k.folios;
    if f.mapcount(pfn as usize) == 0 {
        f.clear(pfn, flags::YOUNG);
        return 0;
    }
    ctx.spend(
        CpuCost::FolioReferenced,
        crate::mm::rmap::folio_referenced_ns(k, pfn),
    );
    let f = &mut k.folios;
    let young = f.test(pfn, flags::YOUNG);
    f.clear(pfn, flags::YOUNG);
    young as u32
}

/// try_to_unmap(folio, TTU_BATCH_FLUSH) of a page-cache folio: every PTE mapping it is
/// cleared (the page stays in the cache) and its TLB flush queued.
pub fn try_to_unmap_file(k: &mut Kernel, ctx: &mut Ctx, pfn: u32, tlb: &mut TlbUnmapBatch) {
    let (file, index) = (
        k.folios.owner_mm(pfn as usize),
        k.folios.owner_index(pfn as usize),
    );
    let dirty = k.folios.test(pfn, flags::DIRTY);
    let mut unmapped = 0u16;
    for_each_pte(k, file, index, |k, mm, vma, vi| {
        let m = &mut k.mms[mm as usize];
        let pte = &mut m.vma_mut(vma).ptes[vi as usize];
        if pte.is_present() && pte.pfn() == pfn {
            *pte = Pte::NONE;
            crate::mm::access::pte_cleared(m.vma_mut(vma), vi, 1);
            m.rss_file -= 1;
            unmapped += 1;
            ctx.spend(CpuCost::TryToUnmap, k.cost.pte_unmap_ns);
            tlb.add(k, ctx, mm, 0, 1, dirty);
        }
    });
    let mc = k.folios.mapcount_mut(pfn as usize);
    assert_eq!(
        unmapped, *mc,
        "page-cache folio {pfn}: mapcount disagrees with its PTEs"
    );
    if *mc > 0 {
        k.pagecache.nr_mapped -= 1;
    }
    *mc = 0;
}

/// zap_present_ptes for a page-cache page at `vma_index` of `vma` (munmap, exit,
/// MADV_DONTNEED): the PTE goes, the page stays cached; a young PTE marks the folio accessed.
pub fn zap_file_pte(k: &mut Kernel, ctx: &mut Ctx, mm: u32, vma: u32, vma_index: u32, pfn: u32) {
    let m = &mut k.mms[mm as usize];
    m.vma_mut(vma).ptes[vma_index as usize] = Pte::NONE;
    crate::mm::access::pte_cleared(m.vma_mut(vma), vma_index, 1);
    m.rss_file -= 1;
    ctx.spend(CpuCost::ZapPteRange, k.cost.zap_pte_ns);
    let mc = k.folios.mapcount_mut(pfn as usize);
    *mc -= 1;
    let unmapped = *mc == 0;
    if unmapped {
        k.pagecache.nr_mapped -= 1;
    }
    if k.folios.test(pfn, flags::YOUNG) {
        folio_mark_accessed(k, ctx, pfn);
        if unmapped {
            k.folios.clear(pfn, flags::YOUNG);
        }
    }
}
