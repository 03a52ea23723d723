//! Live backend tests. They run when this machine can run live (root, per-size mTHP sysfs, zram,
//! a memory cgroup controller) and are otherwise reported as ignored, with the reason
//! (tests/harness: FOLIOSIM_LIVE=1 makes that a failure). They share the host: the harness
//! runs them one at a time.

use foliosim::Scenario;
use foliosim_live::{cgroup, run::host_settings, settings, swapdev, LiveOptions, Refusal};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

mod harness;
use harness::{ignored, require_live, Outcome};

fn repo() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

fn scenario(text: &str) -> Scenario {
    Scenario::from_toml_str(text).unwrap()
}

/// A scenario long enough to be killed midway: two processes push 768 MiB each through a
/// 64 MiB memcg onto zram, with 64K mTHP on.
const SLOW: &str = r#"
[machine]
cpus = 2
memory = "4G"
[[machine.swap]]
kind = "zram"
size = "2G"
[sysfs]
thp_enabled = "never"
defrag = "always"
[sysfs.hugepages]
"64K" = "always"
"2M" = "never"
[sysfs.khugepaged]
pages_to_scan = 1024
[sysfs.zswap]
max_pool_percent = 5
[[memcg]]
name = "bench"
max = "64M"
[[workload]]
kind = "usemem"
nproc = 2
size = "768M"
memcg = "bench"
"#;

/// Everything a live run may change, as text, to compare before and after.
fn host_state(s: &Scenario) -> Vec<String> {
    let mut out: Vec<String> = host_settings(s)
        .into_iter()
        .map(|(path, _)| format!("{path} = {:?}", settings::read_knob(&path).ok()))
        .collect();
    out.push(format!("swaps {:?}", swapdev::active_swaps().unwrap()));
    out.push(format!("memcgs {:?}", cgroup::leftovers()));
    let mut zram: Vec<_> = std::fs::read_dir("/sys/block")
        .unwrap()
        .filter_map(|e| e.ok())
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .filter(|n| n.starts_with("zram"))
        .collect();
    zram.sort();
    out.push(format!("zram devices {zram:?}"));
    out
}

fn journal() -> PathBuf {
    settings::state_dir().join("journal.json")
}

fn refuses_without_the_explicit_opt_in() -> Outcome {
    let s = scenario(SLOW);
    let err = foliosim_live::run(&s, &LiveOptions::default()).unwrap_err();
    assert!(
        matches!(err.downcast_ref::<Refusal>(), Some(Refusal::NotAllowed)),
        "{err:#}"
    );
    Ok(())
}

fn refuses_to_turn_zswap_on() -> Outcome {
    require_live()?;
    if settings::read_knob("/sys/module/zswap/parameters/enabled").is_ok_and(|v| v == "Y") {
        return Err(ignored("zswap is already on here"));
    }
    let s = scenario(&SLOW.replace("max_pool_percent = 5", "enabled = true"));
    let opts = LiveOptions {
        allow_live: true,
        timeout: None,
        ..Default::default()
    };
    let err = foliosim_live::run(&s, &opts).unwrap_err();
    assert!(
        format!("{err:#}").contains("sysfs.zswap.enabled"),
        "{err:#}"
    );
    Ok(())
}

fn refuses_a_scenario_that_would_exhaust_the_host() -> Outcome {
    require_live()?;
    let s = scenario(&SLOW.replace("size = \"768M\"", "size = \"2T\""));
    let opts = LiveOptions {
        allow_live: true,
        timeout: None,
        ..Default::default()
    };
    let err = foliosim_live::run(&s, &opts).unwrap_err();
    assert!(
        matches!(
            err.downcast_ref::<Refusal>(),
            Some(Refusal::NotEnoughMemory { .. })
        ),
        "{err:#}"
    );
    Ok(())
}

/// Run `s` live (60 s at most), check that the host reads as before and that no task failed.
fn run_restoring(s: &Scenario, enable_zswap: bool) -> foliosim_live::run::LiveResult {
    let before = host_state(s);
    let opts = LiveOptions {
        allow_live: true,
        timeout: Some(Duration::from_secs(60)),
        enable_zswap,
    };
    let r = foliosim_live::run(s, &opts).unwrap();
    assert_eq!(host_state(s), before, "host not restored");
    assert!(r.task_failures.is_empty(), "{:?}", r.task_failures);
    r
}

