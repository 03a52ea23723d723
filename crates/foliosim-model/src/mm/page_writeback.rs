//! Dirty page-cache pages and their writeback (mm/page-writeback.c, fs/fs-writeback.c).
//!
//! A store through a shared file mapping dirties the page (folio_mark_dirty: NR_FILE_DIRTY,
//! the file's dirty tag, inode->dirtied_when). Only the flusher writes dirty file pages (6.18's
//! reclaim no longer calls ->writepage for filesystem folios: pageout() returns PAGE_ACTIVATE;
//! shrink_folio_list marks them PG_reclaim and wakes the flusher). The flusher is the bdi's
//! writeback work on an unbound kworker (`KthreadKind::Flusher`), woken:
//! - by reclaim that found only unqueued dirty pages at the LRU tail (wakeup_flusher_threads,
//!   WB_REASON_VMSCAN: write every page dirty at that time),
//! - by a dirtier above the background threshold (dirty_background_ratio, 10% of dirtyable
//!   memory: write until below it),
//! - every dirty_writeback_interval (5 s) while pages are dirty (kupdate: write the files
//!   dirtied more than dirty_expire_interval, 30 s, ago).
//!
//! It writes up to MAX_WRITEBACK_PAGES per file per turn, in bios of adjacent pages; a written
//! folio is under writeback until the disk completes, then rotated to the inactive tail if
//! reclaim had marked it (mm/lruvec.rs). Not modelled: balance_dirty_pages throttling of the
//! dirtier above dirty_ratio, per-memcg (cgroup writeback) domains, laptop mode.

use super::folio::flags;
use super::kthread::{KthreadKind, KthreadNext};
use super::vmstat::VmEvent;
use super::Kernel;
use crate::cpu_cost::CpuCost;
use crate::engine::Ctx;
use crate::hw::blockdev::Completion;
use crate::mm::filemap::KIB_PER_PAGE;
use crate::mm::page_alloc::Wmark;
use crate::scenario::PAGE_SIZE;

/// vm.dirty_background_ratio (10): background writeback above this % of dirtyable memory.
pub const DIRTY_BACKGROUND_RATIO: u64 = 10;
/// vm.dirty_expire_centisecs (3000): kupdate writes files dirty for longer.
pub const DIRTY_EXPIRE_NS: u64 = 30_000_000_000;
/// vm.dirty_writeback_centisecs (500): the periodic flusher wake-up while pages are dirty.
pub const DIRTY_WRITEBACK_INTERVAL_NS: u64 = 5_000_000_000;
/// MAX_WRITEBACK_PAGES: pages written from one file per turn (writeback_chunk_size).
pub const MAX_WRITEBACK_PAGES: u32 = 1024;
/// BIO_MAX_VECS: order-0 pages per write bio.
const BIO_MAX_PAGES: u32 = 256;

/// The bdi writeback's queued work.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct WbState {
    /// WB_start_all requested (wakeup_flusher_threads): the next turn takes every dirty page
    /// as its work.
    pub start_all: bool,
    /// Pages left of the current start_all work.
    pub work_left: u64,
    /// Background writeback requested (wb_start_background_writeback).
    pub background: bool,
    /// The next file to write from, round robin (the b_io queue).
    pub cursor: u32,
}

/// folio_mark_dirty of a page-cache folio: the first dirtying of a clean page accounts it;
/// a file going dirty records when.
pub fn folio_mark_dirty(k: &mut Kernel, ctx: &mut Ctx, pfn: u32) {
    let fl = &mut k.folios;
    if fl.test(pfn, flags::DIRTY) {
        return;
    }
    fl.set(pfn, flags::DIRTY);
    let (file, index) = (fl.owner_mm(pfn as usize), fl.owner_index(pfn as usize));
    let f = k.pagecache.file_mut(file);
    if f.dirty.is_empty() {
        f.dirtied_when_ns = ctx.now_ns;
    }
    f.dirty.insert(index);
    k.pagecache.nr_dirty += 1;
    k.vmstat.count(VmEvent::NrDirtied, 1);
    if k.pagecache.nr_dirty == 1 {
        // The first dirty page arms the periodic writeback (wb_wakeup_delayed).
        k.kthreads.wake(KthreadKind::Flusher, ctx.now_ns);
    }
}

