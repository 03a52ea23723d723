use super::format::*;
use super::*;
use crate::workload::Op;

const GOOD: &str = "foliosim-trace 1
command cc -O2 -c x.c
page_size 4096
begin
0 1 exec cc
10 1 mmap 1 100 anon
20 1 touch 1 0 50 w
25 1 mmap 2 8 file
26 1 touch 2 0 4 r
27 1 touch 2 4 1 w
30 1 cpu 1000
40 2 fork 1
45 3 clone 1
50 2 touch 1 50 10 w
52 2 exec cc1
55 2 mmap 3 1000 anon
56 2 touch 3 0 1000 w
58 3 exit
60 2 exit
70 1 wait 2
80 1 munmap 1 0 10
90 1 madvise 1 10 20 pageout
95 1 touch 1 60 10 r
100 1 exit
end 20
";

fn parse_err(text: &str) -> TraceError {
    Trace::parse(text).expect_err("the trace should be refused")
}

/// GOOD with line `n` (1-based) replaced by `line`.
fn with_line(n: usize, line: &str) -> String {
    GOOD.lines()
        .enumerate()
        .map(|(i, l)| if i + 1 == n { line } else { l })
        .collect::<Vec<_>>()
        .join("\n")
        + "\n"
}

#[test]
fn parses_a_good_trace() {
    let t = Trace::parse(GOOD).unwrap();
    assert_eq!(t.events.len(), 20);
    assert_eq!(t.header_value("command"), Some("cc -O2 -c x.c"));
    assert_eq!(
        t.events[2].kind,
        EventKind::Touch {
            vma: 1,
            first: 0,
            nr: 50,
            write: true
        }
    );
}

#[test]
fn round_trips_through_text_and_gzip() {
    let t = Trace::parse(GOOD).unwrap();
    let text = t.to_text();
    assert_eq!(Trace::parse(&text).unwrap(), t);
    let gz = gzip::compress(text.as_bytes());
    assert_eq!(Trace::parse_bytes(&gz).unwrap(), t);
    // The text form is canonical: writing it again gives the same bytes.
    assert_eq!(Trace::parse(&text).unwrap().to_text(), text);
}

#[test]
fn error_bad_magic_and_version() {
    let e = parse_err("hello\n");
    assert_eq!(e.line, 1);
    assert!(e.msg.contains("expected `foliosim-trace 1`"), "{e}");
    let e = parse_err(&GOOD.replace("foliosim-trace 1", "foliosim-trace 7"));
    assert!(
        e.msg.contains("version 7") && e.msg.contains("reads version 1"),
        "{e}"
    );
    let e = parse_err("");
    assert_eq!(e.line, 1);
}

#[test]
fn error_header_page_size() {
    let e = parse_err(&GOOD.replace("page_size 4096", "page_size 16384"));
    assert_eq!(e.line, 3);
    assert!(e.msg.contains("page_size") && e.msg.contains("4096"), "{e}");
}

#[test]
fn error_truncated() {
    // Cut after an event line: the `end` line is missing.
    let cut: String = GOOD.lines().take(12).map(|l| format!("{l}\n")).collect();
    let e = parse_err(&cut);
    assert_eq!(e.line, 13);
    assert!(e.msg.contains("truncated"), "{e}");
    // Cut in the header.
    let e = parse_err("foliosim-trace 1\npage_size 4096\n");
    assert_eq!(e.line, 3);
    assert!(
        e.msg.contains("truncated") && e.msg.contains("begin"),
        "{e}"
    );
    // A gzipped trace cut short names the line where the data stops.
    let gz = gzip::compress(GOOD.as_bytes());
    let e = Trace::parse_bytes(&gz[..gz.len() - 12]).unwrap_err();
    assert!(e.msg.contains("truncated") || e.msg.contains("gzip"), "{e}");
}

