//! Swap I/O (mm/page_io.c): swap_writepage and swap_read_folio, with the counters the kernel
//! bumps at submission (count_swpout_vm_event).

use super::folio::{flags, SwapEntry};
use super::vmstat::{MthpStat, VmEvent};
use super::Kernel;
use crate::engine::Ctx;
use crate::hw::blockdev::Completion;
use crate::scenario::{PAGE_SIZE, PMD_ORDER};

/// swap_writepage: one bio for the whole folio. A synchronous device is done on return; an
/// asynchronous one leaves the folio under writeback until the device completes.
pub fn swap_writepage(k: &mut Kernel, ctx: &mut Ctx, pfn: u32) {
    let entry = k.folios.swap_entry(pfn);
    let order = k.folios.order[pfn as usize] as u32;
    let nr = 1u64 << order;
    ctx.spend(k.cost.bio_submit_ns);
    let completion = k.swap.devices[entry.dev()].bdev.write(
        ctx,
        &mut k.membw,
        entry.offset() as u64,
        nr * PAGE_SIZE,
    );
    k.vmstat.count(VmEvent::Pswpout, nr);
    k.vmstat.count_mthp(order, MthpStat::Swpout);
    if order == PMD_ORDER {
        k.vmstat.count(VmEvent::ThpSwpout, 1);
    }
    k.folios.clear(pfn, flags::DIRTY);
    if let Completion::At(done_ns) = completion {
        k.folios.set(pfn, flags::WRITEBACK);
        k.folios.writeback_done_ns[pfn as usize] = done_ns;
        let memcg = k.folios.memcg[pfn as usize] as usize;
        k.memcgs[memcg].lruvec.writeback_started(pfn, done_ns);
    }
}

/// swap_read_folio: read `nr` pages from `entry`; the caller waits for the data.
pub fn swap_read_folio(k: &mut Kernel, ctx: &mut Ctx, entry: SwapEntry, order: u32) {
    let nr = 1u64 << order;
    ctx.spend(k.cost.bio_submit_ns);
    let bdev = &mut k.swap.devices[entry.dev()].bdev;
    if let Completion::At(done_ns) = bdev.read(ctx, &mut k.membw, nr * PAGE_SIZE) {
        ctx.now_ns = ctx.now_ns.max(done_ns);
    }
    k.vmstat.count(VmEvent::Pswpin, nr);
    k.vmstat.count_mthp(order, MthpStat::Swpin);
}
