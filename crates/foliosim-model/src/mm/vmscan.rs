//! Reclaim (mm/vmscan.c): global direct reclaim, memcg reclaim and kswapd (kswapd.rs) over the
//! anon and file LRU lists (how much of each: scan_count.rs), shrink_folio_list's swap-out of
//! each isolated anonymous folio, and of page-cache folios (file.rs). Which folios reclaim
//! takes is the reclaim-list policy's (lru_policy.rs): the classic lists here, or MGLRU.

pub mod file;
pub mod kswapd;
pub mod lru_policy;
pub mod scan_count;

// The reclaim-list policies a scenario may name (`kernel.lru_policy`): one file each, one
// word here (docs/extending.md).
crate::registry::registry!(LRU_POLICIES: lru_policy::LruPolicyEntry =
    lru_classic,
    lru_gen,
    #[cfg(test)]
    lru_classic_no_workingset, // docs/extending.md's worked example: test builds only
);

use super::folio::{flags, FolioTable};
use super::gfp::{Gfp, GfpZone};
use super::huge_memory::split_folio;
use super::kthread::KthreadKind;
use super::memcontrol::swap as memcg_swap;
use super::memcontrol::{HZ, JIFFY_NS};
use super::mempolicy::policy::ALL_NODES;
use super::numa_balancing;
use super::page_io::swap_writepage;
use super::rmap::try_to_unmap;
use super::shrinker::shrink_slab;
use super::swap_state::{folio_add_to_swap_cache, folio_delete_from_swap_cache};
use super::tlb::TlbUnmapBatch;
use super::vmstat::{MthpStat, VmEvent};
use super::{filemap, preempt, workingset, Kernel};
use crate::cpu_cost::CpuCost;
use crate::engine::{trace, Ctx, WaitKind};
use crate::scenario::PMD_ORDER;
use std::collections::VecDeque;

/// SWAP_CLUSTER_MAX: pages isolated per batch, and the least a reclaim call aims for.
pub const SWAP_CLUSTER_MAX: u64 = 32;
const DEF_PRIORITY: u32 = 12;

/// Which reclaim this is (scan_control): the kernel counts /proc/vmstat's
/// pgscan_direct/pgsteal_direct only for global reclaim (`!cgroup_reclaim(sc)`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Reclaim {
    /// try_to_free_pages: the zone ran out.
    Global,
    /// try_to_free_mem_cgroup_pages: a memcg is at its limit.
    Memcg,
    /// reclaim_pages for MADV_PAGEOUT: references ignored.
    Pageout,
    /// balance_pgdat: kswapd's background reclaim, counted as pgscan_kswapd/pgsteal_kswapd.
    Kswapd,
}

/// What a shrink pass did: pages reclaimed, and pages isolated from the inactive lists
/// (sc->nr_reclaimed, sc->nr_scanned).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct ShrinkCount {
    pub reclaimed: u64,
    pub scanned: u64,
}

impl std::ops::AddAssign for ShrinkCount {
    fn add_assign(&mut self, rhs: ShrinkCount) {
        self.reclaimed += rhs.reclaimed;
        self.scanned += rhs.scanned;
    }
}

/// What shrink_folio_list did with its list.
#[derive(Default)]
pub struct ShrinkResult {
    pub nr_reclaimed: u64,
    /// Folios to put back on the LRU, and whether they go to the active list.
    pub putback: Vec<(u32, bool)>,
    /// Pages written out (stat->nr_pageout), for lru_note_cost.
    pub nr_pageout: u64,
    /// Pages found under writeback (stat->nr_writeback) and, by kswapd, cycling back under
    /// writeback (stat->nr_immediate).
    pub nr_writeback: u64,
    pub nr_immediate: u64,
}

/// try_to_free_mem_cgroup_pages: reclaim at least max(nr_pages, SWAP_CLUSTER_MAX) pages from
/// the memcg's subtree on each node of the local zonelist (shrink_zones), raising scan
/// pressure (lowering priority) until done; if nothing came
/// back while memcgs were left alone for their memory.low, once more breaking into it
/// (do_try_to_free_pages' memcg_low_reclaim retry). Returns pages reclaimed.
pub fn try_to_free_mem_cgroup_pages(
    k: &mut Kernel,
    ctx: &mut Ctx,
    memcg: u16,
    nr_pages: u64,
) -> u64 {
    let nr_to_reclaim = nr_pages.max(SWAP_CLUSTER_MAX);
    let start_ns = ctx.now_ns;
    let mut reclaimed = 0;
    let mut low_reclaim = false;
    let zonelist = k
        .nodes
        .reclaim_zonelist_vec(k.numa_node_id(ctx), Gfp(0), ALL_NODES);
    loop {
        let mut low_skipped = false;
        for priority in (0..=DEF_PRIORITY).rev() {
            for &nid in &zonelist {
                let mut sc = scan_count::prepare_scan_control(
                    k,
                    nid,
                    Some(memcg),
                    Reclaim::Memcg,
                    priority,
                    true,
                );
                sc.memcg_low_reclaim = low_reclaim;
                let want = nr_to_reclaim.saturating_sub(reclaimed).max(1);
                reclaimed += shrink_node_memcgs(k, ctx, want, &mut sc).reclaimed;
                low_skipped |= sc.memcg_low_skipped;
            }
            if reclaimed >= nr_to_reclaim {
                break;
            }
        }
        if reclaimed > 0 || !low_skipped || low_reclaim {
            break;
        }
        low_reclaim = true;
    }
    for &nid in &zonelist {
        workingset::snapshot_refaults(k, Some(memcg), nid);
    }
    trace::span("memcg reclaim", "", start_ns, ctx.now_ns);
    reclaimed
}