fn pageout_of_64k_mthp_matches_the_policy_and_restores_the_host() -> Outcome {
    require_live()?;
    let text =
        std::fs::read_to_string(repo().join("scenarios/validate/pageout-64k-zram.toml")).unwrap();
    let s = scenario(&text);
    let r = run_restoring(&s, false);
    // 2 x 64 MiB of 64K folios, all paged out whole.
    assert_eq!(r.counters["hugepages-64kB/stats/swpout"], 2048);
    assert_eq!(r.counters["hugepages-64kB/stats/swpout_fallback"], 0);
    // pswpout is host-wide: another process swapping meanwhile adds a few pages (8 seen
    // beside simulator runs); ours are exactly 2 x 16384 and come back whole above.
    let pswpout = r.counters["pswpout"];
    assert!(
        (2 * 16384..=2 * 16384 + 256).contains(&pswpout),
        "pswpout {pswpout}"
    );
    assert!(r.workloads[0].throughput_bytes_per_s > 0.0);
    assert!(r.zram.values().any(|z| z["stat/write_ios"] > 0));
    Ok(())
}

/// A nested memcg tree: `p` (64 MiB) over `a` (memory.low 48 MiB, 40 MiB written) and `b`
/// (two processes of 64 MiB, memory.swap.max 96 MiB), all at once onto zram.
const NESTED: &str = r#"
[machine]
cpus = 3
memory = "4G"
[[machine.swap]]
kind = "zram"
size = "1G"
[sysfs]
thp_enabled = "never"
[[memcg]]
name = "p"
max = "64M"
[[memcg]]
name = "a"
parent = "p"
low = "48M"
[[memcg]]
name = "b"
parent = "p"
swap_max = "96M"
[[workload]]
kind = "usemem"
nproc = 1
size = "40M"
memcg = "a"
[[workload]]
kind = "usemem"
nproc = 2
size = "64M"
memcg = "b"
"#;

fn nested_memcgs_are_created_inside_their_parent_read_and_removed() -> Outcome {
    require_live()?;
    if !cgroup::memory_root().is_ok_and(|(_, v)| v == cgroup::Version::V2) {
        return Err(ignored("memory.low and memory.swap.max need cgroup v2"));
    }
    let s = scenario(NESTED);
    let before = host_state(&s);
    let opts = LiveOptions {
        allow_live: true,
        timeout: Some(Duration::from_secs(60)),
        ..Default::default()
    };
    let r = foliosim_live::run(&s, &opts).unwrap();
    assert_eq!(
        host_state(&s),
        before,
        "host not restored (children removed first)"
    );
    assert!(r.task_failures.is_empty(), "{:?}", r.task_failures);
    let (a, b, p) = (&r.memcgs["a"], &r.memcgs["b"], &r.memcgs["p"]);
    // The parent's limit bound both children: b was swapped, within its swap.max.
    assert!(
        b["memory.swap.peak"] > 0 && b["memory.swap.peak"] <= 96 << 20,
        "{b:?}"
    );
    assert!(p["memory.events.max"] > 0, "{p:?}");
    // The files the live backend reads for the sim's per-memcg map are there.
    for m in [a, b, p] {
        for key in [
            "memory.swap.current",
            "memory.events.low",
            "memory.swap.events.max",
        ] {
            assert!(m.contains_key(key), "{key} missing: {m:?}");
        }
    }
    Ok(())
}

fn refuses_memory_high_on_a_cgroup_v1_host() -> Outcome {
    require_live()?;
    if !cgroup::memory_root().is_ok_and(|(_, v)| v == cgroup::Version::V1) {
        return Err(ignored("the memory controller here is not cgroup v1"));
    }
    let s = scenario(&SLOW.replace("max = \"64M\"", "max = \"64M\"\nhigh = \"48M\""));
    let opts = LiveOptions {
        allow_live: true,
        ..Default::default()
    };
    let err = foliosim_live::run(&s, &opts).unwrap_err();
    assert!(format!("{err:#}").contains("memcg[0].high"), "{err:#}");
    Ok(())
}

