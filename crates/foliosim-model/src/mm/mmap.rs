//! Address spaces: mm_struct, VMAs and their page tables (mm/mmap.c, mm/memory.c's PTEs).
//!
//! A VMA's PTEs are a dense array indexed by page index. VMAs are placed 2 MiB-aligned (as the
//! kernel aligns large anonymous mappings since 6.7), so a page index's alignment is the virtual
//! address's alignment, which is what folio order selection checks. A munmap of part of a VMA
//! leaves the VMA in place with `Pte::HOLE` over the unmapped part (the kernel splits the VMA):
//! nothing maps there again, and no large folio or collapse range may span a hole.

use super::folio::SwapEntry;
use super::khugepaged::khugepaged_exit;
use super::memory::zap_range;
use super::mmap_lock::MmapLock;
use super::{filemap, Kernel};
use crate::content::ContentClass;
use crate::cpu_cost::CpuCost;
use crate::engine::Ctx;

/// A page table entry: none, present (pfn), or a swap entry. A present PTE is writable and
/// as dirty as its folio unless marked: PROT_NONE (a NUMA hinting PTE, pte_protnone: present
/// but inaccessible), write-protected, clean (the hardware dirty bit clear while the folio may
/// be dirty from before: what MIGRC classifies by).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Pte(u64);

// SAFETY: a u64; all zero is Pte::NONE.
unsafe impl bytemuck::Zeroable for Pte {}

const PRESENT: u64 = 1 << 63;
const SWAP: u64 = 1 << 62;
const PROTNONE: u64 = 1 << 60;
const WRPROTECT: u64 = 1 << 59;
const CLEAN: u64 = 1 << 58;

impl Pte {
    pub const NONE: Pte = Pte(0);
    /// No VMA here any more (munmap of part of a VMA): neither none, present nor swap.
    pub const HOLE: Pte = Pte(1 << 61);
    #[inline]
    pub fn present(pfn: u32) -> Pte {
        Pte(PRESENT | pfn as u64)
    }
    #[inline]
    pub fn swap(entry: SwapEntry) -> Pte {
        Pte(SWAP | entry.raw() as u64)
    }
    #[inline]
    pub fn is_none(self) -> bool {
        self.0 == 0
    }
    #[inline]
    pub fn is_hole(self) -> bool {
        self == Pte::HOLE
    }
    #[inline]
    pub fn is_present(self) -> bool {
        self.0 & PRESENT != 0
    }
    #[inline]
    pub fn is_swap(self) -> bool {
        self.0 & SWAP != 0
    }
    /// pte_protnone: a NUMA hinting PTE (change_prot_numa).
    #[inline]
    pub fn is_protnone(self) -> bool {
        self.0 & PROTNONE != 0
    }
    #[inline]
    pub fn with_protnone(self) -> Pte {
        debug_assert!(self.is_present());
        Pte(self.0 | PROTNONE)
    }
    /// The PTE as it was before change_prot_numa (do_numa_page's restore).
    #[inline]
    pub fn without_protnone(self) -> Pte {
        Pte(self.0 & !PROTNONE)
    }
    /// !pte_write.
    #[inline]
    pub fn is_wrprotect(self) -> bool {
        self.0 & WRPROTECT != 0
    }
    /// !pte_dirty (a PTE installed clean and not stored through since).
    #[inline]
    pub fn is_clean(self) -> bool {
        self.0 & CLEAN != 0
    }
    /// A read-only, clean mapping of `pfn` (remove_migration_pte of a read migration entry).
    #[inline]
    pub fn present_rdonly(pfn: u32, clean: bool) -> Pte {
        Pte(PRESENT | WRPROTECT | if clean { CLEAN } else { 0 } | pfn as u64)
    }
    /// The same protection and dirtiness over another pfn (migration's remap).
    #[inline]
    pub fn with_pfn(self, pfn: u32) -> Pte {
        Pte(self.0 & !(u32::MAX as u64) | pfn as u64)
    }
    /// Does this PTE continue a folio_pte_batch run that starts at `first`, `nr` pages on?
    /// The bits the batch ignores (dirty, write) may differ.
    #[inline]
    pub fn same_batch(self, first: Pte, nr: u32) -> bool {
        const IGNORED: u64 = WRPROTECT | CLEAN;
        self.is_present() && self.0 & !IGNORED == (first.0 & !IGNORED) + nr as u64
    }
    /// A store through the PTE needs no fault: present, accessible and writable.
    #[inline]
    pub fn is_plain_for(self, write: bool) -> bool {
        self.is_present() && !self.is_protnone() && !(write && self.is_wrprotect())
    }
    #[inline]
    pub fn pfn(self) -> u32 {
        debug_assert!(self.is_present());
        self.0 as u32
    }
    #[inline]
    pub fn swap_entry(self) -> SwapEntry {
        debug_assert!(self.is_swap());
        SwapEntry::from_raw(self.0 as u32)
    }
}

/// The VMA's THP advice: MADV_HUGEPAGE sets VM_HUGEPAGE, MADV_NOHUGEPAGE sets VM_NOHUGEPAGE.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum ThpAdvice {
    #[default]
    Default,
    Hugepage,
    NoHugepage,
}

