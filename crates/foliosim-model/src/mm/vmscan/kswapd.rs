//! kswapd (mm/vmscan.c): the allocator wakes it when an allocation falls below the low
//! watermark (wakeup_kswapd); it reclaims until the high watermark, plus any boost, holds
//! (balance_pgdat), then sleeps.
//!
//! The thread of each node (`KthreadKind::Kswapd { nid }`, "kswapdN") runs `kswapd_run` while `kswapd_should_run`;
//! the allocator marks it woken, and `post_kswapd_wakeup` hands that to the scheduler.
//! Before it sleeps, kswapd clears compaction's skip bits (after a direct compaction met its
//! scanners) and wakes kcompactd for the order it was woken for.
//! Not modelled yet: the 100 ms trial nap before a full sleep (kswapd_{low,high}_wmark_hit_quickly),
//! shrink_slab (zswap's shrinker runs in memcg reclaim
//! only), ZONE_RECLAIM_ACTIVE's lower pcp high.

use super::{
    inactive_is_low_pages, shrink_active_list, shrink_node, shrink_node_may_swap, Reclaim,
    SWAP_CLUSTER_MAX,
};
use crate::engine::Ctx;
use crate::mm::compaction::skip::reset_isolation_suitable;
use crate::mm::compaction::wakeup_kcompactd;
use crate::mm::gfp::Gfp;
use crate::mm::kthread::KthreadKind;
use crate::mm::page_alloc::{AllocFlags, Wmark, Zone, PAGEBLOCK_ORDER};
use crate::mm::vmstat::VmEvent;
use crate::mm::Kernel;

/// MAX_RECLAIM_RETRIES: runs without progress before a node is hopeless to kswapd.
pub const MAX_RECLAIM_RETRIES: u32 = 16;
const DEF_PRIORITY: u32 = 12;

/// kswapd's part of a node (pglist_data, mm/mmzone.rs).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct KswapdState {
    /// pgdat->kswapd_order: the largest order a waker asked for since kswapd last read it.
    pub kswapd_order: u32,
    /// Woken (wake_up_interruptible on kswapd_wait) and not yet back to sleep.
    pub woken: bool,
    /// pgdat->kswapd_failures: balance_pgdat runs in a row that reclaimed nothing.
    pub kswapd_failures: u32,
    /// The wake-up has been posted to the thread.
    pub posted: bool,
    /// wakeup_kcompactd asked by wakeup_kswapd (balanced node, caller not reclaiming), for
    /// this order; posted at the end of the step with kswapd's wake-up (0: none).
    pub kcompactd_order: u32,
}

/// compact_gap: reclaim for a high order stops at twice its size; compaction does the rest.
pub fn compact_gap(order: u32) -> u64 {
    2u64 << order
}

/// pgdat_balanced: the zone meets its high watermark (with the boost) at `order`; its promo
/// watermark under NUMA_BALANCING_MEMORY_TIERING, so promotions find room.
pub fn pgdat_balanced(zone: &Zone, order: u32) -> bool {
    let mark = if zone.balance_to_promo {
        Wmark::Promo
    } else {
        Wmark::High
    };
    zone.watermark_ok(order, zone.wmark_pages(mark), AllocFlags(0))
}

/// wakeup_kswapd: record the order, and wake kswapd unless it is awake already, the node is
/// hopeless, or balanced without a boost (then, for callers that will not reclaim themselves,
/// kcompactd: the free memory may be there but too fragmented).
pub fn wakeup_kswapd(zone: &Zone, kswapd: &mut KswapdState, gfp: Gfp, order: u32) {
    kswapd.kswapd_order = kswapd.kswapd_order.max(order);
    if kswapd.woken {
        return;
    }
    if kswapd.kswapd_failures >= MAX_RECLAIM_RETRIES
        || (pgdat_balanced(zone, order) && zone.watermark_boost == 0)
    {
        if !gfp.contains(Gfp::DIRECT_RECLAIM) {
            kswapd.kcompactd_order = kswapd.kcompactd_order.max(order);
        }
        return;
    }
    kswapd.woken = true;
}

