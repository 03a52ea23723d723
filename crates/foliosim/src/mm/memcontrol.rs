//! Memory cgroups: charge against memory.max, reclaim from the cgroup's own LRU when over
//! (mm/memcontrol.c try_charge_memcg).

use super::gfp::Gfp;
use super::lruvec::Lruvec;
use super::vmstat::{VmEvent, VmStat};
use super::{vmscan, Kernel};
use crate::engine::Ctx;
use std::collections::BTreeMap;

pub const ROOT_MEMCG: u16 = 0;
/// MAX_RECLAIM_RETRIES
const MAX_RECLAIM_RETRIES: u32 = 16;
/// PAGE_ALLOC_COSTLY_ORDER: charges up to this order retry for as long as reclaim progresses.
const PAGE_ALLOC_COSTLY_ORDER: u32 = 3;

/// The events the kernel also counts per memcg (memcg_vm_event_stat; cgroup v2 memory.stat),
/// for the memcg whose LRU was scanned, whichever reclaim scanned it.
pub const MEMCG_EVENTS: [VmEvent; 4] = [
    VmEvent::PgscanDirect,
    VmEvent::PgstealDirect,
    VmEvent::Pgactivate,
    VmEvent::Pgdeactivate,
];

pub struct MemCgroup {
    pub name: String,
    /// memory.max in pages; u64::MAX = unlimited.
    pub max_pages: u64,
    /// memory.current in pages.
    pub usage_pages: u64,
    pub lruvec: Lruvec,
    /// This memcg's own counts of [`MEMCG_EVENTS`].
    events: VmStat,
}

impl MemCgroup {
    pub fn new(name: String, max_pages: Option<u64>) -> MemCgroup {
        MemCgroup {
            name,
            max_pages: max_pages.unwrap_or(u64::MAX),
            usage_pages: 0,
            lruvec: Lruvec::new(),
            events: VmStat::default(),
        }
    }

    /// count_memcg_events: one of [`MEMCG_EVENTS`].
    pub fn count(&mut self, event: VmEvent, delta: u64) {
        debug_assert!(MEMCG_EVENTS.contains(&event), "{event:?} is not per memcg");
        self.events.count(event, delta);
    }

    /// memory.stat's event lines of this memcg, under the kernel's names.
    pub fn stat_map(&self) -> BTreeMap<String, u64> {
        MEMCG_EVENTS
            .iter()
            .map(|e| (e.name().to_string(), self.events.get(*e)))
            .collect()
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

/// try_charge_memcg: charge `nr_pages`, reclaiming from the memcg while over its limit as far
/// as `gfp` allows. Without __GFP_DIRECT_RECLAIM a charge over the limit fails at once. With it:
/// reclaim, and if that left too little room, reclaim once more (the retry after draining the
/// per-CPU charge stocks, which the model does not have); __GFP_NORETRY gives up there. Small
/// charges (up to PAGE_ALLOC_COSTLY_ORDER) then retry while reclaim makes progress; others
/// retry MAX_RECLAIM_RETRIES times. A round that reclaimed nothing while swap writes are in
/// flight waits for them (the throttle inside reclaim) and does not use up a retry.
pub fn try_charge(k: &mut Kernel, ctx: &mut Ctx, memcg: u16, nr_pages: u64, gfp: Gfp) -> bool {
    let mut retries = MAX_RECLAIM_RETRIES;
    let mut drained = false;
    loop {
        let cg = &mut k.memcgs[memcg as usize];
        if cg.margin() >= nr_pages {
            cg.usage_pages += nr_pages;
            return true;
        }
        if !gfp.direct_reclaim {
            return false;
        }
        let reclaimed = vmscan::try_to_free_mem_cgroup_pages(k, ctx, memcg, nr_pages);
        if k.memcgs[memcg as usize].margin() >= nr_pages {
            continue;
        }
        if !drained {
            drained = true;
            continue;
        }
        if gfp.noretry {
            return false;
        }
        if reclaimed > 0 && nr_pages <= 1 << PAGE_ALLOC_COSTLY_ORDER {
            continue;
        }
        if reclaimed == 0 && vmscan::reclaim_throttle(k, ctx) {
            continue;
        }
        if retries == 0 {
            return false;
        }
        retries -= 1;
    }
}
