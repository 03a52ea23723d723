//! The TLB model through the run: Access ops (deterministic, every absent page faulted once,
//! time proportional to the accesses), flushes that empty a task's hot set, mprotect, the
//! shootdown microbenchmark, and XSBench.

use foliosim_model::content::ContentClass;
use foliosim_model::mm::Kernel;
use foliosim_model::scenario::Scenario;
use foliosim_model::sched::{run_tasks, Task};
use foliosim_model::workload::Op;

const MS: u64 = 1_000_000;

/// A machine of `cpus` CPUs, 4K pages only, invariants on.
fn kernel(cpus: u32) -> Kernel {
    let text = format!(
        r#"
check_invariants = true
[machine]
cpus = {cpus}
memory = "256M"
[sysfs]
thp_enabled = "never"
[sysfs.hugepages]
"2M" = "never"
[[workload]]
kind = "usemem"
nproc = 1
size = "1M"
"#
    );
    crate::common::kernel(&text)
}

fn access(vma: u32, nr: u32, count: u64) -> Op {
    Op::Access {
        vma,
        first: 0,
        nr,
        count,
        write: false,
        mlp: 1,
    }
}

fn mmap(vma: u32, nr_pages: u32) -> Op {
    Op::Mmap {
        vma,
        nr_pages,
        thp: foliosim_model::mm::mmap::ThpAdvice::Default,
    }
}

/// One task: `ops` on a fresh mm; (user ns, pgfault, the kernel).
fn one_task(ops: Vec<Op>) -> (u64, u64, Kernel) {
    let mut k = kernel(1);
    let mm = k.new_mm(0, ContentClass::Usemem);
    let mut tasks = vec![Task::new("t".into(), mm, 0, ops)];
    crate::common::run_tasks_checked(&mut k, &mut tasks);
    let pgfault = k.vm_events().to_map()["pgfault"];
    (tasks[0].user_ns, pgfault, k)
}

#[test]
fn access_faults_every_absent_page_exactly_once() {
    // 100 000 accesses over 256 absent pages: each is faulted in once, none twice.
    let (_, pgfault, k) = one_task(vec![mmap(0, 256), access(0, 256, 100_000)]);
    assert_eq!(pgfault, 256);
    let vma = k.mms[0].vma(0);
    assert!(vma.ptes.iter().all(|p| p.is_present()));
    // A second op over the now mapped range faults nothing.
    let (_, pgfault, _) = one_task(vec![
        mmap(0, 256),
        access(0, 256, 1000),
        access(0, 256, 100_000),
    ]);
    assert_eq!(pgfault, 256);
    // A sub-range: only its pages.
    let (_, pgfault, k) = one_task(vec![
        mmap(0, 256),
        Op::Access {
            vma: 0,
            first: 64,
            nr: 64,
            count: 50_000,
            write: true,
            mlp: 1,
        },
    ]);
    assert_eq!(pgfault, 64);
    let ptes = &k.mms[0].vma(0).ptes;
    assert!(ptes[64..128].iter().all(|p| p.is_present()));
    assert!(ptes[..64].iter().chain(&ptes[128..]).all(|p| p.is_none()));
}

#[test]
fn accesses_set_the_accessed_bits_reclaim_cleared() {
    use foliosim_model::mm::folio::flags;
    let young = |k: &Kernel| {
        let ptes = &k.mms[0].vma(0).ptes;
        ptes.iter()
            .filter(|p| k.folios.test(k.folios.head_of(p.pfn()), flags::YOUNG))
            .count()
    };
    let cold = Op::Madvise {
        vma: 0,
        first: 0,
        nr: 64,
        advice: foliosim_model::mm::madvise::Advice::Cold,
    };
    // MADV_COLD clears the accessed bits; 10 000 accesses over 64 pages touch them all again.
    let (_, _, k) = one_task(vec![
        mmap(0, 64),
        access(0, 64, 1000),
        cold.clone(),
        access(0, 64, 10_000),
    ]);
    assert_eq!(young(&k), 64);
    // Without the accesses they stay old.
    let (_, _, k) = one_task(vec![mmap(0, 64), access(0, 64, 1000), cold]);
    assert_eq!(young(&k), 0);
}

