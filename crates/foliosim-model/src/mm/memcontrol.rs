//! Memory cgroups: a tree of memcgs whose charges count in every ancestor below the root
//! (page_counter.rs); a charge over a memory.max reclaims from the subtree of the lowest
//! ancestor it hit (mm/memcontrol.c try_charge_memcg), through the per-CPU charge stock
//! (stock.rs); memory.high's reclaim and throttling on the way back to user space, for every
//! ancestor over its high (mem_cgroup_handle_over_high); zswap's compressed bytes charged by
//! the byte (obj_cgroup_charge_zswap); swap charged against memory.swap.max (swap.rs).

pub mod page_counter;
pub mod stock;
pub mod swap;

use super::folio::NIL;
use super::gfp::Gfp;
use super::lruvec::Lruvec;
use super::oom_kill::{current_is_dying, out_of_memory, OomConstraint};
use super::vmstat::{VmEvent, VmStat};
use super::{vmscan, Kernel};
use crate::engine::{Ctx, WaitKind};
use crate::scenario::{CgroupVersion, MemcgSpec, OomPolicy, PAGE_SIZE};
use page_counter::Counter;
use std::collections::BTreeMap;

pub const ROOT_MEMCG: u16 = 0;
/// The root's parent.
pub const NO_PARENT: u16 = u16::MAX;
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
pub const MEMCG_EVENTS: [VmEvent; 22] = [
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
    VmEvent::WorkingsetRefaultAnon,
    VmEvent::WorkingsetRefaultFile,
    VmEvent::WorkingsetActivateAnon,
    VmEvent::WorkingsetActivateFile,
    VmEvent::WorkingsetRestoreAnon,
    VmEvent::WorkingsetRestoreFile,
];

/// memory.events (and memory.swap.events) entries, counted in the memcg and every ancestor
/// below the root (memcg_memory_event; cgroup v2 without memory_localevents).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum MemcgEvent {
    /// MEMCG_LOW: reclaim took from a memcg within its memory.low.
    Low,
    /// MEMCG_HIGH: a task reclaimed because the memcg was above memory.high.
    High,
    /// MEMCG_MAX: a charge hit memory.max and reclaim ran.
    Max,
    /// MEMCG_OOM: the memcg hit its limit and invoked the OOM killer.
    Oom,
    /// MEMCG_OOM_KILL: a process of this memcg was killed, whichever limit ran out.
    OomKill,
    /// MEMCG_OOM_GROUP_KILL: memory.oom.group killed the memcg's processes.
    OomGroupKill,
    /// MEMCG_SWAP_MAX: a swap charge hit memory.swap.max.
    SwapMax,
    /// MEMCG_SWAP_FAIL: a swap slot could not be charged.
    SwapFail,
}

impl MemcgEvent {
    pub const ALL: [MemcgEvent; 8] = [
        MemcgEvent::Low,
        MemcgEvent::High,
        MemcgEvent::Max,
        MemcgEvent::Oom,
        MemcgEvent::OomKill,
        MemcgEvent::OomGroupKill,
        MemcgEvent::SwapMax,
        MemcgEvent::SwapFail,
    ];

    /// The file and line it is read from.
    pub fn name(self) -> &'static str {
        match self {
            MemcgEvent::Low => "memory.events.low",
            MemcgEvent::High => "memory.events.high",
            MemcgEvent::Max => "memory.events.max",
            MemcgEvent::Oom => "memory.events.oom",
            MemcgEvent::OomKill => "memory.events.oom_kill",
            MemcgEvent::OomGroupKill => "memory.events.oom_group_kill",
            MemcgEvent::SwapMax => "memory.swap.events.max",
            MemcgEvent::SwapFail => "memory.swap.events.fail",
        }
    }
}

