//! Who allocates a fault's PMD THP when memory is fragmented (mm/huge_memory.c,
//! mm/khugepaged.c): one file per policy, chosen by `kernel.thp_fault_alloc`.
//!
//! - `direct` (mainline): every THP fault tries the allocation with the defrag mode's gfp;
//!   khugepaged only collapses.
//! - `thp-avail-nodes` (Vlastimil Babka, "Outsourcing page fault THP allocations to
//!   khugepaged", RFC 2015, seed 001): a per-node availability bit the fault consults; a failed
//!   or skipped fault clears it and wakes khugepaged, which re-sets it by allocating a THP with
//!   its own (synchronous, deferral-aware) compaction before it scans; freeing a block of
//!   pageblock order sets it.
//!
//! The model has one node: `thp_avail_nodes` is one bit, kept with the zone (`Zone::thp_avail`)
//! because the free path that sets it runs where only the zone is at hand.

mod direct;
mod thp_avail_nodes;

use super::Kernel;
use crate::engine::Ctx;
use crate::scenario::ThpFaultAllocKind;

pub use direct::Direct;
pub use thp_avail_nodes::ThpAvailNodes;

/// khugepaged's side of the policy: a THP it allocated while checking the nodes, kept for its
/// next collapse, and whether a fault asked for it (khugepaged_thp_requested).
#[derive(Debug, Default)]
pub struct ThpAvailState {
    pub requested: bool,
    pub prealloc: Option<u32>,
}

pub trait ThpFaultAlloc: Sync {
    fn name(&self) -> &'static str;
    /// alloc_pages_vma's hugepage branch: may the fault try the PMD allocation on its node?
    fn fault_may_try(&self, k: &Kernel) -> bool;
    /// The fault's PMD allocation failed, or was not tried (`fault_may_try` said no).
    fn fault_failed(&self, k: &mut Kernel, now_ns: u64);
    /// At the start of a khugepaged pass: is there a node to collapse into? False skips the
    /// scan and sends khugepaged to its alloc sleep.
    fn khugepaged_check_nodes(&self, k: &mut Kernel, ctx: &mut Ctx) -> bool;
    /// khugepaged's huge page for a collapse: one it holds (false), else a new allocation
    /// with `gfp` (true).
    fn collapse_alloc(
        &self,
        k: &mut Kernel,
        ctx: &mut Ctx,
        gfp: super::gfp::Gfp,
    ) -> Option<(u32, bool)>;
    /// May khugepaged scan a range whose pages are on a node without THPs?
    fn collapse_target_available(&self, k: &Kernel) -> bool;
    /// khugepaged's sleeps end early and it has work: a fault asked for a THP.
    fn khugepaged_requested(&self, k: &Kernel) -> bool;
}

pub fn policy(kind: ThpFaultAllocKind) -> &'static dyn ThpFaultAlloc {
    match kind {
        ThpFaultAllocKind::Direct => &Direct,
        ThpFaultAllocKind::ThpAvailNodes => &ThpAvailNodes,
    }
}
