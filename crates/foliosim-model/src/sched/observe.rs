//! Watching a run from the scheduler's loop, for time series and timelines (report/): an
//! observer reads the kernel and the tasks at step boundaries and changes nothing, so a run
//! gives the same results watched or not. Without an observer the loop pays one comparison per
//! step.

use super::Task;
use crate::mm::Kernel;

/// One step as the scheduler placed it on its CPU, in simulated ns. The CPU ran the task from
/// `begin_ns` to `release_ns`: first the interrupts it owed (`irq_ns`, TLB shootdowns it
/// received), then the step's CPU work from `busy_from_ns`. The step's off-CPU waits follow,
/// off the CPU, from `release_ns` to `end_ns` (the scheduler books CPU work first, waits after).
#[derive(Debug, Clone, Copy)]
pub struct StepTrace {
    pub cpu: usize,
    /// Index of the task in the run's task list (user tasks, then kernel threads).
    pub tid: usize,
    pub begin_ns: u64,
    pub irq_ns: u64,
    pub busy_from_ns: u64,
    pub release_ns: u64,
    pub end_ns: u64,
    /// User-space time of the step (Compute ops); the rest of the CPU work is system time.
    pub user_ns: u64,
    pub iowait_ns: u64,
    pub sleep_ns: u64,
}

pub trait RunObserver {
    /// The run's tasks, kernel threads included, before the first step.
    fn start(&mut self, _tasks: &[Task], _ncpus: usize) {}

    /// The next step starts at `now_ns` (non-decreasing over a run) and it is at or past the
    /// time this returned last (0 at first). Returns when it wants to be called next
    /// (`u64::MAX`: never).
    fn at(&mut self, _k: &Kernel, _tasks: &[Task], _now_ns: u64) -> u64 {
        u64::MAX
    }

    /// The most steps the run may take (asked once, at the start): past it, the run ends with
    /// `SimError::StepLimit`.
    fn max_steps(&self) -> u64 {
        u64::MAX
    }

    /// Whether [`RunObserver::step`] wants every step (asked once, at the start).
    fn wants_steps(&self) -> bool {
        false
    }

    /// A step just ran.
    fn step(&mut self, _k: &Kernel, _step: &StepTrace) {}
}