/// shrink_node_memcgs: the target's subtree in mem_cgroup_iter order (pre-order), each memcg
/// with its effective protection worked out first: one within memory.min is left alone, one
/// within memory.low too unless this is a low reclaim (then memory.events `low` counts the
/// breach). Each memcg's LRU, then (memcg reclaim) zswap's shrinker, then its other
/// shrinkers. Stops once `nr_to_reclaim` pages are reclaimed (the kernel's partial walk;
/// it resumes the next walk where this one stopped, the model starts at the target again).
fn shrink_node_memcgs(
    k: &mut Kernel,
    ctx: &mut Ctx,
    nr_to_reclaim: u64,
    sc: &mut scan_count::ScanControl,
) -> ShrinkCount {
    use super::memcontrol::page_counter::{below_low, below_min, calculate_protection};
    use super::memcontrol::{memcg_memory_event, MemcgEvent};
    let target = sc.target;
    let mut done = ShrinkCount::default();
    for i in k.memcg_tree.subtree(target) {
        let memcg = k.memcg_tree.preorder[i];
        calculate_protection(&mut k.memcgs, target, memcg, k.cfg.memory_recursiveprot);
        if below_min(&k.memcgs, target, memcg) {
            continue;
        }
        if below_low(&k.memcgs, target, memcg) {
            if !sc.memcg_low_reclaim {
                sc.memcg_low_skipped = true;
                continue;
            }
            memcg_memory_event(k, memcg, MemcgEvent::Low);
        }
        let want = nr_to_reclaim.saturating_sub(done.reclaimed).max(1);
        let policy = k.cfg.lru_policy;
        done += policy.shrink_lruvec(k, ctx, memcg, want, sc);
        if sc.cgroup_reclaim() {
            // shrink_slab: zswap's shrinker writes cold entries back (if enabled); what it
            // frees is zswap's compressed memory, not folios, so it does not add to `done`.
            super::zswap::shrinker_scan(k, ctx, memcg, sc.priority);
        }
        // The THP deferred split shrinker (mm/shrinker.rs): freed pages, not reclaimed ones.
        shrink_slab(k, ctx, memcg, sc.priority);
        if done.reclaimed >= nr_to_reclaim {
            break;
        }
    }
    done
}

/// try_to_free_pages: global direct reclaim for an allocation of `order` that failed its
/// watermark, in one go (the 4.1 slow path's; 6.18's resumes: [`do_try_to_free_pages`]).
pub fn try_to_free_pages(k: &mut Kernel, ctx: &mut Ctx, gfp: Gfp, _order: u32) -> u64 {
    let mut dr = DirectReclaim::default();
    do_try_to_free_pages(k, ctx, gfp, &mut dr, false).expect("reclaim that may not stop")
}

/// Where do_try_to_free_pages is: kept across a stop of the allocating task (mm/preempt.rs).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct DirectReclaim {
    /// Reclaim began (allocstall counted).
    pub started: bool,
    /// The next priority to scan at; None once done.
    pub priority: Option<u32>,
    /// sc->nr_reclaimed so far.
    pub reclaimed: u64,
    /// sc->memcg_low_reclaim / sc->memcg_low_skipped (the retry into memory.low).
    pub memcg_low_reclaim: bool,
    pub memcg_low_skipped: bool,
}

impl Default for DirectReclaim {
    fn default() -> Self {
        DirectReclaim {
            started: false,
            priority: Some(DEF_PRIORITY),
            reclaimed: 0,
            memcg_low_reclaim: false,
            memcg_low_skipped: false,
        }
    }
}

/// do_try_to_free_pages: every memcg, SWAP_CLUSTER_MAX pages, raising the priority until done
/// (the order matters to the kernel only for compaction_ready, which waits for compaction).
/// Counts allocstall_<zone> for the highest zone the request may use (sc.reclaim_idx =
/// gfp_zone). A direct reclaimer sleeps in reclaim_throttle while kswapd found the node
/// congested (shrink_node) and when the scan at priority 1 reclaimed nothing
/// (consider_reclaim_throttle). When `resumable`, the task stops after such a sleep, or
/// between priorities when it should reschedule (shrink_folio_list's cond_resched): None,
/// `dr` holding where to go on. Returns the pages reclaimed.
pub fn do_try_to_free_pages(
    k: &mut Kernel,
    ctx: &mut Ctx,
    gfp: Gfp,
    dr: &mut DirectReclaim,
    resumable: bool,
) -> Option<u64> {
    let start_ns = ctx.now_ns;
    if !dr.started {
        dr.started = true;
        k.vmstat.count(
            match gfp.zone() {
                GfpZone::Movable => VmEvent::AllocstallMovable,
                _ => VmEvent::AllocstallNormal,
            },
            1,
        );
    }
    let nid = k.alloc_nid(ctx);
    let zonelist = k.nodes.reclaim_zonelist_vec(nid, gfp, k.alloc_nodemask());
    while let Some(priority) = dr.priority {
        // shrink_zones: each node of the zonelist in turn.
        for &zone_nid in &zonelist {
            let want = SWAP_CLUSTER_MAX.saturating_sub(dr.reclaimed);
            let (done, low_skipped) = shrink_node_protected(
                k,
                ctx,
                zone_nid,
                want,
                priority,
                Reclaim::Global,
                true,
                dr.memcg_low_reclaim,
            );
            dr.reclaimed += done.reclaimed;
            dr.memcg_low_skipped |= low_skipped;
        }
        dr.priority = (dr.reclaimed < SWAP_CLUSTER_MAX && priority > 0).then(|| priority - 1);
        if dr.priority.is_none() && dr.reclaimed == 0 && dr.memcg_low_skipped {
            // Untapped memory.low reserves: don't OOM, retry breaking into them.
            dr.priority = Some(DEF_PRIORITY);
            dr.memcg_low_reclaim = true;
            dr.memcg_low_skipped = false;
        }
        let mut slept = false;
        if k.pagecache.lruvec_congested {
            // shrink_node: VMSCAN_THROTTLE_CONGESTED.
            slept |= reclaim_throttle_noprogress(k, ctx, nid);
        }
        if priority == 1 && dr.reclaimed == 0 {
            // consider_reclaim_throttle: VMSCAN_THROTTLE_NOPROGRESS.
            slept |= reclaim_throttle_noprogress(k, ctx, nid);
        }
        let stop = slept || (dr.priority.is_some() && preempt::cond_resched(k, ctx));
        if resumable && k.current.may_stop && stop {
            preempt::note_stop(k, ctx, slept);
            trace::span("direct reclaim", "", start_ns, ctx.now_ns);
            return None;
        }
    }
    if dr.reclaimed > 0 {
        // shrink_node: progress makes a hopeless node worth kswapd's time again.
        for &zone_nid in &zonelist {
            k.pgdat[zone_nid].kswapd.kswapd_failures = 0;
        }
    }
    for &zone_nid in &zonelist {
        workingset::snapshot_refaults(k, None, zone_nid);
    }
    trace::span("direct reclaim", "", start_ns, ctx.now_ns);
    Some(dr.reclaimed)
}

