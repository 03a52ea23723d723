//! Every change the live backend makes to the host, journaled before it is made, undone on
//! restore: sysfs knobs (old value saved), swap devices, zram devices, loop devices, swap files
//! and memcgs (created by us). The journal is a file in /run (tmpfs: a reboot undoes everything
//! anyway), rewritten after each entry, so a run killed with SIGKILL is restored by the next
//! start (or `foliosim restore --live`). A lock file keeps two live runs from interleaving.

use anyhow::{bail, Context, Result};
use serde::{Deserialize, Serialize};
use std::fs;
use std::io::Write;
use std::os::unix::io::AsRawFd;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};

const MIN_FREE_KBYTES: &str = "/proc/sys/vm/min_free_kbytes";

/// Where the journal and lock live unless `FOLIOSIM_LIVE_DIR` says otherwise.
pub const DEFAULT_STATE_DIR: &str = "/run/foliosim";

pub fn state_dir() -> PathBuf {
    std::env::var_os("FOLIOSIM_LIVE_DIR")
        .map(PathBuf::from)
        .unwrap_or_else(|| PathBuf::from(DEFAULT_STATE_DIR))
}

/// One change, in the order it was made; restore walks them backwards.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "what", rename_all = "snake_case")]
pub enum Change {
    /// A sysfs/module-parameter file and the value it had.
    Sysfs { path: String, old_value: String },
    /// About to read zram-control/hot_add, which makes a device whose id we learn only after:
    /// a kill in between leaves a new, unconfigured device; undo hot_removes any zram device
    /// not in `existing` that is still unconfigured (initstate 0).
    ZramHotAdd { existing: Vec<u32> },
    /// A zram device we configured: reset it, and hot_remove it if we hot_added it.
    Zram { id: u32, hot_added: bool },
    /// A regular file we created (swap file, loop backing file): unlink it.
    File { path: String },
    /// A loop device we attach over `backing_file` (journaled before losetup picks the
    /// device): detach every loop device backed by that file.
    Loop { backing_file: String },
    /// A swap area we turned on: swapoff.
    Swapon { path: String },
    /// A memcg directory we created: kill what is left in it, rmdir.
    Cgroup { path: String },
    /// A directory we created (the run's files): remove it and everything in it.
    Dir { path: String },
    /// A filesystem we mounted on a directory we created (tracefs, to read tracepoint ids):
    /// unmount it and remove the directory.
    Mount { path: String },
}

/// Every kind of change the live backend makes to the host, for reports and for the crash
/// tests (tests/crash_restore.rs makes each kind, SIGKILLs at a random moment, restores).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum ChangeKind {
    /// /sys/kernel/mm/transparent_hugepage/{enabled,defrag,khugepaged/*}.
    ThpKnob,
    /// /sys/kernel/mm/transparent_hugepage/hugepages-<size>kB/enabled.
    MthpSizeKnob,
    /// /sys/module/zswap/parameters/*.
    ZswapParam,
    /// /proc/sys/vm/*.
    Sysctl,
    /// Any other sysfs file (none today; kept so the classification is total).
    OtherKnob,
    /// A zram device hot_added (or an idle one taken) and configured.
    ZramDevice,
    /// A swap file (or a loop device's backing file) created.
    SwapFile,
    /// A loop device attached.
    LoopDevice,
    /// A swap area turned on.
    Swapon,
    /// A memcg created (its limits live inside it).
    Memcg,
    /// The run's file directory created.
    FileDir,
    /// tracefs mounted on a directory of ours.
    TracefsMount,
}

impl ChangeKind {
    pub const ALL: [ChangeKind; 12] = [
        ChangeKind::ThpKnob,
        ChangeKind::MthpSizeKnob,
        ChangeKind::ZswapParam,
        ChangeKind::Sysctl,
        ChangeKind::OtherKnob,
        ChangeKind::ZramDevice,
        ChangeKind::SwapFile,
        ChangeKind::LoopDevice,
        ChangeKind::Swapon,
        ChangeKind::Memcg,
        ChangeKind::FileDir,
        ChangeKind::TracefsMount,
    ];
}

