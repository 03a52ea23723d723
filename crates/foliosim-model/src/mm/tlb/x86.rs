//! x86: a flush is local, plus one IPI to every other CPU in the mm's mm_cpumask
//! (flush_tlb_multi); the sender waits for every ack. Each CPU stays in the mask for a while
//! after it last ran the mm (6.18 trims it lazily). No PTE is mapped specially.

use super::{charge, TlbArch, TlbCost};
use crate::engine::Ctx;
use crate::mm::folio::NIL;
use crate::mm::vmstat::VmEvent;
use crate::mm::Kernel;

pub struct X86Ipi;

impl TlbArch for X86Ipi {
    fn unmap_folio_ptes(&self, _k: &mut Kernel, _ctx: &mut Ctx, _order: u32, _nr: u32) {
        // arch_tlbbatch_add_pending only records the CPUs to interrupt.
    }

    fn flush_batch(&self, k: &mut Kernel, ctx: &mut Ctx, mms: &[u32], _nr_ptes: u32) {
        flush_tlb_mms(k, ctx, mms);
    }

    fn split_pmd(&self, _k: &mut Kernel, _ctx: &mut Ctx, _mm: u32) {
        // Part of the measured pmd_split_ns / split costs (local flush of a PMD).
    }

    fn split_folio(&self, k: &mut Kernel, ctx: &mut Ctx, mm: u32, _order: u32, pmd_mapped: bool) {
        // Measured on 6.18: two shootdowns of the owner mm for a PTE-mapped folio, one for a
        // PMD-mapped one (docs/calibration-split-tlb.md).
        for _ in 0..if pmd_mapped { 1 } else { 2 } {
            flush_tlb_mms(k, ctx, &[mm]);
        }
    }

    fn clear_flush_young(&self, _k: &mut Kernel, _ctx: &mut Ctx, _order: u32, _pmd_mapped: bool) {
        // x86's ptep_clear_flush_young clears the accessed bit without a flush (a stale TLB
        // entry only delays the next A-bit update), and its pmdp_clear_flush_young likewise.
    }

    fn collapse_flush(&self, k: &mut Kernel, ctx: &mut Ctx, mm: u32) {
        // flush_tlb_mm_range over 512 pages: above tlb_single_page_flush_ceiling, a full flush
        // here and on every other CPU of mm_cpumask.
        flush_tlb_mms(k, ctx, &[mm]);
    }

    fn should_defer_flush(&self, k: &Kernel, ctx: &Ctx, mm: u32) -> bool {
        // Only when another CPU is in mm_cpumask (cpumask_any_but(mm_cpumask, this cpu)).
        (0..k.nr_cpus()).any(|cpu| cpu != ctx.cpu && in_mm_cpumask(k, ctx, cpu, mm))
    }

    fn flush_range(&self, k: &mut Kernel, ctx: &mut Ctx, mm: u32, nr_pages: u64) {
        if nr_pages > TLB_SINGLE_PAGE_FLUSH_CEILING {
            flush_tlb_mms(k, ctx, &[mm]);
        } else {
            shootdown(k, ctx, &[mm], Some(nr_pages));
        }
    }
}

/// tlb_single_page_flush_ceiling: a range of more pages is flushed whole (arch/x86/mm/tlb.c).
const TLB_SINGLE_PAGE_FLUSH_CEILING: u64 = 33;

/// Is `cpu` in `mm`'s mm_cpumask: running it, or within the mask's trim window?
fn in_mm_cpumask(k: &Kernel, ctx: &Ctx, cpu: usize, mm: u32) -> bool {
    k.percpu[cpu].mm == mm
        || k.mms[mm as usize].cpu_recently_active(cpu, ctx.now_ns, k.cost.mm_cpumask_window_ns)
}

/// flush_tlb_multi for `mms`: every other CPU in their mm_cpumask (running one of them now, or
/// within the mask's trim window) takes an IPI.
fn flush_tlb_mms(k: &mut Kernel, ctx: &mut Ctx, mms: &[u32]) {
    shootdown(k, ctx, mms, None);
}

