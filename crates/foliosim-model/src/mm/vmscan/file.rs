//! shrink_folio_list for page-cache folios (mm/vmscan.c, 6.18): references, writeback and
//! dirty state, unmapping through the file's i_mmap, and __remove_mapping of clean folios.
//!
//! 6.18's reclaim never writes a filesystem folio itself (pageout() returns PAGE_ACTIVATE
//! for it): a dirty folio is marked PG_reclaim and activated, and the caller wakes the
//! flusher when everything it took was dirty and unqueued (mm/page_writeback.rs). When the
//! write completes the folio rotates to the inactive tail and the next pass frees it.

use super::scan_count::{ReclaimStat, ScanControl};
use super::{Reclaim, ShrinkResult};
use crate::cpu_cost::CpuCost;
use crate::engine::{Ctx, WaitKind};
use crate::mm::filemap::rmap::{folio_referenced_file, try_to_unmap_file};
use crate::mm::filemap::{filemap_remove_folio, folio_read_pending};
use crate::mm::folio::flags;
use crate::mm::page_writeback::folio_writeback_pending;
use crate::mm::tlb::TlbUnmapBatch;
use crate::mm::vmstat::VmEvent;
use crate::mm::Kernel;
use std::collections::VecDeque;

/// What folio_check_references decides for a page-cache folio.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum FileRef {
    Activate,
    Keep,
    /// Referenced through read(2) only (PG_referenced): free it if clean, keep it if dirty.
    ReclaimClean,
    Reclaim,
}

/// folio_check_references for a page-cache folio: mapped and young -> PG_referenced set and
/// another trip round the inactive list, or activation if it was already referenced (used
/// twice); not young but PG_referenced (read(2) marked it) -> reclaim only if clean.
pub(crate) fn folio_check_references(k: &mut Kernel, ctx: &mut Ctx, pfn: u32) -> FileRef {
    let referenced_ptes = folio_referenced_file(k, ctx, pfn);
    let f = &mut k.folios;
    let referenced_folio = f.test(pfn, flags::REFERENCED);
    f.clear(pfn, flags::REFERENCED);
    if referenced_ptes > 0 {
        f.set(pfn, flags::REFERENCED);
        return if referenced_folio || referenced_ptes > 1 {
            FileRef::Activate
        } else {
            FileRef::Keep
        };
    }
    if referenced_folio {
        FileRef::ReclaimClean
    } else {
        FileRef::Reclaim
    }
}

/// writeback_throttling_sane: global reclaim and cgroup v2 memcg reclaim do not wait on
/// writeback in shrink_folio_list; cgroup v1 memcg reclaim does.
fn writeback_throttling_sane(k: &Kernel, sc: &ScanControl, memcg: u16) -> bool {
    !sc.cgroup_reclaim() || k.memcgs[memcg as usize].on_dfl
}

/// shrink_folio_list over isolated page-cache folios of `memcg`. `stat` gathers the dirty and
/// writeback counts the caller acts on.
pub fn shrink_file_folio_list(
    k: &mut Kernel,
    ctx: &mut Ctx,
    folios: Vec<u32>,
    sc: &ScanControl,
    memcg: u16,
    stat: &mut ReclaimStat,
) -> ShrinkResult {
    let kswapd = sc.reclaim == Reclaim::Kswapd;
    let mut list: VecDeque<u32> = folios.into();
    let mut tlb = TlbUnmapBatch::new(k.cfg.tlb_batched_unmap);
    let mut result = ShrinkResult::default();
    while let Some(pfn) = list.pop_front() {
        // folio_trylock fails while a read is in flight.
        if folio_read_pending(k, pfn, ctx.now_ns) {
            result.putback.push((pfn, false));
            continue;
        }
        let writeback = folio_writeback_pending(k, pfn, ctx.now_ns);
        let dirty = k.folios.test(pfn, flags::DIRTY);
        let reclaim_flag = k.folios.test(pfn, flags::RECLAIM);
        if dirty || writeback {
            stat.dirty += 1;
        }
        if dirty && !writeback {
            stat.unqueued_dirty += 1;
        }
        if writeback && reclaim_flag {
            stat.congested += 1;
        }
        if writeback {
            if kswapd && reclaim_flag && k.pagecache.pgdat_writeback {
                // Case 1: folios cycle faster than they are written.
                stat.immediate += 1;
            } else if writeback_throttling_sane(k, sc, memcg) || !reclaim_flag {
                // Case 2: reclaim it as soon as it is written.
                k.folios.set(pfn, flags::RECLAIM);
                stat.writeback += 1;
            } else {
                // Case 3: cgroup v1 memcg reclaim waits for the write, then retries.
                let done_ns = k.folios.writeback_done_ns(pfn);
                ctx.wait_until(done_ns, WaitKind::Io);
                list.push_back(pfn);
                continue;
            }
            result.putback.push((pfn, true));
            continue;
        }
        let policy = k.cfg.lru_policy;
        let references = policy.file_check_references(k, ctx, pfn);
        match references {
            FileRef::Activate => {
                result.putback.push((pfn, true));
                continue;
            }
            FileRef::Keep => {
                result.putback.push((pfn, false));
                continue;
            }
            FileRef::Reclaim | FileRef::ReclaimClean => {}
        }
        ctx.spend(CpuCost::ShrinkFolioList, k.cost.shrink_file_folio_ns);
        if k.folios.mapcount(pfn as usize) > 0 {
            try_to_unmap_file(k, ctx, pfn, &mut tlb);
        }
        if k.folios.test(pfn, flags::DIRTY) {
            if !kswapd || !reclaim_flag || !k.pagecache.pgdat_dirty {
                // Immediately reclaim when written back (NR_VMSCAN_IMMEDIATE).
                k.vmstat.count(VmEvent::NrVmscanImmediateReclaim, 1);
                k.folios.set(pfn, flags::RECLAIM);
                result.putback.push((pfn, true));
            } else if references == FileRef::ReclaimClean {
                result.putback.push((pfn, false));
            } else {
                // pageout(): PAGE_ACTIVATE for a filesystem folio.
                tlb.flush_dirty(k, ctx);
                result.putback.push((pfn, true));
            }
            continue;
        }
        // __remove_mapping: the slot keeps the folio's shadow.
        let shadow = crate::mm::workingset::workingset_eviction(k, pfn, sc.target);
        filemap_remove_folio(k, ctx, pfn, shadow);
        result.nr_reclaimed += 1;
    }
    tlb.flush(k, ctx);
    result
}