impl Change {
    pub fn kind(&self) -> ChangeKind {
        match self {
            Change::Sysfs { path, .. } => {
                const THP: &str = "/sys/kernel/mm/transparent_hugepage/";
                if path.starts_with(&format!("{THP}hugepages-")) {
                    ChangeKind::MthpSizeKnob
                } else if path.starts_with(THP) {
                    ChangeKind::ThpKnob
                } else if path.starts_with("/sys/module/zswap/parameters/") {
                    ChangeKind::ZswapParam
                } else if path.starts_with("/proc/sys/") {
                    ChangeKind::Sysctl
                } else {
                    ChangeKind::OtherKnob
                }
            }
            Change::ZramHotAdd { .. } | Change::Zram { .. } => ChangeKind::ZramDevice,
            Change::File { .. } => ChangeKind::SwapFile,
            Change::Loop { .. } => ChangeKind::LoopDevice,
            Change::Swapon { .. } => ChangeKind::Swapon,
            Change::Cgroup { .. } => ChangeKind::Memcg,
            Change::Dir { .. } => ChangeKind::FileDir,
            Change::Mount { .. } => ChangeKind::TracefsMount,
        }
    }
}

/// Fault injection for the crash tests: with `FOLIOSIM_LIVE_KILL_AT=N`, the process SIGKILLs
/// itself at its N-th crash point (1-based): just before and just after each journal write,
/// i.e. before a change, between its record and the change, and after it.
fn crash_point() {
    static KILL_AT: std::sync::OnceLock<Option<u64>> = std::sync::OnceLock::new();
    let at = *KILL_AT.get_or_init(|| {
        std::env::var("FOLIOSIM_LIVE_KILL_AT")
            .ok()
            .and_then(|v| v.parse().ok())
    });
    let n = CRASH_POINTS.fetch_add(1, Ordering::SeqCst) + 1;
    if at == Some(n) {
        // SAFETY: raising a signal on ourselves.
        unsafe { libc::raise(libc::SIGKILL) };
    }
}

/// How many crash points this process has passed (the crash tests count a clean run's).
pub fn crash_points_passed() -> u64 {
    CRASH_POINTS.load(Ordering::SeqCst)
}

static CRASH_POINTS: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);

#[derive(Debug, Default, Serialize, Deserialize)]
struct JournalFile {
    pid: u32,
    changes: Vec<Change>,
}

/// Set by the SIGINT/SIGTERM/SIGHUP handler; the run loop polls it and unwinds to restore.
pub static INTERRUPTED: AtomicBool = AtomicBool::new(false);

extern "C" fn on_signal(_sig: libc::c_int) {
    INTERRUPTED.store(true, Ordering::SeqCst);
}

/// The lock's fd, which forked task processes close so the lock dies with this process.
pub static LOCK_FD: std::sync::atomic::AtomicI32 = std::sync::atomic::AtomicI32::new(-1);

pub fn interrupted() -> bool {
    INTERRUPTED.load(Ordering::SeqCst)
}

const CAUGHT: [libc::c_int; 4] = [libc::SIGINT, libc::SIGTERM, libc::SIGHUP, libc::SIGQUIT];

/// The host while a live run holds it: changes are journaled, and dropping the guard (normal
/// return, error, panic unwind, or after a caught signal) restores them.
pub struct HostGuard {
    dir: PathBuf,
    journal: JournalFile,
    _lock: fs::File,
    old_actions: Vec<(libc::c_int, libc::sigaction)>,
    restored: bool,
    /// What the recovery of an earlier, killed run restored (reported, not an error).
    pub recovered: Vec<String>,
}

impl HostGuard {
    /// Take the host: lock, restore a journal left by a killed run, catch signals.
    pub fn acquire() -> Result<HostGuard> {
        Self::acquire_in(state_dir())
    }

