//! The release table: every mm change the model knows, the release it landed in and the upstream
//! commit, and the `Release` type a scenario's `kernel.version` parses to. Every per-release
//! switch of the model is `release.has(MmChange::…)`; nothing else in the code compares versions.
//!
//! Plain data: the model reads the table, the table knows nothing of the model.

use super::{SwapAllocatorKind, ThpDefrag, ZswapLargeFolios};
use serde::{Deserialize, Deserializer, Serialize, Serializer};
use std::fmt;

/// A mainline kernel release, `major.minor`, from 4.1 to 6.18 (the model's range).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Release {
    major: u8,
    minor: u8,
}

/// The last minor release of each major the model accepts: 4.20, 5.19, and 6.18 (the newest
/// release modelled). Releases below 4.1 are refused.
const LAST_MINOR: [(u8, u8); 3] = [(4, 20), (5, 19), (6, 18)];

impl Release {
    pub const MIN: Release = Release::new(4, 1);
    pub const MAX: Release = Release::new(6, 18);
    /// The releases the model had profiles for before the table (seed 001's 4.1, the mTHP
    /// swap releases); kept as names for the reproducers and tests.
    pub const V4_1: Release = Release::new(4, 1);
    pub const V6_9: Release = Release::new(6, 9);
    pub const V6_10: Release = Release::new(6, 10);
    pub const V6_12: Release = Release::new(6, 12);
    pub const V6_18: Release = Release::new(6, 18);

    const fn new(major: u8, minor: u8) -> Release {
        Release { major, minor }
    }

    pub fn major(self) -> u8 {
        self.major
    }

    pub fn minor(self) -> u8 {
        self.minor
    }

    /// `"X.Y"`, as written in a scenario and in JSON output.
    pub fn name(self) -> String {
        self.to_string()
    }

    /// Parses `"X.Y"` for a real release from 4.1 to 6.18; the error names `kernel.version`,
    /// the value and the allowed range.
    pub fn parse(text: &str) -> Result<Release, ReleaseError> {
        let err = || ReleaseError(text.to_string());
        let (major, minor) = text.trim().split_once('.').ok_or_else(err)?;
        let number = |s: &str| {
            let plain = !s.is_empty() && s.bytes().all(|b| b.is_ascii_digit());
            plain.then(|| s.parse::<u8>().ok()).flatten()
        };
        let release = Release::new(
            number(major).ok_or_else(err)?,
            number(minor).ok_or_else(err)?,
        );
        release.is_known().then_some(release).ok_or_else(err)
    }

    fn is_known(self) -> bool {
        let last = LAST_MINOR.iter().find(|(major, _)| *major == self.major);
        matches!(last, Some((_, last)) if self.minor <= *last) && self >= Release::MIN
    }

    /// Every release the model accepts, oldest first.
    pub fn all() -> impl Iterator<Item = Release> {
        LAST_MINOR
            .iter()
            .flat_map(|&(major, last)| (0..=last).map(move |minor| Release::new(major, minor)))
            .filter(|r| *r >= Release::MIN)
    }

    /// The change is in this release (it landed in it or before).
    pub fn has(self, change: MmChange) -> bool {
        self >= change.row().release
    }

    /// The swap slot allocator the release runs (mm/swapfile.c), and the row that decided it
    /// (the newest allocator change the release has; None: the legacy allocator).
    pub fn swap_allocator(self) -> (SwapAllocatorKind, Option<MmChange>) {
        use MmChange::*;
        let kinds = [
            (
                SwapPercpuClusterFastPath,
                SwapAllocatorKind::ClusterListsC18,
            ),
            (SwapClusterLists, SwapAllocatorKind::ClusterListsC12),
            (SwapAllOrders, SwapAllocatorKind::PercpuOrder),
        ];
        kinds
            .into_iter()
            .find(|(change, _)| self.has(*change))
            .map_or((SwapAllocatorKind::Legacy, None), |(c, kind)| {
                (kind, Some(c))
            })
    }

    /// How zswap_store treats a large folio by default.
    pub fn zswap_large_folios(self) -> ZswapLargeFolios {
        if self.has(MmChange::ZswapLargeFolios) {
            ZswapLargeFolios::PerPage
        } else {
            ZswapLargeFolios::Reject
        }
    }

    /// `transparent_hugepage/defrag` by default.
    pub fn thp_defrag(self) -> ThpDefrag {
        if self.has(MmChange::ThpDefragMadvise) {
            ThpDefrag::Madvise
        } else {
            ThpDefrag::Always
        }
    }
}

