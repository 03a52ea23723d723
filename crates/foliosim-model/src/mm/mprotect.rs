//! mprotect(2) of a whole VMA (mm/mprotect.c): change_protection rewrites the present PTEs and
//! flushes the TLB over the changed span (flush_tlb_range) when the change needs it: always
//! for a permission drop; for a grant of write only where the architecture flushes on any
//! change of the writable bit (x86's pte_flags_need_flush; arm64 does not,
//! `TlbArch::flush_on_write_grant`). Anonymous private pages become writable at once
//! (can_change_pte_writable: exclusive anon pages).

use super::Kernel;
use crate::cpu_cost::CpuCost;
use crate::engine::Ctx;

/// A VMA's protection, from none to read-write (PROT_EXEC is not modelled).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, PartialOrd, Ord)]
pub enum Prot {
    None,
    Read,
    #[default]
    ReadWrite,
}

impl Prot {
    /// May the task load (or store, if `write`) here without SIGSEGV?
    pub fn allows(self, write: bool) -> bool {
        match self {
            Prot::None => false,
            Prot::Read => !write,
            Prot::ReadWrite => true,
        }
    }
}

/// mprotect of all of `vma` to `prot`.
pub fn mprotect(k: &mut Kernel, ctx: &mut Ctx, mm: u32, vma: u32, prot: Prot) {
    ctx.spend(CpuCost::Syscall, k.cost.syscall_ns);
    k.mms[mm as usize].mmap_lock.write_lock(ctx);
    super::tlb::flush_tlb_batched_pending(k, ctx, mm);
    let arch = k.cfg.tlb;
    let v = k.mms[mm as usize].vma_mut(vma);
    let write_changed = (prot == Prot::ReadWrite) != (v.prot == Prot::ReadWrite);
    let needs_flush = prot < v.prot || (write_changed && arch.flush_on_write_grant());
    v.prot = prot;
    // change_pte_range: every present PTE is rewritten; the flush covers the span changed.
    let mut span: Option<(u32, u32)> = None;
    let mut present = 0u64;
    for (i, pte) in v.ptes.iter().enumerate() {
        if pte.is_present() {
            present += 1;
            let i = i as u32;
            span = Some(span.map_or((i, i), |(a, _)| (a, i)));
        }
    }
    // A PTE rewrite costs as a PTE unmap (estimate).
    ctx.spend(CpuCost::ChangeProtection, k.cost.pte_unmap_ns * present);
    if let (true, Some((a, b))) = (needs_flush, span) {
        arch.flush_range(k, ctx, mm, (b - a + 1) as u64);
    }
    k.mms[mm as usize].mmap_lock.write_unlock(ctx);
}
