//! Every change the live backend makes to the host, journaled before it is made, undone on
//! restore: sysfs knobs (old value saved), swap devices, zram devices, loop devices, swap files
//! and memcgs (created by us). The journal lives in the state directory beside the files the
//! run creates (swap files, the scenario's files), on disk, rewritten after each entry, so a
//! run killed with SIGKILL is restored by the next start (or `foliosim restore --live`), after
//! a reboot too (then only the files: a reboot undid the rest). The state directory must be
//! ours and writable by no one else, the journal too, and restore acts only on paths the live
//! backend itself uses (docs/live-safety.md). A host-wide lock keeps two live runs from
//! overlapping, whatever their state directories.

use anyhow::{bail, Context, Result};
use serde::{Deserialize, Serialize};
use std::fs;
use std::io::Write;
use std::os::unix::fs::{DirBuilderExt, MetadataExt, OpenOptionsExt};
use std::os::unix::io::AsRawFd;
use std::path::{Component, Path, PathBuf};
use std::sync::atomic::{AtomicBool, AtomicI32, Ordering};

const MIN_FREE_KBYTES: &str = "/proc/sys/vm/min_free_kbytes";

/// Where the journal, its lock and every file a run creates (swap files, the scenario's
/// files) live unless `FOLIOSIM_LIVE_DIR` says otherwise: on disk (swap files cannot be on
/// tmpfs), so journal and files survive a reboot together.
pub const DEFAULT_STATE_DIR: &str = "/var/lib/foliosim";

/// The host-wide lock: one live run at a time, whatever its state directory. /run is root's.
pub const HOST_LOCK: &str = "/run/foliosim-live.lock";

/// The knob trees the live backend writes; restore writes nothing else (but its own state
/// directory, where the crash tests keep a stand-in knob).
pub const KNOB_ROOTS: [&str; 4] = [
    "/sys/kernel/mm/transparent_hugepage/",
    "/sys/kernel/mm/lru_gen/",
    "/sys/module/zswap/parameters/",
    "/proc/sys/vm/",
];

/// Where memcgs may be (the mounts `cgroup::memory_root` picks from).
const CGROUP_ROOT: &str = "/sys/fs/cgroup/";

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
    /// a kill in between leaves a new, unconfigured device. The kernel gives the lowest free
    /// id (idr_alloc in zram_add), `expected`; undo hot_removes that one device only, if it is
    /// new (not in `existing`) and still unconfigured (initstate 0).
    ZramHotAdd {
        existing: Vec<u32>,
        #[serde(default)]
        expected: Option<u32>,
    },
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
    /// A scenario's `[[tmpfs]]` mounted on a directory we created: unmount it (its files, and
    /// the swap entries they hold, go with it) and remove the directory.
    Tmpfs { path: String },
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
    /// A scenario's tmpfs mounted on a directory of ours.
    TmpfsMount,
}

impl ChangeKind {
    pub const ALL: [ChangeKind; 13] = [
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
        ChangeKind::TmpfsMount,
    ];
}

impl Change {
    /// On disk, so still there after a reboot (a mount point's directory too).
    pub fn survives_reboot(&self) -> bool {
        matches!(
            self,
            Change::File { .. } | Change::Dir { .. } | Change::Mount { .. } | Change::Tmpfs { .. }
        )
    }

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
            Change::Tmpfs { .. } => ChangeKind::TmpfsMount,
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
    /// /proc/sys/kernel/random/boot_id of the run: after a reboot only files are left to undo.
    #[serde(default)]
    boot_id: String,
    changes: Vec<Change>,
}

/// This boot's id (empty where the kernel has none).
pub fn boot_id() -> String {
    fs::read_to_string("/proc/sys/kernel/random/boot_id")
        .map(|s| s.trim().to_string())
        .unwrap_or_default()
}

/// Set by the SIGINT/SIGTERM/SIGHUP handler; the run loop polls it and unwinds to restore.
pub static INTERRUPTED: AtomicBool = AtomicBool::new(false);

extern "C" fn on_signal(_sig: libc::c_int) {
    INTERRUPTED.store(true, Ordering::SeqCst);
}

/// The locks' fds (state dir, host), which forked task processes close so the locks die with
/// this process.
pub static LOCK_FDS: [AtomicI32; 2] = [AtomicI32::new(-1), AtomicI32::new(-1)];

/// Close the locks' fds in a forked child (async-signal-safe: only close(2)).
pub fn close_locks_in_child() {
    for fd in &LOCK_FDS {
        let fd = fd.load(Ordering::SeqCst);
        if fd >= 0 {
            // SAFETY: closing an fd this child inherited and does not use.
            unsafe { libc::close(fd) };
        }
    }
}