#[test]
fn error_end_count() {
    let e = parse_err(&GOOD.replace("end 20", "end 19"));
    assert_eq!(e.line, 25);
    assert!(e.msg.contains("20 events"), "{e}");
    let e = parse_err(&GOOD.replace("end 20", "end x"));
    assert!(e.msg.contains("expected `end N`"), "{e}");
    let e = parse_err(&format!("{GOOD}0 1 exit\n"));
    assert_eq!(e.line, 26);
    assert!(e.msg.contains("nothing after `end`"), "{e}");
}

#[test]
fn error_unknown_op() {
    let e = parse_err(&with_line(8, "25 1 mremap 2 8 file"));
    assert_eq!(e.line, 8);
    assert!(
        e.msg.contains("field 3 (op)") && e.msg.contains("`mremap`"),
        "{e}"
    );
}

#[test]
fn error_wrong_argument_count() {
    let e = parse_err(&with_line(6, "10 1 mmap 1 100"));
    assert_eq!(e.line, 6);
    assert!(e.msg.contains("`mmap` takes 3 argument(s)"), "{e}");
    let e = parse_err(&with_line(6, "10 1"));
    assert!(e.msg.contains("expected `TIME_NS TASK OP"), "{e}");
}

#[test]
fn error_bad_number_and_enum_fields() {
    let e = parse_err(&with_line(6, "10 1 mmap one 100 anon"));
    assert!(
        e.msg.contains("field 4 (vma)") && e.msg.contains("`one`"),
        "{e}"
    );
    let e = parse_err(&with_line(6, "10 1 mmap 1 0 anon"));
    assert!(e.msg.contains("field 5 (pages): must be at least 1"), "{e}");
    let e = parse_err(&with_line(6, "10 1 mmap 1 100 huge"));
    assert!(e.msg.contains("field 6 (kind)"), "{e}");
    let e = parse_err(&with_line(7, "20 1 touch 1 0 50 x"));
    assert!(e.msg.contains("`r` (load) or `w` (store)"), "{e}");
    let e = parse_err(&with_line(22, "90 1 madvise 1 10 20 willneed"));
    assert!(e.msg.contains("field 7 (advice)"), "{e}");
    let e = parse_err(&with_line(6, "10 1 mmap 99999999999 100 anon"));
    assert!(e.msg.contains("too large"), "{e}");
    let e = parse_err(&with_line(5, "0 0 exec cc"));
    assert!(e.msg.contains("numbered from 1"), "{e}");
}

#[test]
fn error_time_goes_backwards() {
    let e = parse_err(&with_line(7, "5 1 touch 1 0 50 w"));
    assert_eq!(e.line, 7);
    assert!(e.msg.contains("before the previous event"), "{e}");
}

#[test]
fn error_task_lifecycle() {
    let e = parse_err(&with_line(5, "0 1 fork 9"));
    assert!(e.msg.contains("task 9, which has not started"), "{e}");
    let e = parse_err(&with_line(12, "40 1 fork 1"));
    assert!(e.msg.contains("started twice"), "{e}");
    let e = parse_err(&with_line(19, "60 3 exit"));
    assert!(e.msg.contains("task 3, which has exited"), "{e}");
    let e = parse_err(&with_line(20, "70 1 wait 3"));
    assert!(e.msg.contains("a thread"), "{e}");
    // Task 2 exits at line 19; waiting for it before that is an error.
    let swapped = GOOD.replace("60 2 exit\n70 1 wait 2", "60 1 wait 2\n70 2 exit");
    let e = parse_err(&swapped);
    assert!(e.msg.contains("has not exited"), "{e}");
    // exec while another thread of the process runs.
    let e = parse_err(&with_line(15, "52 1 exec cc1"));
    assert!(e.msg.contains("other threads"), "{e}");
}

