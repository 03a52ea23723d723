//! Dropping clean page cache (mm/truncate.c invalidate_mapping_pages, as
//! `echo 1 > /proc/sys/vm/drop_caches` runs it on every inode).

use super::filemap::{filemap_remove_folio, folio_read_pending};
use super::folio::flags;
use super::page_writeback::folio_writeback_pending;
use super::vmstat::VmEvent;
use super::Kernel;
use crate::engine::Ctx;

/// drop_pagecache_sb over every file: each cached page that is clean, not under writeback,
/// unmapped and unlocked is removed and freed (mapping_evict_folio); the others are left,
/// an unmapped dirty or writeback one deactivated for reclaim (deactivate_file_folio).
/// Counts drop_pagecache. Returns the pages dropped.
pub fn drop_pagecache(k: &mut Kernel, ctx: &mut Ctx) -> u64 {
    k.vmstat.count(VmEvent::DropPagecache, 1);
    let mut dropped = 0;
    for file in 0..k.pagecache.files.len() {
        let Some(nr_pages) = k.pagecache.files[file].as_ref().map(|f| f.nr_pages) else {
            continue;
        };
        for index in 0..nr_pages {
            let Some(pfn) = k.pagecache.file_mut(file as u32).lookup(index) else {
                continue;
            };
            if folio_read_pending(k, pfn, ctx.now_ns) {
                continue;
            }
            let busy = folio_writeback_pending(k, pfn, ctx.now_ns)
                || k.folios.test(pfn, flags::DIRTY)
                || k.folios.mapcount(pfn as usize) > 0;
            if busy {
                deactivate_file_folio(k, ctx, pfn);
                continue;
            }
            filemap_remove_folio(k, ctx, pfn, None);
            dropped += 1;
        }
    }
    dropped
}

/// lru_deactivate_file: an unmapped page-cache folio that could not be dropped goes to the
/// inactive list: to the head with PG_reclaim if dirty or under writeback (for the flusher to
/// write first), else to the tail (PGROTATED). Mapped ones are left alone.
fn deactivate_file_folio(k: &mut Kernel, ctx: &mut Ctx, pfn: u32) {
    let f = &mut k.folios;
    if f.mapcount(pfn as usize) > 0 || !f.test(pfn, flags::LRU) {
        return;
    }
    let active = f.test(pfn, flags::ACTIVE);
    let nr = f.nr_pages(pfn) as u64;
    let memcg = f.memcg(pfn as usize) as usize;
    let nid = k.nodes.nid(pfn);
    let cg = &mut k.memcgs[memcg];
    cg.lruvec_mut(nid).del_folio(&mut k.folios, pfn);
    k.folios.clear(pfn, flags::REFERENCED);
    if k.folios.test(pfn, flags::DIRTY | flags::WRITEBACK) {
        k.folios.set(pfn, flags::RECLAIM);
        cg.lruvec_mut(nid).lruvec_add_folio(&mut k.folios, pfn);
    } else {
        cg.lruvec_mut(nid).lruvec_add_folio_tail(&mut k.folios, pfn);
        k.vmstat.count(VmEvent::Pgrotated, nr);
    }
    if active {
        cg.count(VmEvent::Pgdeactivate, nr);
        k.vmstat.count(VmEvent::Pgdeactivate, nr);
    }
    cg.lruvec_mut(nid).lru_lock.hold(ctx, k.cost.lru_move_ns);
}
