//! What the live backend promises a host (docs/live-safety.md), one test per promise: a task
//! child that panics never restores the parent's host; a state directory, journal or lock
//! that others own or can write is refused; a journal naming any path outside the backend's
//! own is refused whole; nothing is created over an existing path or through a symlink, and
//! nothing pre-existing is adopted or removed; after a reboot only files are undone; two runs
//! never overlap. Tests that need root and a live-capable host are reported as ignored
//! elsewhere (tests/harness); the others run anywhere, with a private host lock.

use foliosim::scenario::{Bytes, MemcgSpec, SwapDeviceKind, SwapDeviceSpec};
use foliosim::Scenario;
use foliosim_live::settings::{self, Change, HostGuard};
use foliosim_live::{cgroup, exec, swapdev};
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};

mod harness;
use harness::{require_live, Outcome};

/// A fresh state directory (0700, ours) and a private host lock beside it.
struct Scratch {
    root: PathBuf,
}

impl Scratch {
    fn new(name: &str) -> Scratch {
        let root =
            std::env::temp_dir().join(format!("foliosim-safety-{}-{name}", std::process::id()));
        let _ = std::fs::remove_dir_all(&root);
        std::fs::create_dir(&root).unwrap();
        std::fs::set_permissions(&root, std::fs::Permissions::from_mode(0o700)).unwrap();
        Scratch { root }
    }
    fn state(&self) -> PathBuf {
        self.root.join("state")
    }
    fn lock(&self) -> PathBuf {
        self.root.join("host.lock")
    }
    fn guard(&self) -> anyhow::Result<HostGuard> {
        HostGuard::acquire_with(self.state(), &self.lock())
    }
    /// A stand-in knob in the state directory (the only writable place a journal may name).
    fn knob(&self) -> String {
        let path = self.state().join("knob");
        std::fs::write(&path, "always madvise [never]\n").unwrap();
        path.display().to_string()
    }
}

impl Drop for Scratch {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.root);
    }
}

fn chown(path: &Path, uid: u32) {
    let c = std::ffi::CString::new(path.as_os_str().as_encoded_bytes()).unwrap();
    // SAFETY: lchown with a valid C string.
    assert_eq!(
        unsafe { libc::lchown(c.as_ptr(), uid, uid) },
        0,
        "lchown {}",
        path.display()
    );
}

fn write_journal(dir: &Path, boot_id: &str, changes: &[Change]) {
    let j = serde_json::json!({ "pid": 1, "boot_id": boot_id, "changes": changes });
    let path = dir.join("journal.json");
    std::fs::write(&path, j.to_string()).unwrap();
    std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o600)).unwrap();
}

// --- 1. A forked task child never restores the host ---

fn a_task_child_that_panics_leaves_the_parents_settings_in_place() -> Outcome {
    use foliosim::workload::Op;
    let s = Scratch::new("panic");
    let mut guard = s.guard().unwrap();
    let knob = s.knob();
    guard.set_sysfs(&knob, "always").unwrap();
    std::env::set_var(exec::CHILD_PANIC_ENV, "1");
    let task = exec::LiveTask {
        name: "panicky".into(),
        ops: vec![Op::Exit],
        ..Default::default()
    };
    let outcome = exec::run_tasks(&[task], &|| None);
    std::env::remove_var(exec::CHILD_PANIC_ENV);
    let outcome = outcome.unwrap();
    // Still the parent: the child ended in its own frame, and restored nothing.
    assert_eq!(std::fs::read_to_string(&knob).unwrap(), "always");
    assert!(
        guard.journal_path().exists(),
        "the child removed the journal"
    );
    let failure = outcome.tasks[0].failure.clone().unwrap_or_default();
    assert!(failure.contains("status 101"), "{failure}");
    guard.restore().unwrap();
    assert_eq!(settings::read_knob(&knob).unwrap(), "never");
    Ok(())
}

fn a_guard_dropped_in_a_forked_child_restores_nothing() -> Outcome {
    let s = Scratch::new("fork");
    let mut guard = s.guard().unwrap();
    let knob = s.knob();
    guard.set_sysfs(&knob, "always").unwrap();
    // SAFETY: fork; the child only drops its copy of the guard and _exits.
    let pid = unsafe { libc::fork() };
    if pid == 0 {
        // What an unwinding panic would do in the child.
        drop(guard);
        // SAFETY: leave without running anything else of the parent's.
        unsafe { libc::_exit(0) };
    }
    let mut status = 0;
    // SAFETY: waiting for our own child.
    unsafe { libc::waitpid(pid, &mut status, 0) };
    assert_eq!(std::fs::read_to_string(&knob).unwrap(), "always");
    assert!(guard.journal_path().exists());
    guard.restore().unwrap();
    assert_eq!(settings::read_knob(&knob).unwrap(), "never");
    Ok(())
}

