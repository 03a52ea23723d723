//! What compaction did differently before Mel Gorman's 5.1 rework ("Increase success rates and
//! reduce latency of compaction", 2019) and the changes of 4.4-4.12, for the 4.1 profile: one
//! switch per kernel change, so each can be read against the code it gates.

use crate::scenario::{MmChange, Release};

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct CompactionEra {
    /// 3.16-5.0 (compact_should_abort / compact_unlock_should_abort): async compaction stops
    /// when need_resched() (COMPACT_CONTENDED_SCHED), checked every SWAP_CLUSTER_MAX pfns;
    /// 5.1 dropped it ("do not consider a need to reschedule as contention").
    pub resched_aborts_async: bool,
    /// 5.1: fast_find_migrateblock and fast_isolate_freepages search the free lists first.
    pub fast_search: bool,
    /// 5.1: a direct compactor captures the block it freed (capture_control).
    pub capture: bool,
    /// 5.1: the async free scanner samples blocks that give nothing with a growing stride.
    pub free_stride: bool,
    /// After 4.3 (absent from 4.1-4.3's isolate_migratepages_block): async direct compaction
    /// abandons an order-aligned chunk at its first page that cannot be isolated.
    pub skip_on_failure: bool,
    /// 6.2 ("finish pageblocks on complete migration failure"): a pageblock migrated from is
    /// scanned to its end when the scanner comes back to it or a migration in it failed.
    pub finish_pageblock: bool,
    /// Before 4.12 (__compact_finished, "remove redundant watermark check"): the run goes on
    /// until the low watermark is met at the order, before looking for a free block.
    pub finish_at_low_watermark: bool,
}

impl CompactionEra {
    /// Each switch from its row of the release table.
    pub fn of(release: Release) -> CompactionEra {
        let rework_5_1 = release.has(MmChange::CompactionFastSearch);
        CompactionEra {
            resched_aborts_async: !rework_5_1,
            fast_search: rework_5_1,
            capture: rework_5_1,
            free_stride: rework_5_1,
            skip_on_failure: release.has(MmChange::CompactionSkipOnFailure),
            finish_pageblock: release.has(MmChange::CompactionFinishPageblock),
            finish_at_low_watermark: !release.has(MmChange::CompactionFinishAtFreeBlock),
        }
    }
}
