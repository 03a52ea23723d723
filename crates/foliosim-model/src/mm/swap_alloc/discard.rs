//! Discard of freed clusters on a `swapon --discard` SSD (SWP_PAGE_DISCARD): a cluster whose
//! last slot is freed waits on the discard list until the discard worker has trimmed it
//! (swap_do_scheduled_discard), then returns to the free list. An allocator that runs dry
//! waits for the pending discards instead of failing.

use super::cluster_lists::{ClusterLists, List};
use crate::engine::cost::CostModel;
use crate::engine::{Ctx, WaitKind};
use crate::mm::swapfile::SwapMap;
use std::collections::VecDeque;

#[derive(Default)]
pub struct DiscardQueue {
    /// (cluster, when its discard completes), in queueing order.
    pending: VecDeque<(u32, u64)>,
}

impl DiscardQueue {
    /// Queue `c` for discard; the device learns the range is unused (TRIM).
    pub fn queue(
        &mut self,
        lists: &mut ClusterLists,
        map: &mut SwapMap,
        c: u32,
        now_ns: u64,
        cost: &CostModel,
    ) {
        lists.move_to_tail(c, List::Discard);
        map.discarded_clusters.push(c);
        self.pending
            .push_back((c, now_ns + cost.swap_discard_cluster_ns));
    }

    /// The worker's finished discards go back to the free list.
    pub fn complete_ready(&mut self, lists: &mut ClusterLists, now_ns: u64) {
        while let Some(&(c, ready_ns)) = self.pending.front() {
            if ready_ns > now_ns {
                break;
            }
            self.pending.pop_front();
            lists.move_to_tail(c, lists.free_list_of(c));
        }
    }

    /// Wait for every pending discard (the caller sleeps until the last completes: the
    /// discard bios are waited for in io_schedule, so iowait). Returns false when there was
    /// none.
    pub fn run_all(&mut self, lists: &mut ClusterLists, ctx: &mut Ctx) -> bool {
        let Some(&(_, last_ns)) = self.pending.back() else {
            return false;
        };
        ctx.wait_until(last_ns, WaitKind::Io);
        self.complete_ready(lists, u64::MAX);
        true
    }
}
