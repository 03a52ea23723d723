//! NUMA balancing in memory-tiering mode (`kernel.numa_balancing = 2`): the scanner that makes
//! lower-tier pages' PTEs PROT_NONE (task_numa_work, kernel/sched/fair.c), the hint fault that
//! decides whether to promote (do_numa_page, mm/memory.c; should_numa_migrate_memory), and the
//! promotion (migrate_misplaced_folio, mm/migrate.c). Demotion, the other half of tiering, is
//! reclaim's (mm/vmscan.rs, `demote_folio_list` below).
//!
//! The scan period is per task, as in v6.9 (kernel/sched/fair.c): every task starts at
//! scan_delay (init_numa_balancing; a CLONE_VM thread's first period is staggered by
//! node_stamp); task_tick_numa, run as the task's CPU time passes node_stamp +
//! numa_scan_period, starts a new period (the process's first task switches to
//! task_scan_start then) and runs task_numa_work if the mm's numa_next_scan has passed, which
//! scans and sets numa_next_scan to now + the task's numa_scan_period. A successful promotion
//! reaches task_numa_fault with the top-tier node (private, remote): once per numa_scan_seq
//! (scan pass) task_numa_placement's update_task_scan_period doubles the task's period up to
//! task_scan_max. Simplified: no numa_migrate_retry gating of task_numa_placement, the tick is
//! checked at the end of each step (docs/model.md, "NUMA tiering").
//! Not modelled either: NUMA_BALANCING_NORMAL (task and page placement between CPU nodes; every
//! CPU is on node 0).

use super::folio::flags;
use super::gfp::Gfp;
use super::memory::VmFault;
use super::migrate::{folio_isolate_lru, migrate_pages, putback_movable_pages};
use super::migrate::{MigrateMode, MigrateReason, MigrationTarget};
use super::mmap::Pte;
use super::numa::{alloc_on_node, get_page_from_freelist};
use super::page_alloc::{AllocFlags, Wmark};
use super::vmscan::kswapd::wakeup_kswapd;
use super::vmstat::VmEvent;
use super::Kernel;
use crate::cpu_cost::CpuCost;
use crate::engine::Ctx;
use crate::scenario::{Scenario, PAGE_SIZE};

/// NUMA_BALANCING_MEMORY_TIERING.
const MEMORY_TIERING: u32 = 2;
/// MAX_SCAN_WINDOW: the scanner's rate cap, MB per second.
const MAX_SCAN_WINDOW_MB: u64 = 2560;
/// sysctl_numa_balancing_scan_period_max (60 s): also the threshold adjustment period.
const SCAN_PERIOD_MAX_MS: u64 = 60_000;
/// NUMA_MIGRATION_ADJUST_STEPS.
const ADJUST_STEPS: u64 = 16;
/// TICK_NSEC at HZ=250.
const TICK_NS: u64 = 4_000_000;

/// A task's NUMA balancing state (task_struct's numa_* fields), kept in its TaskResume.
#[derive(Debug, Clone, Default)]
pub struct TaskNuma {
    /// p->numa_scan_period, ms.
    pub numa_scan_period_ms: u64,
    /// p->numa_scan_period_max, ms (set by task_numa_placement).
    pub numa_scan_period_max_ms: u64,
    /// p->node_stamp: the task's CPU time (ns) where its current scan period started.
    pub node_stamp_ns: u64,
    /// p->numa_scan_seq: the mm's numa_scan_seq its last task_numa_placement saw.
    pub numa_scan_seq: u64,
}

/// The sysctls and node 0's promotion state (pgdat->nbp_*).
pub struct NumaBalancing {
    pub tiering: bool,
    pub hot_threshold_ms: u64,
    /// numa_balancing_promote_rate_limit_MBps in pages per second.
    pub rate_limit_pages: u64,
    pub scan_delay_ns: u64,
    pub scan_period_min_ms: u64,
    pub scan_size_pages: u64,
    /// folio_xchg_access_time: when the scanner last marked each lower-tier page, in ms
    /// (empty unless tiering).
    pub access_time_ms: Vec<u32>,
    nbp_threshold_ms: u64,
    nbp_th_start_ms: u64,
    nbp_th_nr_cand: u64,
    nbp_rl_start_ms: u64,
    nbp_rl_nr_cand: u64,
    /// node_page_state(pgdat, PGPROMOTE_CANDIDATE).
    nr_candidates: u64,
}