// --- 2. The journal and the state directory are trusted only if ours ---

fn a_journal_naming_a_path_outside_the_allowed_sets_restores_nothing() -> Outcome {
    let s = Scratch::new("outside");
    std::fs::create_dir(s.state()).unwrap();
    std::fs::set_permissions(s.state(), std::fs::Permissions::from_mode(0o700)).unwrap();
    // Victims outside the state directory: a "knob" and a "swap file".
    let victim_knob = s.root.join("victim-knob");
    let victim_file = s.root.join("victim-file");
    std::fs::write(&victim_knob, "precious").unwrap();
    std::fs::write(&victim_file, "precious").unwrap();
    let ours = s.state().join("foliosim-swap-1-0");
    std::fs::write(&ours, "").unwrap();
    write_journal(
        &s.state(),
        &settings::boot_id(),
        &[
            Change::File {
                path: ours.display().to_string(),
            },
            Change::Sysfs {
                path: victim_knob.display().to_string(),
                old_value: "owned".into(),
            },
            Change::File {
                path: victim_file.display().to_string(),
            },
            Change::Cgroup {
                path: "/sys/fs/cgroup/system.slice".into(),
            },
        ],
    );
    let result = s.guard();
    // The harm first, so that a failure names it.
    assert_eq!(
        std::fs::read_to_string(&victim_knob).unwrap(),
        "precious",
        "a knob outside the allowed set was written"
    );
    assert!(
        victim_file.exists(),
        "a file outside the state dir was removed"
    );
    // Refused whole: not even the entry that was ours was acted on.
    assert!(ours.exists(), "part of a refused journal was restored");
    let err = result
        .err()
        .expect("a journal naming foreign paths must be refused");
    assert!(format!("{err:#}").contains("never changes"), "{err:#}");
    Ok(())
}

fn the_allowed_sets_are_the_backends_own_paths() -> Outcome {
    let dir = Path::new("/var/lib/foliosim");
    let ok = |c: Change| settings::check_allowed(&c, dir).is_ok();
    let sysfs = |p: &str| Change::Sysfs {
        path: p.into(),
        old_value: "x".into(),
    };
    assert!(ok(sysfs(
        "/sys/kernel/mm/transparent_hugepage/hugepages-64kB/enabled"
    )));
    assert!(ok(sysfs("/proc/sys/vm/swappiness")));
    assert!(ok(sysfs("/sys/module/zswap/parameters/enabled")));
    assert!(!ok(sysfs("/proc/sys/kernel/core_pattern")));
    assert!(!ok(sysfs("/proc/sys/vm/../kernel/core_pattern")));
    assert!(!ok(sysfs("/etc/passwd")));
    assert!(ok(Change::File {
        path: "/var/lib/foliosim/foliosim-swap-7-0".into()
    }));
    assert!(!ok(Change::File {
        path: "/var/lib/foliosim".into()
    }));
    assert!(!ok(Change::File {
        path: "/var/lib/foliosim/../../../etc/shadow".into()
    }));
    assert!(!ok(Change::Dir {
        path: "/home".into()
    }));
    assert!(ok(Change::Swapon {
        path: "/dev/zram3".into()
    }));
    assert!(ok(Change::Swapon {
        path: "/dev/loop12".into()
    }));
    assert!(!ok(Change::Swapon {
        path: "/dev/sda2".into()
    }));
    assert!(!ok(Change::Swapon {
        path: "/dev/zram".into()
    }));
    assert!(ok(Change::Cgroup {
        path: "/sys/fs/cgroup/foliosim-7-a/foliosim-7-b".into()
    }));
    assert!(!ok(Change::Cgroup {
        path: "/sys/fs/cgroup/user.slice".into()
    }));
    assert!(!ok(Change::Mount {
        path: "/mnt".into()
    }));
    assert!(ok(Change::Tmpfs {
        path: "/var/lib/foliosim/tmpfs-7-0".into()
    }));
    assert!(!ok(Change::Tmpfs {
        path: "/tmp".into()
    }));
    assert!(!ok(Change::Tmpfs {
        path: "/var/lib/foliosim".into()
    }));
    assert!(ok(sysfs(
        "/sys/kernel/mm/transparent_hugepage/shmem_enabled"
    )));
    assert!(!ok(Change::Loop {
        backing_file: "/home/x.img".into()
    }));
    Ok(())
}

