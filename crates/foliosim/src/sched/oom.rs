//! Tasks killed by the OOM killer (mm/oom_kill.rs). The mm layer tears the victim's mm down
//! and records the kill; after each step the scheduler ends every task of that mm wherever it
//! is (on a CPU between steps, in the run queue, asleep, at a barrier): SIGKILL, and it never
//! runs again. The CPU time of the victim's exit is booked to it.

use super::queue::Queues;
use super::switch_out;
use super::task::{State, Task};
use crate::mm::Kernel;
use std::collections::BTreeMap;

/// End the tasks of the processes killed since the last call, at `now_ns`. Returns how many
/// user tasks ended.
pub(super) fn end_killed_tasks(
    k: &mut Kernel,
    tasks: &mut [Task],
    q: &mut Queues,
    barriers: &mut BTreeMap<u32, Vec<usize>>,
    now_ns: u64,
) -> usize {
    let mut ended = 0;
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
            if t.state == State::Exited {
                continue;
            }
            // Between steps on a CPU: the CPU is free once the kill is known.
            if let Some(cpu) = q.cpus.iter().position(|c| c.current == Some(tid)) {
                let c = &mut q.cpus[cpu];
                c.current = None;
                c.preempt = false;
                c.now_ns = c.now_ns.max(now_ns);
                switch_out(k, cpu, t, now_ns);
            }
            q.runq.retain(|&other| other != tid);
            q.sleepers.retain(|&(_, other)| other != tid);
            for waiting in barriers.values_mut() {
                waiting.retain(|&other| other != tid);
            }
            t.state = State::Exited;
            t.exited_at_ns = Some(now_ns);
            ended += 1;
        }
    }
    ended
}