#[test]
fn error_vma_use() {
    let e = parse_err(&with_line(7, "20 1 touch 5 0 50 w"));
    assert!(
        e.msg
            .contains("vma 5, which task 1's process has not mapped"),
        "{e}"
    );
    let e = parse_err(&with_line(7, "20 1 touch 1 90 20 w"));
    assert!(
        e.msg
            .contains("pages 90..110 of vma 1, which has 100 pages"),
        "{e}"
    );
    let e = parse_err(&with_line(8, "25 1 mmap 1 8 file"));
    assert!(e.msg.contains("mapped again (first at line 6"), "{e}");
    // The exec'd image does not have its parent's VMA 1.
    let e = parse_err(&with_line(17, "56 2 touch 1 0 1 w"));
    assert!(
        e.msg
            .contains("vma 1, which task 2's process has not mapped"),
        "{e}"
    );
    // A touch of unmapped pages.
    let e = parse_err(&with_line(23, "95 1 touch 1 5 10 w"));
    assert!(e.msg.contains("pages 0..10 are unmapped"), "{e}");
}

#[test]
fn error_not_text() {
    let e = Trace::parse_bytes(b"foliosim-trace 1\n\xff\xfe\n").unwrap_err();
    assert_eq!(e.line, 2);
    assert!(e.msg.contains("not UTF-8"), "{e}");
}

fn opts(scale: f64, repeat: u32) -> ReplayOptions {
    ReplayOptions {
        scale,
        repeat,
        madv_hugepage: false,
        compute: true,
        memcg: None,
    }
}

#[test]
fn replay_builds_processes_threads_and_barriers() {
    let t = Trace::parse(GOOD).unwrap();
    let tasks = replay(&t, &opts(1.0, 1)).unwrap();
    let names: Vec<&str> = tasks.iter().map(|t| t.name.as_str()).collect();
    assert_eq!(names, ["cc-1", "cc-2", "cc-3", "cc1-2"]);
    assert_eq!(tasks[1].shares_mm_with, None);
    assert_eq!(tasks[2].shares_mm_with, Some(0));
    // Every barrier id is met by exactly two tasks.
    let mut met: BTreeMap<u32, u32> = BTreeMap::new();
    for op in tasks.iter().flat_map(|t| &t.ops) {
        if let Op::Barrier { id, parties } = op {
            assert_eq!(*parties, 2);
            *met.entry(*id).or_default() += 1;
        }
    }
    assert!(met.values().all(|&n| n == 2), "{met:?}");
    assert_eq!(met.len(), 4); // fork, clone, exec, wait
                              // The root: file loads are left out, its store to the file VMA is an anonymous store,
                              // the load of anon pages is a store.
    let root = &tasks[0].ops;
    assert!(root.contains(&Op::Touch {
        vma: 1,
        first: 4,
        nr: 1,
        write: true
    }));
    assert!(!root
        .iter()
        .any(|op| matches!(op, Op::Touch { write: false, .. })));
    assert!(root.contains(&Op::MunmapRange {
        vma: 0,
        first: 0,
        nr: 10
    }));
    // The forked child maps its inherited VMA on first use, then its image ends at exec.
    assert_eq!(
        tasks[1].ops[2..4],
        [
            Op::Mmap {
                vma: 0,
                nr_pages: 100,
                thp: ThpAdvice::Default
            },
            Op::Touch {
                vma: 0,
                first: 50,
                nr: 10,
                write: true
            }
        ]
    );
    assert_eq!(tasks[1].ops.last(), Some(&Op::Exit));
}

#[test]
fn replay_scales_sizes_and_repeats_in_sequence() {
    let t = Trace::parse(GOOD).unwrap();
    let half = replay(&t, &opts(0.5, 1)).unwrap();
    assert!(half[0].ops.contains(&Op::Mmap {
        vma: 0,
        nr_pages: 50,
        thp: ThpAdvice::Default
    }));
    assert!(half[0].ops.contains(&Op::Touch {
        vma: 0,
        first: 0,
        nr: 25,
        write: true
    }));
    let twice = replay(&t, &opts(1.0, 2)).unwrap();
    assert_eq!(twice.len(), 8);
    // The second copy's root starts at a barrier its first copy's root meets at its end.
    let Op::Barrier { id, .. } = twice[4].ops[0] else {
        panic!("{:?}", twice[4].ops[0])
    };
    let first_root = &twice[0].ops;
    assert_eq!(
        first_root[first_root.len() - 2],
        Op::Barrier { id, parties: 2 }
    );
}

