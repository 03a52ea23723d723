//! Page migration (mm/migrate.c, 6.18): move isolated folios to new pages a caller's target
//! allocator provides (compaction's isolated free pages).
//!
//! migrate_pages cuts the list into batches of up to 512 pages. A batch is migrated in two
//! phases (migrate_pages_batch): unmap every folio (a destination is allocated, the PTEs that
//! map the folio are cleared, with one batched TLB flush for all of them in async mode), then
//! move each (copy, rewire whoever pointed at the old pfns, free the old folio). Async mode
//! retries a folio that cannot be unmapped yet up to 10 times; sync modes first try the batch
//! asynchronously (3 passes), then each failure alone in the real mode (7 passes), where a
//! folio under writeback is waited for (full sync) instead of failing. A large folio whose
//! destination cannot be allocated is split and its pages migrated once more, asynchronously.
//!
//! What fails, as in the kernel: a pinned folio (its PTEs cannot be replaced, its refcount
//! cannot be frozen: -EAGAIN until the retries run out), a folio under writeback in async or
//! sync-light mode (-EBUSY), no destination (-ENOMEM, which ends the whole call).
//!
//! In the model a step runs atomically, so the migration entries that would sit in the PTEs
//! between the phases are not written: the PTEs are rewritten from old to new pfns in the move
//! phase, and left alone when a folio fails. Who points at a folio depends on its owner kind
//! (owner.rs).

pub mod flush;
pub mod owner;

use super::folio::{flags, FolioTable};
use super::huge_memory::{can_split_folio, split_folio};
use super::tlb::TlbUnmapBatch;
use super::vmstat::VmEvent;
use super::Kernel;
use crate::cpu_cost::CpuCost;
use crate::engine::{Ctx, WaitKind};
use crate::hw::membw::Stream;
use crate::scenario::{PAGE_SIZE, PMD_ORDER};
use std::collections::VecDeque;

/// NR_MAX_BATCHED_MIGRATION (HPAGE_PMD_NR): pages per batch.
pub const NR_MAX_BATCHED_MIGRATION: u32 = 512;
/// NR_MAX_MIGRATE_PAGES_RETRY and its async / sync shares.
const NR_MAX_MIGRATE_PAGES_RETRY: u32 = 10;
const NR_MAX_MIGRATE_ASYNC_RETRY: u32 = 3;
const NR_MAX_MIGRATE_SYNC_RETRY: u32 = NR_MAX_MIGRATE_PAGES_RETRY - NR_MAX_MIGRATE_ASYNC_RETRY;

/// enum migrate_mode, in the kernel's order.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum MigrateMode {
    /// Never block: trylocks, no waiting for writeback, batched TLB flushes.
    Async,
    /// May block on locks, not on writeback.
    SyncLight,
    /// May wait for writeback.
    Sync,
}

/// enum migrate_reason: why folios move. Other reasons (NUMA balancing: no split on -ENOMEM;
/// demotion) come with their callers.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum MigrateReason {
    Compaction,
    /// MR_DEMOTION: reclaim moves folios one tier down (vmscan demote_folio_list).
    Demotion,
    /// MR_NUMA_MISPLACED: a NUMA hint fault promotes a folio (migrate_misplaced_folio).
    NumaMisplaced,
}

/// -ENOMEM: no destination could be allocated; the call stopped.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum MigrateError {
    NoMemory,
}

/// Where migration gets destination folios (new_folio_t, free_folio_t).
pub trait MigrationTarget {
    /// get_new_folio: a free block of `order`, or None (-ENOMEM).
    fn alloc(&mut self, k: &mut Kernel, ctx: &mut Ctx, order: u32) -> Option<u32>;
    /// put_new_folio: a destination that was not used.
    fn free(&mut self, k: &mut Kernel, ctx: &mut Ctx, pfn: u32, order: u32);
}

/// struct migrate_pages_stats: pages and THPs (PMD-mappable folios).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct MigrateStats {
    pub nr_succeeded: u64,
    pub nr_failed_pages: u64,
    pub nr_thp_succeeded: u64,
    pub nr_thp_failed: u64,
    pub nr_thp_split: u64,
    pub nr_split: u64,
}

