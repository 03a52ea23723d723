//! Memory cgroups: charge against memory.max, reclaim from the cgroup's own LRU when over
//! (mm/memcontrol.c try_charge_memcg).

use super::lruvec::Lruvec;
use super::{vmscan, Kernel};
use crate::engine::Ctx;

pub const ROOT_MEMCG: u16 = 0;
/// MAX_RECLAIM_RETRIES
const MAX_RECLAIM_RETRIES: u32 = 16;

pub struct MemCgroup {
    pub name: String,
    /// memory.max in pages; u64::MAX = unlimited.
    pub max_pages: u64,
    /// memory.current in pages.
    pub usage_pages: u64,
    pub lruvec: Lruvec,
}

impl MemCgroup {
    pub fn new(name: String, max_pages: Option<u64>) -> MemCgroup {
        MemCgroup {
            name,
            max_pages: max_pages.unwrap_or(u64::MAX),
            usage_pages: 0,
            lruvec: Lruvec::new(),
        }
    }

    pub fn uncharge(&mut self, nr_pages: u64) {
        assert!(
            self.usage_pages >= nr_pages,
            "memcg {} uncharge {nr_pages} below zero",
            self.name
        );
        self.usage_pages -= nr_pages;
    }

    fn margin(&self) -> u64 {
        self.max_pages.saturating_sub(self.usage_pages)
    }
}

/// try_charge_memcg: charge `nr_pages`, reclaiming from the memcg while over its limit.
/// `may_retry` is false for __GFP_NORETRY charges (large folios at fault): one reclaim pass,
/// then give up so the caller falls back to a smaller order.
pub fn try_charge(
    k: &mut Kernel,
    ctx: &mut Ctx,
    memcg: u16,
    nr_pages: u64,
    may_retry: bool,
) -> bool {
    let mut retries = if may_retry { MAX_RECLAIM_RETRIES } else { 1 };
    loop {
        let cg = &mut k.memcgs[memcg as usize];
        if cg.margin() >= nr_pages {
            cg.usage_pages += nr_pages;
            return true;
        }
        if retries == 0 {
            return false;
        }
        let reclaimed = vmscan::try_to_free_mem_cgroup_pages(k, ctx, memcg, nr_pages);
        // No progress because pages are still being written: wait for the writes, not a retry.
        if reclaimed > 0 || !(may_retry && vmscan::reclaim_throttle(k, ctx)) {
            retries -= 1;
        }
    }
}