    /// As `acquire`, with the journal and lock in `dir`.
    pub fn acquire_in(dir: PathBuf) -> Result<HostGuard> {
        fs::create_dir_all(&dir).with_context(|| format!("creating {}", dir.display()))?;
        let lock_path = dir.join("live.lock");
        let lock = fs::OpenOptions::new()
            .create(true)
            .truncate(false)
            .write(true)
            .open(&lock_path)
            .with_context(|| format!("opening {}", lock_path.display()))?;
        // A run killed a moment ago may still have dying children holding the lock: wait a bit.
        let mut tries = 0;
        // SAFETY: flock on an fd we own.
        while unsafe { libc::flock(lock.as_raw_fd(), libc::LOCK_EX | libc::LOCK_NB) } != 0 {
            tries += 1;
            if tries > 30 {
                bail!(
                    "another foliosim live run holds {}; wait for it to finish",
                    lock_path.display()
                );
            }
            std::thread::sleep(std::time::Duration::from_millis(100));
        }
        LOCK_FD.store(lock.as_raw_fd(), Ordering::SeqCst);
        INTERRUPTED.store(false, Ordering::SeqCst);
        let mut guard = HostGuard {
            dir,
            journal: JournalFile {
                pid: std::process::id(),
                changes: vec![],
            },
            _lock: lock,
            old_actions: vec![],
            restored: false,
            recovered: vec![],
        };
        guard.recovered = recover_journal(&guard.journal_path())?;
        guard.catch_signals();
        guard.write_journal()?;
        Ok(guard)
    }

    pub fn journal_path(&self) -> PathBuf {
        self.dir.join("journal.json")
    }

    fn catch_signals(&mut self) {
        for sig in CAUGHT {
            // SAFETY: installing a handler that only stores to an atomic (async-signal-safe).
            // No SA_RESTART: a blocking syscall returns EINTR so the run loop sees the flag.
            unsafe {
                let mut action: libc::sigaction = std::mem::zeroed();
                action.sa_sigaction = on_signal as extern "C" fn(libc::c_int) as usize;
                libc::sigemptyset(&mut action.sa_mask);
                let mut old: libc::sigaction = std::mem::zeroed();
                if libc::sigaction(sig, &action, &mut old) == 0 {
                    self.old_actions.push((sig, old));
                }
            }
        }
    }

    fn write_journal(&self) -> Result<()> {
        let path = self.journal_path();
        let tmp = path.with_extension("tmp");
        let mut f = fs::File::create(&tmp).with_context(|| format!("writing {}", tmp.display()))?;
        f.write_all(serde_json::to_string_pretty(&self.journal)?.as_bytes())?;
        f.sync_all()?;
        // The rename replaces the journal whole: a kill leaves the old one or the new one.
        fs::rename(&tmp, &path)?;
        // And the rename itself reaches the disk where the state dir is not tmpfs.
        fs::File::open(&self.dir)?.sync_all()?;
        Ok(())
    }

    /// Journal a change before making it (write-ahead), so a kill between the two still
    /// restores: every undo step tolerates a change that was never made.
    pub fn record(&mut self, change: Change) -> Result<()> {
        crash_point();
        self.journal.changes.push(change);
        self.write_journal()?;
        crash_point();
        Ok(())
    }

    /// The changes journaled so far, oldest first.
    pub fn changes(&self) -> &[Change] {
        &self.journal.changes
    }

    /// Write a sysfs knob, saving its current value first. No-op if it already has the value.
    pub fn set_sysfs(&mut self, path: &str, value: &str) -> Result<()> {
        let old_value = read_knob(path)?;
        if old_value == value {
            return Ok(());
        }
        // Starting or stopping khugepaged (a THP `enabled` knob) recomputes min_free_kbytes
        // (set_recommended_min_free_kbytes, mm/khugepaged.c): save it too, so it comes back.
        if path.starts_with("/sys/kernel/mm/transparent_hugepage/") && path.ends_with("/enabled") {
            if let Ok(min_free) = read_knob(MIN_FREE_KBYTES) {
                if !self
                    .changes()
                    .iter()
                    .any(|c| matches!(c, Change::Sysfs { path, .. } if path == MIN_FREE_KBYTES))
                {
                    self.record(Change::Sysfs {
                        path: MIN_FREE_KBYTES.into(),
                        old_value: min_free,
                    })?;
                }
            }
        }
        self.record(Change::Sysfs {
            path: path.into(),
            old_value,
        })?;
        write_knob(path, value)
    }

