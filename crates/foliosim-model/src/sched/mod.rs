//! The task scheduler, above mm: simulated CPUs running user tasks and kernel threads
//! (`mm::kthread`). The next CPU to act is the one with the earliest next event (its clock
//! when it has a task or one is waiting; the first sleeper's wake-up when it is idle; ties:
//! lowest CPU number); it runs one step of its task (one fault with whatever reclaim it
//! triggers, one operation, or one piece of a kernel thread's work). A user fault whose
//! allocation reaches a preemption point of its slow path when the task should reschedule,
//! or sleeps in reclaim_throttle, ends its step there and resumes in the next
//! (mm/preempt.rs): that is where the kernel's direct reclaimer gives up the CPU. A task that
//! used its time slice goes to the back of one global run queue when others wait and no CPU
//! is idle to take them (round-robin, like CFS/EEVDF under equal weights). Choosing a CPU is a
//! scan of the CPUs: O(cpus) per step.
//!
//! Sleeping: a step that waited off the CPU (`Ctx::wait_until`: an I/O wait, a throttle) gives
//! its CPU up. A step runs atomically, so the model books its CPU work first and its waits
//! after: the CPU is free from `now - waits` and the task is runnable again at `now`, its
//! waits counted as iowait or sleep, not CPU time. A woken task may preempt a running one
//! (queue.rs, CFS's wakeup preemption) at the end of that one's step; user-space computing
//! (Compute ops) stops at the next known wake-up for that.
//!
//! Kernel threads are SCHED_NORMAL tasks like the user tasks, at nice 0 (kswapd, kcompactd
//! and the unbound kworkers) or 19 (khugepaged), weighted as queue.rs says. Threads of one
//! process are tasks sharing an mm; its mm_users is set here from the tasks that use it. What
//! the kernel does differently for kernel threads: they have no mm (the CPU runs no user mm,
//! so no TLB shootdown targets it), never return to user space (no memory.high reclaim on the
//! way back), and only kswapd sleeps in reclaim_throttle. Their CPU time is system time booked
//! to the thread. Wake-ups the mm code posts in `Kernel::kthreads` are applied after each
//! step, in posting order. The run ends when the last user task exits.

mod observe;
mod oom;
mod queue;
mod task;
#[cfg(test)]
mod tests;
mod user;

pub use observe::{RunObserver, StepTrace};
pub use task::{Body, Task, UserProgram};

use crate::engine::rng::SimRng;
use crate::engine::{CpuLedger, Ctx};
use crate::mm::folio::NIL;
use crate::mm::kthread::{self, KthreadNext};
use crate::mm::memcontrol::mem_cgroup_handle_over_high;
use crate::mm::numa_balancing::{init_numa_balancing, numa_return_to_user};
use crate::mm::oom_kill;
use crate::mm::preempt::TaskResume;
use crate::mm::vmscan::kswapd::post_kswapd_wakeup;
use crate::mm::{invariants, Kernel, MmError};
use queue::Queues;
use std::collections::{BTreeMap, BTreeSet};
use task::State;
use user::UserNext;

/// Children of a multi-process workload start up to a third of a slice apart (fork + exec,
/// jittered by the seed): the run's only randomness besides slice jitter.
const START_JITTER_SLICES: u64 = 3;
/// How often, in steps, the invariant checker runs when enabled.
pub const CHECK_EVERY_STEPS: u64 = 2_000;

pub struct SchedStats {
    pub steps: u64,
    /// When the last user task exited.
    pub simulated_ns: u64,
    /// The tasks' CPU time by bucket (`cpu_cost::CpuCost`, indexed by its number).
    pub cpu_ns_by_cost: Vec<u64>,
}

/// What a task does after its step.
enum Next {
    Run,
    Exit,
    /// A user task waits at a barrier.
    Barrier {
        id: u32,
        parties: u32,
    },
    /// A kernel thread sleeps until woken, or (Some) until woken or its timer.
    Sleep(Option<u64>),
}