/// Why a folio could not be unmapped.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum UnmapError {
    /// -EAGAIN: try again later (pinned).
    Again,
    /// -EBUSY: permanent for this call (writeback, not waited for in this mode).
    Busy,
    /// -ENOMEM: no destination.
    NoMemory,
}

/// folio_isolate_lru for migration: off its LRU list (keeping PG_active), marked isolated.
pub fn folio_isolate_lru(k: &mut Kernel, pfn: u32) {
    let f = &mut k.folios;
    debug_assert!(f.test(pfn, flags::LRU) && !f.test(pfn, flags::ISOLATED));
    let memcg = f.memcg(pfn as usize) as usize;
    let nid = k.nodes.nid(pfn);
    k.memcgs[memcg].lruvec_mut(nid).lruvec_del_folio(f, pfn);
    f.set(pfn, flags::ISOLATED);
}

/// folio_putback_lru: back to the head of its LRU list (active or not, as it was).
fn folio_putback_lru(k: &mut Kernel, ctx: &mut Ctx, pfn: u32) {
    let f = &mut k.folios;
    debug_assert!(f.test(pfn, flags::ISOLATED) && !f.test(pfn, flags::LRU));
    f.clear(pfn, flags::ISOLATED);
    let memcg = f.memcg(pfn as usize) as usize;
    let lruvec = k.memcgs[memcg].lruvec_mut(k.nodes.nid(pfn));
    lruvec.lruvec_add_folio(f, pfn);
    lruvec.lru_lock.hold(ctx, k.cost.lru_move_ns);
}

/// putback_movable_pages: folios isolated and not migrated go back to their LRU lists.
pub fn putback_movable_pages(k: &mut Kernel, ctx: &mut Ctx, folios: &[u32]) {
    for &pfn in folios {
        folio_putback_lru(k, ctx, pfn);
    }
}

/// migrate_pages: migrate the isolated folios of `from` into destinations from `target`.
/// Returns Ok(folios not migrated, a large folio split counting as one) or Err(-ENOMEM), and
/// the base pages migrated. The folios not migrated are left in `from` for the caller to put
/// back. Counts pgmigrate_* and thp_migration_*.
pub fn migrate_pages(
    k: &mut Kernel,
    ctx: &mut Ctx,
    from: &mut Vec<u32>,
    target: &mut dyn MigrationTarget,
    mode: MigrateMode,
    _reason: MigrateReason,
) -> (Result<u32, MigrateError>, u64) {
    let mut stats = MigrateStats::default();
    let mut ret_folios = Vec::new();
    let mut split_folios = Vec::new();
    let mut rc_gather: Result<u32, MigrateError> = Ok(0);
    let mut rest: VecDeque<u32> = std::mem::take(from).into();
    while !rest.is_empty() {
        // A batch: folios up to and including the one reaching NR_MAX_BATCHED_MIGRATION pages.
        let mut batch = Vec::new();
        let mut nr_pages = 0;
        while let Some(pfn) = rest.pop_front() {
            nr_pages += k.folios.nr_pages(pfn);
            batch.push(pfn);
            if nr_pages >= NR_MAX_BATCHED_MIGRATION {
                break;
            }
        }
        let out = BatchOut {
            ret_folios: &mut ret_folios,
            split_folios: Some(&mut split_folios),
            stats: &mut stats,
        };
        let rc = if mode == MigrateMode::Async {
            let nr_pass = NR_MAX_MIGRATE_PAGES_RETRY;
            migrate_pages_batch(k, ctx, &mut batch, target, mode, out, nr_pass)
        } else {
            migrate_pages_sync(k, ctx, &mut batch, target, mode, out)
        };
        ret_folios.append(&mut batch);
        let nr_failed = match rc {
            Ok(n) => n,
            Err(e) => {
                rc_gather = Err(e);
                ret_folios.append(&mut split_folios);
                ret_folios.extend(rest.drain(..));
                break;
            }
        };
        if !split_folios.is_empty() {
            // The pages of split folios: one async pass; the folio already counted as failed.
            let out = BatchOut {
                ret_folios: &mut ret_folios,
                split_folios: None,
                stats: &mut stats,
            };
            let _ = migrate_pages_batch(
                k,
                ctx,
                &mut split_folios,
                target,
                MigrateMode::Async,
                out,
                1,
            );
            ret_folios.append(&mut split_folios);
        }
        rc_gather = rc_gather.map(|n| n + nr_failed);
    }
    *from = ret_folios;
    if from.is_empty() {
        rc_gather = Ok(0);
    }
    let v = &mut k.vmstat;
    v.count(VmEvent::PgmigrateSuccess, stats.nr_succeeded);
    v.count(VmEvent::PgmigrateFail, stats.nr_failed_pages);
    v.count(VmEvent::ThpMigrationSuccess, stats.nr_thp_succeeded);
    v.count(VmEvent::ThpMigrationFail, stats.nr_thp_failed);
    v.count(VmEvent::ThpMigrationSplit, stats.nr_thp_split);
    (rc_gather, stats.nr_succeeded)
}

