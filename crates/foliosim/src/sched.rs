//! The task scheduler, above mm: simulated CPUs running tasks. The next CPU to act is the one
//! with the earliest time (ties: lowest CPU number); it runs one step of its task (one fault
//! with whatever reclaim it triggers, or one operation). A task that used its time slice goes to the back of one global
//! run queue when others wait (round-robin, like CFS/EEVDF under equal weights).

use crate::engine::rng::SimRng;
use crate::engine::Ctx;
use crate::mm::folio::NIL;
use crate::mm::madvise::madvise;
use crate::mm::memcontrol::mem_cgroup_handle_over_high;
use crate::mm::memory::{touch, zap_range};
use crate::mm::{invariants, Kernel, MmError};
use crate::workload::{empty_marks, Mark, Op, TaskMarks};
use std::collections::VecDeque;

/// Children of a multi-process workload start up to a third of a slice apart (fork + exec,
/// jittered by the seed): the run's only randomness besides slice jitter.
const START_JITTER_SLICES: u64 = 3;
/// How often, in steps, the invariant checker runs when enabled.
pub const CHECK_EVERY_STEPS: u64 = 2_000;

pub struct Task {
    pub name: String,
    pub mm: u32,
    pub workload: usize,
    ops: Vec<Op>,
    pc: usize,
    /// Progress inside the current Touch op, in pages.
    cursor: u32,
    pub marks: TaskMarks,
    /// CPU time in user space (Compute ops) and in the kernel (everything else, lock spinning
    /// included), as getrusage would split it.
    pub user_ns: u64,
    pub sys_ns: u64,
    /// Time asleep off the CPU (memory.high throttling).
    pub sleep_ns: u64,
    runnable_at_ns: u64,
    pub exited_at_ns: Option<u64>,
}

impl Task {
    pub fn new(name: String, mm: u32, workload: usize, ops: Vec<Op>) -> Task {
        let marks = empty_marks(&ops);
        Task {
            name,
            mm,
            workload,
            ops,
            pc: 0,
            cursor: 0,
            marks,
            user_ns: 0,
            sys_ns: 0,
            sleep_ns: 0,
            runnable_at_ns: 0,
            exited_at_ns: None,
        }
    }
}

struct Cpu {
    now_ns: u64,
    current: Option<usize>,
    slice_end_ns: u64,
}

pub struct SchedStats {
    pub steps: u64,
    pub simulated_ns: u64,
}

/// Run every task to completion. `progress` is called every 2^16 steps with (steps, sim ns).
pub fn run_tasks(
    k: &mut Kernel,
    tasks: &mut [Task],
    seed: u64,
    slice_ns: u64,
    check_invariants: bool,
    progress: &mut dyn FnMut(u64, u64),
) -> Result<SchedStats, SimError> {
    let ncpus = k.cpu_mm.len();
    let mut rng = SimRng::stream(seed, "sched");
    let mut cpus: Vec<Cpu> = (0..ncpus)
        .map(|_| Cpu {
            now_ns: 0,
            current: None,
            slice_end_ns: 0,
        })
        .collect();
    let mut runq: VecDeque<usize> = (0..tasks.len()).collect();
    for (i, t) in tasks.iter_mut().enumerate() {
        if i > 0 {
            t.runnable_at_ns = rng.below(slice_ns / START_JITTER_SLICES);
        }
    }
    // Tasks asleep off-CPU (throttled), by wake time: they rejoin the run queue at it.
    let mut sleepers: Vec<(u64, usize)> = Vec::new();
    let mut steps = 0u64;
    let mut end_ns = 0u64;
    loop {
        let Some(cpu) = (0..ncpus)
            .filter(|&c| cpus[c].current.is_some() || !runq.is_empty() || !sleepers.is_empty())
            .min_by_key(|&c| (cpus[c].now_ns, c))
        else {
            break;
        };
        wake_sleepers(&mut sleepers, &mut runq, tasks, cpus[cpu].now_ns);
        if cpus[cpu].current.is_none() && runq.is_empty() {
            // Idle until the first sleeper wakes.
            let (wake_ns, _) = sleepers[0];
            cpus[cpu].now_ns = cpus[cpu].now_ns.max(wake_ns);
            wake_sleepers(&mut sleepers, &mut runq, tasks, cpus[cpu].now_ns);
        }
        let c = &mut cpus[cpu];
        let mut ctx = Ctx {
            cpu,
            now_ns: c.now_ns,
            step_start_ns: c.now_ns,
            lock_handoff_ns: k.cost.lock_handoff_ns,
            sleep_ns: 0,
        };
        let tid = match c.current {
            Some(tid) => tid,
            None => {
                let tid = runq.pop_front().expect("a CPU was picked with work");
                ctx.now_ns = ctx.now_ns.max(tasks[tid].runnable_at_ns) + k.cost.context_switch_ns;
                c.current = Some(tid);
                // Slices vary +-10% (wakeups, ticks): seeded, so runs differ only by seed.
                c.slice_end_ns = ctx.now_ns + slice_ns * 9 / 10 + rng.below(slice_ns / 5);
                k.cpu_mm[cpu] = tasks[tid].mm;
                tid
            }
        };
        ctx.now_ns += std::mem::take(&mut k.cpu_irq_ns[cpu]);
        let (busy_from_ns, user_before_ns) = (ctx.now_ns, tasks[tid].user_ns);
        let exited = step(k, &mut ctx, &mut tasks[tid]).map_err(|e| SimError::Mm {
            task: tasks[tid].name.clone(),
            at_ns: ctx.now_ns,
            error: e,
        })?;
        // Back to user space: memory.high reclaim owed by this task's charges.
        if !exited {
            mem_cgroup_handle_over_high(k, &mut ctx);
        }
        k.free_released_slots(&mut ctx);
        steps += 1;
        let t = &mut tasks[tid];
        t.sys_ns += ctx.now_ns - busy_from_ns - (t.user_ns - user_before_ns);
        let c = &mut cpus[cpu];
        c.now_ns = ctx.now_ns;
        end_ns = end_ns.max(ctx.now_ns);
        let asleep = ctx.sleep_ns > 0 && !exited;
        let switch_out = exited || asleep || (ctx.now_ns >= c.slice_end_ns && !runq.is_empty());
        if switch_out {
            c.current = None;
            k.cpu_mm[cpu] = NIL;
            k.mms[tasks[tid].mm as usize].cpu_last_ran_ns[cpu] = Some(ctx.now_ns);
            if exited {
                tasks[tid].exited_at_ns = Some(ctx.now_ns);
            } else if asleep {
                let wake_ns = ctx.now_ns + ctx.sleep_ns;
                tasks[tid].sleep_ns += ctx.sleep_ns;
                let at = sleepers.partition_point(|&(w, _)| w <= wake_ns);
                sleepers.insert(at, (wake_ns, tid));
            } else {
                tasks[tid].runnable_at_ns = ctx.now_ns;
                runq.push_back(tid);
            }
        }
        if check_invariants && steps % CHECK_EVERY_STEPS == 0 {
            invariants::check(k).map_err(|e| SimError::Invariant {
                at_ns: ctx.now_ns,
                steps,
                what: e,
            })?;
        }
        if steps & 0xffff == 0 {
            progress(steps, end_ns);
        }
    }
    if check_invariants {
        invariants::check(k).map_err(|e| SimError::Invariant {
            at_ns: end_ns,
            steps,
            what: e,
        })?;
    }
    Ok(SchedStats {
        steps,
        simulated_ns: end_ns,
    })
}

