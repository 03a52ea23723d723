//! MIGRC v9 (Byungchul Park, "Reduce TLB and interrupt numbers by deferring tlb flush at
//! migration", April 2024; spec-thp-migrate.md §9): a migrated order-0 folio mapped only by
//! read-only clean PTEs leaves stale TLB entries that are harmless while nobody writes through
//! them (a write faults) and its old page is not reused. Its flush is owed instead of done:
//! the CPUs to flush accumulate in one global request (migrc_ubc), stamped with a generation
//! that every page freed by such migrations carries through the pcp and buddy lists
//! (FreeArea::tag_mgen). The first reuse of any tagged page (its removal from a free list,
//! checked after each allocation) or any write-protect fault performs the one flush owed for
//! everything so far; any ordinary flush covering the same mms pays them off too.
//!
//! Not modelled: the give-up when another CPU is flushing at the same moment (steps are
//! atomic, so no flush is in progress when a request is added), the per-node variant of RFC
//! v3, and LUF (the successor deferring reclaim's flushes).

use super::MigrateFlushPolicy;
use crate::engine::Ctx;
use crate::mm::tlb::TlbUnmapBatch;
use crate::mm::vmstat::VmEvent;
use crate::mm::Kernel;

pub struct Migrc;

/// The global request (migrc_ubc, migrc_gen, migrc_gen_next, migrc_gen_done).
#[derive(Debug, Clone, Default)]
pub struct MigrcState {
    /// The mms whose CPUs owe a flush (the cpumask, as x86's batch takes it at flush time).
    pub pending_mms: Vec<u32>,
    /// Generation of the latest request (0: none yet).
    pub gen: u16,
    /// Generation the next request after a flush takes (starts at 1).
    pub gen_next: u16,
    /// Latest generation flushed.
    pub gen_done: u16,
}

/// u16 generations never 0; "a before b" in wrapping order.
pub fn mgen_before(a: u16, b: u16) -> bool {
    (a.wrapping_sub(b) as i16) < 0
}

/// The later of two generations, 0 meaning absent.
pub fn mgen_latest(a: u16, b: u16) -> u16 {
    match (a, b) {
        (0, b) => b,
        (a, 0) => a,
        (a, b) if mgen_before(a, b) => b,
        (a, _) => a,
    }
}

fn mgen_next(g: u16) -> u16 {
    match g.wrapping_add(1) {
        0 => 1,
        n => n,
    }
}

impl MigrcState {
    pub fn new() -> MigrcState {
        MigrcState {
            gen_next: 1,
            ..Default::default()
        }
    }

    /// migrc_add_pending_ubc: fold `mms` into the request; its generation.
    fn add_pending(&mut self, mms: &[u32]) -> u16 {
        for &mm in mms {
            if !self.pending_mms.contains(&mm) {
                self.pending_mms.push(mm);
            }
        }
        self.gen = self.gen_next;
        self.gen
    }

    /// rmap_flush_end: an ordinary flush of `mms` covers what those CPUs owed.
    pub fn flushed(&mut self, mms: &[u32]) {
        if !self.pending_mms.is_empty() {
            self.pending_mms.retain(|m| !mms.contains(m));
        }
    }

    /// Is a flush owed for generation `g`?
    fn owes(&self, g: u16) -> bool {
        g != 0 && mgen_before(self.gen_done, g)
    }
}

/// check_migrc_flush(g): perform the flush owed up to generation `g`, if still owed.
pub fn check_migrc_flush(k: &mut Kernel, ctx: &mut Ctx, g: u16) {
    let st = &mut k.migrc;
    if !st.owes(g) || mgen_next(st.gen_done) != g {
        return;
    }
    if st.pending_mms.is_empty() {
        // An ordinary flush covered it already (gen_done is not advanced, as in v9).
        return;
    }
    let mms = std::mem::take(&mut st.pending_mms);
    st.gen_next = mgen_next(st.gen);
    let arch = k.cfg.tlb;
    arch.flush_batch(k, ctx, &mms, mms.len() as u32);
    k.migrc.gen_done = g;
    k.vmstat.count(VmEvent::MigrcFlushed, 1);
}

/// check_flush_task_mgen after an allocation: the generations taken off every node's lists.
pub fn check_flush_task_mgen(k: &mut Kernel, ctx: &mut Ctx) {
    if k.migrc.gen == 0 {
        return;
    }
    let mut g = k.pgdat[0].zone.take_mgen();
    for p in &mut k.pgdat[1..] {
        g = mgen_latest(g, p.zone.take_mgen());
    }
    check_migrc_flush(k, ctx, g);
}

/// migrc_flush: a write-protect fault makes a PTE writable; whatever is owed is flushed.
pub fn migrc_flush(k: &mut Kernel, ctx: &mut Ctx) {
    let g = k.migrc.gen;
    check_migrc_flush(k, ctx, g);
}

impl MigrateFlushPolicy for Migrc {
    fn defer(
        &self,
        k: &mut Kernel,
        tlb: &mut TlbUnmapBatch,
        eligible_mms: &[u32],
        ineligible_ro_mms: &[u32],
    ) -> u16 {
        if eligible_mms.is_empty() {
            return 0;
        }
        // The eligible folios' read-only entries are owed; other folios' read-only entries
        // stay in the batch. An mm the batch flushes anyway is paid off by that flush
        // (flushed(), rmap_flush_end), leaving the request empty for it.
        tlb.ro_mms.retain(|m| ineligible_ro_mms.contains(m));
        k.vmstat
            .count(VmEvent::MigrcRequested, eligible_mms.len() as u64);
        k.migrc.add_pending(eligible_mms)
    }
}
