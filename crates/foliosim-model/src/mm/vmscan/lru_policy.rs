//! The reclaim-list policy: how folios are ordered for reclaim and what reclaim does with
//! them. The registered implementations (vmscan.rs `registry!`): the classic active and
//! inactive lists (lru_classic.rs) and MGLRU's generations (lru_gen/), chosen by
//! `kernel.lru_policy`, else by `[sysfs.lru_gen] enabled`.
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
use crate::registry::{Choice, Entry};

/// RefUnwindSafe: a Scenario names its policy (LruPolicyEntry) and crosses catch_unwind.
pub trait LruPolicy: Sync + std::panic::RefUnwindSafe {
    /// "classic" or "mglru".
    fn name(&self) -> &'static str;

    /// shrink_lruvec (classic) or lru_gen_shrink_lruvec / try_to_shrink_lruvec (MGLRU):
    /// reclaim about `nr_to_reclaim` pages from `memcg`'s lruvec on node `sc.nid`.
    fn shrink_lruvec(
        &self,
        k: &mut Kernel,
        ctx: &mut Ctx,
        memcg: u16,
        nr_to_reclaim: u64,
        sc: &mut ScanControl,
    ) -> ShrinkCount;

    /// kswapd's aging of node `nid` before reclaim: kswapd_age_node (age_active_anon) or
    /// lru_gen_age_node.
    fn age_node(&self, k: &mut Kernel, ctx: &mut Ctx, nid: usize);

    /// folio_check_references of an isolated anonymous folio, after its young bits were
    /// flushed (clear_flush_young): what shrink_folio_list does with it.
    fn folio_check_references(&self, k: &mut Kernel, ctx: &mut Ctx, pfn: u32) -> FolioReferences;

    /// folio_check_references of an isolated page-cache folio.
    fn file_check_references(&self, k: &mut Kernel, ctx: &mut Ctx, pfn: u32) -> FileRef;

    /// folio_mark_accessed: an access through a file descriptor (read/write).
    fn folio_mark_accessed(&self, k: &mut Kernel, ctx: &mut Ctx, pfn: u32);

    /// workingset_eviction (called through mm/workingset.rs): the shadow reclaim on behalf of
    /// `target` leaves in the cache slots of the folio at `pfn` it evicts (None: nothing to
    /// remember).
    fn workingset_eviction(&self, k: &mut Kernel, pfn: u32, target: u16) -> Option<Shadow>;

    /// workingset_refault: the new folio at `pfn`, not yet on an LRU, took a slot that held
    /// `shadow`.
    fn workingset_refault(&self, k: &mut Kernel, pfn: u32, shadow: Shadow);
}

/// What the registry (vmscan.rs `registry!`) knows of one reclaim-list policy.
pub struct LruPolicyEntry {
    /// `kernel.lru_policy`'s spelling; the policy's `name()` returns the same.
    pub name: &'static str,
    pub doc: &'static str,
    /// Runs on MGLRU's generations: needs `sysfs.lru_gen.enabled = true` (else false).
    pub lru_gen: bool,
    pub policy: &'static dyn LruPolicy,
}

impl Entry for LruPolicyEntry {
    const WHAT: &'static str = "LRU policy";
    fn name(&self) -> &'static str {
        self.name
    }
    fn doc(&self) -> &'static str {
        self.doc
    }
    fn all() -> &'static [&'static Self] {
        super::LRU_POLICIES
    }
}

/// Which reclaim-list policy the kernel runs: a registered entry, chosen by name.
pub type LruPolicyKind = Choice<LruPolicyEntry>;

#[allow(non_upper_case_globals)]
impl LruPolicyKind {
    pub const Classic: Self = Choice(&super::lru_classic::ENTRY);
    pub const Mglru: Self = Choice(&super::lru_gen::ENTRY);

    /// The default of a scenario that names none: what `sysfs.lru_gen.enabled` selects.
    pub fn of_lru_gen(lru_gen_enabled: bool) -> Self {
        if lru_gen_enabled {
            Self::Mglru
        } else {
            Self::Classic
        }
    }
}