pub struct MemCgroup {
    pub name: String,
    /// The parent memcg; NO_PARENT for the root. A parent's id is below its children's.
    pub parent: u16,
    /// memory.min and memory.low in pages (0: none).
    pub min_pages: u64,
    pub low_pages: u64,
    /// Effective protection within the last reclaim that walked this memcg
    /// (page_counter's emin/elow).
    pub emin_pages: u64,
    pub elow_pages: u64,
    /// memory.swap.max in pages; u64::MAX = unlimited.
    pub swap_max_pages: u64,
    /// memory.swap.current in pages: swap slots charged to this memcg and its descendants.
    pub swap_usage_pages: u64,
    /// memory.max in pages; u64::MAX = unlimited.
    pub max_pages: u64,
    /// memory.high in pages; u64::MAX = none.
    pub high_pages: u64,
    /// memory.current in pages: folios plus zswap's compressed bytes rounded up to pages, plus
    /// the charge stock CPUs hold for it, plus its children's usage (the root: its own only).
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
    /// memory.events and memory.swap.events, indexed by [`MemcgEvent`].
    pub memory_events: [u64; MemcgEvent::ALL.len()],
    /// memory.oom.group
    pub oom_group: bool,
    /// The LRU lists per node (mem_cgroup_per_node's lruvec), indexed by nid.
    lruvecs: Vec<Lruvec>,
    /// This memcg's own counts of [`MEMCG_EVENTS`].
    events: VmStat,
}

impl MemCgroup {
    /// mem_cgroup_lruvec(memcg, NODE_DATA(nid)).
    #[inline]
    pub fn lruvec_mut(&mut self, nid: usize) -> &mut Lruvec {
        &mut self.lruvecs[nid]
    }

    /// mem_cgroup_lruvec(memcg, NODE_DATA(nid)), to read.
    #[inline]
    pub fn lruvec_of(&self, nid: usize) -> &Lruvec {
        &self.lruvecs[nid]
    }

    /// Every node's lists, in nid order.
    pub fn lruvecs(&self) -> impl Iterator<Item = &Lruvec> {
        self.lruvecs.iter()
    }

    /// Every node's lists, to change.
    pub fn lruvecs_mut(&mut self) -> impl Iterator<Item = &mut Lruvec> {
        self.lruvecs.iter_mut()
    }

    pub fn set_nr_nodes(&mut self, nr_nodes: usize) {
        self.lruvecs = (0..nr_nodes).map(|_| Lruvec::new()).collect();
    }

    pub fn from_spec(spec: &MemcgSpec, cgroup: CgroupVersion) -> MemCgroup {
        MemCgroup {
            on_dfl: cgroup == CgroupVersion::V2,
            high_pages: spec.high.map_or(u64::MAX, |b| b.pages()),
            zswap_max_bytes: spec.zswap_max.map_or(u64::MAX, |b| b.0),
            zswap_writeback: spec.zswap_writeback,
            oom_group: spec.oom_group,
            min_pages: spec.min.map_or(0, |b| b.pages()),
            low_pages: spec.low.map_or(0, |b| b.pages()),
            swap_max_pages: spec.swap_max.map_or(u64::MAX, |b| b.pages()),
            ..MemCgroup::new(spec.name.clone(), spec.max.map(|b| b.pages()))
        }
    }

    pub fn is_root(&self) -> bool {
        self.parent == NO_PARENT
    }

    /// memory.events / memory.swap.events count.
    pub fn event(&self, e: MemcgEvent) -> u64 {
        self.memory_events[e as usize]
    }

    pub fn new(name: String, max_pages: Option<u64>) -> MemCgroup {
        MemCgroup {
            name,
            parent: ROOT_MEMCG,
            min_pages: 0,
            low_pages: 0,
            emin_pages: 0,
            elow_pages: 0,
            swap_max_pages: u64::MAX,
            swap_usage_pages: 0,
            max_pages: max_pages.unwrap_or(u64::MAX),
            high_pages: u64::MAX,
            usage_pages: 0,
            zswap_bytes: 0,
            zswapped: 0,
            zswap_max_bytes: u64::MAX,
            zswap_writeback: true,
            on_dfl: true,
            memory_events: [0; MemcgEvent::ALL.len()],
            oom_group: false,
            lruvecs: vec![Lruvec::new()],
            events: VmStat::default(),
        }
    }

    /// count_memcg_events: one of [`MEMCG_EVENTS`].
    pub fn count(&mut self, event: VmEvent, delta: u64) {
        debug_assert!(MEMCG_EVENTS.contains(&event), "{event:?} is not per memcg");
        self.events.count(event, delta);
    }

