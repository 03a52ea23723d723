//! Per-CPU kernel state (the kernel's DEFINE_PER_CPU variables the model keeps), one record
//! per CPU so a CPU's fields sit together. The swap slot cache and the memcg charge stock
//! are per CPU too but stay with their subsystems (`Swap`, `Stock`), which borrow alone.

use super::folio::NIL;

/// One CPU's state.
#[derive(Debug, Clone, Copy)]
pub struct PerCpu {
    /// The mm this CPU is running (NIL when idle or running a kernel thread: kernel threads
    /// have no mm, and lazy TLB is not modelled, as x86 sends lazy CPUs no shootdown IPI
    /// unless page tables are freed): who a TLB shootdown must interrupt.
    pub mm: u32,
    /// Interrupt work this CPU owes (TLB shootdowns it received), paid at its next step.
    pub irq_ns: u64,
    /// Folios added to the LRU since this CPU's lru_add batch last took the lru_lock
    /// (cpu_fbatches.lru_add).
    pub lru_add_pending: u32,
}

impl PerCpu {
    /// Every CPU at boot: idle, owing nothing.
    pub fn boot(ncpus: usize) -> Vec<PerCpu> {
        vec![
            PerCpu {
                mm: NIL,
                irq_ns: 0,
                lru_add_pending: 0,
            };
            ncpus
        ]
    }
}
