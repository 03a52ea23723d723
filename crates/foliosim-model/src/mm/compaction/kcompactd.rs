//! kcompactd (mm/compaction.c): the node's background compaction thread. kswapd wakes it
//! before going to sleep, for the order it was woken for (wakeup_kcompactd), and so does the
//! allocator's wakeup_kswapd for callers that will not reclaim themselves when the node is
//! balanced at order 0; it then compacts in SYNC_LIGHT mode (kcompactd_do_work), deferring
//! like sync direct compaction. Every 500 ms it also checks the node's fragmentation score and,
//! above 100 - vm.compaction_proactiveness (+ leeway), compacts the whole zone until the score
//! is below the low mark (proactive compaction), backing off 64 x when that made no progress.

use super::fragmentation::{fragmentation_score_node, fragmentation_score_wmark};
use super::suitable::compaction_suit_allocation_order;
use super::{compact_zone, CompactControl, CompactResult, Compaction, COMPACT_MAX_DEFER_SHIFT};
use crate::cpu_cost::CpuCost;
use crate::engine::Ctx;
use crate::mm::gfp::Gfp;
use crate::mm::kthread::{KthreadKind, KthreadNext};
use crate::mm::migrate::MigrateMode;
use crate::mm::mmzone::PgData;
use crate::mm::page_alloc::AllocFlags;
use crate::mm::vmstat::VmEvent;
use crate::mm::Kernel;

/// HPAGE_FRAG_CHECK_INTERVAL_MSEC: the proactive check's period.
pub const HPAGE_FRAG_CHECK_INTERVAL_NS: u64 = 500_000_000;

/// kcompactd's part of the node (pglist_data).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct KcompactdState {
    /// pgdat->kcompactd_max_order: the largest order asked for since the last run.
    pub max_order: u32,
    /// Woken (wake_up_interruptible on kcompactd_wait) and not yet run.
    pub woken: bool,
    /// When the current timed sleep ends.
    pub timer_ns: u64,
}

/// The thread's first sleep, from boot: the 500 ms timer, or none when proactive compaction
/// is off (MAX_SCHEDULE_TIMEOUT).
pub fn boot_timer_ns(k: &mut Kernel, nid: usize) -> Option<u64> {
    if k.compaction.sysctl.proactiveness == 0 {
        return None;
    }
    k.pgdat[nid].kcompactd.timer_ns = HPAGE_FRAG_CHECK_INTERVAL_NS;
    Some(HPAGE_FRAG_CHECK_INTERVAL_NS)
}

/// Sleep for `timeout_ns` (or until woken, when there is no timer).
fn sleep(kc: &mut KcompactdState, c: &Compaction, now_ns: u64, timeout_ns: u64) -> KthreadNext {
    if c.sysctl.proactiveness == 0 {
        return KthreadNext::Wait;
    }
    kc.timer_ns = now_ns + timeout_ns;
    KthreadNext::SleepNs(timeout_ns)
}

/// One turn of kcompactd's loop: requested work if woken for an order, else (the timer) the
/// proactive check.
pub fn kcompactd_run(k: &mut Kernel, ctx: &mut Ctx, nid: usize) -> KthreadNext {
    k.pgdat[nid].kcompactd.woken = false;
    if k.pgdat[nid].kcompactd.max_order > 0 {
        kcompactd_do_work(k, ctx, nid);
        let kc = &mut k.pgdat[nid].kcompactd;
        return sleep(kc, &k.compaction, ctx.now_ns, HPAGE_FRAG_CHECK_INTERVAL_NS);
    }
    if k.compaction.sysctl.proactiveness == 0 {
        return KthreadNext::Wait;
    }
    let timer_ns = k.pgdat[nid].kcompactd.timer_ns;
    if ctx.now_ns < timer_ns {
        // Woken with nothing requested: the wait goes on until the timer.
        return KthreadNext::SleepNs(timer_ns - ctx.now_ns);
    }
    let mut timeout_ns = HPAGE_FRAG_CHECK_INTERVAL_NS;
    ctx.spend(CpuCost::FragmentationScore, k.cost.fragmentation_score_ns);
    if should_proactive_compact_node(&k.pgdat[nid], &k.compaction) {
        let prev_score = fragmentation_score_node(k.pgdat[nid].zone.free_area());
        compact_node(k, ctx, nid, true);
        let score = fragmentation_score_node(k.pgdat[nid].zone.free_area());
        if score >= prev_score {
            // No progress: back off.
            timeout_ns <<= COMPACT_MAX_DEFER_SHIFT;
        }
    }
    let kc = &mut k.pgdat[nid].kcompactd;
    sleep(kc, &k.compaction, ctx.now_ns, timeout_ns)
}

