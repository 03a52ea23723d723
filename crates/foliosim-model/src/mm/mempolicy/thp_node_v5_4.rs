//! 5.4 to 6.18: alloc_pages_mpol (6.18; alloc_pages_vma from 76e654cc91bb) first tries the
//! local node with __GFP_THISNODE | __GFP_NORETRY (compaction, no reclaim loop); if that fails
//! and the defrag mode allows direct reclaim (defrag=always, or a MADV_HUGEPAGE VMA under
//! madvise / defer+madvise), it retries on every node with the full gfp.

use super::HugepageNodePolicy;
use crate::engine::Ctx;
use crate::mm::gfp::Gfp;
use crate::mm::page_alloc::alloc_pages;
use crate::mm::Kernel;

pub struct RemoteFallback;

impl HugepageNodePolicy for RemoteFallback {
    fn alloc_hugepage(
        &self,
        k: &mut Kernel,
        ctx: &mut Ctx,
        gfp: Gfp,
        order: u32,
        _madvised: bool,
    ) -> Option<u32> {
        // A fault whose second attempt stopped in its slow path resumes there: the kernel's
        // task never left it, so the local attempt is not made again (making it again would
        // restart the second attempt from scratch after every stop: it might never end).
        if k.current.alloc_resumes(gfp, order) {
            return alloc_pages(k, ctx, gfp, order);
        }
        let local = gfp.union(Gfp::THISNODE).noretry();
        let page = alloc_pages(k, ctx, local, order);
        if page.is_some() || !gfp.contains(Gfp::DIRECT_RECLAIM) || k.current.alloc_stopped() {
            return page;
        }
        alloc_pages(k, ctx, gfp, order)
    }
}
