//! MGLRU's eviction (mm/vmscan.c "the eviction", "working set protection", the PID
//! controller): try_to_shrink_lruvec alternates get_nr_to_scan (which runs the aging when the
//! generations run low) and evict_folios, which takes a batch from the oldest generation of
//! the type get_type_to_scan picks: sort_folio moves folios protected by their tier, or
//! waiting for writeback, up a generation; isolate_folio takes the rest for
//! shrink_folio_list; what comes back goes to the youngest generation unless it was clean
//! and unreferenced (then it is tried once more).
//!
//! Not modelled: refault detection (the model keeps no shadow entries, for either LRU), so
//! the PID controller sees no refaults and, as the kernel does with none, prefers file
//! folios while both types are evictable; memcg LRU rotation (shrink_many) and
//! memory.min/low protection; the per-zone lists (one zone).

use super::aging::{folio_inc_gen, try_to_inc_max_seq, try_to_inc_min_seq};
use super::{
    folio_lru_gen, folio_lru_refs, lru_gen_from_seq, lru_tier_from_refs, LruGen, LRU_GEN_ANON,
    LRU_GEN_FILE, LRU_REFS_WIDTH, MAX_LRU_BATCH, MAX_NR_TIERS, MIN_LRU_BATCH, MIN_NR_GENS,
};
use crate::engine::Ctx;
use crate::mm::folio::{flags, FolioTable};
use crate::mm::kthread::KthreadKind;
use crate::mm::oom_kill::{out_of_memory, OomConstraint};
use crate::mm::page_alloc::Wmark;
use crate::mm::vmscan::scan_count::{ReclaimStat, ScanControl, MAX_SWAPPINESS};
use crate::mm::vmscan::{file, shrink_folio_list, Reclaim, ShrinkCount};
use crate::mm::vmstat::VmEvent;
use crate::mm::Kernel;

const DEF_PRIORITY: u32 = 12;

/// lru_gen_shrink_lruvec / try_to_shrink_lruvec on `memcg`'s lruvec on node `sc.nid`: evict in
/// batches until get_nr_to_scan's budget is spent, the aging ran, or (root reclaim) enough
/// was reclaimed.
pub fn lru_gen_shrink_lruvec(
    k: &mut Kernel,
    ctx: &mut Ctx,
    memcg: u16,
    nr_to_reclaim: u64,
    sc: &mut ScanControl,
) -> ShrinkCount {
    let swappiness = get_swappiness(k, sc);
    let mut done = ShrinkCount::default();
    let mut scanned = 0u64;
    loop {
        let nr_to_scan = get_nr_to_scan(k, ctx, memcg, sc, swappiness);
        if nr_to_scan <= 0 {
            break;
        }
        let (delta, reclaimed) = evict_folios(k, ctx, memcg, sc, swappiness);
        done.reclaimed += reclaimed;
        if delta == 0 {
            break;
        }
        done.scanned += delta;
        scanned += delta;
        if scanned >= nr_to_scan as u64 || should_abort_scan(k, sc, done.reclaimed, nr_to_reclaim) {
            break;
        }
    }
    // A batch of nothing but dirty file folios not yet queued for writeback wakes the flusher
    // (as shrink_inactive_list does for the classic LRU).
    let nr = sc.nr;
    if nr.unqueued_dirty > 0 && nr.unqueued_dirty == nr.file_taken {
        crate::mm::page_writeback::wakeup_flusher_threads(k, ctx.now_ns);
    }
    done
}

/// get_swappiness: 0 when reclaim may not swap, or there is no swap space (nor a lower tier
/// to demote to) for a batch.
fn get_swappiness(k: &Kernel, sc: &ScanControl) -> u64 {
    if !sc.may_swap {
        return 0;
    }
    if k.swap.nr_swap_pages() < MIN_LRU_BATCH && !crate::mm::numa_balancing::can_demote(k, sc.nid) {
        return 0;
    }
    k.cfg.swappiness as u64
}

