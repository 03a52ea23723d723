//! Tasks as real processes: one forked child per process, all released at once like
//! `usemem -n N`; the process's leader runs its ops on the child's main thread and each of its
//! threads (the sim's tasks sharing an mm) on a thread of its own ([`crate::interp`]).

use crate::interp::{self, Process, ThreadReport};
use crate::shared_barrier::SharedBarriers;
use anyhow::{bail, Context, Result};
use foliosim::workload::{empty_marks, Mark, Op, TaskMarks};
use serde::{Deserialize, Serialize};
use std::os::unix::io::RawFd;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::{Duration, Instant};

/// One process to run: its leader's ops, its threads, and the cgroup.procs file of its memcg.
#[derive(Default)]
pub struct LiveTask {
    pub name: String,
    pub workload: usize,
    pub cgroup_procs: Option<PathBuf>,
    pub ops: Vec<Op>,
    /// Pin the task to the n-th CPU the runner may use (sched_setaffinity) before it starts.
    pub cpu: Option<usize>,
    /// Further threads of the process (sharing its VMAs and barriers).
    pub threads: Vec<LiveThread>,
    /// The run's file directory (`crate::files::path`), for file ops.
    pub file_dir: Option<PathBuf>,
    /// The run's `[[tmpfs]]` mount directories, in the scenario's order, for shmem ops.
    pub tmpfs_dirs: Vec<PathBuf>,
    /// Seeds the contents of files the ops create.
    pub seed: u64,
    /// /proc/PID/oom_score_adj of the process (the workload's `oom_score_adj`; 0 leaves it).
    pub oom_score_adj: i32,
}

/// A thread of a [`LiveTask`]'s process.
pub struct LiveThread {
    pub name: String,
    pub ops: Vec<Op>,
    /// Pinned to the n-th CPU the runner may use, as `LiveTask::cpu`.
    pub cpu: Option<usize>,
}

/// What happened to one task (a process's leader or one of its threads).
pub struct TaskOutcome {
    pub name: String,
    pub workload: usize,
    pub marks: TaskMarks,
    /// Latency samples (series, ns), as the sim's `UserProgram.latencies`.
    pub latencies: Vec<(u8, u64)>,
    /// Why the task did not finish its ops (killed by the OOM killer, an op failed…).
    pub failure: Option<String>,
}

pub struct ExecOutcome {
    pub tasks: Vec<TaskOutcome>,
    /// From the release of the tasks until the last one was reaped.
    pub wall_ns: u64,
    /// CPU time of the task processes (getrusage RUSAGE_CHILDREN).
    pub user_ns: u64,
    pub sys_ns: u64,
}

#[derive(Serialize, Deserialize, Default)]
struct ChildReport {
    /// Leader first, then each thread.
    threads: Vec<ThreadReport>,
    /// A failure of the process before its threads ran (joining the memcg…).
    error: Option<String>,
}

/// Fault injection for the tests (as `FOLIOSIM_LIVE_KILL_AT`): every task child panics at
/// once. The child must end there, never unwind into its copy of the parent's stack.
pub const CHILD_PANIC_ENV: &str = "FOLIOSIM_LIVE_CHILD_PANIC";

fn children_cpu_ns() -> (u64, u64) {
    // SAFETY: getrusage into a zeroed local.
    let mut ru: libc::rusage = unsafe { std::mem::zeroed() };
    unsafe { libc::getrusage(libc::RUSAGE_CHILDREN, &mut ru) };
    let ns = |tv: libc::timeval| tv.tv_sec as u64 * 1_000_000_000 + tv.tv_usec as u64 * 1000;
    (ns(ru.ru_utime), ns(ru.ru_stime))
}

fn empty_cpu_set() -> libc::cpu_set_t {
    // SAFETY: cpu_set_t is a plain bit array; all zeroes is the empty set.
    unsafe { std::mem::zeroed() }
}

fn affinity() -> Result<libc::cpu_set_t> {
    let mut set = empty_cpu_set();
    // SAFETY: sched_getaffinity of this thread into a local set of the size passed.
    if unsafe { libc::sched_getaffinity(0, std::mem::size_of::<libc::cpu_set_t>(), &mut set) } != 0
    {
        bail!("sched_getaffinity: {}", std::io::Error::last_os_error());
    }
    Ok(set)
}

fn set_affinity(set: &libc::cpu_set_t) -> Result<()> {
    // SAFETY: sched_setaffinity of this thread from a local set of the size passed.
    if unsafe { libc::sched_setaffinity(0, std::mem::size_of::<libc::cpu_set_t>(), set) } != 0 {
        bail!("sched_setaffinity: {}", std::io::Error::last_os_error());
    }
    Ok(())
}

