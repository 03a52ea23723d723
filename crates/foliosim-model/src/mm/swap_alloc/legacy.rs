//! Legacy allocator (<= 6.9): order-0 slots from per-CPU clusters, PMD-sized THP into a whole
//! free cluster (swap_alloc_cluster); no other large order is ever stored, so reclaim splits
//! every mTHP before it asks for slots. Zap frees swap PTEs one at a time.

use super::cluster_freelist::ClusterFreelist;
use super::{SwapAllocator, SwapAllocatorEntry};
use crate::engine::cost::CostModel;
use crate::engine::Ctx;
use crate::mm::folio::SwapEntry;
use crate::mm::swapfile::SwapMap;
use crate::scenario::PMD_ORDER;

pub struct Legacy {
    clusters: ClusterFreelist,
}

/// The registry's row (mod.rs `registry!`).
pub const ENTRY: SwapAllocatorEntry = SwapAllocatorEntry {
    name: "legacy",
    doc: "<= 6.9: per-CPU order-0 clusters, PMD-only huge clusters; mTHP split before swap-out",
    mthp_reserve: false,
    new: |map, ncpus, _reserve| Box::new(Legacy::new(map, ncpus)),
};

impl Legacy {
    pub fn new(map: &SwapMap, ncpus: usize) -> Legacy {
        Legacy {
            clusters: ClusterFreelist::new(map, ncpus),
        }
    }
}

impl SwapAllocator for Legacy {
    fn name(&self) -> &'static str {
        "legacy"
    }
    fn swapout_whole(&self, order: u32) -> bool {
        order == 0 || order == PMD_ORDER
    }
    fn uses_slot_cache(&self) -> bool {
        true
    }
    fn zap_batch(&self) -> u32 {
        1
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
        assert!(
            self.swapout_whole(order),
            "legacy allocator asked for order {order}: reclaim must split first"
        );
        // swap_alloc_cluster: a PMD folio takes the free-list head whole, which is what the
        // shared scanner does for a 512-slot range.
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
