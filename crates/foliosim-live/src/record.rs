//! `foliosim record -- CMD`: run a program on this machine and write what it does to memory as
//! a trace (docs/trace-format.md) that the `trace` workload replays.
//!
//! How: the kernel's tracepoints through perf_event_open ([`perf`]): every page fault
//! (exceptions:page_fault_user/kernel: address, store or load), the memory-map syscalls
//! (raw_syscalls: mmap, munmap, mremap, madvise, brk, wait4, execve), forks, exits, execs and
//! context switches of the program and everything it starts; [`build`] turns them into the
//! trace. The program runs with THP disabled for itself (prctl PR_SET_THP_DISABLE, inherited
//! by its children; no host setting changes), so each first touch of a page is a fault of its
//! own. With a memcg limit it runs in a memcg of that size (and a zram swap device of ours if
//! the host has no swap), so pages it reuses are reclaimed and fault again: re-touches become
//! visible. What the trace cannot see is in docs/trace-format.md.

pub mod build;
pub mod perf;

use crate::cgroup::Memcg;
use crate::settings::HostGuard;
use crate::Refusal;
use anyhow::{bail, Context, Result};
use foliosim::scenario::{Bytes, MemcgSpec, SwapDeviceKind, SwapDeviceSpec};
use foliosim::workload::trace::{Event, Trace};
use std::ffi::CString;
use std::time::{Duration, Instant};

#[derive(Debug, Clone, Default)]
pub struct RecordOptions {
    /// The explicit opt-in (`record` runs as root and uses the kernel's tracepoints).
    pub allow_live: bool,
    /// Run the program in a memcg of this many bytes.
    pub memcg_limit: Option<u64>,
    /// Ring buffer per CPU, MiB (a power of two); None: 32 MiB, less on machines with more
    /// than 8 CPUs (256 MiB in all, at least 4 MiB each).
    pub buffer_mib: Option<usize>,
    /// Kill the program (its process group) after this long.
    pub timeout: Option<Duration>,
    /// Send the program's stdout to our stderr (keeps `--format json` clean).
    pub stdout_to_stderr: bool,
}

/// What the progress callback is told while the program runs.
pub struct Progress {
    pub elapsed: Duration,
    /// Samples (faults and syscalls) captured so far.
    pub samples: u64,
    pub bytes: u64,
}

#[derive(Debug, serde::Serialize)]
pub struct Recording {
    #[serde(skip)]
    pub trace: Trace,
    pub command: Vec<String>,
    /// The program's exit status (None: killed by a signal).
    pub exit_code: Option<i32>,
    pub signal: Option<i32>,
    pub wall_ns: u64,
    /// Records the ring buffers had no room for (0: the trace saw everything it can).
    pub lost_records: u64,
    pub events: usize,
    pub stats: build::BuildStats,
    pub notes: Vec<String>,
}

/// Syscalls the recorder follows (x86-64 numbers via libc).
fn syscalls() -> Vec<i64> {
    vec![
        libc::SYS_mmap,
        libc::SYS_munmap,
        libc::SYS_mremap,
        libc::SYS_madvise,
        libc::SYS_brk,
        libc::SYS_wait4,
        libc::SYS_execve,
        libc::SYS_execveat,
    ]
}

fn kernel_release() -> String {
    std::fs::read_to_string("/proc/sys/kernel/osrelease")
        .map(|s| s.trim().to_string())
        .unwrap_or_else(|_| "unknown".into())
}

/// Record `cmd` (program and arguments). `progress` is called about ten times a second.
pub fn record(
    cmd: &[String],
    opts: &RecordOptions,
    progress: &mut dyn FnMut(&Progress),
) -> Result<Recording> {
    if !opts.allow_live {
        return Err(Refusal::NotAllowed.into());
    }
    // SAFETY: geteuid has no preconditions.
    let uid = unsafe { libc::geteuid() };
    if uid != 0 {
        return Err(Refusal::NotRoot(uid).into());
    }
    if cmd.is_empty() {
        bail!("record: no command given (foliosim record -- CMD ARGS...)");
    }
    if let Some(b) = opts.buffer_mib.filter(|b| !b.is_power_of_two()) {
        bail!("record: buffer of {b} MiB; allowed: a power of two");
    }
    let mut guard = HostGuard::acquire()?;
    let result = record_holding(cmd, opts, progress, &mut guard);
    let restored = guard.restore();
    let result = result?;
    restored?;
    Ok(result)
}

