//! The Op interpreter: one forked child per task runs the task's ops for real (mmap, stores to
//! every word of each page, madvise, munmap, exit), all tasks released at once like
//! `usemem -n N`. Marks record CLOCK_MONOTONIC and a counter snapshot; the time spent reading
//! the counters is taken out of the task's clock so measured phases are the workload's alone.

use crate::counters;
use anyhow::{bail, Context, Result};
use foliosim::mm::madvise::Advice;
use foliosim::mm::mmap::ThpAdvice;
use foliosim::workload::{empty_marks, Mark, Op, TaskMarks};
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;
use std::os::unix::io::RawFd;
use std::path::PathBuf;
use std::time::{Duration, Instant};

const PAGE_SIZE: usize = 4096;
const PMD_SIZE: usize = 2 << 20;
// Linux madvise advice values (include/uapi/asm-generic/mman-common.h).
const MADV_DONTNEED: i32 = 4;
const MADV_HUGEPAGE: i32 = 14;
const MADV_NOHUGEPAGE: i32 = 15;
const MADV_COLD: i32 = 20;
const MADV_PAGEOUT: i32 = 21;

/// One task to run: its ops and the cgroup.procs file of its memcg.
pub struct LiveTask {
    pub name: String,
    pub workload: usize,
    pub cgroup_procs: Option<PathBuf>,
    pub ops: Vec<Op>,
    /// Pin the task to the n-th CPU the runner may use (sched_setaffinity) before it starts.
    pub cpu: Option<usize>,
}

