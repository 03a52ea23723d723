//! Hierarchical page counters (mm/page_counter.c): a charge counts in the memcg and every
//! ancestor below the root (the root memcg is never charged for its children; its count is
//! its own folios), and fails at the lowest ancestor it would take over its max. Also the
//! effective memory.min/low protection of a memcg within a reclaim's target. And the cache
//! lines of the counters' usage, which every charge and uncharge writes with an atomic
//! (`CounterLines`).

use super::{MemCgroup, NO_PARENT, ROOT_MEMCG};
use crate::cpu_cost::CpuCost;
use crate::engine::line::SharedLine;
use crate::engine::Ctx;

/// Which page_counter of a memcg: memory (memory.current/max) or swap (memory.swap.*).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Counter {
    Memory,
    Swap,
}

fn usage_max(cg: &mut MemCgroup, c: Counter) -> (&mut u64, u64) {
    match c {
        Counter::Memory => (&mut cg.usage_pages, cg.max_pages),
        Counter::Swap => (&mut cg.swap_usage_pages, cg.swap_max_pages),
    }
}

/// The memcg and its ancestors below the root, lowest first (the root alone for the root).
pub fn charge_chain(memcgs: &[MemCgroup], memcg: u16) -> impl Iterator<Item = u16> + '_ {
    std::iter::successors(Some(memcg), move |&c| {
        let p = memcgs[c as usize].parent;
        (c != ROOT_MEMCG && p != ROOT_MEMCG).then_some(p)
    })
}

/// page_counter_try_charge: Err(the lowest counter in the chain that `nr_pages` would take
/// over its max); nothing is charged then.
pub fn try_charge(
    memcgs: &mut [MemCgroup],
    c: Counter,
    memcg: u16,
    nr_pages: u64,
) -> Result<(), u16> {
    let over = charge_chain(memcgs, memcg).find(|&id| {
        let cg = &memcgs[id as usize];
        let (usage, max) = match c {
            Counter::Memory => (cg.usage_pages, cg.max_pages),
            Counter::Swap => (cg.swap_usage_pages, cg.swap_max_pages),
        };
        usage.saturating_add(nr_pages) > max
    });
    match over {
        Some(id) => Err(id),
        None => {
            charge(memcgs, c, memcg, nr_pages);
            Ok(())
        }
    }
}

/// page_counter_charge: charge up the chain even above max.
pub fn charge(memcgs: &mut [MemCgroup], c: Counter, memcg: u16, nr_pages: u64) {
    let mut id = Some(memcg);
    while let Some(cur) = id {
        *usage_max(&mut memcgs[cur as usize], c).0 += nr_pages;
        let p = memcgs[cur as usize].parent;
        id = (cur != ROOT_MEMCG && p != ROOT_MEMCG).then_some(p);
    }
}

/// page_counter_uncharge up the chain.
pub fn uncharge(memcgs: &mut [MemCgroup], c: Counter, memcg: u16, nr_pages: u64) {
    let mut id = Some(memcg);
    while let Some(cur) = id {
        let cg = &mut memcgs[cur as usize];
        let usage = usage_max(cg, c).0;
        match usage.checked_sub(nr_pages) {
            Some(left) => *usage = left,
            None => panic!("memcg {} {c:?} uncharge {nr_pages} below zero", cg.name),
        }
        let p = memcgs[cur as usize].parent;
        id = (cur != ROOT_MEMCG && p != ROOT_MEMCG).then_some(p);
    }
}

/// The usage line of each memcg's memory page_counter, by memcg id. page_counter_charge,
/// _try_charge and _uncharge do an atomic_long_add_return on `c->usage` of the memcg and of
/// every ancestor up to the root's counter (which limits nothing but counts every charge
/// below it: the one line all memcgs share); the counter is cache-line aligned, so each is a
/// line of its own. A charge that hits a max adds and cancels up to the counter that failed.
/// The root memcg's own folios write none (try_charge and memcg_uncharge return early for
/// it). Priced only with a topology (`Ctx::line`).
#[derive(Debug, Clone)]
pub struct CounterLines {
    memory: Vec<SharedLine>,
    /// CPU time the transfers cost, for the report.
    pub transfer_ns: u64,
}

