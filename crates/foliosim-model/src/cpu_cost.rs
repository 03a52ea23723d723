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

/// The buckets of a lock class: its spinning, its handoffs and its hold.
const fn lock_costs(spin: CpuCost, handoff: CpuCost, held: CpuCost) -> LockCosts {
    LockCosts {
        spin: CostId(spin as u8),
        handoff: CostId(handoff as u8),
        held: CostId(held as u8),
    }
}

/// The buckets of each lock class.
pub const ZONE_LOCK: LockCosts = lock_costs(
    CpuCost::ZoneLockSpin,
    CpuCost::ZoneLockHandoff,
    CpuCost::ZoneLockHeld,
);
pub const LRU_LOCK: LockCosts = lock_costs(
    CpuCost::LruLockSpin,
    CpuCost::LruLockHandoff,
    CpuCost::LruLockHeld,
);
pub const SI_LOCK: LockCosts = lock_costs(
    CpuCost::SiLockSpin,
    CpuCost::SiLockHandoff,
    CpuCost::SiLockHeld,
);
pub const CI_LOCK: LockCosts = lock_costs(
    CpuCost::CiLockSpin,
    CpuCost::CiLockHandoff,
    CpuCost::CiLockHeld,
);
pub const GLOBAL_CLUSTER_LOCK: LockCosts = lock_costs(
    CpuCost::GlobalClusterLockSpin,
    CpuCost::GlobalClusterLockHandoff,
    CpuCost::GlobalClusterLockHeld,
);

#[cfg(test)]
mod tests {
    use super::*;
    use crate::engine::CpuLedger;
    use crate::mm::invariants::check_cpu_time_booked;

    #[test]
    fn the_check_catches_time_without_a_bucket_or_in_the_wrong_mode() {
        let ledger = CpuLedger::default();
        ledger.add(CpuCost::UserCompute.into(), 5);
        ledger.add(CpuCost::Syscall.into(), 3);
        assert_eq!(check_cpu_time_booked(&ledger, 8, 5), Ok(()));
        assert!(
            check_cpu_time_booked(&ledger, 9, 5).is_err(),
            "1 ns unbooked"
        );
        assert!(
            check_cpu_time_booked(&ledger, 8, 3).is_err(),
            "user time booked as sys"
        );
    }

    /// usemem swapping to zram under a memcg limit.
    #[test]
    fn a_swapping_run_names_every_ns_of_its_cpu_time() {
        let text = "seed = 1\n[machine]\ncpus = 4\nmemory = \"256M\"\n\
             [[machine.swap]]\nkind = \"zram\"\nsize = \"128M\"\n\
             [[memcg]]\nname = \"m\"\nmax = \"32M\"\n\
             [[workload]]\nkind = \"usemem\"\nnproc = 4\nsize = \"12M\"\nmemcg = \"m\"\n";
        let r = crate::run(&crate::Scenario::from_toml_str(text).unwrap()).unwrap();
        let kthreads_ns: u64 = r.kernel_threads.iter().map(|t| t.sys_ns).sum();
        let total_ns = r.cpu_user_ns + r.cpu_sys_ns + kthreads_ns;
        assert_eq!(r.cpu_time_ns.values().sum::<u64>(), total_ns);
        let known = |name: &str| {
            CpuCost::ALL.iter().any(|c| name.starts_with(c.name()))
                || name == "user: page walks and STLB lookups"
        };
        assert!(
            r.cpu_time_ns.keys().all(|n| known(n)),
            "{:?}",
            r.cpu_time_ns
        );
        for name in [
            "do_anonymous_page (less clear_page)",
            "shrink_folio_list",
            "swap_writepage: zram compress",
            "lruvec->lru_lock held (lru_move_ns)",
        ] {
            assert!(
                r.cpu_time_ns.get(name) > Some(&0),
                "{name}: {:?}",
                r.cpu_time_ns
            );
        }
    }

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