/// The types evictable at `swappiness` (for_each_evictable_type): file only at 0, anon only
/// at MAX_SWAPPINESS.
fn evictable_types(swappiness: u64) -> std::ops::RangeInclusive<usize> {
    let min = if swappiness == 0 {
        LRU_GEN_FILE
    } else {
        LRU_GEN_ANON
    };
    let max = if swappiness >= MAX_SWAPPINESS {
        LRU_GEN_ANON
    } else {
        LRU_GEN_FILE
    };
    min..=max
}

/// evictable_min_seq
fn evictable_min_seq(lg: &LruGen, swappiness: u64) -> u64 {
    evictable_types(swappiness)
        .map(|ty| lg.min_seq[ty])
        .min()
        .expect("a type")
}

/// should_run_aging: must age (eviction would leave fewer than MIN_NR_GENS), or better age
/// now (only MIN_NR_GENS + 1 left). Also the pages of the evictable types.
fn should_run_aging(lg: &LruGen, swappiness: u64) -> (bool, u64) {
    let min_seq = evictable_min_seq(lg, swappiness);
    if min_seq + MIN_NR_GENS > lg.max_seq {
        return (true, 0);
    }
    let size = evictable_types(swappiness)
        .flat_map(|ty| (lg.min_seq[ty]..=lg.max_seq).map(move |s| (ty, s)))
        .map(|(ty, s)| lg.gen_pages(lru_gen_from_seq(s), ty))
        .sum();
    (min_seq + MIN_NR_GENS == lg.max_seq, size)
}

/// get_nr_to_scan: this lruvec's pages >> priority; when the aging should run, it does
/// (except at DEF_PRIORITY, which tries to get away without it) and this lruvec is left
/// (-1), or 0 if another aging got there first.
fn get_nr_to_scan(
    k: &mut Kernel,
    ctx: &mut Ctx,
    memcg: u16,
    sc: &ScanControl,
    swappiness: u64,
) -> i64 {
    let lg = &k.memcgs[memcg as usize].lruvec_of(sc.nid).lrugen;
    let (run_aging, size) = should_run_aging(lg, swappiness);
    if !run_aging || sc.priority == DEF_PRIORITY {
        return (size >> sc.priority) as i64;
    }
    let max_seq = lg.max_seq;
    if try_to_inc_max_seq(k, ctx, memcg, sc.nid, max_seq, swappiness != 0) {
        -1
    } else {
        0
    }
}

/// should_abort_scan: root reclaim stops once it reclaimed enough, kswapd also once the
/// watermark (plus a batch) is met; memcg reclaim never (fairness among memcgs).
fn should_abort_scan(k: &Kernel, sc: &ScanControl, reclaimed: u64, nr_to_reclaim: u64) -> bool {
    if sc.cgroup_reclaim() {
        return false;
    }
    if reclaimed >= nr_to_reclaim {
        return true;
    }
    sc.reclaim == Reclaim::Kswapd && {
        let zone = &k.pgdat[sc.nid].zone;
        zone.nr_free_pages() >= zone.wmark_pages(Wmark::High) + MIN_LRU_BATCH
    }
}

/// The PID controller's reading of one tier (struct ctrl_pos).
struct CtrlPos {
    refaulted: u64,
    total: u64,
    gain: u64,
}

/// read_ctrl_pos
fn read_ctrl_pos(lg: &LruGen, ty: usize, tier: usize, gain: u64) -> CtrlPos {
    let mut total = lg.avg_total[ty][tier] + lg.evicted[ty][tier];
    if tier > 0 {
        total += lg.protected[ty][tier - 1];
    }
    CtrlPos {
        refaulted: lg.avg_refaulted[ty][tier] + lg.refaulted[ty][tier],
        total,
        gain,
    }
}

/// positive_ctrl_err: the PV refaults little, or less than the SP (relative to its total).
fn positive_ctrl_err(sp: &CtrlPos, pv: &CtrlPos) -> bool {
    pv.refaulted < MIN_LRU_BATCH
        || pv.refaulted * (sp.total + MIN_LRU_BATCH) * sp.gain
            <= (sp.refaulted + 1) * pv.total * pv.gain
}

