//! TLB invalidation after unmapping. The generic part is the kernel's: the deferred batch of
//! try_to_unmap (struct tlbflush_unmap_batch, mm/rmap.c) and when it is flushed. What a flush
//! costs is the architecture's, one implementation per mechanism, chosen by `machine.tlb`:
//! - `x86`: IPIs to every other CPU in mm_cpumask (flush_tlb_multi);
//! - `arm64`: broadcast TLBI instructions completed by a DSB, and contpte blocks to unfold.

mod arm64;
mod x86;

use super::Kernel;
use crate::cpu_cost::CpuCost;
use crate::engine::Ctx;
use crate::scenario::TlbKind;

/// The arch hooks the mm model calls where the kernel flushes TLBs or changes PTEs that the
/// arch maps specially.
pub trait TlbArch: Sync {
    /// try_to_unmap_one cleared the `nr` PTEs of a folio of `order`, mapped as at fault (a
    /// PMD-mapped THP was just split to PTEs), one PTE at a time, deferring the flush
    /// (set_tlb_ubc_flush_pending -> arch_tlbbatch_add_pending).
    fn unmap_folio_ptes(&self, k: &mut Kernel, ctx: &mut Ctx, order: u32, nr: u32);

    /// try_to_unmap_flush: complete the invalidations pending for `mms` (`nr_ptes` PTEs).
    fn flush_batch(&self, k: &mut Kernel, ctx: &mut Ctx, mms: &[u32], nr_ptes: u32);

    /// __split_huge_pmd: a PMD mapping of `mm` becomes a page table (pmdp_invalidate flushes it).
    fn split_pmd(&self, k: &mut Kernel, ctx: &mut Ctx, mm: u32);

    /// The TLB work of split_folio for a mapped folio of `order` in `mm`: unmap_folio (PTEs to
    /// migration entries, TTU_BATCH_FLUSH, try_to_unmap_flush) and remap_page.
    fn split_folio(&self, k: &mut Kernel, ctx: &mut Ctx, mm: u32, order: u32, pmd_mapped: bool);

    /// folio_referenced found the folio young and cleared its access flags
    /// (ptep_clear_flush_young per PTE, or pmdp_clear_flush_young for a PMD mapping): the TLB
    /// work of that, for a mapped folio of `order`.
    fn clear_flush_young(&self, k: &mut Kernel, ctx: &mut Ctx, order: u32, pmd_mapped: bool);

    /// pmdp_collapse_flush: khugepaged cleared the PMD over a page table of `mm` and flushes the
    /// 2 MiB range (flush_tlb_range) before copying its pages.
    fn collapse_flush(&self, k: &mut Kernel, ctx: &mut Ctx, mm: u32);

    /// flush_tlb_mm_range after munmap, mprotect or MADV_DONTNEED changed `nr_pages` present
    /// PTEs of `mm` (tlb_finish_mmu, change_protection).
    fn flush_range(&self, k: &mut Kernel, ctx: &mut Ctx, mm: u32, nr_pages: u64);

    /// arch_tlbbatch_should_defer: may try_to_unmap leave the flush of `mm`'s PTEs to the
    /// batch? Otherwise it flushes at once and leaves nothing pending in the mm.
    fn should_defer_flush(&self, _k: &Kernel, _ctx: &Ctx, _mm: u32) -> bool {
        true
    }

    /// arch_flush_tlb_batched_pending: a page-table walker found `mm` with a batched unmap it
    /// has not flushed for (mm->tlb_flush_batched).
    fn flush_batched_pending(&self, k: &mut Kernel, ctx: &mut Ctx, mm: u32) {
        self.flush_range(k, ctx, mm, u64::MAX);
    }

    /// Does making present PTEs writable need a flush? x86: any change of the RW bit does
    /// (pte_flags_need_flush, arch/x86/include/asm/tlbflush.h); arm64 takes a spurious fault
    /// on a stale read-only entry instead.
    fn flush_on_write_grant(&self) -> bool {
        true
    }
}

/// TLB work charged outside the shared broadcast channel, by its CPU-time bucket.
#[derive(Clone, Copy)]
pub enum TlbCost {
    LocalFlush,
    Ipi,
    TlbiIssue,
    ContptePtes,
}

/// Spend `ns` of TLB work of kind `what`.
#[inline]
pub(crate) fn charge(ctx: &mut Ctx, what: TlbCost, ns: u64) {
    let bucket = match what {
        TlbCost::LocalFlush => CpuCost::TlbLocalFlush,
        TlbCost::Ipi => CpuCost::TlbIpi,
        TlbCost::TlbiIssue => CpuCost::TlbiIssue,
        TlbCost::ContptePtes => CpuCost::ContptePtes,
    };
    ctx.spend(bucket, ns);
}

pub fn arch(kind: TlbKind) -> &'static dyn TlbArch {
    match kind {
        TlbKind::X86Ipi => &x86::X86Ipi,
        TlbKind::Arm64Tlbi => &arm64::Arm64Tlbi,
    }
}

/// What a cleared PTE leaves in the TLBs, as set_tlb_ubc_flush_pending classifies it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PteAccess {
    /// Not accessible (a NUMA hinting PROT_NONE PTE): no CPU can cache it (4d4b6d66db, 6.4).
    Inaccessible,
    /// Read-only and clean: a stale entry can only be read through (MIGRC's tlb_ubc_ro).
    ReadOnlyClean,
    /// Writable or dirty.
    Writable,
}

