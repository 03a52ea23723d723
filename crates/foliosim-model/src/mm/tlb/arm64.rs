//! arm64: TLB maintenance is broadcast in hardware (TLBI ...IS), with no IPI and no work on
//! the other CPUs; the issuer waits for completion at a DSB ISH. Deferred unmap flushing
//! (ARCH_WANT_BATCHED_UNMAP_TLB_FLUSH, on with 8 or more CPUs) issues one TLBI per cleared PTE
//! and one DSB per flush (arch_tlbbatch_add_pending / arch_tlbbatch_flush).
//!
//! A naturally aligned, fully mapped block of 16 PTEs of one folio (64 KiB) is mapped with the
//! contiguous bit (contpte, since 6.9). Changing one PTE of such a block unfolds the whole block
//! first (contpte_try_unfold -> contpte_convert): clear the 16 PTEs, flush their TLB range and
//! wait, write them back without the bit. Ryan Roberts' profile of seed 000 shows this in
//! try_to_unmap_one on both kernels.
//!
//! Broadcast completion contends: the latency of a TLBI broadcast grows about linearly with the
//! number of CPUs broadcasting at the same time (Andrea Arcangeli, "arm64: tlb: skip tlbi
//! broadcast", measured on a 32-CPU Ampere). The DSB waits therefore go through a shared
//! channel (`Kernel::tlb_bus`) that completes one broadcast at a time.

use super::{charge, TlbArch, TlbCost};
use crate::engine::cost::CostModel;
use crate::engine::Ctx;
use crate::hw::membw::{SharedBandwidth, Stream};
use crate::mm::Kernel;

pub struct Arm64Tlbi;

/// CONT_PTE_SHIFT - PAGE_SHIFT with 4 KiB pages: 16 PTEs.
const CONT_PTE_ORDER: u32 = 4;

impl Arm64Tlbi {
    /// DSB ISH after broadcast TLBIs: waits until every CPU has completed them.
    fn dsb(cost: &CostModel, tlb_bus: &mut SharedBandwidth, ctx: &mut Ctx) {
        tlb_bus.transfer(ctx, Stream::TlbBroadcast, 1.0, cost.tlb_dsb_ns);
    }

    /// __flush_tlb_range of `nr` pages, synchronous: per-page TLBIs (Neoverse N1 has no
    /// FEAT_TLBIRANGE) and a DSB.
    fn flush_range_sync(k: &mut Kernel, ctx: &mut Ctx, nr: u32) {
        charge(ctx, TlbCost::TlbiIssue, k.cost.tlbi_issue_ns * nr as u64);
        k.tlb_cache.tlbi_broadcast(nr as u64);
        Self::dsb(&k.cost, &mut k.tlb_bus, ctx);
    }

    /// TLBI ASIDE1IS of `mm` and its DSB: every CPU drops `mm`'s translations (a full flush
    /// where it has `mm` loaded).
    fn flush_asid(k: &mut Kernel, ctx: &mut Ctx, mm: u32) {
        charge(ctx, TlbCost::TlbiIssue, k.cost.tlbi_issue_ns);
        k.tlb_cache.tlbi_broadcast(1);
        for cpu in 0..k.nr_cpus() {
            if k.percpu[cpu].mm == mm {
                // The broadcast reaches a CPU running a task of the mm mid-run.
                k.tlb_cache.flush_all(cpu, cpu != ctx.cpu);
            } else {
                k.tlb_cache.forget_mms(cpu, &[mm]);
            }
        }
        Self::dsb(&k.cost, &mut k.tlb_bus, ctx);
    }
}

/// MAX_DVM_OPS with 4 KiB pages (PTRS_PER_PTE): __flush_tlb_range of more pages invalidates
/// the whole ASID instead (arch/arm64/include/asm/tlbflush.h).
const MAX_DVM_OPS: u64 = 512;