/// get_tier_idx: the highest tier of `ty` refaulting no more than twice its first tier;
/// tiers above it are protected.
fn get_tier_idx(lg: &LruGen, ty: usize) -> usize {
    let sp = read_ctrl_pos(lg, ty, 0, 1);
    let mut tier = 1;
    while tier < MAX_NR_TIERS {
        if !positive_ctrl_err(&sp, &read_ctrl_pos(lg, ty, tier, 2)) {
            break;
        }
        tier += 1;
    }
    tier - 1
}

/// get_type_to_scan: compare the first tiers of anon and file (gains swappiness and
/// 200 - swappiness); the other type's first tier then bounds the tiers evicted.
fn get_type_to_scan(lg: &LruGen, swappiness: u64) -> (usize, usize) {
    let gain = [swappiness, MAX_SWAPPINESS - swappiness];
    let sp = read_ctrl_pos(lg, LRU_GEN_ANON, 0, gain[LRU_GEN_ANON]);
    let pv = read_ctrl_pos(lg, LRU_GEN_FILE, 0, gain[LRU_GEN_FILE]);
    let ty = positive_ctrl_err(&sp, &pv) as usize;
    let sp = read_ctrl_pos(lg, 1 - ty, 0, gain[1 - ty]);
    let mut tier = 1;
    while tier < MAX_NR_TIERS {
        if !positive_ctrl_err(&sp, &read_ctrl_pos(lg, ty, tier, gain[ty])) {
            break;
        }
        tier += 1;
    }
    (ty, tier - 1)
}

/// sort_folio: true if the folio stays on the LRU, moved: promoted by the aging (to its
/// generation), protected by its tier (one generation up, counted in `protected`), or
/// waiting for writeback (one up, PG_reclaim set so its completion rotates it back).
fn sort_folio(
    k: &mut Kernel,
    ctx: &Ctx,
    memcg: u16,
    pfn: u32,
    tier_idx: usize,
    sc: &mut ScanControl,
) -> bool {
    let f = &mut k.folios;
    let lg = &mut k.memcgs[memcg as usize].lruvec_mut(sc.nid).lrugen;
    let ty = f.test(pfn, flags::FILE) as usize;
    let gen = folio_lru_gen(f, pfn).expect("a folio on a generation");
    let delta = f.nr_pages(pfn) as u64;
    let refs = folio_lru_refs(f, pfn);
    let tier = lru_tier_from_refs(refs);
    if gen != lru_gen_from_seq(lg.min_seq[ty]) {
        lg.move_folio(f, pfn, gen, true);
        return true;
    }
    if tier > tier_idx || refs == 1 << LRU_REFS_WIDTH {
        folio_inc_gen(lg, f, pfn, false, false);
        lg.protected[ty][tier - 1] += delta;
        return true;
    }
    let now = ctx.now_ns;
    let pending = |flag| f.test(pfn, flag) && f.writeback_done_ns(pfn) > now;
    let (locked, writeback) = (pending(flags::LOCKED), pending(flags::WRITEBACK));
    let dirty = f.test(pfn, flags::DIRTY);
    if locked || writeback || (ty == LRU_GEN_FILE && dirty) {
        if ty == LRU_GEN_FILE {
            sc.nr.file_taken += delta;
            if dirty && !writeback {
                sc.nr.unqueued_dirty += delta;
            }
        }
        folio_inc_gen(lg, f, pfn, true, true);
        return true;
    }
    false
}

/// isolate_folio: off the LRU for shrink_folio_list; a folio not referenced since it was
/// last sorted loses its refs; PG_reclaim and PG_referenced are cleared.
fn isolate_folio(k: &mut Kernel, memcg: u16, nid: usize, pfn: u32) {
    let f = &mut k.folios;
    if !f.test(pfn, flags::REFERENCED) {
        super::clear_refs(f, pfn);
    }
    f.clear(pfn, flags::RECLAIM | flags::REFERENCED);
    let lv = k.memcgs[memcg as usize].lruvec_mut(nid);
    lv.lrugen.del_folio(f, pfn, true);
    f.clear(pfn, flags::LRU | flags::ACTIVE);
}

