//! shrink_slab (mm/shrinker.c) for the shrinkers of the model's memory, called by reclaim for
//! each memcg it shrinks (shrink_node_memcgs, and memcg reclaim). Today that is the THP
//! deferred split shrinker ("thp-deferred_split", memcg and NUMA aware, non-slab) and, when
//! kernel memory is modelled, the superblock's dcache/icache shrinker (mm/slub.rs); zswap's
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
    let sb_freed = super_cache_shrink_root(k, ctx, memcg, priority);
    let freeable = deferred_split_count(&k.deferred_split[memcg as usize]);
    if freeable == 0 {
        return sb_freed;
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
    freed + sb_freed
}

/// The superblock (dcache and icache) shrinker when kernel memory is modelled (mm/slub.rs):
/// not memcg aware in the model (slab objects are not charged), so called for the root only.
fn super_cache_shrink_root(k: &mut Kernel, ctx: &mut Ctx, memcg: u16, priority: u32) -> u64 {
    if !k.kmem.enabled || memcg != super::memcontrol::ROOT_MEMCG {
        return 0;
    }
    super::slub::super_cache_shrink(k, ctx, priority)
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;
    use crate::content::ContentClass;
    use crate::mm::memory::{touch, zap_range};
    use crate::mm::mmap::ThpAdvice;
    use crate::Scenario;

    /// `n` PMD THPs faulted in one VMA, then the second half of each zapped: `n` folios queued.
    pub(crate) fn half_unmapped_thps(n: u32) -> (Kernel, Ctx<'static>) {
        let text = r#"
[machine]
cpus = 1
memory = "1G"
[sysfs.hugepages]
"2M" = "always"
[[workload]]
kind = "usemem"
nproc = 1
size = "1M"
"#;
        let mut k = Kernel::new(&Scenario::from_toml_str(text).unwrap());
        let mut ctx = Ctx::new(0, 0);
        let mm = k.new_mm(0, ContentClass::Usemem);
        k.mms[mm as usize].mmap(0, n * 512, ThpAdvice::Default);
        let mut index = 0;
        while index < n * 512 {
            index += touch(&mut k, &mut ctx, mm, 0, index, n * 512, true).unwrap();
        }
        for r in 0..n {
            zap_range(&mut k, &mut ctx, mm, 0, r * 512 + 256, 256);
        }
        (k, ctx)
    }

    #[test]
    fn a_short_queue_waits_for_deferred_work_or_a_low_priority() {
        let (mut k, mut ctx) = half_unmapped_thps(32);
        assert_eq!(deferred_split_count(&k.deferred_split[0]), 32);
        // freeable 32: delta 16 a call, short of a batch and of freeable: deferred, up to 64.
        for deferred in [16, 32, 48, 64, 64] {
            assert_eq!(shrink_slab(&mut k, &mut ctx, 0, 12), 0);
            assert_eq!(k.deferred_split[0].nr_deferred, deferred);
        }
        assert_eq!(k.vmstat.get(VmEvent::SlabsScanned), 0);
        // Priority 2: 64 >> 2 + 16 = 32 >= freeable: all scanned and split.
        assert_eq!(shrink_slab(&mut k, &mut ctx, 0, 2), 32);
        assert_eq!(deferred_split_count(&k.deferred_split[0]), 0);
        assert_eq!(k.vmstat.get(VmEvent::ThpSplitPage), 32);
        assert_eq!(k.vmstat.get(VmEvent::SlabsScanned), 32);
        // Each split freed the 256 unmapped pages of its folio.
        assert_eq!(k.memcgs[0].usage_pages, 32 * 256);
        crate::mm::invariants::check(&k).unwrap();
    }

    #[test]
    fn a_long_queue_is_scanned_half_at_every_call() {
        let (mut k, mut ctx) = half_unmapped_thps(300);
        // freeable 300: delta 150 >= a batch of 128: one batch now, 22 deferred.
        assert_eq!(shrink_slab(&mut k, &mut ctx, 0, 12), 128);
        assert_eq!(deferred_split_count(&k.deferred_split[0]), 172);
        assert_eq!(k.deferred_split[0].nr_deferred, 22);
        crate::mm::invariants::check(&k).unwrap();
    }
}
