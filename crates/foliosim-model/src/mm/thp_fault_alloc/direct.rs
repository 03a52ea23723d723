//! Mainline: the fault always tries; khugepaged allocates only to collapse.

use super::ThpFaultAlloc;
use crate::engine::Ctx;
use crate::mm::gfp::Gfp;
use crate::mm::page_alloc::alloc_pages;
use crate::mm::Kernel;
use crate::scenario::PMD_ORDER;

pub struct Direct;

impl ThpFaultAlloc for Direct {
    fn name(&self) -> &'static str {
        "direct"
    }
    fn fault_may_try(&self, _k: &Kernel) -> bool {
        true
    }
    fn fault_failed(&self, _k: &mut Kernel, _now_ns: u64) {}
    fn khugepaged_check_nodes(&self, _k: &mut Kernel, _ctx: &mut Ctx) -> bool {
        true
    }
    fn collapse_alloc(&self, k: &mut Kernel, ctx: &mut Ctx, gfp: Gfp) -> Option<(u32, bool)> {
        alloc_pages(k, ctx, gfp, PMD_ORDER).map(|pfn| (pfn, true))
    }
    fn collapse_target_available(&self, _k: &Kernel) -> bool {
        true
    }
    fn khugepaged_requested(&self, _k: &Kernel) -> bool {
        false
    }
}