/// wake_up_interruptible(&pgdat->kswapd_wait): the allocator marks kswapd woken where it has
/// no access to the threads; the step that did posts the wake-up at its end (at most one
/// step late).
#[inline]
pub fn post_kswapd_wakeup(k: &mut Kernel, now_ns: u64) {
    for nid in 0..k.pgdat.len() {
        let kswapd = &mut k.pgdat[nid].kswapd;
        if kswapd.woken && !kswapd.posted {
            kswapd.posted = true;
            k.kthreads.wake(KthreadKind::Kswapd { nid }, now_ns);
        }
        let order = std::mem::take(&mut k.pgdat[nid].kswapd.kcompactd_order);
        if order > 0 {
            wakeup_kcompactd(k, nid, order, now_ns);
        }
    }
}

/// A woken kswapd whose wake-up is not yet posted (the step ends to post it).
#[inline]
pub fn kswapd_wakeup_pending(k: &Kernel) -> bool {
    k.pgdat.iter().any(|p| p.kswapd.woken && !p.kswapd.posted)
}

/// Has kswapd been woken and not yet gone back to sleep?
pub fn kswapd_should_run(k: &Kernel, nid: usize) -> bool {
    k.pgdat[nid].kswapd.woken
}

/// One turn of kswapd's loop: take the requested order, balance the node, and go back to
/// sleep if it is balanced at the order reclaim finished at (prepare_kswapd_sleep); otherwise
/// stay awake for another turn. Returns the pages reclaimed.
pub fn kswapd_run(k: &mut Kernel, ctx: &mut Ctx, nid: usize) -> u64 {
    let alloc_order = std::mem::take(&mut k.pgdat[nid].kswapd.kswapd_order);
    let (reclaimed, reclaim_order) = balance(k, ctx, nid, alloc_order);
    let pgdat = &k.pgdat[nid];
    if pgdat.kswapd.kswapd_failures >= MAX_RECLAIM_RETRIES
        || pgdat_balanced(&pgdat.zone, reclaim_order)
    {
        // kswapd_try_to_sleep: compaction may succeed now, so forget where it failed, and
        // compact for the order kswapd was woken for.
        reset_isolation_suitable(k, ctx, nid);
        wakeup_kcompactd(k, nid, alloc_order, ctx.now_ns);
        k.pgdat[nid].kswapd.woken = false;
        k.pgdat[nid].kswapd.posted = false;
    }
    if pgdat_balanced(&k.pgdat[nid].zone, reclaim_order) {
        // clear_pgdat_congested (prepare_kswapd_sleep).
        k.pagecache.pgdat_dirty = false;
        k.pagecache.pgdat_writeback = false;
        k.pagecache.lruvec_congested = false;
    }
    reclaimed
}

/// balance_pgdat: reclaim until the zone is balanced at `order` (or, when boosted, until the
/// boost is reclaimed), raising the priority while too little is scanned. Counts pageoutrun,
/// pgscan_kswapd and pgsteal_kswapd. Returns the pages reclaimed.
pub fn balance_pgdat(k: &mut Kernel, ctx: &mut Ctx, nid: usize, order: u32) -> u64 {
    balance(k, ctx, nid, order).0
}

/// How a balance_pgdat priority loop ended.
enum Ended {
    /// Balanced and no boost left: `goto out`, no failure counted.
    Balanced,
    /// Out of priorities, or a boosted run that made no progress.
    Gave,
}