fn a_state_dir_others_can_write_or_that_is_a_symlink_is_refused() -> Outcome {
    let s = Scratch::new("mode");
    std::fs::create_dir(s.state()).unwrap();
    std::fs::set_permissions(s.state(), std::fs::Permissions::from_mode(0o777)).unwrap();
    let err = s
        .guard()
        .err()
        .expect("a world-writable state dir must be refused");
    assert!(format!("{err:#}").contains("lets others write"), "{err:#}");
    std::fs::set_permissions(s.state(), std::fs::Permissions::from_mode(0o770)).unwrap();
    assert!(
        s.guard().is_err(),
        "a group-writable state dir must be refused"
    );
    std::fs::remove_dir(s.state()).unwrap();
    let real = s.root.join("real");
    std::fs::create_dir(&real).unwrap();
    std::os::unix::fs::symlink(&real, s.state()).unwrap();
    let err = s
        .guard()
        .err()
        .expect("a symlinked state dir must be refused");
    assert!(format!("{err:#}").contains("not a directory"), "{err:#}");
    // And a parent others can write (no sticky bit) lets them swap the directory out.
    let open = s.root.join("open");
    std::fs::create_dir(&open).unwrap();
    std::fs::set_permissions(&open, std::fs::Permissions::from_mode(0o777)).unwrap();
    let err = HostGuard::acquire_with(open.join("state"), &s.lock())
        .err()
        .unwrap();
    assert!(
        format!("{err:#}").contains("without the sticky bit"),
        "{err:#}"
    );
    Ok(())
}

fn a_state_dir_or_journal_owned_by_another_user_is_refused() -> Outcome {
    require_live()?; // chown needs root
    let s = Scratch::new("owner");
    std::fs::create_dir(s.state()).unwrap();
    std::fs::set_permissions(s.state(), std::fs::Permissions::from_mode(0o700)).unwrap();
    chown(&s.state(), 65534);
    let err = s
        .guard()
        .err()
        .expect("a state dir owned by nobody must be refused");
    assert!(format!("{err:#}").contains("owned by uid 65534"), "{err:#}");
    chown(&s.state(), 0);
    let knob = s.knob();
    write_journal(
        &s.state(),
        &settings::boot_id(),
        &[Change::Sysfs {
            path: knob.clone(),
            old_value: "always".into(),
        }],
    );
    chown(&s.state().join("journal.json"), 65534);
    let err = s
        .guard()
        .err()
        .expect("a journal owned by nobody must be refused");
    assert!(format!("{err:#}").contains("restore journal"), "{err:#}");
    assert_eq!(
        settings::read_knob(&knob).unwrap(),
        "never",
        "the foreign journal was acted on"
    );
    Ok(())
}

// --- 3. Nothing is created over an existing path or through a symlink ---

fn a_file_is_never_written_through_a_premade_symlink() -> Outcome {
    let s = Scratch::new("symlink");
    let target = s.root.join("target");
    std::fs::write(&target, "precious").unwrap();
    let link = s.root.join("file0");
    std::os::unix::fs::symlink(&target, &link).unwrap();
    let result = foliosim_live::files::create(&link, 4096, 1);
    // The harm first, so that a failure names it.
    let len = std::fs::metadata(&target).unwrap().len();
    assert_eq!(
        len, 8,
        "the symlink's target was written through ({len} bytes)"
    );
    let err = result.expect_err("a premade symlink must be refused");
    assert!(format!("{err:#}").contains("must not exist"), "{err:#}");
    // A dangling one too (O_CREAT would create its target).
    let dangling = s.root.join("file1");
    std::os::unix::fs::symlink(s.root.join("nowhere"), &dangling).unwrap();
    let result = foliosim_live::files::create(&dangling, 4096, 1);
    assert!(
        !s.root.join("nowhere").exists(),
        "a dangling symlink's target was created"
    );
    assert!(result.is_err());
    Ok(())
}

const FILE_SCENARIO: &str = r#"
[machine]
memory = "256M"
[machine.disk]
kind = "ssd"
size = "64M"
[[file]]
name = "f0"
size = "1M"
[[workload]]
kind = "file_read"
file = "f0"
nproc = 1
"#;

