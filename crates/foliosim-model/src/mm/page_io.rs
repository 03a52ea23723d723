//! Swap I/O (mm/page_io.c): swap_writepage and swap_read_folio in their 6.12+ order (zero map,
//! then zswap, then the device), with the counters the kernel bumps at submission
//! (count_swpout_vm_event).

use super::folio::{flags, SwapEntry};
use super::swapfile::SlotData;
use super::vmstat::{MthpStat, VmEvent};
use super::zswap::{invalidate_range, zswap_load, zswap_store};
use super::Kernel;
use crate::content::ContentClass;
use crate::cpu_cost::CpuCost;
use crate::engine::{Ctx, WaitKind};
use crate::hw::blockdev::Completion;
use crate::scenario::{PAGE_SIZE, PMD_ORDER};

/// swap_writepage: a folio whose pages are all zero only marks the zero map (6.12+); else
/// zswap may take it; else one bio for the whole folio. A synchronous device is done on
/// return; an asynchronous one leaves the folio under writeback until the device completes. A
/// write the device refuses (zram out of memory) leaves the folio dirty.
pub fn swap_writepage(k: &mut Kernel, ctx: &mut Ctx, pfn: u32) {
    let order = k.folios.order[pfn as usize] as u32;
    let nr = 1u32 << order;
    let memcg = k.folios.memcg(pfn as usize) as usize;
    // The pages' contents: on the stack up to 64K folios (no allocation per page written);
    // a base page's without filling the 16-entry array (32 stores a page written).
    let one: [(ContentClass, u64); 1];
    let mut small: [(ContentClass, u64); 16];
    let large: Vec<(ContentClass, u64)>;
    let contents: &[(ContentClass, u64)] = if nr == 1 {
        one = [k.page_content(pfn, 0)];
        &one
    } else if nr <= 16 {
        small = [(ContentClass::default(), 0u64); 16];
        for (i, c) in small[..nr as usize].iter_mut().enumerate() {
            *c = k.page_content(pfn, i as u32);
        }
        &small[..nr as usize]
    } else {
        large = (0..nr).map(|i| k.page_content(pfn, i)).collect();
        &large
    };
    if k.cfg.zeromap {
        // is_folio_zero_filled stops at the first non-zero word: only zero pages cost a scan.
        let zero_pages = contents.iter().filter(|&&(c, key)| c.is_zero(key)).count() as u64;
        ctx.spend(CpuCost::SwapZeroCheck, k.cost.page_scan_ns * zero_pages);
        if zero_pages == nr as u64 {
            for (first, n) in k.folios.swap_runs(pfn) {
                invalidate_range(k, ctx, first, n);
                let data = &mut k.swap.devices[first.dev()].map.data;
                data[first.offset() as usize..(first.offset() + n) as usize].fill(SlotData::Zero);
            }
            k.vmstat.count(VmEvent::SwpoutZero, nr as u64);
            k.memcgs[memcg].count(VmEvent::SwpoutZero, nr as u64);
            k.folios.clear(pfn, flags::DIRTY);
            return;
        }
    }
    if zswap_store(k, ctx, pfn) {
        k.folios.clear(pfn, flags::DIRTY);
        return;
    }
    // One bio per run of adjacent slots: one for a folio on a contiguous range.
    let mut done_ns = None;
    let mut written = 0usize;
    for (first, n) in k.folios.swap_runs(pfn) {
        ctx.spend(CpuCost::SubmitBio, k.cost.bio_submit_ns);
        let pages = &contents[written..written + n as usize];
        let Some(completion) = write_to_device(k, ctx, first, pages) else {
            // Refused (zram/brd out of memory): what earlier bios stored is dropped too.
            for (first, n) in k.folios.swap_runs(pfn).take_while(|&(e, _)| e != first) {
                super::swap_devstore::free_slots(k, ctx, first, n);
                let data = &mut k.swap.devices[first.dev()].map.data;
                data[first.offset() as usize..(first.offset() + n) as usize].fill(SlotData::None);
            }
            return;
        };
        if let Completion::At(t) = completion {
            done_ns = Some(done_ns.map_or(t, |d: u64| d.max(t)));
        }
        written += n as usize;
    }
    k.vmstat.count(VmEvent::Pswpout, nr as u64);
    k.vmstat
        .count(VmEvent::Pgpgout, nr as u64 * super::filemap::KIB_PER_PAGE);
    k.memcgs[memcg].count(VmEvent::Pswpout, nr as u64);
    k.vmstat.count_mthp(order, MthpStat::Swpout);
    if order == PMD_ORDER {
        k.vmstat.count(VmEvent::ThpSwpout, 1);
    }
    k.folios.clear(pfn, flags::DIRTY);
    if let Some(done_ns) = done_ns {
        k.folios.set(pfn, flags::WRITEBACK);
        k.folios.set_writeback_done_ns(pfn, done_ns);
        let nid = k.nodes.nid(pfn);
        k.memcgs[memcg]
            .lruvec_mut(nid)
            .writeback_started(pfn, done_ns);
    }
}