/// reclaim_throttle(VMSCAN_THROTTLE_NOPROGRESS or _CONGESTED) of a direct reclaimer: one
/// jiffy off the CPU, unless skip_throttle_noprogress (kswapd gave up on the node, or at most
/// half of what is reclaimable waits for writeback: reclaim will meet those folios when they
/// cycle back). Returns whether the task slept. (The kernel also ends the sleep early when
/// another reclaimer makes progress; one jiffy is its longest.)
fn reclaim_throttle_noprogress(k: &Kernel, ctx: &mut Ctx, nid: usize) -> bool {
    if k.pgdat[nid].kswapd.kswapd_failures >= kswapd::MAX_RECLAIM_RETRIES {
        return false;
    }
    let writeback: u64 = k
        .memcgs
        .iter()
        .map(|cg| cg.lruvec_of(nid).writeback_in_flight(&k.folios, ctx.now_ns))
        .sum();
    let write_pending = k.pagecache.nr_dirty + writeback;
    if 2 * write_pending <= super::page_alloc::slowpath::zone_reclaimable_pages(k, nid) {
        return false;
    }
    let before_ns = ctx.now_ns;
    preempt::throttle_sleep(k, ctx, JIFFY_NS);
    ctx.now_ns > before_ns
}

/// shrink_node (global reclaim): each memcg's lruvec in turn, in pre-order from the root,
/// skipping protected ones (shrink_node_memcgs), until `nr_to_reclaim` pages are reclaimed.
pub fn shrink_node(
    k: &mut Kernel,
    ctx: &mut Ctx,
    nid: usize,
    nr_to_reclaim: u64,
    priority: u32,
    reclaim: Reclaim,
) -> ShrinkCount {
    shrink_node_may_swap(k, ctx, nid, nr_to_reclaim, priority, reclaim, true)
}

/// shrink_node with sc->may_swap (false for kswapd's boosted reclaim: file pages only).
/// kswapd marks the node when everything it took was dirty (PGDAT_DIRTY, it may then write)
/// or under writeback (PGDAT_WRITEBACK), and stalls when it met folios cycling back before
/// their write completed (nr_immediate).
pub fn shrink_node_may_swap(
    k: &mut Kernel,
    ctx: &mut Ctx,
    nid: usize,
    nr_to_reclaim: u64,
    priority: u32,
    reclaim: Reclaim,
    may_swap: bool,
) -> ShrinkCount {
    shrink_node_protected(
        k,
        ctx,
        nid,
        nr_to_reclaim,
        priority,
        reclaim,
        may_swap,
        false,
    )
    .0
}

/// shrink_node for global reclaim with sc->memcg_low_reclaim = `low_reclaim`; also returns
/// sc->memcg_low_skipped.
#[allow(clippy::too_many_arguments)]
pub fn shrink_node_protected(
    k: &mut Kernel,
    ctx: &mut Ctx,
    nid: usize,
    nr_to_reclaim: u64,
    priority: u32,
    reclaim: Reclaim,
    may_swap: bool,
    low_reclaim: bool,
) -> (ShrinkCount, bool) {
    let mut sc = scan_count::prepare_scan_control(k, nid, None, reclaim, priority, may_swap);
    sc.memcg_low_reclaim = low_reclaim;
    let done = shrink_node_memcgs(k, ctx, nr_to_reclaim, &mut sc);
    if reclaim == Reclaim::Kswapd {
        let nr = sc.nr;
        if nr.writeback > 0 && nr.writeback == nr.taken {
            k.pagecache.pgdat_writeback = true;
        }
        if nr.unqueued_dirty > 0 && nr.unqueued_dirty == nr.file_taken {
            k.pagecache.pgdat_dirty = true;
        }
        // LRUVEC_NODE_CONGESTED: every dirty folio met was written and cycled back unfinished;
        // direct reclaimers throttle on it (do_try_to_free_pages).
        if nr.dirty > 0 && nr.dirty == nr.congested {
            k.pagecache.lruvec_congested = true;
        }
        if nr.immediate > 0 {
            reclaim_throttle(k, ctx);
        }
    }
    (done, sc.memcg_low_skipped)
}

/// reclaim_throttle(VMSCAN_THROTTLE_WRITEBACK): reclaim made no progress while swap writes are
/// in flight; the reclaimer sleeps off the CPU (schedule_timeout, not iowait) until they
/// complete, at most HZ/10. Kernel threads other than kswapd do not sleep here (they may be
/// needed for reclaim to progress). Returns whether it waited.
pub fn reclaim_throttle(k: &Kernel, ctx: &mut Ctx) -> bool {
    if k.kthreads.current(ctx.cpu).is_some_and(|t| !t.is_kswapd()) {
        return false;
    }
    let idle_at = k
        .swap
        .devices
        .iter()
        .map(|d| d.bdev.idle_at_ns())
        .chain(k.pagecache.disk.iter().map(|d| d.bdev.idle_at_ns()))
        .max()
        .unwrap_or(0);
    if idle_at > ctx.now_ns {
        let timeout_ns = HZ / 10 * JIFFY_NS;
        ctx.wait_until(idle_at.min(ctx.now_ns + timeout_ns), WaitKind::Sleep);
        return true;
    }
    false
}

/// inactive_is_low: inactive * int_sqrt(10 * size in GiB) < active.
pub(crate) fn inactive_is_low_pages(inactive: u64, active: u64) -> bool {
    let gib = (inactive + active) >> (30 - 12);
    let ratio = if gib > 0 { (10 * gib).isqrt() } else { 1 };
    inactive * ratio < active
}

