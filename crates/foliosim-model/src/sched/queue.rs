//! The CPUs, the run queue and the sleepers, with wake-ups and their preemption.
//!
//! Weights: a task's vruntime grows by its CPU time x NICE_0_LOAD / weight, and its time slice
//! is the base slice x weight / NICE_0_LOAD, so in the round robin a nice-19 task (weight 15:
//! khugepaged) gets about 15/1024 of a CPU it shares with a nice-0 hog, as CFS and EEVDF give
//! it (EEVDF by a later virtual deadline rather than a shorter slice), and it never preempts a
//! nice-0 task on wake-up.
//!
//! Wakeup preemption follows CFS's place_entity and check_preempt_wakeup (vruntime = weighted
//! CPU time used): a woken task's vruntime is raised to at least the least
//! vruntime running minus one slice (the sleeper credit, GENTLE_FAIR_SLEEPERS' half of the
//! latency), and when no CPU is idle it preempts the running task with the most vruntime if
//! that is ahead by more than a third of a slice (wakeup_granularity is 1 ms against the
//! 3 ms of half the latency). The preempted task gives up its CPU at the end of its current
//! step (steps are atomic) and the woken one is first in the queue. EEVDF (6.6+) decides by
//! eligibility and virtual deadline instead; for an I/O-bound task against CPU hogs both
//! preempt on wake-up.

use super::task::{State, Task};
use std::collections::VecDeque;

/// NICE_0_LOAD (scale_load_down'ed): the weight of a nice-0 task.
pub const NICE_0_LOAD: u64 = 1024;

/// sched_prio_to_weight: each nice step is ~1.25x the CPU share (1024 / 1.25^nice, rounded:
/// 15 at nice 19, 88761 at -20).
pub fn nice_to_weight(nice: i32) -> u64 {
    (NICE_0_LOAD as f64 / 1.25f64.powi(nice)).round() as u64
}

/// `ns` of CPU time in virtual runtime for a task of `weight`.
#[inline]
pub fn weighted_ns(ns: u64, weight: u64) -> u64 {
    if weight == NICE_0_LOAD {
        ns
    } else {
        (ns as u128 * NICE_0_LOAD as u128 / weight as u128) as u64
    }
}

/// The time slice of a task of `weight` out of the nice-0 slice `slice_ns`.
#[inline]
pub fn weighted_slice(slice_ns: u64, weight: u64) -> u64 {
    if weight == NICE_0_LOAD {
        slice_ns
    } else {
        (slice_ns as u128 * weight as u128 / NICE_0_LOAD as u128) as u64
    }
}

pub(super) struct Cpu {
    pub now_ns: u64,
    pub current: Option<usize>,
    pub slice_end_ns: u64,
    /// A woken task preempts the current one at the end of its step.
    pub preempt: bool,
}

pub(super) struct Queues {
    /// After changing a CPU's `current` or `now_ns`, call [`Queues::refresh`].
    pub cpus: Vec<Cpu>,
    /// Per CPU, `now_ns` while it runs a task, else u64::MAX: dense, so that picking the next
    /// CPU among busy ones is a scan of one array (128 CPUs: 1 KiB), not of every `Cpu`.
    running_at_ns: Vec<u64>,
    /// Per CPU, `now_ns` while it is idle, else u64::MAX.
    idle_now_ns: Vec<u64>,
    /// CPUs running nothing.
    idle: usize,
    /// Runnable tasks in order (round robin; woken preempting tasks go first).
    runq: VecDeque<usize>,
    /// Per task: the earliest it may run once queued (a task queued by a CPU whose clock is
    /// ahead runs only from then).
    runnable_at_ns: Vec<u64>,
    /// The least `runnable_at_ns` of the queued tasks (u64::MAX when none): kept as tasks are
    /// queued and recomputed when one leaves, so an idle CPU's look at the queue is O(1)
    /// (seed 000: an idle CPU on a third of the steps, 60 tasks queued).
    queued_min_ns: u64,
    /// Tasks asleep until a known time, by wake time (FIFO among equals).
    pub sleepers: Vec<(u64, usize)>,
    slice_ns: u64,
}

impl Queues {
    /// Queues for tasks queued in tid order, each runnable from its `start_ns`.
    pub fn new(ncpus: usize, slice_ns: u64, start_ns: Vec<u64>) -> Queues {
        Queues {
            cpus: (0..ncpus)
                .map(|_| Cpu {
                    now_ns: 0,
                    current: None,
                    slice_end_ns: 0,
                    preempt: false,
                })
                .collect(),
            running_at_ns: vec![u64::MAX; ncpus],
            idle_now_ns: vec![0; ncpus],
            idle: ncpus,
            runq: (0..start_ns.len()).collect(),
            queued_min_ns: start_ns.iter().copied().min().unwrap_or(u64::MAX),
            runnable_at_ns: start_ns,
            sleepers: Vec::new(),
            slice_ns,
        }
    }