impl NumaBalancing {
    pub fn new(scenario: &Scenario, total_pages: u32) -> NumaBalancing {
        let sc = &scenario.sysctl.kernel;
        let tiering = sc.numa_balancing.unwrap_or(0) & MEMORY_TIERING != 0;
        let mb_pages = (1 << 20) / PAGE_SIZE;
        NumaBalancing {
            tiering,
            hot_threshold_ms: sc.numa_balancing_hot_threshold_ms.unwrap_or(1000) as u64,
            rate_limit_pages: sc.numa_balancing_promote_rate_limit_mbps.unwrap_or(65536) * mb_pages,
            scan_delay_ns: sc.numa_balancing_scan_delay_ms.unwrap_or(1000) as u64 * 1_000_000,
            scan_period_min_ms: sc.numa_balancing_scan_period_min_ms.unwrap_or(1000) as u64,
            scan_size_pages: sc.numa_balancing_scan_size_mb.unwrap_or(256) as u64 * mb_pages,
            access_time_ms: if tiering {
                vec![0; total_pages as usize]
            } else {
                Vec::new()
            },
            nbp_threshold_ms: 0,
            nbp_th_start_ms: 0,
            nbp_th_nr_cand: 0,
            nbp_rl_start_ms: 0,
            nbp_rl_nr_cand: 0,
            nr_candidates: 0,
        }
    }

    /// task_nr_scan_windows: scan_size windows in an mm of `rss_pages`.
    fn nr_scan_windows(&self, rss_pages: u64) -> u64 {
        rss_pages.div_ceil(self.scan_size_pages).max(1)
    }

    /// task_scan_min (= task_scan_start without a numa_group), ms.
    fn task_scan_min_ms(&self, rss_pages: u64) -> u64 {
        let scan_size_mb = (self.scan_size_pages * PAGE_SIZE) >> 20;
        let windows = (MAX_SCAN_WINDOW_MB / scan_size_mb.max(1)).max(1);
        let floor_ms = 1000 / windows;
        (self.scan_period_min_ms / self.nr_scan_windows(rss_pages)).max(floor_ms)
    }

    /// task_scan_max, ms.
    fn task_scan_max_ms(&self, rss_pages: u64) -> u64 {
        let smax = SCAN_PERIOD_MAX_MS / self.nr_scan_windows(rss_pages);
        self.task_scan_min_ms(rss_pages).max(smax)
    }
}

/// init_numa_balancing for a task of `mm` created when `mm_users` tasks already use it (0: the
/// process's first task). A CLONE_VM thread's node_stamp is the kernel's stagger, units as
/// written: min_t(unsigned int, task_scan_max (ms), period x mm_users (ns)) + 2 ticks. All
/// tasks are created at the start, when the parent's numa_scan_period is scan_delay.
pub fn init_numa_balancing(k: &Kernel, mm: u32, mm_users: u32) -> TaskNuma {
    let m = &k.mms[mm as usize];
    let period_ms = k.numa.scan_delay_ns / 1_000_000;
    let mut p = TaskNuma {
        numa_scan_period_ms: period_ms,
        numa_scan_seq: m.numa_scan_seq,
        ..TaskNuma::default()
    };
    if mm_users > 0 {
        let smax = k.numa.task_scan_max_ms(m.rss_anon) as u32;
        let scaled = (period_ms * mm_users as u64 * 1_000_000) as u32;
        p.node_stamp_ns = smax.min(scaled) as u64 + 2 * TICK_NS;
    }
    p
}

/// A task of `mm` with `runtime_ns` of CPU time returns to user space: its tick, and the scan
/// when the tick found the mm's turn come (task_tick_numa queues task_numa_work for then).
pub fn numa_return_to_user(
    k: &mut Kernel,
    ctx: &mut Ctx,
    mm: u32,
    p: &mut TaskNuma,
    runtime_ns: u64,
) {
    if task_tick_numa(k, p, mm, runtime_ns, ctx.now_ns) {
        task_numa_work(k, ctx, mm, p);
    }
}

