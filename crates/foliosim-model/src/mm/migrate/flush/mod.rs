//! How migration pays the TLB flush it owes for the PTEs it cleared, one policy per file,
//! chosen by `kernel.migrate_tlb_flush`:
//! - `eager` (mainline): one batched flush per migrate_pages_batch, before the move phase;
//! - `migrc` (seed 004, MIGRC v9): folios mapped only by read-only clean PTEs skip it; the
//!   flush is owed until a page they freed is reused or a PTE becomes writable.

pub mod eager;
pub mod migrc;

use crate::mm::tlb::TlbUnmapBatch;
use crate::mm::Kernel;
use crate::scenario::MigrateTlbFlush;

pub trait MigrateFlushPolicy: Sync {
    /// Between migrate_pages_batch's phases: the read-only flushes of the eligible folios
    /// (`eligible_mms`: their mms) may be taken out of `tlb` and owed instead; those of other
    /// folios (`ineligible_ro_mms`) stay. Returns the generation the eligible folios' sources
    /// carry when freed (0: nothing owed).
    fn defer(
        &self,
        k: &mut Kernel,
        tlb: &mut TlbUnmapBatch,
        eligible_mms: &[u32],
        ineligible_ro_mms: &[u32],
    ) -> u16;
}

pub fn policy_of(kind: MigrateTlbFlush) -> &'static dyn MigrateFlushPolicy {
    match kind {
        MigrateTlbFlush::Eager => &eager::Eager,
        MigrateTlbFlush::Migrc => &migrc::Migrc,
    }
}