    /// The CPU with the earliest next event: its clock when it has a task, else (idle) when
    /// the first queued task is runnable or the first sleeper wakes, never before its clock.
    /// Ties: the lowest CPU. None when no CPU can act.
    #[inline]
    pub fn next_cpu(&self) -> Option<usize> {
        self.debug_check();
        if self.idle == 0 {
            // Every CPU busy: the earliest clock, the lowest CPU among equals.
            let earliest = *self.running_at_ns.iter().min()?;
            return self.running_at_ns.iter().position(|&t| t == earliest);
        }
        if self.cpus.len() <= 16 {
            // A few CPUs: the walk below is as fast (seed 000's 8 CPUs were 6% slower).
        } else if let Some(w) = self.idle_until_ns() {
            // Busy CPUs at their clock, idle ones at max(clock, w), over two dense arrays.
            let at = |i: usize| self.running_at_ns[i].min(self.idle_now_ns[i].max(w));
            let n = self.cpus.len();
            let earliest = (0..n).map(at).min()?;
            // u64::MAX is also the arrays' "not this kind" mark: leave that case to the walk.
            if earliest < u64::MAX {
                return (0..n).position(|i| at(i) == earliest);
            }
        } else if self.idle < self.cpus.len() {
            let earliest = *self.running_at_ns.iter().min()?;
            return self.running_at_ns.iter().position(|&t| t == earliest);
        }
        let mut idle_until: Option<Option<u64>> = None;
        let mut best: Option<(u64, usize)> = None;
        for (i, c) in self.cpus.iter().enumerate() {
            let at_ns = if c.current.is_some() {
                c.now_ns
            } else if let Some(w) = *idle_until.get_or_insert_with(|| self.idle_until_ns()) {
                c.now_ns.max(w)
            } else {
                continue;
            };
            if best.is_none_or(|(b, _)| at_ns < b) {
                best = Some((at_ns, i));
            }
        }
        best.map(|(_, i)| i)
    }

    /// CPUs running nothing.
    pub fn idle_cpus(&self) -> usize {
        self.idle
    }

    /// Bring the CPU's entry of `running_at_ns` and the idle count up to date with its
    /// `current` and `now_ns`.
    #[inline]
    pub fn refresh(&mut self, cpu: usize) {
        let c = &self.cpus[cpu];
        let was_idle = self.running_at_ns[cpu] == u64::MAX;
        let key = if c.current.is_some() {
            debug_assert!(c.now_ns < u64::MAX);
            c.now_ns
        } else {
            u64::MAX
        };
        self.running_at_ns[cpu] = key;
        self.idle_now_ns[cpu] = if key == u64::MAX { c.now_ns } else { u64::MAX };
        match (was_idle, key == u64::MAX) {
            (true, false) => self.idle -= 1,
            (false, true) => self.idle += 1,
            _ => {}
        }
    }

    /// Debug builds: the dense copies agree with the CPUs.
    fn debug_check(&self) {
        if cfg!(debug_assertions) {
            assert_eq!(
                self.idle,
                self.cpus.iter().filter(|c| c.current.is_none()).count()
            );
            for (c, &t) in self.cpus.iter().zip(&self.running_at_ns) {
                assert_eq!(
                    t,
                    if c.current.is_some() {
                        c.now_ns
                    } else {
                        u64::MAX
                    }
                );
            }
            assert_eq!(
                self.queued_min_ns,
                self.runq
                    .iter()
                    .map(|&t| self.runnable_at_ns[t])
                    .min()
                    .unwrap_or(u64::MAX)
            );
            for (c, &t) in self.cpus.iter().zip(&self.idle_now_ns) {
                assert_eq!(
                    t,
                    if c.current.is_none() {
                        c.now_ns
                    } else {
                        u64::MAX
                    }
                );
            }
        }
    }

    /// A task added after the queues were made (a kernel thread), not queued.
    pub fn add_task(&mut self) {
        self.runnable_at_ns.push(0);
    }

    /// `tid`, not queued, will be runnable from `at_ns` when it is.
    #[inline]
    pub fn set_runnable_at(&mut self, tid: usize, at_ns: u64) {
        debug_assert!(!self.runq.contains(&tid));
        self.runnable_at_ns[tid] = at_ns;
    }

    /// Queue `tid`, runnable from `at_ns`, at the back.
    pub fn push_back(&mut self, tid: usize, at_ns: u64) {
        self.set_runnable_at(tid, at_ns);
        self.runq.push_back(tid);
        self.queued_min_ns = self.queued_min_ns.min(at_ns);
    }

    /// Tasks in the run queue.
    pub fn queued(&self) -> usize {
        self.runq.len()
    }