/// Where migrate_pages_batch leaves what it did not migrate and what it counted: the folios
/// that failed for good (ret_folios), the pages of large folios it split (split_folios; None:
/// no split), and struct migrate_pages_stats.
struct BatchOut<'a> {
    ret_folios: &'a mut Vec<u32>,
    split_folios: Option<&'a mut Vec<u32>>,
    stats: &'a mut MigrateStats,
}

impl BatchOut<'_> {
    /// The same lists and stats, for one more batch.
    fn reborrow(&mut self) -> BatchOut<'_> {
        BatchOut {
            ret_folios: self.ret_folios,
            split_folios: self.split_folios.as_deref_mut(),
            stats: self.stats,
        }
    }
}

/// migrate_pages_sync: the batch asynchronously first (batched flushes, 3 passes), then each
/// folio that failed alone in `mode`.
fn migrate_pages_sync(
    k: &mut Kernel,
    ctx: &mut Ctx,
    from: &mut Vec<u32>,
    target: &mut dyn MigrationTarget,
    mode: MigrateMode,
    mut out: BatchOut,
) -> Result<u32, MigrateError> {
    let mut failed = Vec::new();
    let mut astats = MigrateStats::default();
    let async_out = BatchOut {
        ret_folios: &mut failed,
        split_folios: out.split_folios.as_deref_mut(),
        stats: &mut astats,
    };
    let nr_pass = NR_MAX_MIGRATE_ASYNC_RETRY;
    let rc = migrate_pages_batch(k, ctx, from, target, MigrateMode::Async, async_out, nr_pass);
    let stats = &mut *out.stats;
    stats.nr_succeeded += astats.nr_succeeded;
    stats.nr_thp_succeeded += astats.nr_thp_succeeded;
    stats.nr_thp_split += astats.nr_thp_split;
    stats.nr_split += astats.nr_split;
    if rc.is_err() {
        stats.nr_failed_pages += astats.nr_failed_pages;
        stats.nr_thp_failed += astats.nr_thp_failed;
        out.ret_folios.append(&mut failed);
        return rc;
    }
    stats.nr_thp_failed += astats.nr_thp_split;
    // Split folios count as failed; everything else is retried below.
    let mut nr_failed = astats.nr_split as u32;
    from.append(&mut failed);
    while !from.is_empty() {
        let mut one = vec![from.remove(0)];
        let nr_pass = NR_MAX_MIGRATE_SYNC_RETRY;
        let rc = migrate_pages_batch(k, ctx, &mut one, target, mode, out.reborrow(), nr_pass);
        out.ret_folios.append(&mut one);
        nr_failed += rc?;
    }
    Ok(nr_failed)
}