/// Run every user task to completion, with a task for each kernel thread of `k.kthreads`
/// appended to `tasks` (asleep until woken). The run ends when the last user task exits.
/// `progress` is called every 2^16 steps with (steps, sim ns).
pub fn run_tasks(
    k: &mut Kernel,
    tasks: &mut Vec<Task>,
    seed: u64,
    slice_ns: u64,
    check_invariants: bool,
    progress: &mut dyn FnMut(u64, u64),
) -> Result<SchedStats, SimError> {
    run_tasks_observed(k, tasks, seed, slice_ns, check_invariants, progress, None)
}

/// [`run_tasks`], with `observer` (if any) watching at step boundaries (observe.rs).
pub fn run_tasks_observed(
    k: &mut Kernel,
    tasks: &mut Vec<Task>,
    seed: u64,
    slice_ns: u64,
    check_invariants: bool,
    progress: &mut dyn FnMut(u64, u64),
    observer: Option<&mut dyn RunObserver>,
) -> Result<SchedStats, SimError> {
    let ledger = CpuLedger::default();
    let mut s = Sched::start(k, tasks, seed, slice_ns, observer, &ledger);
    while s.live_users > 0 {
        let (cpu, now_ns) = s.pick_cpu(k, tasks)?;
        let mut step = s.begin_step(k, tasks, cpu, now_ns);
        let next = s.run_task(k, tasks, &mut step)?;
        s.account_step(k, tasks, &mut step);
        let (released, gone_now) = s.settle_task(k, tasks, &step, next);
        s.after_step(k, tasks, &step, released, gone_now);
        if check_invariants && s.steps.is_multiple_of(CHECK_EVERY_STEPS) {
            invariants::check(k).map_err(|e| SimError::Invariant {
                at_ns: step.ctx.now_ns,
                steps: s.steps,
                what: e,
            })?;
        }
        if s.steps & 0xffff == 0 {
            progress(s.steps, s.end_ns);
        }
        check_limits(s.steps, s.max_steps, s.end_ns, step.ctx.now_ns)?;
    }
    if check_invariants {
        invariants::check(k).map_err(|e| SimError::Invariant {
            at_ns: s.end_ns,
            steps: s.steps,
            what: e,
        })?;
    }
    let cpu_ns = tasks.iter().map(|t| t.user_ns + t.sys_ns).sum();
    let user_ns = tasks.iter().map(|t| t.user_ns).sum();
    invariants::check_cpu_time_booked(&ledger, cpu_ns, user_ns).map_err(|e| {
        SimError::Invariant {
            at_ns: s.end_ns,
            steps: s.steps,
            what: e,
        }
    })?;
    Ok(SchedStats {
        cpu_ns_by_cost: ledger.snapshot(),
        steps: s.steps,
        simulated_ns: tasks
            .iter()
            .filter_map(|t| t.exited_at_ns)
            .max()
            .unwrap_or(0),
    })
}

/// The scheduler's state across a run: run queues and sleepers, the tasks at barriers, the
/// run's counters, and the observer with when it wants to be called next.
struct Sched<'o, 'l> {
    q: Queues,
    /// Where the steps' CPU time is booked.
    ledger: &'l CpuLedger,
    rng: SimRng,
    seed: u64,
    slice_ns: u64,
    live_users: usize,
    first_kthread: usize,
    /// Task ids of the kernel threads, by thread.
    kthread_tid: Vec<usize>,
    steps: u64,
    end_ns: u64,
    /// Tasks asleep at each barrier, by barrier id.
    barriers: BTreeMap<u32, Vec<usize>>,
    /// Barriers a killed task will never reach (oom.rs).
    dead_barriers: BTreeSet<u32>,
    observer: Option<&'o mut dyn RunObserver>,
    /// When the observer wants to be called next, and whether it wants every step.
    observe_at_ns: u64,
    observe_steps: bool,
    max_steps: u64,
}

/// One step as the scheduler books it: the CPU, the task, its context, and when it began,
/// how long interrupts took, where its own work began, and its user time before it.
struct Step<'l> {
    cpu: usize,
    tid: usize,
    ctx: Ctx<'l>,
    begin_ns: u64,
    irq_ns: u64,
    busy_from_ns: u64,
    user_before_ns: u64,
    /// Time spent off the CPU (waits), and when the CPU is free again: set by account_step.
    off_ns: u64,
    release_ns: u64,
}