/// shrink_lruvec: scan each list of the memcg's lruvec by get_scan_count's targets, in
/// SWAP_CLUSTER_MAX chunks, inactive anon / active anon / inactive file / active file in
/// turn. Once `nr_to_reclaim` is met, the type with less left stops and the other scans only
/// what keeps the two proportional to their targets (not in global direct reclaim at
/// DEF_PRIORITY, which scans its whole target). Then the anon lists are rebalanced if there
/// is swap to age them for.
pub(crate) fn shrink_lruvec_classic(
    k: &mut Kernel,
    ctx: &mut Ctx,
    memcg: u16,
    nr_to_reclaim: u64,
    sc: &mut scan_count::ScanControl,
) -> ShrinkCount {
    use scan_count::{ACTIVE_ANON, ACTIVE_FILE, INACTIVE_ANON, INACTIVE_FILE};
    let lv = k.memcgs[memcg as usize].lruvec_mut(sc.nid);
    let rotated = lv.end_writeback(&mut k.folios, ctx.now_ns);
    k.vmstat.count(VmEvent::Pgrotated, rotated);
    let mut nr = scan_count::get_scan_count(k, sc, memcg);
    let targets = nr;
    let proportional_reclaim = sc.reclaim == Reclaim::Global && sc.priority == DEF_PRIORITY;
    let mut done = ShrinkCount::default();
    while nr[INACTIVE_ANON] > 0 || nr[ACTIVE_FILE] > 0 || nr[INACTIVE_FILE] > 0 {
        for lru in [INACTIVE_ANON, ACTIVE_ANON, INACTIVE_FILE, ACTIVE_FILE] {
            if nr[lru] == 0 {
                continue;
            }
            let n = nr[lru].min(SWAP_CLUSTER_MAX);
            nr[lru] -= n;
            let file = lru >= INACTIVE_FILE;
            if lru == ACTIVE_ANON || lru == ACTIVE_FILE {
                if sc.may_deactivate(file) {
                    shrink_active_list(k, ctx, memcg, sc.nid, n, file, sc.reclaim);
                }
            } else {
                done += shrink_inactive_list(k, ctx, memcg, n, sc, file);
            }
        }
        if done.reclaimed < nr_to_reclaim || proportional_reclaim {
            continue;
        }
        let nr_file = nr[INACTIVE_FILE] + nr[ACTIVE_FILE];
        let nr_anon = nr[INACTIVE_ANON] + nr[ACTIVE_ANON];
        if nr_file == 0 || nr_anon == 0 {
            break;
        }
        // Stop the smaller type; scale the other to the share of its target left.
        let (stop, other, percentage) = if nr_file > nr_anon {
            let target = targets[INACTIVE_ANON] + targets[ACTIVE_ANON] + 1;
            (INACTIVE_ANON, INACTIVE_FILE, nr_anon * 100 / target)
        } else {
            let target = targets[INACTIVE_FILE] + targets[ACTIVE_FILE] + 1;
            (INACTIVE_FILE, INACTIVE_ANON, nr_file * 100 / target)
        };
        nr[stop] = 0;
        nr[stop + 1] = 0;
        for lru in [other, other + 1] {
            let scanned = targets[lru] - nr[lru];
            nr[lru] = targets[lru] * (100 - percentage) / 100;
            nr[lru] -= nr[lru].min(scanned);
        }
    }
    let lv = k.memcgs[memcg as usize].lruvec_of(sc.nid);
    if !k.swap.devices.is_empty()
        && inactive_is_low_pages(lv.inactive_anon.nr_pages, lv.active_anon.nr_pages)
    {
        shrink_active_list(k, ctx, memcg, sc.nid, SWAP_CLUSTER_MAX, false, sc.reclaim);
    }
    done
}

/// shrink_active_list: move `nr_to_scan` pages' worth of folios from the tail of the active
/// list of `file` folios (else anon) of `memcg` on node `nid` to the inactive head, counted as pgrefill (the memcg's;
/// /proc/vmstat's only outside memcg reclaim) and pgdeactivate. folio_referenced clears their
/// young bits, but every folio is deactivated regardless (only executable file folios would
/// stay, and the model maps none); PG_referenced stays, so one more access before reclaim
/// reactivates them. A deactivated folio is marked workingset.
fn shrink_active_list(
    k: &mut Kernel,
    ctx: &mut Ctx,
    memcg: u16,
    nid: usize,
    nr_to_scan: u64,
    file: bool,
    reclaim: Reclaim,
) {
    let mut scanned = 0;
    let mut moved = 0u64;
    let mut referenced_ns = 0;
    while scanned < nr_to_scan {
        let cg = &mut k.memcgs[memcg as usize];
        let lv = cg.lruvec_mut(nid);
        let Some(pfn) = lv.list(file, true).tail() else {
            break;
        };
        lv.list(file, true).remove(&mut k.folios, pfn);
        if file {
            filemap::rmap::folio_referenced_file(k, ctx, pfn);
        } else {
            referenced_ns += super::rmap::folio_referenced_ns(k, pfn);
            clear_flush_young(k, ctx, pfn);
        }
        k.folios.set(pfn, flags::WORKINGSET);
        k.folios.clear(pfn, flags::ACTIVE | flags::YOUNG);
        super::access::young_cleared(k, pfn);
        let cg = &mut k.memcgs[memcg as usize];
        cg.lruvec_mut(nid)
            .list(file, false)
            .add_head(&mut k.folios, pfn);
        let nr = k.folios.nr_pages(pfn) as u64;
        scanned += nr;
        moved += 1;
        cg.count(VmEvent::Pgdeactivate, nr);
        k.vmstat.count(VmEvent::Pgdeactivate, nr);
    }
    let cg = &mut k.memcgs[memcg as usize];
    cg.count(VmEvent::Pgrefill, scanned);
    if reclaim != Reclaim::Memcg {
        k.vmstat.count(VmEvent::Pgrefill, scanned);
    }
    ctx.spend(CpuCost::FolioReferenced, referenced_ns);
    k.memcgs[memcg as usize]
        .lruvec_mut(nid)
        .lru_lock
        .hold(ctx, k.cost.lru_move_ns * moved);
}