fn pipe() -> Result<(RawFd, RawFd)> {
    let mut fds = [0; 2];
    // SAFETY: pipe2 into a local array.
    if unsafe { libc::pipe2(fds.as_mut_ptr(), libc::O_CLOEXEC) } != 0 {
        bail!("pipe: {}", std::io::Error::last_os_error());
    }
    Ok((fds[0], fds[1]))
}

/// Run every task in its own process; returns when all have exited. `should_stop` is polled:
/// when it returns a reason, every task is SIGKILLed and that reason is the error.
pub fn run_tasks(
    tasks: &[LiveTask],
    should_stop: &dyn Fn() -> Option<String>,
) -> Result<ExecOutcome> {
    let shared = SharedBarriers::for_processes(tasks.iter().map(|t| {
        t.ops
            .iter()
            .chain(t.threads.iter().flat_map(|th| th.ops.iter()))
            .collect()
    }))?
    .map(Arc::new);
    let (start_r, start_w) = pipe()?;
    let (user0, sys0) = children_cpu_ns();
    let parent_cpus = affinity()?;
    let mut children = fork_tasks(tasks, &parent_cpus, (start_r, start_w), &shared)?;
    set_affinity(&parent_cpus)?;
    // SAFETY: closing our ends of the start pipe releases every child at once (read sees EOF).
    unsafe {
        libc::close(start_r);
        libc::close(start_w);
    }
    let started = Instant::now();
    let stop_reason = reap_children(&mut children, should_stop, shared.as_deref());
    let wall_ns = started.elapsed().as_nanos() as u64;
    let (user1, sys1) = children_cpu_ns();
    let mut outcomes = vec![];
    for (task, child) in tasks.iter().zip(children) {
        // SAFETY: our read end, no longer used.
        unsafe { libc::close(child.fd) };
        outcomes.extend(task_outcomes(task, child));
    }
    if let Some(reason) = stop_reason {
        bail!("{reason}");
    }
    Ok(ExecOutcome {
        tasks: outcomes,
        wall_ns,
        user_ns: user1.saturating_sub(user0),
        sys_ns: sys1.saturating_sub(sys0),
    })
}

/// A task's process as the parent follows it: its pid, the read end of its report pipe,
/// what it has sent so far, and its wait status once reaped.
struct Child {
    pid: libc::pid_t,
    fd: RawFd,
    buf: Vec<u8>,
    status: Option<i32>,
}

fn kill_all(children: &[Child]) {
    for c in children {
        if c.status.is_none() {
            // SAFETY: kill(2) of our own child.
            unsafe { libc::kill(c.pid, libc::SIGKILL) };
        }
    }
}

/// fork a process per task, each waiting on the start pipe; on an error, those forked so far
/// are killed.
fn fork_tasks(
    tasks: &[LiveTask],
    parent_cpus: &libc::cpu_set_t,
    (start_r, start_w): (RawFd, RawFd),
    shared: &Option<Arc<SharedBarriers>>,
) -> Result<Vec<Child>> {
    // Read here, in the parent: a forked child of a threaded parent must not take the env lock.
    let child_panics = std::env::var_os(CHILD_PANIC_ENV).is_some();
    // SAFETY: CPU_ISSET reads a bit of a local set; every index is below CPU_SETSIZE.
    let allowed: Vec<usize> = (0..libc::CPU_SETSIZE as usize)
        .filter(|&c| unsafe { libc::CPU_ISSET(c, parent_cpus) })
        .collect();
    let mut children: Vec<Child> = vec![];
    for task in tasks {
        let (out_r, out_w) = pipe()?;
        // A pinned task is forked from a parent already on its CPU: its new mm then never runs
        // elsewhere, so no other CPU ever enters its mm_cpumask (moving the child after fork
        // would leave the CPU it started on in the mask, and in every TLB flush, for ~1 s).
        if let Some(&cpu) = task.cpu.and_then(|n| allowed.get(n)) {
            let mut set = empty_cpu_set();
            // SAFETY: CPU_SET on a local set with a CPU taken from a valid set.
            unsafe { libc::CPU_SET(cpu, &mut set) };
            if let Err(e) = set_affinity(&set) {
                kill_all(&children);
                return Err(e.context(format!("pinning {} to cpu {cpu}", task.name)));
            }
        }
        // SAFETY: fork; the child only runs `child_main` and then _exit()s.
        let pid = unsafe { libc::fork() };
        if pid < 0 {
            kill_all(&children);
            bail!("fork: {}", std::io::Error::last_os_error());
        }
        if pid == 0 {
            // SAFETY: closing fds the child does not use; _exit never returns.
            unsafe {
                libc::close(start_w);
                libc::close(out_r);
                let thread_cpus: Vec<Option<usize>> = task
                    .threads
                    .iter()
                    .map(|t| t.cpu.and_then(|n| allowed.get(n).copied()))
                    .collect();
                // A panic must end here: unwinding on would run the parent's code and
                // destructors (its HostGuard) in this child. 101 as an uncaught panic.
                let code = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
                    if child_panics {
                        panic!("{CHILD_PANIC_ENV} is set: the task child panics");
                    }
                    child_main(task, &thread_cpus, start_r, out_w, shared.clone())
                }))
                .unwrap_or(101);
                libc::_exit(code);
            }
        }
        // SAFETY: closing the child's end in the parent; nonblocking so draining never waits.
        unsafe {
            libc::close(out_w);
            libc::fcntl(out_r, libc::F_SETFL, libc::O_NONBLOCK);
        }
        children.push(Child {
            pid,
            fd: out_r,
            buf: vec![],
            status: None,
        });
    }
    Ok(children)
}