impl fmt::Display for Release {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}.{}", self.major, self.minor)
    }
}

impl std::str::FromStr for Release {
    type Err = ReleaseError;
    fn from_str(s: &str) -> Result<Release, ReleaseError> {
        Release::parse(s)
    }
}

/// A `kernel.version` outside the model's releases.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ReleaseError(pub String);

impl fmt::Display for ReleaseError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "`kernel.version`: found `{}`; allowed: a release from `4.1` to `6.18` as a string \
             \"X.Y\" (4.1-4.20, 5.0-5.19, 6.0-6.18)",
            self.0
        )
    }
}

impl std::error::Error for ReleaseError {}

impl Serialize for Release {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.collect_str(self)
    }
}

impl<'de> Deserialize<'de> for Release {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Release, D::Error> {
        d.deserialize_any(ReleaseVisitor)
    }
}

struct ReleaseVisitor;

impl serde::de::Visitor<'_> for ReleaseVisitor {
    type Value = Release;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("a kernel release as a string, e.g. \"6.10\"")
    }

    fn visit_str<E: serde::de::Error>(self, v: &str) -> Result<Release, E> {
        Release::parse(v).map_err(E::custom)
    }

    /// `version = 6.10` unquoted is the number 6.1: refuse it rather than guess.
    fn visit_f64<E: serde::de::Error>(self, v: f64) -> Result<Release, E> {
        Err(E::custom(format!(
            "`kernel.version`: found the number {v}; write the release as a string, e.g. \
             version = \"6.10\" (unquoted, 6.10 is the number 6.1)"
        )))
    }

    fn visit_i64<E: serde::de::Error>(self, v: i64) -> Result<Release, E> {
        Err(E::custom(format!(
            "`kernel.version`: found the number {v}; write the release as a string \"X.Y\", \
             e.g. version = \"6.10\""
        )))
    }

    fn visit_u64<E: serde::de::Error>(self, v: u64) -> Result<Release, E> {
        self.visit_i64(v as i64)
    }
}

/// Every mm change the model knows whose presence depends on the release, oldest first.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum MmChange {
    TtuBatchFlush,
    ThpDeferredSplit,
    Kcompactd,
    ThpDefragMadvise,
    OomDetectionRework,
    CompactionSkipOnFailure,
    GfpTranshugeRetry,
    ThpDefragDeferMadvise,
    CompactionFinishAtFreeBlock,
    CompactionFastSearch,
    ThpMadvisedAnyNode,
    ThpRemoteFallback,
    LruGen,
    CompactionFinishPageblock,
    MigrateBatchFlush,
    TlbSkipInaccessible,
    AnonMthp,
    ZapPteBatch,
    SwapcacheMapWhole,
    SwapAllOrders,
    ShmemPerSizeEnabled,
    SwapClusterLists,
    SwapZeromap,
    ShmemSwapoutLarge,
    ZswapLargeFolios,
    SwapinMthp,
    TmpfsLargeFolios,
    SwapPercpuClusterFastPath,
    TmpfsHugePmdFirst,
}

/// One row of the table: a change, what the model switches with it, where it came from.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Row {
    pub change: MmChange,
    /// kebab-case, as `foliosim show` prints it.
    pub name: &'static str,
    pub release: Release,
    /// Upstream commit id (12 digits) where it was found, else empty.
    pub commit: &'static str,
    pub title: &'static str,
    /// What the model switches on from this release.
    pub switches: &'static str,
}

const fn row(
    change: MmChange,
    name: &'static str,
    (major, minor): (u8, u8),
    commit: &'static str,
    title: &'static str,
    switches: &'static str,
) -> Row {
    Row {
        change,
        name,
        release: Release::new(major, minor),
        commit,
        title,
        switches,
    }
}