/// shrink_inactive_list: isolate from the tail of the inactive list of `file` folios (else
/// anon), shrink, put back what stays. Scans and steals count as pgscan_anon/pgsteal_anon (or
/// _file) and in the memcg's own stats always, and as /proc/vmstat's
/// pgscan_direct/pgsteal_direct only in global direct reclaim (pgscan_kswapd/pgsteal_kswapd for
/// kswapd's). The cost of what was rotated or written is noted for get_scan_count; for file
/// folios, a batch of nothing but dirty unqueued ones wakes the flusher.
fn shrink_inactive_list(
    k: &mut Kernel,
    ctx: &mut Ctx,
    memcg: u16,
    nr_to_scan: u64,
    sc: &mut scan_count::ScanControl,
    file: bool,
) -> ShrinkCount {
    let reclaim = sc.reclaim;
    // Writes that completed while this reclaim ran have rotated their folios to the tail
    // (folio_end_writeback runs at completion, not once per priority).
    let nid = sc.nid;
    let rotated = k.memcgs[memcg as usize]
        .lruvec_mut(nid)
        .end_writeback(&mut k.folios, ctx.now_ns);
    k.vmstat.count(VmEvent::Pgrotated, rotated);
    let mut list = Vec::with_capacity(nr_to_scan.min(SWAP_CLUSTER_MAX) as usize);
    let mut scanned = 0;
    while scanned < nr_to_scan {
        let lv = k.memcgs[memcg as usize].lruvec_mut(nid);
        let Some(pfn) = lv.list(file, false).tail() else {
            break;
        };
        lv.del_folio(&mut k.folios, pfn);
        scanned += k.folios.nr_pages(pfn) as u64;
        list.push(pfn);
    }
    if list.is_empty() {
        return ShrinkCount::default();
    }
    k.memcgs[memcg as usize]
        .lruvec_mut(nid)
        .lru_lock
        .hold(ctx, k.cost.lru_move_ns * list.len() as u64);
    let (pgscan, pgsteal) = match reclaim {
        Reclaim::Kswapd => (VmEvent::PgscanKswapd, VmEvent::PgstealKswapd),
        // reclaimer_offset: khugepaged's direct reclaim has counters of its own.
        _ if k.kthreads.current(ctx.cpu) == Some(KthreadKind::Khugepaged) => {
            (VmEvent::PgscanKhugepaged, VmEvent::PgstealKhugepaged)
        }
        _ => (VmEvent::PgscanDirect, VmEvent::PgstealDirect),
    };
    let (pgscan_type, pgsteal_type) = if file {
        (VmEvent::PgscanFile, VmEvent::PgstealFile)
    } else {
        (VmEvent::PgscanAnon, VmEvent::PgstealAnon)
    };
    let global = matches!(reclaim, Reclaim::Global | Reclaim::Kswapd);
    k.memcgs[memcg as usize].count(pgscan, scanned);
    // Node stats (PGSCAN_* and PGSTEAL_* are node_stat_items): /proc/vmstat sums the nodes'.
    let node_events = &mut k.pgdat[nid].zone.events;
    node_events.count(pgscan_type, scanned);
    if global {
        node_events.count(pgscan, scanned);
    }
    let mut stat = scan_count::ReclaimStat::default();
    let result = if file {
        file::shrink_file_folio_list(k, ctx, list, sc, memcg, &mut stat)
    } else {
        let r = shrink_folio_list(k, ctx, list, reclaim, sc.target);
        stat.writeback += r.nr_writeback;
        stat.immediate += r.nr_immediate;
        r
    };
    k.memcgs[memcg as usize].count(pgsteal, result.nr_reclaimed);
    let node_events = &mut k.pgdat[nid].zone.events;
    node_events.count(pgsteal_type, result.nr_reclaimed);
    if global {
        node_events.count(pgsteal, result.nr_reclaimed);
    }
    putback_folios(k, ctx, &result.putback, true);
    scan_count::lru_note_cost(
        k,
        memcg,
        nid,
        file,
        result.nr_pageout,
        scanned - result.nr_reclaimed,
    );
    if file && stat.unqueued_dirty == scanned {
        super::page_writeback::wakeup_flusher_threads(k, ctx.now_ns);
        if sc.cgroup_reclaim() && !k.memcgs[memcg as usize].on_dfl {
            reclaim_throttle(k, ctx);
        }
    }
    stat.taken = scanned;
    stat.file_taken = if file { scanned } else { 0 };
    let nr = &mut sc.nr;
    nr.dirty += stat.dirty;
    nr.unqueued_dirty += stat.unqueued_dirty;
    nr.congested += stat.congested;
    nr.writeback += stat.writeback;
    nr.immediate += stat.immediate;
    nr.taken += stat.taken;
    nr.file_taken += stat.file_taken;
    ShrinkCount {
        reclaimed: result.nr_reclaimed,
        scanned,
    }
}

/// move_folios_to_lru: return kept folios to their lruvecs (memcg and node), the lru_lock
/// taken once per lruvec for the whole list (the caller holds it across the loop; it relocks only when the next
/// folio belongs to another lruvec).
/// `move_to_lru`: reclaim's move_folios_to_lru, where an active folio ages its lruvec
/// (workingset_age_nonresident); MADV_PAGEOUT's folio_putback_lru does not.
pub fn putback_folios(k: &mut Kernel, ctx: &mut Ctx, putback: &[(u32, bool)], move_to_lru: bool) {
    let mut moved_per_lruvec: Vec<(usize, usize, u64)> = Vec::new();
    for &(pfn, active) in putback {
        let memcg = k.folios.memcg(pfn as usize) as usize;
        let nid = k.nodes.nid(pfn);
        match moved_per_lruvec
            .iter_mut()
            .find(|(m, n, _)| *m == memcg && *n == nid)
        {
            Some((_, _, moved)) => *moved += 1,
            None => moved_per_lruvec.push((memcg, nid, 1)),
        }
        let cg = &mut k.memcgs[memcg];
        if active {
            let nr = k.folios.nr_pages(pfn) as u64;
            k.folios.set(pfn, flags::ACTIVE);
            cg.lruvec_mut(nid).lruvec_add_folio(&mut k.folios, pfn);
            cg.count(VmEvent::Pgactivate, nr);
            k.vmstat.count(VmEvent::Pgactivate, nr);
            if move_to_lru {
                workingset::age_nonresident(k, memcg as u16, nid, nr);
            }
        } else {
            k.folios.clear(pfn, flags::ACTIVE);
            cg.lruvec_mut(nid).lruvec_add_folio(&mut k.folios, pfn);
        }
    }
    for (memcg, nid, moved) in moved_per_lruvec {
        k.memcgs[memcg]
            .lruvec_mut(nid)
            .lru_lock
            .hold(ctx, k.cost.lru_move_ns * moved);
    }
}