fn an_existing_file_directory_is_refused_and_kept() -> Outcome {
    let s = Scratch::new("filedir");
    let mut guard = s.guard().unwrap();
    let taken = s.state().join(format!("files-{}", std::process::id()));
    std::fs::create_dir(&taken).unwrap();
    std::fs::write(taken.join("theirs"), "precious").unwrap();
    let scenario = Scenario::from_toml_str(FILE_SCENARIO).unwrap();
    let result = foliosim_live::run::create_files(&mut guard, &scenario, &mut vec![]);
    guard.restore().unwrap();
    // The harm first, so that a failure names it.
    assert!(
        taken.join("theirs").exists(),
        "restore removed a directory this run did not create"
    );
    let err = result.expect_err("an existing file directory must be refused, not adopted");
    assert!(format!("{err:#}").contains("must not exist"), "{err:#}");
    Ok(())
}

fn an_existing_swap_file_is_refused_and_kept() -> Outcome {
    let s = Scratch::new("swapfile");
    let mut guard = s.guard().unwrap();
    let taken = swapdev::swap_file_path(guard.dir(), 0);
    std::fs::write(&taken, "precious").unwrap();
    let spec = SwapDeviceSpec::new(SwapDeviceKind::File, Bytes(1 << 20));
    let result = swapdev::create(&mut guard, 0, &spec, "lzo-rle");
    guard.restore().unwrap();
    // The harm first, so that a failure names it.
    assert!(
        Path::new(&taken).exists(),
        "restore removed a swap file this run did not create"
    );
    assert_eq!(std::fs::read_to_string(&taken).unwrap(), "precious");
    let err = result.expect_err("an existing swap file must be refused");
    assert!(format!("{err:#}").contains("must not exist"), "{err:#}");
    Ok(())
}

// --- 4. After a reboot only files are undone ---

fn after_a_reboot_only_the_files_are_removed() -> Outcome {
    let s = Scratch::new("reboot");
    std::fs::create_dir(s.state()).unwrap();
    std::fs::set_permissions(s.state(), std::fs::Permissions::from_mode(0o700)).unwrap();
    let knob = s.knob();
    let swap = s.state().join("foliosim-swap-1-0");
    std::fs::write(&swap, "").unwrap();
    let files = s.state().join("files-1");
    std::fs::create_dir(&files).unwrap();
    write_journal(
        &s.state(),
        "an-earlier-boot",
        &[
            Change::Sysfs {
                path: knob.clone(),
                old_value: "always".into(),
            },
            Change::File {
                path: swap.display().to_string(),
            },
            Change::Dir {
                path: files.display().to_string(),
            },
            Change::Zram {
                id: 999,
                hot_added: true,
            },
        ],
    );
    let guard = s.guard().unwrap();
    assert!(
        !swap.exists() && !files.exists(),
        "files of the earlier boot left"
    );
    assert_eq!(
        settings::read_knob(&knob).unwrap(),
        "never",
        "a knob of an earlier boot was written"
    );
    assert!(
        guard.recovered.iter().any(|r| r.contains("reboot")),
        "{:?}",
        guard.recovered
    );
    Ok(())
}

fn the_state_dir_is_on_disk_with_the_swap_files_beside_the_journal() -> Outcome {
    // Journal and swap files must outlive a reboot together: the default state directory is
    // not where the FHS clears at boot (/run, /tmp; on this VM /run is not even tmpfs, so
    // the file system alone would not tell), nor on tmpfs, and a run's swap files go in it.
    let default = Path::new(settings::DEFAULT_STATE_DIR);
    assert!(
        !default.starts_with("/run") && !default.starts_with("/tmp"),
        "{} is cleared at boot: a reboot loses the journal",
        default.display()
    );
    let mut dir = default;
    while !dir.exists() {
        dir = dir.parent().unwrap();
    }
    let c = std::ffi::CString::new(dir.as_os_str().as_encoded_bytes()).unwrap();
    // SAFETY: statfs into a zeroed local with a valid C string.
    let (rc, fs) = unsafe {
        let mut fs: libc::statfs = std::mem::zeroed();
        (libc::statfs(c.as_ptr(), &mut fs), fs)
    };
    assert_eq!(rc, 0, "statfs {}", dir.display());
    assert_ne!(
        fs.f_type,
        libc::TMPFS_MAGIC,
        "{} is on tmpfs: a reboot loses the journal",
        dir.display()
    );
    let state = Path::new("/var/lib/foliosim-test");
    let swap = swapdev::swap_file_path(state, 0);
    assert_eq!(Path::new(&swap).parent(), Some(state), "{swap}");
    Ok(())
}

// --- 5. Nothing pre-existing is adopted ---