fn record_holding(
    cmd: &[String],
    opts: &RecordOptions,
    progress: &mut dyn FnMut(&Progress),
    guard: &mut HostGuard,
) -> Result<Recording> {
    let tp = perf::tracepoints(guard)?;
    let mut notes = vec![];
    let memcg = record_memcg(guard, opts, &mut notes)?;
    let child = spawn_held(cmd, opts)?;
    let mut session = match open_session(&child, memcg.as_ref(), &tp, opts) {
        Ok(s) => s,
        Err(e) => {
            child.kill_tree();
            reap_all();
            // SAFETY: closing our fds; prctl on ourselves.
            unsafe {
                libc::close(child.start_w);
                libc::close(child.err_r);
                libc::prctl(libc::PR_SET_CHILD_SUBREAPER, 0);
            }
            return Err(e);
        }
    };
    let started = Instant::now();
    let exec_errno = child.release();
    let (root_status, stop_reason) = follow(&mut session, &child, opts, started, progress);
    let wall_ns = started.elapsed().as_nanos() as u64;
    // SAFETY: prctl on ourselves.
    unsafe { libc::prctl(libc::PR_SET_CHILD_SUBREAPER, 0) };
    let streams = session.finish();
    if let Some(errno) = exec_errno {
        bail!(
            "cannot run `{}`: {}",
            cmd[0],
            std::io::Error::from_raw_os_error(errno)
        );
    }
    if let Some(reason) = stop_reason {
        bail!("{reason}");
    }
    let (events, stats, lost) = build_events(cmd, &streams, &tp, child.pid, &mut notes)?;
    let status = root_status.unwrap_or(0);
    let (exit_code, signal) = if libc::WIFSIGNALED(status) {
        (None, Some(libc::WTERMSIG(status)))
    } else {
        (Some(libc::WEXITSTATUS(status)), None)
    };
    let header = trace_header(cmd, opts, lost, (exit_code, signal), &stats);
    let trace = Trace { header, events };
    // What we wrote must read back: a bug in the builder is ours, not the user's trace's.
    let text = trace.to_text();
    Trace::parse(&text)
        .context("record: the trace built from the recording does not parse (a foliosim bug)")?;
    Ok(Recording {
        events: trace.events.len(),
        trace,
        command: cmd.to_vec(),
        exit_code,
        signal,
        wall_ns,
        lost_records: lost,
        stats,
        notes,
    })
}

/// The trace's events from the ring buffers' records, merged in time order and built into
/// the program's tree (build.rs); also the build's statistics and the records lost (noted).
fn build_events(
    cmd: &[String],
    streams: &[(u32, Vec<u8>)],
    tp: &perf::Tracepoints,
    pid: libc::pid_t,
    notes: &mut Vec<String>,
) -> Result<(Vec<Event>, build::BuildStats, u64)> {
    let (raw, lost) = perf::merge(streams, tp);
    let name = std::path::Path::new(&cmd[0])
        .file_name()
        .map_or(cmd[0].clone(), |n| n.to_string_lossy().into_owned());
    let (events, stats) = build::build(&raw, pid as u32, &name);
    if events.is_empty() {
        bail!(
            "record: no events of `{}` were captured (did it exec?)",
            cmd[0]
        );
    }
    if lost > 0 {
        notes.push(format!(
            "{lost} records were lost (the ring buffers overflowed): the trace misses some faults or syscalls; retry with a larger --buffer-mib"
        ));
    }
    Ok((events, stats, lost))
}

/// With a memory limit, the memcg the program runs in (and, when the host has no swap, a
/// zram device so the limit can swap); the notes say what was set up.
fn record_memcg(
    guard: &mut HostGuard,
    opts: &RecordOptions,
    notes: &mut Vec<String>,
) -> Result<Option<Memcg>> {
    let Some(limit) = opts.memcg_limit else {
        return Ok(None);
    };
    let cg = Memcg::create(
        guard,
        &MemcgSpec::with_max("record", Some(Bytes(limit))),
        None,
    )?;
    if crate::swapdev::active_swaps()?.is_empty() {
        let spec = SwapDeviceSpec {
            priority: -2,
            ..SwapDeviceSpec::new(SwapDeviceKind::Zram, Bytes((4 * limit).max(1 << 30)))
        };
        let area = crate::swapdev::create(guard, 0, &spec, "lzo-rle")?;
        notes.push(format!(
            "the host had no swap: {} ({} MiB zram) swapped for the memcg, removed after",
            area.path,
            spec.size.0 >> 20
        ));
    }
    notes.push(format!(
        "ran in memcg {} (max {} MiB)",
        cg.path.display(),
        limit >> 20
    ));
    Ok(Some(cg))
}

