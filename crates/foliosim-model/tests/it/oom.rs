//! The OOM killer (mm/oom_kill.rs): a memcg at memory.max or a machine without free memory
//! kills the process with the highest oom_badness, the run goes on, the kill is reported;
//! oom_score_adj = -1000 protects a process, memory.oom.group takes the memcg along, and
//! `kernel.oom = "fail"` ends the run with the error as before.

use foliosim_model::content::ContentClass;
use foliosim_model::engine::Ctx;
use foliosim_model::mm::invariants::check;
use foliosim_model::mm::memory::touch;
use foliosim_model::mm::mmap::ThpAdvice;
use foliosim_model::mm::oom_kill::{mm_pgtables_pages, OomConstraint};
use foliosim_model::mm::{Kernel, MmError};
use foliosim_model::sched::{run_tasks, Task};
use foliosim_model::workload::{Op, TaskSpec};
use foliosim_model::{RunResult, Scenario, SimError};

const OOM_MEMCG: &str = include_str!("../../../../scenarios/oom-memcg.toml");

fn scenario(text: &str) -> Scenario {
    let mut s = crate::common::parse(text);
    s.check_invariants = true;
    s
}

fn run(text: &str) -> RunResult {
    crate::common::run(&scenario(text))
}

/// Three usemem processes of `size` in memcg `jobs` (memory.max `max`, no swap), the third
/// in a workload of its own with `adj`; `extra` goes into [kernel].
fn three_in_a_memcg(max: &str, size: &str, adj: i32, extra: &str) -> String {
    format!(
        r#"
[machine]
cpus = 4
memory = "1G"

[kernel]
version = "6.18"
{extra}

[[memcg]]
name = "jobs"
max = "{max}"

[[workload]]
kind = "usemem"
nproc = 2
size = "{size}"
memcg = "jobs"

[[workload]]
kind = "usemem"
nproc = 1
size = "{size}"
memcg = "jobs"
oom_score_adj = {adj}
"#
    )
}

#[test]
fn a_memcg_oom_kills_the_process_with_oom_score_adj_and_the_others_finish() {
    let r = run(OOM_MEMCG);
    assert_eq!(r.oom_kills.len(), 1, "{:?}", r.oom_kills);
    let kill = &r.oom_kills[0];
    assert_eq!(kill.tasks, ["usemem-0"]);
    assert_eq!(kill.workload, 1);
    assert_eq!(
        (kill.memcg.as_str(), kill.constraint.as_str()),
        ("jobs", "memcg jobs")
    );
    assert_eq!(kill.oom_score_adj, 500);
    assert!(!kill.group);
    // Its points: what it held plus 500 thousandths of the 192 MiB limit (no swap).
    let limit_pages = 192 << 8;
    assert_eq!(
        kill.points,
        (kill.rss_pages + kill.swap_ents + kill.pgtables_pages) as i64 + 500 * (limit_pages / 1000)
    );
    assert!(kill.rss_pages > 0 && kill.pgtables_pages > 0);
    assert_eq!(r.counter("oom_kill"), 1);
    let jobs = &r.memcg_stats["jobs"];
    assert!(jobs["memory.events.oom"] >= 1);
    assert_eq!(jobs["memory.events.oom_kill"], 1);
    // Everything was freed; what stays charged is the per-CPU charge stock (at most a batch
    // of 64 pages per CPU), as on a real kernel until something drains it.
    assert!(
        jobs["memory.current"] <= 4 * 64 * 4096,
        "everything was freed: {}",
        jobs["memory.current"]
    );
    // The other two wrote their 96 MiB each and finished; the victim's workload measured none.
    let per_task = 96 << 8;
    assert!(r.counter("pgfault") >= 2 * per_task);
    assert!(r.workloads[0].throughput_bytes_per_s > 0.0);
    assert_eq!(r.workloads[1].throughput_bytes_per_s, 0.0);
    assert_eq!(r.counter("pgalloc_normal"), r.counter("pgfree"));
    assert!(r.to_table().contains("oom-kill at "), "{}", r.to_table());
    assert!(r.to_json().contains("\"oom_kills\""));
}