/// The flush of `mms` here and on the other CPUs of their mm_cpumask: whole TLBs (None), or
/// `Some(nr)` pages one INVLPG at a time (flush_tlb_func below the ceiling).
fn shootdown(k: &mut Kernel, ctx: &mut Ctx, mms: &[u32], pages: Option<u64>) {
    charge(ctx, TlbCost::LocalFlush, k.cost.tlb_flush_local_ns);
    match pages {
        None => k.vmstat.count(VmEvent::NrTlbLocalFlushAll, 1),
        Some(nr) => k.vmstat.count(VmEvent::NrTlbLocalFlushOne, nr),
    }
    let mut remote = 0;
    let mut farthest = None;
    let ncpus = k.nr_cpus();
    // By 64 CPUs: which are in the mask (reads only), then what the flush does to each (the
    // mask does not depend on those effects, so the order of effects is kept).
    for first in (0..ncpus).step_by(64) {
        let last = (first + 64).min(ncpus);
        let mut mask = 0u64;
        for &mm in mms {
            let active = &k.mms[mm as usize].cpu_last_ran_ns[first..last];
            for (bit, (c, ran)) in k.percpu[first..last].iter().zip(active).enumerate() {
                // mm_cpumask: running it, or ran it within the window (cpu_recently_active).
                let in_mask = c.mm == mm
                    || ran.is_some_and(|t| {
                        ctx.now_ns.saturating_sub(t) < k.cost.mm_cpumask_window_ns
                    });
                mask |= (in_mask as u64) << bit;
            }
        }
        while mask != 0 {
            let cpu = first + mask.trailing_zeros() as usize;
            mask &= mask - 1;
            shootdown_cpu(k, ctx, mms, pages, cpu, &mut remote);
            if let Some(t) = k.topology.as_ref().filter(|_| cpu != ctx.cpu) {
                farthest = farthest.max(Some(t.distance(ctx.cpu, cpu)));
            }
        }
    }
    if remote > 0 {
        // The IPIs go out together; the sender waits for the slowest ack (hw/ipi.rs).
        let ns = k.ipi.send_ns(&k.cost, remote, farthest);
        charge(ctx, TlbCost::Ipi, ns);
        k.vmstat.count(VmEvent::NrTlbRemoteFlush, 1);
        k.vmstat.count(VmEvent::NrTlbRemoteFlushReceived, remote);
    }
}

/// The flush's effect on `cpu`, which is in the mask.
#[inline]
fn shootdown_cpu(
    k: &mut Kernel,
    ctx: &Ctx,
    mms: &[u32],
    pages: Option<u64>,
    cpu: usize,
    remote: &mut u64,
) {
    if cpu != ctx.cpu {
        *remote += 1;
        // The receiver's interrupt and flush, booked to whatever it runs next; its TLB
        // refills after the flush (hw/tlb_cache.rs).
        k.percpu[cpu].irq_ns += k.cost.tlb_flush_local_ns + k.ipi.receive_ns(&k.cost);
        k.tlb_cache.shootdown_received(cpu);
    }
    // What the flush does to this CPU's TLB (hw/tlb_cache.rs): flush_tlb_func flushes a
    // CPU that has one of `mms` loaded (running it, or idle in lazy TLB mode after it); a
    // CPU running another mm only drops it from the mask.
    let loaded = k.percpu[cpu].mm == NIL || mms.contains(&k.percpu[cpu].mm);
    match pages {
        _ if !loaded => k.tlb_cache.forget_mms(cpu, mms),
        // An IPI to a CPU running a task of the mm interrupts it (its user code refills).
        None => k
            .tlb_cache
            .flush_all(cpu, cpu != ctx.cpu && k.percpu[cpu].mm != NIL),
        Some(nr) => k.tlb_cache.flush_pages(cpu, nr),
    }
}