impl<'o, 'l> Sched<'o, 'l> {
    /// Mm users counted, user tasks staggered by their start jitter, a task per kernel
    /// thread, and the observer started.
    fn start(
        k: &mut Kernel,
        tasks: &mut Vec<Task>,
        seed: u64,
        slice_ns: u64,
        mut observer: Option<&'o mut dyn RunObserver>,
        ledger: &'l CpuLedger,
    ) -> Sched<'o, 'l> {
        let ncpus = k.nr_cpus();
        let mut rng = SimRng::stream(seed, "sched");
        let live_users = tasks.len();
        count_mm_users(k, tasks);
        let start_ns = (0..tasks.len())
            .map(|tid| match tid {
                0 => k.workload_start_ns,
                _ => k.workload_start_ns + rng.below(slice_ns / START_JITTER_SLICES),
            })
            .collect();
        let mut q = Queues::new(ncpus, slice_ns, start_ns);
        let first_kthread = tasks.len();
        let kthread_tid = start_kthreads(k, tasks, &mut q);
        let (mut observe_at_ns, mut observe_steps, mut max_steps) = (u64::MAX, false, u64::MAX);
        if let Some(o) = observer.as_deref_mut() {
            o.start(tasks, ncpus);
            observe_at_ns = 0;
            observe_steps = o.wants_steps();
            max_steps = o.max_steps();
        }
        Sched {
            q,
            ledger,
            rng,
            seed,
            slice_ns,
            live_users,
            first_kthread,
            kthread_tid,
            steps: 0,
            end_ns: 0,
            barriers: BTreeMap::new(),
            dead_barriers: BTreeSet::new(),
            observer,
            observe_at_ns,
            observe_steps,
            max_steps,
        }
    }

    /// The CPU with the earliest next event, its clock brought to it (an idle CPU waits for
    /// a runnable task or the first sleeper); sleepers due by then woken, the observer called
    /// when its time has come.
    fn pick_cpu(&mut self, k: &Kernel, tasks: &mut [Task]) -> Result<(usize, u64), SimError> {
        let q = &mut self.q;
        let Some(cpu) = q.next_cpu() else {
            return Err(deadlock(tasks, &self.barriers, self.end_ns));
        };
        if q.cpus[cpu].current.is_none() {
            // Idle until a queued task is runnable or the first sleeper wakes.
            let until_ns = q.idle_until_ns().expect("an idle CPU was picked with work");
            q.cpus[cpu].now_ns = q.cpus[cpu].now_ns.max(until_ns);
            q.refresh(cpu);
        }
        let now_ns = q.cpus[cpu].now_ns;
        q.wake_sleepers(tasks, now_ns);
        if now_ns >= self.observe_at_ns {
            if let Some(o) = self.observer.as_deref_mut() {
                self.observe_at_ns = o.at(k, tasks, now_ns);
            }
        }
        Ok((cpu, now_ns))
    }