/// shrink_folio_list for isolated anonymous folios (spec-swap.md §8). `Reclaim::Pageout`
/// (MADV_PAGEOUT's reclaim_pages) ignores references. `target`: the memcg reclaim works for
/// (ROOT_MEMCG when global), whose age the shadows of evicted folios carry.
pub fn shrink_folio_list(
    k: &mut Kernel,
    ctx: &mut Ctx,
    folios: Vec<u32>,
    reclaim: Reclaim,
    target: u16,
) -> ShrinkResult {
    let mut list: VecDeque<u32> = folios.into();
    let mut tlb = TlbUnmapBatch::new(k.cfg.tlb_batched_unmap);
    // Sized for the list: grown push by push it reallocated ~2.5 times a call.
    let mut result = ShrinkResult {
        putback: Vec::with_capacity(list.len()),
        ..ShrinkResult::default()
    };
    // Before reclaiming a folio, try to move it a tier down (do_demote_pass); the folios that
    // fail to demote go round again to be reclaimed.
    // Reclaim's list is one node's (MADV_PAGEOUT's may mix nodes, but it never demotes).
    let nid = list.front().map_or(0, |&pfn| k.nodes.nid(pfn));
    let mut do_demote = reclaim != Reclaim::Pageout && numa_balancing::can_demote(k, nid);
    let mut demote = Vec::new();
    'retry: loop {
        while let Some(pfn) = list.pop_front() {
            // folio_trylock fails while a swap-in read (readahead) is in flight.
            if filemap::folio_read_pending(k, pfn, ctx.now_ns) {
                result.putback.push((pfn, false));
                continue;
            }
            if k.folios.test(pfn, flags::WRITEBACK) {
                if k.folios.writeback_done_ns(pfn) > ctx.now_ns {
                    folio_under_writeback(k, ctx, pfn, reclaim, target, &mut list, &mut result);
                    continue;
                }
                // Written while isolated: folio_end_writeback found it off the LRU.
                k.folios.clear(pfn, flags::WRITEBACK | flags::RECLAIM);
            }
            if reclaim != Reclaim::Pageout {
                match check_references(k, ctx, pfn) {
                    // activate_locked
                    FolioReferences::Activate => {
                        result.putback.push((pfn, true));
                        continue;
                    }
                    // keep_locked
                    FolioReferences::Keep => {
                        result.putback.push((pfn, false));
                        continue;
                    }
                    FolioReferences::Reclaim => {}
                }
            }
            if k.folios.is_pinned(pfn) {
                // try_to_unmap cannot replace a pinned exclusive anon page's PTEs: activate_locked.
                // (The kernel finds out after add_to_swap; the model stops before taking slots.)
                result.putback.push((pfn, true));
                continue;
            }
            if k.folios.test(pfn, flags::PARTIALLY_MAPPED) {
                // Split partially mapped folios right away: the unmapped pages are freed without
                // IO (the split frees them; an unmapped head goes with the isolation reference).
                split_folio(k, ctx, pfn, Some(&mut list));
                if k.folios.mapcount(pfn as usize) == 0 {
                    k.folio_free(ctx, pfn);
                    continue;
                }
            }
            if do_demote {
                demote.push(pfn);
                continue;
            }
            let swap_backed = if super::shmem::in_page_cache(k, pfn) {
                // pageout() -> shmem_writeout: into the swap cache, or redirty.
                super::shmem::swap::shmem_writeout(k, ctx, pfn, &mut list)
            } else {
                k.folios.test(pfn, flags::SWAPCACHE) || add_to_swap(k, ctx, pfn, &mut list)
            };
            if !swap_backed {
                // activate_locked_split: no slot even for order 0.
                result.putback.push((pfn, true));
                continue;
            }
            ctx.spend(CpuCost::ShrinkFolioList, k.cost.shrink_folio_ns);
            if k.folios.mapcount(pfn as usize) > 0 {
                try_to_unmap(k, ctx, pfn, &mut tlb);
            }
            if k.folios.test(pfn, flags::DIRTY) {
                if let Some(active) = pageout(k, ctx, pfn, &mut tlb, &mut result) {
                    result.putback.push((pfn, active));
                    continue;
                }
            }
            result.nr_reclaimed += remove_mapping(k, ctx, pfn, target);
        }
        if demote.is_empty() {
            break 'retry;
        }
        result.nr_reclaimed +=
            numa_balancing::demote_folio_list(k, ctx, &mut demote, nid, reclaim == Reclaim::Kswapd);
        if demote.is_empty() {
            break 'retry;
        }
        list.extend(demote.drain(..));
        do_demote = false;
    }
    tlb.flush(k, ctx);
    result
}

/// folio_check_references (the lru policy's) after the rmap walk that clears the young bits
/// (its cost).
#[inline]
fn check_references(k: &mut Kernel, ctx: &mut Ctx, pfn: u32) -> FolioReferences {
    ctx.spend(
        CpuCost::FolioReferenced,
        super::rmap::folio_referenced_ns(k, pfn),
    );
    clear_flush_young(k, ctx, pfn);
    let policy = k.cfg.lru_policy;
    let refs = policy.folio_check_references(k, ctx, pfn);
    super::access::young_cleared(k, pfn);
    refs
}

/// pageout() of a dirty, unmapped swap-cache folio. Returns where the folio goes back when
/// it stays: Some(true) activate_locked (the device refused the write: zram or brd out of
/// memory), Some(false) keep (under writeback); None once written clean, to be freed.
#[inline]
fn pageout(
    k: &mut Kernel,
    ctx: &mut Ctx,
    pfn: u32,
    tlb: &mut TlbUnmapBatch,
    result: &mut ShrinkResult,
) -> Option<bool> {
    tlb.flush_dirty(k, ctx);
    // PG_reclaim, so that folio_end_writeback rotates it to the tail.
    k.folios.set(pfn, flags::RECLAIM);
    swap_writepage(k, ctx, pfn);
    if !k.folios.test(pfn, flags::WRITEBACK) {
        k.folios.clear(pfn, flags::RECLAIM);
    }
    if k.folios.test(pfn, flags::DIRTY) {
        return Some(true);
    }
    result.nr_pageout += k.folios.nr_pages(pfn) as u64;
    k.folios.test(pfn, flags::WRITEBACK).then_some(false)
}

/// __remove_mapping: clean, unmapped, in the swap cache: drop it, leaving its shadow, and
/// free the folio. Returns the pages freed.
#[inline]
fn remove_mapping(k: &mut Kernel, ctx: &mut Ctx, pfn: u32, target: u16) -> u64 {
    let nr = k.folios.nr_pages(pfn);
    let shadow = workingset::workingset_eviction(k, pfn, target);
    folio_delete_from_swap_cache(k, ctx, pfn, shadow);
    k.folio_free(ctx, pfn);
    nr as u64
}

