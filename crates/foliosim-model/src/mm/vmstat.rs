//! Event counters, declared once and printed under the kernel's names: /proc/vmstat
//! (include/linux/vm_event_item.h), the per-size mTHP stats
//! (/sys/kernel/mm/transparent_hugepage/hugepages-<size>kB/stats/*, include/linux/huge_mm.h)
//! and khugepaged's two sysfs counters (`khugepaged/pages_collapsed`, `khugepaged/full_scans`).

pub mod fold;

use crate::scenario::{PAGE_SIZE, PMD_ORDER};
use std::collections::BTreeMap;

macro_rules! counter_enum {
    ($vis:vis enum $ty:ident { $( $variant:ident => $name:literal, )* }) => {
        #[derive(Debug, Clone, Copy, PartialEq, Eq)]
        $vis enum $ty { $( $variant, )* }
        impl $ty {
            pub const ALL: &'static [$ty] = &[ $( $ty::$variant, )* ];
            pub const COUNT: usize = [$( $ty::$variant, )*].len();
            pub fn name(self) -> &'static str {
                match self { $( $ty::$variant => $name, )* }
            }
        }
    };
}

counter_enum! {
    pub enum VmEvent {
        Pgfault => "pgfault",
        Pgmajfault => "pgmajfault",
        Pswpin => "pswpin",
        Pswpout => "pswpout",
        PgscanDirect => "pgscan_direct",
        PgstealDirect => "pgsteal_direct",
        PgscanAnon => "pgscan_anon",
        PgstealAnon => "pgsteal_anon",
        Pgactivate => "pgactivate",
        Pgdeactivate => "pgdeactivate",
        // Refault detection (mm/workingset.rs).
        WorkingsetRefaultAnon => "workingset_refault_anon",
        WorkingsetRefaultFile => "workingset_refault_file",
        WorkingsetActivateAnon => "workingset_activate_anon",
        WorkingsetActivateFile => "workingset_activate_file",
        WorkingsetRestoreAnon => "workingset_restore_anon",
        WorkingsetRestoreFile => "workingset_restore_file",
        AllocstallNormal => "allocstall_normal",
        AllocstallMovable => "allocstall_movable",
        PgscanKswapd => "pgscan_kswapd",
        PgstealKswapd => "pgsteal_kswapd",
        Pageoutrun => "pageoutrun",
        PgallocNormal => "pgalloc_normal",
        Pgfree => "pgfree",
        CompactStall => "compact_stall",
        CompactFail => "compact_fail",
        CompactSuccess => "compact_success",
        // Compaction and migration (mm/compaction.rs, mm/migrate/).
        CompactMigrateScanned => "compact_migrate_scanned",
        CompactFreeScanned => "compact_free_scanned",
        CompactIsolated => "compact_isolated",
        CompactDaemonWake => "compact_daemon_wake",
        CompactDaemonMigrateScanned => "compact_daemon_migrate_scanned",
        CompactDaemonFreeScanned => "compact_daemon_free_scanned",
        PgmigrateSuccess => "pgmigrate_success",
        PgmigrateFail => "pgmigrate_fail",
        ThpMigrationSuccess => "thp_migration_success",
        ThpMigrationFail => "thp_migration_fail",
        ThpMigrationSplit => "thp_migration_split",
        // NUMA balancing and memory tiering (mm/numa_balancing.rs).
        NumaPteUpdates => "numa_pte_updates",
        NumaHintFaults => "numa_hint_faults",
        NumaHintFaultsLocal => "numa_hint_faults_local",
        NumaPagesMigrated => "numa_pages_migrated",
        PgpromoteSuccess => "pgpromote_success",
        PgpromoteCandidate => "pgpromote_candidate",
        PgdemoteKswapd => "pgdemote_kswapd",
        PgdemoteDirect => "pgdemote_direct",
        // MIGRC (mm/migrate/flush/migrc.rs): deferred flushes requested and done.
        MigrcRequested => "migrc_requested",
        MigrcFlushed => "migrc_flushed",
        ThpFaultAlloc => "thp_fault_alloc",
        ThpFaultFallback => "thp_fault_fallback",
        ThpFaultFallbackCharge => "thp_fault_fallback_charge",
        ThpSplitPage => "thp_split_page",
        ThpSplitPageFailed => "thp_split_page_failed",
        ThpSplitPmd => "thp_split_pmd",
        ThpSwpout => "thp_swpout",
        ThpSwpoutFallback => "thp_swpout_fallback",
        NrTlbRemoteFlush => "nr_tlb_remote_flush",
        NrTlbRemoteFlushReceived => "nr_tlb_remote_flush_received",
        NrTlbLocalFlushAll => "nr_tlb_local_flush_all",
        NrTlbLocalFlushOne => "nr_tlb_local_flush_one",
        OomKill => "oom_kill",
        Zswpout => "zswpout",
        Zswpin => "zswpin",
        Zswpwb => "zswpwb",
        SwpoutZero => "swpout_zero",
        SwpinZero => "swpin_zero",
        // Swap readahead (mm/swap_readahead.rs).
        SwapRa => "swap_ra",
        SwapRaHit => "swap_ra_hit",
        // khugepaged and the deferred split queue (mm/khugepaged.rs, mm/huge_memory/).
        ThpCollapseAlloc => "thp_collapse_alloc",
        ThpCollapseAllocFailed => "thp_collapse_alloc_failed",
        ThpDeferredSplitPage => "thp_deferred_split_page",
        ThpScanExceedNonePte => "thp_scan_exceed_none_pte",
        ThpScanExceedSwapPte => "thp_scan_exceed_swap_pte",
        ThpScanExceedSharedPte => "thp_scan_exceed_shared_pte",
        PgscanKhugepaged => "pgscan_khugepaged",
        PgstealKhugepaged => "pgsteal_khugepaged",
        SlabsScanned => "slabs_scanned",
        // /sys/kernel/mm/transparent_hugepage/khugepaged/{pages_collapsed,full_scans}.
        KhugepagedPagesCollapsed => "khugepaged/pages_collapsed",
        KhugepagedFullScans => "khugepaged/full_scans",
        // The page cache's (mm/filemap/), and reclaim of file folios. pgpgin/pgpgout are KiB
        // of block I/O, swap included; nr_dirtied, nr_written and
        // nr_vmscan_immediate_reclaim are the node's cumulative counters.
        Pgpgin => "pgpgin",
        Pgpgout => "pgpgout",
        PgscanFile => "pgscan_file",
        PgstealFile => "pgsteal_file",
        Pgrefill => "pgrefill",
        Pgrotated => "pgrotated",
        DropPagecache => "drop_pagecache",
        NrDirtied => "nr_dirtied",
        NrWritten => "nr_written",
        NrVmscanImmediateReclaim => "nr_vmscan_immediate_reclaim",
    }
}