impl TlbArch for Arm64Tlbi {
    fn unmap_folio_ptes(&self, k: &mut Kernel, ctx: &mut Ctx, order: u32, nr: u32) {
        if order >= CONT_PTE_ORDER {
            // contpte_convert per block: 16 clears, a synchronous range flush, 16 writes.
            for _ in 0..nr >> CONT_PTE_ORDER {
                let ns = k.cost.pte_unmap_ns * (2 << CONT_PTE_ORDER);
                charge(ctx, TlbCost::ContptePtes, ns);
                Self::flush_range_sync(k, ctx, 1 << CONT_PTE_ORDER);
            }
        }
        // arch_tlbbatch_add_pending: __flush_tlb_page_nosync per PTE.
        charge(ctx, TlbCost::TlbiIssue, k.cost.tlbi_issue_ns * nr as u64);
        k.tlb_cache.tlbi_broadcast(nr as u64);
    }

    fn flush_batch(&self, k: &mut Kernel, ctx: &mut Ctx, _mms: &[u32], nr_ptes: u32) {
        // arch_tlbbatch_flush: dsb(ish).
        if nr_ptes > 0 {
            Self::dsb(&k.cost, &mut k.tlb_bus, ctx);
        }
    }

    fn split_pmd(&self, k: &mut Kernel, ctx: &mut Ctx, _mm: u32) {
        // pmdp_invalidate -> flush_pmd_tlb_range: one TLBI for the block entry, then wait.
        Self::flush_range_sync(k, ctx, 1);
    }

    fn split_folio(&self, k: &mut Kernel, ctx: &mut Ctx, _mm: u32, order: u32, pmd_mapped: bool) {
        // unmap_folio: try_to_migrate_one per PTE under TTU_BATCH_FLUSH (a PMD-mapped folio's
        // PMD was split first: its PTEs are contpte blocks), then try_to_unmap_flush. The
        // remap installs order-0 PTEs over migration entries, which needs no flush.
        if pmd_mapped {
            self.split_pmd(k, ctx, _mm);
        }
        self.unmap_folio_ptes(k, ctx, order, 1 << order);
        Self::dsb(&k.cost, &mut k.tlb_bus, ctx);
    }

    fn clear_flush_young(&self, k: &mut Kernel, ctx: &mut Ctx, order: u32, pmd_mapped: bool) {
        if pmd_mapped {
            // pmdp_clear_flush_young -> flush_pmd_tlb_range: one TLBI for the block, waited for.
            Self::flush_range_sync(k, ctx, 1);
            return;
        }
        // __ptep_clear_flush_young: a TLBI per young PTE, no DSB (a stale young entry only
        // risks reclaiming a page in use). A contpte block is cleared whole and flushed whole
        // at page stride (contpte_ptep_clear_flush_young -> __flush_tlb_range_nosync): 16
        // TLBIs for the block, so one per page either way. Every PTE is young here: the
        // workload touched each page once since the last check.
        let nr = 1u64 << order;
        charge(ctx, TlbCost::TlbiIssue, k.cost.tlbi_issue_ns * nr);
    }

    fn collapse_flush(&self, k: &mut Kernel, ctx: &mut Ctx, mm: u32) {
        // __flush_tlb_range of 2 MiB at page stride reaches MAX_DVM_OPS without FEAT_TLBIRANGE:
        // one TLBI ASIDE1IS for the whole mm, then the DSB.
        Self::flush_asid(k, ctx, mm);
    }

    fn flush_on_write_grant(&self) -> bool {
        false
    }

    fn flush_batched_pending(&self, k: &mut Kernel, ctx: &mut Ctx, _mm: u32) {
        // The batched TLBIs went out as the PTEs were cleared: waiting for them is a DSB
        // (arch_flush_tlb_batched_pending, arm64's batched unmap since 6.5).
        Self::dsb(&k.cost, &mut k.tlb_bus, ctx);
    }

    fn flush_range(&self, k: &mut Kernel, ctx: &mut Ctx, mm: u32, nr_pages: u64) {
        if nr_pages > MAX_DVM_OPS {
            Self::flush_asid(k, ctx, mm);
        } else {
            Self::flush_range_sync(k, ctx, nr_pages as u32);
        }
    }
}
