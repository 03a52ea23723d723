//! 4.1 to 5.2: alloc_pages_vma's hugepage branch (5265047ac301) allocates from the local node
//! with __GFP_THISNODE and the defrag mode's gfp, so a MADV_HUGEPAGE or defrag=always fault
//! reclaims and compacts the local node and never takes a remote THP.

use super::HugepageNodePolicy;
use crate::engine::Ctx;
use crate::mm::gfp::Gfp;
use crate::mm::page_alloc::alloc_pages;
use crate::mm::Kernel;

pub struct LocalOnly;

impl HugepageNodePolicy for LocalOnly {
    fn alloc_hugepage(
        &self,
        k: &mut Kernel,
        ctx: &mut Ctx,
        gfp: Gfp,
        order: u32,
        _madvised: bool,
    ) -> Option<u32> {
        alloc_pages(k, ctx, gfp.union(Gfp::THISNODE), order)
    }
}