    /// This memcg's own count of one of [`MEMCG_EVENTS`].
    pub fn vm_event(&self, event: VmEvent) -> u64 {
        self.events.get(event)
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
        m.insert(
            "memory.swap.current".into(),
            self.swap_usage_pages * PAGE_SIZE,
        );
        for e in MemcgEvent::ALL {
            m.insert(e.name().into(), self.event(e));
        }
        m
    }

    /// Pages the zswap bytes occupy in memory.current.
    pub fn zswap_charged_pages(&self) -> u64 {
        self.zswap_bytes.div_ceil(PAGE_SIZE)
    }

    /// mem_cgroup_margin: room below this memcg's own memory.max.
    fn margin(&self) -> u64 {
        self.max_pages.saturating_sub(self.usage_pages)
    }
}

/// The memcg tree in mem_cgroup_iter's order: pre-order, children in declaration order.
/// A memcg's subtree is a contiguous range of `preorder`.
#[derive(Debug, Clone, Default)]
pub struct MemcgTree {
    pub preorder: Vec<u16>,
    pos: Vec<usize>,
    end: Vec<usize>,
}

impl MemcgTree {
    pub fn new(memcgs: &[MemCgroup]) -> MemcgTree {
        let n = memcgs.len();
        let mut t = MemcgTree {
            preorder: Vec::with_capacity(n),
            pos: vec![0; n],
            end: vec![0; n],
        };
        // Children in id order; a depth-first walk without recursion (a chain of 65534
        // memcgs is as deep), linear in the number of memcgs.
        let mut children = vec![Vec::new(); n];
        for (c, cg) in memcgs.iter().enumerate() {
            if c as u16 != ROOT_MEMCG && cg.parent != NO_PARENT {
                children[cg.parent as usize].push(c as u16);
            }
        }
        if n == 0 {
            return t;
        }
        // (memcg, index of its next child to visit)
        let mut stack = vec![(ROOT_MEMCG, 0usize)];
        t.pos[ROOT_MEMCG as usize] = 0;
        t.preorder.push(ROOT_MEMCG);
        while let Some((id, next)) = stack.last_mut() {
            match children[*id as usize].get(*next) {
                Some(&c) => {
                    *next += 1;
                    t.pos[c as usize] = t.preorder.len();
                    t.preorder.push(c);
                    stack.push((c, 0));
                }
                None => {
                    t.end[*id as usize] = t.preorder.len();
                    stack.pop();
                }
            }
        }
        t
    }

    /// Indices into `preorder` of `memcg`'s subtree, itself first (mem_cgroup_iter).
    pub fn subtree(&self, memcg: u16) -> std::ops::Range<usize> {
        self.pos[memcg as usize]..self.end[memcg as usize]
    }

    /// mem_cgroup_is_descendant (a memcg is its own descendant).
    pub fn is_descendant(&self, memcg: u16, root: u16) -> bool {
        (memcg as usize) < self.pos.len() && self.subtree(root).contains(&self.pos[memcg as usize])
    }
}

/// Set each memcg's parent from the scenario (validated: parents come first).
pub fn link_parents(memcgs: &mut [MemCgroup], specs: &[MemcgSpec]) {
    memcgs[ROOT_MEMCG as usize].parent = NO_PARENT;
    // Ids by name, so that 65534 memcgs link in n log n.
    let ids: std::collections::BTreeMap<&str, u16> = specs
        .iter()
        .enumerate()
        .map(|(i, s)| (s.name.as_str(), 1 + i as u16))
        .collect();
    for (i, spec) in specs.iter().enumerate() {
        let parent = spec
            .parent
            .as_deref()
            .map_or(ROOT_MEMCG, |p| *ids.get(p).expect("validated parent"));
        memcgs[i + 1].parent = parent;
    }
}

/// memcg_memory_event: count `e` in the memcg and its ancestors below the root.
pub fn memcg_memory_event(k: &mut Kernel, memcg: u16, e: MemcgEvent) {
    let mut id = Some(memcg);
    while let Some(c) = id {
        let cg = &mut k.memcgs[c as usize];
        cg.memory_events[e as usize] += 1;
        id = (c != ROOT_MEMCG && cg.parent != ROOT_MEMCG).then_some(cg.parent);
    }
}