/// task_tick_numa, checked when the task returns to user space with `runtime_ns` of CPU time
/// (se.sum_exec_runtime): each numa_scan_period passed since node_stamp starts a new period
/// (the first switches the process's first task to task_scan_start). True when one did and
/// the mm's numa_next_scan has passed: task_numa_work runs.
pub fn task_tick_numa(k: &Kernel, p: &mut TaskNuma, mm: u32, runtime_ns: u64, now_ns: u64) -> bool {
    let mut due = false;
    loop {
        let period_ns = p.numa_scan_period_ms * 1_000_000;
        if runtime_ns <= p.node_stamp_ns + period_ns {
            return due;
        }
        if p.node_stamp_ns == 0 {
            p.numa_scan_period_ms = k.numa.task_scan_min_ms(k.mms[mm as usize].rss_anon);
        }
        p.node_stamp_ns += period_ns;
        due |= now_ns >= k.mms[mm as usize].numa_next_scan_ns;
        if period_ns == 0 {
            return due;
        }
    }
}

/// task_numa_fault for a hint fault whose folio is now on the top tier (a promotion: private,
/// remote); faults left on a lower tier take its early return in tiering mode.
fn task_numa_fault(k: &mut Kernel, ctx: &Ctx, mm: u32) {
    task_numa_placement(k, ctx, mm);
}

/// task_numa_placement, once per scan pass (numa_scan_seq) of the mm: the running task's
/// numa_scan_period_max, then update_task_scan_period.
fn task_numa_placement(k: &mut Kernel, ctx: &Ctx, mm: u32) {
    let m = &k.mms[mm as usize];
    let (seq, smax) = (m.numa_scan_seq, k.numa.task_scan_max_ms(m.rss_anon));
    let p = &mut k.current.numa;
    if p.numa_scan_seq == seq {
        return;
    }
    p.numa_scan_seq = seq;
    p.numa_scan_period_max_ms = smax;
    update_task_scan_period(k, ctx, mm);
}

/// update_task_scan_period with no local and no shared faults (every recorded fault is a
/// private, remote promotion): scan slower, the period doubled up to numa_scan_period_max.
fn update_task_scan_period(k: &mut Kernel, ctx: &Ctx, mm: u32) {
    let p = &mut k.current.numa;
    p.numa_scan_period_ms = p.numa_scan_period_max_ms.min(p.numa_scan_period_ms * 2);
    k.mms[mm as usize].numa_next_scan_ns = ctx.now_ns + p.numa_scan_period_ms * 1_000_000;
}

/// can_demote: reclaim on node `nid` may move folios a tier down.
pub fn can_demote(k: &Kernel, nid: usize) -> bool {
    k.nodes.demotion_enabled && k.nodes.next_demotion_node(nid).is_some()
}

