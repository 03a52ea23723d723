//! Memory compaction (mm/compaction.c): NOT MODELLED YET.
//!
//! This file is where direct compaction goes. Until it is written, `try_to_compact_pages`
//! answers COMPACT_SKIPPED for every request: what the kernel answers when no zone is
//! suitable for compaction. That is not a claim that compaction would have been skipped; it
//! is the honest "nothing was tried" the slow path already handles: no compact_stall is
//! counted, no page comes back, and __GFP_NORETRY costly requests (THP faults under
//! defrag=always) give up at once as they do after a skipped compaction.

use super::gfp::Gfp;
use super::page_alloc::{AllocFlags, Wmark};
use super::vmscan::kswapd::compact_gap;
use super::Kernel;
use crate::engine::Ctx;

/// enum compact_result, the values the allocator's slow path tells apart.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CompactResult {
    /// Deferred after recent failures at this order (defer_compaction).
    Deferred,
    /// Not suitable: too few free pages to migrate into, or nothing to do.
    Skipped,
    /// Scanned the zone without producing a free block of the order.
    Complete,
    /// A free block of the order exists now (or was captured).
    Success,
}

/// enum compact_priority: lower is more thorough.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum CompactPriority {
    SyncFull = 0,
    SyncLight = 1,
    Async = 2,
}

/// INIT_COMPACT_PRIORITY / DEF_COMPACT_PRIORITY.
pub const INIT_COMPACT_PRIORITY: CompactPriority = CompactPriority::Async;
/// MIN_COMPACT_PRIORITY and, for costly orders, MIN_COMPACT_COSTLY_PRIORITY.
pub const MIN_COMPACT_PRIORITY: CompactPriority = CompactPriority::SyncFull;
pub const MIN_COMPACT_COSTLY_PRIORITY: CompactPriority = CompactPriority::SyncLight;

/// try_to_compact_pages: compact the zone for a block of `order`, returning the result and a
/// captured page, if any. NOT MODELLED YET: always COMPACT_SKIPPED, no page (see the module
/// comment). Compaction fills this in.
pub fn try_to_compact_pages(
    _k: &mut Kernel,
    _ctx: &mut Ctx,
    _gfp: Gfp,
    _order: u32,
    _alloc_flags: AllocFlags,
    _prio: CompactPriority,
) -> (CompactResult, Option<u32>) {
    (CompactResult::Skipped, None)
}

/// compaction_zonelist_suitable: after a skipped compaction, could reclaim make the zone
/// suitable? It could if the free pages plus everything reclaimable met the min watermark with
/// compact_gap(order) to spare (__compaction_suitable at order 0).
pub fn compaction_zonelist_suitable(k: &Kernel, order: u32) -> bool {
    let available = super::page_alloc::slowpath::zone_reclaimable_pages(k) + k.zone.nr_free_pages();
    let mark = k.zone.wmark_pages(Wmark::Min) + compact_gap(order);
    super::page_alloc::watermark::zone_watermark_ok(
        k.zone.free_area(),
        0,
        mark,
        AllocFlags::CMA,
        available as i64,
    )
}
