//! Who points at a folio's pfns, by the kind of its owner: what migration unmaps, rewires and
//! remaps (try_to_migrate, __folio_migrate_mapping, remove_migration_ptes). The generic part of
//! a move (the copy, the folio's state, the LRU, freeing the source) is in mod.rs.

use crate::cpu_cost::CpuCost;
use crate::engine::Ctx;
use crate::mm::filemap::rmap::for_each_pte;
use crate::mm::folio::flags;
use crate::mm::mmap::Pte;
use crate::mm::tlb::{PteAccess, PteVal, TlbUnmapBatch};
use crate::mm::Kernel;

/// The kinds of folio owner.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum OwnerKind {
    /// An anonymous folio: one owner (mm, vma, page index) whose PTEs, or PMD, map it; in the
    /// swap cache, the cache's slots point at it too.
    Anon,
    /// A page-cache folio (mm/filemap/): its file's slot, and the PTEs of every VMA in the
    /// file's i_mmap that maps its index.
    File,
    /// A shmem folio (mm/shmem.rs): its inode's slots, or the swap cache's once shmem_writeout
    /// moved it there; never mapped (tmpfs is reached by read(2) and write(2) only).
    Shmem,
}

/// The kind of owner of the folio at `pfn`.
pub fn owner_kind(k: &Kernel, pfn: u32) -> OwnerKind {
    if k.folios.test(pfn, flags::FILE) {
        OwnerKind::File
    } else if crate::mm::shmem::is_shmem(k, pfn) {
        OwnerKind::Shmem
    } else {
        OwnerKind::Anon
    }
}

/// try_to_migrate: clear the mappings of `src` (mapped). With `tlb` (TTU_BATCH_FLUSH, async
/// migration) the PTEs' flush is left to the batch; otherwise each is flushed at once
/// (ptep_clear_flush). A PMD mapping is always flushed at once (pmdp_invalidate).
pub fn unmap(k: &mut Kernel, ctx: &mut Ctx, src: u32, tlb: Option<&mut TlbUnmapBatch>) {
    match owner_kind(k, src) {
        OwnerKind::Anon => anon_unmap(k, ctx, src, tlb),
        OwnerKind::File => file_unmap(k, ctx, src, tlb),
        OwnerKind::Shmem => {}
    }
}

/// __folio_migrate_mapping: the owner's mapping (if any) now holds `dst` in place of `src`.
pub fn move_mapping(k: &mut Kernel, ctx: &mut Ctx, src: u32, dst: u32) {
    match owner_kind(k, src) {
        OwnerKind::Anon => anon_move_mapping(k, ctx, src, dst),
        OwnerKind::File => {
            let f = &k.folios;
            let (file, index) = (f.owner_mm(src as usize), f.owner_index(src as usize));
            k.pagecache.file_mut(file).pages[index as usize] = dst;
        }
        OwnerKind::Shmem => {
            shmem_move_mapping(k, src, dst);
            anon_move_mapping(k, ctx, src, dst);
        }
    }
}

/// remove_migration_ptes: the entries that mapped `src` map the same pages of `dst`.
pub fn remap(k: &mut Kernel, ctx: &mut Ctx, src: u32, dst: u32) {
    match owner_kind(k, src) {
        OwnerKind::Anon => anon_remap(k, ctx, src, dst),
        OwnerKind::File => file_remap(k, ctx, src, dst),
        OwnerKind::Shmem => {}
    }
}

/// The shmem half of __folio_migrate_mapping: the inode's slots of a folio in its page cache.
fn shmem_move_mapping(k: &mut Kernel, src: u32, dst: u32) {
    if !crate::mm::shmem::in_page_cache(k, src) {
        return;
    }
    let f = &k.folios;
    let (inode, first, nr) = (
        f.owner_mm(src as usize),
        f.owner_index(src as usize),
        f.nr_pages(src),
    );
    let slots = &mut k.shmem.inode_mut(inode).folios;
    slots[first as usize..(first + nr) as usize].fill(dst);
}

fn anon_unmap(k: &mut Kernel, ctx: &mut Ctx, src: u32, tlb: Option<&mut TlbUnmapBatch>) {
    let f = &k.folios;
    let i = src as usize;
    let (mm, order, mapped) = (f.owner_mm(i), f.order[i] as u32, f.mapcount(i) as u32);
    let (pmd, dirty) = (f.test(src, flags::PMD_MAPPED), f.test(src, flags::DIRTY));
    let entries = if pmd { 1 } else { mapped };
    ctx.spend(CpuCost::MigrateFolio, k.cost.pte_unmap_ns * entries as u64);
    match tlb {
        Some(batch) if !pmd => {
            let access = anon_pte_access(k, src);
            batch.add_classified(k, ctx, mm, order, mapped, PteVal { access, dirty })
        }
        _ => {
            let mut now = TlbUnmapBatch::default();
            now.add(k, ctx, mm, if pmd { 0 } else { order }, entries, dirty);
            now.flush(k, ctx);
            let arch = k.cfg.tlb;
            for _ in 1..entries {
                arch.flush_batch(k, ctx, &[mm], 1);
            }
        }
    }
}

