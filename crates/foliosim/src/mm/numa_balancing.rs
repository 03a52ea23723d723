//! NUMA balancing in memory-tiering mode (`kernel.numa_balancing = 2`): the scanner that makes
//! lower-tier pages' PTEs PROT_NONE (task_numa_work, kernel/sched/fair.c), the hint fault that
//! decides whether to promote (do_numa_page, mm/memory.c; should_numa_migrate_memory), and the
//! promotion (migrate_misplaced_folio, mm/migrate.c). Demotion, the other half of tiering, is
//! reclaim's (mm/vmscan.rs, `demote_folio_list` below).
//!
//! The scan period is the mm's task_scan_start: the minimum period divided by the number of
//! scan windows the mm's RSS needs, no less than the floor that keeps scanning under
//! MAX_SCAN_WINDOW (2560 MB/s). A shortcut (docs/model.md, "NUMA tiering"): in v6.9 a
//! successful promotion reaches task_numa_fault with the top-tier node, so
//! update_task_scan_period doubles each thread's period per scan pass up to task_scan_max, and
//! CLONE_VM threads start at scan_delay; the model scans 7-25x too often (docs/seed004.md).
//! Not modelled either: NUMA_BALANCING_NORMAL (task and page placement between CPU nodes; every
//! CPU is on node 0).

use super::folio::flags;
use super::gfp::Gfp;
use super::migrate::{folio_isolate_lru, migrate_pages, putback_movable_pages};
use super::migrate::{MigrateMode, MigrateReason, MigrationTarget};
use super::mmap::Pte;
use super::numa::{alloc_on_node, get_page_from_freelist, Nodes};
use super::page_alloc::{AllocFlags, Wmark};
use super::vmscan::kswapd::wakeup_kswapd;
use super::vmstat::VmEvent;
use super::Kernel;
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

    /// task_scan_min: the period for an mm of `rss_pages`.
    fn scan_period_ns(&self, rss_pages: u64) -> u64 {
        let scan_size_mb = self.scan_size_pages * PAGE_SIZE >> 20;
        let windows = (MAX_SCAN_WINDOW_MB / scan_size_mb.max(1)).max(1);
        let floor_ms = 1000 / windows;
        let nr_scan_windows = rss_pages.div_ceil(self.scan_size_pages).max(1);
        (self.scan_period_min_ms / nr_scan_windows).max(floor_ms) * 1_000_000
    }
}

/// can_demote: reclaim on node 0 may move folios a tier down.
pub fn can_demote(k: &Kernel) -> bool {
    k.nodes.demotion_enabled && k.nodes.next_demotion_node(0).is_some()
}

