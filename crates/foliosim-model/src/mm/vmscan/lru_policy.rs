//! The reclaim-list policy: how folios are ordered for reclaim and what reclaim does with
//! them. Two implementations, chosen by `[sysfs.lru_gen] enabled`: the classic active and
//! inactive lists (lru_classic.rs) and MGLRU's generations (lru_gen/).
//!
//! Adding, isolating and putting back folios are Lruvec's list operations (mm/lruvec.rs),
//! which follow a folio's generation bits as lruvec_add_folio / lruvec_del_folio do; this
//! trait holds what differs in the algorithms.

use super::file::FileRef;
use super::scan_count::ScanControl;
use super::{FolioReferences, ShrinkCount};
use crate::engine::Ctx;
use crate::mm::workingset::Shadow;
use crate::mm::Kernel;

pub trait LruPolicy: Sync {
    /// "classic" or "mglru".
    fn name(&self) -> &'static str;

    /// shrink_lruvec (classic) or lru_gen_shrink_lruvec / try_to_shrink_lruvec (MGLRU):
    /// reclaim about `nr_to_reclaim` pages from node 0's lruvec of `memcg`.
    fn shrink_lruvec(
        &self,
        k: &mut Kernel,
        ctx: &mut Ctx,
        memcg: u16,
        nr_to_reclaim: u64,
        sc: &mut ScanControl,
    ) -> ShrinkCount;

    /// kswapd's aging before reclaim: kswapd_age_node (age_active_anon) or lru_gen_age_node.
    fn age_node(&self, k: &mut Kernel, ctx: &mut Ctx);

    /// folio_check_references of an isolated anonymous folio, after its young bits were
    /// flushed (clear_flush_young): what shrink_folio_list does with it.
    fn folio_check_references(&self, k: &mut Kernel, ctx: &mut Ctx, pfn: u32) -> FolioReferences;

    /// folio_check_references of an isolated page-cache folio.
    fn file_check_references(&self, k: &mut Kernel, ctx: &mut Ctx, pfn: u32) -> FileRef;

    /// folio_mark_accessed: an access through a file descriptor (read/write).
    fn folio_mark_accessed(&self, k: &mut Kernel, ctx: &mut Ctx, pfn: u32);

    /// workingset_eviction (called through mm/workingset.rs): the shadow reclaim on behalf of
    /// `target` leaves in the cache slots of the node-0 folio at `pfn` it evicts (None:
    /// nothing to remember).
    fn workingset_eviction(&self, k: &mut Kernel, pfn: u32, target: u16) -> Option<Shadow>;

    /// workingset_refault: the new folio at `pfn`, not yet on an LRU, took a slot that held
    /// `shadow`.
    fn workingset_refault(&self, k: &mut Kernel, pfn: u32, shadow: Shadow);
}

/// The policy of a scenario.
pub fn policy(lru_gen_enabled: bool) -> &'static dyn LruPolicy {
    if lru_gen_enabled {
        &super::lru_gen::LruGenPolicy
    } else {
        &super::lru_classic::ClassicLru
    }
}
