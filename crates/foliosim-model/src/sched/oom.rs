//! Tasks killed by the OOM killer (mm/oom_kill.rs). The mm layer tears the victim's mm down
//! and records the kill; after each step the scheduler ends every task of that mm wherever it
//! is (on a CPU between steps, in the run queue, asleep, at a barrier): SIGKILL, and it never
//! runs again. The CPU time of the victim's exit is booked to it.

use super::queue::Queues;
use super::switch_out;
use super::task::{State, Task};
use crate::mm::Kernel;
use crate::workload::Op;
use std::collections::{BTreeMap, BTreeSet};

/// End the tasks of the processes killed since the last call, at `now_ns`. Returns how many
/// user tasks ended.
pub(super) fn end_killed_tasks(
    k: &mut Kernel,
    tasks: &mut [Task],
    q: &mut Queues,
    barriers: &mut BTreeMap<u32, Vec<usize>>,
    dead: &mut BTreeSet<u32>,
    now_ns: u64,
) -> usize {
    let mut ended = 0;
    let mut gone = Vec::new();
    for i in k.oom.take_new() {
        let (mm, exit_ns) = (k.oom.kills[i].mm, k.oom.kills[i].exit_ns);
        let mut exit_booked = false;
        for (tid, t) in tasks.iter_mut().enumerate() {
            if t.mm != mm || t.program().is_none() {
                continue;
            }
            if !exit_booked {
                t.sys_ns += exit_ns;
                exit_booked = true;
            }
            // Its barriers from here on are dead (one asleep at a barrier is past it).
            let p = t.program().expect("a user task");
            let from = if t.state == State::AtBarrier {
                p.pc - 1
            } else {
                p.pc
            };
            gone.push((tid, from));
            if t.state == State::Exited {
                // The task the OOM killer chose while it ran: it exited on its own clock.
                continue;
            }
            // Between steps on a CPU: the CPU is free once the kill is known.
            if let Some(cpu) = q.cpus.iter().position(|c| c.current == Some(tid)) {
                let c = &mut q.cpus[cpu];
                c.current = None;
                c.preempt = false;
                c.now_ns = c.now_ns.max(now_ns);
                q.refresh(cpu);
                switch_out(k, cpu, t, now_ns);
            }
            q.dequeue(tid);
            q.sleepers.retain(|&(_, other)| other != tid);
            for waiting in barriers.values_mut() {
                waiting.retain(|&other| other != tid);
            }
            t.state = State::Exited;
            t.exited_at_ns = Some(now_ns);
            ended += 1;
        }
    }
    ended + release_barriers(tasks, q, barriers, dead, gone, now_ns)
}

/// The barriers of tasks that ended early (`gone`: killed, or never started; with the index
/// of the first op they will not run) are dead: a
/// partner waiting at one goes on, as one reaching it later will (a parent's wait4 returns
/// when its child is killed). A partner for which it is the start of its program (a child
/// not yet forked, an image not yet exec'd by the killed task) never starts: it ends too, and
/// so on. Returns how many more user tasks ended.
pub(super) fn release_barriers(
    tasks: &mut [Task],
    q: &mut Queues,
    barriers: &mut BTreeMap<u32, Vec<usize>>,
    dead: &mut BTreeSet<u32>,
    mut gone: Vec<(usize, usize)>,
    now_ns: u64,
) -> usize {
    let mut ended = 0;
    while let Some((tid, from)) = gone.pop() {
        let Some(p) = tasks[tid].program() else {
            continue;
        };
        let ids: Vec<u32> = p.ops[from..]
            .iter()
            .filter_map(|op| match op {
                Op::Barrier { id, .. } => Some(*id),
                _ => None,
            })
            .collect();
        for id in ids {
            dead.insert(id);
            for w in barriers.remove(&id).unwrap_or_default() {
                if starts_at_barrier(&tasks[w]) {
                    tasks[w].state = State::Exited;
                    tasks[w].exited_at_ns = Some(now_ns);
                    ended += 1;
                    gone.push((w, 0));
                } else {
                    q.wake(tasks, w, now_ns);
                }
            }
        }
    }
    ended
}

/// The task's program began with the barrier it is at (or just passed): a forked child or an
/// exec'd image waiting to start.
pub(super) fn starts_at_barrier(t: &Task) -> bool {
    t.program()
        .is_some_and(|p| p.pc == 1 && matches!(p.ops.first(), Some(Op::Barrier { .. })))
}
