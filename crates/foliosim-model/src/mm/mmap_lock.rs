//! mmap_lock (include/linux/mmap_lock.h over kernel/locking/rwsem.c): the mm's reader/writer
//! semaphore. Faults and madvise take it for read, which costs nothing while no writer holds it
//! (readers never wait for each other); munmap, MADV_HUGEPAGE and khugepaged's collapse take it
//! for write, and the mm's faults that arrive meanwhile sleep until it is released.
//!
//! A step runs atomically, so a writer books its hold `[start, end)` in the lock when it takes
//! and releases it within its step; readers whose steps run later and arrive inside that window
//! sleep off the CPU until `end` (`Ctx::wait_until`, `WaitKind::Sleep`: an rwsem waiter sleeps,
//! it does not spin as `SimLock` waiters do). Only the latest write hold is remembered: writers
//! are rare (a collapse every few seconds at most), and a newer writer first waits for the one
//! in progress. Readers in progress do not delay a writer (their holds are not recorded, to keep
//! the fault path at one comparison); a fault's hold is a few µs against a collapse's hundreds.

use crate::engine::lock::LockStats;
use crate::engine::{Ctx, WaitKind};

#[derive(Debug, Clone, Default)]
pub struct MmapLock {
    /// The latest write hold, [start, end); end is u64::MAX while it is held.
    write_start_ns: u64,
    write_end_ns: u64,
    /// Write acquisitions, waits of readers and writers, and write hold time.
    pub stats: LockStats,
}

impl MmapLock {
    /// mmap_read_lock at `ctx.now_ns`: sleep until a write hold in progress ends.
    #[inline]
    pub fn read_lock(&mut self, ctx: &mut Ctx) {
        if ctx.now_ns < self.write_end_ns && ctx.now_ns >= self.write_start_ns {
            self.wait(ctx);
        }
    }

    #[cold]
    fn wait(&mut self, ctx: &mut Ctx) {
        let wait_ns = self.write_end_ns - ctx.now_ns;
        ctx.wait_until(self.write_end_ns, WaitKind::Sleep);
        let s = &mut self.stats;
        s.contended += 1;
        s.wait_ns_total += wait_ns;
        s.wait_ns_max = s.wait_ns_max.max(wait_ns);
    }

    /// mmap_write_lock at `ctx.now_ns` (after a write hold in progress); release it with
    /// `write_unlock` in the same step.
    pub fn write_lock(&mut self, ctx: &mut Ctx) {
        self.read_lock(ctx);
        self.write_start_ns = ctx.now_ns;
        self.write_end_ns = u64::MAX;
        self.stats.acquisitions += 1;
    }

    /// mmap_write_unlock at `ctx.now_ns`.
    pub fn write_unlock(&mut self, ctx: &Ctx) {
        debug_assert_eq!(
            self.write_end_ns,
            u64::MAX,
            "write_unlock without write_lock"
        );
        self.write_end_ns = ctx.now_ns;
        self.stats.hold_ns_total += ctx.now_ns - self.write_start_ns;
    }

    /// Is a write hold in progress at `now_ns`?
    pub fn write_locked_at(&self, now_ns: u64) -> bool {
        now_ns >= self.write_start_ns && now_ns < self.write_end_ns
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_reader_inside_a_write_hold_sleeps_until_its_end_and_others_pass() {
        let mut lock = MmapLock::default();
        let mut writer = Ctx::new(0, 1_000);
        lock.write_lock(&mut writer);
        writer.spend(500);
        lock.write_unlock(&writer);
        // Arrives during the hold: sleeps (not CPU time) until 1_500.
        let mut reader = Ctx::new(1, 1_200);
        lock.read_lock(&mut reader);
        assert_eq!((reader.now_ns, reader.sleep_ns), (1_500, 300));
        // Before and after the hold: no wait.
        for at in [900, 1_500] {
            let mut r = Ctx::new(1, at);
            lock.read_lock(&mut r);
            assert_eq!(r.now_ns, at);
        }
        assert_eq!(lock.stats.contended, 1);
        assert_eq!(lock.stats.hold_ns_total, 500);
        // A second writer arriving during the hold waits for it too.
        let mut w2 = Ctx::new(1, 1_100);
        lock.write_lock(&mut w2);
        assert_eq!(w2.now_ns, 1_500);
        lock.write_unlock(&w2);
    }
}
