//! The ground floor: time in ns, the running context of a CPU, contended locks,
//! one cost model, seeded randomness. It knows nothing of mm or workloads (the scheduler that
//! dispatches their operations is `sched`, above mm). Nothing here reads a wall clock.

pub mod arch;
pub mod cost;
pub mod huge_alloc;
pub mod ledger;
pub mod line;
pub mod lock;
pub mod prefetch;
pub mod rng;
pub mod trace;

pub use ledger::{CostId, CpuLedger};

/// Large blocks (the dense per-pfn arrays) in transparent huge pages: huge_alloc.rs. Defined
/// here, on the ground floor, so every binary above gets it exactly once.
#[global_allocator]
static ALLOC: huge_alloc::HugePageAlloc = huge_alloc::HugePageAlloc;

/// How a task waits off its CPU, as the kernel accounts the time.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum WaitKind {
    /// io_schedule(): waiting for a device (a swap-in read, a discard). Counted as iowait
    /// (the task's schedstat iowait_sum), neither user nor system time.
    Io,
    /// schedule() without in_iowait (memory.high throttling, reclaim_throttle): a plain
    /// sleep, counted nowhere but wall time.
    Sleep,
}

/// The running context of one step of one task: which CPU, and the task's time cursor. Every
/// cost the model charges advances `now_ns`; lock waits advance it too (spinlocks spin, on
/// the CPU). Waits that sleep (`wait_until`) advance it as well, but are recorded apart: the
/// scheduler gives the CPU to other tasks for that long.
#[derive(Debug, Clone, Copy)]
pub struct Ctx<'l> {
    pub cpu: usize,
    pub now_ns: u64,
    /// When the current step started: no step still to run starts earlier.
    pub step_start_ns: u64,
    /// Cost a lock hold pays when the previous holder was another CPU (the cost model's
    /// lock_handoff_ns, carried here so every lock sees it).
    pub lock_handoff_ns: u64,
    /// With a machine topology: the handoff cost by the previous holder's CPU and this one
    /// (replacing `lock_handoff_ns`); None keeps the flat cost.
    pub handoff: Option<&'static line::HandoffTable>,
    /// With a machine topology: one cache line's transfer by the last writer's CPU and this
    /// one, which a `line::SharedLine` pays; None (no topology) prices none.
    pub line: Option<&'static line::HandoffTable>,
    /// Time this step slept off the CPU (`WaitKind::Sleep`), included in `now_ns`.
    pub sleep_ns: u64,
    /// Time this step waited off the CPU for I/O (`WaitKind::Io`), included in `now_ns`.
    pub iowait_ns: u64,
    /// From when the scheduler wants the CPU back for another runnable task (TIF_NEED_RESCHED
    /// set by the tick at the end of the slice); u64::MAX when nothing else waits for it.
    pub resched_at_ns: u64,
    /// Where the CPU time charged in this context is booked, by bucket.
    pub ledger: &'l CpuLedger,
}

impl Ctx<'static> {
    /// A context at `now_ns` on `cpu` with nothing charged yet (tests, benches): its CPU time
    /// goes to a ledger of this thread's that no run reads.
    pub fn new(cpu: usize, now_ns: u64) -> Ctx<'static> {
        Ctx::with_ledger(cpu, now_ns, CpuLedger::scratch())
    }
}

impl<'l> Ctx<'l> {
    /// A context at `now_ns` on `cpu` with nothing charged yet, booking into `ledger`.
    pub fn with_ledger(cpu: usize, now_ns: u64, ledger: &'l CpuLedger) -> Ctx<'l> {
        Ctx {
            cpu,
            now_ns,
            step_start_ns: now_ns,
            lock_handoff_ns: 0,
            handoff: None,
            line: None,
            sleep_ns: 0,
            iowait_ns: 0,
            resched_at_ns: u64::MAX,
            ledger,
        }
    }

    /// need_resched(): another task waits for this CPU and this one's slice is over.
    #[inline]
    pub fn need_resched(&self) -> bool {
        self.now_ns >= self.resched_at_ns
    }

    /// Spend `ns` of CPU time on the work `what` names.
    #[inline]
    pub fn spend(&mut self, what: impl Into<CostId>, ns: u64) {
        self.now_ns += ns;
        self.ledger.add(what.into(), ns);
    }

    /// Stay on the CPU until `t_ns` (polling a device), the time booked to `what`; no-op when
    /// that is not in the future.
    #[inline]
    pub fn busy_until(&mut self, what: impl Into<CostId>, t_ns: u64) {
        if let Some(ns) = t_ns.checked_sub(self.now_ns) {
            self.spend(what, ns);
        }
    }

    /// Sleep off the CPU until `t_ns` (no-op when that is not in the future). The step goes on
    /// at `t_ns`; the scheduler books the wait by `kind`, not as CPU time, and lets other
    /// tasks use the CPU meanwhile.
    #[inline]
    pub fn wait_until(&mut self, t_ns: u64, kind: WaitKind) {
        let Some(wait_ns) = t_ns.checked_sub(self.now_ns) else {
            return;
        };
        self.now_ns = t_ns;
        match kind {
            WaitKind::Io => self.iowait_ns += wait_ns,
            WaitKind::Sleep => self.sleep_ns += wait_ns,
        }
    }

    /// Time of this step spent off the CPU, every kind.
    #[inline]
    pub fn off_cpu_ns(&self) -> u64 {
        self.sleep_ns + self.iowait_ns
    }
}
