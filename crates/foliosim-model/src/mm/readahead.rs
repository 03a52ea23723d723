//! Readahead (mm/readahead.c, and the mmap read-around of mm/filemap.c): on a page-cache
//! miss the kernel reads a window of pages around or after it in one request, and marks one
//! page of the window PG_readahead; touching that page later starts the next window
//! asynchronously (pipelining), growing it up to `read_ahead_kb`.
//!
//! The windows follow 6.18's on-demand readahead for a mapping without large folios (every
//! folio order 0, so `ra->order` never matters but for the window's alignment).

use super::filemap::{filemap_add_folio, read_pages, File};
use super::folio::flags;
use super::gfp::Gfp;
use super::page_alloc::alloc_pages;
use super::Kernel;
use crate::engine::Ctx;

/// MMAP_LOTSAMISS: an mmap that misses more often than this stops reading around.
pub const MMAP_LOTSAMISS: u32 = 100;

/// struct file_ra_state: the last readahead window.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RaState {
    /// The window: pages [start, start + size); its last `async_size` pages are ahead of the
    /// reader, the first of them marked PG_readahead.
    pub start: u32,
    pub size: u32,
    pub async_size: u32,
    /// Folio order the window was read with (growing by 2 on each async hit).
    pub order: u32,
    /// Maximum window, pages (bdi->ra_pages: read_ahead_kb / 4).
    pub ra_pages: u32,
    /// Cache misses of mmap faults not yet offset by hits.
    pub mmap_miss: u32,
    /// Page of the last byte of the previous read(2); None before any (prev_pos = -1).
    pub prev_page: Option<u32>,
}

impl RaState {
    pub fn new(ra_pages: u32) -> RaState {
        RaState {
            start: 0,
            size: 0,
            async_size: 0,
            order: 0,
            ra_pages,
            mmap_miss: 0,
            prev_page: None,
        }
    }
}

/// readahead_gfp_mask: the mapping's GFP_HIGHUSER_MOVABLE, never retrying and without FS
/// recursion (memalloc_nofs_save): readahead is optional work.
pub fn readahead_gfp() -> Gfp {
    Gfp::GFP_HIGHUSER_MOVABLE
        .without(Gfp::FS)
        .union(Gfp::NORETRY)
        .union(Gfp::NOWARN)
}

/// get_init_ra_size: the first window of a sequential stream, from the request size.
pub fn get_init_ra_size(size: u32, max: u32) -> u32 {
    let newsize = size.max(1).next_power_of_two();
    if newsize <= max / 32 {
        newsize * 4
    } else if newsize <= max / 4 {
        newsize * 2
    } else {
        max
    }
}

/// get_next_ra_size: ramp the window up, 4x while small, then 2x, up to `max`.
pub fn get_next_ra_size(cur: u32, max: u32) -> u32 {
    if cur < max / 16 {
        4 * cur
    } else if cur <= max / 2 {
        2 * cur
    } else {
        max
    }
}

/// page_cache_ra_unbounded: read `nr_to_read` pages from `index`, skipping cached ones;
/// the page `nr_to_read - lookahead` into the window is marked PG_readahead. Pages are
/// allocated with the readahead gfp and charged to `memcg`; the first failure ends the
/// window. Each run of new pages between cached ones is one read request.
fn page_cache_ra_unbounded(
    k: &mut Kernel,
    ctx: &mut Ctx,
    memcg: u16,
    file: u32,
    index: u32,
    nr_to_read: u32,
    lookahead: u32,
) {
    let mark = nr_to_read.wrapping_sub(lookahead);
    let gfp = readahead_gfp();
    let mut batch: Vec<u32> = Vec::new();
    for i in 0..nr_to_read {
        let idx = index + i;
        if k.pagecache.file_mut(file).lookup(idx).is_some() {
            read_pages(k, ctx, &batch);
            batch.clear();
            continue;
        }
        let Some(pfn) = alloc_pages(k, ctx, gfp, 0) else {
            break;
        };
        if !filemap_add_folio(k, ctx, file, idx, pfn, memcg, gfp) {
            break;
        }
        if i == mark {
            k.folios.set(pfn, flags::READAHEAD);
        }
        batch.push(pfn);
    }
    read_pages(k, ctx, &batch);
}