impl CounterLines {
    pub fn new(nr_memcgs: usize) -> CounterLines {
        CounterLines {
            memory: vec![SharedLine::default(); nr_memcgs],
            transfer_ns: 0,
        }
    }

    /// The atomics of one charge or uncharge of `memcg`'s memory counter, from it up to the
    /// root's, or up to `stop` (the counter a failed try_charge stopped at).
    #[inline]
    pub fn write_chain(
        &mut self,
        ctx: &mut Ctx,
        memcgs: &[MemCgroup],
        memcg: u16,
        stop: Option<u16>,
    ) {
        if ctx.line.is_none() || memcg == ROOT_MEMCG {
            return;
        }
        let mut id = memcg;
        loop {
            self.transfer_ns +=
                self.memory[id as usize].write(ctx, CpuCost::LinePageCounter.into());
            let parent = memcgs[id as usize].parent;
            if Some(id) == stop || parent == NO_PARENT {
                break;
            }
            id = parent;
        }
    }
}

/// effective_protection (mm/page_counter.c): what of `setting` (memory.min or memory.low) a
/// memcg using `usage` pages keeps, given its parent's effective protection and what all the
/// siblings claim and use (`siblings_protected`): their share in proportion to use when they
/// claim more than the parent affords. With `recursive` (the memory_recursiveprot mount
/// option) a share of the parent's unclaimed protection goes to the unprotected usage.
pub fn effective_protection(
    usage: u64,
    parent_usage: u64,
    setting: u64,
    parent_effective: u64,
    siblings_protected: u64,
    recursive: bool,
) -> u64 {
    let protected = usage.min(setting);
    if siblings_protected > parent_effective {
        return (protected as u128 * parent_effective as u128 / siblings_protected as u128) as u64;
    }
    let mut ep = protected;
    if recursive
        && parent_effective > siblings_protected
        && parent_usage > siblings_protected
        && usage > protected
    {
        let unclaimed = (parent_effective - siblings_protected) as u128
            * (usage - protected) as u128
            / (parent_usage - siblings_protected) as u128;
        ep += unclaimed as u64;
    }
    ep
}

/// page_counter_calculate_protection: memcg's emin/elow within a reclaim of `root` (the
/// target memcg, or the root memcg for global reclaim). The target's own values are left
/// stale (never used); so are an empty memcg's. Call parents first (pre-order).
pub fn calculate_protection(memcgs: &mut [MemCgroup], root: u16, memcg: u16, recursive: bool) {
    if memcg == root || memcg == ROOT_MEMCG {
        return;
    }
    let cg = &memcgs[memcg as usize];
    let usage = cg.usage_pages;
    if usage == 0 {
        return;
    }
    let parent = cg.parent;
    if parent == root {
        let (min, low) = (cg.min_pages, cg.low_pages);
        let cg = &mut memcgs[memcg as usize];
        cg.emin_pages = min;
        cg.elow_pages = low;
        return;
    }
    // propagate_protected_usage's children_min_usage / children_low_usage of the parent.
    let (mut children_min, mut children_low) = (0u64, 0u64);
    for c in memcgs.iter().filter(|c| c.parent == parent && !c.is_root()) {
        children_min += c.usage_pages.min(c.min_pages);
        children_low += c.usage_pages.min(c.low_pages);
    }
    let p = &memcgs[parent as usize];
    let (parent_usage, parent_emin, parent_elow) = (p.usage_pages, p.emin_pages, p.elow_pages);
    let cg = &memcgs[memcg as usize];
    let emin = effective_protection(
        usage,
        parent_usage,
        cg.min_pages,
        parent_emin,
        children_min,
        recursive,
    );
    let elow = effective_protection(
        usage,
        parent_usage,
        cg.low_pages,
        parent_elow,
        children_low,
        recursive,
    );
    let cg = &mut memcgs[memcg as usize];
    cg.emin_pages = emin;
    cg.elow_pages = elow;
}