/// Move every sleeper due by `now_ns` to the back of the run queue, in wake order.
fn wake_sleepers(
    sleepers: &mut Vec<(u64, usize)>,
    runq: &mut VecDeque<usize>,
    tasks: &mut [Task],
    now_ns: u64,
) {
    let due = sleepers.partition_point(|&(w, _)| w <= now_ns);
    for (wake_ns, tid) in sleepers.drain(..due) {
        tasks[tid].runnable_at_ns = wake_ns;
        runq.push_back(tid);
    }
}

/// One step of a task. Returns true when the task exited. A task whose ops run out without an
/// Exit stops with its mm left mapped (tests read its page tables afterwards).
fn step(k: &mut Kernel, ctx: &mut Ctx, task: &mut Task) -> Result<bool, MmError> {
    let mm = task.mm;
    let Some(op) = task.ops.get(task.pc).cloned() else {
        return Ok(true);
    };
    match op {
        Op::Mmap { vma, nr_pages, thp } => {
            k.mms[mm as usize].mmap(vma, nr_pages, thp);
            ctx.spend(k.cost.syscall_ns);
        }
        Op::Touch {
            vma,
            first,
            nr,
            write,
        } => {
            let covered = touch(k, ctx, mm, vma, first + task.cursor, first + nr, write)?;
            task.cursor += covered;
            if task.cursor < nr {
                return Ok(false);
            }
            task.cursor = 0;
        }
        Op::Madvise {
            vma,
            first,
            nr,
            advice,
        } => {
            ctx.spend(k.cost.syscall_ns);
            madvise(k, ctx, mm, vma, first, nr, advice);
        }
        Op::Munmap { vma } => munmap(k, ctx, mm, vma),
        Op::Compute { ns } => {
            ctx.spend(ns);
            task.user_ns += ns;
        }
        Op::Mark(m) => {
            task.marks[m] = Some(Mark {
                at_ns: ctx.now_ns,
                counters: k.vmstat.to_map(),
            })
        }
        Op::Exit => {
            for vma in 0..k.mms[mm as usize].vmas.len() as u32 {
                munmap(k, ctx, mm, vma);
            }
            return Ok(true);
        }
    }
    task.pc += 1;
    Ok(false)
}

fn munmap(k: &mut Kernel, ctx: &mut Ctx, mm: u32, vma: u32) {
    let Some(nr) = k.mms[mm as usize]
        .vmas
        .get(vma as usize)
        .and_then(|v| v.as_ref())
        .map(|v| v.nr_pages)
    else {
        return;
    };
    ctx.spend(k.cost.syscall_ns);
    zap_range(k, ctx, mm, vma, 0, nr);
    k.mms[mm as usize].vmas[vma as usize] = None;
}

#[derive(Debug, thiserror::Error)]
pub enum SimError {
    #[error("task {task} at {at_ns} ns: {error}")]
    Mm {
        task: String,
        at_ns: u64,
        error: MmError,
    },
    #[error("invariant broken at {at_ns} ns after {steps} steps: {what}")]
    Invariant {
        at_ns: u64,
        steps: u64,
        what: String,
    },
}