/// migrate_pages_batch: unmap every folio of `from` (up to `nr_pass` passes while some ask to
/// be retried), flush the TLB once, move the unmapped ones. Folios that failed for good go to
/// `ret_folios`, split large folios' pages to `split_folios`; those still to retry stay in
/// `from`. Returns the folios not migrated, or -ENOMEM.
fn migrate_pages_batch(
    k: &mut Kernel,
    ctx: &mut Ctx,
    from: &mut Vec<u32>,
    target: &mut dyn MigrationTarget,
    mode: MigrateMode,
    out: BatchOut,
    nr_pass: u32,
) -> Result<u32, MigrateError> {
    let BatchOut {
        ret_folios,
        mut split_folios,
        stats,
    } = out;
    debug_assert!(mode == MigrateMode::Async || from.len() <= 1);
    let mut nr_failed = 0u32;
    let (mut retry, mut thp_retry, mut nr_retry_pages) = (1u32, 0u64, 0u64);
    let mut unmapped: Vec<(u32, u32, bool)> = Vec::new();
    let mut tlb = TlbUnmapBatch::default();
    let mut migrc = MigrcBatch::default();
    let mut rc_saved = None;
    let mut pass = 0;
    'passes: while pass < nr_pass && retry > 0 {
        pass += 1;
        (retry, thp_retry, nr_retry_pages) = (0, 0, 0);
        let mut i = 0;
        while i < from.len() {
            let src = from[i];
            let order = k.folios.order[src as usize] as u32;
            let nr_pages = 1u64 << order;
            let is_thp = (order >= PMD_ORDER) as u64;
            // A partially mapped folio (on the deferred split queue) is split rather than
            // migrated whole: its unmapped pages need no copy.
            if order > 1 && k.folios.test(src, flags::PARTIALLY_MAPPED) {
                from.remove(i);
                if split_into(k, ctx, src, split_folios.as_deref_mut()) {
                    stats.count_split(is_thp);
                } else {
                    nr_failed += 1;
                    stats.count_failed(is_thp, nr_pages);
                    ret_folios.push(src);
                }
                continue;
            }
            // Batched since 6.3 (migrate_pages_batch); before, each folio was flushed.
            let batched = mode == MigrateMode::Async && k.cfg.migrate_batched_flush;
            let adds = (tlb.adds_writable, tlb.adds_read_only);
            match migrate_folio_unmap(k, ctx, src, target, mode, batched.then_some(&mut tlb)) {
                Ok((dst, was_mapped)) => {
                    from.remove(i);
                    unmapped.push((src, dst, was_mapped));
                    migrc.note(&k.folios, src, order, &tlb, adds);
                }
                Err(UnmapError::Again) => {
                    retry += 1;
                    thp_retry += is_thp;
                    nr_retry_pages += nr_pages;
                    i += 1;
                }
                Err(UnmapError::Busy) => {
                    nr_failed += 1;
                    stats.count_failed(is_thp, nr_pages);
                    ret_folios.push(from.remove(i));
                }
                Err(UnmapError::NoMemory) => {
                    nr_failed += 1;
                    stats.nr_thp_failed += is_thp;
                    if order > 0 && split_into(k, ctx, src, split_folios.as_deref_mut()) {
                        stats.count_split(is_thp);
                        from.remove(i);
                        continue;
                    }
                    stats.count_failed(thp_retry, nr_pages + nr_retry_pages);
                    rc_saved = Some(MigrateError::NoMemory);
                    break 'passes;
                }
            }
        }
    }
    if rc_saved.is_none() {
        nr_failed += retry;
        stats.count_failed(thp_retry, nr_retry_pages);
    }
    // try_to_unmap_flush: one shootdown for every PTE cleared above (async mode), less what
    // the flush policy defers.
    let policy = k.cfg.migrate_flush;
    let mgen = policy.defer(k, &mut tlb, &migrc.eligible_mms, &migrc.ineligible_ro_mms);
    tlb.flush(k, ctx);
    move_unmapped(k, ctx, unmapped, &migrc.eligible, mgen, stats);
    match rc_saved {
        Some(e) => Err(e),
        None => Ok(nr_failed),
    }
}

impl MigrateStats {
    /// A large folio was split; its pages are migrated on their own.
    fn count_split(&mut self, is_thp: u64) {
        self.nr_thp_split += is_thp;
        self.nr_split += 1;
    }