/// should_proactive_compact_node: proactiveness on, kswapd asleep, and the node's score above
/// the high mark.
fn should_proactive_compact_node(pgdat: &PgData, c: &Compaction) -> bool {
    if c.sysctl.proactiveness == 0 || pgdat.kswapd.woken {
        return false;
    }
    fragmentation_score_node(pgdat.zone.free_area()) > fragmentation_score_wmark(c, false)
}

/// kcompactd_node_suitable: would compaction for the requested order run (not skipped, not
/// already satisfied)?
fn kcompactd_node_suitable(pgdat: &PgData, c: &Compaction) -> bool {
    let order = pgdat.kcompactd.max_order;
    compaction_suit_allocation_order(&pgdat.zone, c, order, AllocFlags::WMARK_MIN, false)
        == CompactResult::Continue
}

/// wakeup_kcompactd: ask for a block of `order`; wake the thread if it sleeps and compaction
/// for that order would run.
pub fn wakeup_kcompactd(k: &mut Kernel, nid: usize, order: u32, now_ns: u64) {
    if order == 0 {
        return;
    }
    let kc = &mut k.pgdat[nid].kcompactd;
    kc.max_order = kc.max_order.max(order);
    if kc.woken || !kcompactd_node_suitable(&k.pgdat[nid], &k.compaction) {
        return;
    }
    k.pgdat[nid].kcompactd.woken = true;
    k.kthreads.wake(KthreadKind::Kcompactd { nid }, now_ns);
}

/// kcompactd_do_work: compact for the requested order in SYNC_LIGHT mode, unless deferred or
/// not suitable; a full pass without success drains the per-CPU lists and defers.
fn kcompactd_do_work(k: &mut Kernel, ctx: &mut Ctx, nid: usize) {
    let order = k.pgdat[nid].kcompactd.max_order;
    let mut cc = CompactControl::new(nid, order as i32, Gfp::GFP_KERNEL);
    cc.mode = MigrateMode::SyncLight;
    k.vmstat.count(VmEvent::CompactDaemonWake, 1);
    let runs = !k.pgdat[nid].compact.compaction_deferred(order)
        && kcompactd_node_suitable(&k.pgdat[nid], &k.compaction);
    if runs {
        match compact_zone(k, ctx, &mut cc, false) {
            CompactResult::Success => k.pgdat[nid].compact.compaction_defer_reset(order, false),
            CompactResult::PartialSkipped | CompactResult::Complete => {
                // Freed pages may be stranded on per-CPU lists.
                k.pgdat[nid].zone.drain_all_pages(ctx);
                k.pgdat[nid].compact.defer_compaction(order);
            }
            _ => {}
        }
        k.vmstat.count(
            VmEvent::CompactDaemonMigrateScanned,
            cc.total_migrate_scanned,
        );
        k.vmstat
            .count(VmEvent::CompactDaemonFreeScanned, cc.total_free_scanned);
    }
    let kc = &mut k.pgdat[nid].kcompactd;
    if kc.max_order <= order {
        kc.max_order = 0;
    }
}

/// compact_node: the whole zone, skip bits ignored; MIGRATE_SYNC for compact_memory,
/// SYNC_LIGHT for proactive compaction (which stops at the low score and counts as
/// kcompactd's scanning).
pub fn compact_node(k: &mut Kernel, ctx: &mut Ctx, nid: usize, proactive: bool) {
    let mut cc = CompactControl::new(nid, -1, Gfp::GFP_KERNEL);
    cc.mode = if proactive {
        MigrateMode::SyncLight
    } else {
        MigrateMode::Sync
    };
    cc.ignore_skip_hint = true;
    cc.whole_zone = true;
    cc.proactive_compaction = proactive;
    compact_zone(k, ctx, &mut cc, false);
    if proactive {
        k.vmstat.count(
            VmEvent::CompactDaemonMigrateScanned,
            cc.total_migrate_scanned,
        );
        k.vmstat
            .count(VmEvent::CompactDaemonFreeScanned, cc.total_free_scanned);
    }
}
