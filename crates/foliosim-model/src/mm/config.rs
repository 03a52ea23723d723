//! The kernel's boot configuration: what the release, the command line, sysfs and sysctl
//! fixed before the first fault, resolved once from the scenario and never written after.
//! Run-time state stays on `Kernel`; a function that only reads configuration borrows this.

use super::compaction::era::CompactionEra;
use super::mmap::ThpAdvice;
use super::{
    gfp, migrate, page_alloc, swap_readahead, swapout_fallback, thp_fault_alloc, tlb, vmscan,
};
use crate::hw::iaa::{IaaMode, IAA_CRYPTO_MAX_BATCH_SIZE};
use crate::scenario::{
    MmChange, PromotedPte, Scenario, SwapAllocatorKind, ThpDefrag, ZswapLargeFolios,
};

/// The immutable part of the kernel: release switches, policies, knobs.
#[derive(Clone)]
pub struct KernelConfig {
    // --- what the release chose (every decision by version is in `KernelConfig::new`) ---
    /// Partly unmapped THPs wait on the deferred split queue (4.5+), else split at once.
    pub defer_partial_split: bool,
    /// Zap takes a PTE-mapped large folio's run of PTEs at once (6.9+), else PTE by PTE.
    pub zap_batches_ptes: bool,
    /// Reclaim (4.3+, try_to_unmap_flush) flushes the TLB once for a batch of unmapped
    /// folios; before, once per folio.
    pub tlb_batched_unmap: bool,
    /// 6.3+ (migrate_pages_batch): async migration unmaps a batch, then flushes once.
    pub migrate_batched_flush: bool,
    /// 6.10+: a fault maps a large folio found in the swap cache whole (do_swap_page).
    pub map_swapcache_folio_whole: bool,
    /// 6.4+ (4d4b6d66db): a cleared inaccessible PTE needs no flush.
    pub tlb_skip_inaccessible: bool,
    /// Swap large folios back in whole (alloc_swap_folio).
    pub swapin_mthp: bool,
    /// The swap zero map (6.12+): all-zero folios are marked, not written.
    pub zeromap: bool,
    /// CONFIG_THP_SWAP: large folios get slots whole; without it every one is split first.
    pub thp_swap: bool,
    /// The release's GFP_TRANSHUGE (Gfp::transhuge_of).
    pub gfp_transhuge: gfp::Gfp,
    /// The release's __alloc_pages_slowpath (mm/page_alloc/slowpath*.rs).
    pub slowpath: &'static dyn page_alloc::Slowpath,
    /// `transparent_hugepage/defrag`: how hard large folio allocations and charges try.
    pub thp_defrag: ThpDefrag,
    /// What the release's compaction does (mm/compaction/era.rs).
    pub compaction_era: CompactionEra,
    /// kcompactd runs (4.6+).
    pub kcompactd: bool,
    /// How swap slots are allocated (mm/swap_alloc/).
    pub swap_allocator: SwapAllocatorKind,
    /// What zswap does with a large folio (mm/zswap_store/).
    pub zswap_large_folios: ZswapLargeFolios,
    // --- policies ---
    /// How migration flushes (mm/migrate/flush/).
    pub migrate_flush: &'static dyn migrate::flush::MigrateFlushPolicy,
    /// What add_to_swap does when no range of slots fits a large folio (mm/swapout_fallback/).
    pub swapout_fallback: &'static dyn swapout_fallback::SwapoutFallback,
    /// Who allocates a fault's PMD THP (mm/thp_fault_alloc/).
    pub thp_fault_alloc: &'static dyn thp_fault_alloc::ThpFaultAlloc,
    /// The reclaim-list policy: the classic active/inactive LRU or MGLRU (mm/vmscan/).
    pub lru_policy: &'static dyn vmscan::lru_policy::LruPolicy,
    /// The machine's TLB invalidation mechanism (mm/tlb/).
    pub tlb: &'static dyn tlb::TlbArch,
    // --- sysfs, sysctl and mount options ---
    /// Per-size `enabled` resolved to order masks: for any VMA, and for MADV_HUGEPAGE VMAs.
    pub thp_orders: u32,
    pub thp_orders_madvised: u32,
    /// vm.swappiness: get_scan_count's anon/file balance (mm/vmscan/scan_count.rs).
    pub swappiness: u32,
    /// vm.page-cluster: swap readahead windows of up to 2^page_cluster pages.
    pub page_cluster: u32,
    /// cgroup2's memory_recursiveprot mount option (effective_protection hands unclaimed
    /// parent protection down); off, the kernel's default without the option.
    pub memory_recursiveprot: bool,
    /// /sys/kernel/mm/lru_gen/min_ttl_ms, in ns (0: off).
    pub lru_gen_min_ttl_ns: u64,
    /// A NUMA-hint promotion leaves a clean PTE (scenario kernel.numa_promoted_pte).
    pub numa_promoted_clean: bool,
    /// How zswap drives the IAA accelerators: one synchronous job per page, or a folio's
    /// pages batched.
    pub iaa_mode: IaaMode,
    /// shmem_writeout swaps a large folio whole (6.12+), else splits it first.
    pub shmem_swapout_large: bool,
    /// Which large orders tmpfs's huge= gives write(2) (mm/shmem.rs).
    pub tmpfs_orders: super::shmem::TmpfsOrders,
}

