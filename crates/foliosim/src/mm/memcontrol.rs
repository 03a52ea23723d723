//! Memory cgroups: charge against memory.max, reclaim from the cgroup's own LRU when over
//! (mm/memcontrol.c try_charge_memcg); memory.high's reclaim and throttling on the way back to
//! user space (mem_cgroup_handle_over_high); zswap's compressed bytes charged by the byte
//! (obj_cgroup_charge_zswap).

use super::folio::NIL;
use super::gfp::Gfp;
use super::lruvec::Lruvec;
use super::oom_kill::{current_is_dying, out_of_memory, OomConstraint};
use super::vmstat::{VmEvent, VmStat};
use super::{vmscan, Kernel};
use crate::engine::{Ctx, WaitKind};
use crate::scenario::{CgroupVersion, MemcgSpec, OomPolicy, PAGE_SIZE};
use std::collections::BTreeMap;

pub const ROOT_MEMCG: u16 = 0;
/// MAX_RECLAIM_RETRIES
const MAX_RECLAIM_RETRIES: u32 = 16;
/// PAGE_ALLOC_COSTLY_ORDER: charges up to this order retry for as long as reclaim progresses.
const PAGE_ALLOC_COSTLY_ORDER: u32 = 3;
/// MEMCG_CHARGE_BATCH: the nominal charge size of the over-high penalty, and how far a task
/// may go over memory.high before it reclaims inside the charge instead of on return to user.
pub const MEMCG_CHARGE_BATCH: u64 = 64;
/// CONFIG_HZ of the distribution kernels the seeds ran (250); a jiffy in ns.
pub const JIFFY_NS: u64 = 4_000_000;
pub const HZ: u64 = 250;
/// MEMCG_MAX_HIGH_DELAY_JIFFIES: the longest over-high sleep per return to user.
const MEMCG_MAX_HIGH_DELAY_JIFFIES: u64 = 2 * HZ;
const MEMCG_DELAY_PRECISION_SHIFT: u32 = 20;
const MEMCG_DELAY_SCALING_SHIFT: u32 = 14;

/// The events the kernel also counts per memcg (memcg_vm_event_stat; cgroup v2 memory.stat),
/// for the memcg whose LRU was scanned, whichever reclaim scanned it.
pub const MEMCG_EVENTS: [VmEvent; 16] = [
    VmEvent::Pgrefill,
    VmEvent::PgscanKswapd,
    VmEvent::PgscanDirect,
    VmEvent::PgscanKhugepaged,
    VmEvent::PgstealKswapd,
    VmEvent::PgstealDirect,
    VmEvent::PgstealKhugepaged,
    VmEvent::Pgactivate,
    VmEvent::Pgdeactivate,
    VmEvent::Pswpin,
    VmEvent::Pswpout,
    VmEvent::Zswpout,
    VmEvent::Zswpin,
    VmEvent::Zswpwb,
    VmEvent::SwpoutZero,
    VmEvent::SwpinZero,
];

pub struct MemCgroup {
    pub name: String,
    /// memory.max in pages; u64::MAX = unlimited.
    pub max_pages: u64,
    /// memory.high in pages; u64::MAX = none.
    pub high_pages: u64,
    /// memory.current in pages: folios plus zswap's compressed bytes rounded up to pages.
    pub usage_pages: u64,
    /// memory.stat `zswap` (MEMCG_ZSWAP_B): compressed bytes this memcg holds in zswap.
    pub zswap_bytes: u64,
    /// memory.stat `zswapped` (MEMCG_ZSWAPPED): pages this memcg holds in zswap.
    pub zswapped: u64,
    /// memory.zswap.max in bytes; u64::MAX = none.
    pub zswap_max_bytes: u64,
    /// memory.zswap.writeback
    pub zswap_writeback: bool,
    /// On the default (v2) hierarchy: only there is zswap charged to memcgs.
    pub on_dfl: bool,
    /// memory.events `high`: times a task had to reclaim because the memcg was above
    /// memory.high (counted in reclaim_high).
    pub events_high: u64,
    /// memory.events `oom`: times the memcg hit its limit and invoked the OOM killer
    /// (MEMCG_OOM, counted in mem_cgroup_oom).
    pub events_oom: u64,
    /// memory.events `oom_kill`: processes of this memcg the OOM killer killed
    /// (MEMCG_OOM_KILL), whichever limit ran out.
    pub events_oom_kill: u64,
    /// memory.events `oom_group_kill`: times memory.oom.group killed the memcg's processes.
    pub events_oom_group_kill: u64,
    /// memory.oom.group
    pub oom_group: bool,
    /// Node 0's LRU lists (the lists reclaim scans).
    pub lruvec: Lruvec,
    /// The LRU lists on nodes 1.. (`lower_lruvecs[n - 1]`), never reclaimed (mm/numa.rs).
    pub lower_lruvecs: Vec<Lruvec>,
    /// This memcg's own counts of [`MEMCG_EVENTS`].
    events: VmStat,
}

