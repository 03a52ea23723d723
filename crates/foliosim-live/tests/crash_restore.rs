//! A live run SIGKILLed at any moment is undone by the next start. One test per kind of change
//! the live backend makes (`settings::ChangeKind::ALL`): a child (this test binary run again,
//! as the `child` test) makes changes of that kind through the backend's own functions, and is
//! killed at each of its crash points (before a change is journaled, between the journal and
//! the change, after it) and at seeded random times; the next start (`HostGuard::acquire`)
//! restores, and every host setting must read as before. Runs as root on a live-capable host,
//! else each is reported as ignored, with the reason (tests/harness). The harness runs them one
//! at a time and the host-wide lock serializes them with any other live run; cargo runs test
//! binaries one at a time, so they never overlap tests/live.rs.
//!
//! `FOLIOSIM_CRASH_SEED=N` repeats a run's random kill times (each test prints its seed).

use foliosim::scenario::{Bytes, MemcgSpec, SwapDeviceKind, SwapDeviceSpec};
use foliosim::Scenario;
use foliosim_live::settings::{self, Change, ChangeKind, HostGuard};
use foliosim_live::{cgroup, counters::THP_DIR, swapdev};
use std::os::unix::process::{CommandExt, ExitStatusExt};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

mod harness;
use harness::{ignored, require_live, Outcome};

const CHILD_KIND: &str = "FOLIOSIM_CRASH_CHILD";
const CHILD_HOLD: &str = "FOLIOSIM_CRASH_HOLD";
/// Seeded random kills per kind, on top of one kill at every crash point.
const RANDOM_KILLS: u32 = 2;

fn kind_name(k: ChangeKind) -> String {
    format!("{k:?}")
}

fn kind_from_name(name: &str) -> ChangeKind {
    *ChangeKind::ALL
        .iter()
        .find(|k| kind_name(**k) == name)
        .unwrap_or_else(|| panic!("unknown change kind {name}"))
}

/// The first of `choices` that differs from `current`.
fn other<'a>(current: &str, choices: &[&'a str]) -> &'a str {
    choices.iter().find(|c| **c != current).unwrap()
}

fn bump(path: &str, by: u64, max: u64) -> String {
    let v: u64 = settings::read_knob(path).unwrap().parse().unwrap();
    (if v + by <= max { v + by } else { v - by }).to_string()
}

fn mthp_enabled_files() -> Vec<String> {
    let mut out: Vec<String> = std::fs::read_dir(THP_DIR)
        .unwrap()
        .filter_map(|e| e.ok())
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .filter(|n| n.starts_with("hugepages-"))
        .map(|n| format!("{THP_DIR}/{n}/enabled"))
        // Sizes only shmem may use have no `enabled`.
        .filter(|p| std::path::Path::new(p).exists())
        .collect();
    out.sort();
    out
}

