//! Ryan Roberts' v4 allocator (6.10): every order up to PMD uses the per-CPU cluster scanner with
//! its own per-order next offset, so an mTHP is stored whole whenever an aligned free range is
//! reachable; otherwise allocation fails and reclaim splits (swpout_fallback). Zap frees runs of
//! contiguous swap PTEs together (free_swap_and_cache_nr).

use super::cluster_freelist::ClusterFreelist;
use super::{SwapAllocator, SwapAllocatorEntry};
use crate::engine::cost::CostModel;
use crate::engine::Ctx;
use crate::mm::folio::SwapEntry;
use crate::mm::swapfile::SwapMap;

pub struct PercpuOrder {
    clusters: ClusterFreelist,
}

/// The registry's row (mod.rs `registry!`).
pub const ENTRY: SwapAllocatorEntry = SwapAllocatorEntry {
    name: "percpu-order",
    doc: "6.10 (Ryan Roberts v4): per-CPU, per-order next offset; any order swapped whole",
    mthp_reserve: false,
    new: |map, ncpus, _reserve| Box::new(PercpuOrder::new(map, ncpus)),
};

impl PercpuOrder {
    pub fn new(map: &SwapMap, ncpus: usize) -> PercpuOrder {
        PercpuOrder {
            clusters: ClusterFreelist::new(map, ncpus),
        }
    }
}

impl SwapAllocator for PercpuOrder {
    fn name(&self) -> &'static str {
        "percpu-order"
    }
    fn uses_slot_cache(&self) -> bool {
        true
    }
    fn alloc(
        &mut self,
        map: &mut SwapMap,
        ctx: &mut Ctx,
        cost: &CostModel,
        order: u32,
        n: usize,
        out: &mut Vec<SwapEntry>,
    ) {
        self.clusters.alloc(map, ctx, cost, order, n, out)
    }
    fn on_free(
        &mut self,
        map: &mut SwapMap,
        ctx: &mut Ctx,
        cost: &CostModel,
        offset: u32,
        nr: u32,
    ) {
        self.clusters.on_free(map, ctx, cost, offset, nr)
    }
    fn on_free_slots(&mut self, map: &mut SwapMap, ctx: &mut Ctx, cost: &CostModel, slots: &[u32]) {
        self.clusters.on_free_slots(map, ctx, cost, slots)
    }
    fn check(&self, map: &SwapMap) -> Result<(), String> {
        self.clusters.check(map)
    }
}