/// What happened to one task.
pub struct TaskOutcome {
    pub name: String,
    pub workload: usize,
    pub marks: TaskMarks,
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

#[derive(Serialize, Deserialize)]
struct ChildReport {
    marks: Vec<(usize, u64, BTreeMap<String, u64>)>,
    error: Option<String>,
}

fn now_ns() -> u64 {
    let mut ts = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: clock_gettime into a local.
    unsafe { libc::clock_gettime(libc::CLOCK_MONOTONIC, &mut ts) };
    ts.tv_sec as u64 * 1_000_000_000 + ts.tv_nsec as u64
}

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
    let (start_r, start_w) = pipe()?;
    let mut children: Vec<(libc::pid_t, RawFd, Vec<u8>, Option<i32>)> = vec![];
    let (user0, sys0) = children_cpu_ns();
    let kill_all = |children: &[(libc::pid_t, RawFd, Vec<u8>, Option<i32>)]| {
        for (pid, _, _, status) in children {
            if status.is_none() {
                // SAFETY: kill(2) of our own child.
                unsafe { libc::kill(*pid, libc::SIGKILL) };
            }
        }
    };
    let parent_cpus = affinity()?;
    // SAFETY: CPU_ISSET reads a bit of a local set; every index is below CPU_SETSIZE.
    let allowed: Vec<usize> = (0..libc::CPU_SETSIZE as usize)
        .filter(|&c| unsafe { libc::CPU_ISSET(c, &parent_cpus) })
        .collect();
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
                let code = child_main(task, start_r, out_w);
                libc::_exit(code);
            }
        }
        // SAFETY: closing the child's end in the parent; nonblocking so draining never waits.
        unsafe {
            libc::close(out_w);
            libc::fcntl(out_r, libc::F_SETFL, libc::O_NONBLOCK);
        }
        children.push((pid, out_r, vec![], None));
    }
    set_affinity(&parent_cpus)?;
    // SAFETY: closing our ends of the start pipe releases every child at once (read sees EOF).
    unsafe {
        libc::close(start_r);
        libc::close(start_w);
    }
    let started = Instant::now();
    let mut stop_reason = None;
    while children.iter().any(|c| c.3.is_none()) {
        if stop_reason.is_none() {
            stop_reason = should_stop();
            if stop_reason.is_some() {
                kill_all(&children);
            }
        }
        for (pid, fd, buf, status) in children.iter_mut() {
            drain(*fd, buf);
            if status.is_none() {
                let mut st = 0;
                // SAFETY: waitpid on our own child, nonblocking.
                if unsafe { libc::waitpid(*pid, &mut st, libc::WNOHANG) } == *pid {
                    drain(*fd, buf);
                    *status = Some(st);
                }
            }
        }
        std::thread::sleep(Duration::from_millis(2));
    }
    let wall_ns = started.elapsed().as_nanos() as u64;
    let (user1, sys1) = children_cpu_ns();
    let mut outcomes = vec![];
    for (task, (_, fd, buf, status)) in tasks.iter().zip(children) {
        // SAFETY: our read end, no longer used.
        unsafe { libc::close(fd) };
        let status = status.unwrap_or(0);
        let mut failure = None;
        let report: Option<ChildReport> = serde_json::from_slice(&buf).ok();
        if libc::WIFSIGNALED(status) {
            let sig = libc::WTERMSIG(status);
            failure = Some(if sig == libc::SIGKILL {
                "killed by SIGKILL (the memcg OOM killer, or the run was stopped)".to_string()
            } else {
                format!("killed by signal {sig}")
            });
        } else if let Some(e) = report.as_ref().and_then(|r| r.error.clone()) {
            failure = Some(e);
        } else if libc::WEXITSTATUS(status) != 0 {
            failure = Some(format!("exited with status {}", libc::WEXITSTATUS(status)));
        }
        let mut marks = empty_marks(&task.ops);
        for (m, at_ns, counters) in report.map(|r| r.marks).unwrap_or_default() {
            if m < marks.len() {
                marks[m] = Some(Mark { at_ns, counters });
            }
        }
        outcomes.push(TaskOutcome {
            name: task.name.clone(),
            workload: task.workload,
            marks,
            failure,
        });
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
/// run the ops, send the marks. Returns the exit status.
fn child_main(task: &LiveTask, start_r: RawFd, out_w: RawFd) -> i32 {
    // SAFETY: plain syscalls in the freshly forked child.
    unsafe {
        let lock = crate::settings::LOCK_FD.load(std::sync::atomic::Ordering::SeqCst);
        if lock >= 0 {
            libc::close(lock);
        }
        for sig in [libc::SIGINT, libc::SIGTERM, libc::SIGHUP, libc::SIGQUIT] {
            libc::signal(sig, libc::SIG_DFL);
        }
        libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGKILL);
        // Highest priority: other work on the host (builds, the runner) then perturbs the
        // tasks' timing far less. Runs are bounded by the live timeout.
        libc::setpriority(libc::PRIO_PROCESS, 0, -20);
    }
    let mut report = ChildReport {
        marks: vec![],
        error: None,
    };
    let joined = match &task.cgroup_procs {
        // SAFETY: getpid has no preconditions.
        Some(procs) => std::fs::write(procs, unsafe { libc::getpid() }.to_string())
            .with_context(|| format!("joining {}", procs.display())),
        None => Ok(()),
    };
    if let Err(e) = joined {
        report.error = Some(format!("{e:#}"));
    } else {
        let mut byte = 0u8;
        // Blocks until the parent closes the start pipe (EOF) or dies.
        // SAFETY: read into a local byte.
        while unsafe { libc::read(start_r, (&mut byte as *mut u8).cast(), 1) } < 0 {}
        if let Err(e) = interpret(&task.ops, &mut report.marks) {
            report.error = Some(format!("{}: {e:#}", task.name));
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
    i32::from(report.error.is_some())
}

#[derive(Clone, Copy)]
struct Region {
    addr: *mut u8,
    len: usize,
}

/// Map `len` bytes of anonymous memory aligned to 2 MiB, so every folio size up to PMD fits
/// the way it does in the sim (whose VMAs start aligned).
fn mmap_aligned(len: usize) -> Result<Region> {
    let padded = len + PMD_SIZE;
    // SAFETY: anonymous private mapping; we trim it to an aligned subrange below.
    let raw = unsafe {
        libc::mmap(
            std::ptr::null_mut(),
            padded,
            libc::PROT_READ | libc::PROT_WRITE,
            libc::MAP_PRIVATE | libc::MAP_ANONYMOUS | libc::MAP_NORESERVE,
            -1,
            0,
        )
    };
    if raw == libc::MAP_FAILED {
        bail!("mmap {len} bytes: {}", std::io::Error::last_os_error());
    }
    let start = raw as usize;
    let aligned = (start + PMD_SIZE - 1) & !(PMD_SIZE - 1);
    // SAFETY: unmapping the unaligned head and the tail of our own fresh mapping.
    unsafe {
        if aligned > start {
            libc::munmap(raw, aligned - start);
        }
        let end = aligned + len;
        if start + padded > end {
            libc::munmap(end as *mut libc::c_void, start + padded - end);
        }
    }
    Ok(Region {
        addr: aligned as *mut u8,
        len,
    })
}

fn madvise(region: Region, first: u32, nr: u32, advice: i32, name: &str) -> Result<()> {
    let offset = first as usize * PAGE_SIZE;
    let len = nr as usize * PAGE_SIZE;
    if offset + len > region.len {
        bail!("madvise {name}: pages {first}+{nr} beyond the mapping");
    }
    // SAFETY: the range lies within our mapping.
    let rc = unsafe { libc::madvise(region.addr.add(offset).cast(), len, advice) };
    if rc != 0 {
        bail!("madvise({name}): {}", std::io::Error::last_os_error());
    }
    Ok(())
}

/// Store to every 8-byte word of each page (vm-scalability usemem's loop); the values differ
/// per word so neither zram nor zswap sees same-filled pages. Reads load every word.
fn touch(region: Region, first: u32, nr: u32, write: bool) -> Result<()> {
    let first = first as usize;
    let nr = nr as usize;
    if (first + nr) * PAGE_SIZE > region.len {
        bail!("touch: pages {first}+{nr} beyond the mapping");
    }
    let words = PAGE_SIZE / 8;
    let mut sink = 0u64;
    for page in first..first + nr {
        // SAFETY: the page lies within our read-write mapping.
        let base = unsafe { region.addr.add(page * PAGE_SIZE) as *mut u64 };
        for w in 0..words {
            // SAFETY: within the page.
            unsafe {
                let p = base.add(w);
                if write {
                    std::ptr::write_volatile(p, ((page * words + w) as u64) | 1 << 40);
                } else {
                    sink = sink.wrapping_add(std::ptr::read_volatile(p));
                }
            }
        }
    }
    std::hint::black_box(sink);
    Ok(())
}

fn interpret(ops: &[Op], marks: &mut Vec<(usize, u64, BTreeMap<String, u64>)>) -> Result<()> {
    let mut vmas: Vec<Option<Region>> = vec![];
    // Time spent reading counters at marks, taken out of every later timestamp.
    let mut excluded_ns = 0u64;
    let vma_of = |vmas: &Vec<Option<Region>>, vma: u32| -> Result<Region> {
        vmas.get(vma as usize)
            .copied()
            .flatten()
            .with_context(|| format!("vma {vma} is not mapped"))
    };
    for op in ops {
        match op {
            Op::Mmap { vma, nr_pages, thp } => {
                let region = mmap_aligned(*nr_pages as usize * PAGE_SIZE)?;
                match thp {
                    ThpAdvice::Hugepage => {
                        madvise(region, 0, *nr_pages, MADV_HUGEPAGE, "HUGEPAGE")?
                    }
                    ThpAdvice::NoHugepage => {
                        madvise(region, 0, *nr_pages, MADV_NOHUGEPAGE, "NOHUGEPAGE")?
                    }
                    ThpAdvice::Default => {}
                }
                let i = *vma as usize;
                if vmas.len() <= i {
                    vmas.resize(i + 1, None);
                }
                vmas[i] = Some(region);
            }
            Op::Touch {
                vma,
                first,
                nr,
                write,
            } => touch(vma_of(&vmas, *vma)?, *first, *nr, *write)?,
            Op::Madvise {
                vma,
                first,
                nr,
                advice,
            } => {
                let (value, name) = match advice {
                    Advice::Pageout => (MADV_PAGEOUT, "PAGEOUT"),
                    Advice::Cold => (MADV_COLD, "COLD"),
                    Advice::Dontneed => (MADV_DONTNEED, "DONTNEED"),
                    Advice::Hugepage => (MADV_HUGEPAGE, "HUGEPAGE"),
                    Advice::Nohugepage => (MADV_NOHUGEPAGE, "NOHUGEPAGE"),
                };
                madvise(vma_of(&vmas, *vma)?, *first, *nr, value, name)?;
            }
            Op::Munmap { vma } => {
                let region = vma_of(&vmas, *vma)?;
                // SAFETY: unmapping our own mapping, forgotten below.
                unsafe { libc::munmap(region.addr.cast(), region.len) };
                vmas[*vma as usize] = None;
            }
            Op::MunmapRange { vma, first, nr } => {
                let region = vma_of(&vmas, *vma)?;
                let (offset, len) = (*first as usize * PAGE_SIZE, *nr as usize * PAGE_SIZE);
                if offset + len > region.len {
                    bail!("munmap: pages {first}+{nr} beyond vma {vma}");
                }
                // SAFETY: part of our own mapping; the sim leaves a hole there too.
                unsafe { libc::munmap(region.addr.add(offset).cast(), len) };
            }
            Op::Compute { ns } => {
                let until = now_ns() + ns;
                while now_ns() < until {
                    std::hint::spin_loop();
                }
            }
            Op::Mark(m) => {
                let t0 = now_ns();
                let snapshot = counters::snapshot();
                let t1 = now_ns();
                marks.push((*m, t0 - excluded_ns, snapshot));
                excluded_ns += t1 - t0;
            }
            Op::Exit => break,
            Op::CompactMemory => std::fs::write("/proc/sys/vm/compact_memory", "1")
                .context("writing /proc/sys/vm/compact_memory")?,
            #[allow(unreachable_patterns)]
            other => bail!("operation {other:?} is not supported by the live backend yet"),
        }
    }
    Ok(())
}