/// Uncharge `nr_pages` of memory from the memcg and its ancestors (memcg_uncharge, from
/// uncharge_batch: straight to the counters, not through the stock).
#[inline]
pub fn uncharge(k: &mut Kernel, ctx: &mut Ctx, memcg: u16, nr_pages: u64) {
    page_counter::uncharge(&mut k.memcgs, Counter::Memory, memcg, nr_pages);
    k.counter_lines.write_chain(ctx, &k.memcgs, memcg, None);
}

/// try_charge_memcg: charge `nr_pages` to the memcg and its ancestors, from this CPU's stock
/// when it holds enough, else a whole MEMCG_CHARGE_BATCH to the counters (the rest to the
/// stock), else exactly `nr_pages`. A charge over a memory.max counts memory.events `max` in
/// the lowest memcg it hit (mem_over_limit) and reclaims from that memcg's subtree as far as
/// `gfp` allows; without __GFP_DIRECT_RECLAIM it fails at once. If reclaim left too little
/// room, every CPU's stock of that subtree is drained and the charge retried; __GFP_NORETRY
/// gives up after that. Small charges (up to PAGE_ALLOC_COSTLY_ORDER) then retry while
/// reclaim makes progress; others retry MAX_RECLAIM_RETRIES times. A round that reclaimed
/// nothing while swap writes are in flight waits for them (the throttle inside reclaim) and
/// does not use up a retry. Out of retries, a charge that may (not __GFP_RETRY_MAYFAIL, at
/// most PAGE_ALLOC_COSTLY_ORDER) invokes the OOM killer for mem_over_limit, and retries
/// afresh while it kills. The root memcg is never limited: its count is its own folios.
// Out of line: inlined with its stock fast path it cost +80 M instructions (docs/speed.md).
#[inline(never)]
pub fn try_charge(k: &mut Kernel, ctx: &mut Ctx, memcg: u16, nr_pages: u64, gfp: Gfp) -> bool {
    if memcg == ROOT_MEMCG {
        k.memcgs[memcg as usize].usage_pages += nr_pages;
        return true;
    }
    // Two charges in three come from the stock: that path skips the retry loop's set-up.
    if k.memcg_stock.consume(ctx.cpu, memcg, nr_pages) {
        return true;
    }
    try_charge_counters(k, ctx, memcg, nr_pages, gfp)
}