/// shrink_folio_list's cases for a folio whose write is still in flight (mm/vmscan.c, 6.18).
/// 1: kswapd meets a PG_reclaim folio again while the node is flagged PGDAT_WRITEBACK:
/// folios cycle faster than they are written (nr_immediate; kswapd throttles). 2: mark it
/// PG_reclaim to be rotated to the tail at completion, count nr_writeback. Both activate it
/// (off the inactive list until the write is done). 3 (cgroup v1 memcg reclaim of a
/// PG_reclaim folio): folio_wait_writeback, then the folio is looked at again.
fn folio_under_writeback(
    k: &mut Kernel,
    ctx: &mut Ctx,
    pfn: u32,
    reclaim: Reclaim,
    target: u16,
    list: &mut VecDeque<u32>,
    result: &mut ShrinkResult,
) {
    let nr = k.folios.nr_pages(pfn) as u64;
    let reclaim_flag = k.folios.test(pfn, flags::RECLAIM);
    // writeback_throttling_sane: not cgroup v1 memcg reclaim.
    let sane = reclaim != Reclaim::Memcg || k.memcgs[target as usize].on_dfl;
    if reclaim == Reclaim::Kswapd && reclaim_flag && k.pagecache.pgdat_writeback {
        result.nr_immediate += nr;
    } else if sane || !reclaim_flag {
        k.folios.set(pfn, flags::RECLAIM);
        result.nr_writeback += nr;
    } else {
        ctx.wait_until(k.folios.writeback_done_ns(pfn), WaitKind::Io);
        k.folios.clear(pfn, flags::WRITEBACK | flags::RECLAIM);
        list.push_back(pfn);
        return;
    }
    result.putback.push((pfn, true));
}

/// What reclaim does with a folio after looking at its references.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum FolioReferences {
    /// To the active list.
    Activate,
    /// Back to the inactive list for another trip.
    Keep,
    Reclaim,
}

/// The TLB work of folio_referenced clearing a mapped anonymous folio's young bits
/// (folio_referenced_one -> ptep/pmdp_clear_flush_young_notify): arch-specific, nothing on x86,
/// TLBIs on arm64 (mm/tlb/arm64.rs).
fn clear_flush_young(k: &mut Kernel, ctx: &mut Ctx, pfn: u32) {
    let f = &k.folios;
    if !f.test(pfn, flags::YOUNG) || f.mapcount(pfn as usize) == 0 {
        return;
    }
    let order = f.order[pfn as usize] as u32;
    let pmd_mapped = f.test(pfn, flags::PMD_MAPPED);
    let arch = k.cfg.tlb;
    arch.clear_flush_young(k, ctx, order, pmd_mapped);
}

/// folio_check_references for an anonymous folio with one mapping: folio_referenced tests and
/// clears the young bits, PG_referenced is tested and cleared. Young: PG_referenced is set and
/// the folio gets another trip round the inactive list, or is activated if it was referenced
/// already (used twice). Not young: reclaim it. So a folio faulted in (young) and never touched
/// again is kept once and reclaimed on its second trip, without activation.
pub(crate) fn folio_check_references(f: &mut FolioTable, pfn: u32) -> FolioReferences {
    let young = f.test(pfn, flags::YOUNG);
    let referenced = f.test(pfn, flags::REFERENCED);
    f.clear(pfn, flags::YOUNG | flags::REFERENCED);
    if !young {
        return FolioReferences::Reclaim;
    }
    f.set(pfn, flags::REFERENCED);
    if referenced {
        FolioReferences::Activate
    } else {
        FolioReferences::Keep
    }
}

