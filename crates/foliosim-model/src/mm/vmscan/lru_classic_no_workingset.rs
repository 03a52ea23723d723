//! docs/extending.md's worked example of an LRU tweak: the classic LRU without refault
//! detection, as kernels before 3.15 ("mm: thrash detection-based file cache sizing",
//! a528910e12ec) reclaimed. Eviction leaves no shadow, so a refaulting page starts on the
//! inactive list like any new page and has to earn its activation again. Everything else is
//! the classic LRU's. Registered only in test builds (vmscan.rs `registry!`).

use super::file::FileRef;
use super::lru_classic::ClassicLru;
use super::lru_policy::{LruPolicy, LruPolicyEntry};
use super::scan_count::ScanControl;
use super::{FolioReferences, ShrinkCount};
use crate::engine::Ctx;
use crate::mm::workingset::Shadow;
use crate::mm::Kernel;

/// The registry's row: the scenario spells it `kernel.lru_policy = "classic-no-workingset"`.
pub const ENTRY: LruPolicyEntry = LruPolicyEntry {
    name: "classic-no-workingset",
    doc: "example (test builds only): classic LRU without refault detection (before 3.15)",
    lru_gen: false,
    policy: &ClassicNoWorkingset,
};

pub struct ClassicNoWorkingset;

impl LruPolicy for ClassicNoWorkingset {
    fn name(&self) -> &'static str {
        ENTRY.name
    }

    fn shrink_lruvec(
        &self,
        k: &mut Kernel,
        ctx: &mut Ctx,
        memcg: u16,
        nr_to_reclaim: u64,
        sc: &mut ScanControl,
    ) -> ShrinkCount {
        ClassicLru.shrink_lruvec(k, ctx, memcg, nr_to_reclaim, sc)
    }

    fn age_node(&self, k: &mut Kernel, ctx: &mut Ctx, nid: usize) {
        ClassicLru.age_node(k, ctx, nid)
    }

    fn folio_check_references(&self, k: &mut Kernel, ctx: &mut Ctx, pfn: u32) -> FolioReferences {
        ClassicLru.folio_check_references(k, ctx, pfn)
    }

    fn file_check_references(&self, k: &mut Kernel, ctx: &mut Ctx, pfn: u32) -> FileRef {
        ClassicLru.file_check_references(k, ctx, pfn)
    }

    fn folio_mark_accessed(&self, k: &mut Kernel, ctx: &mut Ctx, pfn: u32) {
        ClassicLru.folio_mark_accessed(k, ctx, pfn)
    }

    /// The tweak: __remove_mapping before 3.15 left no shadow behind.
    fn workingset_eviction(&self, _k: &mut Kernel, _pfn: u32, _target: u16) -> Option<Shadow> {
        None
    }

    /// Never called without shadows; a refault is just a new page.
    fn workingset_refault(&self, _k: &mut Kernel, _pfn: u32, _shadow: Shadow) {}
}

/// The guide's comparison: scenarios/pageout-refault-hostcache.toml (MADV_PAGEOUT, then the
/// pages fault back in) on the classic LRU and on this tweak.
#[cfg(test)]
mod tests {
    use crate::Scenario;
    use std::collections::BTreeMap;

    fn counters(lru_policy: &str) -> BTreeMap<String, u64> {
        let text = include_str!("../../../../../scenarios/pageout-refault-hostcache.toml")
            .replace("version = \"6.18\"", &format!("version = \"6.18\"\n{lru_policy}"));
        let s = Scenario::from_toml_str(&text).unwrap();
        crate::run(&s).unwrap().counters
    }

    #[test]
    fn no_workingset_against_classic() {
        let base = counters("");
        let tweak = counters("lru_policy = \"classic-no-workingset\"");
        println!("{:<28} {:>10} {:>22}", "counter", "classic", "classic-no-workingset");
        let names = ["pswpin", "workingset_refault_anon", "workingset_activate_anon"];
        for name in names.iter().chain(&["workingset_restore_anon"]) {
            println!("{name:<28} {:>10} {:>22}", base[*name], tweak[*name]);
        }
        // The same pages come back: MADV_PAGEOUT then a touch, whatever the LRU remembers.
        assert_eq!(base["pswpin"], tweak["pswpin"]);
        // Classic recognises them as refaults and activates them; the tweak cannot.
        assert!(base["workingset_activate_anon"] > 0, "{base:?}");
        for name in &names[1..] {
            assert_eq!(tweak[*name], 0, "{name}");
        }
    }
}