/// Drain and reap the children until all have exited; kill them all when `should_stop`
/// gives a reason (returned). A failed process never reaches its barriers: its partners are
/// released.
fn reap_children(
    children: &mut [Child],
    should_stop: &dyn Fn() -> Option<String>,
    shared: Option<&SharedBarriers>,
) -> Option<String> {
    let mut stop_reason = None;
    while children.iter().any(|c| c.status.is_none()) {
        if stop_reason.is_none() {
            stop_reason = should_stop();
            if stop_reason.is_some() {
                kill_all(children);
            }
        }
        for c in children.iter_mut() {
            drain(c.fd, &mut c.buf);
            if c.status.is_none() {
                let mut st = 0;
                // SAFETY: waitpid on our own child, nonblocking.
                if unsafe { libc::waitpid(c.pid, &mut st, libc::WNOHANG) } == c.pid {
                    drain(c.fd, &mut c.buf);
                    c.status = Some(st);
                    let failed = libc::WIFSIGNALED(st) || libc::WEXITSTATUS(st) != 0;
                    if let (true, Some(s)) = (failed, shared) {
                        s.abort();
                    }
                }
            }
        }
        std::thread::sleep(Duration::from_millis(2));
    }
    stop_reason
}

/// The outcome of each thread of a reaped task's process, from its report and exit status.
fn task_outcomes(task: &LiveTask, child: Child) -> Vec<TaskOutcome> {
    let status = child.status.unwrap_or(0);
    let report: Option<ChildReport> = serde_json::from_slice(&child.buf).ok();
    let killed = if libc::WIFSIGNALED(status) {
        let sig = libc::WTERMSIG(status);
        Some(if sig == libc::SIGKILL {
            "killed by SIGKILL (the memcg OOM killer, or the run was stopped)".to_string()
        } else {
            format!("killed by signal {sig}")
        })
    } else if let Some(e) = report.as_ref().and_then(|r| r.error.clone()) {
        Some(e)
    } else if libc::WEXITSTATUS(status) != 0 && report.is_none() {
        Some(format!("exited with status {}", libc::WEXITSTATUS(status)))
    } else {
        None
    };
    let mut reports = report.map(|r| r.threads).unwrap_or_default().into_iter();
    let programs = std::iter::once((&task.name, &task.ops))
        .chain(task.threads.iter().map(|t| (&t.name, &t.ops)));
    let mut outcomes = vec![];
    for (name, ops) in programs {
        let r = reports.next().unwrap_or_default();
        let mut marks = empty_marks(ops);
        for (m, at_ns, counters) in r.marks {
            if m < marks.len() {
                marks[m] = Some(Mark { at_ns, counters });
            }
        }
        outcomes.push(TaskOutcome {
            name: name.clone(),
            workload: task.workload,
            marks,
            latencies: r.latencies,
            failure: killed.clone().or(r.error),
        });
    }
    outcomes
}

fn drain(fd: RawFd, buf: &mut Vec<u8>) {
    let mut chunk = [0u8; 65536];
    loop {
        // SAFETY: read into a local buffer from our nonblocking fd.
        let n = unsafe { libc::read(fd, chunk.as_mut_ptr().cast(), chunk.len()) };
        if n <= 0 {
            return;
        }
        buf.extend_from_slice(&chunk[..n as usize]);
    }
}

