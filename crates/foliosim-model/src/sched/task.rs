//! A task: a user process running a workload's operations, or a kernel thread running an mm
//! body. Both are scheduled, accounted and reported alike.

use super::queue::{nice_to_weight, NICE_0_LOAD};
use crate::mm::folio::NIL;
use crate::mm::kthread::KthreadKind;
use crate::mm::preempt::TaskResume;
use crate::workload::{empty_marks, Op, TaskMarks};

/// What a task runs.
pub enum Body {
    User(UserProgram),
    Kernel(KthreadKind),
}

/// A user task's program and its progress.
pub struct UserProgram {
    pub workload: usize,
    pub(super) ops: Vec<Op>,
    pub(super) pc: usize,
    /// Progress inside the current Touch op, in pages.
    pub(super) cursor: u32,
    /// Progress inside the current Compute op.
    pub(super) computed_ns: u64,
    pub marks: TaskMarks,
    /// Start of the current timed section (Op::TimerStart).
    pub(super) timer_start_ns: u64,
    /// What the last Op::Mincore found.
    pub(super) mincore_resident: bool,
    /// Latency samples (series, ns) recorded by Op::RecordLatency, in order.
    pub latencies: Vec<(u8, u64)>,
    /// Progress inside the current Access op, and the cost of its last access.
    pub(super) accessed: u64,
    pub(super) ns_per_access: f64,
    /// The TLB hot set (Op::TlbHotSet), and the random stream of the task's accesses.
    pub(super) hot_set: Option<crate::hw::tlb_cache::HotSet>,
    pub(super) rng: Option<crate::engine::rng::SimRng>,
}

impl UserProgram {
    /// The op the task runs next (None once past the last), and how far into it a Touch or
    /// a read is (pages): for debugging a run step by step from a `RunObserver`.
    pub fn current_op(&self) -> (Option<&Op>, u32) {
        (self.ops.get(self.pc), self.cursor)
    }
}

/// Where a task is, for the scheduler.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum State {
    Runnable,
    Running,
    /// Asleep until a known time (an I/O wait, a throttle): in the sleepers list.
    Sleeping,
    /// A kernel thread asleep until woken or its timer: in the sleepers list.
    TimedWait,
    /// A kernel thread asleep until woken.
    Waiting,
    /// A user task asleep at a barrier until the last party arrives.
    AtBarrier,
    Exited,
}

pub struct Task {
    pub name: String,
    /// The task's mm; NIL for a kernel thread.
    pub mm: u32,
    pub body: Body,
    /// CPU time in user space (Compute ops) and in the kernel (everything else, lock spinning
    /// included), as getrusage would split it. A kernel thread has system time only.
    pub user_ns: u64,
    pub sys_ns: u64,
    /// Time asleep off the CPU waiting for I/O (schedstat's iowait_sum).
    pub iowait_ns: u64,
    /// Time asleep off the CPU otherwise (memory.high throttling, reclaim_throttle), timer
    /// and idle waits of kernel threads excluded.
    pub sleep_ns: u64,
    /// Times the task went from asleep to runnable (woken, or its sleep ended).
    pub wakeups: u64,
    /// CPU time used scaled by NICE_0_LOAD / weight, the fair scheduler's virtual runtime,
    /// raised on wake-up to the sleeper credit (queue.rs).
    pub(super) vruntime_ns: u64,
    /// Load weight from the nice value (queue.rs): 1024 at nice 0.
    pub(super) weight: u64,
    pub(super) state: State,
    /// A kernel thread woken while not waiting for it: it runs again instead of sleeping.
    pub(super) woken: bool,
    /// A fault and allocation stopped to give up the CPU, resumed by the next step
    /// (mm/preempt.rs); `Kernel::current` while the task runs.
    pub(super) resume: Box<TaskResume>,
    pub exited_at_ns: Option<u64>,
}

impl Task {
    pub fn new(name: String, mm: u32, workload: usize, ops: Vec<Op>) -> Task {
        let marks = empty_marks(&ops);
        Task::with_body(
            name,
            mm,
            Body::User(UserProgram {
                workload,
                ops,
                pc: 0,
                cursor: 0,
                computed_ns: 0,
                marks,
                timer_start_ns: 0,
                mincore_resident: false,
                latencies: Vec::new(),
                accessed: 0,
                ns_per_access: 0.0,
                hot_set: None,
                rng: None,
            }),
            State::Runnable,
        )
    }

    /// The task with memory policy `pol` (set_mempolicy; None: the default).
    pub fn with_mempolicy(mut self, pol: Option<crate::mm::mempolicy::policy::Mempolicy>) -> Task {
        self.resume.mempolicy = pol;
        self
    }

    /// A kernel thread, created asleep until its first wake-up.
    pub fn kthread(kind: KthreadKind) -> Task {
        let mut t = Task::with_body(kind.name(), NIL, Body::Kernel(kind), State::Waiting);
        t.weight = nice_to_weight(kind.nice());
        t
    }

    fn with_body(name: String, mm: u32, body: Body, state: State) -> Task {
        Task {
            name,
            mm,
            body,
            user_ns: 0,
            sys_ns: 0,
            iowait_ns: 0,
            sleep_ns: 0,
            wakeups: 0,
            vruntime_ns: 0,
            weight: NICE_0_LOAD,
            state,
            woken: false,
            resume: Box::default(),
            exited_at_ns: None,
        }
    }

    /// The user program, for a user task.
    pub fn program(&self) -> Option<&UserProgram> {
        match &self.body {
            Body::User(p) => Some(p),
            Body::Kernel(_) => None,
        }
    }

    /// Times the task's faults stopped inside their allocation (mm/preempt.rs): to give up
    /// the CPU to another task, to sleep in reclaim_throttle, and to let a kernel thread they
    /// woke start.
    pub fn fault_stops(&self) -> (u64, u64, u64) {
        let r = &self.resume;
        (r.resched_stops, r.throttle_stops, r.wake_stops)
    }

    pub fn kthread_kind(&self) -> Option<KthreadKind> {
        match self.body {
            Body::Kernel(kind) => Some(kind),
            Body::User(_) => None,
        }
    }
}
