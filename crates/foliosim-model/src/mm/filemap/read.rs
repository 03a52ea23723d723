//! read(2) of a file (mm/filemap.c filemap_read): the cached pages are copied to the user's
//! buffer; a miss starts synchronous readahead, a PG_readahead page the next window, and the
//! reader sleeps on a page whose read is in flight. Nothing is mapped.

use super::super::readahead::{page_cache_async_ra, page_cache_sync_ra};
use super::super::{Kernel, MmError};
use super::fault::{filemap_create_folio, pin, unpin};
use super::{folio_mark_accessed, folio_read_pending, folio_wait_locked};
use crate::cpu_cost::CpuCost;
use crate::engine::Ctx;
use crate::mm::folio::flags;

/// PAGEVEC_SIZE (a folio_batch): folios looked up per filemap_get_pages.
const FOLIO_BATCH: u32 = 31;

/// One filemap_get_pages batch of a read(2) of pages [index, end) of `file` by a task of
/// `mm`, copied out. Returns the pages done (at least one; the rest of the request when it
/// reaches the end of the file).
pub fn filemap_read_step(
    k: &mut Kernel,
    ctx: &mut Ctx,
    mm: u32,
    file: u32,
    index: u32,
    end: u32,
) -> Result<u32, MmError> {
    let nr_pages = k.pagecache.file(file)?.nr_pages;
    if index >= nr_pages {
        return Ok(end.saturating_sub(index).max(1));
    }
    let last = end.min(nr_pages);
    let memcg = k.mms[mm as usize].memcg;
    let mut batch = get_read_batch(k, ctx.now_ns, file, index, last);
    if batch.is_empty() {
        page_cache_sync_ra(k, ctx, memcg, file, index, last - index);
        batch = get_read_batch(k, ctx.now_ns, file, index, last);
    }
    if batch.is_empty() {
        batch.push(filemap_create_folio(k, ctx, memcg, file, index)?);
    }
    let tail = *batch.last().expect("a page");
    if k.folios.test(tail, flags::READAHEAD) {
        // filemap_readahead; the batch's references keep its pages while it allocates.
        let held: Vec<Option<u64>> = batch.iter().map(|&p| pin(&mut k.folios, p)).collect();
        let tail_index = index + batch.len() as u32 - 1;
        page_cache_async_ra(k, ctx, memcg, file, tail_index, tail, last - tail_index);
        for (&p, h) in batch.iter().zip(held) {
            unpin(&mut k.folios, p, h);
        }
    }
    // filemap_update_page: wait for the page still being read.
    folio_wait_locked(k, ctx, tail);
    // A read continuing in the page where the previous one ended does not mark it again.
    let continues = k.pagecache.file_mut(file).ra.prev_page == Some(index);
    for (i, &pfn) in batch.iter().enumerate() {
        if i > 0 || !continues {
            folio_mark_accessed(k, ctx, pfn);
        }
    }
    let n = batch.len() as u32;
    ctx.spend(CpuCost::FilemapRead, k.cost.file_read_page_ns * n as u64);
    k.pagecache.file_mut(file).ra.prev_page = Some(index + n - 1);
    Ok(if index + n >= nr_pages {
        end - index
    } else {
        n
    })
}

/// filemap_get_read_batch: the cached pages from `index` on, up to a batch; it ends after a
/// page still being read or marked PG_readahead.
fn get_read_batch(k: &mut Kernel, now_ns: u64, file: u32, index: u32, end: u32) -> Vec<u32> {
    let mut batch = Vec::new();
    for idx in index..end.min(index + FOLIO_BATCH) {
        let Some(pfn) = k.pagecache.file_mut(file).lookup(idx) else {
            break;
        };
        batch.push(pfn);
        if folio_read_pending(k, pfn, now_ns) || k.folios.test(pfn, flags::READAHEAD) {
            break;
        }
    }
    batch
}