/// do_page_cache_ra: the window clipped to the file (no marker at the end of the file).
pub fn do_page_cache_ra(
    k: &mut Kernel,
    ctx: &mut Ctx,
    memcg: u16,
    file: u32,
    index: u32,
    mut nr_to_read: u32,
    mut lookahead: u32,
) {
    let nr_pages = k.pagecache.file_mut(file).nr_pages;
    if nr_pages == 0 || index >= nr_pages {
        return;
    }
    let end_index = nr_pages - 1;
    if nr_to_read > end_index - index {
        nr_to_read = end_index - index + 1;
        lookahead = 0;
    }
    page_cache_ra_unbounded(k, ctx, memcg, file, index, nr_to_read, lookahead);
}

/// page_cache_ra_order for a mapping without large folios: the order resets to 0 and the
/// window is read by do_page_cache_ra.
fn page_cache_ra_order(k: &mut Kernel, ctx: &mut Ctx, memcg: u16, file: u32) {
    let ra = &mut k.pagecache.file_mut(file).ra;
    ra.order = 0;
    let (start, size, async_size) = (ra.start, ra.size, ra.async_size);
    do_page_cache_ra(k, ctx, memcg, file, start, size, async_size);
}

/// page_cache_next_miss: the first uncached index from `index` on, looking at most
/// `max_scan` pages; past the range when none is missing.
fn page_cache_next_miss(f: &File, index: u32, max_scan: u32) -> u64 {
    for i in 0..max_scan as u64 {
        let idx = index as u64 + i;
        if idx >= f.nr_pages as u64 || f.lookup(idx as u32).is_none() {
            return idx;
        }
    }
    index as u64 + max_scan as u64
}

/// page_cache_prev_miss: the first uncached index going down from `index`, looking at most
/// `max_scan` pages; None (ULONG_MAX) when the walk passes page 0 with no gap.
fn page_cache_prev_miss(f: &File, index: u32, max_scan: u32) -> Option<i64> {
    for i in 0..max_scan as i64 {
        let idx = index as i64 - i;
        if idx < 0 {
            return None;
        }
        if f.lookup(idx as u32).is_none() {
            return Some(idx);
        }
    }
    Some(index as i64 - max_scan as i64)
}

/// force_page_cache_ra: read what was asked, at most the window, in 2 MiB chunks.
fn force_page_cache_ra(
    k: &mut Kernel,
    ctx: &mut Ctx,
    memcg: u16,
    file: u32,
    mut index: u32,
    nr_to_read: u32,
) {
    let max = k.pagecache.file_mut(file).ra.ra_pages;
    let mut left = nr_to_read.min(max.max(1));
    while left > 0 {
        let chunk = left.min(512);
        do_page_cache_ra(k, ctx, memcg, file, index, chunk, 0);
        index += chunk;
        left -= chunk;
    }
}

/// page_cache_sync_ra: a read(2) missed the cache at `index` wanting `req_count` pages. A
/// read at the start of the file, larger than the window, or right after the previous read
/// starts a sequential window; otherwise the cached history before `index` decides between a
/// stream (window of the history's length) and a random read (just what was asked).
pub fn page_cache_sync_ra(
    k: &mut Kernel,
    ctx: &mut Ctx,
    memcg: u16,
    file: u32,
    index: u32,
    req_count: u32,
) {
    let ra = &k.pagecache.file_mut(file).ra;
    if ra.ra_pages == 0 {
        force_page_cache_ra(k, ctx, memcg, file, index, 1);
        return;
    }
    let max = ra.ra_pages;
    let sequential = ra
        .prev_page
        .is_some_and(|p| index as i64 - p as i64 <= 1 && index >= p);
    if index == 0 || req_count > max || sequential {
        let ra = &mut k.pagecache.file_mut(file).ra;
        ra.start = index;
        ra.size = get_init_ra_size(req_count, max);
        ra.async_size = if ra.size > req_count {
            ra.size - req_count
        } else {
            ra.size >> 1
        };
    } else {
        let miss = page_cache_prev_miss(k.pagecache.file_mut(file), index - 1, max);
        let mut contig = match miss {
            Some(m) => (index as i64 - m - 1) as u32,
            None => index,
        };
        if contig <= req_count {
            do_page_cache_ra(k, ctx, memcg, file, index, req_count, 0);
            return;
        }
        if miss.is_none() {
            contig *= 2;
        }
        let ra = &mut k.pagecache.file_mut(file).ra;
        ra.start = index;
        ra.size = (contig + req_count).min(max);
        ra.async_size = 1;
    }
    page_cache_ra_order(k, ctx, memcg, file);
}

