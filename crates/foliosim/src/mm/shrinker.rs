//! shrink_slab (mm/shrinker.c) for the shrinkers of the model's memory, called by reclaim for
//! each memcg it shrinks (shrink_node_memcgs, and memcg reclaim). Today that is the THP
//! deferred split shrinker ("thp-deferred_split", memcg and NUMA aware, non-slab); zswap's
//! shrinker keeps its own entry point in memcg reclaim (zswap::shrinker_scan).
//!
//! do_shrink_slab's arithmetic: the shrinker reports `freeable` objects; the work asked of it is
//! `delta` (freeable >> priority, x 4 / seeks; a shrinker with seeks = 0, as thp_shrinker_init
//! leaves the deferred split one, gets freeable / 2 at any priority) plus the work deferred by
//! earlier calls (nr_deferred >> priority), at most 2 x freeable. It scans in batches of
//! SHRINK_BATCH while at least a batch, or the whole of freeable, is owed; what was owed and not
//! done is deferred to the next call (at most 2 x freeable). So a queue of 256 or more folios is
//! worked on at every call, and a short one only once deferred work builds up or the priority
//! falls: a few split THPs can linger.

use super::huge_memory::deferred_split::{deferred_split_count, deferred_split_scan};
use super::vmstat::VmEvent;
use super::Kernel;
use crate::engine::Ctx;

/// SHRINK_BATCH: objects per scan_objects call.
const SHRINK_BATCH: u64 = 128;

/// shrink_slab for `memcg` at reclaim `priority`: returns the objects freed (folios split; the
/// pages they free go back to the buddy allocator and raise free memory, but are not counted as
/// reclaimed, as the kernel counts only slab pages through reclaim_state).
pub fn shrink_slab(k: &mut Kernel, ctx: &mut Ctx, memcg: u16, priority: u32) -> u64 {
    let freeable = deferred_split_count(k, memcg);
    if freeable == 0 {
        return 0;
    }
    // follows do_shrink_slab (mm/shrinker.c), seeks = 0
    let nr = std::mem::take(&mut k.deferred_split[memcg as usize].nr_deferred);
    let delta = freeable / 2;
    let mut total_scan = ((nr >> priority) + delta).min(2 * freeable);
    let (mut freed, mut scanned) = (0, 0);
    while total_scan >= SHRINK_BATCH || total_scan >= freeable {
        let nr_to_scan = SHRINK_BATCH.min(total_scan);
        let Some(split) = deferred_split_scan(k, ctx, memcg, nr_to_scan) else {
            break;
        };
        freed += split;
        k.vmstat.count(VmEvent::SlabsScanned, nr_to_scan);
        total_scan -= nr_to_scan;
        scanned += nr_to_scan;
    }
    let next_deferred = (nr + delta).saturating_sub(scanned).min(2 * freeable);
    k.deferred_split[memcg as usize].nr_deferred = next_deferred;
    freed
}