    /// Before the task's work: a woken task preempts the running one, an idle CPU switches
    /// a runnable task in, interrupts taken meanwhile are paid, and the tick's need_resched
    /// time is set.
    fn begin_step(
        &mut self,
        k: &mut Kernel,
        tasks: &mut [Task],
        cpu: usize,
        now_ns: u64,
    ) -> Step<'l> {
        let q = &mut self.q;
        preempt_current(k, tasks, q, cpu, now_ns);
        let mut ctx = Ctx {
            cpu,
            now_ns,
            step_start_ns: now_ns,
            lock_handoff_ns: k.cost.lock_handoff_ns,
            handoff: k.lock_handoff,
            line: k.line_transfer,
            sleep_ns: 0,
            iowait_ns: 0,
            resched_at_ns: u64::MAX,
            ledger: self.ledger,
        };
        let tid = match q.cpus[cpu].current {
            Some(tid) => tid,
            None => switch_in(k, tasks, q, &mut ctx, &mut self.rng, self.slice_ns),
        };
        let begin_ns = ctx.now_ns;
        let irq_ns = std::mem::take(&mut k.percpu[cpu].irq_ns);
        ctx.now_ns += irq_ns;
        // The tick sets need_resched at the slice's end when another task is runnable and no
        // idle CPU will take it (try_to_wake_up places a woken task on an idle CPU); one woken
        // during this step is not seen until its end: steps are atomic.
        if q.queued() > q.idle_cpus() {
            ctx.resched_at_ns = q.cpus[cpu].slice_end_ns;
        }
        Step {
            cpu,
            tid,
            busy_from_ns: ctx.now_ns,
            ctx,
            begin_ns,
            irq_ns,
            user_before_ns: tasks[tid].user_ns,
            off_ns: 0,
            release_ns: 0,
        }
    }

    /// The task's step: a user task's op or fault, or a kernel thread's piece of work; a
    /// task the OOM killer chose while it ran exits now, on its own clock.
    fn run_task(
        &self,
        k: &mut Kernel,
        tasks: &mut [Task],
        st: &mut Step<'l>,
    ) -> Result<Next, SimError> {
        let (tid, ctx) = (st.tid, &mut st.ctx);
        let t = &mut tasks[tid];
        let wake_ns = self.q.sleepers.first().map_or(u64::MAX, |s| s.0);
        let next = match &mut t.body {
            Body::User(p) => {
                let run = user::Running {
                    tid: tid as u32,
                    seed: self.seed,
                    mm: t.mm,
                    user_ns: &mut t.user_ns,
                    wake_ns,
                };
                let outcome = user_step(k, ctx, run, p, &mut t.resume);
                user_next(k, ctx, t, outcome, st.user_before_ns, st.busy_from_ns)?
            }
            Body::Kernel(kind) => {
                k.kthreads.set_asleep(tid - self.first_kthread, false);
                match kthread::run(k, ctx, *kind) {
                    KthreadNext::Run => Next::Run,
                    KthreadNext::Wait => Next::Sleep(None),
                    KthreadNext::SleepNs(ns) => Next::Sleep(Some(ns)),
                }
            }
        };
        if oom_kill::exit_if_victim(k, ctx, t.mm) {
            return Ok(Next::Exit);
        }
        Ok(next)
    }

    /// After the task's work: swap slots released in the step freed, kswapd's wake-up
    /// posted, the step's CPU time booked to the task as system and user time (its waits
    /// as iowait and sleep), and the observer shown the step when it wants every one.
    fn account_step(&mut self, k: &mut Kernel, tasks: &mut [Task], st: &mut Step<'l>) {
        let ctx = &mut st.ctx;
        k.free_released_slots(ctx);
        post_kswapd_wakeup(k, ctx.now_ns);
        self.steps += 1;
        let t = &mut tasks[st.tid];
        st.off_ns = ctx.off_cpu_ns();
        let busy_ns = ctx.now_ns - st.busy_from_ns - st.off_ns;
        t.sys_ns += busy_ns - (t.user_ns - st.user_before_ns);
        t.vruntime_ns += queue::weighted_ns(busy_ns, t.weight);
        t.iowait_ns += ctx.iowait_ns;
        t.sleep_ns += ctx.sleep_ns;
        st.release_ns = ctx.now_ns - st.off_ns;
        if self.observe_steps {
            if let Some(o) = self.observer.as_deref_mut() {
                o.step(
                    k,
                    &StepTrace {
                        cpu: st.cpu,
                        tid: st.tid,
                        begin_ns: st.begin_ns,
                        irq_ns: st.irq_ns,
                        busy_from_ns: st.busy_from_ns,
                        release_ns: st.release_ns,
                        end_ns: ctx.now_ns,
                        user_ns: t.user_ns - st.user_before_ns,
                        iowait_ns: ctx.iowait_ns,
                        sleep_ns: ctx.sleep_ns,
                    },
                );
            }
        }
    }

    /// Where the task goes after its step: its CPU is free from `release_ns`; it runs on,
    /// goes to the back of the queue at its slice's end, sleeps (waits, timers, barriers) or
    /// exits. Returns the tasks a barrier released, and whether the task never existed (a
    /// barrier whose partner was killed before starting it).
    fn settle_task(
        &mut self,
        k: &mut Kernel,
        tasks: &mut [Task],
        st: &Step<'l>,
        next: Next,
    ) -> (Vec<usize>, bool) {
        let (cpu, tid, now_ns) = (st.cpu, st.tid, st.ctx.now_ns);
        let t = &mut tasks[tid];
        let q = &mut self.q;
        q.cpus[cpu].now_ns = st.release_ns;
        q.refresh(cpu);
        self.end_ns = self.end_ns.max(now_ns);
        let next = match next {
            // Woken while running: the wake-up is not lost.
            Next::Sleep(_) if std::mem::take(&mut t.woken) => Next::Run,
            next => next,
        };
        // The last party at a barrier releases the others and runs on.
        let (next, released, gone_now) =
            at_barrier(next, t, tid, &mut self.barriers, &self.dead_barriers);
        if let Next::Sleep(_) = next {
            k.kthreads.set_asleep(tid - self.first_kthread, true);
        }
        let c = &q.cpus[cpu];
        let slice_over = now_ns >= c.slice_end_ns || c.preempt;
        t.state = match next {
            Next::Exit => {
                t.exited_at_ns = Some(now_ns);
                self.live_users -= 1;
                State::Exited
            }
            Next::Sleep(None) => State::Waiting,
            Next::Barrier { .. } => State::AtBarrier,
            Next::Sleep(Some(ns)) => {
                q.sleep_until(now_ns + ns, tid);
                State::TimedWait
            }
            Next::Run if st.off_ns > 0 => {
                q.sleep_until(now_ns, tid);
                State::Sleeping
            }
            Next::Run if slice_over && q.queued() > q.idle_cpus() => {
                q.push_back(tid, now_ns);
                State::Runnable
            }
            Next::Run => State::Running,
        };
        if t.state != State::Running {
            if t.state != State::Runnable {
                q.set_runnable_at(tid, now_ns);
            }
            let c = &mut q.cpus[cpu];
            c.current = None;
            c.preempt = false;
            q.refresh(cpu);
            switch_out(k, cpu, t, st.release_ns);
        }
        (released, gone_now)
    }

    /// What the step left for others: tasks a barrier released woken, a task that never
    /// existed ended with its barriers, kernel threads the mm code woke (in posting order),
    /// and the tasks of processes the OOM killer chose ended.
    fn after_step(
        &mut self,
        k: &mut Kernel,
        tasks: &mut [Task],
        st: &Step<'l>,
        released: Vec<usize>,
        gone_now: bool,
    ) {
        let now_ns = st.ctx.now_ns;
        for other in released {
            self.q.wake(tasks, other, now_ns);
        }
        if gone_now {
            self.live_users -= oom::release_barriers(
                tasks,
                &mut self.q,
                &mut self.barriers,
                &mut self.dead_barriers,
                vec![(st.tid, 0)],
                now_ns,
            );
        }
        if !k.kthreads.pending().is_empty() {
            for &(i, at_ns) in k.kthreads.pending() {
                self.q.wake_kthread(tasks, self.kthread_tid[i], at_ns);
            }
            k.kthreads.clear_pending();
        }
        if k.oom.has_new() {
            self.live_users -= oom::end_killed_tasks(
                k,
                tasks,
                &mut self.q,
                &mut self.barriers,
                &mut self.dead_barriers,
                now_ns,
            );
        }
    }
}