/// task_numa_work, run when task `p` of `mm` returns to user space after task_tick_numa found
/// the mm's next scan time passed: up to scan_size of the mm's lower-tier pages made
/// PROT_NONE, from where the last scan stopped, in 2 MiB ranges; one TLB flush of the mm per
/// VMA range changed (change_protection's tlb_finish_mmu). The pass ends at the last VMA.
pub fn task_numa_work(k: &mut Kernel, ctx: &mut Ctx, mm: u32, p: &mut TaskNuma) {
    let m = &mut k.mms[mm as usize];
    if m.numa_next_scan_ns == 0 {
        m.numa_next_scan_ns = ctx.now_ns + k.numa.scan_delay_ns;
        return;
    }
    if ctx.now_ns < m.numa_next_scan_ns {
        return;
    }
    if p.numa_scan_period_ms == 0 {
        p.numa_scan_period_max_ms = k.numa.task_scan_max_ms(m.rss_anon);
        p.numa_scan_period_ms = k.numa.task_scan_min_ms(m.rss_anon);
    }
    m.numa_next_scan_ns = ctx.now_ns + p.numa_scan_period_ms * 1_000_000;
    let now_ms = (ctx.now_ns / 1_000_000) as u32;
    let mut pages = k.numa.scan_size_pages as i64;
    let mut virtpages = pages * 8;
    let nr_vmas = k.mms[mm as usize].vmas.len() as u32;
    let (mut vma, mut index) = k.mms[mm as usize].numa_scan_offset;
    let mut updated_total = 0u64;
    // vma_next from the offset: none left, the pass starts over (reset_ptenuma_scan).
    let vma_len = |k: &Kernel, vma: u32| {
        k.mms[mm as usize].vmas[vma as usize]
            .as_ref()
            .map_or(0, |v| v.nr_pages)
    };
    while vma < nr_vmas && index >= vma_len(k, vma) {
        (vma, index) = (vma + 1, 0);
    }
    if vma >= nr_vmas {
        k.mms[mm as usize].numa_scan_seq += 1;
        (vma, index) = (0, 0);
    }
    while pages > 0 && virtpages > 0 {
        if vma >= nr_vmas {
            // reset_ptenuma_scan: the pass is over, the next starts from the first VMA.
            k.mms[mm as usize].numa_scan_seq += 1;
            (vma, index) = (0, 0);
            break;
        }
        let migratable = k.mms[mm as usize].vmas[vma as usize]
            .as_ref()
            .is_some_and(|v| v.anon_vma);
        let len = vma_len(k, vma);
        if !migratable || index >= len {
            (vma, index) = (vma + 1, 0);
            continue;
        }
        // change_prot_numa over [index, end): the range is aligned to 2 MiB.
        let end = (index + pages as u32).next_multiple_of(512).min(len);
        super::tlb::flush_tlb_batched_pending(k, ctx, mm);
        let updated = change_prot_numa(k, mm, vma, index, end, now_ms);
        if updated > 0 {
            pages -= (end - index) as i64;
            let arch = k.cfg.tlb;
            arch.flush_batch(k, ctx, &[mm], updated as u32);
        }
        virtpages -= (end - index) as i64;
        updated_total += updated;
        index = end;
    }
    k.mms[mm as usize].numa_scan_offset = (vma, index);
    k.vmstat.count(VmEvent::NumaPteUpdates, updated_total);
    ctx.spend(
        CpuCost::ChangeProtNuma,
        k.cost.numa_pte_update_ns * updated_total,
    );
}

/// change_pte_range with MM_CP_PROT_NUMA in tiering mode: present PTEs of lower-tier pages
/// become PROT_NONE and their folio records the time; top-tier pages are skipped.
fn change_prot_numa(k: &mut Kernel, mm: u32, vma: u32, start: u32, end: u32, now_ms: u32) -> u64 {
    let nodes = &k.nodes;
    let access = &mut k.numa.access_time_ms;
    let folios = &k.folios;
    let v = k.mms[mm as usize].vma_mut(vma);
    let mut updated = 0;
    for index in start..end {
        let pte = &mut v.ptes[index as usize];
        if !pte.is_present() || pte.is_protnone() {
            continue;
        }
        let pfn = pte.pfn();
        if nodes.is_toptier(nodes.nid(pfn)) {
            continue;
        }
        access[folios.head_of(pfn) as usize] = now_ms;
        *pte = pte.with_protnone();
        updated += 1;
        // Random accesses (Op::Access) find it among their range's special pages.
        for set in v.special.iter_mut() {
            if set.covers(index) {
                set.insert(index, super::access::PROT_NONE);
            }
        }
    }
    updated
}

/// do_numa_page: a task touched a PROT_NONE page. Promote its folio if it is hot and node 0
/// has room, else (or if that fails) restore the PTE.
pub fn do_numa_page(k: &mut Kernel, ctx: &mut Ctx, vmf: &VmFault) {
    let VmFault { mm, vma, index, .. } = *vmf;
    let pte = k.mms[mm as usize].vma(vma).ptes[index as usize];
    debug_assert!(pte.is_protnone());
    ctx.spend(CpuCost::DoNumaPage, k.cost.numa_hint_fault_ns);
    k.vmstat.count(VmEvent::NumaHintFaults, 1);
    let head = k.folios.head_of(pte.pfn());
    let src_nid = k.nodes.nid(head);
    if src_nid == 0 {
        k.vmstat.count(VmEvent::NumaHintFaultsLocal, 1);
    }
    let nr = k.folios.nr_pages(head) as u64;
    let promoted = !k.nodes.is_toptier(src_nid)
        && should_numa_migrate_memory(k, ctx, head, nr)
        && migrate_misplaced_folio(k, ctx, head, nr);
    if promoted {
        task_numa_fault(k, ctx, mm);
    } else {
        restore_ptes(k, mm, vma, head);
    }
}