    /// Undo every change, newest first. Errors are collected; every step is attempted.
    pub fn restore(&mut self) -> Result<()> {
        if self.restored {
            return Ok(());
        }
        self.restored = true;
        let errors = undo_all(&self.journal.changes);
        if errors.is_empty() {
            let _ = fs::remove_file(self.journal_path());
        }
        for (sig, old) in self.old_actions.drain(..) {
            // SAFETY: reinstating the action we replaced.
            unsafe { libc::sigaction(sig, &old, std::ptr::null_mut()) };
        }
        if errors.is_empty() {
            Ok(())
        } else {
            bail!(
                "restoring the host: {} (journal kept at {})",
                errors.join("; "),
                self.journal_path().display()
            )
        }
    }
}

impl Drop for HostGuard {
    fn drop(&mut self) {
        if let Err(e) = self.restore() {
            eprintln!("foliosim live: {e:#}");
        }
    }
}

/// Restore what a journal left by another (dead) run lists; returns what was done.
pub fn recover_journal(path: &Path) -> Result<Vec<String>> {
    let Ok(text) = fs::read_to_string(path) else {
        return Ok(vec![]);
    };
    let journal: JournalFile = serde_json::from_str(&text)
        .with_context(|| format!("parsing the restore journal {}", path.display()))?;
    let done: Vec<String> = journal.changes.iter().map(describe).collect();
    let errors = undo_all(&journal.changes);
    if !errors.is_empty() {
        bail!(
            "restoring the journal {} of killed run {}: {}",
            path.display(),
            journal.pid,
            errors.join("; ")
        );
    }
    fs::remove_file(path).ok();
    Ok(done)
}

/// Restore a killed run's journal if there is one (`foliosim restore --live`).
pub fn recover() -> Result<Vec<String>> {
    let guard = HostGuard::acquire()?;
    Ok(guard.recovered.clone())
}

fn describe(c: &Change) -> String {
    match c {
        Change::Sysfs { path, old_value } => format!("{path} = {old_value}"),
        Change::ZramHotAdd { .. } => "remove an unconfigured zram device we hot_added".into(),
        Change::Zram { id, .. } => format!("reset zram{id}"),
        Change::File { path } => format!("remove {path}"),
        Change::Loop { backing_file } => format!("detach the loop device over {backing_file}"),
        Change::Swapon { path } => format!("swapoff {path}"),
        Change::Cgroup { path } => format!("remove {path}"),
        Change::Dir { path } => format!("remove {path}/"),
        Change::Mount { path } => format!("umount {path}"),
    }
}

fn undo_all(changes: &[Change]) -> Vec<String> {
    let mut errors = vec![];
    // Swap areas go first (they pin zram/loop devices), cgroups before the knobs.
    for c in changes.iter().rev() {
        if let Err(e) = undo(c) {
            errors.push(format!("{}: {e:#}", describe(c)));
        }
    }
    // A knob restored early can be moved by a later undo (turning PMD THP back off makes
    // khugepaged recompute min_free_kbytes): set each knob's first saved value once more.
    let mut seen = std::collections::BTreeSet::new();
    for c in changes {
        if let Change::Sysfs { path, old_value } = c {
            if seen.insert(path.as_str()) && read_knob(path).is_ok_and(|v| v != *old_value) {
                if let Err(e) = write_knob(path, old_value) {
                    errors.push(format!("{}: {e:#}", describe(c)));
                }
            }
        }
    }
    errors
}

fn undo(c: &Change) -> Result<()> {
    match c {
        Change::Sysfs { path, old_value } => {
            if read_knob(path)? != *old_value {
                write_knob(path, old_value)?;
            }
            Ok(())
        }
        Change::Swapon { path } => crate::swapdev::swapoff_if_active(path),
        Change::ZramHotAdd { existing } => crate::swapdev::zram_remove_new_unconfigured(existing),
        Change::Zram { id, hot_added } => crate::swapdev::zram_release(*id, *hot_added),
        Change::Loop { backing_file } => crate::swapdev::loop_detach_file(backing_file),
        Change::File { path } => match fs::remove_file(path) {
            Err(e) if e.kind() != std::io::ErrorKind::NotFound => {
                Err(e).with_context(|| format!("removing {path}"))
            }
            _ => Ok(()),
        },
        Change::Cgroup { path } => crate::cgroup::remove(Path::new(path)),
        Change::Dir { path } => match fs::remove_dir_all(path) {
            Err(e) if e.kind() != std::io::ErrorKind::NotFound => {
                Err(e).with_context(|| format!("removing {path}"))
            }
            _ => Ok(()),
        },
        Change::Mount { path } => {
            let mounted = fs::read_to_string("/proc/self/mounts")
                .unwrap_or_default()
                .lines()
                .any(|l| l.split_whitespace().nth(1) == Some(path.as_str()));
            if mounted {
                let c = std::ffi::CString::new(path.as_str())?;
                // SAFETY: umount2 of a path we mounted, with a valid C string.
                if unsafe { libc::umount2(c.as_ptr(), libc::MNT_DETACH) } != 0 {
                    bail!("umount {path}: {}", std::io::Error::last_os_error());
                }
            }
            match fs::remove_dir(path) {
                Err(e) if e.kind() != std::io::ErrorKind::NotFound => {
                    Err(e).with_context(|| format!("removing {path}"))
                }
                _ => Ok(()),
            }
        }
    }
}

