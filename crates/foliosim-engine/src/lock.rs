//! A contended kernel lock on simulated CPUs (spinlock semantics: a waiter burns its CPU).
//!
//! A step runs atomically, so its lock holds are placed at the step's own future times. The lock
//! keeps a calendar of hold intervals: an acquirer waits only while a hold is in progress at
//! its arrival. Holds that end before the
//! earliest step still running (`Ctx::step_start_ns`) can no longer matter and are dropped.
//! The wait is what `perf lock contention` would report for this lock.

use super::{CostId, Ctx};
use serde::Serialize;
use std::collections::VecDeque;

#[derive(Debug, Clone, Default, Serialize, PartialEq, Eq)]
pub struct LockStats {
    pub acquisitions: u64,
    pub contended: u64,
    pub wait_ns_total: u64,
    pub wait_ns_max: u64,
    pub hold_ns_total: u64,
}

impl LockStats {
    /// Fold another lock instance's totals in (e.g. every ci->lock as one line).
    pub fn add(&mut self, other: &LockStats) {
        self.acquisitions += other.acquisitions;
        self.contended += other.contended;
        self.wait_ns_total += other.wait_ns_total;
        self.wait_ns_max = self.wait_ns_max.max(other.wait_ns_max);
        self.hold_ns_total += other.hold_ns_total;
    }
}

/// Where a lock's CPU time is booked: waiting for it (spinning), pulling it from another
/// CPU's cache (the handoff), and the work done holding it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct LockCosts {
    pub spin: CostId,
    pub handoff: CostId,
    pub held: CostId,
}

#[derive(Debug, Clone)]
pub struct SimLock {
    pub name: &'static str,
    pub costs: LockCosts,
    /// [start, end) holds with the holder's CPU, sorted by start.
    holds: Calendar,
    /// CPU of the latest hold booked (who has the lock's cache lines when the calendar is empty).
    last_cpu: Option<u32>,
    pub stats: LockStats,
}

impl SimLock {
    pub fn new(name: &'static str, costs: LockCosts) -> SimLock {
        SimLock {
            name,
            costs,
            holds: Calendar::default(),
            last_cpu: None,
            stats: LockStats::default(),
        }
    }

    /// How many holds start at or before `t_ns` (the calendar is sorted by start; most
    /// acquisitions come after every hold booked, so the last is checked first).
    #[inline]
    fn holds_starting_by(&self, t_ns: u64) -> usize {
        match self.holds.back() {
            Some(h) if h.start <= t_ns => self.holds.len(),
            _ => self.holds.starting_by(t_ns),
        }
    }

    /// Take the lock at `ctx.now_ns`, hold it for `hold_ns` of the caller's time, release.
    /// The caller waits for the hold in progress when it arrives (and any that start exactly as
    /// that one ends: the queue ahead of it); holds a step booked further in its future do not
    /// delay it, as a queued spinlock would have served the earlier arrival first.
    pub fn hold(&mut self, ctx: &mut Ctx, hold_ns: u64) {
        let (wait_ns, handoff_ns) = self.book(ctx, ctx.now_ns, hold_ns);
        ctx.spend(self.costs.spin, wait_ns);
        ctx.spend(self.costs.handoff, handoff_ns);
        ctx.spend(self.costs.held, hold_ns);
    }

    /// A hold across work the caller already spent, from `from_ns` to `ctx.now_ns`: booked
    /// from `from_ns`, the caller pays only the wait and the handoff on top.
    pub fn hold_spent_since(&mut self, ctx: &mut Ctx, from_ns: u64) {
        let (wait_ns, handoff_ns) = self.book(ctx, from_ns, ctx.now_ns - from_ns);
        ctx.spend(self.costs.spin, wait_ns);
        ctx.spend(self.costs.handoff, handoff_ns);
    }

    /// Put `hold` at position `i`. A CPU taking the lock again the moment it released it
    /// extends its hold instead: anyone arriving during either waits for the end of both
    /// alike, and a step taking the lock thousands of times in a row (scanning a full swap
    /// device's clusters) leaves one hold for later arrivals to wait behind, not thousands.
    fn place(&mut self, i: usize, hold: Hold) {
        if let Some(j) = i.checked_sub(1) {
            let previous = self.holds.get(j);
            if previous.cpu() == hold.cpu() && previous.end() == hold.start {
                self.holds.set_end(j, hold.end());
                return;
            }
        }
        self.holds.insert(i, hold);
        if i + 1 == self.holds.len() {
            self.last_cpu = Some(hold.cpu());
        }
    }