/// mem_cgroup_unprotected: the root and the reclaim's own target get no protection.
fn unprotected(target: u16, memcg: u16) -> bool {
    memcg == ROOT_MEMCG || memcg == target
}

/// mem_cgroup_below_min: within its effective memory.min (hard protection).
pub fn below_min(memcgs: &[MemCgroup], target: u16, memcg: u16) -> bool {
    let cg = &memcgs[memcg as usize];
    !unprotected(target, memcg) && cg.emin_pages >= cg.usage_pages
}

/// mem_cgroup_below_low: within its effective memory.low.
pub fn below_low(memcgs: &[MemCgroup], target: u16, memcg: u16) -> bool {
    let cg = &memcgs[memcg as usize];
    !unprotected(target, memcg) && cg.elow_pages >= cg.usage_pages
}

/// mem_cgroup_protection: the protection get_scan_count scales a memcg's scan by; only
/// memory.min once reclaim has had to break into memory.low.
pub fn protection(memcgs: &[MemCgroup], target: u16, memcg: u16, in_low_reclaim: bool) -> u64 {
    if unprotected(target, memcg) {
        return 0;
    }
    let cg = &memcgs[memcg as usize];
    if in_low_reclaim {
        cg.emin_pages
    } else {
        cg.emin_pages.max(cg.elow_pages)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::engine::line::HandoffTable;

    #[test]
    fn a_charge_writes_its_chain_up_to_the_root_and_a_failed_one_up_to_the_failure() {
        // root <- a <- b; CPUs 0 and 1, 100 ns apart.
        let mut memcgs: Vec<MemCgroup> = (0..3)
            .map(|i| MemCgroup::new(format!("{i}"), None))
            .collect();
        memcgs[0].parent = NO_PARENT;
        memcgs[1].parent = 0;
        memcgs[2].parent = 1;
        let table = HandoffTable::intern(2, |f, t| if f == t { 0 } else { 100 });
        let at = |cpu| Ctx {
            line: Some(table),
            ..Ctx::new(cpu, 0)
        };
        let mut lines = CounterLines::new(3);
        let (mut c0, mut c1) = (at(0), at(1));
        lines.write_chain(&mut c0, &memcgs, 2, None);
        assert_eq!(c0.now_ns, 0, "first writer of each line");
        lines.write_chain(&mut c1, &memcgs, 2, None);
        assert_eq!(c1.now_ns, 300, "b, a and the root's line");
        lines.write_chain(&mut c0, &memcgs, 2, Some(1));
        assert_eq!(c0.now_ns, 200, "b and a, where the charge failed");
        lines.write_chain(&mut c0, &memcgs, 0, None);
        assert_eq!(c0.now_ns, 200, "the root memcg's own charge: no atomic");
        assert_eq!(lines.transfer_ns, 500);
        // Without a topology: nothing.
        let mut flat = Ctx::new(1, 0);
        lines.write_chain(&mut flat, &memcgs, 2, None);
        assert_eq!(flat.now_ns, 0);
    }

    #[test]
    fn siblings_claiming_more_than_the_parent_affords_share_it_by_use() {
        // Parent protected 100; children claim 100 and 50 of what they use: 2/3 and 1/3.
        assert_eq!(effective_protection(200, 300, 100, 100, 150, false), 66);
        assert_eq!(effective_protection(100, 300, 50, 100, 150, false), 33);
        // Within what the parent affords: each keeps min(usage, setting).
        assert_eq!(effective_protection(40, 300, 50, 100, 90, false), 40);
        // Recursive protection hands the unclaimed 60 to the unprotected usage.
        assert_eq!(effective_protection(100, 200, 0, 100, 40, true), 37);
    }
}
