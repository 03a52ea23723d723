//! A user fault that gives up the CPU inside its allocation's slow path and resumes there.
//!
//! In the kernel a task in direct reclaim reaches preemption points (cond_resched in
//! __perform_reclaim, between shrink_folio_list's folios, in should_reclaim_retry) and may
//! sleep (reclaim_throttle) while kswapd, the flusher and other tasks run on the CPUs; then it
//! simply continues. The model runs a step as one call, so a task cannot stop halfway through
//! the allocator. Instead, at those points the allocation of a user fault saves where it was
//! (the slow path's loop state and its place in direct reclaim) in [`TaskResume`], the
//! running task's kernel-side state, and returns; the fault unwinds with `MmError::Resched`
//! leaving the page tables as they were, and the step ends (after a throttle, the task sleeps
//! until the throttle's end). When the task runs again its Touch re-runs the same fault, which
//! finds the saved state and continues where it stopped: the fault is counted once (pgfault,
//! pgmajfault, its entry costs, mmap_lock), the orders it had given up stay given up (their
//! fallbacks counted once), and the allocator goes back into its slow path without the fast
//! path, at the retry label or inside reclaim, with no_progress_loops, the compaction priority
//! and retries, and reclaim's priority and progress kept (allocstall counted once), as the
//! kernel's task continues after schedule().
//!
//! Only user faults on anonymous memory (new folios and swap-in) stop this way: their work
//! before the allocation has no other side effect. A page-cache fault's allocation, gup, a
//! kernel thread's allocation (khugepaged) and the 4.1 slow path still run their reclaim in
//! one step; there a user task's throttle sleeps inside the step, and a kernel thread other
//! than kswapd does not sleep (reclaim_throttle: it may be needed for reclaim to progress).
//!
//! The scheduler keeps each task's `TaskResume` and swaps it into `Kernel::current` for the
//! task's steps (steps run one at a time, so one slot serves every CPU).

use super::gfp::Gfp;
use super::page_alloc::slowpath::SlowpathState;
use super::Kernel;
use crate::engine::{Ctx, WaitKind};

/// The running task's allocation and fault in progress across a schedule().
#[derive(Debug, Clone, Default)]
pub struct TaskResume {
    /// The task is handling a user fault whose allocation may stop and resume.
    pub may_stop: bool,
    /// The fault that stopped, to be resumed by the task's next step.
    pub fault: Option<FaultResume>,
    /// The allocation that stopped in its slow path.
    pub alloc: Option<AllocResume>,
    /// Times the task's faults stopped: for a reschedule, for a throttle's sleep, and for a
    /// kernel thread they woke.
    pub resched_stops: u64,
    pub throttle_stops: u64,
    pub wake_stops: u64,
    /// The task's NUMA balancing state (mm/numa_balancing.rs).
    pub numa: super::numa_balancing::TaskNuma,
    /// current->mempolicy (None: the default local policy) and current->il_prev, the node of
    /// its last interleaved allocation without a VMA (mm/mempolicy/).
    pub mempolicy: Option<super::mempolicy::policy::Mempolicy>,
    pub il_prev: Option<usize>,
}

/// A fault whose allocation stopped.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct FaultResume {
    pub mm: u32,
    pub vma: u32,
    pub index: u32,
    /// The folio order being allocated: larger ones were already given up.
    pub order: u32,
}

/// A slow-path allocation that stopped: the request and the slow path's state.
#[derive(Debug, Clone, Copy)]
pub struct AllocResume {
    pub gfp: Gfp,
    pub order: u32,
    pub state: SlowpathState,
}

impl TaskResume {
    /// The stopped allocation of `gfp` and `order`, taken to be resumed (a different request
    /// finds none: the fault took another turn).
    pub fn take_alloc(&mut self, gfp: Gfp, order: u32) -> Option<SlowpathState> {
        match self.alloc {
            Some(a) if a.gfp == gfp && a.order == order => self.alloc.take().map(|a| a.state),
            _ => None,
        }
    }

    /// Is the allocation of `gfp` and `order` one that stopped in its slow path and resumes?
    pub fn alloc_resumes(&self, gfp: Gfp, order: u32) -> bool {
        matches!(self.alloc, Some(a) if a.gfp == gfp && a.order == order)
    }

    /// Did the last allocation stop to give up the CPU (rather than fail)?
    pub fn alloc_stopped(&self) -> bool {
        self.alloc.is_some()
    }

    /// The fault at `index` of `vma` of `mm` resumes: the order its allocation stopped at, if
    /// this is the fault that stopped. Any other saved state is stale (the task did something
    /// else: the page was mapped meanwhile) and is dropped.
    pub fn resume_fault(&mut self, mm: u32, vma: u32, index: u32) -> Option<u32> {
        let f = self.fault.take()?;
        if (f.mm, f.vma, f.index) == (mm, vma, index) {
            return Some(f.order);
        }
        self.alloc = None;
        None
    }

    /// Drop whatever a fault left (it completed, failed, or found its page mapped).
    pub fn clear(&mut self) {
        self.fault = None;
        self.alloc = None;
    }
}

/// cond_resched() at a preemption point of a user fault's allocation: true when the task
/// stops here: the scheduler wants the CPU (the slice is over and another task waits), or
/// this step woke a sleeping kernel thread (kswapd, the flusher), which the kernel would
/// start at once on an idle CPU, or let preempt this task (check_preempt_wakeup): the step
/// ends so that the scheduler places it; on an idle CPU the task just goes on in its next
/// step, having kept its CPU.
#[inline]
pub fn cond_resched(k: &Kernel, ctx: &Ctx) -> bool {
    k.current.may_stop
        && (ctx.need_resched()
            || k.kthreads.woke_sleeper()
            || crate::mm::vmscan::kswapd::kswapd_wakeup_pending(k))
}

/// The allocation stops here, after a throttle's sleep or at a preemption point: counted.
pub fn note_stop(k: &mut Kernel, ctx: &Ctx, throttled: bool) {
    let c = &mut k.current;
    if throttled {
        c.throttle_stops += 1;
    } else if ctx.need_resched() {
        c.resched_stops += 1;
    } else {
        c.wake_stops += 1;
    }
}

/// reclaim_throttle's sleep of `timeout_ns` by the running task: true when the allocation
/// stops here, the sleep being the end of its step (a user fault that can resume). Another
/// user task sleeps inside its step; kernel threads other than kswapd do not sleep.
pub fn throttle_sleep(k: &Kernel, ctx: &mut Ctx, timeout_ns: u64) -> bool {
    if k.kthreads.current(ctx.cpu).is_some_and(|t| !t.is_kswapd()) {
        return false;
    }
    ctx.wait_until(ctx.now_ns + timeout_ns, WaitKind::Sleep);
    k.current.may_stop
}