pub fn interrupted() -> bool {
    INTERRUPTED.load(Ordering::SeqCst)
}

const CAUGHT: [libc::c_int; 4] = [libc::SIGINT, libc::SIGTERM, libc::SIGHUP, libc::SIGQUIT];

/// The host while a live run holds it: changes are journaled, and dropping the guard (normal
/// return, error, panic unwind, or after a caught signal) restores them.
pub struct HostGuard {
    dir: PathBuf,
    journal: JournalFile,
    /// The process that took the host: only it restores (a forked task child never does).
    creator_pid: u32,
    _host_lock: fs::File,
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
        Self::acquire_with(dir, Path::new(HOST_LOCK))
    }

    /// As `acquire_in`, with the host-wide lock at `host_lock` (tests that run unprivileged).
    #[doc(hidden)]
    pub fn acquire_with(dir: PathBuf, host_lock: &Path) -> Result<HostGuard> {
        ensure_state_dir(&dir)?;
        let host = lock_file(host_lock, "another foliosim live run holds the host")?;
        let lock = lock_file(&dir.join("live.lock"), "another foliosim live run holds")?;
        LOCK_FDS[0].store(host.as_raw_fd(), Ordering::SeqCst);
        LOCK_FDS[1].store(lock.as_raw_fd(), Ordering::SeqCst);
        INTERRUPTED.store(false, Ordering::SeqCst);
        let mut guard = HostGuard {
            journal: JournalFile {
                pid: std::process::id(),
                boot_id: boot_id(),
                changes: vec![],
            },
            creator_pid: std::process::id(),
            _host_lock: host,
            _lock: lock,
            old_actions: vec![],
            restored: false,
            recovered: vec![],
            dir,
        };
        guard.recovered = recover_journal_in(&guard.journal_path(), &guard.dir)?;
        guard.catch_signals();
        guard.write_journal()?;
        Ok(guard)
    }

    /// The state directory: journal, lock, and the files this run creates.
    pub fn dir(&self) -> &Path {
        &self.dir
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
        let mut f = fs::OpenOptions::new()
            .write(true)
            .create(true)
            .truncate(true)
            .mode(0o600)
            .custom_flags(libc::O_NOFOLLOW)
            .open(&tmp)
            .with_context(|| format!("writing {}", tmp.display()))?;
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
        check_allowed(&change, &self.dir)?;
        crash_point();
        self.journal.changes.push(change);
        self.write_journal()?;
        crash_point();
        Ok(())
    }

    /// Take back the newest entry, `change`, when making it failed before it touched anything
    /// (the path already existed): its undo would remove what is not ours.
    pub fn unrecord(&mut self, change: &Change) -> Result<()> {
        if self.journal.changes.last() == Some(change) {
            self.journal.changes.pop();
            self.write_journal()?;
        }
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
        // A forked child (a task process unwinding from a panic) shares our memory, not our
        // duty: only the process that took the host gives it back.
        if self.restored || std::process::id() != self.creator_pid {
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
        // The lock files close with us: a later fork must not close whatever reuses the fds.
        for (slot, file) in LOCK_FDS.iter().zip([&self._host_lock, &self._lock]) {
            let _ = slot.compare_exchange(file.as_raw_fd(), -1, Ordering::SeqCst, Ordering::SeqCst);
        }
    }
}

/// Restore what a journal left by another (dead) run lists; returns what was done.
pub fn recover_journal(path: &Path) -> Result<Vec<String>> {
    let dir = path.parent().unwrap_or(Path::new("/"));
    recover_journal_in(path, dir)
}