/// The program, forked and held before its exec until we are tracing it: it runs when
/// `start_w` closes, and writes its exec errno to `err_r` if exec fails.
struct HeldChild {
    pid: libc::pid_t,
    start_w: i32,
    err_r: i32,
}

impl HeldChild {
    /// SIGKILL to the program's process group (it made its own) and to the program.
    fn kill_tree(&self) {
        // SAFETY: signals to our child and its group.
        unsafe {
            libc::kill(-self.pid, libc::SIGKILL);
            libc::kill(self.pid, libc::SIGKILL);
        }
    }

    /// Lets the program exec; returns its exec errno if exec failed.
    fn release(&self) -> Option<i32> {
        // SAFETY: releasing the child (EOF on its pipe).
        unsafe { libc::close(self.start_w) };
        let mut exec_errno = 0i32;
        // SAFETY: read of the child's exec error (EOF when exec succeeded: the fd is CLOEXEC).
        let n = unsafe { libc::read(self.err_r, (&mut exec_errno as *mut i32).cast(), 4) };
        unsafe { libc::close(self.err_r) };
        (n == 4).then_some(exec_errno)
    }
}

/// Forks the program in its own process group with default signals, THP disabled (every
/// first touch faults on its own) and a parent-death SIGKILL, held before its exec.
fn spawn_held(cmd: &[String], opts: &RecordOptions) -> Result<HeldChild> {
    let argv: Vec<CString> = cmd
        .iter()
        .map(|a| CString::new(a.as_bytes()))
        .collect::<Result<_, _>>()
        .context("an argument holds a NUL byte")?;
    let mut argv_ptrs: Vec<*const libc::c_char> = argv.iter().map(|a| a.as_ptr()).collect();
    argv_ptrs.push(std::ptr::null());
    let (start_r, start_w) = pipe()?;
    let (err_r, err_w) = pipe()?;
    // SAFETY: fork; the child only makes async-signal-safe calls and execs or _exits.
    let pid = unsafe { libc::fork() };
    if pid < 0 {
        bail!("fork: {}", std::io::Error::last_os_error());
    }
    if pid == 0 {
        // SAFETY: the child: plain syscalls on prepared data, then exec.
        unsafe {
            libc::close(start_w);
            libc::close(err_r);
            for sig in [libc::SIGINT, libc::SIGTERM, libc::SIGHUP, libc::SIGQUIT] {
                libc::signal(sig, libc::SIG_DFL);
            }
            libc::setpgid(0, 0);
            libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGKILL);
            let mut byte = 0u8;
            while libc::read(start_r, (&mut byte as *mut u8).cast(), 1) < 0 {}
            // Every first touch of a page faults on its own; children inherit it.
            libc::prctl(libc::PR_SET_THP_DISABLE, 1, 0, 0, 0);
            if opts.stdout_to_stderr {
                libc::dup2(2, 1);
            }
            libc::execvp(argv_ptrs[0], argv_ptrs.as_ptr());
            let errno = *libc::__errno_location();
            libc::write(err_w, (&errno as *const i32).cast(), 4);
            libc::_exit(127);
        }
    }
    // SAFETY: closing the child's ends in the parent.
    unsafe {
        libc::close(start_r);
        libc::close(err_w);
    }
    Ok(HeldChild {
        pid,
        start_w,
        err_r,
    })
}

/// The held program moved into the memcg, ourselves made its subreaper, and the perf session
/// opened on it with ring buffers sized by the CPU count (or --buffer-mib).
fn open_session(
    child: &HeldChild,
    memcg: Option<&Memcg>,
    tp: &perf::Tracepoints,
    opts: &RecordOptions,
) -> Result<perf::Session> {
    if let Some(cg) = memcg {
        std::fs::write(cg.procs_file(), child.pid.to_string())
            .with_context(|| format!("moving the program into {}", cg.path.display()))?;
    }
    // Orphans of the program are reparented to us, so we wait for the whole tree.
    // SAFETY: prctl on ourselves.
    unsafe { libc::prctl(libc::PR_SET_CHILD_SUBREAPER, 1) };
    let cpus = std::thread::available_parallelism().map_or(1, |n| n.get());
    let mib = opts
        .buffer_mib
        .unwrap_or_else(|| (256 / cpus).clamp(4, 32).next_power_of_two().min(32));
    let pages = mib * 256;
    perf::Session::open(child.pid, tp, &syscalls(), pages)
}