/// A woken task preempts the one running on `cpu` before its next step.
fn preempt_current(k: &mut Kernel, tasks: &mut [Task], q: &mut Queues, cpu: usize, now_ns: u64) {
    let c = &mut q.cpus[cpu];
    if std::mem::take(&mut c.preempt) {
        if let Some(cur) = c.current.take() {
            switch_out(k, cpu, &tasks[cur], now_ns);
            tasks[cur].state = State::Runnable;
            q.push_back(cur, now_ns);
        }
        q.refresh(cpu);
    }
}

/// An idle CPU takes the first runnable task: a context switch and a fresh slice.
fn switch_in(
    k: &mut Kernel,
    tasks: &mut [Task],
    q: &mut Queues,
    ctx: &mut Ctx,
    rng: &mut SimRng,
    slice_ns: u64,
) -> usize {
    let cpu = ctx.cpu;
    let tid = q
        .take_runnable(ctx.now_ns)
        .expect("an idle CPU woke with a runnable task");
    let c = &mut q.cpus[cpu];
    let t = &mut tasks[tid];
    ctx.now_ns += k.cost.context_switch_ns;
    c.current = Some(tid);
    // Slices vary +-10% (wakeups, ticks): seeded, so runs differ only by seed.
    let slice = slice_ns * 9 / 10 + rng.below(slice_ns / 5);
    c.slice_end_ns = ctx.now_ns + queue::weighted_slice(slice, t.weight);
    k.percpu[cpu].mm = t.mm;
    k.kthreads.set_current(cpu, t.kthread_kind());
    t.state = State::Running;
    q.refresh(cpu);
    tid
}

