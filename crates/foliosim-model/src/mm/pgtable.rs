//! Page-table pages (mm/memory.c __pte_alloc / __pmd_alloc / __pud_alloc, mm/pgtable-generic.c,
//! arch/x86/mm/pgtable.c pgd_alloc) when kernel memory is modelled (mm/kmem.rs).
//!
//! x86-64 with 4-level paging: a PTE page maps 2 MiB, a PMD page 1 GiB, a PUD page 512 GiB, and
//! each mm has one PGD page (order 0: CONFIG_MITIGATION_PAGE_TABLE_ISOLATION off). A fault that
//! reaches a 2 MiB of address space with no PTE page allocates one (and the PMD, PUD and PGD
//! above it when missing); a PMD-mapped THP fault allocates its PTE page too, deposited for a
//! later split (pgtable_trans_huge_deposit), so either way a touched 2 MiB costs one PTE page.
//! All GFP_PGTABLE_USER: unmovable. A whole VMA's unmap frees its tables (free_pgtables); a
//! partial zap frees none, as the kernel frees only tables wholly outside every VMA.
//!
//! Simplification: the model's VMAs have no addresses; each is taken to start at its own
//! 1 GiB boundary, so VMAs never share a PTE or PMD page. Anonymous mappings of 2 MiB or more
//! are 2 MiB aligned on 6.18 (so their PTE pages are as counted); a small VMA that the kernel
//! would pack beside another costs here a PTE and a PMD page of its own (an overcount of at
//! most two pages per VMA). The mm's PUD and PGD come with its first table.

use super::folio::NIL;
use super::kmem::{alloc_kernel_pages, GFP_KERNEL_ACCOUNT};
use super::{Kernel, MmError};
use crate::engine::Ctx;

/// Pages a PTE page maps (PTRS_PER_PTE), and a PMD page (PTRS_PER_PMD x PTRS_PER_PTE).
const PTE_SPAN_SHIFT: u32 = 9;
const PMD_SPAN_SHIFT: u32 = 18;

/// One VMA's PTE pages (by 2 MiB of the VMA) and PMD pages (by 1 GiB); NIL where none.
#[derive(Debug, Clone, Default)]
pub struct VmaTables {
    pub pte: Vec<u32>,
    pub pmd: Vec<u32>,
}

/// One page-table page: GFP_PGTABLE_USER, order 0.
fn alloc_table(k: &mut Kernel, ctx: &mut Ctx) -> Result<u32, MmError> {
    let pfn = alloc_kernel_pages(k, ctx, GFP_KERNEL_ACCOUNT, 0)?;
    k.kmem.nr_page_table_pages += 1;
    Ok(pfn)
}

/// The tables a fault at page `index` of `vma` walks through, allocated where missing
/// (pgd_alloc at the mm's first, then __pud_alloc, __pmd_alloc, __pte_alloc).
pub fn pte_alloc(
    k: &mut Kernel,
    ctx: &mut Ctx,
    mm: u32,
    vma: u32,
    index: u32,
) -> Result<(), MmError> {
    let (pte_i, pmd_i) = (
        (index >> PTE_SPAN_SHIFT) as usize,
        (index >> PMD_SPAN_SHIFT) as usize,
    );
    if let Some(t) = k.kmem.tables.get(&(mm, vma)) {
        if t.pte.get(pte_i).is_some_and(|&p| p != NIL) {
            return Ok(());
        }
    }
    if !k.kmem.top.contains_key(&mm) {
        let pgd = alloc_table(k, ctx)?;
        k.kmem.top.insert(mm, [pgd, NIL]);
        let pud = alloc_table(k, ctx)?;
        match k.kmem.top.get_mut(&mm) {
            Some(top) => top[1] = pud,
            None => {
                k.kmem.nr_page_table_pages -= 1;
                k.free_pages(ctx, pud, 0);
            }
        }
    }
    let nr_pages = k.mms[mm as usize].vma(vma).nr_pages as usize;
    let t = k.kmem.tables.entry((mm, vma)).or_insert_with(|| VmaTables {
        pte: vec![NIL; nr_pages.div_ceil(1 << PTE_SPAN_SHIFT)],
        pmd: vec![NIL; nr_pages.div_ceil(1 << PMD_SPAN_SHIFT)],
    });
    if t.pmd[pmd_i] == NIL {
        // Stored before the PTE page is asked for: a failure there leaves nothing unowned.
        let pmd = alloc_table(k, ctx)?;
        store(k, ctx, mm, vma, pmd, |t| &mut t.pmd[pmd_i]);
    }
    let pte = alloc_table(k, ctx)?;
    store(k, ctx, mm, vma, pte, |t| &mut t.pte[pte_i]);
    Ok(())
}

/// Put a new table in its slot; if reclaim during its allocation tore the VMA down (an OOM
/// kill of this mm), give it back.
fn store(
    k: &mut Kernel,
    ctx: &mut Ctx,
    mm: u32,
    vma: u32,
    pfn: u32,
    slot: impl Fn(&mut VmaTables) -> &mut u32,
) {
    if let Some(s) = k.kmem.tables.get_mut(&(mm, vma)).map(slot) {
        if *s == NIL {
            *s = pfn;
            return;
        }
    }
    k.kmem.nr_page_table_pages -= 1;
    k.free_pages(ctx, pfn, 0);
}

/// free_pgtables for a VMA being unmapped whole: its PTE and PMD pages.
pub fn free_pgtables(k: &mut Kernel, ctx: &mut Ctx, mm: u32, vma: u32) {
    let Some(t) = k.kmem.tables.remove(&(mm, vma)) else {
        return;
    };
    for p in t.pte.into_iter().chain(t.pmd).filter(|&p| p != NIL) {
        k.kmem.nr_page_table_pages -= 1;
        k.free_pages(ctx, p, 0);
    }
}

/// mm_free_pgd (and the PUD under it) when the mm's last user exits, after every VMA's
/// tables went with free_pgtables.
pub fn free_pgd(k: &mut Kernel, ctx: &mut Ctx, mm: u32) {
    if let Some(pages) = k.kmem.top.remove(&mm) {
        for p in pages.into_iter().filter(|&p| p != NIL) {
            k.kmem.nr_page_table_pages -= 1;
            k.free_pages(ctx, p, 0);
        }
    }
}