/// scan_folios: from the tail of the oldest generation of `ty`, sort or isolate up to
/// MAX_LRU_BATCH folios, stopping at MIN_LRU_BATCH pages isolated. Counts pgscan_* (pages
/// isolated) and pgrefill (pages sorted), globally outside memcg reclaim. Returns the pages
/// looked at (0 when nothing could be isolated and the batch was not used up).
fn scan_folios(
    k: &mut Kernel,
    ctx: &mut Ctx,
    memcg: u16,
    sc: &mut ScanControl,
    ty: usize,
    tier: usize,
    list: &mut Vec<u32>,
) -> u64 {
    let nid = sc.nid;
    let lg = &k.memcgs[memcg as usize].lruvec_of(nid).lrugen;
    if lg.nr_gens(ty) == MIN_NR_GENS {
        return 0;
    }
    let gen = lru_gen_from_seq(lg.min_seq[ty]);
    let (mut scanned, mut sorted, mut isolated) = (0u64, 0u64, 0u64);
    let mut remaining = MAX_LRU_BATCH;
    let mut moved = 0u64;
    while let Some(pfn) = k.memcgs[memcg as usize].lruvec_of(nid).lrugen.folios[gen][ty].tail() {
        let delta = k.folios.nr_pages(pfn) as u64;
        scanned += delta;
        moved += 1;
        if sort_folio(k, ctx, memcg, pfn, tier, sc) {
            sorted += delta;
        } else {
            isolate_folio(k, memcg, nid, pfn);
            list.push(pfn);
            isolated += delta;
        }
        remaining -= 1;
        if remaining == 0 || isolated >= MIN_LRU_BATCH {
            break;
        }
    }
    k.memcgs[memcg as usize]
        .lruvec_mut(nid)
        .lru_lock
        .hold(ctx, k.cost.lru_move_ns * moved);
    let pgscan = match sc.reclaim {
        Reclaim::Kswapd => VmEvent::PgscanKswapd,
        _ if k.kthreads.current(ctx.cpu) == Some(KthreadKind::Khugepaged) => {
            VmEvent::PgscanKhugepaged
        }
        _ => VmEvent::PgscanDirect,
    };
    // PGSCAN_* are node stats: /proc/vmstat sums the nodes'.
    if !sc.cgroup_reclaim() {
        k.pgdat[nid].zone.events.count(pgscan, isolated);
        k.vmstat.count(VmEvent::Pgrefill, sorted);
    }
    let cg = &mut k.memcgs[memcg as usize];
    cg.count(pgscan, isolated);
    cg.count(VmEvent::Pgrefill, sorted);
    let pgscan_type = [VmEvent::PgscanAnon, VmEvent::PgscanFile][ty];
    k.pgdat[nid].zone.events.count(pgscan_type, isolated);
    if isolated > 0 || remaining == 0 {
        scanned
    } else {
        0
    }
}

/// isolate_folios: scan the type the controller picks (or the obvious one: file at
/// swappiness 0, anon when its oldest generation is older than file's), the other if that
/// finds nothing. Returns the type and the pages scanned.
fn isolate_folios(
    k: &mut Kernel,
    ctx: &mut Ctx,
    memcg: u16,
    sc: &mut ScanControl,
    swappiness: u64,
    list: &mut Vec<u32>,
) -> (usize, u64) {
    let lg = &k.memcgs[memcg as usize].lruvec_of(sc.nid).lrugen;
    let mut tier = None;
    let mut ty = if swappiness == 0 {
        LRU_GEN_FILE
    } else if lg.min_seq[LRU_GEN_ANON] < lg.min_seq[LRU_GEN_FILE] {
        LRU_GEN_ANON
    } else if swappiness == 1 {
        LRU_GEN_FILE
    } else if swappiness >= MAX_SWAPPINESS {
        LRU_GEN_ANON
    } else {
        let (ty, t) = get_type_to_scan(lg, swappiness);
        tier = Some(t);
        ty
    };
    let mut scanned = 0;
    for _ in (swappiness == 0) as usize..2 {
        let lg = &k.memcgs[memcg as usize].lruvec_of(sc.nid).lrugen;
        let t = tier.unwrap_or_else(|| get_tier_idx(lg, ty));
        scanned = scan_folios(k, ctx, memcg, sc, ty, t, list);
        if scanned > 0 {
            break;
        }
        ty = 1 - ty;
        tier = None;
    }
    (ty, scanned)
}

