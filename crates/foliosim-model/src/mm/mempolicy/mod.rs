//! The memory policy of an allocation (mm/mempolicy.c). A task has the default local policy
//! (MPOL_DEFAULT: the allocating CPU's node, then its zonelist) unless `[mempolicy]` gives every
//! user task `preferred`, `bind` or `interleave` (policy.rs: policy_nodemask). Kernel threads
//! keep the default. A fault's folio interleaves by its offset in the VMA (get_vma_policy's
//! ilx, the VMA's own start left out: the model's VMAs have no addresses); an allocation
//! without a VMA (page cache, slab, page tables, swap readahead) by the task's il_prev
//! (alloc_pages_noprof: NO_INTERLEAVE_INDEX). What a release does for a PMD-order THP fault
//! whose policy is not interleave and allows the preferred node, where mempolicy.c and
//! huge_memory.c decide whether it may leave that node, is a [`HugepageNodePolicy`] per era:
//! - 4.1 to 5.2 (`thp_node_v4_1.rs`): local node only (__GFP_THISNODE), with the defrag mode's
//!   reclaim and compaction there: a THP fault reclaims the local node rather than go remote.
//! - 5.3 (`thp_node_v5_3.rs`): MADV_HUGEPAGE faults may use any node; others stay local.
//! - 5.4 to 6.18 (`thp_node_v5_4.rs`): the local node without reclaim first, then any node when
//!   the gfp allows direct reclaim (alloc_pages_mpol of 6.18).
//!
//! The rule applies on one node too: alloc_pages_mpol is mm/mempolicy.c's, built on every
//! CONFIG_NUMA kernel (distro kernels), and tests the order (HPAGE_PMD_ORDER, a fault's
//! vma_alloc_folio), not the node count (6.18.38, mm/mempolicy.c). On one node 4.1 to 5.3 add
//! only __GFP_THISNODE, which changes nothing there; 5.4+ make the __GFP_NORETRY local attempt
//! first and, when it fails and the gfp may reclaim, the full attempt after it.

pub mod policy;
mod thp_node_v4_1;
mod thp_node_v5_3;
mod thp_node_v5_4;

use super::gfp::Gfp;
use super::mmzone::NumaStat;
use super::page_alloc::alloc_pages;
use super::Kernel;
use crate::engine::Ctx;
use crate::scenario::{MmChange, Release, PMD_ORDER};
use policy::{Mempolicy, NO_INTERLEAVE_INDEX};

/// Where a release lets a PMD THP fault's folio come from.
pub trait HugepageNodePolicy: Sync {
    /// The folio of `order` (PMD) for a fault with the defrag mode's `gfp`, the VMA
    /// MADV_HUGEPAGE when `madvised`, or None (the fault falls back).
    fn alloc_hugepage(
        &self,
        k: &mut Kernel,
        ctx: &mut Ctx,
        gfp: Gfp,
        order: u32,
        madvised: bool,
    ) -> Option<u32>;
}

/// The policy of `release` (the release table's thp-madvised-any-node and thp-remote-fallback).
pub fn hugepage_policy_of(release: Release) -> &'static dyn HugepageNodePolicy {
    if release.has(MmChange::ThpRemoteFallback) {
        &thp_node_v5_4::RemoteFallback
    } else if release.has(MmChange::ThpMadvisedAnyNode) {
        &thp_node_v5_3::MadvisedAnyNode
    } else {
        &thp_node_v4_1::LocalOnly
    }
}

/// vma_alloc_folio for an anonymous fault's folio of `order` at page `index` of its VMA.
pub fn vma_alloc_folio(
    k: &mut Kernel,
    ctx: &mut Ctx,
    gfp: Gfp,
    order: u32,
    madvised: bool,
    index: u32,
) -> Option<u32> {
    let pol = k.current.mempolicy;
    alloc_pages_mpol(
        k,
        ctx,
        gfp,
        order,
        pol.as_ref(),
        u64::from(index >> order),
        madvised,
    )
}

/// alloc_pages_mpol: the allocation `pol` (None: the default local policy) makes of interleave
/// index `ilx`. A PMD-order fault (`ilx` not NO_INTERLEAVE_INDEX) whose policy is not
/// interleave and allows its node follows the release's rule; NUMA_INTERLEAVE_HIT counts an
/// interleaved block that landed on the node it was meant for.
pub fn alloc_pages_mpol(
    k: &mut Kernel,
    ctx: &mut Ctx,
    gfp: Gfp,
    order: u32,
    pol: Option<&Mempolicy>,
    ilx: u64,
    madvised: bool,
) -> Option<u32> {
    let thp_rule = order == PMD_ORDER && ilx != NO_INTERLEAVE_INDEX;
    let Some(pol) = pol else {
        if thp_rule {
            let policy = k.cfg.hugepage_node_policy;
            return policy.alloc_hugepage(k, ctx, gfp, order, madvised);
        }
        return alloc_pages(k, ctx, gfp, order);
    };
    let local = k.numa_node_id(ctx);
    let an = policy::policy_nodemask(pol, ilx, local, &mut k.current.il_prev);
    let outer = k.alloc_nodes.replace(an);
    let page = if thp_rule && !pol.is_interleave() && an.allows(an.nid) {
        let policy = k.cfg.hugepage_node_policy;
        policy.alloc_hugepage(k, ctx, gfp, order, madvised)
    } else {
        alloc_pages(k, ctx, gfp, order)
    };
    k.alloc_nodes = outer;
    if let Some(pfn) = page.filter(|_| pol.is_interleave()) {
        if k.nodes.nid(pfn) == an.nid {
            k.pgdat[an.nid].numa_stat[NumaStat::InterleaveHit as usize] += 1;
        }
    }
    page
}

#[cfg(test)]
mod tests;
