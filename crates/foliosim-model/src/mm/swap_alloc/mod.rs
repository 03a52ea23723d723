//! Swap slot allocator policies (the allocation half of mm/swapfile.c). The scenario's kernel
//! profile picks one per device; nothing outside this module asks which one it is.
//!
//! Every allocator is one file with a `pub const ENTRY: SwapAllocatorEntry` and one word in
//! the `registry!` below (docs/extending.md).

pub mod cluster_freelist;
pub mod cluster_lists;
pub mod discard;

crate::registry::registry!(SWAP_ALLOCATORS: SwapAllocatorEntry =
    legacy,
    percpu_order,
    cluster_lists_c12,
    cluster_lists_c18,
    #[cfg(test)]
    first_fit, // docs/extending.md's worked example: registered in test builds only
);

use super::folio::SwapEntry;
use super::swapfile::{SwapMap, SWAPFILE_CLUSTER};
use crate::engine::cost::CostModel;
use crate::engine::lock::LockStats;
use crate::engine::Ctx;
use crate::registry::{Choice, Entry};
use crate::scenario::PMD_ORDER;

pub trait SwapAllocator {
    fn name(&self) -> &'static str;

    /// Does swap-out keep a folio of `order` whole (and try to allocate 2^order contiguous
    /// slots)? false: reclaim splits it before allocating, as <= 6.9 does for every mTHP.
    /// Every order up to PMD from 6.10 on.
    fn swapout_whole(&self, order: u32) -> bool {
        order <= PMD_ORDER
    }

    /// Does order-0 allocation go through the per-CPU slot cache (mm/swap_slots.c)?
    fn uses_slot_cache(&self) -> bool;

    /// Swap PTEs zap frees per call: 1 = free_swap_and_cache() per PTE (<= 6.9), more =
    /// free_swap_and_cache_nr() over a batch of contiguous entries (6.10+, up to a cluster).
    fn zap_batch(&self) -> u32 {
        SWAPFILE_CLUSTER
    }

    /// Allocate up to `n` naturally aligned ranges of 2^order slots; push their first slots to
    /// `out`. Takes si->lock itself, for as long as the policy holds it. Writes HAS_CACHE through
    /// `map.take_range`.
    fn alloc(
        &mut self,
        map: &mut SwapMap,
        ctx: &mut Ctx,
        cost: &CostModel,
        order: u32,
        n: usize,
        out: &mut Vec<SwapEntry>,
    );

    /// Slots [offset, offset + nr) reached swap_map 0 and are free again: take them back,
    /// holding the locks this policy's free path holds.
    fn on_free(&mut self, map: &mut SwapMap, ctx: &mut Ctx, cost: &CostModel, offset: u32, nr: u32);

    /// swapcache_free_entries: single slots (swap_map already 0) released together, under one
    /// hold of the lock the free path takes. Only policies with a slot cache get these.
    fn on_free_slots(&mut self, map: &mut SwapMap, ctx: &mut Ctx, cost: &CostModel, slots: &[u32]) {
        for &slot in slots {
            self.on_free(map, ctx, cost, slot, 1);
        }
    }

    /// Check the policy's own invariants (cluster counts, list membership) against the map.
    fn check(&self, map: &SwapMap) -> Result<(), String>;

    /// Locks the policy has besides si->lock, each name totalled over its instances.
    fn extra_locks(&self) -> Vec<(&'static str, LockStats)> {
        Vec::new()
    }
}

/// What the registry knows of one allocator.
pub struct SwapAllocatorEntry {
    /// `kernel.swap_allocator`'s spelling; the allocator's `name()` returns the same.
    pub name: &'static str,
    pub doc: &'static str,
    /// Takes `machine.swap[].mthp_reserve_percent` (scenario validation refuses it elsewhere).
    pub mthp_reserve: bool,
    /// swapon: the policy for `map` on `ncpus` CPUs with the device's mTHP reserve percent.
    pub new: fn(map: &SwapMap, ncpus: usize, mthp_reserve_percent: u32) -> Box<dyn SwapAllocator>,
}

impl Entry for SwapAllocatorEntry {
    const WHAT: &'static str = "swap allocator";
    fn name(&self) -> &'static str {
        self.name
    }
    fn doc(&self) -> &'static str {
        self.doc
    }
    fn all() -> &'static [&'static Self] {
        SWAP_ALLOCATORS
    }
}

/// Which swap slot allocator the kernel runs: a registered entry, chosen by name.
pub type SwapAllocatorKind = Choice<SwapAllocatorEntry>;

/// The upstream allocators under the names the release table and tests use.
#[allow(non_upper_case_globals)]
impl SwapAllocatorKind {
    pub const Legacy: Self = Choice(&legacy::ENTRY);
    pub const PercpuOrder: Self = Choice(&percpu_order::ENTRY);
    pub const ClusterListsC12: Self = Choice(&cluster_lists_c12::ENTRY);
    pub const ClusterListsC18: Self = Choice(&cluster_lists_c18::ENTRY);
}

/// The policy for one device; `mthp_reserve_percent` only exists for allocators whose entry
/// says so (scenario validation checks).
pub fn new_allocator(
    kind: SwapAllocatorKind,
    map: &SwapMap,
    ncpus: usize,
    mthp_reserve_percent: u32,
) -> Box<dyn SwapAllocator> {
    (kind.entry().new)(map, ncpus, mthp_reserve_percent)
}