    fn count_failed(&mut self, thps: u64, pages: u64) {
        self.nr_thp_failed += thps;
        self.nr_failed_pages += pages;
    }
}

/// try_split_folio onto `split_folios`, when the caller takes split pages (None: it does not).
fn split_into(
    k: &mut Kernel,
    ctx: &mut Ctx,
    src: u32,
    split_folios: Option<&mut Vec<u32>>,
) -> bool {
    split_folios.is_some_and(|split| try_split_folio(k, ctx, src, split))
}

/// MIGRC (mm/migrate/flush/): the unmapped folios whose only mappings were read-only and
/// clean (order 0, batched), their mms, and the mms of other read-only folios.
#[derive(Default)]
struct MigrcBatch {
    eligible: Vec<u32>,
    eligible_mms: Vec<u32>,
    ineligible_ro_mms: Vec<u32>,
}

impl MigrcBatch {
    /// `src` was just unmapped: `tlb` holds its PTEs on top of the `(writable, read-only)`
    /// counts it had before.
    fn note(
        &mut self,
        f: &FolioTable,
        src: u32,
        order: u32,
        tlb: &TlbUnmapBatch,
        before: (u32, u32),
    ) {
        if tlb.adds_read_only <= before.1 {
            return;
        }
        let mm = f.owner_mm(src as usize);
        if tlb.adds_writable == before.0 && order == 0 {
            self.eligible.push(src);
            self.eligible_mms.push(mm);
        } else {
            self.ineligible_ro_mms.push(mm);
        }
    }
}

/// The move phase: each unmapped folio to its destination; a folio whose flush MIGRC deferred
/// carries the generation `mgen` that owes it.
fn move_unmapped(
    k: &mut Kernel,
    ctx: &mut Ctx,
    unmapped: Vec<(u32, u32, bool)>,
    eligible: &[u32],
    mgen: u16,
    stats: &mut MigrateStats,
) {
    for (src, dst, was_mapped) in unmapped {
        let order = k.folios.order[src as usize] as u32;
        let src_mgen = if eligible.contains(&src) { mgen } else { 0 };
        migrate_folio_move(k, ctx, src, dst, was_mapped, src_mgen);
        stats.nr_succeeded += 1 << order;
        stats.nr_thp_succeeded += (order >= PMD_ORDER) as u64;
    }
}

/// migrate_folio_unmap: allocate the destination, deal with writeback, clear the folio's PTEs
/// (into `tlb` for a batched flush in async mode, flushed at once otherwise). Returns the
/// destination and whether the folio was mapped.
fn migrate_folio_unmap(
    k: &mut Kernel,
    ctx: &mut Ctx,
    src: u32,
    target: &mut dyn MigrationTarget,
    mode: MigrateMode,
    tlb: Option<&mut TlbUnmapBatch>,
) -> Result<(u32, bool), UnmapError> {
    let order = k.folios.order[src as usize] as u32;
    // A folio being read in (page cache, swap readahead) is locked: folio_trylock fails (the
    // model does not wait for the read even when sync), -EAGAIN.
    if crate::mm::filemap::folio_read_pending(k, src, ctx.now_ns) {
        return Err(UnmapError::Again);
    }
    let dst = target.alloc(k, ctx, order).ok_or(UnmapError::NoMemory)?;
    if k.folios.test(src, flags::WRITEBACK) {
        let done_ns = k.folios.writeback_done_ns(src);
        if done_ns > ctx.now_ns {
            // Only full sync migration waits for writeback (folio_wait_writeback).
            if mode != MigrateMode::Sync {
                target.free(k, ctx, dst, order);
                return Err(UnmapError::Busy);
            }
            ctx.wait_until(done_ns, WaitKind::Io);
        }
        k.folios.clear(src, flags::WRITEBACK);
    }
    // A pinned exclusive anonymous page keeps its PTE (folio_try_share_anon_rmap_pte fails),
    // and an unmapped pinned folio's refcount cannot be frozen: either way, -EAGAIN.
    if k.folios.is_pinned(src) {
        target.free(k, ctx, dst, order);
        return Err(UnmapError::Again);
    }
    let was_mapped = k.folios.mapcount(src as usize) > 0;
    if was_mapped {
        owner::unmap(k, ctx, src, tlb);
    }
    Ok((dst, was_mapped))
}