/// A stand-in for a knob outside the known classes: a file in the state directory (the only
/// place outside the knob trees that a journal may name).
fn other_knob() -> String {
    settings::state_dir()
        .join("crash-other-knob")
        .display()
        .to_string()
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

/// In the child: make the changes of `kind` the way a live run makes them.
fn make_changes(kind: ChangeKind, guard: &mut HostGuard) -> anyhow::Result<()> {
    let swap = |guard: &mut HostGuard, kind, size| {
        swapdev::create(guard, 0, &SwapDeviceSpec::new(kind, Bytes(size)), "lzo-rle").map(|_| ())
    };
    match kind {
        ChangeKind::ThpKnob => {
            let enabled = format!("{THP_DIR}/enabled");
            let now = settings::read_knob(&enabled)?;
            guard.set_sysfs(&enabled, other(&now, &["madvise", "never"]))?;
            let defrag = format!("{THP_DIR}/defrag");
            let now = settings::read_knob(&defrag)?;
            guard.set_sysfs(&defrag, other(&now, &["defer", "never"]))?;
            let shmem = format!("{THP_DIR}/shmem_enabled");
            let now = settings::read_knob(&shmem)?;
            guard.set_sysfs(&shmem, other(&now, &["deny", "never"]))?;
            for (knob, max) in [
                ("pages_to_scan", 1 << 20),
                ("scan_sleep_millisecs", 1 << 20),
            ] {
                let path = format!("{THP_DIR}/khugepaged/{knob}");
                guard.set_sysfs(&path, &bump(&path, 1, max))?;
            }
        }
        ChangeKind::MthpSizeKnob => {
            for path in mthp_enabled_files() {
                let now = settings::read_knob(&path)?;
                guard.set_sysfs(&path, other(&now, &["never", "madvise"]))?;
            }
        }
        ChangeKind::ZswapParam => {
            let zs = "/sys/module/zswap/parameters";
            for (knob, max) in [("max_pool_percent", 100), ("accept_threshold_percent", 100)] {
                let path = format!("{zs}/{knob}");
                guard.set_sysfs(&path, &bump(&path, 1, max))?;
            }
            let path = format!("{zs}/shrinker_enabled");
            if std::path::Path::new(&path).exists() {
                let now = settings::read_knob(&path)?;
                guard.set_sysfs(&path, other(&now, &["Y", "N"]))?;
            }
        }
        ChangeKind::Sysctl => {
            for (knob, by, max) in [
                ("swappiness", 1, 200),
                ("watermark_scale_factor", 1, 3000),
                ("compaction_proactiveness", 1, 100),
                ("page-cluster", 1, 10),
                ("min_free_kbytes", 1024, u64::MAX),
            ] {
                let path = format!("/proc/sys/vm/{knob}");
                guard.set_sysfs(&path, &bump(&path, by, max))?;
            }
        }
        ChangeKind::OtherKnob => {
            guard.set_sysfs(&other_knob(), "changed")?;
        }
        ChangeKind::ZramDevice => swap(guard, SwapDeviceKind::Zram, 64 << 20)?,
        ChangeKind::SwapFile => swap(guard, SwapDeviceKind::File, 16 << 20)?,
        ChangeKind::LoopDevice => swap(guard, SwapDeviceKind::Loop, 16 << 20)?,
        ChangeKind::Swapon => swap(guard, SwapDeviceKind::Ssd, 16 << 20)?,
        ChangeKind::Memcg => {
            let (_, version) = cgroup::memory_root()?;
            let v2 = version == cgroup::Version::V2;
            let spec = MemcgSpec {
                name: "crash".into(),
                max: Some(Bytes(64 << 20)),
                high: v2.then_some(Bytes(48 << 20)),
                zswap_max: v2.then_some(Bytes(16 << 20)),
                zswap_writeback: !v2,
                oom_group: false,
                parent: None,
                min: None,
                low: None,
                swap_max: None,
            };
            let cg = cgroup::Memcg::create(guard, &spec, None)?;
            // A process left in it (in a session of its own, so killing our process group
            // spares it): restore must kill it before rmdir.
            let sleeper = Command::new("sleep").arg("60").process_group(0).spawn()?;
            std::fs::write(cg.procs_file(), sleeper.id().to_string())?;
        }
        ChangeKind::FileDir => {
            let s = Scenario::from_toml_str(FILE_SCENARIO).unwrap();
            foliosim_live::run::create_files(guard, &s, &mut vec![])?;
        }
        ChangeKind::TracefsMount => {
            foliosim_live::record::perf::mount_tracefs(guard)?;
        }
        ChangeKind::TmpfsMount => {
            let dir = guard.dir().join(format!("tmpfs-{}-0", std::process::id()));
            foliosim_live::tmpfs::mount(guard, &dir, "size=1m,huge=never,mode=0700")?;
            foliosim_live::tmpfs::write(&foliosim_live::tmpfs::path(&dir, 0), 0, 16)?;
        }
    }
    Ok(())
}

/// Not a test on its own: the child the tests start (it does nothing unless they set its env).
fn child() -> Outcome {
    let Ok(name) = std::env::var(CHILD_KIND) else {
        return Err(ignored(
            "the crash tests' child process: runs only when they start it",
        ));
    };
    let kind = kind_from_name(&name);
    let mut guard = HostGuard::acquire().unwrap();
    make_changes(kind, &mut guard).unwrap();
    let kinds: Vec<String> = guard
        .changes()
        .iter()
        .map(|c| kind_name(c.kind()))
        .collect();
    println!("CRASH-KINDS {}", kinds.join(","));
    println!("CRASH-POINTS {}", settings::crash_points_passed());
    if std::env::var_os(CHILD_HOLD).is_some() {
        // Wait to be killed (the timed kills), but not forever.
        std::thread::sleep(Duration::from_secs(30));
    }
    guard.restore().unwrap();
    Ok(())
}

/// Every host setting a live run may change, as text.
fn host_state() -> Vec<String> {
    let mut knobs = vec![
        format!("{THP_DIR}/enabled"),
        format!("{THP_DIR}/defrag"),
        format!("{THP_DIR}/shmem_enabled"),
        other_knob(),
    ];
    for k in [
        "defrag",
        "pages_to_scan",
        "scan_sleep_millisecs",
        "alloc_sleep_millisecs",
        "max_ptes_none",
        "max_ptes_swap",
        "max_ptes_shared",
    ] {
        knobs.push(format!("{THP_DIR}/khugepaged/{k}"));
    }
    knobs.extend(mthp_enabled_files());
    for k in [
        "enabled",
        "compressor",
        "max_pool_percent",
        "accept_threshold_percent",
        "shrinker_enabled",
    ] {
        knobs.push(format!("/sys/module/zswap/parameters/{k}"));
    }
    for k in [
        "min_free_kbytes",
        "watermark_scale_factor",
        "watermark_boost_factor",
        "extfrag_threshold",
        "compaction_proactiveness",
        "compact_unevictable_allowed",
        "swappiness",
        "page-cluster",
    ] {
        knobs.push(format!("/proc/sys/vm/{k}"));
    }
    let mut out: Vec<String> = knobs
        .into_iter()
        .map(|p| format!("{p} = {:?}", settings::read_knob(&p).ok()))
        .collect();
    out.push(format!("swaps {:?}", swapdev::active_swaps().unwrap()));
    out.push(format!("zram {:?}", swapdev::zram_ids()));
    let mut loops: Vec<String> = std::fs::read_dir("/sys/block")
        .unwrap()
        .filter_map(|e| e.ok())
        .filter_map(|e| {
            let backing = std::fs::read_to_string(e.path().join("loop/backing_file")).ok()?;
            Some(format!("{:?} over {}", e.file_name(), backing.trim()))
        })
        .collect();
    loops.sort();
    out.push(format!("loops {loops:?}"));
    out.push(format!("memcgs {:?}", cgroup::leftovers()));
    let mounts: Vec<String> = std::fs::read_to_string("/proc/self/mounts")
        .unwrap()
        .lines()
        .filter(|l| l.contains("foliosim"))
        .map(String::from)
        .collect();
    out.push(format!("mounts {mounts:?}"));
    let mut state: Vec<String> = std::fs::read_dir(settings::state_dir())
        .map(|d| {
            d.filter_map(|e| e.ok())
                .map(|e| e.file_name().to_string_lossy().into_owned())
                .filter(|n| n != "live.lock")
                .collect()
        })
        .unwrap_or_default();
    state.sort();
    out.push(format!("state dir {state:?}"));
    out
}

fn diff(before: &[String], after: &[String]) -> String {
    before
        .iter()
        .zip(after)
        .filter(|(b, a)| b != a)
        .map(|(b, a)| format!("\n  before: {b}\n  after:  {a}"))
        .collect()
}

/// Start the child for `kind`; `kill_at` arms its crash point, `hold` keeps it alive after.
fn spawn_child(kind: ChangeKind, kill_at: Option<u64>, hold: bool) -> std::process::Child {
    let mut cmd = Command::new(std::env::current_exe().unwrap());
    cmd.args(["child", "--exact", "--nocapture", "--test-threads=1"])
        .env(CHILD_KIND, kind_name(kind))
        .env_remove("FOLIOSIM_LIVE_KILL_AT")
        .env_remove(CHILD_HOLD)
        // Its own process group: a timed kill takes its helpers (losetup, mkswap) with it.
        .process_group(0)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    if let Some(n) = kill_at {
        cmd.env("FOLIOSIM_LIVE_KILL_AT", n.to_string());
    }
    if hold {
        cmd.env(CHILD_HOLD, "1");
    }
    cmd.spawn().unwrap()
}

fn field(stdout: &str, key: &str) -> String {
    stdout
        .lines()
        .find_map(|l| Some(&l[l.find(key)? + key.len()..]))
        .unwrap_or_else(|| panic!("no {key} in the child's output:\n{stdout}"))
        .trim()
        .to_string()
}

/// Wait until nothing of the killed child's process group is left (its helpers finish their
/// syscalls first), but not forever: an unreaped zombie still counts.
fn wait_group_gone(pgid: u32) {
    let t0 = Instant::now();
    // SAFETY: kill(2) with signal 0 only checks for existence.
    while unsafe { libc::kill(-(pgid as i32), 0) } == 0 && t0.elapsed() < Duration::from_secs(2) {
        std::thread::sleep(Duration::from_millis(5));
    }
}

/// The next start after a kill: restores the journal and says what it restored.
fn next_start(kind: ChangeKind, before: &[String], what: &str) -> Vec<String> {
    let restored = settings::recover().unwrap_or_else(|e| panic!("{kind:?} {what}: {e:#}"));
    let after = host_state();
    assert!(
        after == before,
        "{kind:?} {what}: the next start restored {restored:?} but the host differs:{}",
        diff(before, &after)
    );
    assert!(!settings::state_dir().join("journal.json").exists());
    restored
}

struct Rng(u64);
impl Rng {
    fn below(&mut self, n: u64) -> u64 {
        // xorshift64*
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_F491_4F6C_DD1D) % n.max(1)
    }
}