#[test]
fn replay_is_deterministic() {
    let t = Trace::parse(GOOD).unwrap();
    let a = replay(&t, &opts(1.5, 3)).unwrap();
    let b = replay(&t, &opts(1.5, 3)).unwrap();
    let show = |v: &[crate::workload::TaskSpec]| {
        v.iter()
            .map(|t| format!("{} {:?} {:?}", t.name, t.shares_mm_with, t.ops))
            .collect::<Vec<_>>()
    };
    assert_eq!(show(&a), show(&b));
}

#[test]
fn a_scenario_names_the_trace_line_of_a_bad_trace() {
    let dir = std::env::temp_dir().join(format!("foliosim-trace-test-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let bad = dir.join("bad.trace");
    std::fs::write(&bad, with_line(7, "20 1 touch 1 0 50 q")).unwrap();
    let text = format!(
        "[[workload]]\nkind = \"trace\"\npath = \"{}\"\n",
        bad.display()
    );
    let e = crate::Scenario::from_toml_str(&text)
        .unwrap_err()
        .to_string();
    assert!(
        e.contains("workload[0].path") && e.contains("line 7"),
        "{e}"
    );
    let e = crate::Scenario::from_toml_str(&text.replace("bad.trace", "missing.trace"))
        .unwrap_err()
        .to_string();
    assert!(e.contains("no such file"), "{e}");
    let e = crate::Scenario::from_toml_str(&format!("{text}scale = 0\n"))
        .unwrap_err()
        .to_string();
    assert!(e.contains("workload[0].scale"), "{e}");
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn replay_runs_in_the_sim_and_twice_gives_the_same_bytes() {
    let dir = std::env::temp_dir().join(format!("foliosim-trace-run-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let path = dir.join("good.trace.gz");
    std::fs::write(&path, gzip::compress(GOOD.as_bytes())).unwrap();
    let text = format!(
        "[machine]\ncpus = 2\nmemory = \"64M\"\n[sysfs.hugepages]\n\"64K\" = \"always\"\n[[workload]]\nkind = \"trace\"\npath = \"{}\"\nrepeat = 2\n[[workload]]\nkind = \"trace\"\npath = \"{}\"\nscale = 2.0\n",
        path.display(),
        path.display()
    );
    let mut s = crate::Scenario::from_toml_str(&text).unwrap();
    s.check_invariants = true;
    let a = crate::run(&s).unwrap();
    let b = crate::run(&s).unwrap();
    assert_eq!(a.to_json(), b.to_json());
    assert_eq!(a.workloads[0].kind, "trace");
    assert_eq!(a.workloads[0].tasks, 8);
    assert!(a.workloads[0].elapsed_ns_max > 0);
    assert!(a.counters["hugepages-64kB/stats/anon_fault_alloc"] > 0);
    std::fs::remove_dir_all(&dir).unwrap();
}

/// A `cpu` of 2^64-1 hung the replay, and one followed by a small value wrapped to 1 ns.
#[test]
fn trace_times_are_bounded() {
    let huge = GOOD.replace("30 1 cpu 1000", "30 1 cpu 18446744073709551615");
    assert!(parse_err(&huge)
        .to_string()
        .contains("line 11: field 4 (cpu ns)"));
    let sum = GOOD.replace(
        "30 1 cpu 1000",
        &format!("30 1 cpu {MAX_TRACE_NS}\n31 1 cpu 2"),
    );
    let sum = sum.replace("end 20", "end 21");
    let e = parse_err(&sum).to_string();
    assert!(e.contains("line 12: cpu time of task 1"), "{e}");
    let late = GOOD.replace("100 1 exit", "18446744073709551615 1 exit");
    assert!(parse_err(&late)
        .to_string()
        .contains("field 1 (time in ns)"));
}