/// migrate_folio_move: copy the folio to `dst`, make whoever pointed at `src` point at `dst`,
/// put `dst` on the LRU and free `src` (tagged with the MIGRC generation `mgen` if not 0).
fn migrate_folio_move(
    k: &mut Kernel,
    ctx: &mut Ctx,
    src: u32,
    dst: u32,
    was_mapped: bool,
    mgen: u16,
) {
    assert!(
        !k.folios.is_pinned(src),
        "folio {src} is pinned: it must never be migrated"
    );
    let f = &mut k.folios;
    let i = src as usize;
    let order = f.order[i] as u32;
    let nr = 1u64 << order;
    // folio_copy: read and write every byte.
    k.membw.transfer(
        ctx,
        Stream::CopyPage,
        (2 * nr * PAGE_SIZE) as f64,
        k.cost.copy_page_ns * nr,
    );
    ctx.spend(CpuCost::MigrateFolio, k.cost.migrate_folio_ns);
    // The new folio: same owner, memcg (mem_cgroup_migrate moves the charge), state.
    let owner = f.owner(i);
    let (memcg, mapcount) = (f.memcg(i), f.mapcount(i));
    let kept = flags::DIRTY
        | flags::YOUNG
        | flags::REFERENCED
        | flags::ACTIVE
        | flags::SWAPCACHE
        | flags::PMD_MAPPED
        | flags::FILE
        | flags::READAHEAD
        | flags::RECLAIM
        | flags::WORKINGSET;
    let state = f.flags[i] & kept;
    f.init(dst, order, memcg, owner);
    f.flags[dst as usize] |= state;
    f.set_mapcount(dst as usize, mapcount);
    owner::move_mapping(k, ctx, src, dst);
    if was_mapped {
        owner::remap(k, ctx, src, dst);
    }
    // folio_add_lru(dst): on the list it came from.
    let f = &mut k.folios;
    let memcg = f.memcg(dst as usize) as usize;
    let lruvec = k.memcgs[memcg].lruvec_mut(k.nodes.nid(dst));
    lruvec.lruvec_add_folio(f, dst);
    lruvec.lru_lock.hold(ctx, k.cost.lru_move_ns);
    // migrate_folio_done: the old folio's last reference goes; its charge went with the data.
    let f = &mut k.folios;
    f.set_mapcount(i, 0);
    f.clear(
        src,
        flags::ISOLATED | flags::SWAPCACHE | flags::PMD_MAPPED | flags::FILE | flags::DIRTY,
    );
    f.release(src);
    let nid = k.nodes.nid(src);
    k.node_zone_mut(nid).free_mgen(ctx, src, order, mgen);
}

/// try_split_folio: split a large folio whose destination could not be allocated; its pages
/// (all isolated) go to `split_folios`; not a pinned folio, nor one under writeback.
fn try_split_folio(k: &mut Kernel, ctx: &mut Ctx, pfn: u32, split_folios: &mut Vec<u32>) -> bool {
    if !can_split_folio(&k.folios, pfn, ctx.now_ns) {
        return false;
    }
    let mut tails = VecDeque::new();
    split_folio(k, ctx, pfn, Some(&mut tails));
    // An unmapped page in the swap cache is still the cache's: it migrates like the others.
    if k.folios.mapcount(pfn as usize) == 0 && !k.folios.test(pfn, flags::SWAPCACHE) {
        // The head is no longer mapped: only the isolation held it (migrate_folio_unmap
        // frees a folio whose last reference is the caller's).
        k.folios.clear(pfn, flags::ISOLATED);
        k.folio_free(ctx, pfn);
    } else {
        split_folios.push(pfn);
    }
    for tail in tails {
        k.folios.set(tail, flags::ISOLATED);
        split_folios.push(tail);
    }
    true
}

#[cfg(test)]
mod tests;