/// page_cache_async_ra: the reader reached the PG_readahead page `pfn` at `index`: the next
/// window is read ahead of it, twice (or four times) as large up to the maximum. A marked
/// page that is not where the last window put its marker (interleaved streams) restarts from
/// the cache's contents.
pub fn page_cache_async_ra(
    k: &mut Kernel,
    ctx: &mut Ctx,
    memcg: u16,
    file: u32,
    index: u32,
    pfn: u32,
    req_count: u32,
) {
    let max = k.pagecache.file_mut(file).ra.ra_pages;
    if max == 0 || k.folios.test(pfn, flags::WRITEBACK) {
        // PG_readahead is PG_reclaim on a folio under writeback.
        return;
    }
    k.folios.clear(pfn, flags::READAHEAD);
    let ra = &k.pagecache.file_mut(file).ra;
    let expected = ra.start + ra.size - ra.async_size;
    if index == expected {
        let ra = &mut k.pagecache.file_mut(file).ra;
        ra.start += ra.size;
        ra.size = ra.size.max(get_next_ra_size(ra.size, max));
    } else {
        let start = page_cache_next_miss(k.pagecache.file_mut(file), index + 1, max);
        if start == 0 || start - index as u64 > max as u64 {
            return;
        }
        let ra = &mut k.pagecache.file_mut(file).ra;
        ra.start = start as u32;
        ra.size = (start - index as u64) as u32 + req_count;
        ra.size = get_next_ra_size(ra.size, max);
    }
    let ra = &mut k.pagecache.file_mut(file).ra;
    ra.order += 2;
    // The window's end is aligned down to the order (capped by the window's own alignment).
    let align = 1u32 << ra.order.min(max.trailing_zeros());
    let end = ra.start + ra.size;
    let aligned_end = end & !(align - 1);
    if aligned_end > ra.start {
        ra.size -= end - aligned_end;
    }
    ra.async_size = ra.size;
    page_cache_ra_order(k, ctx, memcg, file);
}

/// do_sync_mmap_readahead: an mmap fault missed the cache at `pgoff`. Unless the mmap has
/// missed far more than it hit (mmap_miss > MMAP_LOTSAMISS), read around it: a whole
/// window centred on the page, its last quarter ahead as the async part.
pub fn do_sync_mmap_readahead(k: &mut Kernel, ctx: &mut Ctx, memcg: u16, file: u32, pgoff: u32) {
    let ra = &mut k.pagecache.file_mut(file).ra;
    if ra.ra_pages == 0 {
        return;
    }
    if ra.mmap_miss < MMAP_LOTSAMISS * 10 {
        ra.mmap_miss += 1;
    }
    if ra.mmap_miss > MMAP_LOTSAMISS {
        return;
    }
    ra.start = pgoff.saturating_sub(ra.ra_pages / 2);
    ra.size = ra.ra_pages;
    ra.async_size = ra.ra_pages / 4;
    page_cache_ra_order(k, ctx, memcg, file);
}

/// do_async_mmap_readahead: an mmap fault found `pfn` cached at `pgoff`: a hit (mmap_miss
/// down by one); on a PG_readahead page, the next window.
pub fn do_async_mmap_readahead(
    k: &mut Kernel,
    ctx: &mut Ctx,
    memcg: u16,
    file: u32,
    pgoff: u32,
    pfn: u32,
) {
    let ra = &mut k.pagecache.file_mut(file).ra;
    if ra.ra_pages == 0 {
        return;
    }
    ra.mmap_miss = ra.mmap_miss.saturating_sub(1);
    let ra_pages = ra.ra_pages;
    if k.folios.test(pfn, flags::READAHEAD) {
        page_cache_async_ra(k, ctx, memcg, file, pgoff, pfn, ra_pages);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn windows_ramp_up_as_the_kernel_sizes_them() {
        // 128 KiB window: a 1-page read starts with 4 pages, a 4-page read with 8.
        assert_eq!(get_init_ra_size(1, 32), 4);
        assert_eq!(get_init_ra_size(4, 32), 8);
        assert_eq!(get_init_ra_size(16, 32), 32);
        assert_eq!(get_next_ra_size(4, 32), 8);
        assert_eq!(get_next_ra_size(1, 32), 4);
        assert_eq!(get_next_ra_size(16, 32), 32);
        assert_eq!(get_next_ra_size(32, 32), 32);
    }
}