/// mm_users of every mm from the tasks that run in it; init_numa_balancing for each when
/// tiering (a process's later tasks are its CLONE_VM threads).
fn count_mm_users(k: &mut Kernel, tasks: &mut [Task]) {
    for m in k.mms.iter_mut() {
        m.mm_users = 0;
    }
    for t in tasks.iter_mut() {
        if t.mm != NIL {
            if k.numa.tiering {
                let users = k.mms[t.mm as usize].mm_users;
                t.resume.numa = init_numa_balancing(k, t.mm, users);
            }
            k.mms[t.mm as usize].mm_users += 1;
        }
    }
}

/// A task per kernel thread, asleep (or on its boot timer); their task ids, by thread.
fn start_kthreads(k: &mut Kernel, tasks: &mut Vec<Task>, q: &mut Queues) -> Vec<usize> {
    k.kthreads
        .kinds
        .clone()
        .into_iter()
        .enumerate()
        .map(|(i, kind)| {
            tasks.push(Task::kthread(kind));
            q.add_task();
            k.kthreads.set_asleep(i, true);
            let tid = tasks.len() - 1;
            // A thread whose loop starts with a timed sleep (kcompactd's 500 ms).
            if let Some(ns) = kthread::boot_timer_ns(k, kind) {
                tasks[tid].state = State::TimedWait;
                q.sleep_until(ns, tid);
            }
            tid
        })
        .collect()
}

/// No CPU has work and a task still lives: who waits at which barrier.
fn deadlock(tasks: &[Task], barriers: &BTreeMap<u32, Vec<usize>>, end_ns: u64) -> SimError {
    SimError::Deadlock {
        at_ns: end_ns,
        waiting: barriers
            .iter()
            .map(|(id, tids)| {
                let names: Vec<&str> = tids.iter().map(|&t| tasks[t].name.as_str()).collect();
                format!("barrier {id}: {}", names.join(", "))
            })
            .collect::<Vec<_>>()
            .join("; "),
    }
}

/// What a user task does after its step: back to user space (memory.high reclaim owed by its
/// charges, and the NUMA scan when its tick found its mm's turn come: task_tick_numa by its
/// CPU time so far, then task_numa_work), still in the kernel, at a barrier, or gone.
fn user_next(
    k: &mut Kernel,
    ctx: &mut Ctx,
    t: &mut Task,
    outcome: Result<UserNext, MmError>,
    user_before_ns: u64,
    busy_from_ns: u64,
) -> Result<Next, SimError> {
    Ok(match outcome {
        Ok(UserNext::Exit) => Next::Exit,
        Ok(UserNext::Run) => {
            mem_cgroup_handle_over_high(k, ctx);
            if k.numa.tiering {
                let runtime_ns =
                    user_before_ns + t.sys_ns + (ctx.now_ns - busy_from_ns - ctx.off_cpu_ns());
                numa_return_to_user(k, ctx, t.mm, &mut t.resume.numa, runtime_ns);
            }
            Next::Run
        }
        // Still in the kernel: stopped in a fault, which goes on in the next step.
        Ok(UserNext::Preempted) => Next::Run,
        Ok(UserNext::Barrier { id, parties }) => Next::Barrier { id, parties },
        // The OOM killer chose this task's process while it allocated.
        Err(_) if k.mms[t.mm as usize].oom_victim => Next::Exit,
        Err(error) => {
            return Err(SimError::Mm {
                task: t.name.clone(),
                at_ns: ctx.now_ns,
                error,
            })
        }
    })
}