    /// Book a hold of `hold_ns` by `ctx.cpu` arriving at `at_ns` in the calendar; returns
    /// how long it waited and what the handoff added to the hold.
    fn book(&mut self, ctx: &Ctx, at_ns: u64, hold_ns: u64) -> (u64, u64) {
        // Every hold that can still delay someone is kept (no cap: a cap dropped holds a long
        // step booked ahead, and undercounted contention at 96 CPUs).
        while self
            .holds
            .front()
            .is_some_and(|h| h.end() <= ctx.step_start_ns)
        {
            self.holds.pop_front();
        }
        let mut start = at_ns;
        // Where the hold goes: after every hold starting by its start. Waiting moves `start`
        // to a hold's end, so the position only moves forward: from the second try on, the
        // holds after it are walked (the queue ahead is short) instead of searched again.
        let len = self.holds.len();
        let mut i = self.holds_starting_by(start);
        while let Some(end) = i.checked_sub(1).map(|j| self.holds.get(j).end()) {
            if end <= start {
                break;
            }
            start = end;
            i = match self.holds.walk_starting_by(i, start, 8) {
                Some(i) => i,
                None => self.holds_starting_by(start),
            };
            debug_assert!(i <= len);
        }
        // The lock word and the data it guards move from the previous holder's cache.
        let previous_cpu = i
            .checked_sub(1)
            .map(|j| self.holds.get(j).cpu())
            .or(self.last_cpu);
        let handoff_ns = match previous_cpu.filter(|&c| c != ctx.cpu as u32) {
            None => 0,
            // Flat without a topology; else by where the previous holder is (hw/contention.rs).
            Some(previous) => match ctx.handoff {
                None => ctx.lock_handoff_ns,
                Some(table) => table.ns(previous, ctx.cpu),
            },
        };
        let hold_ns = hold_ns + handoff_ns;
        if hold_ns > 0 {
            self.place(i, Hold::new(start, start + hold_ns, ctx.cpu as u32));
        }
        let wait_ns = start - at_ns;
        let s = &mut self.stats;
        s.acquisitions += 1;
        if wait_ns > 0 {
            super::trace::span("lock wait", self.name, at_ns, start);
            s.contended += 1;
            s.wait_ns_total += wait_ns;
            s.wait_ns_max = s.wait_ns_max.max(wait_ns);
        }
        s.hold_ns_total += hold_ns;
        (wait_ns, handoff_ns)
    }
}

/// A hold [start, end) and its CPU in 16 bytes (a busy lock's calendar at 128 CPUs holds tens
/// of millions): the end shares a word with the CPU (fewer than 1024 CPUs, by validation).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Hold {
    start: u64,
    end_cpu: u64,
}

impl Hold {
    const CPU_BITS: u32 = 10;
    const MAX_END_NS: u64 = (1 << (64 - Self::CPU_BITS)) - 1;

    #[inline]
    fn new(start: u64, end: u64, cpu: u32) -> Hold {
        assert!(cpu < 1 << Self::CPU_BITS, "CPU {cpu}: 1024 or more");
        // Past 2^54 ns the end saturates: the scheduler ends such a run after this step
        // (sched::MAX_SIM_NS), so no later acquisition reads it.
        let end = end.min(Self::MAX_END_NS);
        Hold {
            start,
            end_cpu: end << Self::CPU_BITS | cpu as u64,
        }
    }

    #[inline]
    fn end(self) -> u64 {
        self.end_cpu >> Self::CPU_BITS
    }

    #[inline]
    fn cpu(self) -> u32 {
        (self.end_cpu & ((1 << Self::CPU_BITS) - 1)) as u32
    }
}

/// A sorted sequence of holds as two deques, `left` then `right`, split where the last
/// insertion went (a gap buffer): after one step books many holds far ahead, the other CPUs
/// insert before them at slowly rising positions, each moving only the holds between its
/// position and the previous one instead of a deque's shorter side.
#[derive(Debug, Clone, Default)]
struct Calendar {
    left: VecDeque<Hold>,
    right: VecDeque<Hold>,
}

impl Calendar {
    #[inline]
    fn len(&self) -> usize {
        self.left.len() + self.right.len()
    }

    #[inline]
    fn front(&self) -> Option<&Hold> {
        self.left.front().or(self.right.front())
    }

    #[inline]
    fn back(&self) -> Option<Hold> {
        self.right.back().or(self.left.back()).copied()
    }

    #[inline]
    fn pop_front(&mut self) -> Option<Hold> {
        self.left.pop_front().or_else(|| self.right.pop_front())
    }

    #[inline]
    fn get(&self, i: usize) -> Hold {
        match self.left.get(i) {
            Some(&h) => h,
            None => self.right[i - self.left.len()],
        }
    }