    /// Take `tid` off the run queue, wherever it is (a killed task).
    pub fn dequeue(&mut self, tid: usize) {
        self.runq.retain(|&other| other != tid);
        self.recompute_queued_min();
    }

    fn recompute_queued_min(&mut self) {
        let at = &self.runnable_at_ns;
        self.queued_min_ns = self.runq.iter().map(|&t| at[t]).min().unwrap_or(u64::MAX);
    }

    /// When an idle CPU next has work: the earliest a queued task is runnable (a task queued
    /// by a CPU whose clock is ahead is runnable only from then) or the first sleeper wakes.
    #[inline]
    pub fn idle_until_ns(&self) -> Option<u64> {
        let wake = self.sleepers.first().map_or(u64::MAX, |s| s.0);
        Some(self.queued_min_ns.min(wake)).filter(|&at| at < u64::MAX)
    }

    /// The first queued task runnable by `now_ns` (round-robin order among those), taken off
    /// the queue.
    pub fn take_runnable(&mut self, now_ns: u64) -> Option<usize> {
        let i = self
            .runq
            .iter()
            .position(|&t| self.runnable_at_ns[t] <= now_ns)?;
        let tid = self.runq.remove(i);
        if tid.is_some_and(|t| self.runnable_at_ns[t] == self.queued_min_ns) {
            self.recompute_queued_min();
        }
        tid
    }

    pub fn sleep_until(&mut self, wake_ns: u64, tid: usize) {
        let at = self.sleepers.partition_point(|&(w, _)| w <= wake_ns);
        self.sleepers.insert(at, (wake_ns, tid));
    }

    /// Wake every sleeper due by `now_ns`, in wake order.
    #[inline]
    pub fn wake_sleepers(&mut self, tasks: &mut [Task], now_ns: u64) {
        // Called every step; almost always nobody is due: the first sleeper answers that.
        if self.sleepers.first().is_none_or(|&(w, _)| w > now_ns) {
            return;
        }
        self.wake_due(tasks, now_ns);
    }

    /// wake_sleepers' work when some sleeper is due.
    fn wake_due(&mut self, tasks: &mut [Task], now_ns: u64) {
        let due = self.sleepers.partition_point(|&(w, _)| w <= now_ns);
        for i in 0..due {
            let (wake_ns, tid) = self.sleepers[i];
            self.wake(tasks, tid, wake_ns);
        }
        self.sleepers.drain(..due);
    }

    /// A wake-up posted for a kernel thread at `at_ns`: one asleep waiting for it becomes
    /// runnable (a timed sleep ends early); one running, runnable or asleep on I/O will run
    /// again instead of going to sleep.
    pub fn wake_kthread(&mut self, tasks: &mut [Task], tid: usize, at_ns: u64) {
        match tasks[tid].state {
            State::Waiting => self.wake(tasks, tid, at_ns),
            State::TimedWait => {
                let i = self
                    .sleepers
                    .iter()
                    .position(|&(_, s)| s == tid)
                    .expect("a timed sleeper is in the sleepers list");
                self.sleepers.remove(i);
                self.wake(tasks, tid, at_ns);
            }
            _ => tasks[tid].woken = true,
        }
    }

    /// try_to_wake_up: `tid` is runnable from `at_ns`, placed and maybe preempting.
    // follows place_entity and check_preempt_wakeup (kernel/sched/fair.c, CFS, 6.5)
    pub fn wake(&mut self, tasks: &mut [Task], tid: usize, at_ns: u64) {
        let mut least_running: Option<u64> = None;
        let mut victim: Option<(u64, usize)> = None;
        let mut idle_cpu = false;
        for (i, c) in self.cpus.iter().enumerate() {
            let Some(cur) = c.current else {
                idle_cpu = true;
                continue;
            };
            let v = tasks[cur].vruntime_ns;
            least_running = Some(least_running.map_or(v, |l| l.min(v)));
            if !c.preempt && victim.is_none_or(|(best, _)| v > best) {
                victim = Some((v, i));
            }
        }
        let t = &mut tasks[tid];
        if let Some(least) = least_running {
            t.vruntime_ns = t.vruntime_ns.max(least.saturating_sub(self.slice_ns));
        }
        let at_ns = self.runnable_at_ns[tid].max(at_ns);
        t.state = State::Runnable;
        t.wakeups += 1;
        match victim {
            Some((v, cpu)) if !idle_cpu && v > t.vruntime_ns + self.slice_ns / 3 => {
                self.cpus[cpu].preempt = true;
                self.set_runnable_at(tid, at_ns);
                self.runq.push_front(tid);
                self.queued_min_ns = self.queued_min_ns.min(at_ns);
            }
            _ => self.push_back(tid, at_ns),
        }
    }
}