/// add_to_swap with the large-folio rules of §8: split first if the policy never stores this
/// order whole or the folio is partially mapped; on allocation failure split and retry order 0
/// (counting the fallback). Returns false if not even an order-0 slot was found.
fn add_to_swap(k: &mut Kernel, ctx: &mut Ctx, pfn: u32, list: &mut VecDeque<u32>) -> bool {
    let order = k.folios.order[pfn as usize] as u32;
    if order > 0 {
        let partially_mapped = (k.folios.mapcount(pfn as usize) as u32) < (1 << order);
        if partially_mapped || !k.swap.swapout_whole(order) {
            split_folio(k, ctx, pfn, Some(list));
        } else if !k.cfg.thp_swap {
            // Without CONFIG_THP_SWAP folio_alloc_swap refuses any order > 0 (-EAGAIN):
            // shrink_folio_list splits and counts the fallback.
            split_folio(k, ctx, pfn, Some(list));
            if order >= PMD_ORDER {
                k.vmstat.count(VmEvent::ThpSwpoutFallback, 1);
            }
            k.vmstat.count_mthp(order, MthpStat::SwpoutFallback);
        }
    }
    let order = k.folios.order[pfn as usize] as u32;
    // mem_cgroup_try_charge_swap: memory.swap.max may refuse the folio its slots.
    let memcg = k.folios.memcg(pfn as usize);
    let charged = memcg_swap::try_charge_swap(k, memcg, 1 << order);
    let mut entry = if charged {
        k.swap_alloc(ctx, order)
    } else {
        None
    };
    if entry.is_none() && charged {
        memcg_swap::swap_alloc_failed(k, memcg);
    }
    if entry.is_none() && order > 0 {
        let nr = 1 << order;
        if charged {
            let scattered = k
                .cfg
                .swapout_fallback
                .scattered_slots(&mut k.swap, ctx, &k.cost, nr);
            // Slots released while taking them (given back, or the slot cache drained) drop
            // their data before the folio's pages are written to any of them.
            k.free_released_slots(ctx);
            if let Some(slots) = scattered {
                k.vmstat.count_mthp(order, MthpStat::SwpoutNoncontig);
                folio_add_to_swap_cache(k, ctx, pfn, slots[0], Some(slots));
                memcg_swap::record(k, pfn);
                return true;
            }
            memcg_swap::cancel_charge_swap(k, memcg, nr as u64);
        }
        split_folio(k, ctx, pfn, Some(list));
        if order >= PMD_ORDER {
            k.vmstat.count(VmEvent::ThpSwpoutFallback, 1);
        }
        k.vmstat.count_mthp(order, MthpStat::SwpoutFallback);
        entry = memcg_swap::alloc_charged(k, ctx, memcg, 0);
    } else if entry.is_none() && charged {
        memcg_swap::cancel_charge_swap(k, memcg, 1 << order);
    }
    let Some(entry) = entry else { return false };
    folio_add_to_swap_cache(k, ctx, pfn, entry, None);
    memcg_swap::record(k, pfn);
    true
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::content::ContentClass;
    use crate::mm::memory::touch;
    use crate::mm::mmap::ThpAdvice;
    use crate::scenario::Scenario;

    /// A 6.18 kernel swapping to an NVMe SSD, one mm with `pages` 4K pages written.
    fn swapping_to_ssd(pages: u32) -> (Kernel, Ctx<'static>, u32) {
        let text = r#"
[machine]
cpus = 2
memory = "64M"
[[machine.swap]]
kind = "ssd"
size = "16M"
profile = "nvme"
[kernel]
version = "6.18"
[[workload]]
kind = "usemem"
nproc = 1
size = "4M"
"#;
        let mut k = Kernel::new(&Scenario::from_toml_str(text).unwrap());
        let mut ctx = Ctx::new(0, 0);
        let mm = k.new_mm(0, ContentClass::Usemem);
        k.mms[mm as usize].mmap(0, pages, ThpAdvice::NoHugepage);
        for index in 0..pages {
            touch(&mut k, &mut ctx, mm, 0, index, pages, true).unwrap();
        }
        (k, ctx, mm)
    }

    /// isolate_lru_folios of one folio, shrink_folio_list, move_folios_to_lru.
    fn shrink_one(k: &mut Kernel, ctx: &mut Ctx, pfn: u32, reclaim: Reclaim) -> ShrinkResult {
        k.memcgs[0].lruvec_mut(0).del_folio(&mut k.folios, pfn);
        let result = shrink_folio_list(k, ctx, vec![pfn], reclaim, 0);
        putback_folios(k, ctx, &result.putback, true);
        result
    }

    #[test]
    fn a_folio_met_under_writeback_is_activated_with_pg_reclaim_and_rotated_at_completion() {
        let (mut k, mut ctx, mm) = swapping_to_ssd(8);
        let pfn = k.mms[mm as usize].vma(0).ptes[0].pfn();
        // pageout(): written to the SSD, PG_reclaim set, kept on the inactive list.
        let first = shrink_one(&mut k, &mut ctx, pfn, Reclaim::Pageout);
        assert_eq!(first.nr_pageout, 1);
        assert!(k.folios.test(pfn, flags::WRITEBACK | flags::RECLAIM));
        let done_ns = k.folios.writeback_done_ns(pfn);
        assert!(done_ns > ctx.now_ns);
        // Met again before the write completes: case 2, activated, counted nr_writeback.
        let again = shrink_one(&mut k, &mut ctx, pfn, Reclaim::Global);
        assert_eq!((again.nr_writeback, again.nr_reclaimed), (1, 0));
        assert!(k.folios.test(pfn, flags::ACTIVE) && k.folios.test(pfn, flags::RECLAIM));
        crate::mm::invariants::check(&k).unwrap();
        // folio_end_writeback: PG_reclaim cleared, rotated to the inactive tail.
        let lv = k.memcgs[0].lruvec_mut(0);
        assert_eq!(lv.end_writeback(&mut k.folios, done_ns - 1), 0);
        assert_eq!(lv.end_writeback(&mut k.folios, done_ns), 1);
        assert!(!k
            .folios
            .test(pfn, flags::ACTIVE | flags::RECLAIM | flags::WRITEBACK));
        assert_eq!(lv.list(false, false).tail(), Some(pfn));
        // The next scan frees it without writing it again.
        ctx.now_ns = ctx.now_ns.max(done_ns);
        let last = shrink_one(&mut k, &mut ctx, pfn, Reclaim::Pageout);
        assert_eq!((last.nr_reclaimed, last.nr_pageout), (1, 0));
    }

    #[test]
    fn kswapd_meeting_a_pg_reclaim_folio_on_a_writeback_node_counts_it_immediate() {
        let (mut k, mut ctx, mm) = swapping_to_ssd(8);
        let pfn = k.mms[mm as usize].vma(0).ptes[0].pfn();
        shrink_one(&mut k, &mut ctx, pfn, Reclaim::Pageout);
        k.pagecache.pgdat_writeback = true;
        let r = shrink_one(&mut k, &mut ctx, pfn, Reclaim::Kswapd);
        assert_eq!((r.nr_immediate, r.nr_writeback), (1, 0));
        assert!(k.folios.test(pfn, flags::ACTIVE));
    }

    #[test]
    fn without_thp_swap_a_large_folio_is_split_before_it_gets_slots() {
        for (thp_swap, whole) in [(true, 1), (false, 0)] {
            let text = format!(
                "[machine]\ncpus = 2\nmemory = \"64M\"\n[[machine.swap]]\nkind = \"ssd\"\n\
                 size = \"16M\"\n[kernel]\nversion = \"6.18\"\nthp_swap = {thp_swap}\n\
                 [sysfs.hugepages]\n\"64K\" = \"always\"\n[[workload]]\nkind = \"usemem\"\n\
                 nproc = 1\nsize = \"4M\"\n"
            );
            let mut k = Kernel::new(&Scenario::from_toml_str(&text).unwrap());
            let mut ctx = Ctx::new(0, 0);
            let mm = k.new_mm(0, ContentClass::Usemem);
            k.mms[mm as usize].mmap(0, 16, ThpAdvice::Default);
            touch(&mut k, &mut ctx, mm, 0, 0, 16, true).unwrap();
            let pfn = k.mms[mm as usize].vma(0).ptes[0].pfn();
            assert_eq!(k.folios.order[pfn as usize], 4);
            shrink_one(&mut k, &mut ctx, pfn, Reclaim::Pageout);
            assert_eq!(
                k.vmstat.get_mthp(4, MthpStat::Swpout),
                whole,
                "thp_swap {thp_swap}"
            );
            assert_eq!(k.vmstat.get_mthp(4, MthpStat::SwpoutFallback), 1 - whole);
            assert_eq!(k.vmstat.get(VmEvent::Pswpout), 16);
        }
    }

    #[test]
    fn a_folio_used_once_is_kept_once_then_reclaimed_and_one_used_twice_is_activated() {
        let mut f = FolioTable::new(4);
        f.init(0, 0, 0, (0, 0, 0));
        // Faulted in: young, not PG_referenced. First trip: kept, marked referenced.
        f.set(0, flags::YOUNG);
        assert_eq!(folio_check_references(&mut f, 0), FolioReferences::Keep);
        assert!(f.test(0, flags::REFERENCED) && !f.test(0, flags::YOUNG));
        // Not touched again: reclaimed on the second trip.
        assert_eq!(folio_check_references(&mut f, 0), FolioReferences::Reclaim);
        // Touched again between the trips: activated.
        f.set(0, flags::YOUNG);
        assert_eq!(folio_check_references(&mut f, 0), FolioReferences::Keep);
        f.set(0, flags::YOUNG);
        assert_eq!(folio_check_references(&mut f, 0), FolioReferences::Activate);
    }
}