/// A task arriving at a barrier: the last party releases the others (returned) and runs on.
/// A barrier whose partner was killed: go on, or, if the partner was to start this task
/// (fork, exec), this task never existed (the flag: gone now).
fn at_barrier(
    next: Next,
    t: &Task,
    tid: usize,
    barriers: &mut BTreeMap<u32, Vec<usize>>,
    dead_barriers: &std::collections::BTreeSet<u32>,
) -> (Next, Vec<usize>, bool) {
    match next {
        Next::Barrier { id, .. } if dead_barriers.contains(&id) => {
            if oom::starts_at_barrier(t) {
                (Next::Exit, Vec::new(), true)
            } else {
                (Next::Run, Vec::new(), false)
            }
        }
        Next::Barrier { id, parties } => {
            let waiting = barriers.entry(id).or_default();
            waiting.push(tid);
            if waiting.len() as u32 >= parties {
                let mut released = barriers.remove(&id).unwrap_or_default();
                released.retain(|&other| other != tid);
                (Next::Run, released, false)
            } else {
                (next, Vec::new(), false)
            }
        }
        next => (next, Vec::new(), false),
    }
}

/// The step limit a caller set, and the simulated clock's.
fn check_limits(steps: u64, max_steps: u64, end_ns: u64, now_ns: u64) -> Result<(), SimError> {
    if steps >= max_steps {
        return Err(SimError::StepLimit {
            at_ns: end_ns,
            steps,
        });
    }
    if now_ns > MAX_SIM_NS {
        return Err(SimError::TimeLimit {
            at_ns: now_ns,
            steps,
        });
    }
    Ok(())
}

/// One step of a user task, whose kernel-side state (mm/preempt.rs) is `current` meanwhile.
fn user_step(
    k: &mut Kernel,
    ctx: &mut Ctx,
    run: user::Running,
    p: &mut UserProgram,
    resume: &mut Box<TaskResume>,
) -> Result<UserNext, MmError> {
    std::mem::swap(&mut k.current, resume);
    let r = user::step(k, ctx, run, p);
    std::mem::swap(&mut k.current, resume);
    r
}

/// `cpu` stops running `t` at `at_ns`.
pub(super) fn switch_out(k: &mut Kernel, cpu: usize, t: &Task, at_ns: u64) {
    k.percpu[cpu].mm = NIL;
    k.kthreads.set_current(cpu, None);
    if t.mm != NIL {
        k.mms[t.mm as usize].cpu_last_ran_ns[cpu] = Some(at_ns);
    }
}

/// The latest simulated time a run may reach: 2^53 ns (about 104 days). A step may add up to
/// a few thousand costs of at most 1e12 ns each past it, which stays below the lock
/// calendar's 2^54 ns (engine/lock.rs, where later holds saturate).
pub const MAX_SIM_NS: u64 = 1 << 53;

#[derive(Debug, thiserror::Error)]
pub enum SimError {
    #[error("task {task} at {at_ns} ns: {error}")]
    Mm {
        task: String,
        at_ns: u64,
        error: MmError,
    },
    #[error(
        "at {at_ns} ns every live task waits at a barrier that too few tasks reach ({waiting})"
    )]
    Deadlock { at_ns: u64, waiting: String },
    #[error("invariant broken at {at_ns} ns after {steps} steps: {what}")]
    Invariant {
        at_ns: u64,
        steps: u64,
        what: String,
    },
    /// The run took the most steps `RunOptions::max_steps` allows.
    #[error("step limit: {steps} steps reached at {at_ns} ns before the last task exited")]
    StepLimit { at_ns: u64, steps: u64 },
    /// Simulated time passed [`MAX_SIM_NS`] (the lock calendar keeps times below 2^54 ns).
    #[error(
        "simulated time reached {at_ns} ns after {steps} steps, past the simulator's clock limit; allowed: runs that end by {MAX_SIM_NS} ns (2^53, about 104 days): lower the costs (costs.* may each be up to 1e12 ns) or shorten the workload"
    )]
    TimeLimit { at_ns: u64, steps: u64 },
    /// Refused before the run: the simulator would need more memory than the host has.
    #[error(transparent)]
    TooBig(#[from] crate::footprint::TooBig),
    /// A generated scenario (reproduce) failed validation.
    #[error("scenario: {0}")]
    Invalid(#[from] crate::scenario::ScenarioError),
    /// The host refused memory the pre-flight expected to have.
    #[error(transparent)]
    AllocFailed(#[from] crate::footprint::AllocFailed),
}
