//! The classic two-list LRU (active and inactive lists per type), the reclaim-list policy
//! without MGLRU. Its reclaim is vmscan.rs's shrink_lruvec / shrink_active_list /
//! shrink_inactive_list with get_scan_count (scan_count.rs).

use super::file::FileRef;
use super::lru_policy::{LruPolicy, LruPolicyEntry};
use super::scan_count::ScanControl;
use super::{FolioReferences, ShrinkCount};
use crate::engine::Ctx;
use crate::mm::folio::flags;
use crate::mm::workingset::{self, Shadow};
use crate::mm::Kernel;

/// The registry's row (vmscan.rs `registry!`).
pub const ENTRY: LruPolicyEntry = LruPolicyEntry {
    name: "classic",
    doc: "active and inactive lists per type (shrink_lruvec, get_scan_count)",
    lru_gen: false,
    policy: &ClassicLru,
};

pub struct ClassicLru;

impl LruPolicy for ClassicLru {
    fn name(&self) -> &'static str {
        "classic"
    }

    fn shrink_lruvec(
        &self,
        k: &mut Kernel,
        ctx: &mut Ctx,
        memcg: u16,
        nr_to_reclaim: u64,
        sc: &mut ScanControl,
    ) -> ShrinkCount {
        super::shrink_lruvec_classic(k, ctx, memcg, nr_to_reclaim, sc)
    }

    fn age_node(&self, k: &mut Kernel, ctx: &mut Ctx, nid: usize) {
        super::kswapd::kswapd_age_node_classic(k, ctx, nid);
    }

    fn folio_check_references(&self, k: &mut Kernel, _ctx: &mut Ctx, pfn: u32) -> FolioReferences {
        super::folio_check_references(&mut k.folios, pfn)
    }

    fn file_check_references(&self, k: &mut Kernel, ctx: &mut Ctx, pfn: u32) -> FileRef {
        super::file::folio_check_references(k, ctx, pfn)
    }

    /// folio_mark_accessed: inactive,unreferenced -> inactive,referenced -> active,unreferenced.
    fn folio_mark_accessed(&self, k: &mut Kernel, ctx: &mut Ctx, pfn: u32) {
        let f = &mut k.folios;
        if !f.test(pfn, flags::REFERENCED) {
            f.set(pfn, flags::REFERENCED);
        } else if !f.test(pfn, flags::ACTIVE) {
            crate::mm::filemap::folio_activate(k, ctx, pfn);
            k.folios.clear(pfn, flags::REFERENCED);
            workingset::workingset_activation(k, pfn);
        }
    }

    fn workingset_eviction(&self, k: &mut Kernel, pfn: u32, target: u16) -> Option<Shadow> {
        Some(workingset::classic_eviction(k, pfn, target))
    }

    fn workingset_refault(&self, k: &mut Kernel, pfn: u32, shadow: Shadow) {
        workingset::classic_refault(k, pfn, shadow);
    }
}