    /// Move hold `i`'s end to `end` (its start stays, so the order holds).
    #[inline]
    fn set_end(&mut self, i: usize, end: u64) {
        let h = match self.left.len() {
            n if i < n => &mut self.left[i],
            n => &mut self.right[i - n],
        };
        *h = Hold::new(h.start, end, h.cpu());
    }

    /// How many holds start at or before `t_ns`.
    fn starting_by(&self, t_ns: u64) -> usize {
        // Most lookups land at the gap, where the last insertion went.
        let left_by = self.left.back().is_none_or(|h| h.start <= t_ns);
        let right_after = self.right.front().is_none_or(|h| h.start > t_ns);
        if left_by && right_after {
            return self.left.len();
        }
        // Otherwise the answer is usually near the gap: gallop away from it (the holds near
        // the gap are in cache; a binary search over the whole calendar would miss).
        match self.right.front() {
            Some(h) if h.start <= t_ns => {
                let n = self.right.len();
                // right[lo] starts by t_ns; find hi with right[hi] after it (or the end).
                let (mut lo, mut step) = (0, 1);
                let hi = loop {
                    let probe = lo + step;
                    if probe >= n {
                        break n;
                    }
                    if self.right[probe].start > t_ns {
                        break probe;
                    }
                    lo = probe;
                    step *= 2;
                };
                self.left.len() + Self::partition_in(&self.right, lo + 1, hi, t_ns)
            }
            _ => {
                let n = self.left.len();
                // left[n - back] starts after t_ns; find the first index known by t_ns.
                let (mut back, mut step) = (1, 1);
                let lo = loop {
                    let probe = back + step;
                    if probe > n {
                        break 0;
                    }
                    if self.left[n - probe].start <= t_ns {
                        break n - probe + 1;
                    }
                    back = probe;
                    step *= 2;
                };
                Self::partition_in(&self.left, lo, n - back, t_ns)
            }
        }
    }

    /// The first index in `lo..hi` of `holds` whose hold starts after `t_ns` (`hi` if none),
    /// knowing every hold before `lo` starts by it and every one from `hi` on after it.
    #[inline]
    fn partition_in(holds: &VecDeque<Hold>, mut lo: usize, mut hi: usize, t_ns: u64) -> usize {
        while lo < hi {
            let mid = lo + (hi - lo) / 2;
            if holds[mid].start <= t_ns {
                lo = mid + 1;
            } else {
                hi = mid;
            }
        }
        lo
    }

    /// How many holds start at or before `t_ns`, knowing the first `from` do: walks at most
    /// `max` holds past `from`, None if the answer lies further.
    #[inline]
    fn walk_starting_by(&self, from: usize, t_ns: u64, max: usize) -> Option<usize> {
        let len = self.len();
        let mut i = from;
        while i < len {
            if i == from + max {
                return None;
            }
            if self.get(i).start > t_ns {
                break;
            }
            i += 1;
        }
        Some(i)
    }

    /// Insert at position `i` (every hold before it starts no later).
    fn insert(&mut self, i: usize, hold: Hold) {
        if i == self.len() {
            match self.right.is_empty() {
                true => self.left.push_back(hold),
                false => self.right.push_back(hold),
            }
            return;
        }
        while self.left.len() > i {
            let h = self.left.pop_back().unwrap();
            self.right.push_front(h);
        }
        while self.left.len() < i {
            let h = self.right.pop_front().unwrap();
            self.left.push_back(h);
        }
        self.left.push_back(hold);
    }
}