pub struct Vma {
    pub nr_pages: u32,
    pub thp: ThpAdvice,
    /// vma->anon_vma is set up (the first fault, vmf_anon_prepare): khugepaged only takes VMAs
    /// that have one.
    pub anon_vma: bool,
    pub ptes: Vec<Pte>,
    /// Its protection (mprotect; mm/mprotect.rs).
    pub prot: super::mprotect::Prot,
    /// The pages of its accessed ranges that an access cannot use as mapped (mm/access.rs).
    pub special: Vec<super::access::SpecialSet>,
    /// vma->swap_readahead_info (mm/swap_readahead.rs).
    pub swap_ra: super::swap_readahead::SwapRaInfo,
}

/// What a file VMA maps (vm_file, vm_pgoff, VM_SHARED).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct VmaFile {
    pub file: u32,
    /// File page mapped at the VMA's first page.
    pub pgoff: u32,
    pub shared: bool,
}

pub struct MmStruct {
    pub vmas: Vec<Option<Vma>>,
    /// Per VMA id: the file it maps, None for anonymous memory (beside `vmas` so a Vma stays
    /// the anonymous mapping it always was).
    pub vma_files: Vec<Option<VmaFile>>,
    pub memcg: u16,
    /// What the task writes into its pages (decides compressed sizes).
    pub content: ContentClass,
    /// current->memcg_nr_pages_over_high: pages charged above memory.high since the task
    /// last returned to user space.
    pub memcg_nr_pages_over_high: u64,
    /// MM_ANONPAGES: present anon PTEs.
    pub rss_anon: u64,
    /// MM_SWAPENTS: swap PTEs.
    pub swap_ents: u64,
    /// MM_FILEPAGES: present PTEs mapping page-cache pages.
    pub rss_file: u64,
    /// Per CPU: when this mm last stopped running there (None: never ran there).
    pub cpu_last_ran_ns: Vec<Option<u64>>,
    /// mm_users: the live tasks (threads) using this mm; the last one's exit unmaps it all.
    /// Set by the scheduler from the tasks it runs; 0 once the mm has exited.
    pub mm_users: u32,
    /// MMF_VM_HUGEPAGE: registered with khugepaged (has an mm slot).
    pub khugepaged_registered: bool,
    /// mmap_lock: faults read, khugepaged's collapse writes (mm/mmap_lock.rs).
    pub mmap_lock: MmapLock,
    /// signal->oom_score_adj of the process: -1000 (OOM_SCORE_ADJ_MIN: never killed) ..= 1000.
    pub oom_score_adj: i16,
    /// Chosen by the OOM killer (tsk_is_oom_victim): SIGKILLed, its memory freed or about to be.
    pub oom_victim: bool,
    /// mm->numa_next_scan (0: the first scan is not scheduled yet).
    pub numa_next_scan_ns: u64,
    /// mm->numa_scan_offset: (vma, page index) where the next NUMA scan starts.
    pub numa_scan_offset: (u32, u32),
    /// mm->numa_scan_seq: NUMA scan passes over the address space completed.
    pub numa_scan_seq: u64,
    /// mm->tlb_flush_batched pending != flushed: reclaim or migration batched an unmap of this
    /// mm since a page-table walker last flushed for it (tlb::flush_tlb_batched_pending).
    pub tlb_flush_batched: bool,
}

impl MmStruct {
    pub fn new(memcg: u16, content: ContentClass, ncpus: usize) -> MmStruct {
        MmStruct {
            vmas: Vec::new(),
            vma_files: Vec::new(),
            memcg,
            content,
            memcg_nr_pages_over_high: 0,
            rss_anon: 0,
            swap_ents: 0,
            rss_file: 0,
            cpu_last_ran_ns: vec![None; ncpus],
            mm_users: 1,
            khugepaged_registered: false,
            mmap_lock: MmapLock::default(),
            oom_score_adj: 0,
            oom_victim: false,
            numa_next_scan_ns: 0,
            numa_scan_offset: (0, 0),
            numa_scan_seq: 0,
            tlb_flush_batched: false,
        }
    }

    /// Is `cpu` still in this mm's mm_cpumask at `now_ns`?
    pub fn cpu_recently_active(&self, cpu: usize, now_ns: u64, window_ns: u64) -> bool {
        self.cpu_last_ran_ns[cpu].is_some_and(|t| now_ns.saturating_sub(t) < window_ns)
    }

    /// mmap(MAP_ANONYMOUS|MAP_PRIVATE) of `nr_pages` as VMA number `vma_id`.
    pub fn mmap(&mut self, vma_id: u32, nr_pages: u32, thp: ThpAdvice) {
        self.try_mmap(vma_id, nr_pages, thp)
            .unwrap_or_else(|e| panic!("{e}"))
    }