/// folio_clear_dirty_for_io: the page is about to be written; page_mkclean write-protects
/// its PTEs, so the next store dirties it again through a fault. False if it was clean.
fn folio_clear_dirty_for_io(k: &mut Kernel, pfn: u32) -> bool {
    let fl = &mut k.folios;
    if !fl.test(pfn, flags::DIRTY) {
        return false;
    }
    fl.clear(pfn, flags::DIRTY);
    let (file, index) = (fl.owner_mm(pfn as usize), fl.owner_index(pfn as usize));
    k.pagecache.file_mut(file).dirty.remove(&index);
    k.pagecache.nr_dirty -= 1;
    true
}

/// Is the page-cache folio at `pfn` under writeback at `now_ns`? One whose write completed
/// ends its writeback on the way (folio_end_writeback, observed late: a PG_reclaim folio
/// rotates to the inactive tail).
pub fn folio_writeback_pending(k: &mut Kernel, pfn: u32, now_ns: u64) -> bool {
    let fl = &mut k.folios;
    if !fl.test(pfn, flags::WRITEBACK) {
        return false;
    }
    if fl.writeback_done_ns(pfn) > now_ns {
        return true;
    }
    fl.clear(pfn, flags::WRITEBACK);
    let memcg = fl.memcg(pfn as usize) as usize;
    let rotated = k.memcgs[memcg]
        .lruvec_mut(k.nodes.nid(pfn))
        .rotate_reclaimable(&mut k.folios, pfn);
    k.vmstat.count(VmEvent::Pgrotated, rotated);
    false
}

/// global_dirtyable_memory and the background threshold (domain_dirty_limits): free pages
/// plus the file LRU, less the reserves (the high watermark), times dirty_background_ratio.
pub fn background_thresh(k: &Kernel) -> u64 {
    let file: u64 = k
        .memcgs
        .iter()
        .flat_map(|cg| cg.lruvecs())
        .map(|lv| lv.lru_pages(true, false) + lv.lru_pages(true, true))
        .sum();
    // The reclaimable nodes' free memory above their high watermarks.
    let free: u64 = k
        .online_pgdats()
        .filter(|p| p.has_kthreads)
        .map(|p| {
            p.zone
                .nr_free_pages()
                .saturating_sub(p.zone.wmark_pages(Wmark::High))
        })
        .sum();
    let dirtyable = free + file;
    dirtyable * DIRTY_BACKGROUND_RATIO / 100
}

/// balance_dirty_pages_ratelimited after dirtying: above the background threshold the
/// flusher starts background writeback. (The dirtier is not throttled in the model.)
pub fn balance_dirty_pages_ratelimited(k: &mut Kernel, ctx: &mut Ctx) {
    if !k.pagecache.wb.background && k.pagecache.nr_dirty > background_thresh(k) {
        k.pagecache.wb.background = true;
        k.kthreads.wake(KthreadKind::Flusher, ctx.now_ns);
    }
}

/// wakeup_flusher_threads(WB_REASON_VMSCAN): reclaim met dirty pages not queued for I/O.
pub fn wakeup_flusher_threads(k: &mut Kernel, now_ns: u64) {
    if k.pagecache.nr_dirty == 0 {
        return;
    }
    k.pagecache.wb.start_all = true;
    k.kthreads.wake(KthreadKind::Flusher, now_ns);
}

/// One turn of wb_workfn: a chunk of the pending work (start_all, then background, then
/// expired files), or back to sleep (for the periodic interval while pages are dirty).
pub fn wb_workfn_step(k: &mut Kernel, ctx: &mut Ctx) -> KthreadNext {
    let wb = &mut k.pagecache.wb;
    if std::mem::take(&mut wb.start_all) && wb.work_left == 0 {
        wb.work_left = k.pagecache.nr_dirty;
    }
    if k.pagecache.wb.work_left > 0 {
        let want = k.pagecache.wb.work_left.min(MAX_WRITEBACK_PAGES as u64) as u32;
        let written = write_next_file(k, ctx, want, None);
        let wb = &mut k.pagecache.wb;
        wb.work_left = if written == 0 {
            0
        } else {
            wb.work_left.saturating_sub(written as u64)
        };
        return KthreadNext::Run;
    }
    if k.pagecache.wb.background {
        if k.pagecache.nr_dirty > background_thresh(k)
            && write_next_file(k, ctx, MAX_WRITEBACK_PAGES, None) > 0
        {
            return KthreadNext::Run;
        }
        k.pagecache.wb.background = false;
    }
    let expired_before = ctx.now_ns.saturating_sub(DIRTY_EXPIRE_NS);
    if ctx.now_ns >= DIRTY_EXPIRE_NS
        && write_next_file(k, ctx, MAX_WRITEBACK_PAGES, Some(expired_before)) > 0
    {
        return KthreadNext::Run;
    }
    if k.pagecache.nr_dirty > 0 {
        KthreadNext::SleepNs(DIRTY_WRITEBACK_INTERVAL_NS)
    } else {
        KthreadNext::Wait
    }
}

