//! struct compact_control: one compaction run's parameters, scanner positions, isolated
//! folios and isolated free pages.

use super::free_scanner::{compaction_alloc, compaction_free};
use super::{CompactPriority, MIN_COMPACT_PRIORITY};
use crate::engine::Ctx;
use crate::mm::config::KernelConfig;
use crate::mm::gfp::Gfp;
use crate::mm::migrate::{MigrateMode, MigrationTarget};
use crate::mm::page_alloc::buddy::NR_PAGE_ORDERS;
use crate::mm::page_alloc::migratetype::MigrateType;
use crate::mm::page_alloc::AllocFlags;
use crate::mm::Kernel;
use std::collections::VecDeque;

#[derive(Debug, Clone)]
pub struct CompactControl {
    /// The node of the zone compacted (cc->zone).
    pub nid: usize,
    /// The order compacted for; -1 for the whole zone (compact_memory, proactive).
    pub order: i32,
    /// gfp_migratetype of the request.
    pub migratetype: MigrateType,
    pub mode: MigrateMode,
    pub alloc_flags: AllocFlags,
    /// Direct compaction by an allocating task (not kcompactd, not compact_memory).
    pub direct_compaction: bool,
    /// Scan the whole zone (from its start, not the cached positions).
    pub whole_zone: bool,
    pub ignore_skip_hint: bool,
    pub ignore_block_suitable: bool,
    /// Scan the current pageblock to its end (a rescan after a migration failure).
    pub finish_pageblock: bool,
    pub proactive_compaction: bool,
    /// An async compactor waited for a lock (or, in 4.1, was asked to reschedule): stop.
    pub contended: Contended,
    /// The scanners' positions.
    pub migrate_pfn: u32,
    pub free_pfn: u32,
    /// Pages isolated to migrate, and free pages isolated to migrate them into.
    pub nr_migratepages: u32,
    pub nr_freepages: u32,
    /// Isolated folios (heads), ISOLATED and off their LRU.
    pub migratepages: Vec<u32>,
    /// Isolated free blocks by order (cc->freepages[]: isolation adds at the tail, allocation
    /// takes from the head), off the free lists.
    pub freepages: [VecDeque<u32>; NR_PAGE_ORDERS],
    pub total_migrate_scanned: u64,
    pub total_free_scanned: u64,
    /// The free-list searches' state: the order fast_isolate_freepages starts at, its
    /// failures in a row (which shorten both searches), and the lowest block
    /// fast_find_migrateblock found (0: none yet; u32::MAX: used up).
    pub search_order: i32,
    pub fast_search_fail: u32,
    pub fast_start_pfn: u32,
}

/// Why an async compaction stopped early (COMPACT_CONTENDED_* of 3.17-4.6).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Contended {
    None,
    /// It would have waited for a lock (zone->lock, the lru_lock).
    Lock,
    /// The scheduler wanted the CPU back (need_resched(); before 5.1 only).
    Sched,
}

impl Contended {
    pub fn is_contended(self) -> bool {
        self != Contended::None
    }
}

impl CompactControl {
    /// A control for `order` (-1: the whole zone) and a request of `gfp`, everything else off.
    pub fn new(nid: usize, order: i32, gfp: Gfp) -> CompactControl {
        CompactControl {
            nid,
            order,
            migratetype: gfp.migratetype(),
            mode: MigrateMode::Async,
            alloc_flags: AllocFlags::WMARK_MIN,
            direct_compaction: false,
            whole_zone: false,
            ignore_skip_hint: false,
            ignore_block_suitable: false,
            finish_pageblock: false,
            proactive_compaction: false,
            contended: Contended::None,
            migrate_pfn: 0,
            free_pfn: 0,
            nr_migratepages: 0,
            nr_freepages: 0,
            migratepages: Vec::new(),
            freepages: Default::default(),
            total_migrate_scanned: 0,
            total_free_scanned: 0,
            search_order: order,
            fast_search_fail: 0,
            fast_start_pfn: 0,
        }
    }

    /// compact_zone_order's control: direct compaction of node `nid`'s zone for a block of
    /// `order` at `prio` (async, or sync-light with the skip hints ignored at the lowest).
    pub fn direct(
        nid: usize,
        order: u32,
        gfp: Gfp,
        prio: CompactPriority,
        alloc_flags: AllocFlags,
    ) -> CompactControl {
        let mut cc = CompactControl::new(nid, order as i32, gfp);
        cc.mode = if prio == CompactPriority::Async {
            MigrateMode::Async
        } else {
            MigrateMode::SyncLight
        };
        cc.alloc_flags = alloc_flags;
        cc.direct_compaction = true;
        cc.whole_zone = prio == MIN_COMPACT_PRIORITY;
        cc.ignore_skip_hint = prio == MIN_COMPACT_PRIORITY;
        cc.ignore_block_suitable = prio == MIN_COMPACT_PRIORITY;
        cc
    }

    /// compact_unlock_should_abort / compact_should_abort (3.16-5.0): an async run stops when
    /// another task wants the CPU (CompactionEra::resched_aborts_async).
    pub fn should_abort(&mut self, cfg: &KernelConfig, ctx: &Ctx) -> bool {
        if cfg.compaction_era.resched_aborts_async
            && self.mode == MigrateMode::Async
            && ctx.need_resched()
        {
            self.contended = Contended::Sched;
            return true;
        }
        false
    }

    /// is_via_compact_memory: order -1 (compact_memory, proactive compaction).
    pub fn is_via_compact_memory(&self) -> bool {
        self.order < 0
    }

    /// freelist_scan_limit: how many free-list entries a search looks at, fewer after each
    /// failed search.
    pub fn freelist_scan_limit(&self) -> u32 {
        (super::COMPACT_CLUSTER_MAX >> self.fast_search_fail.min(31)) + 1
    }
}

/// compaction_alloc / compaction_free are migration's target callbacks.
impl MigrationTarget for CompactControl {
    fn alloc(&mut self, k: &mut Kernel, ctx: &mut Ctx, order: u32) -> Option<u32> {
        compaction_alloc(k, ctx, self, order)
    }

    fn free(&mut self, _k: &mut Kernel, _ctx: &mut Ctx, pfn: u32, order: u32) {
        compaction_free(self, pfn, order);
    }
}