#[test]
fn access_is_deterministic_and_costs_in_proportion() {
    let ops = |count| {
        vec![
            mmap(0, 4096),
            Op::Touch {
                vma: 0,
                first: 0,
                nr: 4096,
                write: true,
            },
            access(0, 4096, count),
        ]
    };
    let (a, _, ka) = one_task(ops(200_000));
    let (b, _, kb) = one_task(ops(200_000));
    assert_eq!(a, b);
    assert_eq!(ka.tlb_cache.report(), kb.tlb_cache.report());
    let (base, _, _) = one_task(ops(0));
    let (double, _, _) = one_task(ops(400_000));
    let (one, two) = ((a - base) as f64, (double - base) as f64);
    assert!((two / one - 2.0).abs() < 0.01, "{one} {two}");
    // 16 MiB over 4K pages, twice the STLB's 2048 entries: half the accesses walk, at tens
    // of ns each.
    let per = one / 200_000.0;
    assert!(per > 20.0 && per < 400.0, "{per} ns per access");
    let r = ka.tlb_cache.report().unwrap();
    assert_eq!(r.perf["dTLB-loads"], 200_000);
    let walks = r.perf["dTLB-load-misses"];
    assert!((95_000..=105_000).contains(&walks), "{:?}", r.perf);
}

#[test]
fn flushes_empty_the_hot_set_of_the_cpus_they_reach() {
    // Thread 1 computes with a hot set on one CPU while thread 0 unmaps 64 touched pages 50
    // times on the other: each munmap (a full flush, beyond 33 pages) interrupts thread 1's
    // CPU, whose next user run refills the hot set.
    let mut k = kernel(2);
    let mm = k.new_mm(0, ContentClass::Usemem);
    let mut t0 = vec![
        Op::Barrier { id: 0, parties: 2 },
        Op::Compute { ns: 100_000 },
    ];
    for _ in 0..50 {
        t0.extend([
            mmap(1, 64),
            Op::Touch {
                vma: 1,
                first: 0,
                nr: 64,
                write: true,
            },
            Op::Munmap { vma: 1 },
            Op::Compute { ns: 50_000 },
        ]);
    }
    t0.extend([Op::Barrier { id: 1, parties: 2 }, Op::Exit]);
    let mut t1 = vec![
        Op::Barrier { id: 0, parties: 2 },
        Op::TlbHotSet {
            code_pages: 10,
            load_pages: 5,
            store_pages: 2,
        },
    ];
    // Short computes: every one after a flush refills.
    t1.extend(std::iter::repeat_n(Op::Compute { ns: 10_000 }, 2000));
    t1.extend([Op::Barrier { id: 1, parties: 2 }, Op::Exit]);
    let mut tasks = vec![
        Task::new("t0".into(), mm, 0, t0),
        Task::new("t1".into(), mm, 0, t1),
    ];
    crate::common::run_tasks_checked(&mut k, &mut tasks);
    let r = k.tlb_cache.report().unwrap();
    let received: u64 = r.shootdowns_per_cpu.iter().sum();
    assert!(received >= 50, "{r:?}");
    let events = k.vm_events().to_map();
    assert!(events["nr_tlb_remote_flush"] >= 50);
    // The first fill plus one refill per shootdown that reached thread 1's CPU while it ran.
    let refills = r.perf["iTLB-load-misses"] / 10;
    assert!((50..=received + 1).contains(&refills), "{refills} {r:?}");
    assert_eq!(r.perf["dTLB-store-misses"], refills * 2);
}