/// try_charge after a miss in the stock: the page counters, reclaim and the retries.
#[inline(never)]
fn try_charge_counters(k: &mut Kernel, ctx: &mut Ctx, memcg: u16, nr_pages: u64, gfp: Gfp) -> bool {
    let mut batch = nr_pages.max(MEMCG_CHARGE_BATCH);
    let mut retries = MAX_RECLAIM_RETRIES;
    let mut drained = false;
    let mut passed_oom = false;
    // The caller looked at the stock for the first round.
    let mut stock_checked = true;
    loop {
        if !std::mem::take(&mut stock_checked) && k.memcg_stock.consume(ctx.cpu, memcg, nr_pages) {
            return true;
        }
        let charged = page_counter::try_charge(&mut k.memcgs, Counter::Memory, memcg, batch);
        let stop = charged.err();
        k.counter_lines.write_chain(ctx, &k.memcgs, memcg, stop);
        let over = match charged {
            Ok(()) => {
                if batch > nr_pages {
                    let drained =
                        k.memcg_stock
                            .refill(&mut k.memcgs, ctx.cpu, memcg, batch - nr_pages);
                    if let Some(drained) = drained {
                        k.counter_lines.write_chain(ctx, &k.memcgs, drained, None);
                    }
                }
                note_over_high(k, ctx, memcg, batch, gfp);
                return true;
            }
            Err(over) => over,
        };
        if batch > nr_pages {
            batch = nr_pages;
            continue;
        }
        if !gfp.allow_blocking() {
            return false;
        }
        memcg_memory_event(k, over, MemcgEvent::Max);
        let reclaimed = vmscan::try_to_free_mem_cgroup_pages(k, ctx, over, nr_pages);
        if k.memcgs[over as usize].margin() >= nr_pages {
            continue;
        }
        if !drained {
            drained = true;
            k.memcg_stock.drain_all(&mut k.memcgs, &k.memcg_tree, over);
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
        if !mem_cgroup_oom(k, ctx, over, order) {
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
    memcg_memory_event(k, memcg, MemcgEvent::Oom);
    // mem_cgroup_out_of_memory
    out_of_memory(k, ctx, OomConstraint::Memcg(memcg))
}

/// After a charge of `batch` pages reached the counters: if the memcg or an ancestor is
/// above memory.high, the task owes reclaim on its way back to user space
/// (set_notify_resume); one that has gone more than a batch over reclaims now if it may
/// block.
fn note_over_high(k: &mut Kernel, ctx: &mut Ctx, memcg: u16, batch: u64, gfp: Gfp) {
    let over_high = page_counter::charge_chain(&k.memcgs, memcg).any(|id| {
        let cg = &k.memcgs[id as usize];
        cg.usage_pages > cg.high_pages
    });
    if !over_high {
        return;
    }
    let mm = k.percpu[ctx.cpu].mm;
    if mm == NIL {
        return;
    }
    let owed = &mut k.mms[mm as usize].memcg_nr_pages_over_high;
    *owed += batch;
    if *owed > MEMCG_CHARGE_BATCH && gfp.allow_blocking() {
        mem_cgroup_handle_over_high(k, ctx);
    }
}

/// reclaim_high: reclaim from the memcg and each ancestor above its memory.high, counting
/// memory.events `high` for each.
fn reclaim_high(k: &mut Kernel, ctx: &mut Ctx, memcg: u16, nr_pages: u64) -> u64 {
    let mut reclaimed = 0;
    let mut id = Some(memcg);
    while let Some(c) = id {
        let cg = &k.memcgs[c as usize];
        if cg.usage_pages > cg.high_pages {
            memcg_memory_event(k, c, MemcgEvent::High);
            reclaimed += vmscan::try_to_free_mem_cgroup_pages(k, ctx, c, nr_pages);
        }
        let p = k.memcgs[c as usize].parent;
        id = (c != ROOT_MEMCG && p != ROOT_MEMCG).then_some(p);
    }
    reclaimed
}

/// mem_cgroup_handle_over_high: the running task reclaims what it charged above memory.high
/// (in its memcg and the ancestors over theirs); while one stays above, it retries as long
/// as reclaim progresses (or 16 times), then sleeps the penalty: quadratic in the largest
/// overage, scaled by its share of the charges, at most two seconds. The sleep is off-CPU
/// (`WaitKind::Sleep`).
#[inline]
pub fn mem_cgroup_handle_over_high(k: &mut Kernel, ctx: &mut Ctx) {
    let mm = k.percpu[ctx.cpu].mm;
    if mm == NIL {
        return;
    }
    let nr_pages = std::mem::take(&mut k.mms[mm as usize].memcg_nr_pages_over_high);
    if nr_pages == 0 {
        return;
    }
    reclaim_over_high(k, ctx, mm, nr_pages);
}

/// mem_cgroup_handle_over_high once the task owes `nr_pages`: out of line, as the check
/// above runs on every return to user space and finds nothing owed nearly every time.
#[inline(never)]
fn reclaim_over_high(k: &mut Kernel, ctx: &mut Ctx, mm: u32, nr_pages: u64) {
    let memcg = k.mms[mm as usize].memcg;
    let mut retries = MAX_RECLAIM_RETRIES;
    let mut in_retry = false;
    loop {
        let want = if in_retry {
            vmscan::SWAP_CLUSTER_MAX
        } else {
            nr_pages
        };
        let reclaimed = reclaim_high(k, ctx, memcg, want);
        // mem_find_max_overage
        let max_overage = page_counter::charge_chain(&k.memcgs, memcg)
            .map(|id| {
                let cg = &k.memcgs[id as usize];
                calculate_overage(cg.usage_pages, cg.high_pages)
            })
            .max()
            .unwrap_or(0);
        let penalty_jiffies =
            calculate_high_delay(nr_pages, max_overage).min(MEMCG_MAX_HIGH_DELAY_JIFFIES);
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

/// calculate_overage: how far usage is above high, in 2^-20 units of high.
fn calculate_overage(usage: u64, high: u64) -> u128 {
    if usage <= high {
        return 0;
    }
    let high = high.max(1) as u128;
    ((usage as u128 - high) << MEMCG_DELAY_PRECISION_SHIFT) / high
}

/// calculate_high_delay: the penalty for `nr_pages` charged over high.
fn calculate_high_delay(nr_pages: u64, max_overage: u128) -> u64 {
    let penalty = (max_overage * max_overage * HZ as u128)
        >> (MEMCG_DELAY_PRECISION_SHIFT + MEMCG_DELAY_SCALING_SHIFT);
    (penalty * nr_pages as u128 / MEMCG_CHARGE_BATCH as u128) as u64
}

#[cfg(test)]
fn high_delay_jiffies(usage: u64, high: u64, nr_pages: u64) -> u64 {
    calculate_high_delay(nr_pages, calculate_overage(usage, high))
}

/// obj_cgroup_charge_zswap: `bytes` of a new zswap entry, charged even above the limits (the
/// store runs in reclaim, PF_MEMALLOC); memory.current grows by whole pages as bytes add up,
/// in the memcg and its ancestors. cgroup v1 charges nothing (measured here: a v1 memcg swaps
/// out no more with zswap than with zram alone, scenarios/validate/zswap-*).
pub fn zswap_charge(memcgs: &mut [MemCgroup], memcg: u16, bytes: u64) {
    let cg = &mut memcgs[memcg as usize];
    if !cg.on_dfl {
        return;
    }
    let before = cg.zswap_charged_pages();
    cg.zswap_bytes += bytes;
    cg.zswapped += 1;
    let pages = cg.zswap_charged_pages() - before;
    page_counter::charge(memcgs, Counter::Memory, memcg, pages);
}

/// obj_cgroup_uncharge_zswap: an entry of `bytes` was freed.
pub fn zswap_uncharge(memcgs: &mut [MemCgroup], memcg: u16, bytes: u64) {
    let cg = &mut memcgs[memcg as usize];
    if !cg.on_dfl {
        return;
    }
    let before = cg.zswap_charged_pages();
    cg.zswap_bytes -= bytes;
    cg.zswapped -= 1;
    let pages = before - cg.zswap_charged_pages();
    // Through the obj stock in the kernel (per-CPU bytes): its page_counter atomics are
    // not priced.
    page_counter::uncharge(memcgs, Counter::Memory, memcg, pages);
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
    fn the_tree_is_walked_in_pre_order_whatever_the_declaration_order() {
        // root, a, b, a/c, b/d, a/e
        let mut cgs: Vec<MemCgroup> = (0..6)
            .map(|i| MemCgroup::new(format!("{i}"), None))
            .collect();
        cgs[0].parent = NO_PARENT;
        for (child, parent) in [(3, 1), (4, 2), (5, 1)] {
            cgs[child].parent = parent;
        }
        let t = MemcgTree::new(&cgs);
        assert_eq!(t.preorder, [0, 1, 3, 5, 2, 4]);
        let sub: Vec<u16> = t.subtree(1).map(|i| t.preorder[i]).collect();
        assert_eq!(sub, [1, 3, 5]);
        assert!(t.is_descendant(5, 1) && t.is_descendant(4, 0) && !t.is_descendant(4, 1));
        assert!(!t.is_descendant(u16::MAX, 0));
    }

    #[test]
    fn zswap_bytes_are_charged_in_whole_pages_as_they_add_up() {
        let mut cgs = vec![
            MemCgroup::new("/".into(), None),
            MemCgroup::new("t".into(), None),
        ];
        cgs[0].parent = NO_PARENT;
        zswap_charge(&mut cgs, 1, 1000);
        assert_eq!(cgs[1].usage_pages, 1);
        zswap_charge(&mut cgs, 1, 3000);
        assert_eq!(cgs[1].usage_pages, 1);
        zswap_charge(&mut cgs, 1, 200);
        assert_eq!((cgs[1].usage_pages, cgs[1].zswapped), (2, 3));
        zswap_uncharge(&mut cgs, 1, 3000);
        assert_eq!(cgs[1].usage_pages, 1);
        zswap_uncharge(&mut cgs, 1, 1000);
        zswap_uncharge(&mut cgs, 1, 200);
        let cg = &cgs[1];
        assert_eq!((cg.usage_pages, cg.zswap_bytes, cg.zswapped), (0, 0, 0));
        // The root is charged only its own.
        assert_eq!(cgs[0].usage_pages, 0);
    }
}
