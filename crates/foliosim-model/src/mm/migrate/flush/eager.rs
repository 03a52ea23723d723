//! Mainline: every PTE a migration cleared is flushed before the move phase (the read-only
//! batch is folded into the one try_to_unmap_flush).

use super::MigrateFlushPolicy;
use crate::mm::tlb::TlbUnmapBatch;
use crate::mm::Kernel;

pub struct Eager;

impl MigrateFlushPolicy for Eager {
    fn defer(
        &self,
        _k: &mut Kernel,
        _tlb: &mut TlbUnmapBatch,
        _eligible_mms: &[u32],
        _ineligible_ro_mms: &[u32],
    ) -> u16 {
        0
    }
}