#[test]
fn mprotect_drops_permission_with_a_flush_and_forbids_stores() {
    let ops = |extra: Vec<Op>| {
        let mut ops = vec![
            mmap(0, 8),
            Op::Touch {
                vma: 0,
                first: 0,
                nr: 8,
                write: true,
            },
            Op::Mprotect {
                vma: 0,
                prot: foliosim_model::mm::mprotect::Prot::Read,
            },
            Op::Mprotect {
                vma: 0,
                prot: foliosim_model::mm::mprotect::Prot::ReadWrite,
            },
        ];
        ops.extend(extra);
        ops
    };
    let (_, _, k) = one_task(ops(vec![Op::Exit]));
    // A flush of 8 pages for each change of the writable bit (x86), one full at exit.
    let e = k.vm_events().to_map();
    assert_eq!(e["nr_tlb_local_flush_one"], 16);
    assert_eq!(e["nr_tlb_local_flush_all"], 1);
    // A store to a read-only VMA is a segmentation fault.
    let mut k = kernel(1);
    let mm = k.new_mm(0, ContentClass::Usemem);
    let mut tasks = vec![Task::new(
        "t".into(),
        mm,
        0,
        vec![
            mmap(0, 8),
            Op::Mprotect {
                vma: 0,
                prot: foliosim_model::mm::mprotect::Prot::Read,
            },
            Op::Touch {
                vma: 0,
                first: 0,
                nr: 8,
                write: true,
            },
        ],
    )];
    let Err(err) = run_tasks(&mut k, &mut tasks, 1, 3 * MS, true, &mut |_, _| {}) else {
        panic!("a store to a read-only VMA ran");
    };
    assert!(err.to_string().contains("protection"), "{err}");
}

fn scenario(workload: &str) -> Scenario {
    crate::common::parse(&scenario_text(workload))
}

fn scenario_text(workload: &str) -> String {
    format!(
        r#"
check_invariants = true
[machine]
cpus = 2
memory = "512M"
[sysfs]
thp_enabled = "never"
[sysfs.hugepages]
"2M" = "never"
[[workload]]
{workload}
"#
    )
}

/// The shootdowns the scenario's tlb_shootdown workload expects.
fn expected_shootdowns(s: &Scenario) -> u64 {
    let foliosim_model::scenario::WorkloadSpec::TlbShootdown(w) = &s.workloads[0] else {
        panic!("the test scenario runs tlb_shootdown");
    };
    foliosim_model::workload::tlb_shootdown::expected_shootdowns(w)
}

#[test]
fn each_shootdown_op_interrupts_the_other_thread_once() {
    for op in ["munmap", "mprotect", "madv_dontneed"] {
        let s = scenario(&format!(
            "kind = \"tlb_shootdown\"\nop = \"{op}\"\niterations = 20\nops_per_iteration = 5"
        ));
        let r = foliosim_model::run(&s).unwrap();
        let expected = expected_shootdowns(&s);
        assert_eq!(expected, if op == "mprotect" { 200 } else { 100 });
        let tlb = r.tlb.as_ref().unwrap();
        let got: u64 = tlb.shootdowns_per_cpu.iter().sum();
        // The ops, and the exit's full flush reaching the CPU the other thread left.
        assert!(
            (expected..=expected + 2).contains(&got),
            "{op}: {got} {tlb:?}"
        );
        assert_eq!(r.counters["nr_tlb_remote_flush_received"], got, "{op}");
    }
}

/// MADV_PAGEOUT: a flush before each dirty page's write-out (try_to_unmap_flush_dirty), and
/// from the second operation on one by the next walk for the batch (flush_tlb_batched_pending),
/// as a trace of the live kernel shows (docs/validation.md).
#[test]
fn pageout_flushes_per_dirty_page_and_once_more_for_the_batch() {
    let text = toml_with_swap(&scenario_text(
        "kind = \"tlb_shootdown\"\nop = \"madv_pageout\"\niterations = 3\nops_per_iteration = 4\nspin_ns = 20000000",
    ));
    let s = Scenario::from_toml_str(&text).unwrap();
    let r = foliosim_model::run(&s).unwrap();
    let expected = expected_shootdowns(&s);
    assert_eq!(expected, 12 * 17 - 1);
    assert_eq!(r.counters["pswpout"], 12 * 16);
    let got: u64 = r.tlb.as_ref().unwrap().shootdowns_per_cpu.iter().sum();
    assert!((expected..=expected + 2).contains(&got), "{got}");
}

