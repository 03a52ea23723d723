//! TLB invalidation after unmapping. The generic part is the kernel's: the deferred batch of
//! try_to_unmap (struct tlbflush_unmap_batch, mm/rmap.c) and when it is flushed. What a flush
//! costs is the architecture's, one implementation per mechanism, chosen by `machine.tlb`:
//! - `x86`: IPIs to every other CPU in mm_cpumask (flush_tlb_multi);
//! - `arm64`: broadcast TLBI instructions completed by a DSB, and contpte blocks to unfold.

mod arm64;
mod x86;

use super::Kernel;
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

    /// pmdp_collapse_flush: khugepaged cleared the PMD over a page table of `mm` and flushes the
    /// 2 MiB range (flush_tlb_range) before copying its pages.
    fn collapse_flush(&self, k: &mut Kernel, ctx: &mut Ctx, mm: u32);

    /// flush_tlb_mm_range after munmap, mprotect or MADV_DONTNEED changed `nr_pages` present
    /// PTEs of `mm` (tlb_finish_mmu, change_protection).
    fn flush_range(&self, k: &mut Kernel, ctx: &mut Ctx, mm: u32, nr_pages: u64);

    /// Does making present PTEs writable need a flush? x86: any change of the RW bit does
    /// (pte_flags_need_flush, arch/x86/include/asm/tlbflush.h); arm64 takes a spurious fault
    /// on a stale read-only entry instead.
    fn flush_on_write_grant(&self) -> bool {
        true
    }
}

/// TLB work charged outside the shared broadcast channel, for the CPU-time report.
#[derive(Clone, Copy)]
pub enum TlbCost {
    LocalFlush = 0,
    Ipi = 1,
    TlbiIssue = 2,
    ContptePtes = 3,
}

impl TlbCost {
    pub const NAMES: [&'static str; 4] = [
        "tlb_flush_local_ns",
        "tlb_flush_ipi_ns (+ tlb_ipi_extra_cpu_ns)",
        "tlbi_issue_ns",
        "contpte_convert PTE rewrite (pte_unmap_ns)",
    ];
}

/// Spend `ns` of TLB work of kind `what`.
#[inline]
pub(crate) fn charge(k: &mut Kernel, ctx: &mut Ctx, what: TlbCost, ns: u64) {
    ctx.spend(ns);
    k.tlb_ns[what as usize] += ns;
}

pub fn arch(kind: TlbKind) -> &'static dyn TlbArch {
    match kind {
        TlbKind::X86Ipi => &x86::X86Ipi,
        TlbKind::Arm64Tlbi => &arm64::Arm64Tlbi,
    }
}

/// Pending flush of unmapped PTEs (TTU_BATCH_FLUSH).
#[derive(Default)]
pub struct TlbUnmapBatch {
    mms: Vec<u32>,
    nr_ptes: u32,
    /// A dirty (writable) PTE was cleared: the flush must precede writing the page out.
    writable: bool,
    /// Flush each folio's PTEs as they are cleared (no batching).
    immediate: bool,
}

impl TlbUnmapBatch {
    /// A batch for reclaim as the release has it: `batched` from 4.3 (TTU_BATCH_FLUSH), before
    /// which try_to_unmap flushed every folio's PTEs at once (Kernel::tlb_batched_unmap).
    pub fn new(batched: bool) -> TlbUnmapBatch {
        TlbUnmapBatch {
            immediate: !batched,
            ..Default::default()
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
        let arch = k.tlb;
        arch.unmap_folio_ptes(k, ctx, order, nr);
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

    /// try_to_unmap_flush
    pub fn flush(&mut self, k: &mut Kernel, ctx: &mut Ctx) {
        if !self.mms.is_empty() {
            let arch = k.tlb;
            let start_ns = ctx.now_ns;
            arch.flush_batch(k, ctx, &self.mms, self.nr_ptes);
            crate::engine::trace::span("TLB flush", "try_to_unmap_flush", start_ns, ctx.now_ns);
        }
        self.mms.clear();
        self.nr_ptes = 0;
        self.writable = false;
    }
}
