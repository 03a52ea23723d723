//! Faults on file VMAs: mm/memory.c's do_read_fault (with fault-around), do_shared_fault,
//! do_cow_fault and the write-protect faults of do_wp_page, over mm/filemap.c's
//! filemap_fault and filemap_map_pages.
//!
//! A shared mapping maps clean pages write-protected (dirty accounting): the first store to a
//! clean page faults and dirties it (page_mkwrite); writeback write-protects it again, which
//! the model keeps as the folio's DIRTY flag. A private mapping's store copies the page into
//! an anonymous folio (COW), which then lives in the file VMA like any anonymous page.

use super::super::folio::{flags, FolioTable};
use super::super::gfp::Gfp;
use super::super::memory::{alloc_order0_charged, handle_mm_fault, map_new_folio, VmFault};
use super::super::mmap::{Pte, VmaFile};
use super::super::oom_kill::oom_error;
use super::super::page_alloc::alloc_pages;
use super::super::page_writeback::{balance_dirty_pages_ratelimited, folio_mark_dirty};
use super::super::readahead::{do_async_mmap_readahead, do_sync_mmap_readahead};
use super::super::tlb::TlbUnmapBatch;
use super::super::vmstat::VmEvent;
use super::super::{Kernel, MmError};
use super::{filemap_add_folio, folio_read_pending, folio_wait_locked, map_file_pte, read_pages};
use crate::cpu_cost::CpuCost;
use crate::engine::Ctx;
use crate::hw::membw::Stream;
use crate::scenario::{PAGE_SIZE, PMD_ORDER};

/// fault_around_bytes (64 KiB): a read fault maps the cached pages of the aligned 16-page
/// window around it.
pub const FAULT_AROUND_PAGES: u32 = 16;

/// The task touches the page of `vmf` in a file VMA (a store if `vmf.write`), whose PTE is
/// none or maps a page-cache page. Returns how many pages from `vmf.index` on (up to `end`)
/// this step covered: the fault, then the following pages already mapped as needed; and the
/// time of the task's own accesses (user time).
pub fn touch_file(
    k: &mut Kernel,
    ctx: &mut Ctx,
    vmf: &VmFault,
    end: u32,
) -> Result<(u32, u64), MmError> {
    let VmFault {
        mm,
        vma,
        index,
        write,
        ..
    } = *vmf;
    let vf = k.mms[mm as usize]
        .vma_file(vma)
        .expect("touch_file on a file VMA");
    let pte = k.mms[mm as usize].vma(vma).ptes[index as usize];
    if pte.is_none() {
        handle_mm_fault(k, ctx, mm, vma, index, write)?;
    } else {
        let pfn = pte.pfn();
        if write && !vf.shared {
            k.vmstat.count(VmEvent::Pgfault, 1);
            wp_page_copy(k, ctx, vmf, pfn)?;
        } else {
            if write && !k.folios.test(pfn, flags::DIRTY) {
                // do_wp_page -> wp_page_shared: page_mkwrite dirties the page.
                k.vmstat.count(VmEvent::Pgfault, 1);
                ctx.spend(CpuCost::FilemapFault, k.cost.filemap_fault_ns);
                folio_mark_dirty(k, ctx, pfn);
                balance_dirty_pages_ratelimited(k, ctx);
            }
            k.folios.set(pfn, flags::YOUNG);
        }
    }
    // Walk on through pages mapped as the access needs (bounded: a PMD's worth per step).
    let limit = end.min(index + (1 << PMD_ORDER));
    let mut n = 1;
    while index + n < limit {
        let pte = k.mms[mm as usize].vma(vma).ptes[(index + n) as usize];
        if !pte.is_present() {
            break;
        }
        let pfn = pte.pfn();
        let f = &k.folios;
        if !f.test(pfn, flags::FILE) || (write && !(vf.shared && f.test(pfn, flags::DIRTY))) {
            break;
        }
        k.folios.set(pfn, flags::YOUNG);
        n += 1;
    }
    let bytes = n as u64 * PAGE_SIZE;
    let user_ns = k.membw.transfer(
        ctx,
        Stream::UserStore,
        bytes as f64,
        k.cost.user_write_page_ns * n as u64,
    );
    Ok((n, user_ns))
}

/// do_fault: a file VMA's PTE is none (handle_mm_fault has counted the fault and holds the
/// mmap_lock for read): read it in and map it, copy it (a private store), or map it writable.
pub(crate) fn do_fault(
    k: &mut Kernel,
    ctx: &mut Ctx,
    vmf: &VmFault,
    vf: VmaFile,
) -> Result<(), MmError> {
    if vmf.write && !vf.shared {
        do_cow_fault(k, ctx, vmf, vf)
    } else if vmf.write {
        do_shared_fault(k, ctx, vmf, vf)
    } else {
        do_read_fault(k, ctx, vmf, vf)
    }
}

