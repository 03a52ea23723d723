//! 5.3: alloc_hugepage_direct_gfpmask (89c83fb539f9, re-applied by 92717d429b38) sets
//! __GFP_THISNODE for every defrag mode except on a MADV_HUGEPAGE VMA, whose fault may take a
//! THP from any node, reclaiming and compacting along the zonelist.

use super::HugepageNodePolicy;
use crate::engine::Ctx;
use crate::mm::gfp::Gfp;
use crate::mm::page_alloc::alloc_pages;
use crate::mm::Kernel;

pub struct MadvisedAnyNode;

impl HugepageNodePolicy for MadvisedAnyNode {
    fn alloc_hugepage(
        &self,
        k: &mut Kernel,
        ctx: &mut Ctx,
        gfp: Gfp,
        order: u32,
        madvised: bool,
    ) -> Option<u32> {
        let gfp = if madvised {
            gfp
        } else {
            gfp.union(Gfp::THISNODE)
        };
        alloc_pages(k, ctx, gfp, order)
    }
}