/// Drains the session until the whole process tree has exited, killing it on a signal or at
/// the timeout, with progress every 100 ms. Returns the program's wait status and why it was
/// stopped, if it was.
fn follow(
    session: &mut perf::Session,
    child: &HeldChild,
    opts: &RecordOptions,
    started: Instant,
    progress: &mut dyn FnMut(&Progress),
) -> (Option<i32>, Option<String>) {
    let mut root_status = None;
    let mut last_progress = Instant::now();
    let mut counted = (0u64, 0u64);
    let mut stop_reason = None;
    loop {
        counted.1 += session.drain() as u64;
        if stop_reason.is_none() {
            if crate::settings::interrupted() {
                stop_reason = Some("interrupted by a signal; the program was killed".to_string());
            } else if opts.timeout.is_some_and(|t| started.elapsed() > t) {
                stop_reason = Some(format!(
                    "timed out after {:?}; the program was killed",
                    opts.timeout.unwrap()
                ));
            }
            if stop_reason.is_some() {
                child.kill_tree();
            }
        }
        let mut st = 0;
        // SAFETY: reaping our children (the program, and its orphans: we are a subreaper).
        let reaped = unsafe { libc::waitpid(-1, &mut st, libc::WNOHANG) };
        if reaped == child.pid {
            root_status = Some(st);
        }
        if reaped < 0 {
            break; // ECHILD: the whole tree has exited.
        }
        if reaped == 0 {
            std::thread::sleep(Duration::from_millis(1));
        }
        if last_progress.elapsed() > Duration::from_millis(100) {
            last_progress = Instant::now();
            counted.0 = counted.1 / 64; // about 64 bytes per sample
            progress(&Progress {
                elapsed: started.elapsed(),
                samples: counted.0,
                bytes: counted.1,
            });
        }
    }
    (root_status, stop_reason)
}

/// The trace's header: what was run, on which kernel, how it was recorded, and how it ended.
fn trace_header(
    cmd: &[String],
    opts: &RecordOptions,
    lost: u64,
    (exit_code, signal): (Option<i32>, Option<i32>),
    stats: &build::BuildStats,
) -> Vec<(String, String)> {
    vec![
        ("command".to_string(), shell_words(cmd)),
        ("kernel".to_string(), kernel_release()),
        (
            "recorder".to_string(),
            format!(
                "foliosim {} perf_event_open: exceptions:page_fault_user, exceptions:page_fault_kernel, raw_syscalls (mmap munmap mremap madvise brk wait4 execve), fork/exit/exec/switch records",
                env!("CARGO_PKG_VERSION")
            ),
        ),
        ("thp".to_string(), "disabled for the program (PR_SET_THP_DISABLE)".to_string()),
        (
            "memcg_limit".to_string(),
            opts.memcg_limit.map_or("none".into(), |b| b.to_string()),
        ),
        ("lost_records".to_string(), lost.to_string()),
        (
            "exit".to_string(),
            match (exit_code, signal) {
                (Some(c), _) => format!("status {c}"),
                (_, Some(s)) => format!("signal {s}"),
                _ => "unknown".into(),
            },
        ),
        ("page_size".to_string(), "4096".to_string()),
        (
            "faults".to_string(),
            format!(
                "{} ({} kept; {} loads outside any known mapping dropped)",
                stats.faults, stats.faults_kept, stats.faults_unknown_loads
            ),
        ),
    ]
}

fn reap_all() {
    let mut st = 0;
    // SAFETY: reaping our children until none is left.
    while unsafe { libc::waitpid(-1, &mut st, 0) } > 0 {}
}

fn pipe() -> Result<(i32, i32)> {
    let mut fds = [0; 2];
    // SAFETY: pipe2 into a local array.
    if unsafe { libc::pipe2(fds.as_mut_ptr(), libc::O_CLOEXEC) } != 0 {
        bail!("pipe: {}", std::io::Error::last_os_error());
    }
    Ok((fds[0], fds[1]))
}

/// The command as one line (words with spaces or quotes quoted).
fn shell_words(cmd: &[String]) -> String {
    cmd.iter()
        .map(|w| {
            if w.is_empty()
                || w.chars()
                    .any(|c| c.is_whitespace() || "'\"\\$`".contains(c))
            {
                format!("'{}'", w.replace('\'', "'\\''"))
            } else {
                w.clone()
            }
        })
        .collect::<Vec<_>>()
        .join(" ")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn refuses_without_the_opt_in_and_quotes_the_command() {
        let e = record(&["true".into()], &RecordOptions::default(), &mut |_| {}).unwrap_err();
        assert!(
            e.to_string().contains("--live") || e.to_string().contains("allow"),
            "{e}"
        );
        assert_eq!(
            shell_words(&["python3".into(), "-c".into(), "print('a b')".into()]),
            "python3 -c 'print('\\''a b'\\'')'"
        );
    }
}