/// numa_rebuild_single_mapping and friends: the folio's PROT_NONE PTEs get their protection
/// back as it was.
fn restore_ptes(k: &mut Kernel, mm: u32, vma: u32, head: u32) {
    let f = &k.folios;
    let (index, nr) = (f.owner_index(head as usize), f.nr_pages(head));
    let ptes = &mut k.mms[mm as usize].vma_mut(vma).ptes;
    for pte in &mut ptes[index as usize..(index + nr) as usize] {
        if pte.is_present() && pte.is_protnone() {
            *pte = pte.without_protnone();
        }
    }
}

/// should_numa_migrate_memory for a lower-tier folio: promote when node 0 has plenty free, else
/// when it faulted within the (adaptive) hot threshold of its scan and the rate limit allows.
fn should_numa_migrate_memory(k: &mut Kernel, ctx: &Ctx, head: u32, nr: u64) -> bool {
    let now_ms = ctx.now_ns / 1_000_000;
    if pgdat_free_space_enough(k, k.numa_node_id(ctx)) {
        k.numa.nbp_threshold_ms = 0;
        return true;
    }
    let def_th = k.numa.hot_threshold_ms;
    let rate_limit = k.numa.rate_limit_pages;
    let nb = &mut k.numa;
    // numa_promotion_adjust_threshold
    if now_ms - nb.nbp_th_start_ms > SCAN_PERIOD_MAX_MS {
        nb.nbp_th_start_ms = now_ms;
        let ref_cand = rate_limit * SCAN_PERIOD_MAX_MS / 1000;
        let diff_cand = nb.nr_candidates - nb.nbp_th_nr_cand;
        let unit_th = def_th * 2 / ADJUST_STEPS;
        let th = if nb.nbp_threshold_ms > 0 {
            nb.nbp_threshold_ms
        } else {
            def_th
        };
        nb.nbp_threshold_ms = if diff_cand > ref_cand * 11 / 10 {
            th.saturating_sub(unit_th).max(unit_th)
        } else if diff_cand < ref_cand * 9 / 10 {
            (th + unit_th).min(def_th * 2)
        } else {
            th
        };
        nb.nbp_th_nr_cand = nb.nr_candidates;
    }
    let th = if nb.nbp_threshold_ms > 0 {
        nb.nbp_threshold_ms
    } else {
        def_th
    };
    // numa_hint_fault_latency
    let latency_ms = (now_ms as u32).wrapping_sub(nb.access_time_ms[head as usize]) as u64;
    if latency_ms >= th {
        return false;
    }
    // numa_promotion_rate_limit
    nb.nr_candidates += nr;
    k.vmstat.count(VmEvent::PgpromoteCandidate, nr);
    if now_ms - nb.nbp_rl_start_ms > 1000 {
        nb.nbp_rl_start_ms = now_ms;
        nb.nbp_rl_nr_cand = nb.nr_candidates;
    }
    nb.nr_candidates - nb.nbp_rl_nr_cand < rate_limit
}

/// pgdat_free_space_enough: the faulting CPU's node (the target, mpol_misplaced's local node)
/// free above its promo watermark by max(1 GiB, 1/16 of it).
fn pgdat_free_space_enough(k: &Kernel, nid: usize) -> bool {
    let enough = ((1u64 << 30) / PAGE_SIZE).max(k.pgdat[nid].zone.nr_pages as u64 >> 4);
    k.pgdat[nid].zone.watermark_ok(
        0,
        k.pgdat[nid].zone.wmark_pages(Wmark::Promo) + enough,
        AllocFlags(0),
    )
}

