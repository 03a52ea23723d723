//! A random kernel: release, every policy override, cgroup version, OOM mode, and the sysfs
//! and sysctl knobs, within what each release allows.

use super::gen::Gen;
use crate::mm::swap_alloc::SWAP_ALLOCATORS;
use crate::scenario::{
    CgroupVersion, Kernel, KernelSysctl, KhugepagedKnobs, LruGenKnobs, MigrateTlbFlush, MmChange,
    NumaKnobs, OomPolicy, PromotedPte, Release, SwapoutFallbackKind, Sysctl, Sysfs, ThpDefrag,
    ThpEnabled, ThpFaultAllocKind, VmSysctl, ZramKnobs, ZswapKnobs, ZswapLargeFolios, COMPRESSORS,
};
use std::collections::BTreeMap;

pub const VERSIONS: [Release; 5] = [
    Release::V4_1,
    Release::V6_9,
    Release::V6_10,
    Release::V6_12,
    Release::V6_18,
];
pub const ZSWAP_STORES: [ZswapLargeFolios; 3] = [
    ZswapLargeFolios::Reject,
    ZswapLargeFolios::PerPageRfc,
    ZswapLargeFolios::PerPage,
];
const ENABLED: [ThpEnabled; 4] = [
    ThpEnabled::Always,
    ThpEnabled::Madvise,
    ThpEnabled::Inherit,
    ThpEnabled::Never,
];
/// The per-size `enabled` keys drawn. "8K" is still drawn, so that a seed's later draws stay
/// what they were, but never written: anonymous THP has no order 1 (THP_ORDERS_ALL_ANON).
const SIZES: [&str; 9] = [
    "8K", "16K", "32K", "64K", "128K", "256K", "512K", "1M", "2M",
];

pub fn kernel(g: &mut Gen) -> Kernel {
    Kernel {
        version: g.pick(&VERSIONS),
        // Every registered allocator (mm/swap_alloc/mod.rs), so a new one is soaked too.
        swap_allocator: g.maybe(50, |g| crate::registry::Choice(g.pick(SWAP_ALLOCATORS))),
        // The LRU policy follows sysfs.lru_gen (drawn below), as the kernel chooses it.
        lru_policy: None,
        swapin_mthp: g.maybe(40, |g| g.chance(50)),
        zswap_large_folios: g.maybe(50, |g| g.pick(&ZSWAP_STORES)),
        swapout_fallback: g.pick(&[
            SwapoutFallbackKind::Split,
            SwapoutFallbackKind::NonContiguous,
        ]),
        cgroup: g.pick(&[CgroupVersion::V1, CgroupVersion::V2, CgroupVersion::V2]),
        thp_fault_alloc: g.pick(&[ThpFaultAllocKind::Direct, ThpFaultAllocKind::ThpAvailNodes]),
        oom: g.pick(&[OomPolicy::Kill, OomPolicy::Kill, OomPolicy::Fail]),
        migrate_tlb_flush: g.pick(&[MigrateTlbFlush::Eager, MigrateTlbFlush::Migrc]),
        numa_promoted_pte: g.pick(&[PromotedPte::Clean, PromotedPte::Dirty]),
        // Not drawn: a new draw would change every later field of existing soak seeds.
        thp_swap: true,
    }
}