/// The table, oldest first. Ids are mainline ids as cited in later commits' Fixes: tags or in
/// mainline logs; where none could be confirmed the field is empty and the title stands.
#[rustfmt::skip]
pub const TABLE: [Row; 29] = {
    use MmChange::*;
    [
        row(TtuBatchFlush, "ttu-batch-flush", (4, 3), "72b252aed506",
            "mm: send one IPI per CPU to TLB flush all entries after unmapping pages",
            "reclaim flushes the TLB once per batch of unmapped folios"),
        row(ThpDeferredSplit, "thp-deferred-split", (4, 5), "9a982250f773",
            "thp: introduce deferred_split_huge_page()",
            "a partly unmapped THP waits on the deferred split queue (THP refcounting rework)"),
        row(Kcompactd, "kcompactd", (4, 6), "698b1b30642f",
            "mm, compaction: introduce kcompactd",
            "a per-node compaction thread; before, kswapd compacted"),
        row(ThpDefragMadvise, "thp-defrag-madvise", (4, 6), "444eb2a449ef",
            "mm: thp: set THP defrag by default to madvise and add a stall-free defrag option",
            "defrag defaults to madvise (before: always); defrag=defer exists"),
        // Disagreement: the model's modern slow path also has compaction priorities, which
        // came in 4.8 (mm, compaction: introduce direct compaction priority); 4.7 gets them early.
        row(OomDetectionRework, "oom-detection-rework", (4, 7), "0a0337e0d1d1",
            "mm, oom: rework oom detection",
            "__alloc_pages_slowpath with should_reclaim_retry, compaction priorities"),
        // Id from a blame of mm/compaction.c (skip_on_failure, committed 2016-05-19, before
        // 4.7-rc1 of 2016-05-29).
        row(CompactionSkipOnFailure, "compaction-skip-on-failure", (4, 7), "fdd048e12c9a",
            "mm, compaction: skip blocks where isolation fails in async direct compaction",
            "async direct compaction leaves an order-aligned chunk at its first failure"),
        row(GfpTranshugeRetry, "gfp-transhuge-retry", (4, 8), "2516035499b9",
            "mm, thp: remove __GFP_NORETRY from khugepaged and madvised allocations",
            "GFP_TRANSHUGE without __GFP_NORETRY: madvised faults and khugepaged retry"),
        row(ThpDefragDeferMadvise, "thp-defrag-defer-madvise", (4, 11), "21440d7eb904",
            "mm, thp: add new defer+madvise defrag option",
            "defrag=defer+madvise exists"),
        // Posted February 2017 (v2) and March (v3), in the mm tree's since-4.11 branch, so
        // merged for 4.12; 4.8-4.11 checked the watermark of the allocation's alloc_flags
        // (min for direct compaction), the model the low one. Mainline id not confirmed.
        row(CompactionFinishAtFreeBlock, "compaction-finish-at-free-block", (4, 12), "",
            "mm, compaction: remove redundant watermark check in compact_finished()",
            "compaction stops once a free block fits (before: at the watermark, then a free block)"),
        row(CompactionFastSearch, "compaction-fast-search", (5, 1), "5e1f0f098b46",
            "mm, compaction: capture a page under direct compaction (and its series)",
            "free-list fast search, capture, free-scanner stride; need_resched no longer aborts"),
        // 4.1 to 5.2 put __GFP_THISNODE on every THP fault (5265047ac301, 4.1, "mm, thp:
        // really limit transparent hugepage allocation to local node"). 89c83fb539f9 (the
        // change below) was merged for 4.20 and reverted before its release; 92717d429b38
        // re-applied it in 5.3-rc5 (its author's post: "made their way into 5.3-rc5").
        row(ThpMadvisedAnyNode, "thp-madvised-any-node", (5, 3), "92717d429b38",
            "Revert \"Revert \"mm, thp: consolidate THP gfp handling into alloc_hugepage_direct_gfpmask\"\"",
            "a MADV_HUGEPAGE THP fault may use any node; others stay on the local node"),
        // Merged after v5.3 (the 'hugepage-fallbacks' branch, edf445ad7c8d, in v5.3..master
        // of 2019-09-30), so 5.4; the rule 6.18's alloc_pages_mpol still has.
        row(ThpRemoteFallback, "thp-remote-fallback", (5, 4), "76e654cc91bb",
            "mm, page_alloc: allow hugepage fallback to remote nodes when madvised",
            "a THP fault tries the local node without reclaim first, then any node if it may reclaim"),
        row(LruGen, "lru-gen", (6, 1), "ec1c86b25f4b",
            "mm: multi-gen LRU: groundwork",
            "MGLRU may be enabled (sysfs.lru_gen)"),
        row(CompactionFinishPageblock, "compaction-finish-pageblock", (6, 2), "cfccd2e63e7e",
            "mm, compaction: finish pageblocks on complete migration failure",
            "a pageblock migrated from is scanned to its end"),
        row(MigrateBatchFlush, "migrate-batch-flush", (6, 3), "7e12beb8ca2a",
            "migrate_pages: batch flushing TLB",
            "async migration unmaps a batch of folios, then flushes the TLB once"),
        row(TlbSkipInaccessible, "tlb-skip-inaccessible", (6, 4), "4d4b6d66db63",
            "mm,unmap: avoid flushing TLB in batch if PTE is inaccessible",
            "a cleared PROT_NONE PTE adds nothing to the batched flush"),
        row(AnonMthp, "anon-mthp", (6, 8), "19eaf44954df",
            "mm: thp: support allocation of anonymous multi-size THP",
            "per-size hugepages-<size>kB knobs below the PMD size"),
        row(ZapPteBatch, "zap-pte-batch", (6, 9), "10ebac4f95e7",
            "mm/memory: optimize unmap/zap with PTE-mapped THP",
            "zap removes the rmap of a run of a large folio's PTEs at once"),
        // Mainline id not confirmed: the logs and blames found carry mm-unstable and
        // linux-next ids only (e.g. 508758960b8d in a 2024 blame of mm/memory.c).
        row(SwapcacheMapWhole, "swapcache-map-whole", (6, 10), "",
            "mm: swap: entirely map large folios found in swapcache",
            "a fault on a large folio in the swap cache maps all of it"),
        row(SwapAllOrders, "swap-all-orders", (6, 10), "845982eb264b",
            "mm: swap: allow storage of all mTHP orders",
            "swap allocator percpu-order: per-CPU, per-order clusters; any order swapped whole"),
        // Baolin Wang's anonymous shmem mTHP series, merged for 6.11; mainline id not confirmed.
        row(ShmemPerSizeEnabled, "shmem-per-size-enabled", (6, 11), "",
            "mm: shmem: add multi-size THP sysfs interface for anonymous shmem",
            "per-size hugepages-<size>kB/shmem_enabled (anonymous shmem only; tmpfs write(2) ignores it)"),
        row(SwapClusterLists, "swap-cluster-lists", (6, 12), "73ed0baae66d",
            "mm: swap: swap cluster switch to double link list",
            "swap allocator cluster-lists-c12: free/nonfull/frag/full lists under si->lock"),
        row(SwapZeromap, "swap-zeromap", (6, 12), "0ca0c24e3211",
            "mm: store zero pages to be swapped out in a bitmap",
            "a zero-filled page swapped out is a bit in the zeromap, no I/O"),
        // Baolin Wang's series, merged for 6.12; mainline id not confirmed.
        row(ShmemSwapoutLarge, "shmem-swapout-large", (6, 12), "",
            "mm: shmem: support large folio swap out",
            "shmem_writeout swaps a large folio whole (before: splits it first)"),
        row(ZswapLargeFolios, "zswap-large-folios", (6, 13), "b7c0ccdfbafd",
            "mm: zswap: support large folios in zswap_store()",
            "zswap stores a large folio page by page (before: rejects it)"),
        row(SwapinMthp, "swapin-mthp", (6, 13), "242d12c98174",
            "mm: support large folios swap-in for sync io devices",
            "a fault swaps a large folio in whole from a synchronous device"),
        row(TmpfsLargeFolios, "tmpfs-large-folios", (6, 14), "acd7ccb284b8",
            "mm: shmem: add large folio support for tmpfs",
            "huge=always/within_size give write(2) any order up to the write's size (before: PMD only)"),
        // Posted 2025-02-24 (v2), after 6.14-rc1 (2025-02-02): 6.15. 6.14 has the lock series
        // before it (swap_entries_free under ci->lock, no free-side slot cache), which the
        // model does not split from this row: 6.14 runs the 6.12 allocator, free side included.
        row(SwapPercpuClusterFastPath, "swap-percpu-cluster", (6, 15), "1b7e90020eb7",
            "mm, swap: use percpu cluster as allocation fast path",
            "swap allocator cluster-lists-c18: per-CPU cluster fast path, ci->lock inside"),
        // In linux-next for the 6.18 merge window (next ids 257d03784c41, e361c0cca4fc);
        // mainline id not confirmed.
        row(TmpfsHugePmdFirst, "tmpfs-huge-pmd-first", (6, 18), "",
            "mm: shmem: fix the strategy for the tmpfs 'huge=' options",
            "huge=always/within_size try the PMD order first, then every smaller one"),
    ]
};

impl MmChange {
    pub fn row(self) -> &'static Row {
        &TABLE[self as usize]
    }
}

#[cfg(test)]
mod tests;