/// do_read_fault: map the cached neighbours first (do_fault_around); if that mapped the
/// faulting page too it was a minor fault without filemap_fault. Otherwise filemap_fault
/// finds or reads the page, and finish_fault maps it.
fn do_read_fault(k: &mut Kernel, ctx: &mut Ctx, vmf: &VmFault, vf: VmaFile) -> Result<(), MmError> {
    let VmFault { mm, vma, index, .. } = *vmf;
    ctx.spend(CpuCost::FilemapFault, k.cost.filemap_fault_ns);
    if fault_around(k, ctx, vmf, vf) {
        return Ok(());
    }
    let pfn = filemap_fault(k, ctx, mm, vf.file, vf.pgoff + index)?;
    map_file_pte(k, mm, vma, index, pfn, true);
    Ok(())
}

/// do_shared_fault: the page (read if need be), dirtied by page_mkwrite, mapped writable;
/// then the dirtier's share of writeback (balance_dirty_pages_ratelimited).
fn do_shared_fault(
    k: &mut Kernel,
    ctx: &mut Ctx,
    vmf: &VmFault,
    vf: VmaFile,
) -> Result<(), MmError> {
    let VmFault { mm, vma, index, .. } = *vmf;
    ctx.spend(CpuCost::FilemapFault, k.cost.filemap_fault_ns);
    let pfn = filemap_fault(k, ctx, mm, vf.file, vf.pgoff + index)?;
    folio_mark_dirty(k, ctx, pfn);
    map_file_pte(k, mm, vma, index, pfn, true);
    balance_dirty_pages_ratelimited(k, ctx);
    Ok(())
}

/// do_cow_fault: a store to an unmapped page of a private file mapping: a new anonymous page
/// (allocated and charged first), filled from the page cache, mapped; the page-cache page
/// stays cached, unmapped.
fn do_cow_fault(k: &mut Kernel, ctx: &mut Ctx, vmf: &VmFault, vf: VmaFile) -> Result<(), MmError> {
    let VmFault { mm, index, .. } = *vmf;
    let memcg = k.mms[mm as usize].memcg;
    let anon = alloc_order0_charged(k, ctx, memcg, index)?;
    ctx.spend(CpuCost::FilemapFault, k.cost.filemap_fault_ns);
    if let Err(e) = filemap_fault(k, ctx, mm, vf.file, vf.pgoff + index) {
        crate::mm::memcontrol::uncharge(k, ctx, memcg, 1);
        k.free_pages(ctx, anon, 0);
        return Err(e);
    }
    // The copy stands in for the clear of an anonymous fault's cost.
    map_new_folio(k, ctx, vmf, index, anon, 0, memcg);
    Ok(())
}

/// do_wp_page -> wp_page_copy: a store to a page-cache page mapped by a private mapping
/// replaces the PTE with a new anonymous copy; the old PTE is flushed from the TLBs.
fn wp_page_copy(k: &mut Kernel, ctx: &mut Ctx, vmf: &VmFault, pfn: u32) -> Result<(), MmError> {
    let VmFault { mm, vma, index, .. } = *vmf;
    let memcg = k.mms[mm as usize].memcg;
    let anon = alloc_order0_charged(k, ctx, memcg, index)?;
    // The page may have been reclaimed meanwhile (allocation reclaims): copy whatever the
    // PTE holds now; a none PTE is then a fresh COW fault.
    let pte = k.mms[mm as usize].vma(vma).ptes[index as usize];
    if pte.is_present() && pte.pfn() == pfn {
        super::rmap::zap_file_pte(k, ctx, mm, vma, index, pfn);
        let mut tlb = TlbUnmapBatch::default();
        tlb.add(k, ctx, mm, 0, 1, false);
        tlb.flush(k, ctx);
    } else {
        let vf = k.mms[mm as usize].vma_file(vma).expect("file VMA");
        if let Err(e) = filemap_fault(k, ctx, mm, vf.file, vf.pgoff + index) {
            crate::mm::memcontrol::uncharge(k, ctx, memcg, 1);
            k.free_pages(ctx, anon, 0);
            return Err(e);
        }
    }
    map_new_folio(k, ctx, vmf, index, anon, 0, memcg);
    Ok(())
}