/// A knob's current value: the bracketed choice of a `a [b] c` list, else the trimmed text.
pub fn read_knob(path: &str) -> Result<String> {
    let text = fs::read_to_string(path).with_context(|| format!("reading {path}"))?;
    Ok(selected_value(&text))
}

pub fn selected_value(text: &str) -> String {
    if let (Some(open), Some(close)) = (text.find('['), text.find(']')) {
        if open < close {
            return text[open + 1..close].to_string();
        }
    }
    text.trim().to_string()
}

pub fn write_knob(path: &str, value: &str) -> Result<()> {
    fs::write(path, value).with_context(|| format!("writing `{value}` to {path}"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bracketed_choice_is_the_value() {
        assert_eq!(selected_value("always inherit madvise [never]\n"), "never");
        assert_eq!(
            selected_value("always defer [defer+madvise] madvise never"),
            "defer+madvise"
        );
        assert_eq!(selected_value("[lzo-rle] lzo lz4 \n"), "lzo-rle");
        assert_eq!(selected_value("4096\n"), "4096");
        assert_eq!(selected_value("N\n"), "N");
    }

    #[test]
    fn a_dropped_guard_restores_and_a_journal_restores_after_a_kill() {
        let dir = std::env::temp_dir().join(format!("foliosim-settings-{}", std::process::id()));
        fs::create_dir_all(&dir).unwrap();
        let knob = dir.join("enabled");
        let knob_path = knob.to_str().unwrap().to_string();
        fs::write(&knob, "always inherit madvise [never]\n").unwrap();
        {
            let mut g = HostGuard::acquire_in(dir.clone()).unwrap();
            g.set_sysfs(&knob_path, "always").unwrap();
            assert_eq!(fs::read_to_string(&knob).unwrap(), "always");
            // A second run is refused while this one holds the host.
            assert!(HostGuard::acquire_in(dir.clone()).is_err());
        }
        assert_eq!(read_knob(&knob_path).unwrap(), "never");
        assert!(!dir.join("journal.json").exists());
        // A run killed before it could restore leaves its journal; the next start restores.
        let g = HostGuard::acquire_in(dir.clone()).unwrap();
        let mut g = std::mem::ManuallyDrop::new(g);
        g.set_sysfs(&knob_path, "madvise").unwrap();
        for (sig, old) in g.old_actions.drain(..) {
            unsafe { libc::sigaction(sig, &old, std::ptr::null_mut()) };
        }
        unsafe { std::ptr::drop_in_place(&mut g._lock) };
        assert!(dir.join("journal.json").exists());
        let next = HostGuard::acquire_in(dir.clone()).unwrap();
        assert_eq!(next.recovered.len(), 1);
        assert_eq!(read_knob(&knob_path).unwrap(), "never");
        drop(next);
        fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn journal_round_trips() {
        let j = JournalFile {
            pid: 7,
            changes: vec![
                Change::Sysfs {
                    path: "/x".into(),
                    old_value: "never".into(),
                },
                Change::Zram {
                    id: 1,
                    hot_added: true,
                },
            ],
        };
        let back: JournalFile = serde_json::from_str(&serde_json::to_string(&j).unwrap()).unwrap();
        assert_eq!(back.changes, j.changes);
    }
}