impl KernelConfig {
    /// The anon THP orders enabled for a VMA of this advice (the per-size `enabled` masks;
    /// MADV_NOHUGEPAGE: none).
    #[inline]
    pub fn thp_orders_for(&self, advice: ThpAdvice) -> u32 {
        match advice {
            ThpAdvice::Default => self.thp_orders,
            ThpAdvice::Hugepage => self.thp_orders_madvised,
            ThpAdvice::NoHugepage => 0,
        }
    }

    /// The configuration the scenario boots: the one place that decides by release.
    pub fn new(scenario: &Scenario) -> KernelConfig {
        let kernel = &scenario.kernel;
        // Every per-release switch comes from the release table (scenario/releases.rs).
        let release = kernel.version;
        KernelConfig {
            defer_partial_split: release.has(MmChange::ThpDeferredSplit),
            zap_batches_ptes: release.has(MmChange::ZapPteBatch),
            tlb_batched_unmap: release.has(MmChange::TtuBatchFlush),
            migrate_batched_flush: release.has(MmChange::MigrateBatchFlush),
            map_swapcache_folio_whole: release.has(MmChange::SwapcacheMapWhole),
            tlb_skip_inaccessible: release.has(MmChange::TlbSkipInaccessible),
            // alloc_swap_folio falls back to order 0 once zswap has been enabled.
            swapin_mthp: kernel.swapin_mthp() && !scenario.sysfs.zswap.enabled,
            zeromap: release.has(MmChange::SwapZeromap),
            shmem_swapout_large: release.has(MmChange::ShmemSwapoutLarge),
            tmpfs_orders: super::shmem::TmpfsOrders::of(release),
            thp_swap: kernel.thp_swap,
            gfp_transhuge: gfp::Gfp::transhuge_of(release),
            slowpath: page_alloc::slowpath_of(release),
            thp_defrag: scenario.sysfs.thp_defrag(release),
            compaction_era: CompactionEra::of(release),
            kcompactd: release.has(MmChange::Kcompactd),
            swap_allocator: kernel.swap_allocator(),
            zswap_large_folios: kernel.zswap_large_folios(),
            migrate_flush: migrate::flush::policy_of(kernel.migrate_tlb_flush),
            swapout_fallback: swapout_fallback::policy(kernel.swapout_fallback),
            thp_fault_alloc: thp_fault_alloc::policy(kernel.thp_fault_alloc),
            lru_policy: scenario.lru_policy().entry().policy,
            tlb: tlb::arch(scenario.machine.tlb),
            thp_orders: scenario.sysfs.orders_enabled(false),
            thp_orders_madvised: scenario.sysfs.orders_enabled(true),
            swappiness: scenario
                .sysctl
                .vm
                .swappiness
                .unwrap_or(vmscan::scan_count::DEFAULT_SWAPPINESS),
            page_cluster: scenario
                .sysctl
                .vm
                .page_cluster
                .unwrap_or(swap_readahead::DEFAULT_PAGE_CLUSTER),
            memory_recursiveprot: false,
            lru_gen_min_ttl_ns: scenario.sysfs.lru_gen.min_ttl_ms.unwrap_or(0) as u64 * 1_000_000,
            numa_promoted_clean: kernel.numa_promoted_pte == PromotedPte::Clean,
            iaa_mode: match &scenario.machine.iaa {
                Some(spec) if spec.batch => IaaMode::Batch {
                    batch_size: IAA_CRYPTO_MAX_BATCH_SIZE,
                },
                _ => IaaMode::Sync,
            },
        }
    }
}