/// do_fault_around -> filemap_map_pages: map every cached, read, unmarked page of the
/// 16-page window around the fault's page whose PTE is none (a PG_readahead page is left for
/// its fault, which starts the next window). Pages mapped this way are hits for mmap_miss. On
/// x86 the prefaulted PTEs are young; arm64 maps them old. Returns whether the fault's page
/// itself was mapped.
fn fault_around(k: &mut Kernel, ctx: &mut Ctx, vmf: &VmFault, vf: VmaFile) -> bool {
    let VmFault { mm, vma, index, .. } = *vmf;
    let vma_pages = k.mms[mm as usize].vma(vma).nr_pages;
    let from = index & !(FAULT_AROUND_PAGES - 1);
    let to = (from + FAULT_AROUND_PAGES).min(vma_pages);
    let old_prefaulted = k.pagecache.old_prefaulted_pte;
    let file_pages = k.pagecache.file_mut(vf.file).nr_pages;
    let mut mapped = 0u32;
    let mut self_mapped = false;
    for i in from..to {
        let pgoff = vf.pgoff + i;
        if pgoff >= file_pages {
            break;
        }
        if !k.mms[mm as usize].vma(vma).ptes[i as usize].is_none() {
            continue;
        }
        let Some(pfn) = k.pagecache.file_mut(vf.file).lookup(pgoff) else {
            continue;
        };
        if folio_read_pending(k, pfn, ctx.now_ns) || k.folios.test(pfn, flags::READAHEAD) {
            continue;
        }
        let young = i == index || !old_prefaulted;
        map_file_pte(k, mm, vma, i, pfn, young);
        mapped += 1;
        self_mapped |= i == index;
    }
    let ra = &mut k.pagecache.file_mut(vf.file).ra;
    ra.mmap_miss = ra.mmap_miss.saturating_sub(mapped);
    ctx.spend(
        CpuCost::FilemapMapPages,
        k.cost.fault_around_page_ns * mapped as u64,
    );
    self_mapped
}

/// filemap_fault: the page-cache page at `pgoff`, read and unlocked. A hit may start the
/// next readahead window; a miss is a major fault: read around it (or just it), wait for
/// the read. Charged to the faulting task's memcg.
pub fn filemap_fault(
    k: &mut Kernel,
    ctx: &mut Ctx,
    mm: u32,
    file: u32,
    pgoff: u32,
) -> Result<u32, MmError> {
    let nr_pages = k.pagecache.file(file)?.nr_pages;
    if pgoff >= nr_pages {
        return Err(MmError::Sigbus { file, index: pgoff });
    }
    let memcg = k.mms[mm as usize].memcg;
    if let Some(pfn) = k.pagecache.file_mut(file).lookup(pgoff) {
        // The fault holds a reference on the folio while readahead allocates (and may
        // reclaim): the model holds it locked instead.
        let held = pin(&mut k.folios, pfn);
        do_async_mmap_readahead(k, ctx, memcg, file, pgoff, pfn);
        unpin(&mut k.folios, pfn, held);
        folio_wait_locked(k, ctx, pfn);
        return Ok(pfn);
    }
    k.vmstat.count(VmEvent::Pgmajfault, 1);
    do_sync_mmap_readahead(k, ctx, memcg, file, pgoff);
    let pfn = match k.pagecache.file_mut(file).lookup(pgoff) {
        Some(pfn) => pfn,
        None => filemap_create_folio(k, ctx, memcg, file, pgoff)?,
    };
    folio_wait_locked(k, ctx, pfn);
    Ok(pfn)
}

/// __filemap_get_folio(FGP_CREAT) + filemap_read_folio: one page allocated with the
/// mapping's gfp (may reclaim and retry), charged, added and read. Failure is OOM.
pub fn filemap_create_folio(
    k: &mut Kernel,
    ctx: &mut Ctx,
    memcg: u16,
    file: u32,
    index: u32,
) -> Result<u32, MmError> {
    let gfp = Gfp::GFP_HIGHUSER_MOVABLE;
    let Some(pfn) = alloc_pages(k, ctx, gfp, 0) else {
        return Err(oom_error(k, ctx, None));
    };
    if !filemap_add_folio(k, ctx, file, index, pfn, memcg, gfp) {
        return Err(oom_error(k, ctx, Some(memcg)));
    }
    read_pages(k, ctx, &[pfn]);
    Ok(pfn)
}

/// Hold a folio against reclaim (its lock) while the caller allocates; returns what to
/// restore.
pub(super) fn pin(f: &mut FolioTable, pfn: u32) -> Option<u64> {
    let was = f.test(pfn, flags::LOCKED).then(|| f.writeback_done_ns(pfn));
    f.set(pfn, flags::LOCKED);
    f.set_writeback_done_ns(pfn, u64::MAX);
    was
}

pub(super) fn unpin(f: &mut FolioTable, pfn: u32, held: Option<u64>) {
    match held {
        // Under no I/O any more, the time would never be read: nothing to keep.
        Some(done_ns) if f.test(pfn, flags::LOCKED | flags::WRITEBACK) => {
            f.set_writeback_done_ns(pfn, done_ns)
        }
        Some(_) => {}
        None => f.clear(pfn, flags::LOCKED),
    }
}

/// Present PTE helper for callers outside: does this PTE map a page-cache page?
pub fn maps_file_page(f: &FolioTable, pte: Pte) -> bool {
    pte.is_present() && f.test(f.head_of(pte.pfn()), flags::FILE)
}