fn recover_journal_in(path: &Path, dir: &Path) -> Result<Vec<String>> {
    let meta = match fs::symlink_metadata(path) {
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(vec![]),
        other => other.with_context(|| format!("reading {}", path.display()))?,
    };
    check_ours(path, &meta, "restore journal")?;
    if !meta.file_type().is_file() {
        bail!(
            "refusing the restore journal {}: not a regular file",
            path.display()
        );
    }
    let text = fs::read_to_string(path).with_context(|| format!("reading {}", path.display()))?;
    let journal: JournalFile = serde_json::from_str(&text)
        .with_context(|| format!("parsing the restore journal {}", path.display()))?;
    for c in &journal.changes {
        check_allowed(c, dir).with_context(|| {
            format!(
                "refusing the restore journal {} of run {}: nothing restored",
                path.display(),
                journal.pid
            )
        })?;
    }
    // After a reboot the kernel's state is new (knobs, devices, memcgs: some ids may be
    // someone else's now); only what is on disk is still ours to remove.
    let rebooted = !journal.boot_id.is_empty() && journal.boot_id != boot_id();
    let changes: Vec<Change> = journal
        .changes
        .into_iter()
        .filter(|c| !rebooted || c.survives_reboot())
        .collect();
    let mut done: Vec<String> = changes.iter().map(describe).collect();
    if rebooted {
        done.push("(the run was before a reboot: only its files were left)".into());
    }
    let errors = undo_all(&changes);
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

/// Owned by us (root for any live run) and writable by no one else.
fn check_ours(path: &Path, meta: &fs::Metadata, what: &str) -> Result<()> {
    // SAFETY: geteuid has no preconditions.
    let euid = unsafe { libc::geteuid() };
    if meta.uid() != euid {
        bail!(
            "refusing the {what} {}: owned by uid {}, not by us (uid {euid})",
            path.display(),
            meta.uid()
        );
    }
    if meta.mode() & 0o022 != 0 {
        bail!(
            "refusing the {what} {}: mode {:o} lets others write it; allowed: writable by its owner only",
            path.display(),
            meta.mode() & 0o7777
        );
    }
    Ok(())
}

/// Create the state directory (0700) if missing, and accept it only if it is a real directory
/// of ours that no one else can write, in ancestors no one else can swap it out of.
pub fn ensure_state_dir(dir: &Path) -> Result<()> {
    if !dir.is_absolute() || dir.components().any(|c| c == Component::ParentDir) {
        bail!(
            "FOLIOSIM_LIVE_DIR `{}`: allowed: an absolute path without `..`",
            dir.display()
        );
    }
    if let Some(parent) = dir.parent() {
        fs::create_dir_all(parent).with_context(|| format!("creating {}", parent.display()))?;
    }
    match fs::DirBuilder::new().mode(0o700).create(dir) {
        Err(e) if e.kind() != std::io::ErrorKind::AlreadyExists => {
            return Err(e).with_context(|| format!("creating {}", dir.display()))
        }
        _ => {}
    }
    let meta = fs::symlink_metadata(dir).with_context(|| format!("reading {}", dir.display()))?;
    if !meta.file_type().is_dir() {
        bail!(
            "refusing the state directory {}: not a directory (a symlink?)",
            dir.display()
        );
    }
    check_ours(dir, &meta, "state directory")?;
    for a in dir.ancestors().skip(1) {
        let m = fs::metadata(a).with_context(|| format!("reading {}", a.display()))?;
        let sticky = m.mode() & libc::S_ISVTX != 0;
        if m.mode() & 0o022 != 0 && !sticky {
            bail!(
                "refusing the state directory {}: its parent {} is writable by others (mode {:o}) without the sticky bit",
                dir.display(),
                a.display(),
                m.mode() & 0o7777
            );
        }
    }
    Ok(())
}

/// Open `path` (never through a symlink) and take its flock, waiting up to 3 s for a run
/// killed a moment ago whose dying children still hold it.
fn lock_file(path: &Path, held: &str) -> Result<fs::File> {
    let lock = fs::OpenOptions::new()
        .create(true)
        .truncate(false)
        .write(true)
        .mode(0o600)
        .custom_flags(libc::O_NOFOLLOW | libc::O_CLOEXEC)
        .open(path)
        .with_context(|| format!("opening {}", path.display()))?;
    check_ours(path, &lock.metadata()?, "lock file")?;
    let mut tries = 0;
    // SAFETY: flock on an fd we own.
    while unsafe { libc::flock(lock.as_raw_fd(), libc::LOCK_EX | libc::LOCK_NB) } != 0 {
        tries += 1;
        if tries > 30 {
            bail!("{held} ({}); wait for it to finish", path.display());
        }
        std::thread::sleep(std::time::Duration::from_millis(100));
    }
    Ok(lock)
}

/// `path` as given, absolute, with no `..`, inside `root`.
fn within(path: &str, root: &Path) -> bool {
    let p = Path::new(path);
    p.is_absolute() && !p.components().any(|c| c == Component::ParentDir) && p.starts_with(root)
}

/// The only paths a journal entry may name: the knob trees, our zram and loop devices, memcgs
/// named foliosim-*, and the state directory. Checked when journaling and before restoring.
pub fn check_allowed(c: &Change, state_dir: &Path) -> Result<()> {
    let ours = |p: &str| within(p, state_dir) && Path::new(p) != state_dir;
    let device = |p: &str, kind: &str| {
        p.strip_prefix("/dev/")
            .and_then(|n| n.strip_prefix(kind))
            .is_some_and(|id| !id.is_empty() && id.bytes().all(|b| b.is_ascii_digit()))
    };
    let ok = match c {
        Change::Sysfs { path, .. } => {
            KNOB_ROOTS.iter().any(|r| within(path, Path::new(r))) || ours(path)
        }
        Change::ZramHotAdd { .. } | Change::Zram { .. } => true,
        Change::File { path }
        | Change::Dir { path }
        | Change::Mount { path }
        | Change::Tmpfs { path } => ours(path),
        Change::Loop { backing_file } => ours(backing_file),
        Change::Swapon { path } => device(path, "zram") || device(path, "loop") || ours(path),
        Change::Cgroup { path } => {
            within(path, Path::new(CGROUP_ROOT))
                && Path::new(path)
                    .file_name()
                    .is_some_and(|n| n.to_string_lossy().starts_with(crate::swapdev::PREFIX))
        }
    };
    if !ok {
        bail!(
            "journal entry `{}` names a path the live backend never changes (allowed: {}, /dev/zramN, /dev/loopN, {CGROUP_ROOT}**/foliosim-*, and {})",
            describe(c),
            KNOB_ROOTS.join(", "),
            state_dir.display()
        );
    }
    Ok(())
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
        Change::Mount { path } | Change::Tmpfs { path } => format!("umount {path}"),
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
        Change::ZramHotAdd { existing, expected } => {
            crate::swapdev::zram_remove_unconfigured(existing, *expected)
        }
        Change::Zram { id, hot_added } => crate::swapdev::zram_release(*id, *hot_added),
        Change::Loop { backing_file } => crate::swapdev::loop_detach_file(backing_file),
        Change::File { path } if !ours_on_disk(path) => Ok(()),
        Change::Dir { path } if !ours_on_disk(path) => Ok(()),
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
        Change::Mount { path } | Change::Tmpfs { path } => unmount_and_rmdir(path),
    }
}

