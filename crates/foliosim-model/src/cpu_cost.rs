//! The CPU-time buckets of a run (`RunResult::cpu_time_ns`): every charge of CPU time names
//! the kernel work (or user work) that spent it, as `perf report` would group its samples.
//! The engine carries a bucket as an opaque `CostId`; the names are here. A bucket is named
//! after the kernel function whose cost it books, or after the cost table's own field.

use foliosim_engine::lock::LockCosts;
use foliosim_engine::CostId;

macro_rules! buckets {
    ($($(#[$m:meta])* $v:ident = $name:literal, $user:literal;)*) => {
        /// A CPU-time bucket: `ALL` in numbering order, `name()` as reported.
        #[derive(Debug, Clone, Copy, PartialEq, Eq)]
        #[repr(u8)]
        pub enum CpuCost { $($(#[$m])* $v,)* }

        impl CpuCost {
            pub const ALL: &'static [CpuCost] = &[$(CpuCost::$v,)*];

            /// The bucket's name in reports.
            pub fn name(self) -> &'static str {
                match self { $(CpuCost::$v => $name,)* }
            }

            /// Whether the bucket is user-mode time (else system time).
            pub fn is_user(self) -> bool {
                match self { $(CpuCost::$v => $user,)* }
            }
        }
    };
}

buckets! {
    /// A workload op's own computing (Op::Compute).
    UserCompute = "user: compute", true;
    /// Loads and stores through the TLB model (mm/access.rs); the page-walk part is reported
    /// apart from the TLB model's PMU counts.
    UserAccess = "user: loads and stores", true;
    /// Stores of a Touch (hw/membw.rs stream): `user_write_page_ns`.
    MembwUserStore = "user_write_page_ns", true;
    Syscall = "syscall entry and exit (syscall_ns)", false;
    DoAnonymousPage = "do_anonymous_page (less clear_page)", false;
    MembwClearPage = "clear_page_ns", false;
    DoSwapPage = "do_swap_page", false;
    FilemapFault = "filemap_fault", false;
    FilemapMapPages = "filemap_map_pages (fault-around)", false;
    DoNumaPage = "do_numa_page", false;
    ChangeProtNuma = "change_prot_numa (NUMA scanning)", false;
    DoWpPage = "do_wp_page (reuse)", false;
    PinUserPages = "pin_user_pages", false;
    ChangeProtection = "change_protection (mprotect)", false;
    ZapPteRange = "zap_pte_range", false;
    FreeFolio = "free_unref_folios (folio_free_ns, page_free_ns)", false;
    TryToUnmap = "try_to_unmap", false;
    SplitHugePage = "split_huge_page", false;
    SplitHugePmd = "__split_huge_pmd", false;
    FolioReferenced = "folio_referenced", false;
    ShrinkFolioList = "shrink_folio_list", false;
    LruGenWalk = "lru_gen aging: walk_page_range", false;
    SwapMapUpdate = "swap_map updates (swap_map_update_ns)", false;
    SwapZeroCheck = "swap_writepage: is_folio_zero_filled", false;
    SwapZeroFill = "swap_read_folio: zero-filled folio", false;
    SubmitBio = "submit_bio (bio_submit_ns)", false;
    ZramCompress = "swap_writepage: zram compress", false;
    ZramDecompress = "swap_read_folio: zram decompress", false;
    /// The block device's per-request CPU cost (brd, zram: `latency_ns`).
    BlockRequest = "block device request (latency_ns)", false;
    MembwRamdiskCopy = "ramdisk copy (bandwidth_bytes_per_s)", false;
    ZswapStore = "zswap_store", false;
    ZswapCompress = "zswap_store: compress", false;
    ZswapLoad = "zswap_load: decompress", false;
    ZswapInvalidate = "zswap_invalidate", false;
    /// Waiting on the CPU for an IAA job (iaa_crypto polls for its completion).
    IaaPoll = "zswap: IAA job wait (polling)", false;
    Writeback = "wb_writeback: pages written", false;
    FilemapAddFolio = "filemap_add_folio", false;
    FilemapRemoveFolio = "filemap_remove_folio", false;
    FilemapRead = "filemap_read: copy to user", false;
    CompactScan = "compaction: pfn scanners", false;
    CompactIsolate = "isolate_migratepages_block", false;
    FragmentationScore = "fragmentation_score (kcompactd)", false;
    MigrateFolio = "migrate_folio", false;
    MembwCopyPage = "copy_page_ns", false;
    KhugepagedScan = "khugepaged_scan_pmd", false;
    CollapseHugePage = "collapse_huge_page", false;
    TlbLocalFlush = "tlb_flush_local_ns", false;
    TlbIpi = "tlb_flush_ipi_ns (+ tlb_ipi_extra_cpu_ns)", false;
    TlbiIssue = "tlbi_issue_ns", false;
    ContptePtes = "contpte_convert PTE rewrite (pte_unmap_ns)", false;
    MembwTlbBroadcast = "tlb_dsb_ns", false;
    LinePageCounter = "line transfers: page_counter charge/uncharge", false;
    LineVmstat = "line transfers: vmstat NR_FREE_PAGES folds", false;
    LineMmapCount = "line transfers: mmap_lock count", false;
    ZoneLockSpin = "zone->lock spin", false;
    ZoneLockHandoff = "zone->lock handoff", false;
    ZoneLockHeld = "zone->lock held (buddy lists)", false;
    LruLockSpin = "lruvec->lru_lock spin", false;
    LruLockHandoff = "lruvec->lru_lock handoff", false;
    LruLockHeld = "lruvec->lru_lock held (lru_move_ns)", false;
    SiLockSpin = "si->lock spin", false;
    SiLockHandoff = "si->lock handoff", false;
    SiLockHeld = "si->lock held (swap allocation)", false;
    CiLockSpin = "ci->lock spin", false;
    CiLockHandoff = "ci->lock handoff", false;
    CiLockHeld = "ci->lock held (swap cluster)", false;
    GlobalClusterLockSpin = "global_cluster_lock spin", false;
    GlobalClusterLockHandoff = "global_cluster_lock handoff", false;
    GlobalClusterLockHeld = "global_cluster_lock held", false;
    /// Work of the test kernel threads and unit tests.
    Test = "test work", false;
}

impl From<CpuCost> for CostId {
    #[inline]
    fn from(c: CpuCost) -> CostId {
        CostId(c as u8)
    }
}

/// The buckets of each lock class.
pub const ZONE_LOCK: LockCosts = LockCosts {
    spin: CostId(CpuCost::ZoneLockSpin as u8),
    handoff: CostId(CpuCost::ZoneLockHandoff as u8),
    held: CostId(CpuCost::ZoneLockHeld as u8),
};
pub const LRU_LOCK: LockCosts = LockCosts {
    spin: CostId(CpuCost::LruLockSpin as u8),
    handoff: CostId(CpuCost::LruLockHandoff as u8),
    held: CostId(CpuCost::LruLockHeld as u8),
};
pub const SI_LOCK: LockCosts = LockCosts {
    spin: CostId(CpuCost::SiLockSpin as u8),
    handoff: CostId(CpuCost::SiLockHandoff as u8),
    held: CostId(CpuCost::SiLockHeld as u8),
};
pub const CI_LOCK: LockCosts = LockCosts {
    spin: CostId(CpuCost::CiLockSpin as u8),
    handoff: CostId(CpuCost::CiLockHandoff as u8),
    held: CostId(CpuCost::CiLockHeld as u8),
};
pub const GLOBAL_CLUSTER_LOCK: LockCosts = LockCosts {
    spin: CostId(CpuCost::GlobalClusterLockSpin as u8),
    handoff: CostId(CpuCost::GlobalClusterLockHandoff as u8),
    held: CostId(CpuCost::GlobalClusterLockHeld as u8),
};

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn buckets_are_numbered_in_order_with_distinct_names() {
        for (i, c) in CpuCost::ALL.iter().enumerate() {
            assert_eq!(CostId::from(*c), CostId(i as u8));
        }
        let mut names: Vec<_> = CpuCost::ALL.iter().map(|c| c.name()).collect();
        names.sort();
        names.dedup();
        assert_eq!(names.len(), CpuCost::ALL.len());
    }
}