fn zswap_scenario_runs_with_its_opt_in_and_turns_zswap_off_again() -> Outcome {
    require_live()?;
    if !Path::new("/sys/module/zswap/parameters/enabled").exists() {
        return Err(ignored("no zswap in this kernel"));
    }
    let text = std::fs::read_to_string(repo().join("scenarios/validate/zswap-usemem-64k-lzo.toml"))
        .unwrap();
    let s = scenario(&text);
    // Turning zswap on ends mTHP swap-in for this boot; the probe test reads that either way.
    let r = run_restoring(&s, true);
    // Each 256 MiB process in its 128 MiB memcg goes to zswap page by page, nothing to zram.
    assert!(r.counters["zswpout"] >= 2 * 32768, "{:?}", r.counters);
    assert!(r.counters["hugepages-64kB/stats/zswpout"] >= 2 * 2048);
    assert_eq!(r.counters.get("pswpout").copied().unwrap_or(0), 0);
    Ok(())
}

/// The CLI built beside this test, or why there is no current one.
fn cli() -> Result<PathBuf, harness::Ignored> {
    let found = (|| {
        // target/<profile>/deps/live-… -> target/<profile>/foliosim
        let exe = std::env::current_exe().ok()?;
        let bin = exe.parent()?.parent()?.join("foliosim");
        // A stale CLI from before `restore` existed would leave a killed run unrestored.
        let help = Command::new(&bin).arg("--help").output().ok()?;
        String::from_utf8_lossy(&help.stdout)
            .contains("restore")
            .then_some(bin)
    })();
    found.ok_or_else(|| {
        ignored("no current foliosim CLI next to this test; cargo test --workspace builds it")
    })
}

/// Start `foliosim run --live` on SLOW and wait until its tasks are running in our memcg.
fn start_slow_run(bin: &Path) -> (std::process::Child, PathBuf) {
    let file = std::env::temp_dir().join(format!("foliosim-slow-{}.toml", std::process::id()));
    std::fs::write(&file, SLOW).unwrap();
    let child = Command::new(bin)
        .args(["run", "--live", "--timeout", "120"])
        .arg(&file)
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let t0 = Instant::now();
    loop {
        let busy = cgroup::leftovers().iter().any(|cg| {
            std::fs::read_to_string(cg.join("cgroup.procs")).is_ok_and(|p| p.lines().count() >= 2)
        });
        if busy {
            break;
        }
        assert!(
            t0.elapsed() < Duration::from_secs(30),
            "live run never started"
        );
        std::thread::sleep(Duration::from_millis(20));
    }
    // Let the tasks reach the memcg limit and swap.
    std::thread::sleep(Duration::from_millis(300));
    (child, file)
}

