//! The memory policy of an allocation (mm/mempolicy.c). Every task has the default local policy
//! (MPOL_DEFAULT: the allocating CPU's node, then its zonelist); `bind`, `preferred` and
//! `interleave` are not modelled yet. What a release does for a PMD-order THP fault, where
//! mempolicy.c and huge_memory.c decide whether it may leave the local node, is a
//! [`HugepageNodePolicy`] per era:
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

mod thp_node_v4_1;
mod thp_node_v5_3;
mod thp_node_v5_4;

use super::gfp::Gfp;
use super::page_alloc::alloc_pages;
use super::Kernel;
use crate::engine::Ctx;
use crate::scenario::{MmChange, Release, PMD_ORDER};

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

/// vma_alloc_folio for an anonymous fault's folio of `order`: a PMD-order folio follows the
/// release's rule (alloc_pages_mpol); any other order the default local policy.
pub fn vma_alloc_folio(
    k: &mut Kernel,
    ctx: &mut Ctx,
    gfp: Gfp,
    order: u32,
    madvised: bool,
) -> Option<u32> {
    if order == PMD_ORDER {
        let policy = k.cfg.hugepage_node_policy;
        return policy.alloc_hugepage(k, ctx, gfp, order, madvised);
    }
    alloc_pages(k, ctx, gfp, order)
}

#[cfg(test)]
mod tests;