/// __swap_writepage's device half: write pages of `contents` from slot `first` (a bio the
/// caller submitted). zram and brd store the data in memory taken from the buddy allocator;
/// None when they could not (-ENOMEM), leaving nothing written.
pub fn write_to_device(
    k: &mut Kernel,
    ctx: &mut Ctx,
    first: SwapEntry,
    contents: &[(ContentClass, u64)],
) -> Option<Completion> {
    let nr = contents.len() as u32;
    if !super::swap_devstore::store_pages(k, ctx, first, contents) {
        return None;
    }
    let dev = &mut k.swap.devices[first.dev()];
    let data = &mut dev.map.data[first.offset() as usize..(first.offset() + nr) as usize];
    // One slot: a store, where a fill is a call to memset.
    if let [slot] = data {
        *slot = SlotData::Device;
    } else {
        data.fill(SlotData::Device);
    }
    Some(dev.bdev.write(
        ctx,
        &mut k.membw,
        first.offset() as u64,
        nr as u64 * PAGE_SIZE,
    ))
}

/// swap_read_folio: read `2^order` pages from `first` into a new folio of `memcg`; the caller
/// sleeps until the data is in (iowait). The zero map and zswap answer without I/O (zswap only for order 0: a
/// large folio is never read from zswap, alloc_swap_folio falls back once zswap is on).
pub fn swap_read_folio(k: &mut Kernel, ctx: &mut Ctx, first: SwapEntry, order: u32, memcg: u16) {
    let nr = 1u64 << order;
    let data = k.swap.devices[first.dev()].map.data[first.offset() as usize];
    if data == SlotData::Zero {
        ctx.spend(CpuCost::SwapZeroFill, k.cost.clear_page_ns * nr);
        k.vmstat.count(VmEvent::SwpinZero, nr);
        k.memcgs[memcg as usize].count(VmEvent::SwpinZero, nr);
        return;
    }
    if order == 0 && zswap_load(k, ctx, first, memcg) {
        return;
    }
    ctx.spend(CpuCost::SubmitBio, k.cost.bio_submit_ns);
    super::swap_devstore::load_pages(k, ctx, first, nr as u32);
    let bdev = &mut k.swap.devices[first.dev()].bdev;
    if let Completion::At(done_ns) = bdev.read(ctx, &mut k.membw, nr * PAGE_SIZE) {
        // folio_wait_locked: io_schedule() until the read completes, off the CPU.
        ctx.wait_until(done_ns, WaitKind::Io);
    }
    k.vmstat.count(VmEvent::Pswpin, nr);
    k.vmstat
        .count(VmEvent::Pgpgin, nr * super::filemap::KIB_PER_PAGE);
    k.memcgs[memcg as usize].count(VmEvent::Pswpin, nr);
    k.vmstat.count_mthp(order, MthpStat::Swpin);
}

/// swap_read_folio for each swap-cache folio of a readahead batch (`(slot, pfn)`, the pages
/// of `memcg`), under one plug: a zero-map slot is a fill, a zswap entry is loaded (and
/// given up: the folio is dirty, its only copy), the rest is read from the device in one
/// request per run of adjacent slots. The folios come locked (`flags::LOCKED`); each stays
/// locked until its request completes (completion in `FolioTable::writeback_done_ns`); nobody waits here.
pub fn swap_read_batch(k: &mut Kernel, ctx: &mut Ctx, reads: &mut [(SwapEntry, u32)], memcg: u16) {
    reads.sort_unstable_by_key(|&(e, _)| (e.dev(), e.offset()));
    let mut i = 0;
    while i < reads.len() {
        let (e, pfn) = reads[i];
        let data = k.swap.devices[e.dev()].map.data[e.offset() as usize];
        if data == SlotData::Zero {
            ctx.spend(CpuCost::SwapZeroFill, k.cost.clear_page_ns);
            k.vmstat.count(VmEvent::SwpinZero, 1);
            k.memcgs[memcg as usize].count(VmEvent::SwpinZero, 1);
            k.folios.clear(pfn, flags::LOCKED);
            i += 1;
            continue;
        }
        if zswap_load(k, ctx, e, memcg) {
            k.folios.clear(pfn, flags::LOCKED);
            k.folios.set(pfn, flags::DIRTY);
            i += 1;
            continue;
        }
        // The run of adjacent slots on the device, one request (the plug merges the bios).
        let mut n = 1;
        while i + n < reads.len() && {
            let (next, _) = reads[i + n];
            next.dev() == e.dev()
                && next.offset() == e.offset() + n as u32
                && k.swap.devices[e.dev()].map.data[next.offset() as usize] == SlotData::Device
        } {
            n += 1;
        }
        ctx.spend(CpuCost::SubmitBio, k.cost.bio_submit_ns);
        super::swap_devstore::load_pages(k, ctx, e, n as u32);
        let bytes = n as u64 * PAGE_SIZE;
        let done = k.swap.devices[e.dev()].bdev.read(ctx, &mut k.membw, bytes);
        for &(_, pfn) in &reads[i..i + n] {
            match done {
                Completion::At(done_ns) => k.folios.set_writeback_done_ns(pfn, done_ns),
                Completion::Sync => k.folios.clear(pfn, flags::LOCKED),
            }
        }
        k.vmstat.count(VmEvent::Pswpin, n as u64);
        k.vmstat
            .count(VmEvent::Pgpgin, n as u64 * super::filemap::KIB_PER_PAGE);
        k.memcgs[memcg as usize].count(VmEvent::Pswpin, n as u64);
        i += n;
    }
}