/// `iaa`: the machine has IAA (deflate-iaa is a zswap compressor then).
pub fn sysfs(g: &mut Gen, version: Release, iaa: bool) -> Sysfs {
    let mthp = version.has(MmChange::AnonMthp);
    let mut hugepages = BTreeMap::new();
    for size in SIZES {
        if (mthp || size == "2M") && g.chance(35) {
            let enabled = g.pick(&ENABLED);
            if size != "8K" {
                hugepages.insert(size.to_string(), enabled);
            }
        }
    }
    let defrags: Vec<ThpDefrag> = if version.has(MmChange::ThpDefragDeferMadvise) {
        ThpDefrag::ALL.to_vec()
    } else {
        vec![ThpDefrag::Always, ThpDefrag::Madvise, ThpDefrag::Never]
    };
    let zswap_compressors: Vec<&str> = COMPRESSORS
        .iter()
        .copied()
        .filter(|c| iaa || *c != "deflate-iaa")
        .collect();
    Sysfs {
        thp_enabled: g.pick(&[ThpEnabled::Always, ThpEnabled::Madvise, ThpEnabled::Never]),
        hugepages,
        defrag: g.maybe(70, |g| g.pick(&defrags)),
        khugepaged: KhugepagedKnobs {
            defrag: g.maybe(30, |g| g.chance(50)),
            pages_to_scan: g.maybe(40, |g| g.pick(&[1, 64, 512, 4096])),
            scan_sleep_millisecs: g.maybe(50, |g| g.pick(&[0, 1, 10, 100])),
            alloc_sleep_millisecs: g.maybe(30, |g| g.pick(&[0, 1, 100])),
            max_ptes_none: g.maybe(30, |g| g.u32(0, 511)),
            max_ptes_swap: g.maybe(30, |g| g.u32(0, 511)),
            max_ptes_shared: g.maybe(30, |g| g.u32(0, 511)),
        },
        zswap: ZswapKnobs {
            enabled: g.chance(40),
            compressor: g.maybe(70, |g| g.pick(&zswap_compressors).to_string()),
            max_pool_percent: g.maybe(40, |g| g.u32(1, 100)),
            accept_threshold_percent: g.maybe(30, |g| g.u32(0, 100)),
            shrinker_enabled: g.maybe(40, |g| g.chance(50)),
        },
        zram: ZramKnobs {
            comp_algorithm: g
                .pick(&zswap_compressors[..zswap_compressors.len().min(6)])
                .into(),
        },
        numa: NumaKnobs {
            demotion_enabled: g.maybe(50, |g| g.chance(70)),
        },
        // Drawn by `lru_gen` from a stream of its own: a draw here would change every
        // generated scenario after it.
        shmem_enabled: Default::default(),
        hugepages_shmem: Default::default(),
        lru_gen: Default::default(),
    }
}

/// `[sysfs.lru_gen]`: MGLRU in about a third of the cases whose kernel has it, sometimes with
/// min_ttl_ms. `g` is a stream of its own, so the other draws of a seed stay as they were.
pub fn lru_gen(g: &mut Gen, version: Release) -> LruGenKnobs {
    if !version.has(MmChange::LruGen) || !g.chance(35) {
        return LruGenKnobs::default();
    }
    LruGenKnobs {
        enabled: Some(true),
        min_ttl_ms: g.maybe(30, |g| g.pick(&[0, 1, 100, 1000])),
    }
}

pub fn sysctl(g: &mut Gen, memory_bytes: u64) -> Sysctl {
    Sysctl {
        vm: VmSysctl {
            watermark_scale_factor: g.maybe(30, |g| g.u32(1, 3000)),
            watermark_boost_factor: g.maybe(30, |g| g.pick(&[0, 15000, 100_000])),
            min_free_kbytes: g.maybe(30, |g| g.range(0, memory_bytes / 1024 / 8)),
            extfrag_threshold: g.maybe(30, |g| g.u32(0, 1000)),
            compaction_proactiveness: g.maybe(30, |g| g.u32(0, 100)),
            compact_unevictable_allowed: g.maybe(20, |g| g.u32(0, 1)),
            swappiness: g.maybe(40, |g| g.u32(0, 200)),
            page_cluster: g.maybe(30, |g| g.u32(0, 5)),
        },
        kernel: KernelSysctl {
            numa_balancing: g.maybe(50, |g| g.pick(&[0, 2, 2])),
            numa_balancing_hot_threshold_ms: g.maybe(20, |g| g.pick(&[1, 100, 1000])),
            numa_balancing_promote_rate_limit_mbps: g.maybe(20, |g| g.pick(&[1, 100, 65536])),
            numa_balancing_scan_delay_ms: g.maybe(60, |g| g.pick(&[0, 1, 10, 1000])),
            numa_balancing_scan_period_min_ms: g.maybe(40, |g| g.pick(&[1, 10, 1000])),
            numa_balancing_scan_size_mb: g.maybe(30, |g| g.pick(&[1, 16, 256])),
        },
    }
}