/// evict_folios: isolate a batch, let shrink_folio_list reclaim it, put back the rest
/// (active, referenced, mapped, dirty or under writeback: the youngest generation; dirty or
/// under writeback with PG_reclaim: as lru_gen_add_folio places them), and retry once the
/// clean unreferenced folios that came back. Counts pgsteal_* and the PID controller's
/// `evicted`. Returns (pages scanned, pages reclaimed).
fn evict_folios(
    k: &mut Kernel,
    ctx: &mut Ctx,
    memcg: u16,
    sc: &mut ScanControl,
    swappiness: u64,
) -> (u64, u64) {
    let nid = sc.nid;
    let lv = k.memcgs[memcg as usize].lruvec_mut(nid);
    let rotated = lv.end_writeback(&mut k.folios, ctx.now_ns);
    k.vmstat.count(VmEvent::Pgrotated, rotated);
    let mut list = Vec::new();
    let (ty, mut scanned) = isolate_folios(k, ctx, memcg, sc, swappiness, &mut list);
    let lg = &mut k.memcgs[memcg as usize].lruvec_mut(nid).lrugen;
    scanned += try_to_inc_min_seq(lg, swappiness != 0) as u64;
    if evictable_min_seq(lg, swappiness) + MIN_NR_GENS > lg.max_seq {
        scanned = 0;
    }
    if list.is_empty() {
        return (scanned, 0);
    }
    // The tier of each folio taken, for `evicted` (lru_gen_eviction).
    let tiers: Vec<(u32, usize, u64)> = list
        .iter()
        .map(|&pfn| {
            let f = &k.folios;
            (
                pfn,
                lru_tier_from_refs(folio_lru_refs(f, pfn)),
                f.nr_pages(pfn) as u64,
            )
        })
        .collect();
    let (pgsteal, pgsteal_type) = (
        reclaimer_offset(k, ctx, sc.reclaim),
        [VmEvent::PgstealAnon, VmEvent::PgstealFile][ty],
    );
    let taken: u64 = tiers.iter().map(|t| t.2).sum();
    sc.nr.taken += taken;
    if ty == LRU_GEN_FILE {
        sc.nr.file_taken += taken;
    }
    let mut reclaimed = 0;
    let mut skip_retry = false;
    let mut kept = Vec::new();
    loop {
        let mut stat = ReclaimStat::default();
        let result = if ty == LRU_GEN_FILE {
            file::shrink_file_folio_list(k, ctx, std::mem::take(&mut list), sc, memcg, &mut stat)
        } else {
            shrink_folio_list(k, ctx, std::mem::take(&mut list), sc.reclaim, sc.target)
        };
        reclaimed += result.nr_reclaimed;
        sc.nr.dirty += stat.dirty;
        sc.nr.unqueued_dirty += stat.unqueued_dirty;
        sc.nr.congested += stat.congested;
        sc.nr.writeback += stat.writeback;
        sc.nr.immediate += stat.immediate;
        for (pfn, active) in result.putback {
            if active {
                k.folios.set(pfn, flags::ACTIVE);
                let nr = k.folios.nr_pages(pfn) as u64;
                k.memcgs[memcg as usize].count(VmEvent::Pgactivate, nr);
            }
            if retry_folio(&mut k.folios, pfn, skip_retry) {
                list.push(pfn);
            } else {
                kept.push(pfn);
            }
        }
        if list.is_empty() {
            break;
        }
        // Clean folios that may have missed folio_rotate_reclaimable: once more.
        skip_retry = true;
    }
    move_folios_to_lru(k, ctx, memcg, nid, kept, tiers, ty);
    if !sc.cgroup_reclaim() {
        k.pgdat[nid].zone.events.count(pgsteal, reclaimed);
    }
    k.memcgs[memcg as usize].count(pgsteal, reclaimed);
    k.pgdat[nid].zone.events.count(pgsteal_type, reclaimed);
    (scanned, reclaimed)
}