#[cfg(test)]
pub(crate) const TEST_COSTS: LockCosts = LockCosts {
    spin: CostId(0),
    handoff: CostId(1),
    held: CostId(2),
};

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn calendar_matches_a_sorted_deque() {
        let (mut cal, mut plain) = (Calendar::default(), VecDeque::<Hold>::new());
        let mut x = 12345u64;
        for n in 0..20_000u32 {
            x = x
                .wrapping_mul(6364136223846793005)
                .wrapping_add(1442695040888963407);
            let t = (x >> 33) % 5_000 + n as u64 * 3;
            let i = plain.partition_point(|h| h.start <= t);
            assert_eq!(cal.starting_by(t), i);
            let from = i.saturating_sub((x >> 40) as usize % 12);
            if let Some(w) = cal.walk_starting_by(from, t, 8) {
                assert_eq!(w, i);
            }
            cal.insert(i, Hold::new(t, t + 7, n % 1024));
            plain.insert(i, Hold::new(t, t + 7, n % 1024));
            if x.is_multiple_of(3) {
                assert_eq!(cal.pop_front(), plain.pop_front());
            }
            assert_eq!(cal.len(), plain.len());
            assert_eq!(cal.back(), plain.back().copied());
            let j = (x >> 20) as usize % plain.len();
            assert_eq!(cal.get(j), plain[j]);
        }
    }

    #[test]
    fn second_holder_waits_for_the_first() {
        let mut lock = SimLock::new("test", TEST_COSTS);
        let mut a = Ctx {
            cpu: 0,
            now_ns: 100,
            step_start_ns: 0,
            lock_handoff_ns: 0,
            handoff: None,
            line: None,
            sleep_ns: 0,
            iowait_ns: 0,
            resched_at_ns: u64::MAX,
            ledger: crate::CpuLedger::scratch(),
        };
        let mut b = Ctx {
            cpu: 1,
            now_ns: 150,
            step_start_ns: 0,
            lock_handoff_ns: 0,
            handoff: None,
            line: None,
            sleep_ns: 0,
            iowait_ns: 0,
            resched_at_ns: u64::MAX,
            ledger: crate::CpuLedger::scratch(),
        };
        lock.hold(&mut a, 200);
        assert_eq!(a.now_ns, 300);
        lock.hold(&mut b, 50);
        assert_eq!(b.now_ns, 350, "b waits 150 ns then holds 50");
        assert_eq!(lock.stats.wait_ns_total, 150);
        assert_eq!(lock.stats.contended, 1);
        let mut c = Ctx {
            cpu: 0,
            now_ns: 1000,
            step_start_ns: 0,
            lock_handoff_ns: 0,
            handoff: None,
            line: None,
            sleep_ns: 0,
            iowait_ns: 0,
            resched_at_ns: u64::MAX,
            ledger: crate::CpuLedger::scratch(),
        };
        lock.hold(&mut c, 10);
        assert_eq!(lock.stats.contended, 1, "a late arrival does not wait");
    }

    #[test]
    fn an_early_arrival_is_not_blocked_by_a_later_hold() {
        let mut lock = SimLock::new("test", TEST_COSTS);
        // A long step already took the lock at 10_000.
        lock.hold(
            &mut Ctx {
                cpu: 0,
                now_ns: 10_000,
                step_start_ns: 0,
                lock_handoff_ns: 0,
                handoff: None,
                line: None,
                sleep_ns: 0,
                iowait_ns: 0,
                resched_at_ns: u64::MAX,
                ledger: crate::CpuLedger::scratch(),
            },
            100,
        );
        // Another CPU, earlier in time, fits in the gap before it.
        let mut early = Ctx {
            cpu: 1,
            now_ns: 500,
            step_start_ns: 0,
            lock_handoff_ns: 0,
            handoff: None,
            line: None,
            sleep_ns: 0,
            iowait_ns: 0,
            resched_at_ns: u64::MAX,
            ledger: crate::CpuLedger::scratch(),
        };
        lock.hold(&mut early, 100);
        assert_eq!(early.now_ns, 600);
        // One arriving while that hold is in progress waits for its end.
        let mut during = Ctx {
            cpu: 2,
            now_ns: 10_050,
            step_start_ns: 0,
            lock_handoff_ns: 0,
            handoff: None,
            line: None,
            sleep_ns: 0,
            iowait_ns: 0,
            resched_at_ns: u64::MAX,
            ledger: crate::CpuLedger::scratch(),
        };
        lock.hold(&mut during, 100);
        assert_eq!(during.now_ns, 10_200);
        assert_eq!(lock.stats.wait_ns_total, 50);
    }

    #[test]
    fn a_handoff_costs_what_the_table_says_for_the_previous_holder() {
        // CPUs 0 and 1 near (10 ns), 2 far (100 ns from either).
        let table =
            crate::line::HandoffTable::intern(3, |f, t| if f / 2 == t / 2 { 10 } else { 100 });
        let mut lock = SimLock::new("test", TEST_COSTS);
        let at = |cpu, now_ns| Ctx {
            lock_handoff_ns: 7,
            handoff: Some(table),
            ..Ctx::new(cpu, now_ns)
        };
        let mut c = at(0, 0);
        lock.hold(&mut c, 50);
        assert_eq!(c.now_ns, 50, "nobody held it before: no handoff");
        let mut c = at(0, 100);
        lock.hold(&mut c, 50);
        assert_eq!(c.now_ns, 150, "the same CPU again: no handoff");
        let mut c = at(1, 200);
        lock.hold(&mut c, 50);
        assert_eq!(c.now_ns, 260, "from a near CPU");
        let mut c = at(2, 300);
        lock.hold(&mut c, 50);
        assert_eq!(c.now_ns, 450, "from a far CPU");
        let mut flat = Ctx {
            lock_handoff_ns: 7,
            ..Ctx::new(0, 1000)
        };
        lock.hold(&mut flat, 50);
        assert_eq!(flat.now_ns, 1057, "no table: the flat cost");
    }
}
