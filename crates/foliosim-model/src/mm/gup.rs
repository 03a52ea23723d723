//! Pinning user pages (mm/gup.c): pin_user_pages_fast(FOLL_WRITE | FOLL_LONGTERM) takes a
//! FOLL_PIN reference on each page, counted per folio (folio->_pincount, here
//! `FolioTable::pins`), as io_uring fixed buffers or RDMA/VFIO drivers do. A pinned folio
//! cannot migrate (compaction skips it; migration fails) and is not reclaimed (try_to_unmap
//! cannot replace its exclusive PTEs). FOLL_LONGTERM's migration of pages out of ZONE_MOVABLE
//! and CMA first does not apply: the model has neither.
//!
//! The pin holder is the task itself: the pins go away with the pages' mapping (munmap, exit,
//! MADV_DONTNEED) rather than keeping orphaned pages alive, as a ring torn down at exit would.

use super::memory::handle_mm_fault;
use super::{Kernel, MmError};
use crate::cpu_cost::CpuCost;
use crate::engine::Ctx;

/// pin_user_pages_fast over pages [first, first + nr) of `vma`, faulting in (for write) those
/// not present.
pub fn pin_user_pages_fast(
    k: &mut Kernel,
    ctx: &mut Ctx,
    mm: u32,
    vma: u32,
    first: u32,
    nr: u32,
) -> Result<(), MmError> {
    let mut index = first;
    while index < first + nr {
        let pte = k.mms[mm as usize].vma(vma).ptes[index as usize];
        if !pte.is_present() {
            handle_mm_fault(k, ctx, mm, vma, index, true)?;
            continue;
        }
        let head = k.folios.head_of(pte.pfn());
        *k.folios.pins.entry(head).or_insert(0) += 1;
        ctx.spend(CpuCost::PinUserPages, k.cost.gup_pin_page_ns);
        index += 1;
    }
    Ok(())
}

/// unpin_user_pages over pages [first, first + nr) of `vma`: each pinned page present there
/// drops its pin.
pub fn unpin_user_pages(k: &mut Kernel, ctx: &mut Ctx, mm: u32, vma: u32, first: u32, nr: u32) {
    for index in first..first + nr {
        let pte = k.mms[mm as usize].vma(vma).ptes[index as usize];
        if !pte.is_present() {
            continue;
        }
        let head = k.folios.head_of(pte.pfn());
        if let Some(pins) = k.folios.pins.get_mut(&head) {
            *pins -= 1;
            if *pins == 0 {
                k.folios.pins.remove(&head);
            }
            ctx.spend(CpuCost::PinUserPages, k.cost.gup_pin_page_ns);
        }
    }
}
