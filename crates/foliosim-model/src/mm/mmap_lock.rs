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
//! in progress.
//!
//! As the kernel's rwsem, a writer also waits for the readers in progress at its arrival
//! (rwsem_down_write_slowpath sleeps until the count has no reader): the model keeps the read
//! hold that ends last (`read_unlock`), and the writer waits for it when it is in progress;
//! and readers arriving while the writer waits queue behind it (a waiting writer sets
//! RWSEM_FLAG_WAITERS and rwsem_down_read_slowpath queues them), so the write window starts
//! at its arrival. This is the rwsem's mechanism, not a hardware cost: every run has it.
//!
//! With a machine topology (`Ctx::line`) the count's line is also priced: every down_read and
//! down_write is an atomic on `sem->count` (rwsem_read_trylock's atomic_long_add_return,
//! rwsem_write_trylock's cmpxchg), one line with the owner field: it moves from the CPU that
//! last took the lock (`SharedLine`). The up_read at the end of the same step finds the line
//! still here and is not priced apart. Without a topology there is no price for it. (Since
//! 6.4 most faults take the VMA's lock instead, lock_vma_under_rcu; the model's faults take
//! the mmap_lock, so its line stands for both.)

use crate::cpu_cost::CpuCost;
use crate::engine::line::SharedLine;
use crate::engine::lock::LockStats;
use crate::engine::{Ctx, WaitKind};

#[derive(Debug, Clone, Default)]
pub struct MmapLock {
    /// The latest write window, [start, end) from the writer's arrival; end is u64::MAX
    /// while it is held.
    write_start_ns: u64,
    write_end_ns: u64,
    /// When the latest write hold was acquired (its hold time starts there).
    write_acquired_ns: u64,
    /// The read hold that ends last, [start, end): what an arriving writer waits for.
    read_start_ns: u64,
    read_end_ns: u64,
    /// `sem->count`'s cache line.
    count_line: SharedLine,
    /// Write acquisitions, waits of readers and writers, and write hold time.
    pub stats: LockStats,
    /// CPU time of the count line's transfers.
    pub line_ns: u64,
}

impl MmapLock {
    /// mmap_read_lock at `ctx.now_ns`: sleep until a write hold in progress ends.
    #[inline]
    pub fn read_lock(&mut self, ctx: &mut Ctx) {
        if ctx.now_ns < self.write_end_ns && ctx.now_ns >= self.write_start_ns {
            self.wait(ctx, self.write_end_ns);
        }
        if ctx.line.is_some() {
            self.line_ns += self.count_line.write(ctx, CpuCost::LineMmapCount.into());
        }
    }

    /// mmap_read_unlock at `ctx.now_ns` of a read hold taken at `start_ns` (writers arriving
    /// within it wait for it).
    #[inline]
    pub fn read_unlock(&mut self, ctx: &Ctx, start_ns: u64) {
        if ctx.now_ns > self.read_end_ns {
            self.read_start_ns = start_ns;
            self.read_end_ns = ctx.now_ns;
        }
    }

    #[cold]
    fn wait(&mut self, ctx: &mut Ctx, until_ns: u64) {
        let wait_ns = until_ns - ctx.now_ns;
        ctx.wait_until(until_ns, WaitKind::Sleep);
        let s = &mut self.stats;
        s.contended += 1;
        s.wait_ns_total += wait_ns;
        s.wait_ns_max = s.wait_ns_max.max(wait_ns);
    }

    /// mmap_write_lock at `ctx.now_ns` (after a write hold in progress and the read hold in
    /// progress); release it with `write_unlock` in the same step.
    pub fn write_lock(&mut self, ctx: &mut Ctx) {
        let arrival_ns = ctx.now_ns;
        if ctx.now_ns < self.write_end_ns && ctx.now_ns >= self.write_start_ns {
            self.wait(ctx, self.write_end_ns);
        }
        if ctx.now_ns < self.read_end_ns && ctx.now_ns >= self.read_start_ns {
            self.wait(ctx, self.read_end_ns);
        }
        if ctx.line.is_some() {
            self.line_ns += self.count_line.write(ctx, CpuCost::LineMmapCount.into());
        }
        self.write_start_ns = arrival_ns;
        self.write_acquired_ns = ctx.now_ns;
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
        self.stats.hold_ns_total += ctx.now_ns - self.write_acquired_ns;
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
        writer.spend(CpuCost::Test, 500);
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

    /// Two CPUs 100 ns apart.
    fn at(cpu: usize, now_ns: u64) -> Ctx<'static> {
        let table = crate::engine::line::HandoffTable::intern(2, |f, t| (f != t) as u32 * 100);
        Ctx {
            line: Some(table),
            ..Ctx::new(cpu, now_ns)
        }
    }

    #[test]
    fn with_a_topology_readers_bounce_the_count_line_and_a_writer_waits_for_them() {
        let mut lock = MmapLock::default();
        let mut r0 = at(0, 1_000);
        lock.read_lock(&mut r0);
        r0.spend(CpuCost::Test, 4_000);
        lock.read_unlock(&r0, 1_000);
        // Another CPU's reader pulls the line over; the same CPU's next one does not.
        let mut r1 = at(1, 2_000);
        lock.read_lock(&mut r1);
        assert_eq!(r1.now_ns, 2_100);
        lock.read_unlock(&r1, 2_000);
        let mut again = at(1, 2_200);
        lock.read_lock(&mut again);
        assert_eq!(again.now_ns, 2_200);
        // A writer arriving at 3_000 waits for the read hold to 5_000, then takes the line.
        let mut w = at(0, 3_000);
        lock.write_lock(&mut w);
        assert_eq!((w.now_ns, w.sleep_ns), (5_100, 2_000));
        w.spend(CpuCost::Test, 900);
        lock.write_unlock(&w);
        assert_eq!(lock.stats.hold_ns_total, 900);
        // A reader arriving while the writer waited queues behind it, to its release.
        let mut late = at(1, 4_000);
        lock.read_lock(&mut late);
        assert_eq!(late.now_ns, 6_000 + 100);
        assert_eq!(lock.line_ns, 300);
    }

    #[test]
    fn without_a_topology_a_writer_waits_for_readers_and_pays_no_line() {
        let mut lock = MmapLock::default();
        let mut r = Ctx::new(0, 1_000);
        lock.read_lock(&mut r);
        r.spend(CpuCost::Test, 4_000);
        lock.read_unlock(&r, 1_000);
        let mut w = Ctx::new(1, 3_000);
        lock.write_lock(&mut w);
        assert_eq!((w.now_ns, w.sleep_ns), (5_000, 2_000));
        lock.write_unlock(&w);
        // A reader that arrived while the writer waited queues behind it.
        let mut late = Ctx::new(0, 4_000);
        lock.read_lock(&mut late);
        assert_eq!(late.now_ns, 5_000);
        assert_eq!(lock.line_ns, 0);
    }
}
