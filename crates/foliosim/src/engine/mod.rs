//! The ground floor: time in ns, the running context of a CPU, contended locks,
//! one cost model, seeded randomness. It knows nothing of mm or workloads (the scheduler that
//! dispatches their operations is `sched`, above mm). Nothing here reads a wall clock.

pub mod cost;
pub mod lock;
pub mod rng;

/// The running context of one step of one task: which CPU, and the task's time cursor. Every
/// cost the model charges advances `now_ns`; lock waits advance it too.
#[derive(Debug, Clone, Copy)]
pub struct Ctx {
    pub cpu: usize,
    pub now_ns: u64,
    /// When the current step started: no step still to run starts earlier.
    pub step_start_ns: u64,
    /// Cost a lock hold pays when the previous holder was another CPU (the cost model's
    /// lock_handoff_ns, carried here so every lock sees it).
    pub lock_handoff_ns: u64,
    /// Time the step asks to sleep off the CPU when it ends (a throttle, a penalty): the
    /// scheduler runs other tasks meanwhile and books it as neither user nor system time.
    pub sleep_ns: u64,
}

impl Ctx {
    #[inline]
    pub fn spend(&mut self, ns: u64) {
        self.now_ns += ns;
    }
}