fn toml_with_swap(text: &str) -> String {
    text.replace(
        "[sysfs]",
        "[[machine.swap]]\nkind = \"zram\"\nsize = \"64M\"\n[sysfs]",
    )
}

#[test]
fn xsbench_reports_lookups_per_second() {
    let s = scenario(
        "kind = \"xsbench\"\nsize = \"small\"\ngridpoints = 2000\nthreads = 2\nlookups = 20000",
    );
    let r = foliosim_model::run(&s).unwrap();
    assert_eq!(r, foliosim_model::run(&s).unwrap(), "deterministic");
    let x = r.workloads[0].xsbench.as_ref().unwrap();
    assert_eq!(
        (x.threads, x.isotopes, x.gridpoints, x.lookups),
        (2, 68, 2000, 20_000)
    );
    assert!(x.runtime_s > 0.0 && x.lookups_per_s > 0.0);
    assert!((x.lookups_per_s * x.runtime_s - 20_000.0).abs() < 1.0);
    // Grids: 68 x 2000 points, written once by thread 0: a fault per page.
    let pages = |bytes: u64| bytes.div_ceil(4096);
    let points = 68 * 2000u64;
    let written = pages(points * 48) + pages(points * 8) + pages(points * 68 * 4);
    assert_eq!(r.counters["pgfault"], written);
    // Twice the lookups: about twice the runtime.
    let s2 = scenario(
        "kind = \"xsbench\"\nsize = \"small\"\ngridpoints = 2000\nthreads = 2\nlookups = 40000",
    );
    let r2 = foliosim_model::run(&s2).unwrap();
    let x2 = r2.workloads[0].xsbench.as_ref().unwrap();
    let ratio = x2.runtime_s / x.runtime_s;
    assert!((1.8..2.2).contains(&ratio), "{ratio}");
    // TLB: the grids' reads, loads only after init.
    let perf = &r.tlb.as_ref().unwrap().perf;
    assert!(perf["dTLB-loads"] > 20_000 * 20, "{perf:?}");
}

#[test]
fn shipped_scenarios_parse() {
    for text in [
        include_str!("../../../../scenarios/xsbench-small.toml"),
        include_str!("../../../../scenarios/validate/tlb-munmap.toml"),
        include_str!("../../../../scenarios/validate/tlb-mprotect.toml"),
        include_str!("../../../../scenarios/validate/tlb-madv-dontneed.toml"),
    ] {
        Scenario::from_toml_str(text).unwrap_or_else(|e| panic!("{e}"));
    }
}

#[test]
fn bad_fields_are_named() {
    for (workload, field) in [
        ("kind = \"xsbench\"\nisotopes = 100", "isotopes"),
        ("kind = \"xsbench\"\nthreads = 0", "threads"),
        (
            "kind = \"tlb_shootdown\"\nop = \"munmap\"\npages = 64",
            "pages",
        ),
        (
            "kind = \"tlb_shootdown\"\nop = \"munmap\"\nthreads = 1",
            "threads",
        ),
    ] {
        let text = format!("[[workload]]\n{workload}\n");
        let err = Scenario::from_toml_str(&text).unwrap_err().to_string();
        assert!(err.contains(field), "{err}");
    }
    let err = Scenario::from_toml_str(
        "[machine.tlb_geometry]\npreset = \"p4\"\n[[workload]]\nkind = \"usemem\"\nnproc = 1\nsize = \"1M\"\n",
    )
    .unwrap_err()
    .to_string();
    assert!(
        err.contains("machine.tlb_geometry.preset") && err.contains("golden-cove"),
        "{err}"
    );
}