impl MemCgroup {
    /// mem_cgroup_lruvec(memcg, NODE_DATA(nid)).
    #[inline]
    pub fn lruvec_mut(&mut self, nid: usize) -> &mut Lruvec {
        if nid == 0 {
            &mut self.lruvec
        } else {
            &mut self.lower_lruvecs[nid - 1]
        }
    }

    /// Every node's lists, node 0's first.
    pub fn lruvecs(&self) -> impl Iterator<Item = &Lruvec> {
        std::iter::once(&self.lruvec).chain(self.lower_lruvecs.iter())
    }

    pub fn set_nr_nodes(&mut self, nr_nodes: usize) {
        self.lower_lruvecs = (1..nr_nodes).map(|_| Lruvec::new()).collect();
    }

    pub fn from_spec(spec: &MemcgSpec, cgroup: CgroupVersion) -> MemCgroup {
        MemCgroup {
            on_dfl: cgroup == CgroupVersion::V2,
            high_pages: spec.high.map_or(u64::MAX, |b| b.pages()),
            zswap_max_bytes: spec.zswap_max.map_or(u64::MAX, |b| b.0),
            zswap_writeback: spec.zswap_writeback,
            oom_group: spec.oom_group,
            ..MemCgroup::new(spec.name.clone(), spec.max.map(|b| b.pages()))
        }
    }

    pub fn new(name: String, max_pages: Option<u64>) -> MemCgroup {
        MemCgroup {
            name,
            max_pages: max_pages.unwrap_or(u64::MAX),
            high_pages: u64::MAX,
            usage_pages: 0,
            zswap_bytes: 0,
            zswapped: 0,
            zswap_max_bytes: u64::MAX,
            zswap_writeback: true,
            on_dfl: true,
            events_high: 0,
            events_oom: 0,
            events_oom_kill: 0,
            events_oom_group_kill: 0,
            oom_group: false,
            lruvec: Lruvec::new(),
            lower_lruvecs: Vec::new(),
            events: VmStat::default(),
        }
    }

    /// count_memcg_events: one of [`MEMCG_EVENTS`].
    pub fn count(&mut self, event: VmEvent, delta: u64) {
        debug_assert!(MEMCG_EVENTS.contains(&event), "{event:?} is not per memcg");
        self.events.count(event, delta);
    }

    /// memory.stat's event lines and zswap gauges of this memcg, memory.current and
    /// memory.events' `high`, under the kernel's names.
    pub fn stat_map(&self) -> BTreeMap<String, u64> {
        let mut m: BTreeMap<String, u64> = MEMCG_EVENTS
            .iter()
            .map(|e| (e.name().to_string(), self.events.get(*e)))
            .collect();
        m.insert("zswap".into(), self.zswap_bytes);
        m.insert("zswapped".into(), self.zswapped);
        m.insert("memory.current".into(), self.usage_pages * PAGE_SIZE);
        m.insert("memory.events.high".into(), self.events_high);
        m.insert("memory.events.oom".into(), self.events_oom);
        m.insert("memory.events.oom_kill".into(), self.events_oom_kill);
        m.insert(
            "memory.events.oom_group_kill".into(),
            self.events_oom_group_kill,
        );
        m
    }