counter_enum! {
    pub enum MthpStat {
        AnonFaultAlloc => "anon_fault_alloc",
        AnonFaultFallback => "anon_fault_fallback",
        AnonFaultFallbackCharge => "anon_fault_fallback_charge",
        Swpout => "swpout",
        Zswpout => "zswpout",
        SwpoutFallback => "swpout_fallback",
        // foliosim's own, in no kernel: folios kept whole on non-contiguous slots.
        SwpoutNoncontig => "swpout_noncontig",
        Swpin => "swpin",
        SwpinFallback => "swpin_fallback",
        SwpinFallbackCharge => "swpin_fallback_charge",
        Split => "split",
        SplitFailed => "split_failed",
        SplitDeferred => "split_deferred",
    }
}

/// The per-size directory name, e.g. order 4 -> "hugepages-64kB".
pub fn hugepages_dir(order: u32) -> String {
    format!("hugepages-{}kB", (PAGE_SIZE << order) / 1024)
}

/// Which counter a name of [`VmStat::to_map`] reads.
#[derive(Debug, Clone, Copy)]
enum Counter {
    Event(VmEvent),
    Mthp(u32, MthpStat),
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct VmStat {
    events: [u64; VmEvent::COUNT],
    /// Indexed by order; order 0 is never counted (as in the kernel).
    mthp: [[u64; MthpStat::COUNT]; PMD_ORDER as usize + 1],
}

impl Default for VmStat {
    fn default() -> Self {
        VmStat {
            events: [0; VmEvent::COUNT],
            mthp: [[0; MthpStat::COUNT]; PMD_ORDER as usize + 1],
        }
    }
}

impl VmStat {
    #[inline]
    pub fn count(&mut self, event: VmEvent, delta: u64) {
        self.events[event as usize] += delta;
    }