/// evict_folios' putback pass over what shrink_folio_list rejected: true for a clean folio
/// that may have missed folio_rotate_reclaimable (tried once more); otherwise the folio is
/// kept, a rejected one going to the youngest generation, not back to the oldest.
#[inline]
fn retry_folio(f: &mut FolioTable, pfn: u32, skip_retry: bool) -> bool {
    let reclaim_wait = f.test(pfn, flags::RECLAIM) && f.test(pfn, flags::DIRTY | flags::WRITEBACK);
    if reclaim_wait {
        if f.test(pfn, flags::WORKINGSET) {
            f.set(pfn, flags::REFERENCED);
        }
    } else if skip_retry
        || f.test(
            pfn,
            flags::ACTIVE | flags::REFERENCED | flags::DIRTY | flags::WRITEBACK | flags::LOCKED,
        )
        || f.mapcount(pfn as usize) > 0
    {
        super::clear_refs(f, pfn);
        f.set(pfn, flags::ACTIVE);
    } else {
        return true;
    }
    false
}

/// reclaimer_offset: which PGSTEAL_* event a reclaimer counts.
fn reclaimer_offset(k: &Kernel, ctx: &Ctx, reclaim: Reclaim) -> VmEvent {
    match reclaim {
        Reclaim::Kswapd => VmEvent::PgstealKswapd,
        _ if k.kthreads.current(ctx.cpu) == Some(KthreadKind::Khugepaged) => {
            VmEvent::PgstealKhugepaged
        }
        _ => VmEvent::PgstealDirect,
    }
}

/// move_folios_to_lru of the kept folios under one lru_lock hold, then the tiers of those
/// evicted for lru_gen_eviction's refault accounting (`tiers`: pfn, tier, pages).
fn move_folios_to_lru(
    k: &mut Kernel,
    ctx: &mut Ctx,
    memcg: u16,
    nid: usize,
    mut kept: Vec<u32>,
    tiers: Vec<(u32, usize, u64)>,
    ty: usize,
) {
    for &pfn in &kept {
        let nid = k.nodes.nid(pfn);
        let cg = &mut k.memcgs[k.folios.memcg(pfn as usize) as usize];
        cg.lruvec_mut(nid).lruvec_add_folio(&mut k.folios, pfn);
    }
    let lv = k.memcgs[memcg as usize].lruvec_mut(nid);
    lv.lru_lock
        .hold(ctx, k.cost.lru_move_ns * kept.len() as u64);
    kept.sort_unstable();
    let lg = &mut lv.lrugen;
    for (pfn, tier, nr) in tiers {
        if kept.binary_search(&pfn).is_err() {
            lg.evicted[ty][tier] += nr;
        }
    }
}

/// lru_gen_age_node (kswapd of node `nid`, before reclaim): with min_ttl_ms set, if every
/// memcg's oldest file generation there is younger than it (or too small to matter), the
/// working set is protected by an OOM kill instead of being evicted.
pub fn lru_gen_age_node(k: &mut Kernel, ctx: &mut Ctx, nid: usize) {
    let min_ttl_ns = k.cfg.lru_gen_min_ttl_ns;
    if min_ttl_ns == 0 {
        return;
    }
    let swappiness = if k.swap.nr_swap_pages() >= MIN_LRU_BATCH {
        k.cfg.swappiness as u64
    } else {
        0
    };
    let reclaimable = k.memcgs.iter().any(|cg| {
        let lg = &cg.lruvec_of(nid).lrugen;
        // lruvec_is_sizable at DEF_PRIORITY
        let total: u64 = evictable_types(swappiness)
            .flat_map(|ty| (lg.min_seq[ty]..=lg.max_seq).map(move |s| (ty, s)))
            .map(|(ty, s)| lg.gen_pages(lru_gen_from_seq(s), ty))
            .sum();
        let birth = lg.timestamps_ns[lru_gen_from_seq(lg.min_seq[LRU_GEN_FILE])];
        total >> DEF_PRIORITY > 0 && birth + min_ttl_ns < ctx.now_ns
    });
    if !reclaimable {
        out_of_memory(k, ctx, OomConstraint::None);
    }
}