/// task_numa_work, run when a task of `mm` returns to user space at or after the mm's next
/// scan time: up to scan_size of the mm's lower-tier pages made PROT_NONE, from where the
/// last scan stopped, in 2 MiB ranges; one TLB flush of the mm per VMA range changed
/// (change_protection's tlb_finish_mmu).
pub fn task_numa_work(k: &mut Kernel, ctx: &mut Ctx, mm: u32) {
    let m = &mut k.mms[mm as usize];
    if m.numa_next_scan_ns == 0 {
        m.numa_next_scan_ns = ctx.now_ns + k.numa.scan_delay_ns;
        return;
    }
    if ctx.now_ns < m.numa_next_scan_ns {
        return;
    }
    let rss = m.rss_anon;
    m.numa_next_scan_ns = ctx.now_ns + k.numa.scan_period_ns(rss);
    let now_ms = (ctx.now_ns / 1_000_000) as u32;
    let mut pages = k.numa.scan_size_pages as i64;
    let mut virtpages = pages * 8;
    let nr_vmas = k.mms[mm as usize].vmas.len() as u32;
    let (mut vma, mut index) = k.mms[mm as usize].numa_scan_offset;
    let mut updated_total = 0u64;
    let mut wrapped = false;
    while pages > 0 && virtpages > 0 {
        if vma >= nr_vmas {
            if wrapped {
                break;
            }
            // numa_scan_seq: start over from the first VMA.
            (vma, index, wrapped) = (0, 0, true);
            continue;
        }
        let migratable = k.mms[mm as usize].vmas[vma as usize]
            .as_ref()
            .is_some_and(|v| v.anon_vma);
        let len = k.mms[mm as usize].vmas[vma as usize]
            .as_ref()
            .map_or(0, |v| v.nr_pages);
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
            let arch = k.tlb;
            arch.flush_batch(k, ctx, &[mm], updated as u32);
        }
        virtpages -= (end - index) as i64;
        updated_total += updated;
        index = end;
    }
    k.mms[mm as usize].numa_scan_offset = (vma, index);
    k.vmstat.count(VmEvent::NumaPteUpdates, updated_total);
    ctx.spend(k.cost.numa_pte_update_ns * updated_total);
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
        if Nodes::is_toptier(nodes.nid(pfn)) {
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
pub fn do_numa_page(k: &mut Kernel, ctx: &mut Ctx, mm: u32, vma: u32, index: u32) {
    let pte = k.mms[mm as usize].vma(vma).ptes[index as usize];
    debug_assert!(pte.is_protnone());
    ctx.spend(k.cost.numa_hint_fault_ns);
    k.vmstat.count(VmEvent::NumaHintFaults, 1);
    let head = k.folios.head_of(pte.pfn());
    let src_nid = k.nodes.nid(head);
    if src_nid == 0 {
        k.vmstat.count(VmEvent::NumaHintFaultsLocal, 1);
    }
    let nr = k.folios.nr_pages(head) as u64;
    let promoted = !Nodes::is_toptier(src_nid)
        && should_numa_migrate_memory(k, ctx, head, nr)
        && migrate_misplaced_folio(k, ctx, head, nr);
    if !promoted {
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
    if pgdat_free_space_enough(k) {
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

/// pgdat_free_space_enough: node 0 free above its promo watermark by max(1 GiB, 1/16 of it).
fn pgdat_free_space_enough(k: &Kernel) -> bool {
    let enough = ((1u64 << 30) / PAGE_SIZE).max(k.zone.nr_pages as u64 >> 4);
    k.zone
        .watermark_ok(0, k.zone.wmark_pages(Wmark::Promo) + enough, AllocFlags(0))
}

/// migrate_misplaced_folio_prepare + migrate_misplaced_folio: if node 0 is balanced with room
/// for the folio, isolate it and migrate it there; otherwise wake node 0's kswapd (which
/// demotes) and fail. Counts numa_pages_migrated and pgpromote_success.
fn migrate_misplaced_folio(k: &mut Kernel, ctx: &mut Ctx, head: u32, nr: u64) -> bool {
    // migrate_balanced_pgdat
    let mark = k.zone.wmark_pages(Wmark::High) + nr;
    if !k.zone.watermark_ok(0, mark, AllocFlags(0)) {
        let order = k.folios.order[head as usize] as u32;
        wakeup_kswapd(&k.zone, &mut k.kswapd, Gfp(0), order);
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
        // __GFP_THISNODE: node 0's zone only; the MIGRC check follows the allocation.
        get_page_from_freelist(k, ctx, gfp, order, AllocFlags::WMARK_MIN)
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

/// demote_folio_list: migrate reclaim's chosen folios one tier down (MR_DEMOTION, async).
/// Returns the pages demoted; the folios left in `folios` failed and go back to reclaim.
pub fn demote_folio_list(
    k: &mut Kernel,
    ctx: &mut Ctx,
    folios: &mut Vec<u32>,
    kswapd: bool,
) -> u64 {
    let Some(nid) = k.nodes.next_demotion_node(0) else {
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
pub fn do_wp_page(k: &mut Kernel, ctx: &mut Ctx, mm: u32, vma: u32, index: u32) {
    super::migrate::flush::migrc::migrc_flush(k, ctx);
    ctx.spend(k.cost.wp_fault_reuse_ns);
    k.vmstat.count(VmEvent::Pgfault, 1);
    let pte = &mut k.mms[mm as usize].vma_mut(vma).ptes[index as usize];
    *pte = Pte::present(pte.pfn());
}