/// balance_pgdat; returns (pages reclaimed, the order it finished at).
fn balance(k: &mut Kernel, ctx: &mut Ctx, nid: usize, order: u32) -> (u64, u32) {
    k.vmstat.count(VmEvent::Pageoutrun, 1);
    // The boost is left in place while reclaiming, so allocations near the watermark stall or
    // reclaim until kswapd is done.
    let zone_boost = k.pgdat[nid].zone.watermark_boost;
    let mut nr_boost_reclaim = zone_boost;
    let mut sc_order = order;
    let mut nr_reclaimed = 0u64;
    let ended = 'restart: loop {
        let mut priority = DEF_PRIORITY;
        loop {
            let balanced = pgdat_balanced(&k.pgdat[nid].zone, sc_order);
            if !balanced && nr_boost_reclaim > 0 {
                // Imbalanced: ignore the boost, reclaim for the watermark itself.
                nr_boost_reclaim = 0;
                continue 'restart;
            }
            if nr_boost_reclaim == 0 && balanced {
                break 'restart Ended::Balanced;
            }
            // Boosted reclaim stops short of writeback-heavy priorities.
            let mut raise_priority = !(nr_boost_reclaim > 0 && priority == DEF_PRIORITY - 2);
            // Boosted reclaim neither writes back nor swaps: only clean page cache is
            // reclaimed (nothing at all without page cache).
            let may_swap = nr_boost_reclaim == 0;
            let policy = k.cfg.lru_policy;
            policy.age_node(k, ctx, nid);
            // kswapd_shrink_node
            let nr_to_reclaim = k.pgdat[nid]
                .zone
                .wmark_pages(Wmark::High)
                .max(SWAP_CLUSTER_MAX);
            let done = if may_swap {
                shrink_node(k, ctx, nid, nr_to_reclaim, priority, Reclaim::Kswapd)
            } else if k.pagecache.nr_pages > 0 {
                shrink_node_may_swap(k, ctx, nid, nr_to_reclaim, priority, Reclaim::Kswapd, false)
            } else {
                Default::default()
            };
            nr_reclaimed += done.reclaimed;
            if sc_order > 0 && nr_reclaimed >= compact_gap(sc_order) {
                sc_order = 0;
            }
            if done.scanned.max(done.reclaimed) >= nr_to_reclaim {
                raise_priority = false;
            }
            nr_boost_reclaim -= nr_boost_reclaim.min(done.reclaimed);
            if nr_boost_reclaim > 0 && done.reclaimed == 0 {
                break 'restart Ended::Gave;
            }
            if raise_priority || done.reclaimed == 0 {
                priority -= 1;
            }
            if priority < 1 {
                break 'restart Ended::Gave;
            }
        }
    };
    if matches!(ended, Ended::Gave) && nr_reclaimed == 0 {
        k.pgdat[nid].kswapd.kswapd_failures += 1;
    }
    crate::mm::workingset::snapshot_refaults(k, None, nid);
    if nr_reclaimed > 0 {
        k.pgdat[nid].kswapd.kswapd_failures = 0;
    }
    // The boost this run was woken for is spent, reclaimed or not.
    let zone = &mut k.pgdat[nid].zone;
    zone.watermark_boost -= zone.watermark_boost.min(zone_boost);
    if zone_boost > 0 {
        // A fragmenting fallback boosted the watermarks: with the space reclaimed, kcompactd
        // defragments pageblocks.
        wakeup_kcompactd(k, nid, PAGEBLOCK_ORDER, ctx.now_ns);
    }
    (nr_reclaimed, sc_order)
}