/// How the PTEs mapping anonymous folio `src` may sit in TLBs: inaccessible if every one is
/// a NUMA hinting PTE, read-only if every accessible one is write-protected and clean.
fn anon_pte_access(k: &Kernel, src: u32) -> PteAccess {
    let f = &k.folios;
    let i = src as usize;
    let (mm, vma, index) = f.owner(i);
    let nr = f.nr_pages(src);
    let ptes = &k.mms[mm as usize].vma(vma).ptes[index as usize..(index + nr) as usize];
    let mut access = PteAccess::Inaccessible;
    for (sub, pte) in ptes.iter().enumerate() {
        if !pte.is_present() || pte.pfn() != src + sub as u32 || pte.is_protnone() {
            continue;
        }
        if !(pte.is_wrprotect() && pte.is_clean()) {
            return PteAccess::Writable;
        }
        access = PteAccess::ReadOnlyClean;
    }
    access
}

fn anon_move_mapping(k: &mut Kernel, ctx: &mut Ctx, src: u32, dst: u32) {
    let f = &mut k.folios;
    if !f.test(src, flags::SWAPCACHE) {
        return;
    }
    // The swap cache's slots (the swap address space's xarray) point at the new folio.
    f.set_swap(dst as usize, f.swap(src as usize));
    if let Some(slots) = f.scattered.remove(&src) {
        f.scattered.insert(dst, slots);
    }
    for (run, nr) in k.folios.swap_runs(dst) {
        k.swap.replace_swap_cache(ctx, &k.cost, run, nr, dst);
    }
}

fn anon_remap(k: &mut Kernel, ctx: &mut Ctx, src: u32, dst: u32) {
    let f = &k.folios;
    let i = dst as usize;
    let (mm, vma, index) = f.owner(i);
    let (nr, pmd) = (f.nr_pages(dst), f.test(dst, flags::PMD_MAPPED));
    let promoted_clean = k.cfg.numa_promoted_clean;
    let ptes = &mut k.mms[mm as usize].vma_mut(vma).ptes;
    let mut remapped = 0u32;
    for sub in 0..nr {
        let pte = &mut ptes[(index + sub) as usize];
        if pte.is_present() && pte.pfn() == src + sub {
            // remove_migration_pte: a PROT_NONE PTE made a read migration entry (a read-only
            // PTE now, as clean as the model's parameter says); others keep their bits.
            *pte = if pte.is_protnone() {
                Pte::present_rdonly(dst + sub, promoted_clean || pte.is_clean())
            } else {
                pte.with_pfn(dst + sub)
            };
            remapped += 1;
        }
    }
    debug_assert_eq!(
        remapped,
        k.folios.mapcount(i) as u32,
        "folio {src}: mapcount disagrees with its PTEs"
    );
    ctx.spend(
        CpuCost::MigrateFolio,
        k.cost.pte_unmap_ns * if pmd { 1 } else { remapped as u64 },
    );
}

/// The mms whose PTEs map the page-cache folio at `pfn` (one entry per PTE).
fn file_mappers(k: &mut Kernel, pfn: u32) -> Vec<u32> {
    let f = &k.folios;
    let (file, index) = (f.owner_mm(pfn as usize), f.owner_index(pfn as usize));
    let mut mms = Vec::new();
    for_each_pte(k, file, index, |k, mm, vma, vi| {
        let pte = k.mms[mm as usize].vma(vma).ptes[vi as usize];
        if pte.is_present() && pte.pfn() == pfn {
            mms.push(mm);
        }
    });
    mms
}

/// try_to_migrate of a mapped page-cache folio: each PTE through the file's i_mmap.
fn file_unmap(k: &mut Kernel, ctx: &mut Ctx, src: u32, tlb: Option<&mut TlbUnmapBatch>) {
    let mms = file_mappers(k, src);
    let dirty = k.folios.test(src, flags::DIRTY);
    ctx.spend(
        CpuCost::MigrateFolio,
        k.cost.pte_unmap_ns * mms.len() as u64,
    );
    match tlb {
        Some(batch) => {
            for mm in mms {
                batch.add(k, ctx, mm, 0, 1, dirty);
            }
        }
        None => {
            let mut now = TlbUnmapBatch::default();
            for mm in mms {
                now.add(k, ctx, mm, 0, 1, dirty);
            }
            now.flush(k, ctx);
        }
    }
}

/// remove_migration_ptes for a page-cache folio: the PTEs that mapped `src` map `dst`.
fn file_remap(k: &mut Kernel, ctx: &mut Ctx, src: u32, dst: u32) {
    let f = &k.folios;
    let (file, index) = (f.owner_mm(dst as usize), f.owner_index(dst as usize));
    let mut remapped = 0u64;
    for_each_pte(k, file, index, |k, mm, vma, vi| {
        let pte = &mut k.mms[mm as usize].vma_mut(vma).ptes[vi as usize];
        if pte.is_present() && pte.pfn() == src {
            *pte = Pte::present(dst);
            remapped += 1;
        }
    });
    ctx.spend(CpuCost::MigrateFolio, k.cost.pte_unmap_ns * remapped);
}