/// migrate_misplaced_folio_prepare + migrate_misplaced_folio: if the faulting CPU's node is
/// balanced with room for the folio, isolate it and migrate it there; otherwise wake that
/// node's kswapd (which demotes) and fail. Counts numa_pages_migrated and pgpromote_success.
fn migrate_misplaced_folio(k: &mut Kernel, ctx: &mut Ctx, head: u32, nr: u64) -> bool {
    // migrate_balanced_pgdat, on the target: the faulting CPU's node (mpol_misplaced).
    let nid = k.numa_node_id(ctx);
    let mark = k.pgdat[nid].zone.wmark_pages(Wmark::High) + nr;
    if !k.pgdat[nid].zone.watermark_ok(0, mark, AllocFlags(0)) {
        let order = k.folios.order[head as usize] as u32;
        let pgdat = &mut k.pgdat[nid];
        wakeup_kswapd(&pgdat.zone, &mut pgdat.kswapd, Gfp(0), order);
        return false;
    }
    if !k.folios.test(head, flags::LRU) || k.folios.is_pinned(head) {
        return false;
    }
    folio_isolate_lru(k, head);
    let mut list = vec![head];
    let (_, moved) = migrate_pages(
        k,
        ctx,
        &mut list,
        &mut MisplacedTarget,
        MigrateMode::Async,
        MigrateReason::NumaMisplaced,
    );
    if !list.is_empty() {
        putback_movable_pages(k, ctx, &list);
        return false;
    }
    k.vmstat.count(VmEvent::NumaPagesMigrated, moved);
    k.vmstat.count(VmEvent::PgpromoteSuccess, moved);
    true
}

/// alloc_misplaced_dst_folio: node 0 only, no reclaim, no kswapd (GFP_THISNODE without
/// __GFP_RECLAIM), down to the min watermark.
struct MisplacedTarget;

impl MigrationTarget for MisplacedTarget {
    fn alloc(&mut self, k: &mut Kernel, ctx: &mut Ctx, order: u32) -> Option<u32> {
        let gfp = Gfp::GFP_HIGHUSER_MOVABLE
            .union(Gfp::THISNODE)
            .without(Gfp::RECLAIM)
            .union(Gfp::NOWARN)
            .union(Gfp::NOMEMALLOC)
            .union(Gfp::NORETRY);
        // __GFP_THISNODE: the faulting CPU's node only; the MIGRC check follows the allocation.
        let nid = k.numa_node_id(ctx);
        get_page_from_freelist(k, ctx, nid, gfp, order, AllocFlags::WMARK_MIN)
    }

    fn free(&mut self, k: &mut Kernel, ctx: &mut Ctx, pfn: u32, order: u32) {
        k.free_pages(ctx, pfn, order);
    }
}

/// alloc_demote_folio: the demotion target node, no reclaim, down to the min watermark.
pub struct DemotionTarget {
    pub nid: usize,
}

impl MigrationTarget for DemotionTarget {
    fn alloc(&mut self, k: &mut Kernel, ctx: &mut Ctx, order: u32) -> Option<u32> {
        let gfp = Gfp::GFP_HIGHUSER_MOVABLE
            .without(Gfp::RECLAIM)
            .union(Gfp::NOWARN)
            .union(Gfp::NOMEMALLOC)
            .union(Gfp::THISNODE);
        let page = alloc_on_node(k, ctx, self.nid, gfp, order, AllocFlags::WMARK_MIN);
        super::migrate::flush::migrc::check_flush_task_mgen(k, ctx);
        page
    }

    fn free(&mut self, k: &mut Kernel, ctx: &mut Ctx, pfn: u32, order: u32) {
        k.free_pages(ctx, pfn, order);
    }
}

/// demote_folio_list: migrate reclaim's chosen folios of node `src_nid` one tier down (MR_DEMOTION, async).
/// Returns the pages demoted; the folios left in `folios` failed and go back to reclaim.
pub fn demote_folio_list(
    k: &mut Kernel,
    ctx: &mut Ctx,
    folios: &mut Vec<u32>,
    src_nid: usize,
    kswapd: bool,
) -> u64 {
    let Some(nid) = k.nodes.next_demotion_node(src_nid) else {
        return 0;
    };
    for &pfn in folios.iter() {
        k.folios.set(pfn, flags::ISOLATED);
    }
    let (_, moved) = migrate_pages(
        k,
        ctx,
        folios,
        &mut DemotionTarget { nid },
        MigrateMode::Async,
        MigrateReason::Demotion,
    );
    for &pfn in folios.iter() {
        k.folios.clear(pfn, flags::ISOLATED);
    }
    let event = if kswapd {
        VmEvent::PgdemoteKswapd
    } else {
        VmEvent::PgdemoteDirect
    };
    k.vmstat.count(event, moved);
    moved
}