/// writeback_sb_inodes for one file: the next file (round robin from the cursor) with dirty
/// pages, dirtied before `older_than_ns` if given; up to `max_pages` of its dirty pages are
/// written, in bios of adjacent pages. Pages already under writeback are skipped
/// (WB_SYNC_NONE). Returns the pages written.
fn write_next_file(
    k: &mut Kernel,
    ctx: &mut Ctx,
    max_pages: u32,
    older_than_ns: Option<u64>,
) -> u32 {
    let nr_files = k.pagecache.files.len() as u32;
    for step in 0..nr_files {
        let id = (k.pagecache.wb.cursor + step) % nr_files;
        let eligible = k.pagecache.files[id as usize].as_ref().is_some_and(|f| {
            !f.dirty.is_empty() && older_than_ns.is_none_or(|t| f.dirtied_when_ns <= t)
        });
        if !eligible {
            continue;
        }
        let written = write_file_pages(k, ctx, id, max_pages);
        k.pagecache.wb.cursor = (id + 1) % nr_files;
        if written > 0 {
            return written;
        }
    }
    0
}

/// write_cache_pages for file `id`: up to `max_pages` dirty pages not under writeback.
fn write_file_pages(k: &mut Kernel, ctx: &mut Ctx, id: u32, max_pages: u32) -> u32 {
    let now_ns = ctx.now_ns;
    let mut run: Vec<u32> = Vec::new();
    let mut written = 0u32;
    let mut next = 0u32;
    while written < max_pages {
        let Some(index) = k.pagecache.file_mut(id).dirty.range(next..).next().copied() else {
            break;
        };
        next = index + 1;
        let pfn = k
            .pagecache
            .file_mut(id)
            .lookup(index)
            .expect("a dirty index is cached");
        if folio_writeback_pending(k, pfn, now_ns) {
            continue;
        }
        let adjacent = run
            .last()
            .is_some_and(|&p| k.folios.owner_index(p as usize) + 1 == index);
        if !adjacent || run.len() as u32 == BIO_MAX_PAGES {
            submit_write(k, ctx, id, &run);
            run.clear();
        }
        folio_clear_dirty_for_io(k, pfn);
        run.push(pfn);
        written += 1;
    }
    submit_write(k, ctx, id, &run);
    if k.pagecache.file_mut(id).dirty.is_empty() {
        k.pagecache.file_mut(id).dirtied_when_ns = 0;
    }
    written
}

/// One write bio of adjacent pages of file `id`: each folio goes under writeback until the
/// disk completes it (a RAM disk completes it at once). Counts pgpgout and nr_written.
fn submit_write(k: &mut Kernel, ctx: &mut Ctx, id: u32, pfns: &[u32]) {
    let Some(&first) = pfns.first() else {
        return;
    };
    let nr = pfns.len() as u64;
    ctx.spend(
        CpuCost::Writeback,
        k.cost.bio_submit_ns + k.cost.writeback_page_ns * nr,
    );
    let block = k.pagecache.file_mut(id).disk_start + k.folios.owner_index(first as usize) as u64;
    let disk = k.pagecache.disk.as_mut().expect("files live on the disk");
    let completion = disk.bdev.write(ctx, &mut k.membw, block, nr * PAGE_SIZE);
    k.vmstat.count(VmEvent::Pgpgout, nr * KIB_PER_PAGE);
    k.vmstat.count(VmEvent::NrWritten, nr);
    for &pfn in pfns {
        let memcg = k.folios.memcg(pfn as usize) as usize;
        match completion {
            Completion::At(done_ns) => {
                k.folios.set(pfn, flags::WRITEBACK);
                k.folios.set_writeback_done_ns(pfn, done_ns);
                let nid = k.nodes.nid(pfn);
                k.memcgs[memcg]
                    .lruvec_mut(nid)
                    .writeback_started(pfn, done_ns);
            }
            Completion::Sync => {
                let rotated = k.memcgs[memcg]
                    .lruvec_mut(k.nodes.nid(pfn))
                    .rotate_reclaimable(&mut k.folios, pfn);
                k.vmstat.count(VmEvent::Pgrotated, rotated);
            }
        }
    }
}