    #[inline]
    pub fn count_mthp(&mut self, order: u32, stat: MthpStat) {
        if order > 0 {
            self.mthp[order as usize][stat as usize] += 1;
        }
    }

    /// Fold another set of counters (the zone's) into these.
    pub fn add(&mut self, other: &VmStat) {
        for (a, b) in self.events.iter_mut().zip(other.events) {
            *a += b;
        }
        for (a, b) in self
            .mthp
            .iter_mut()
            .flatten()
            .zip(other.mthp.iter().flatten())
        {
            *a += b;
        }
    }

    pub fn get(&self, event: VmEvent) -> u64 {
        self.events[event as usize]
    }

    pub fn get_mthp(&self, order: u32, stat: MthpStat) -> u64 {
        self.mthp[order as usize][stat as usize]
    }

    /// Every counter under its kernel path: vmstat names bare, per-size as
    /// `hugepages-64kB/stats/swpout`. Sorted, so output order never depends on anything else.
    pub fn to_map(&self) -> BTreeMap<String, u64> {
        Self::names()
            .iter()
            .map(|(name, counter)| {
                let value = match *counter {
                    Counter::Event(e) => self.get(e),
                    Counter::Mthp(order, s) => self.get_mthp(order, s),
                };
                (name.clone(), value)
            })
            .collect()
    }

    /// Every counter's name, sorted (the map is built from them in one pass), formatted once
    /// per process: formatting and inserting them one by one was most of a mark's cost.
    fn names() -> &'static [(String, Counter)] {
        static NAMES: std::sync::OnceLock<Vec<(String, Counter)>> = std::sync::OnceLock::new();
        NAMES.get_or_init(|| {
            let mut names: Vec<(String, Counter)> = VmEvent::ALL
                .iter()
                .map(|&e| (e.name().to_string(), Counter::Event(e)))
                .collect();
            for order in 1..=PMD_ORDER {
                for &s in MthpStat::ALL {
                    let name = format!("{}/stats/{}", hugepages_dir(order), s.name());
                    names.push((name, Counter::Mthp(order, s)));
                }
            }
            // Stable: of equal names the last stays, as with inserts in this order.
            names.sort_by(|a, b| a.0.cmp(&b.0));
            names.dedup_by(|later, earlier| {
                let same = later.0 == earlier.0;
                if same {
                    std::mem::swap(later, earlier);
                }
                same
            });
            names
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_follow_the_kernel() {
        let mut v = VmStat::default();
        v.count(VmEvent::Pswpout, 16);
        v.count_mthp(4, MthpStat::Swpout);
        v.count_mthp(0, MthpStat::Swpout);
        let m = v.to_map();
        assert_eq!(m["pswpout"], 16);
        assert_eq!(m["hugepages-64kB/stats/swpout"], 1);
        assert_eq!(m["hugepages-2048kB/stats/swpout"], 0);
        assert!(
            !m.keys().any(|k| k.starts_with("hugepages-4kB")),
            "order 0 has no per-size stats"
        );
    }
}
