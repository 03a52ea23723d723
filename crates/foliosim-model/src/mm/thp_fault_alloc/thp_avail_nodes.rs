//! Babka's RFC (seed 001, patches 2-4; spec-thp-migrate.md §8): THP faults try only where
//! khugepaged found THPs available, and leave the hard work (reclaim, synchronous compaction
//! with deferral) to khugepaged.
//!
//! - Fault (patch 3, alloc_pages_vma): try the PMD allocation only if the node's bit is set;
//!   a failure or a skip clears it and (patch 4) wakes khugepaged with `requested` set.
//! - Free (patch 3, __free_pages_ok): a block of pageblock order or more sets the bit
//!   (`Zone::free`, whatever the route; spec §8.3).
//! - khugepaged (patch 2, khugepaged_check_nodes at the start of khugepaged_do_scan): for a
//!   node whose bit is clear, allocate a THP there with khugepaged's gfp; success sets the bit
//!   and the page is kept for the next collapse (counted as thp_collapse_alloc), or freed if
//!   one is kept already; no node available: no scan, alloc sleep (ended early by `requested`).
//!   A collapse allocation failure clears the bit. Ranges whose target node's bit is clear are
//!   skipped.

use super::ThpFaultAlloc;
use crate::engine::Ctx;
use crate::mm::gfp::Gfp;
use crate::mm::khugepaged::khugepaged_gfp;
use crate::mm::kthread::KthreadKind;
use crate::mm::page_alloc::alloc_pages;
use crate::mm::vmstat::VmEvent;
use crate::mm::Kernel;
use crate::scenario::PMD_ORDER;

pub struct ThpAvailNodes;

/// thp_avail_clear(nid) and the wake-up of patch 4.
fn clear_and_request(k: &mut Kernel, now_ns: u64) {
    k.pgdat[k.nodes.cpu_node()].zone.thp_avail = false;
    k.thp_avail.requested = true;
    k.kthreads.wake(KthreadKind::Khugepaged, now_ns);
}

impl ThpFaultAlloc for ThpAvailNodes {
    fn name(&self) -> &'static str {
        "thp-avail-nodes"
    }

    fn fault_may_try(&self, k: &Kernel) -> bool {
        k.pgdat[k.nodes.cpu_node()].zone.thp_avail
    }

    fn fault_failed(&self, k: &mut Kernel, now_ns: u64) {
        clear_and_request(k, now_ns);
    }

    fn khugepaged_check_nodes(&self, k: &mut Kernel, ctx: &mut Ctx) -> bool {
        k.thp_avail.requested = false;
        if k.pgdat[k.nodes.cpu_node()].zone.thp_avail {
            return true;
        }
        let gfp = khugepaged_gfp(k.khugepaged.defrag, k.cfg.gfp_transhuge);
        let Some(pfn) = alloc_pages(k, ctx, gfp, PMD_ORDER) else {
            return false;
        };
        k.pgdat[k.nodes.cpu_node()].zone.thp_avail = true;
        k.vmstat.count(VmEvent::ThpCollapseAlloc, 1);
        if k.thp_avail.prealloc.is_none() {
            k.thp_avail.prealloc = Some(pfn);
        } else {
            k.free_pages(ctx, pfn, PMD_ORDER);
        }
        true
    }

    fn collapse_alloc(&self, k: &mut Kernel, ctx: &mut Ctx, gfp: Gfp) -> Option<(u32, bool)> {
        if let Some(pfn) = k.thp_avail.prealloc.take() {
            return Some((pfn, false));
        }
        let page = alloc_pages(k, ctx, gfp, PMD_ORDER);
        if page.is_none() {
            k.pgdat[k.nodes.cpu_node()].zone.thp_avail = false;
        }
        page.map(|pfn| (pfn, true))
    }

    fn collapse_target_available(&self, k: &Kernel) -> bool {
        k.pgdat[k.nodes.cpu_node()].zone.thp_avail
    }

    fn khugepaged_requested(&self, k: &Kernel) -> bool {
        k.thp_avail.requested
    }
}