#[test]
fn a_global_oom_without_swap_kills_the_biggest_process() {
    let r = run(r#"
[machine]
cpus = 4
memory = "256M"

[kernel]
version = "6.18"

[[workload]]
kind = "usemem"
nproc = 3
size = "100M"
"#);
    assert_eq!(r.oom_kills.len(), 1, "{:?}", r.oom_kills);
    let kill = &r.oom_kills[0];
    assert_eq!(kill.constraint, "global");
    assert_eq!(kill.memcg, "/");
    assert_eq!(r.counter("oom_kill"), 1);
    assert_eq!(
        r.memcg_stats["/"]["memory.events.oom"], 0,
        "not a memcg OOM"
    );
    // The victim held more than a third of what the three faulted before the kill.
    assert!(kill.rss_pages * 3 > r.counter("pgfault") - 2 * (100 << 8));
    assert_eq!(r.counter("pgalloc_normal"), r.counter("pgfree"));
}

#[test]
fn a_global_oom_on_4_1_kills_too() {
    let r = run(r#"
[machine]
cpus = 2
memory = "128M"

[kernel]
version = "4.1"

[[workload]]
kind = "usemem"
nproc = 2
size = "100M"
"#);
    assert_eq!(r.oom_kills.len(), 1, "{:?}", r.oom_kills);
    assert_eq!(r.counter("oom_kill"), 1);
}

#[test]
fn oom_score_adj_minus_1000_protects_a_process() {
    // The protected process is the biggest (the other two share the room with it), yet one of
    // the others is killed; and the protected one finishes its 100 MiB.
    let r = run(&three_in_a_memcg("160M", "100M", -1000, ""));
    assert!(!r.oom_kills.is_empty());
    assert!(
        r.oom_kills.iter().all(|k| k.workload == 0),
        "{:?}",
        r.oom_kills
    );
    assert!(r.workloads[1].throughput_bytes_per_s > 0.0, "it finished");
}

#[test]
fn with_every_process_protected_the_run_ends_with_a_clear_error() {
    let text = three_in_a_memcg("160M", "100M", -1000, "").replace(
        "memcg = \"jobs\"\n\n",
        "memcg = \"jobs\"\noom_score_adj = -1000\n\n",
    );
    let err = foliosim_model::run(&scenario(&text)).unwrap_err();
    match &err {
        SimError::Mm {
            error: MmError::MemcgOomNoVictim { memcg },
            ..
        } => assert_eq!(memcg, "jobs"),
        other => panic!("{other}"),
    }
    let text = err.to_string();
    assert!(
        text.contains("OOM killer found no task") && text.contains("-1000"),
        "{text}"
    );
}

#[test]
fn kernel_oom_fail_gives_the_error_of_old() {
    let err = foliosim_model::run(&scenario(&three_in_a_memcg(
        "160M",
        "100M",
        0,
        "oom = \"fail\"",
    )))
    .unwrap_err();
    match &err {
        SimError::Mm {
            error: MmError::MemcgOom { memcg },
            ..
        } => assert_eq!(memcg, "jobs"),
        other => panic!("{other}"),
    }
    assert!(err
        .to_string()
        .contains("out of memory: memcg `jobs` is at its limit with nothing reclaimable"));
    let global = r#"
[machine]
cpus = 2
memory = "128M"

[kernel]
oom = "fail"

[[workload]]
kind = "usemem"
nproc = 2
size = "100M"
"#;
    match foliosim_model::run(&scenario(global)).unwrap_err() {
        SimError::Mm {
            error: MmError::GlobalOom,
            ..
        } => {}
        other => panic!("{other}"),
    }
}

#[test]
fn memory_oom_group_kills_the_whole_memcg() {
    let text = three_in_a_memcg("160M", "100M", 0, "")
        .replace("max = \"160M\"", "max = \"160M\"\noom_group = true");
    let r = run(&text);
    assert_eq!(r.oom_kills.len(), 3, "{:?}", r.oom_kills);
    assert!(!r.oom_kills[0].group);
    assert!(r.oom_kills[1..].iter().all(|k| k.group));
    let jobs = &r.memcg_stats["jobs"];
    assert_eq!(jobs["memory.events.oom_group_kill"], 1);
    assert_eq!(jobs["memory.events.oom_kill"], 3);
    assert_eq!(r.counter("oom_kill"), 3);
    assert_eq!(jobs["memory.current"], 0);
}

#[test]
fn oom_runs_are_deterministic() {
    let a = run(OOM_MEMCG);
    let b = run(OOM_MEMCG);
    assert_eq!(a.to_json(), b.to_json());
    let text = three_in_a_memcg("160M", "100M", 0, "");
    assert_eq!(run(&text).to_json(), run(&text).to_json());
}

#[test]
fn bad_oom_fields_name_the_field() {
    let text = three_in_a_memcg("160M", "100M", 1001, "");
    let err = Scenario::from_toml_str(&text).unwrap_err().to_string();
    assert!(
        err.contains("workload[1].oom_score_adj") && err.contains("-1000 ..= 1000"),
        "{err}"
    );
    let text = three_in_a_memcg("160M", "100M", 0, "oom = \"panic\"");
    let err = Scenario::from_toml_str(&text).unwrap_err().to_string();
    assert!(err.contains("kill") && err.contains("fail"), "{err}");
    let text = three_in_a_memcg("160M", "100M", 0, "cgroup = \"v1\"")
        .replace("max = \"160M\"", "max = \"160M\"\noom_group = true");
    let err = Scenario::from_toml_str(&text).unwrap_err().to_string();
    assert!(err.contains("memcg[0].oom_group"), "{err}");
    // The fields survive a round trip, and default ones are not written.
    let s = scenario(&three_in_a_memcg("160M", "100M", -5, "oom = \"fail\""));
    let again = Scenario::from_toml_str(&s.to_toml_string()).unwrap();
    assert_eq!(again.workloads[1].oom_score_adj(), -5);
    assert_eq!(again.kernel.oom, foliosim_model::scenario::OomPolicy::Fail);
    let plain = scenario(&three_in_a_memcg("160M", "100M", 0, "")).to_toml_string();
    assert!(!plain.contains("oom"), "{plain}");
}

/// A kernel with memcg `m` (memory.max 64 MiB) and no swap.
fn small_kernel() -> Kernel {
    Kernel::new(&scenario(
        r#"
[machine]
cpus = 2
memory = "1G"

[kernel]
version = "6.18"

[[memcg]]
name = "m"
max = "64M"

[[workload]]
kind = "usemem"
nproc = 1
size = "4M"
"#,
    ))
}

/// A process in memcg `m` with `pages` of one 8192-page VMA written.
fn process_with(k: &mut Kernel, c: &mut Ctx, pages: u32) -> u32 {
    let cg = k.memcg_id(Some("m"));
    let mm = k.new_mm(cg, ContentClass::Usemem);
    k.mms[mm as usize].mmap(0, 8192, ThpAdvice::NoHugepage);
    write(k, c, mm, pages).unwrap();
    mm
}

fn write(k: &mut Kernel, c: &mut Ctx, mm: u32, pages: u32) -> Result<(), MmError> {
    k.percpu[c.cpu].mm = mm;
    let mut i = k.mms[mm as usize].rss_anon as u32;
    while i < pages {
        i += touch(k, c, mm, 0, i, pages, true)?;
    }
    Ok(())
}

#[test]
fn the_biggest_process_is_chosen_and_its_memory_freed_at_once() {
    let mut k = small_kernel();
    let mut c = Ctx::new(0, 0);
    let small = process_with(&mut k, &mut c, 2000);
    let big = process_with(&mut k, &mut c, 6000);
    let middle = process_with(&mut k, &mut c, 4000);
    let pgtables = mm_pgtables_pages(&k.mms[big as usize]);
    assert_eq!(
        pgtables,
        6000u64.div_ceil(512) + 1,
        "PTE tables and one PMD table"
    );
    // A fourth process writes past the 16384-page limit: the OOM killer frees `big` and the
    // writer goes on.
    let writer = process_with(&mut k, &mut c, 100);
    write(&mut k, &mut c, writer, 8000).unwrap();
    assert_eq!(k.oom.kills.len(), 1);
    let kill = &k.oom.kills[0];
    assert_eq!(kill.mm, big);
    assert_eq!(kill.constraint, OomConstraint::Memcg(k.memcg_id(Some("m"))));
    assert_eq!((kill.rss_pages, kill.pgtables_pages), (6000, pgtables));
    assert_eq!(kill.points, 6000 + pgtables as i64);
    assert!(kill.exit_ns > 0, "its exit_mmap ran on its behalf");
    let victim = &k.mms[big as usize];
    assert!(victim.oom_victim && victim.mm_users == 0 && victim.rss_anon == 0);
    assert!(victim.vmas.iter().all(|v| v.is_none()));
    assert_eq!(k.mms[small as usize].rss_anon, 2000);
    assert_eq!(k.mms[middle as usize].rss_anon, 4000);
    assert_eq!(k.mms[writer as usize].rss_anon, 8000);
    check(&k).unwrap();
}

#[test]
fn a_tie_goes_to_the_later_process_and_the_writer_may_choose_itself() {
    let mut k = small_kernel();
    let mut c = Ctx::new(0, 0);
    let first = process_with(&mut k, &mut c, 5000);
    let second = process_with(&mut k, &mut c, 5000);
    // The writer becomes the biggest: it is chosen, its fault fails, its memory stays until
    // its task exits (the scheduler's exit_if_victim).
    let writer = process_with(&mut k, &mut c, 100);
    let err = write(&mut k, &mut c, writer, 8192).unwrap_err();
    assert_eq!(err, MmError::OomKilled);
    assert_eq!(k.oom.kills.len(), 1);
    assert_eq!(k.oom.kills[0].mm, writer);
    assert_eq!(k.oom.kills[0].exit_ns, 0);
    assert!(
        k.mms[writer as usize].rss_anon > 0,
        "not torn down under its own fault"
    );
    assert!(foliosim_model::mm::oom_kill::exit_if_victim(
        &mut k, &mut c, writer
    ));
    assert_eq!(k.mms[writer as usize].rss_anon, 0);
    // Now `first` and `second` tie and the writer is smaller: the later one goes.
    let filler = process_with(&mut k, &mut c, 3000);
    let writer = process_with(&mut k, &mut c, 100);
    write(&mut k, &mut c, writer, 7000).unwrap();
    assert_eq!(k.oom.kills.len(), 2);
    assert_eq!(k.oom.kills[1].mm, second);
    assert_eq!(k.mms[first as usize].rss_anon, 5000);
    assert_eq!(k.mms[filler as usize].rss_anon, 3000);
    check(&k).unwrap();
}

#[test]
fn a_killed_process_ends_every_thread_wherever_it_is() {
    // Process 0 has two threads waiting at a barrier a third party never reaches (one of them
    // after writing 6000 pages); with oom_score_adj 1000 it is the one killed when process 1
    // fills the memcg, and both threads end there (else the run would deadlock).
    let mut k = small_kernel();
    let write_op = |vma: u32, nr: u32| Op::Touch {
        vma,
        first: 0,
        nr,
        write: true,
    };
    let mmap = |vma: u32, nr: u32| Op::Mmap {
        vma,
        nr_pages: nr,
        thp: ThpAdvice::NoHugepage,
    };
    let spec = |name: &str, ops: Vec<Op>, shares: Option<usize>| TaskSpec {
        name: name.into(),
        memcg: Some("m".into()),
        ops,
        shares_mm_with: shares,
    };
    let barrier = Op::Barrier { id: 0, parties: 3 };
    let specs = vec![
        spec(
            "app-main",
            vec![mmap(0, 6000), write_op(0, 6000), barrier.clone(), Op::Exit],
            None,
        ),
        spec("app-worker", vec![barrier, Op::Exit], Some(0)),
        spec(
            "other",
            vec![
                Op::Compute { ns: 1_000_000 },
                mmap(0, 14000),
                write_op(0, 14000),
                Op::Exit,
            ],
            None,
        ),
    ];
    let mut tasks: Vec<Task> = Vec::new();
    foliosim_model::spawn_tasks(&mut k, &mut tasks, 0, ContentClass::Usemem, specs);
    k.mms[tasks[0].mm as usize].oom_score_adj = 1000;
    let stats = run_tasks(&mut k, &mut tasks, 1, 3_000_000, true, &mut |_, _| {})
        .unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(k.oom.kills.len(), 1);
    assert_eq!(k.oom.kills[0].mm, tasks[0].mm);
    assert_eq!(k.oom.kills[0].rss_pages, 6000);
    let killed_at = k.oom.kills[0].at_ns;
    for t in &tasks[..2] {
        let end = t.exited_at_ns.unwrap();
        assert!(
            end >= killed_at && end < killed_at + 1_000_000,
            "{}: {end}",
            t.name
        );
    }
    assert!(tasks[2].exited_at_ns.unwrap() > killed_at);
    assert_eq!(k.mms[tasks[2].mm as usize].mm_users, 0);
    assert_eq!(stats.simulated_ns, tasks[2].exited_at_ns.unwrap());
    assert!(tasks[0].sys_ns > 0);
    check(&k).unwrap();
}