/// What set_tlb_ubc_flush_pending reads of the cleared PTEs' value (its `pteval`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct PteVal {
    pub access: PteAccess,
    /// Dirty: the flush must precede writing the page out.
    pub dirty: bool,
}

/// Pending flush of unmapped PTEs (TTU_BATCH_FLUSH).
#[derive(Default)]
pub struct TlbUnmapBatch {
    mms: Vec<u32>,
    /// The mms of read-only clean PTEs (tlb_ubc_ro), folded into `mms` by any flush.
    pub ro_mms: Vec<u32>,
    /// PTE classes added so far, for the caller's per-folio MIGRC eligibility.
    pub adds_writable: u32,
    pub adds_read_only: u32,
    nr_ptes: u32,
    /// A dirty (writable) PTE was cleared: the flush must precede writing the page out.
    writable: bool,
    /// Flush each folio's PTEs as they are cleared (no batching).
    immediate: bool,
}

impl TlbUnmapBatch {
    /// A batch for reclaim as the release has it: `batched` from 4.3 (TTU_BATCH_FLUSH), before
    /// which try_to_unmap flushed every folio's PTEs at once (KernelConfig::tlb_batched_unmap).
    pub fn new(batched: bool) -> TlbUnmapBatch {
        TlbUnmapBatch {
            immediate: !batched,
            ..Default::default()
        }
    }

    /// set_tlb_ubc_flush_pending for PTEs classified by their access (migration's unmap):
    /// inaccessible ones need no flush from 6.4 on (4d4b6d66db), read-only clean ones go to the
    /// read-only batch.
    pub fn add_classified(
        &mut self,
        k: &mut Kernel,
        ctx: &mut Ctx,
        mm: u32,
        order: u32,
        nr: u32,
        pteval: PteVal,
    ) {
        match pteval.access {
            PteAccess::Inaccessible if k.cfg.tlb_skip_inaccessible => {}
            PteAccess::ReadOnlyClean if !self.immediate => {
                let arch = k.cfg.tlb;
                arch.unmap_folio_ptes(k, ctx, order, nr);
                set_flush_batched(k, ctx, mm);
                if !self.ro_mms.contains(&mm) {
                    self.ro_mms.push(mm);
                }
                self.nr_ptes += nr;
                self.adds_read_only += 1;
            }
            _ => {
                self.adds_writable += 1;
                self.add(k, ctx, mm, order, nr, pteval.dirty);
            }
        }
    }

    /// set_tlb_ubc_flush_pending for the `nr` PTEs of a folio of `order` in `mm`.
    pub fn add(
        &mut self,
        k: &mut Kernel,
        ctx: &mut Ctx,
        mm: u32,
        order: u32,
        nr: u32,
        writable: bool,
    ) {
        let arch = k.cfg.tlb;
        arch.unmap_folio_ptes(k, ctx, order, nr);
        if !self.immediate {
            set_flush_batched(k, ctx, mm);
        }
        if !self.mms.contains(&mm) {
            self.mms.push(mm);
        }
        self.nr_ptes += nr;
        self.writable |= writable;
        if self.immediate {
            self.flush(k, ctx);
        }
    }

    /// try_to_unmap_flush_dirty: flush only if a writable PTE was cleared.
    pub fn flush_dirty(&mut self, k: &mut Kernel, ctx: &mut Ctx) {
        if self.writable {
            self.flush(k, ctx);
        }
    }

    /// try_to_unmap_flush (the read-only batch folded in first). The flushed mms' owed
    /// deferred flushes are paid off too (MIGRC's rmap_flush_end).
    pub fn flush(&mut self, k: &mut Kernel, ctx: &mut Ctx) {
        for mm in std::mem::take(&mut self.ro_mms) {
            if !self.mms.contains(&mm) {
                self.mms.push(mm);
            }
        }
        if !self.mms.is_empty() {
            let arch = k.cfg.tlb;
            let start_ns = ctx.now_ns;
            arch.flush_batch(k, ctx, &self.mms, self.nr_ptes);
            crate::engine::trace::span("TLB flush", "try_to_unmap_flush", start_ns, ctx.now_ns);
            k.migrc.flushed(&self.mms);
        }
        self.mms.clear();
        self.nr_ptes = 0;
        self.writable = false;
    }
}

/// set_tlb_ubc_flush_pending's note in the mm (mm->tlb_flush_batched): a flush of `mm` was
/// batched, so a later page-table walker of it must flush before it relies on the PTEs.
fn set_flush_batched(k: &mut Kernel, ctx: &Ctx, mm: u32) {
    if k.cfg.tlb.should_defer_flush(k, ctx, mm) {
        k.mms[mm as usize].tlb_flush_batched = true;
    }
}

/// flush_tlb_batched_pending (mm/rmap.c), called by the walkers that change PTEs under the
/// page-table lock (zap, change_protection, MADV_COLD/PAGEOUT/FREE): if reclaim or migration
/// batched an unmap of `mm` since the last such call, flush the whole mm. The kernel does not
/// know whether that batch was flushed since, so the flush happens even then.
pub fn flush_tlb_batched_pending(k: &mut Kernel, ctx: &mut Ctx, mm: u32) {
    if std::mem::take(&mut k.mms[mm as usize].tlb_flush_batched) {
        let arch = k.cfg.tlb;
        arch.flush_batched_pending(k, ctx, mm);
    }
}