fn an_existing_memcg_of_our_name_is_refused_and_kept() -> Outcome {
    require_live()?;
    let s = Scratch::new("memcg");
    let mut guard = s.guard().unwrap();
    let (root, _) = cgroup::memory_root().unwrap();
    let taken = cgroup::memcg_path(&root, std::process::id(), None, "taken");
    std::fs::create_dir(&taken).unwrap();
    let result = cgroup::Memcg::create(&mut guard, &MemcgSpec::with_max("taken", None), None);
    guard.restore().unwrap();
    let kept = taken.exists();
    if kept {
        std::fs::remove_dir(&taken).unwrap();
    }
    // The harm first, so that a failure names it.
    assert!(kept, "restore removed a memcg this run did not create");
    let err = result.expect_err("an existing memcg must not be adopted");
    assert!(format!("{err:#}").contains("already exists"), "{err:#}");
    Ok(())
}

fn undoing_a_hot_add_removes_only_the_device_it_made() -> Outcome {
    require_live()?;
    let s = Scratch::new("zram");
    let mut guard = s.guard().unwrap();
    let spec = SwapDeviceSpec::new(SwapDeviceKind::Zram, Bytes(16 << 20));
    let ours = swapdev::create(&mut guard, 0, &spec, "lzo-rle").unwrap();
    // Someone else hot_adds a device and has not configured it yet.
    let theirs: u32 = settings::read_knob("/sys/class/zram-control/hot_add")
        .unwrap()
        .parse()
        .unwrap();
    guard.restore().unwrap();
    let ids = swapdev::zram_ids();
    std::fs::write("/sys/class/zram-control/hot_remove", theirs.to_string()).ok();
    assert!(
        ids.contains(&theirs),
        "restore removed zram{theirs}, which it did not add"
    );
    assert!(
        !ids.contains(&ours.zram_id.unwrap()),
        "our zram device was left"
    );
    Ok(())
}

fn without_hot_add_no_existing_zram_device_is_taken() -> Outcome {
    let s = Scratch::new("nohotadd");
    let mut guard = s.guard().unwrap();
    let result = swapdev::zram_add_via(&mut guard, &s.root.join("no-zram-control"));
    // Take back whatever was journaled before asserting: a failing test must not reset a
    // device of this host on its way out.
    let taken = guard.changes().to_vec();
    for c in taken.iter().rev() {
        guard.unrecord(c).unwrap();
    }
    assert!(
        taken.is_empty(),
        "took a zram device it did not add: {taken:?}"
    );
    let err = result.expect_err("without zram-control/hot_add the run must be refused");
    assert!(
        format!("{err:#}").contains("never takes a zram device it did not add"),
        "{err:#}"
    );
    Ok(())
}

// --- 6. Two runs never overlap ---

fn a_second_run_with_another_state_dir_is_refused_while_the_first_holds_the_host() -> Outcome {
    let (a, b) = (Scratch::new("lock-a"), Scratch::new("lock-b"));
    let _first = HostGuard::acquire_with(a.state(), &a.lock()).unwrap();
    let err = HostGuard::acquire_with(b.state(), &a.lock())
        .err()
        .expect("overlapping runs");
    assert!(format!("{err:#}").contains("holds the host"), "{err:#}");
    Ok(())
}

fn two_runs_share_the_fixed_host_lock() -> Outcome {
    require_live()?; // /run/foliosim-live.lock is root's
    let (a, b) = (Scratch::new("host-a"), Scratch::new("host-b"));
    let first = HostGuard::acquire_in(a.state()).unwrap();
    let err = HostGuard::acquire_in(b.state())
        .err()
        .expect("overlapping runs");
    assert!(format!("{err:#}").contains(settings::HOST_LOCK), "{err:#}");
    drop(first);
    HostGuard::acquire_in(b.state()).unwrap();
    Ok(())
}

harness_main!(
    a_task_child_that_panics_leaves_the_parents_settings_in_place,
    a_guard_dropped_in_a_forked_child_restores_nothing,
    a_journal_naming_a_path_outside_the_allowed_sets_restores_nothing,
    the_allowed_sets_are_the_backends_own_paths,
    a_state_dir_others_can_write_or_that_is_a_symlink_is_refused,
    a_state_dir_or_journal_owned_by_another_user_is_refused,
    a_file_is_never_written_through_a_premade_symlink,
    an_existing_file_directory_is_refused_and_kept,
    an_existing_swap_file_is_refused_and_kept,
    after_a_reboot_only_the_files_are_removed,
    the_state_dir_is_on_disk_with_the_swap_files_beside_the_journal,
    an_existing_memcg_of_our_name_is_refused_and_kept,
    undoing_a_hot_add_removes_only_the_device_it_made,
    without_hot_add_no_existing_zram_device_is_taken,
    a_second_run_with_another_state_dir_is_refused_while_the_first_holds_the_host,
    two_runs_share_the_fixed_host_lock,
);
