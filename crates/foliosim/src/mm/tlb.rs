//! TLB flushing after unmap: the deferred batch of try_to_unmap (struct tlbflush_unmap_batch,
//! mm/rmap.c) and the flush itself (x86 flush_tlb_multi): a local flush, plus one IPI to every
//! other CPU currently running an affected mm, which flushes there and acks.

use super::vmstat::VmEvent;
use super::Kernel;
use crate::engine::Ctx;

/// Pending flush of unmapped PTEs (TTU_BATCH_FLUSH).
#[derive(Default)]
pub struct TlbUnmapBatch {
    mms: Vec<u32>,
    /// A dirty (writable) PTE was cleared: the flush must precede writing the page out.
    writable: bool,
}

impl TlbUnmapBatch {
    pub fn add(&mut self, mm: u32, writable: bool) {
        if !self.mms.contains(&mm) {
            self.mms.push(mm);
        }
        self.writable |= writable;
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
            flush_tlb_mms(k, ctx, &self.mms);
        }
        self.mms.clear();
        self.writable = false;
    }
}

/// Flush the TLB entries of `mms` everywhere they may be cached: every other CPU in their
/// mm_cpumask (running one of them now, or within the mask's trim window).
pub fn flush_tlb_mms(k: &mut Kernel, ctx: &mut Ctx, mms: &[u32]) {
    ctx.spend(k.cost.tlb_flush_local_ns);
    k.vmstat.count(VmEvent::NrTlbLocalFlushAll, 1);
    let mut remote = 0;
    for cpu in 0..k.cpu_mm.len() {
        let in_mask = mms.iter().any(|&mm| {
            k.cpu_mm[cpu] == mm
                || k.mms[mm as usize].cpu_recently_active(
                    cpu,
                    ctx.now_ns,
                    k.cost.mm_cpumask_window_ns,
                )
        });
        if cpu != ctx.cpu && in_mask {
            remote += 1;
            k.cpu_irq_ns[cpu] += k.cost.tlb_flush_local_ns;
        }
    }
    if remote > 0 {
        // The IPIs go out together; the sender waits for the slowest ack.
        ctx.spend(k.cost.tlb_flush_ipi_ns + k.cost.tlb_ipi_extra_cpu_ns * (remote - 1));
        k.vmstat.count(VmEvent::NrTlbRemoteFlush, 1);
        k.vmstat.count(VmEvent::NrTlbRemoteFlushReceived, remote);
    }
}