/// kswapd_age_node: while node `nid`'s inactive anon list is low, deactivate a batch from every
/// memcg's active list there so pages get a chance to be referenced before reclaim.
pub(crate) fn kswapd_age_node_classic(k: &mut Kernel, ctx: &mut Ctx, nid: usize) {
    // can_age_anon_pages: swap to reclaim them to, or a lower tier to demote them to.
    if k.swap.nr_swap_pages() == 0 && !crate::mm::numa_balancing::can_demote(k, nid) {
        return;
    }
    let (inactive, active) = k.memcgs.iter().fold((0, 0), |(i, a), cg| {
        (
            i + cg.lruvec_of(nid).lru_pages(false, false),
            a + cg.lruvec_of(nid).lru_pages(false, true),
        )
    });
    if !inactive_is_low_pages(inactive, active) {
        return;
    }
    for memcg in 0..k.memcgs.len() as u16 {
        shrink_active_list(k, ctx, memcg, nid, SWAP_CLUSTER_MAX, false, Reclaim::Kswapd);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::content::ContentClass;
    use crate::mm::memory::touch;
    use crate::mm::mmap::ThpAdvice;
    use crate::scenario::Scenario;

    /// Two nodes of 64M, one socket each (CPU 1 on node 1), swapping to an SSD.
    fn two_nodes_cpu1_on_node1() -> Kernel {
        let text = r#"
[machine]
cpus = 2
memory = "64M"
[machine.topology]
sockets = 2
[[machine.node]]
memory = "64M"
socket = 1
[[machine.swap]]
kind = "ssd"
size = "128M"
profile = "nvme"
[kernel]
version = "6.18"
[[workload]]
kind = "usemem"
nproc = 1
size = "4M"
"#;
        let k = Kernel::new(&Scenario::from_toml_str(text).unwrap());
        assert_eq!((k.nodes.cpu_to_node(0), k.nodes.cpu_to_node(1)), (0, 1));
        assert!(k.pgdat[1].has_kthreads);
        k
    }

    /// The node's counter `name` from its nodeN/vmstat.
    fn node_stat(k: &Kernel, nid: usize, name: &str) -> u64 {
        let v = k.node_vmstat(nid);
        v.iter().find(|(n, _)| *n == name).expect("a node stat").1
    }

    #[test]
    fn kswapd1_reclaims_node_1_and_leaves_node_0_alone() {
        let mut k = two_nodes_cpu1_on_node1();
        let mut ctx = Ctx::new(1, 0);
        let mm = k.new_mm(0, ContentClass::Usemem);
        let pages = k.nodes.node_pages(1);
        k.mms[mm as usize].mmap(0, pages, ThpAdvice::NoHugepage);
        // CPU 1 faults on node 1 until it is below its high watermark (still above low: the
        // fast path has not spilled to node 0).
        let high = k.node_zone(1).wmark_pages(Wmark::High);
        let mut index = 0;
        while k.node_zone(1).nr_free_pages() >= high {
            touch(&mut k, &mut ctx, mm, 0, index, pages, true).unwrap();
            index += 1;
        }
        let node0_lru: Vec<u64> = k
            .memcgs
            .iter()
            .map(|cg| cg.lruvec_of(0).nr_pages())
            .collect();
        assert_eq!(
            node0_lru.iter().sum::<u64>(),
            0,
            "nothing was allocated on node 0"
        );
        let node0_free = k.node_zone(0).nr_free_pages();
        let node1_lru_before = k.memcgs[0].lruvec_of(1).nr_pages();
        assert!(node1_lru_before >= index as u64);
        let node1 = &mut k.pgdat[1];
        wakeup_kswapd(&node1.zone, &mut node1.kswapd, Gfp::GFP_HIGHUSER_MOVABLE, 0);
        assert!(kswapd_should_run(&k, 1) && !kswapd_should_run(&k, 0));
        // Its first passes find the pages young; their swap writes complete later.
        let mut reclaimed = 0;
        for _ in 0..20 {
            if !kswapd_should_run(&k, 1) {
                break;
            }
            reclaimed += kswapd_run(&mut k, &mut ctx, 1);
            ctx.now_ns += 100_000_000;
        }
        assert!(!kswapd_should_run(&k, 1), "node 1 balanced");
        assert!(reclaimed > 0);
        assert_eq!(node_stat(&k, 1, "pgsteal_kswapd"), reclaimed);
        assert!(node_stat(&k, 1, "pgscan_kswapd") >= reclaimed);
        assert!(k.memcgs[0].lruvec_of(1).nr_pages() < node1_lru_before);
        for name in ["pgscan_kswapd", "pgsteal_kswapd", "pgscan_direct"] {
            assert_eq!(node_stat(&k, 0, name), 0, "{name} on node 0");
        }
        let after: Vec<u64> = k
            .memcgs
            .iter()
            .map(|cg| cg.lruvec_of(0).nr_pages())
            .collect();
        assert_eq!(after, node0_lru);
        assert_eq!(k.node_zone(0).nr_free_pages(), node0_free);
        crate::mm::invariants::check(&k).unwrap();
    }
}