fn sigint_midway_restores_every_setting() -> Outcome {
    require_live()?;
    let bin = cli()?;
    let s = scenario(SLOW);
    let before = host_state(&s);
    let (child, file) = start_slow_run(&bin);
    assert_ne!(host_state(&s), before, "the run changed nothing?");
    // SAFETY: signalling the child we spawned.
    unsafe { libc::kill(child.id() as i32, libc::SIGINT) };
    let out = child.wait_with_output().unwrap();
    std::fs::remove_file(file).ok();
    assert_eq!(
        out.status.code(),
        Some(130),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert_eq!(host_state(&s), before, "host not restored after SIGINT");
    assert!(!journal().exists(), "journal left after a clean restore");
    Ok(())
}

fn sigkill_midway_is_restored_from_the_journal_on_the_next_start() -> Outcome {
    require_live()?;
    let bin = cli()?;
    let s = scenario(SLOW);
    let before = host_state(&s);
    let (mut child, file) = start_slow_run(&bin);
    child.kill().unwrap(); // SIGKILL: no chance to restore
    child.wait().unwrap();
    std::fs::remove_file(file).ok();
    assert!(journal().exists(), "a killed run must leave its journal");
    assert_ne!(host_state(&s), before, "nothing left to restore?");
    let out = Command::new(&bin)
        .args(["restore", "--live"])
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let said = String::from_utf8_lossy(&out.stdout);
    assert!(said.contains("restored: swapoff"), "{said}");
    assert_eq!(host_state(&s), before, "host not restored from the journal");
    assert!(!journal().exists());
    Ok(())
}

fn swapin_mthp_probe_refuses_without_the_explicit_opt_in() -> Outcome {
    let err = foliosim_live::probe::swapin_mthp(&LiveOptions::default()).unwrap_err();
    assert!(
        matches!(err.downcast_ref::<Refusal>(), Some(Refusal::NotAllowed)),
        "{err:#}"
    );
    Ok(())
}

fn swapin_mthp_probe_answers_and_restores_the_host() -> Outcome {
    require_live()?;
    let s = scenario(SLOW);
    let before = host_state(&s);
    let opts = LiveOptions {
        allow_live: true,
        timeout: None,
        ..Default::default()
    };
    let probe = foliosim_live::probe::swapin_mthp(&opts).unwrap();
    assert_eq!(host_state(&s), before, "host not restored");
    eprintln!("{}", probe.describe());
    // Its 16 folios were faulted and swapped out whole, so the answer is definite.
    let swaps_in = probe.verdict().unwrap_or_else(|why| panic!("{why}"));
    if probe.zswap_enabled {
        assert!(!swaps_in, "zswap is on, yet 64K folios came back whole");
    }
    if swaps_in {
        assert_eq!(probe.swpin, probe.folios, "{probe:?}");
    }
    Ok(())
}

/// Faults each thread of the threaded program times.
const THREAD_FAULTS: u32 = 4;

/// Thread `idx` of the threaded program: maps a file and reads it, meets its sibling at a
/// barrier, times THREAD_FAULTS faults of an anonymous THP region with mincore, and looks at
/// its sibling's VMA.
fn threaded_program(idx: u32) -> Vec<foliosim::workload::Op> {
    use foliosim::mm::mmap::ThpAdvice;
    use foliosim::workload::Op;
    let (anon, file) = (2 * idx, 2 * idx + 1);
    let mut ops = vec![
        Op::Mmap {
            vma: anon,
            nr_pages: THREAD_FAULTS * 512,
            thp: ThpAdvice::Hugepage,
        },
        Op::MmapFile {
            vma: file,
            file: 0,
            offset_pages: idx * 256,
            nr_pages: 256,
            shared: true,
        },
        Op::Touch {
            vma: file,
            first: 0,
            nr: 256,
            write: false,
        },
        Op::Barrier { id: 0, parties: 2 },
    ];
    for i in 0..THREAD_FAULTS {
        ops.extend([
            Op::TimerStart,
            Op::Touch {
                vma: anon,
                first: i * 512,
                nr: 1,
                write: true,
            },
            // Both series possible: page 64 is resident iff the fault mapped a THP.
            Op::Mincore {
                vma: anon,
                index: i * 512 + 64,
            },
            Op::RecordLatency {
                if_resident: 1,
                otherwise: 0,
            },
        ]);
    }
    // The other thread's VMA is visible: the process shares its VMA table.
    ops.push(Op::Barrier { id: 1, parties: 2 });
    ops.push(Op::Mincore {
        vma: 2 * (1 - idx),
        index: 0,
    });
    ops.extend([Op::Munmap { vma: file }, Op::Barrier { id: 2, parties: 2 }]);
    ops.push(Op::Exit);
    ops
}

/// A thread that fails releases its sibling from the barrier instead of hanging it.
fn a_failing_thread_releases_its_sibling() {
    use foliosim::workload::Op;
    use foliosim_live::exec::{self, LiveTask, LiveThread};
    let failing = LiveTask {
        name: "leader".into(),
        ops: vec![Op::Barrier { id: 0, parties: 2 }, Op::Exit],
        threads: vec![LiveThread {
            name: "thread-1".into(),
            ops: vec![Op::Mincore { vma: 9, index: 0 }],
            cpu: None,
        }],
        ..Default::default()
    };
    let start = Instant::now();
    let outcome = exec::run_tasks(&[failing], &|| {
        (start.elapsed() > Duration::from_secs(20)).then(|| "hung".to_string())
    })
    .unwrap();
    let failures: Vec<_> = outcome.tasks.iter().map(|t| t.failure.clone()).collect();
    assert!(
        failures[1].as_ref().unwrap().contains("vma 9"),
        "{failures:?}"
    );
    assert!(
        failures[0].as_ref().unwrap().contains("barrier"),
        "{failures:?}"
    );
}

/// A threaded program like thpscale's: two threads of one process map a file each and read it,
/// meet at a barrier, then time faults of an anonymous region with mincore. Every sample comes
/// back, per thread, with the series mincore chose.
fn threads_share_a_process_with_barriers_files_and_fault_timing() -> Outcome {
    use foliosim_live::exec::{self, LiveTask, LiveThread};
    require_live()?;
    let dir = std::env::temp_dir().join(format!("foliosim-live-test-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    foliosim_live::files::create(&foliosim_live::files::path(&dir, 0), 4 << 20, 7).unwrap();
    let task = LiveTask {
        name: "leader".into(),
        ops: threaded_program(0),
        threads: vec![LiveThread {
            name: "thread-1".into(),
            ops: threaded_program(1),
            cpu: None,
        }],
        file_dir: Some(dir.clone()),
        ..Default::default()
    };
    // A hang (seen once under a heavily loaded host) fails the test instead of the whole run.
    let start = Instant::now();
    let outcome = exec::run_tasks(&[task], &|| {
        (start.elapsed() > Duration::from_secs(120)).then(|| "hung".to_string())
    })
    .unwrap();
    assert!(
        outcome.tasks.iter().all(|t| t.failure.is_none()),
        "{:?}",
        outcome.tasks.iter().map(|t| &t.failure).collect::<Vec<_>>()
    );
    std::fs::remove_dir_all(&dir).unwrap();
    assert_eq!(outcome.tasks.len(), 2);
    for t in &outcome.tasks {
        assert_eq!(t.failure, None, "{}", t.name);
        assert_eq!(t.latencies.len(), THREAD_FAULTS as usize, "{}", t.name);
        assert!(t.latencies.iter().all(|&(s, ns)| s <= 1 && ns > 0));
    }
    a_failing_thread_releases_its_sibling();
    Ok(())
}

/// `record` of a small real program (dd reading 4 x 4 MiB of zeros into a malloc'd buffer: an
/// mmap, and faults taken by the kernel's copy_to_user) gives a trace that parses, shows the
/// buffer, and replays on the sim and on the live kernel; the host is left as it was.
fn record_a_program_and_replay_its_trace_on_both_backends() -> Outcome {
    use foliosim::workload::trace::{EventKind, Trace};
    use foliosim_live::record::{record, RecordOptions};
    require_live()?;
    let mounts = || std::fs::read_to_string("/proc/self/mounts").unwrap();
    let mounts_before = mounts();
    let cmd: Vec<String> = ["dd", "if=/dev/zero", "of=/dev/null", "bs=4M", "count=4"]
        .iter()
        .map(|s| s.to_string())
        .collect();
    let opts = RecordOptions {
        allow_live: true,
        timeout: Some(Duration::from_secs(30)),
        stdout_to_stderr: true,
        ..Default::default()
    };
    let rec = match record(&cmd, &opts, &mut |_| {}) {
        Ok(r) => r,
        Err(e)
            if format!("{e:#}").contains("perf_event_open")
                || format!("{e:#}").contains("tracepoint") =>
        {
            return Err(ignored(format!("no perf tracepoints here: {e:#}")));
        }
        Err(e) => panic!("{e:#}"),
    };
    assert_eq!(mounts(), mounts_before, "a tracefs mount was left behind");
    assert!(!journal().exists(), "journal left behind");
    assert_eq!(rec.exit_code, Some(0));
    assert_eq!(rec.lost_records, 0);
    let text = rec.trace.to_text();
    let trace = Trace::parse(&text).unwrap();
    assert!(matches!(&trace.events[0].kind, EventKind::Exec { name } if name == "dd"));
    // The 4 MiB buffer: one VMA of at least 1024 pages, nearly all of it touched.
    let big: Vec<u32> = trace
        .events
        .iter()
        .filter_map(|e| match e.kind {
            EventKind::Mmap { vma, pages, .. } if pages >= 1024 => Some(vma),
            _ => None,
        })
        .collect();
    let touched: u32 = trace
        .events
        .iter()
        .filter_map(|e| match e.kind {
            EventKind::Touch { vma, nr, .. } if big.contains(&vma) => Some(nr),
            _ => None,
        })
        .sum();
    assert!(!big.is_empty() && touched >= 1000, "{text}");
    // Replay it: a scenario naming the trace file.
    let dir = std::env::temp_dir().join(format!("foliosim-record-test-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let path = dir.join("dd.trace.gz");
    std::fs::write(
        &path,
        foliosim::workload::trace::gzip::compress(text.as_bytes()),
    )
    .unwrap();
    let s = scenario(&format!(
        "[machine]\ncpus = 2\nmemory = \"1G\"\n[sysfs]\nthp_enabled = \"never\"\n[[workload]]\nkind = \"trace\"\npath = \"{}\"\n",
        path.display()
    ));
    let sim = foliosim::run(&s).unwrap();
    assert!(sim.counters["pgfault"] >= 1000);
    let before = host_state(&s);
    let live = foliosim_live::run(
        &s,
        &LiveOptions {
            allow_live: true,
            timeout: Some(Duration::from_secs(60)),
            ..Default::default()
        },
    )
    .unwrap();
    assert_eq!(host_state(&s), before, "host not restored");
    assert!(live.task_failures.is_empty(), "{:?}", live.task_failures);
    assert_eq!(live.workloads[0].kind, "trace");
    std::fs::remove_dir_all(&dir).unwrap();
    Ok(())
}

/// A small cc1 build on a tmpfs mounted `huge=always`, in a tight memcg onto zram.
const TMPFS_BUILD: &str = r#"
[machine]
cpus = 2
memory = "1G"
[[machine.swap]]
kind = "zram"
size = "256M"
[sysfs]
thp_enabled = "never"
[sysfs.hugepages]
"64K" = "always"
"2M" = "never"
[[memcg]]
name = "build"
max = "8M"
[[tmpfs]]
name = "build"
size = "64M"
huge = "always"
[[workload]]
kind = "kbuild"
compiler = "cc1"
jobs = 6
jobs_concurrent = 2
rss_min = "1M"
rss_max = "8M"
user_ns_per_page = 1000
memcg = "build"
tmpfs = "build"
object_size_min = "4K"
object_size_max = "64K"
"#;

fn a_build_on_tmpfs_writes_its_objects_there_and_unmounts_it() -> Outcome {
    require_live()?;
    let s = scenario(TMPFS_BUILD);
    let r = run_restoring(&s, false);
    assert!(
        r.settings.iter().any(|a| a.contains("huge=always")),
        "{:?}",
        r.settings
    );
    // Each object file's first write tries a 2M shmem folio once (6.18: PMD order first).
    let c = |k: &str| r.counters.get(k).copied().unwrap_or(0);
    assert_eq!(
        c("thp_file_alloc") + c("thp_file_fallback"),
        6,
        "{:?}",
        r.counters
    );
    let mounts = std::fs::read_to_string("/proc/self/mounts").unwrap();
    assert!(
        !mounts.contains("/tmpfs-"),
        "a tmpfs left mounted:\n{mounts}"
    );
    let left = std::fs::read_dir(settings::state_dir()).unwrap();
    for e in left.filter_map(|e| e.ok()) {
        let name = e.file_name().to_string_lossy().into_owned();
        assert!(
            !name.starts_with("tmpfs-"),
            "{name} left in the state directory"
        );
    }
    Ok(())
}

harness_main!(
    refuses_without_the_explicit_opt_in,
    refuses_to_turn_zswap_on,
    refuses_a_scenario_that_would_exhaust_the_host,
    pageout_of_64k_mthp_matches_the_policy_and_restores_the_host,
    nested_memcgs_are_created_inside_their_parent_read_and_removed,
    refuses_memory_high_on_a_cgroup_v1_host,
    zswap_scenario_runs_with_its_opt_in_and_turns_zswap_off_again,
    sigint_midway_restores_every_setting,
    sigkill_midway_is_restored_from_the_journal_on_the_next_start,
    swapin_mthp_probe_refuses_without_the_explicit_opt_in,
    swapin_mthp_probe_answers_and_restores_the_host,
    threads_share_a_process_with_barriers_files_and_fault_timing,
    record_a_program_and_replay_its_trace_on_both_backends,
    a_build_on_tmpfs_writes_its_objects_there_and_unmounts_it,
);