    /// Pages the zswap bytes occupy in memory.current.
    pub fn zswap_charged_pages(&self) -> u64 {
        self.zswap_bytes.div_ceil(PAGE_SIZE)
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
/// flight waits for them (the throttle inside reclaim) and does not use up a retry. Out of
/// retries, a charge that may (not __GFP_RETRY_MAYFAIL, at most PAGE_ALLOC_COSTLY_ORDER)
/// invokes the memcg OOM killer, and retries afresh while it kills.
pub fn try_charge(k: &mut Kernel, ctx: &mut Ctx, memcg: u16, nr_pages: u64, gfp: Gfp) -> bool {
    let mut retries = MAX_RECLAIM_RETRIES;
    let mut drained = false;
    let mut passed_oom = false;
    loop {
        let cg = &mut k.memcgs[memcg as usize];
        if cg.margin() >= nr_pages {
            cg.usage_pages += nr_pages;
            note_over_high(k, ctx, memcg, nr_pages, gfp);
            return true;
        }
        if !gfp.allow_blocking() {
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
        if gfp.contains(Gfp::NORETRY) {
            return false;
        }
        if reclaimed > 0 && nr_pages <= 1 << PAGE_ALLOC_COSTLY_ORDER {
            continue;
        }
        if reclaimed == 0 && vmscan::reclaim_throttle(k, ctx) {
            continue;
        }
        if retries > 0 {
            retries -= 1;
            continue;
        }
        if gfp.contains(Gfp::RETRY_MAYFAIL) || (passed_oom && current_is_dying(k, ctx)) {
            return false;
        }
        let order = nr_pages.next_power_of_two().trailing_zeros();
        if !mem_cgroup_oom(k, ctx, memcg, order) {
            return false;
        }
        passed_oom = true;
        retries = MAX_RECLAIM_RETRIES;
    }
}

/// mem_cgroup_oom: the memcg OOM killer, for charges up to PAGE_ALLOC_COSTLY_ORDER (larger
/// ones fall back to smaller folios). True when a process was killed and the charge may
/// retry. (cgroup v1's memory.oom_control, oom_kill_disable, is not modelled.)
fn mem_cgroup_oom(k: &mut Kernel, ctx: &mut Ctx, memcg: u16, order: u32) -> bool {
    if order > PAGE_ALLOC_COSTLY_ORDER || k.oom.policy == OomPolicy::Fail {
        return false;
    }
    k.memcgs[memcg as usize].events_oom += 1;
    // mem_cgroup_out_of_memory
    out_of_memory(k, ctx, OomConstraint::Memcg(memcg))
}

/// After a charge: above memory.high, the task owes reclaim on its way back to user space
/// (set_notify_resume); one that has gone more than a batch over reclaims now if it may block.
/// As in the kernel, only a charge that refills the stock checks memory.high, and it bills the
/// task the whole batch (try_charge_memcg): one over-high reclaim per batch of small charges,
/// not one per page.
fn note_over_high(k: &mut Kernel, ctx: &mut Ctx, memcg: u16, nr_pages: u64, gfp: Gfp) {
    let mm = k.cpu_mm[ctx.cpu];
    if mm == NIL {
        return;
    }
    let m = &mut k.mms[mm as usize];
    if m.memcg_stock_pages >= nr_pages {
        m.memcg_stock_pages -= nr_pages;
        return;
    }
    let batch = nr_pages.max(MEMCG_CHARGE_BATCH);
    m.memcg_stock_pages = batch - nr_pages;
    let cg = &k.memcgs[memcg as usize];
    if cg.usage_pages <= cg.high_pages {
        return;
    }
    let owed = &mut k.mms[mm as usize].memcg_nr_pages_over_high;
    *owed += batch;
    if *owed > MEMCG_CHARGE_BATCH && gfp.allow_blocking() {
        mem_cgroup_handle_over_high(k, ctx);
    }
}

/// mem_cgroup_handle_over_high: the running task reclaims what it charged above memory.high;
/// while the memcg stays above, it retries as long as reclaim progresses (or 16 times), then
/// sleeps the penalty: quadratic in the overage, scaled by its share of the charges, at most
/// two seconds. The sleep is off-CPU (`WaitKind::Sleep`).
pub fn mem_cgroup_handle_over_high(k: &mut Kernel, ctx: &mut Ctx) {
    let mm = k.cpu_mm[ctx.cpu];
    if mm == NIL {
        return;
    }
    let nr_pages = std::mem::take(&mut k.mms[mm as usize].memcg_nr_pages_over_high);
    if nr_pages == 0 {
        return;
    }
    let memcg = k.mms[mm as usize].memcg;
    let mut retries = MAX_RECLAIM_RETRIES;
    let mut in_retry = false;
    loop {
        // reclaim_high: only while still above the limit.
        let cg = &k.memcgs[memcg as usize];
        let reclaimed = if cg.usage_pages > cg.high_pages {
            k.memcgs[memcg as usize].events_high += 1;
            let want = if in_retry {
                vmscan::SWAP_CLUSTER_MAX
            } else {
                nr_pages
            };
            vmscan::try_to_free_mem_cgroup_pages(k, ctx, memcg, want)
        } else {
            0
        };
        let cg = &k.memcgs[memcg as usize];
        let penalty_jiffies = high_delay_jiffies(cg.usage_pages, cg.high_pages, nr_pages)
            .min(MEMCG_MAX_HIGH_DELAY_JIFFIES);
        if penalty_jiffies <= HZ / 100 {
            return;
        }
        if reclaimed > 0 || retries > 0 {
            if reclaimed == 0 {
                retries -= 1;
            }
            in_retry = true;
            continue;
        }
        // schedule_timeout_killable: a sleep, not iowait.
        ctx.wait_until(ctx.now_ns + penalty_jiffies * JIFFY_NS, WaitKind::Sleep);
        return;
    }
}

/// calculate_high_delay for one memcg level.
fn high_delay_jiffies(usage: u64, high: u64, nr_pages: u64) -> u64 {
    if usage <= high {
        return 0;
    }
    let high = high.max(1) as u128;
    let overage = ((usage as u128 - high) << MEMCG_DELAY_PRECISION_SHIFT) / high;
    let penalty = (overage * overage * HZ as u128)
        >> (MEMCG_DELAY_PRECISION_SHIFT + MEMCG_DELAY_SCALING_SHIFT);
    (penalty * nr_pages as u128 / MEMCG_CHARGE_BATCH as u128) as u64
}

/// obj_cgroup_charge_zswap: `bytes` of a new zswap entry, charged even above the limits (the
/// store runs in reclaim, PF_MEMALLOC); memory.current grows by whole pages as bytes add up.
/// cgroup v1 charges nothing (measured here: a v1 memcg swaps out no more with zswap than
/// with zram alone, scenarios/validate/zswap-*).
pub fn zswap_charge(cg: &mut MemCgroup, bytes: u64) {
    if !cg.on_dfl {
        return;
    }
    let before = cg.zswap_charged_pages();
    cg.zswap_bytes += bytes;
    cg.zswapped += 1;
    cg.usage_pages += cg.zswap_charged_pages() - before;
}

/// obj_cgroup_uncharge_zswap: an entry of `bytes` was freed.
pub fn zswap_uncharge(cg: &mut MemCgroup, bytes: u64) {
    if !cg.on_dfl {
        return;
    }
    let before = cg.zswap_charged_pages();
    cg.zswap_bytes -= bytes;
    cg.zswapped -= 1;
    cg.uncharge(before - cg.zswap_charged_pages());
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_over_high_penalty_is_quadratic_in_the_overage_and_scaled_by_the_charge() {
        // 10% over: overage^2 * HZ >> 14 = 0.01 * 2^20 * 250 / 2^14 ~ 160 jiffies per batch.
        let high = 1_000_000;
        let p = high_delay_jiffies(high * 11 / 10, high, MEMCG_CHARGE_BATCH);
        assert!((150..=170).contains(&p), "{p}");
        assert_eq!(
            high_delay_jiffies(high * 11 / 10, high, 2 * MEMCG_CHARGE_BATCH),
            2 * p
        );
        assert!(high_delay_jiffies(high * 12 / 10, high, MEMCG_CHARGE_BATCH) > 3 * p);
        assert_eq!(high_delay_jiffies(high, high, MEMCG_CHARGE_BATCH), 0);
    }

    #[test]
    fn zswap_bytes_are_charged_in_whole_pages_as_they_add_up() {
        let mut cg = MemCgroup::new("t".into(), None);
        zswap_charge(&mut cg, 1000);
        assert_eq!(cg.usage_pages, 1);
        zswap_charge(&mut cg, 3000);
        assert_eq!(cg.usage_pages, 1);
        zswap_charge(&mut cg, 200);
        assert_eq!((cg.usage_pages, cg.zswapped), (2, 3));
        zswap_uncharge(&mut cg, 3000);
        assert_eq!(cg.usage_pages, 1);
        zswap_uncharge(&mut cg, 1000);
        zswap_uncharge(&mut cg, 200);
        assert_eq!((cg.usage_pages, cg.zswap_bytes, cg.zswapped), (0, 0, 0));
    }
}