/// The child: default signal actions, die with the parent, join the memcg, wait for the start,
/// run the leader's and each thread's ops, send the reports. Returns the exit status.
fn child_main(
    task: &LiveTask,
    thread_cpus: &[Option<usize>],
    start_r: RawFd,
    out_w: RawFd,
    shared: Option<Arc<SharedBarriers>>,
) -> i32 {
    child_setup(task);
    let mut report = ChildReport::default();
    let programs: Vec<&[Op]> = std::iter::once(task.ops.as_slice())
        .chain(task.threads.iter().map(|t| t.ops.as_slice()))
        .collect();
    let joined = match &task.cgroup_procs {
        // SAFETY: getpid has no preconditions.
        Some(procs) => std::fs::write(procs, unsafe { libc::getpid() }.to_string())
            .with_context(|| format!("joining {}", procs.display())),
        None => Ok(()),
    };
    let process = joined.and_then(|()| {
        let dirs = (task.file_dir.clone(), task.tmpfs_dirs.clone());
        Process::new(&programs, dirs, task.seed, shared)
    });
    match process {
        Err(e) => report.error = Some(format!("{}: {e:#}", task.name)),
        Ok(process) => {
            let mut byte = 0u8;
            // Blocks until the parent closes the start pipe (EOF) or dies.
            // SAFETY: read into a local byte.
            while unsafe { libc::read(start_r, (&mut byte as *mut u8).cast(), 1) } < 0
                && std::io::Error::last_os_error().raw_os_error() == Some(libc::EINTR)
            {}
            report.threads = run_threads(task, &process, thread_cpus, &programs);
        }
    }
    let bytes = serde_json::to_vec(&report).unwrap_or_default();
    let mut sent = 0;
    while sent < bytes.len() {
        // SAFETY: write from our buffer to our pipe end.
        let n = unsafe { libc::write(out_w, bytes[sent..].as_ptr().cast(), bytes.len() - sent) };
        if n <= 0 {
            break;
        }
        sent += n as usize;
    }
    i32::from(report.error.is_some() || report.threads.iter().any(|t| t.error.is_some()))
}

/// The freshly forked child's own settings: default signal actions, death with the parent,
/// the highest priority, and the scenario's oom_score_adj.
fn child_setup(task: &LiveTask) {
    // SAFETY: plain syscalls in the freshly forked child.
    unsafe {
        crate::settings::close_locks_in_child();
        for sig in [libc::SIGINT, libc::SIGTERM, libc::SIGHUP, libc::SIGQUIT] {
            libc::signal(sig, libc::SIG_DFL);
        }
        libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGKILL);
        // Highest priority: other work on the host (builds, the runner) then perturbs the
        // tasks' timing far less. Runs are bounded by the live timeout. Threads inherit it.
        // With autogroups (sched_autogroup_enabled), nice only ranks tasks within their
        // session's group and each session's group gets an equal share: the task gets a
        // session, hence a group, of its own, and that group the same nice. Both go with the
        // process: nothing on the host to restore.
        libc::setpriority(libc::PRIO_PROCESS, 0, -20);
        if libc::setsid() >= 0 {
            let _ = std::fs::write("/proc/self/autogroup", "-20");
        }
    }
    // The OOM killer's view of this process, as the scenario gives it (our own process only).
    if task.oom_score_adj != 0 {
        if let Err(e) = std::fs::write("/proc/self/oom_score_adj", task.oom_score_adj.to_string()) {
            eprintln!("{}: oom_score_adj {}: {e}", task.name, task.oom_score_adj);
        }
    }
}

/// Each program of the process on a thread of its own (the leader's on this one), pinned
/// where the task says; a thread that fails aborts the process's barriers.
fn run_threads(
    task: &LiveTask,
    process: &Process,
    thread_cpus: &[Option<usize>],
    programs: &[&[Op]],
) -> Vec<ThreadReport> {
    let names: Vec<&str> = std::iter::once(task.name.as_str())
        .chain(task.threads.iter().map(|t| t.name.as_str()))
        .collect();
    let run = |i: usize| {
        let mut r = ThreadReport::default();
        if let Some(cpu) = thread_cpus.get(i.wrapping_sub(1)).copied().flatten() {
            let mut set = empty_cpu_set();
            // SAFETY: CPU_SET on a local set with a CPU from the parent's set.
            unsafe { libc::CPU_SET(cpu, &mut set) };
            if let Err(e) = set_affinity(&set) {
                r.error = Some(format!("{}: pinning to cpu {cpu}: {e:#}", names[i]));
            }
        }
        if r.error.is_none() {
            if let Err(e) = interp::interpret(process, programs[i], &mut r) {
                r.error = Some(format!("{}: {e:#}", names[i]));
            }
        }
        if r.error.is_some() {
            process.abort();
        }
        r
    };
    std::thread::scope(|s| {
        let handles: Vec<_> = (1..programs.len())
            .map(|i| s.spawn(move || run(i)))
            .collect();
        let mut out = vec![run(0)];
        for (i, h) in handles.into_iter().enumerate() {
            out.push(h.join().unwrap_or_else(|_| ThreadReport {
                error: Some(format!("{}: thread panicked", names[i + 1])),
                ..Default::default()
            }));
        }
        out
    })
}