fn seed() -> u64 {
    std::env::var("FOLIOSIM_CRASH_SEED")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or_else(|| {
            std::time::SystemTime::now()
                .duration_since(std::time::UNIX_EPOCH)
                .unwrap()
                .as_nanos() as u64
        })
}

fn crash_and_restore(kind: ChangeKind) -> Outcome {
    require_live()?;
    // A journal some earlier run left is not ours to judge: restore it first.
    settings::recover().unwrap();
    if kind == ChangeKind::OtherKnob {
        std::fs::write(other_knob(), "original\n").unwrap();
    }
    let before = host_state();

    // A clean run: counts the crash points, and restores on its own.
    let t0 = Instant::now();
    let out = spawn_child(kind, None, false).wait_with_output().unwrap();
    let clean = t0.elapsed();
    let stdout = String::from_utf8_lossy(&out.stdout).into_owned();
    assert!(
        out.status.success(),
        "{kind:?} clean run failed:\n{stdout}\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let kinds = field(&stdout, "CRASH-KINDS ");
    assert!(
        kinds.split(',').any(|k| k == kind_name(kind)),
        "{kind:?}: the child journaled only {kinds}"
    );
    let points: u64 = field(&stdout, "CRASH-POINTS ").parse().unwrap();
    let after = host_state();
    assert!(
        after == before,
        "{kind:?}: a clean run did not restore:{}",
        diff(&before, &after)
    );

    // Killed at every crash point: before, between and after each journaled change.
    for n in 1..=points {
        let out = spawn_child(kind, Some(n), false)
            .wait_with_output()
            .unwrap();
        assert_eq!(
            out.status.signal(),
            Some(libc::SIGKILL),
            "{kind:?}: the child was to die at crash point {n}:\n{}",
            String::from_utf8_lossy(&out.stderr)
        );
        let changed = host_state() != before;
        let restored = next_start(
            kind,
            &before,
            &format!("killed at crash point {n}/{points}"),
        );
        if n == points {
            assert!(
                changed,
                "{kind:?}: killed after its last change, yet nothing changed"
            );
            assert!(
                !restored.is_empty(),
                "{kind:?}: the next start said nothing"
            );
        }
        eprintln!("{kind:?} crash point {n}/{points}: restored {restored:?}");
    }

    // Killed at random moments (inside a change too: mkswap, losetup, fallocate).
    let seed = seed();
    eprintln!("{kind:?}: random kills with FOLIOSIM_CRASH_SEED={seed}");
    let mut rng = Rng(seed | 1);
    let window_us = (clean.as_micros() as u64).max(1000);
    for round in 0..RANDOM_KILLS {
        let delay_us = rng.below(window_us);
        let child = spawn_child(kind, None, true);
        std::thread::sleep(Duration::from_micros(delay_us));
        // SAFETY: killing the process group of the child we spawned.
        unsafe { libc::kill(-(child.id() as i32), libc::SIGKILL) };
        let pgid = child.id();
        child.wait_with_output().unwrap();
        wait_group_gone(pgid);
        let restored = next_start(
            kind,
            &before,
            &format!("killed after {delay_us} us (seed {seed}, round {round})"),
        );
        eprintln!("{kind:?} killed after {delay_us} us: restored {restored:?}");
    }
    if kind == ChangeKind::OtherKnob {
        std::fs::remove_file(other_knob()).ok();
    }
    Ok(())
}

/// Each kind has its test below; this match fails to compile when a kind is added without one.
fn every_change_kind_has_a_crash_test() -> Outcome {
    for kind in ChangeKind::ALL {
        let _test: fn() -> Outcome = match kind {
            ChangeKind::ThpKnob => thp_knob,
            ChangeKind::MthpSizeKnob => mthp_size_knob,
            ChangeKind::ZswapParam => zswap_param,
            ChangeKind::Sysctl => sysctl,
            ChangeKind::OtherKnob => other_sysfs_knob,
            ChangeKind::ZramDevice => zram_device,
            ChangeKind::SwapFile => swap_file,
            ChangeKind::LoopDevice => loop_device,
            ChangeKind::Swapon => swapon,
            ChangeKind::Memcg => memcg,
            ChangeKind::FileDir => file_dir,
            ChangeKind::TracefsMount => tracefs_mount,
            ChangeKind::TmpfsMount => tmpfs_mount,
        };
    }
    // And every journal entry maps to a kind in ALL.
    for c in [
        Change::ZramHotAdd {
            existing: vec![],
            expected: None,
        },
        Change::Loop {
            backing_file: "/x".into(),
        },
        Change::Sysfs {
            path: "/proc/sys/vm/swappiness".into(),
            old_value: "60".into(),
        },
    ] {
        assert!(ChangeKind::ALL.contains(&c.kind()));
    }
    Ok(())
}

fn thp_knob() -> Outcome {
    crash_and_restore(ChangeKind::ThpKnob)
}
fn mthp_size_knob() -> Outcome {
    crash_and_restore(ChangeKind::MthpSizeKnob)
}
fn zswap_param() -> Outcome {
    crash_and_restore(ChangeKind::ZswapParam)
}
fn sysctl() -> Outcome {
    crash_and_restore(ChangeKind::Sysctl)
}
fn other_sysfs_knob() -> Outcome {
    crash_and_restore(ChangeKind::OtherKnob)
}
fn zram_device() -> Outcome {
    crash_and_restore(ChangeKind::ZramDevice)
}
fn swap_file() -> Outcome {
    crash_and_restore(ChangeKind::SwapFile)
}
fn loop_device() -> Outcome {
    crash_and_restore(ChangeKind::LoopDevice)
}
fn swapon() -> Outcome {
    crash_and_restore(ChangeKind::Swapon)
}
fn memcg() -> Outcome {
    crash_and_restore(ChangeKind::Memcg)
}
fn file_dir() -> Outcome {
    crash_and_restore(ChangeKind::FileDir)
}
fn tracefs_mount() -> Outcome {
    crash_and_restore(ChangeKind::TracefsMount)
}
fn tmpfs_mount() -> Outcome {
    crash_and_restore(ChangeKind::TmpfsMount)
}

harness_main!(
    every_change_kind_has_a_crash_test,
    child,
    thp_knob,
    mthp_size_knob,
    zswap_param,
    sysctl,
    other_sysfs_knob,
    zram_device,
    swap_file,
    loop_device,
    swapon,
    memcg,
    file_dir,
    tracefs_mount,
    tmpfs_mount,
);