/// Unmount what we mounted on `path` (if it is mounted) and remove the directory we made.
fn unmount_and_rmdir(path: &str) -> Result<()> {
    let mounted = fs::read_to_string("/proc/self/mounts")
        .unwrap_or_default()
        .lines()
        .any(|l| l.split_whitespace().nth(1) == Some(path));
    if mounted {
        let c = std::ffi::CString::new(path)?;
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

/// Whether `path` is something we made: it exists, is no symlink, and is owned by us (a
/// journaled name someone else took before our create failed is left alone).
fn ours_on_disk(path: &str) -> bool {
    // SAFETY: geteuid has no preconditions.
    let euid = unsafe { libc::geteuid() };
    fs::symlink_metadata(path).is_ok_and(|m| !m.file_type().is_symlink() && m.uid() == euid)
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
        let root = std::env::temp_dir().join(format!("foliosim-settings-{}", std::process::id()));
        let _ = fs::remove_dir_all(&root);
        fs::create_dir(&root).unwrap();
        let (dir, host_lock) = (root.join("state"), root.join("host.lock"));
        let acquire = || HostGuard::acquire_with(dir.clone(), &host_lock);
        ensure_state_dir(&dir).unwrap();
        let knob = dir.join("enabled");
        let knob_path = knob.to_str().unwrap().to_string();
        fs::write(&knob, "always inherit madvise [never]\n").unwrap();
        {
            let mut g = acquire().unwrap();
            g.set_sysfs(&knob_path, "always").unwrap();
            assert_eq!(fs::read_to_string(&knob).unwrap(), "always");
            // A second run is refused while this one holds the host.
            assert!(acquire().is_err());
        }
        assert_eq!(read_knob(&knob_path).unwrap(), "never");
        assert!(!dir.join("journal.json").exists());
        // A run killed before it could restore leaves its journal; the next start restores.
        let g = acquire().unwrap();
        let mut g = std::mem::ManuallyDrop::new(g);
        g.set_sysfs(&knob_path, "madvise").unwrap();
        for (sig, old) in g.old_actions.drain(..) {
            unsafe { libc::sigaction(sig, &old, std::ptr::null_mut()) };
        }
        unsafe { std::ptr::drop_in_place(&mut g._lock) };
        unsafe { std::ptr::drop_in_place(&mut g._host_lock) };
        assert!(dir.join("journal.json").exists());
        let next = acquire().unwrap();
        assert_eq!(next.recovered.len(), 1);
        assert_eq!(read_knob(&knob_path).unwrap(), "never");
        drop(next);
        fs::remove_dir_all(&root).unwrap();
    }

    #[test]
    fn journal_round_trips() {
        let j = JournalFile {
            pid: 7,
            boot_id: "b".into(),
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