    /// [`MmStruct::mmap`], or an error when the host refuses the memory of its PTEs.
    pub fn try_mmap(
        &mut self,
        vma_id: u32,
        nr_pages: u32,
        thp: ThpAdvice,
    ) -> Result<(), crate::footprint::AllocFailed> {
        // Zero-filled without a write (Pte::NONE is 0): the host zeroes what is touched.
        let ptes = crate::footprint::try_zeroed_vec(nr_pages as usize, "page table entries")?;
        let i = vma_id as usize;
        if self.vmas.len() <= i {
            self.vmas.resize_with(i + 1, || None);
        }
        assert!(self.vmas[i].is_none(), "mmap: vma {vma_id} already mapped");
        self.vmas[i] = Some(Vma {
            nr_pages,
            thp,
            anon_vma: false,
            ptes,
            prot: Default::default(),
            special: Vec::new(),
            swap_ra: Default::default(),
        });
        Ok(())
    }

    /// The file `vma_id` maps, if it is a file VMA.
    #[inline]
    pub fn vma_file(&self, vma_id: u32) -> Option<VmaFile> {
        self.vma_files.get(vma_id as usize).copied().flatten()
    }

    /// mmap of `nr_pages` of a file as VMA number `vma_id`.
    pub fn mmap_file(&mut self, vma_id: u32, nr_pages: u32, file: VmaFile) {
        self.mmap(vma_id, nr_pages, ThpAdvice::Default);
        let i = vma_id as usize;
        if self.vma_files.len() <= i {
            self.vma_files.resize(i + 1, None);
        }
        self.vma_files[i] = Some(file);
    }

    /// Is VMA `vma_id` mapped (not yet unmapped, or never mapped)?
    pub fn is_mapped(&self, vma_id: u32) -> bool {
        matches!(self.vmas.get(vma_id as usize), Some(Some(_)))
    }

    #[inline]
    pub fn vma(&self, vma_id: u32) -> &Vma {
        self.vmas[vma_id as usize]
            .as_ref()
            .expect("access to an unmapped vma")
    }

    #[inline]
    pub fn vma_mut(&mut self, vma_id: u32) -> &mut Vma {
        self.vmas[vma_id as usize]
            .as_mut()
            .expect("access to an unmapped vma")
    }
}

/// munmap(2) of a whole VMA: zap its pages with the mmap_lock held for writing, flush what was
/// mapped from the TLBs (tlb_finish_mmu), drop its file's reverse mapping, remove it. Nothing
/// happens for a VMA that is not mapped.
pub fn vm_munmap(k: &mut Kernel, ctx: &mut Ctx, mm: u32, vma: u32) {
    let span = unmap_vma(k, ctx, mm, vma);
    if span > 0 {
        let arch = k.cfg.tlb;
        arch.flush_range(k, ctx, mm, span);
    }
}

/// vm_munmap without its TLB flush; returns the span of present PTEs it cleared.
fn unmap_vma(k: &mut Kernel, ctx: &mut Ctx, mm: u32, vma: u32) -> u64 {
    let Some(nr) = k.mms[mm as usize]
        .vmas
        .get(vma as usize)
        .and_then(|v| v.as_ref())
        .map(|v| v.nr_pages)
    else {
        return 0;
    };
    ctx.spend(CpuCost::Syscall, k.cost.syscall_ns);
    k.mms[mm as usize].mmap_lock.write_lock(ctx);
    let span = zap_range(k, ctx, mm, vma, 0, nr);
    filemap::unlink_file_vma(k, mm, vma);
    if k.kmem.enabled {
        super::pgtable::free_pgtables(k, ctx, mm, vma);
    }
    let m = &mut k.mms[mm as usize];
    m.vmas[vma as usize] = None;
    m.mmap_lock.write_unlock(ctx);
    span
}

/// exit_mmap: the last user of `mm` is gone (exit, or an OOM kill): it leaves khugepaged
/// and every VMA is unmapped, with one full TLB flush at the end (tlb_gather_mmu_fullmm);
/// mm_users drops to 0.
pub fn exit_mmap(k: &mut Kernel, ctx: &mut Ctx, mm: u32) {
    k.mms[mm as usize].mm_users = 0;
    khugepaged_exit(k, mm);
    let mut mapped = false;
    for vma in 0..k.mms[mm as usize].vmas.len() as u32 {
        mapped |= unmap_vma(k, ctx, mm, vma) > 0;
    }
    if mapped {
        let arch = k.cfg.tlb;
        arch.flush_range(k, ctx, mm, u64::MAX);
    }
    if k.kmem.enabled {
        super::pgtable::free_pgd(k, ctx, mm);
    }
}

#[cfg(test)]
mod tests {
    use super::Pte;

    #[test]
    fn a_pte_batch_ignores_dirty_and_write_but_not_pfn_or_numa_hinting() {
        let first = Pte::present(100);
        assert!(Pte::present(101).same_batch(first, 1));
        assert!(Pte::present_rdonly(102, true).same_batch(first, 2));
        assert!(!Pte::present(103).same_batch(first, 2), "not the next page");
        assert!(!Pte::present(101).with_protnone().same_batch(first, 1));
        assert!(!Pte::NONE.same_batch(first, 1));
    }
}