/// A write through a write-protected PTE of an exclusive anonymous folio (do_wp_page's reuse):
/// the PTE becomes writable and dirty; MIGRC's owed flush is done first (migrc_flush).
pub fn do_wp_page(k: &mut Kernel, ctx: &mut Ctx, vmf: &VmFault) {
    let VmFault { mm, vma, index, .. } = *vmf;
    super::migrate::flush::migrc::migrc_flush(k, ctx);
    ctx.spend(CpuCost::DoWpPage, k.cost.wp_fault_reuse_ns);
    k.vmstat.count(VmEvent::Pgfault, 1);
    let pte = &mut k.mms[mm as usize].vma_mut(vma).ptes[index as usize];
    *pte = Pte::present(pte.pfn());
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::content::ContentClass;

    fn kernel() -> Kernel {
        let s = Scenario::from_toml_str(
            r#"
[machine]
cpus = 2
memory = "256M"
[[machine.node]]
memory = "256M"
[sysctl.kernel]
numa_balancing = 2
[[workload]]
kind = "usemem"
nproc = 1
size = "1M"
"#,
        )
        .unwrap();
        Kernel::new(&s)
    }

    #[test]
    fn a_promoting_task_doubles_its_period_per_pass_up_to_task_scan_max() {
        let mut k = kernel();
        let mm = k.new_mm(0, ContentClass::Usemem);
        // 24 scan windows: task_scan_start 1000/24 ms, floored at 100; task_scan_max 2500.
        k.mms[mm as usize].rss_anon = 24 * k.numa.scan_size_pages;
        let mut main = init_numa_balancing(&k, mm, 0);
        let mut worker = init_numa_balancing(&k, mm, 1);
        assert_eq!((main.numa_scan_period_ms, main.node_stamp_ns), (1000, 0));
        // The stagger as written: min(2500 (ms, taken as ns), 1000 ms x 1 in ns) + 2 ticks.
        assert_eq!(worker.node_stamp_ns, 2500 + 8_000_000);
        // The first task's first period ends after scan_delay of CPU time: task_scan_start.
        assert!(!task_tick_numa(&k, &mut main, mm, 1_000_000_000, 0));
        assert!(task_tick_numa(&k, &mut main, mm, 1_000_000_001, 0));
        assert_eq!(
            (main.numa_scan_period_ms, main.node_stamp_ns),
            (100, 1_000_000_000)
        );
        // Promotions: one doubling per scan pass (numa_scan_seq), none within a pass.
        let ctx = Ctx::new(0, 5_000_000_000);
        k.current.numa = main;
        let mut periods = Vec::new();
        for seq in 1..=7 {
            k.mms[mm as usize].numa_scan_seq = seq;
            task_numa_fault(&mut k, &ctx, mm);
            task_numa_fault(&mut k, &ctx, mm);
            periods.push(k.current.numa.numa_scan_period_ms);
        }
        assert_eq!(periods, [200, 400, 800, 1600, 2500, 2500, 2500]);
        assert_eq!(
            k.mms[mm as usize].numa_next_scan_ns,
            5_000_000_000 + 2_500_000_000
        );
        // A thread that never promotes keeps scan_delay, one period per second of CPU time.
        k.mms[mm as usize].numa_next_scan_ns = 9_000_000_000;
        assert!(!task_tick_numa(
            &k,
            &mut worker,
            mm,
            5_500_000_000,
            8_000_000_000
        ));
        assert!(task_tick_numa(
            &k,
            &mut worker,
            mm,
            6_100_000_000,
            9_000_000_000
        ));
        assert_eq!(worker.numa_scan_period_ms, 1000);
        assert_eq!(worker.node_stamp_ns, 6_000_000_000 + 2500 + 8_000_000);
    }
}
