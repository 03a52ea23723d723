//! khugepaged, the deferred split queue and threads sharing an mm, end to end on the scheduler:
//! collapse at the rate pages_to_scan / scan_sleep_millisecs allows, the PTE limits, the
//! allocation-failure sleep, the mmap lock blocking faults during a collapse, partial munmap
//! feeding the deferred split queue that memory pressure drains, and threads of one process
//! (faults on several CPUs, TLB shootdowns, one exit of the mm). Invariants are checked
//! throughout.

use foliosim_model::content::ContentClass;
use foliosim_model::mm::folio::flags;
use foliosim_model::mm::madvise::Advice;
use foliosim_model::mm::mmap::ThpAdvice;
use foliosim_model::mm::vmstat::{MthpStat, VmEvent};
use foliosim_model::mm::Kernel;
use foliosim_model::sched::{SchedStats, Task};
use foliosim_model::spawn_tasks;
use foliosim_model::workload::{Op, TaskSpec};

const MS: u64 = 1_000_000;
const S: u64 = 1_000_000_000;
/// Pages in 1 MiB and 2 MiB.
const MIB: u32 = 256;
const PMD: u32 = 512;

/// 2 CPUs, 512 MiB, no swap; THP only for MADV_HUGEPAGE (PMD size inherits `madvise`), so
/// plain VMAs fault 4K pages and khugepaged collapses what MADV_HUGEPAGE registers.
const MADVISE: &str = r#"
check_invariants = true
[machine]
cpus = 2
memory = "512M"
[kernel]
version = "6.18"
[sysfs]
thp_enabled = "madvise"
[[workload]]
kind = "usemem"
nproc = 1
size = "1M"
"#;

fn kernel(text: &str) -> Kernel {
    crate::common::kernel(text)
}

fn process(name: &str, ops: Vec<Op>) -> TaskSpec {
    TaskSpec {
        name: name.into(),
        memcg: None,
        ops,
        shares_mm_with: None,
    }
}

fn thread_of(leader: usize, name: &str, ops: Vec<Op>) -> TaskSpec {
    TaskSpec {
        shares_mm_with: Some(leader),
        ..process(name, ops)
    }
}

fn run(k: &mut Kernel, specs: Vec<TaskSpec>) -> (Vec<Task>, SchedStats) {
    let mut tasks = Vec::new();
    spawn_tasks(k, &mut tasks, 0, ContentClass::Usemem, specs);
    let stats = crate::common::run_tasks_checked(k, &mut tasks);
    (tasks, stats)
}

fn mmap(vma: u32, nr_pages: u32, thp: ThpAdvice) -> Op {
    Op::Mmap { vma, nr_pages, thp }
}

fn write(vma: u32, first: u32, nr: u32) -> Op {
    Op::Touch {
        vma,
        first,
        nr,
        write: true,
    }
}

fn madvise(vma: u32, first: u32, nr: u32, advice: Advice) -> Op {
    Op::Madvise {
        vma,
        first,
        nr,
        advice,
    }
}

/// User-space computing for `ns`, in 10 ms ops: a Compute op runs to its end unless a sleeping
/// task's wake-up is due, so one long op would hold its CPU past its slice while others wait.
fn compute(ns: u64) -> impl Iterator<Item = Op> {
    let chunk = 10 * MS;
    (0..ns.div_ceil(chunk)).map(move |i| Op::Compute {
        ns: chunk.min(ns - i * chunk),
    })
}

fn ev(k: &Kernel, e: VmEvent) -> u64 {
    k.vm_events().get(e)
}

/// Is 2 MiB range `r` of `vma` of `mm` mapped by one PMD THP?
fn pmd_mapped(k: &Kernel, mm: u32, vma: u32, r: u32) -> bool {
    let pte = k.mms[mm as usize].vma(vma).ptes[(r * PMD) as usize];
    if !pte.is_present() {
        return false;
    }
    let head = k.folios.head_of(pte.pfn());
    k.folios.test(head, flags::PMD_MAPPED) && k.folios.order[head as usize] == 9
}

fn khugepaged_task(tasks: &[Task]) -> &Task {
    tasks.iter().find(|t| t.name == "khugepaged").unwrap()
}

/// 64 MiB faulted with 4K pages, then MADV_HUGEPAGE, then 25 s of computing: khugepaged scans
/// pages_to_scan = 4096 PTEs a pass, 8 ranges, every scan_sleep_millisecs = 10 s, from the
/// madvise on: passes at ~0, 10 and 20 s collapse the first 24 of the 32 ranges.
fn collapse_scenario() -> (Kernel, Vec<Task>, SchedStats) {
    let mut k = kernel(MADVISE);
    let pages = 32 * PMD;
    let ops: Vec<Op> = [
        mmap(0, pages, ThpAdvice::Default),
        write(0, 0, pages),
        madvise(0, 0, pages, Advice::Hugepage),
    ]
    .into_iter()
    .chain(compute(25 * S))
    .collect();
    let (tasks, stats) = run(&mut k, vec![process("app", ops)]);
    (k, tasks, stats)
}

#[test]
fn khugepaged_collapses_a_4k_faulted_range_at_the_scan_rate() {
    let (k, tasks, _) = collapse_scenario();
    assert_eq!(k.vm_events().get_mthp(9, MthpStat::AnonFaultAlloc), 0);
    assert_eq!(ev(&k, VmEvent::ThpFaultAlloc), 0, "faults took 4K pages");
    assert_eq!(ev(&k, VmEvent::ThpCollapseAlloc), 24);
    assert_eq!(ev(&k, VmEvent::ThpCollapseAllocFailed), 0);
    assert_eq!(ev(&k, VmEvent::KhugepagedPagesCollapsed), 24);
    assert_eq!(
        ev(&k, VmEvent::KhugepagedFullScans),
        0,
        "8 ranges left unscanned"
    );
    for r in 0..32 {
        assert_eq!(pmd_mapped(&k, 0, 0, r), r < 24, "range {r}");
    }
    assert_eq!(
        k.mms[0].rss_anon,
        32 * PMD as u64,
        "the same pages, remapped"
    );
    let t = khugepaged_task(&tasks);
    assert_eq!(
        t.wakeups, 3,
        "the registration, then two 10 s timers: {}",
        t.wakeups
    );
    // Each collapse copies 2 MiB (512 x copy_page_ns = 192 us), flushes, isolates and frees
    // 512 4K folios (~230 us): about 0.5 ms of the thread's time, with the scans.
    assert!(
        t.sys_ns > 24 * 192_000 && t.sys_ns < 24 * 600_000,
        "{} ns",
        t.sys_ns
    );
    assert_eq!(ev(&k, VmEvent::ThpSplitPmd), 0);
}

#[test]
fn a_collapse_holds_the_mmap_lock_for_write_and_faults_wait() {
    // Thread 0 faults 16 MiB at 4K, madvises it and exits (the mm stays: thread 1 uses it);
    // thread 1 faults 256 MiB at 4K meanwhile. khugepaged's collapses take the write lock for
    // ~250 us each; thread 1's faults that arrive then sleep until it is released.
    let mut k = kernel(MADVISE);
    let t0 = vec![
        mmap(0, 8 * PMD, ThpAdvice::Default),
        write(0, 0, 8 * PMD),
        madvise(0, 0, 8 * PMD, Advice::Hugepage),
        Op::Exit,
    ];
    let t1 = vec![
        Op::Compute { ns: MS },
        mmap(1, 256 * MIB, ThpAdvice::NoHugepage),
        write(1, 0, 256 * MIB),
        Op::Exit,
    ];
    let (tasks, _) = run(&mut k, vec![process("t0", t0), thread_of(0, "t1", t1)]);
    assert_eq!(ev(&k, VmEvent::KhugepagedPagesCollapsed), 8);
    let lock = &k.mms[0].mmap_lock.stats;
    assert!(lock.contended > 0 && lock.wait_ns_total > 0, "{lock:?}");
    // Each wait is shorter than one write hold; the waits are sleeps, not CPU time.
    assert!(lock.wait_ns_max < MS, "{lock:?}");
    // The readers' waits are thread 1's sleeps; each collapse may also wait for the fault in
    // progress at its arrival (rwsem_down_write_slowpath), which is shorter than a fault.
    assert!(
        tasks[1].sleep_ns + lock.acquisitions * MS >= lock.wait_ns_total,
        "{} {}",
        tasks[1].sleep_ns,
        lock.wait_ns_total
    );
    // The mm went away with its last thread.
    assert_eq!(k.mms[0].mm_users, 0);
    assert!(k.mms[0].vmas.iter().all(|v| v.is_none()));
}

#[test]
fn max_ptes_none_and_young_ptes_decide_which_ranges_collapse() {
    // Range 0: 256 of 512 PTEs empty; range 1: 412 empty; range 2: 100 empty but MADV_COLD
    // (not young). max_ptes_none = 300: only range 0 collapses; its empty PTEs are filled.
    let text = MADVISE.replace(
        "[[workload]]",
        "[sysfs.khugepaged]\nmax_ptes_none = 300\nscan_sleep_millisecs = 1000\n\n[[workload]]",
    );
    let mut k = kernel(&text);
    let ops: Vec<Op> = [
        mmap(0, 3 * PMD, ThpAdvice::Default),
        write(0, 0, 256),
        write(0, PMD, 100),
        write(0, 2 * PMD, 412),
        madvise(0, 2 * PMD, PMD, Advice::Cold),
        madvise(0, 0, 3 * PMD, Advice::Hugepage),
    ]
    .into_iter()
    .chain(compute(3500 * MS))
    .collect();
    run(&mut k, vec![process("app", ops)]);
    assert!(pmd_mapped(&k, 0, 0, 0));
    assert!(!pmd_mapped(&k, 0, 0, 1));
    assert!(!pmd_mapped(&k, 0, 0, 2));
    assert_eq!(ev(&k, VmEvent::KhugepagedPagesCollapsed), 1);
    // Passes at ~0, 1, 2 and 3 s: range 1 exceeds max_ptes_none at each.
    assert_eq!(ev(&k, VmEvent::ThpScanExceedNonePte), 4);
    assert_eq!(ev(&k, VmEvent::KhugepagedFullScans), 4);
    assert_eq!(k.mms[0].rss_anon, (512 + 100 + 412) as u64);
}

#[test]
fn a_failed_collapse_allocation_sleeps_alloc_sleep_then_ends_the_pass() {
    // Free memory just above the min watermark but short of a 2 MiB block above it: with
    // khugepaged/defrag = 0 the allocation only tries the free lists (at the low watermark, then
    // at min in the slow path), and fails. Each pass: fail, sleep alloc_sleep (1 s), fail
    // again, end; then scan_sleep (100 ms). The task keeps its pages young (reclaim, finding
    // nothing to swap to, clears the accessed bits), so every range stays worth collapsing.
    let text = MADVISE.replace(
        "[[workload]]",
        "[sysfs.khugepaged]\ndefrag = false\nscan_sleep_millisecs = 100\n\
         alloc_sleep_millisecs = 1000\n\n[[workload]]",
    );
    let mut k = kernel(&text);
    let min = k.pgdat[0]
        .zone
        .wmark_pages(foliosim_model::mm::page_alloc::Wmark::Min) as u32;
    let pages = k.pgdat[0].zone.nr_free_pages() as u32 - min - 480;
    let mut ops = vec![
        mmap(0, pages, ThpAdvice::Default),
        write(0, 0, pages),
        madvise(0, 0, pages, Advice::Hugepage),
    ];
    for _ in 0..55 {
        ops.push(write(0, 0, pages));
        ops.extend(compute(100 * MS));
    }
    let (tasks, stats) = run(&mut k, vec![process("app", ops)]);
    assert_eq!(ev(&k, VmEvent::ThpCollapseAlloc), 0);
    // From the madvise (~0.26 s, after the faults): failures at +0 and +1 s, +1.1 and +2.1 s,
    // ... two every 1.1 s.
    let span_ns = stats.simulated_ns - 260 * MS;
    let cycles = span_ns / (1100 * MS);
    let expect = 2 * cycles
        + if span_ns % (1100 * MS) >= 1000 * MS {
            2
        } else {
            1
        };
    let failed = ev(&k, VmEvent::ThpCollapseAllocFailed);
    assert!(
        failed.abs_diff(expect) <= 1 && failed >= 10,
        "{failed} failures, {expect} expected in {span_ns} ns"
    );
    // Every failure put the thread to sleep: a wake-up each, besides the first.
    let t = khugepaged_task(&tasks);
    assert!(t.wakeups.abs_diff(failed) <= 1, "{} wake-ups", t.wakeups);
}

/// 2 MiB THP for every VMA; a 600 MiB memcg; no swap.
const THP_MEMCG: &str = r#"
check_invariants = true
[machine]
cpus = 2
memory = "2G"
[kernel]
version = "6.18"
[sysfs.hugepages]
"2M" = "always"
[[memcg]]
name = "m"
max = "600M"
[[workload]]
kind = "usemem"
nproc = 1
size = "1M"
"#;

/// 512 MiB of THPs with the first 1 MiB of each 2 MiB munmapped (thpscale's holes).
fn punch_holes(ops: &mut Vec<Op>) {
    ops.push(mmap(0, 256 * PMD, ThpAdvice::Default));
    ops.push(write(0, 0, 256 * PMD));
    for r in 0..256 {
        ops.push(Op::MunmapRange {
            vma: 0,
            first: r * PMD,
            nr: MIB,
        });
    }
}

#[test]
fn partial_munmap_splits_the_pmd_and_queues_the_folio_for_deferred_split() {
    let mut k = kernel(THP_MEMCG);
    let mut ops = Vec::new();
    punch_holes(&mut ops);
    let mut spec = process("app", ops);
    spec.memcg = Some("m".into());
    run(&mut k, vec![spec]);
    assert_eq!(ev(&k, VmEvent::ThpFaultAlloc), 256);
    assert_eq!(ev(&k, VmEvent::ThpSplitPmd), 256);
    assert_eq!(ev(&k, VmEvent::ThpDeferredSplitPage), 256);
    assert_eq!(k.vm_events().get_mthp(9, MthpStat::SplitDeferred), 256);
    assert_eq!(ev(&k, VmEvent::ThpSplitPage), 0, "no pressure yet");
    let m = k.memcg_id(Some("m")) as usize;
    assert_eq!(k.deferred_split[m].split_queue_len, 256);
    // The unmapped halves are still charged: the folios are whole.
    assert_eq!(k.memcgs[m].usage_pages, 256 * PMD as u64);
    assert_eq!(k.mms[0].rss_anon, 256 * MIB as u64);
    // Touching a hole is a segfault.
    let mut ctx = foliosim_model::engine::Ctx::new(0, 0);
    let err = foliosim_model::mm::memory::touch(&mut k, &mut ctx, 0, 0, 5, 6, true).unwrap_err();
    assert!(err.to_string().contains("segmentation fault"), "{err}");
}

#[test]
fn on_4_1_a_partial_munmap_splits_the_thp_at_once_and_frees_the_unmapped_half() {
    // Before 4.5's THP refcounting rework there was no deferred split: split_huge_page_pmd
    // split the page with its PMD, and the zap freed the unmapped pages right away.
    let mut k = kernel(&THP_MEMCG.replace("version = \"6.18\"", "version = \"4.1\""));
    let mut ops = Vec::new();
    punch_holes(&mut ops);
    let mut spec = process("app", ops);
    spec.memcg = Some("m".into());
    run(&mut k, vec![spec]);
    assert_eq!(ev(&k, VmEvent::ThpFaultAlloc), 256);
    assert_eq!(ev(&k, VmEvent::ThpSplitPage), 256);
    assert_eq!(ev(&k, VmEvent::ThpDeferredSplitPage), 0);
    let m = k.memcg_id(Some("m")) as usize;
    assert_eq!(k.deferred_split[m].split_queue_len, 0);
    assert_eq!(
        k.memcgs[m].usage_pages,
        256 * MIB as u64,
        "the halves were freed"
    );
    assert_eq!(k.mms[0].rss_anon, 256 * MIB as u64);
}

#[test]
fn memcg_pressure_splits_the_queued_folios_and_their_free_halves_return() {
    // Then 300 MiB more at 4K: 512 + 300 > 600 MiB, and without swap only the deferred split
    // shrinker can make room (memcg reclaim's shrink_slab): the split frees the unmapped
    // halves, 256 MiB.
    let mut k = kernel(THP_MEMCG);
    let mut ops = Vec::new();
    punch_holes(&mut ops);
    ops.push(mmap(1, 300 * MIB, ThpAdvice::NoHugepage));
    ops.push(write(1, 0, 300 * MIB));
    let mut spec = process("app", ops);
    spec.memcg = Some("m".into());
    let free_before = k.pgdat[0].zone.nr_free_pages();
    run(&mut k, vec![spec]);
    let m = k.memcg_id(Some("m")) as usize;
    let split = ev(&k, VmEvent::ThpSplitPage);
    assert!(split > 0 && split <= 256, "{split}");
    assert_eq!(k.vm_events().get_mthp(9, MthpStat::Split), split);
    assert_eq!(k.deferred_split[m].split_queue_len, 256 - split);
    assert!(ev(&k, VmEvent::SlabsScanned) >= split);
    // Each split gave back the 256 unmapped pages of its folio. (memory.current also counts
    // the pages the per-CPU charge stock holds pre-charged.)
    let usage = (256 - split) * PMD as u64 + split * MIB as u64 + 300 * MIB as u64;
    let stock = k.memcg_stock.held_pages(m as u16);
    assert_eq!(k.memcgs[m].usage_pages - stock, usage);
    assert!(usage <= 600 * MIB as u64);
    let used = free_before - k.pgdat[0].zone.nr_free_pages();
    assert!(
        used >= usage && used < usage + 4 * MIB as u64,
        "{used} pages in use, {usage} charged"
    );
    assert_eq!(ev(&k, VmEvent::OomKill), 0);
}

#[test]
fn global_pressure_drains_the_deferred_split_queue_through_kswapd_and_direct_reclaim() {
    // No memcg limit: 1 GiB machine, 512 MiB of half-unmapped THPs, then 600 MiB at 4K. The
    // zone runs out; reclaim has nothing to swap, but its shrink_slab splits the queued folios.
    let text = THP_MEMCG
        .replace("memory = \"2G\"", "memory = \"1G\"")
        .replace("[[memcg]]\nname = \"m\"\nmax = \"600M\"\n", "");
    let mut k = kernel(&text);
    let mut ops = Vec::new();
    punch_holes(&mut ops);
    ops.push(mmap(1, 600 * MIB, ThpAdvice::NoHugepage));
    ops.push(write(1, 0, 600 * MIB));
    run(&mut k, vec![process("app", ops)]);
    assert!(ev(&k, VmEvent::ThpSplitPage) > 0);
    assert_eq!(k.mms[0].rss_anon, (256 * MIB + 600 * MIB) as u64);
}

/// 4 threads of one process (or 4 processes) on 2 CPUs, each faulting its own 16 MiB VMA
/// (4K pages) and paging it out while the others run; swap on a RAM disk. mm_cpumask keeps
/// only CPUs running the mm now (window 0).
fn four_tasks(threads: bool) -> (Kernel, Vec<Task>) {
    let text = r#"
check_invariants = true
[machine]
cpus = 2
memory = "512M"
[[machine.swap]]
kind = "ramdisk"
size = "256M"
[kernel]
version = "6.18"
[costs]
mm_cpumask_window_ns = 0
[[workload]]
kind = "usemem"
nproc = 1
size = "1M"
"#;
    let mut k = kernel(text);
    let specs = (0..4u32)
        .map(|i| {
            let ops = vec![
                mmap(i, 16 * MIB, ThpAdvice::Default),
                write(i, 0, 16 * MIB),
                Op::Compute { ns: 2 * MS },
                madvise(i, 0, 16 * MIB, Advice::Pageout),
                Op::Compute { ns: 20 * MS },
                Op::Exit,
            ];
            let name = format!("task{i}");
            if threads && i > 0 {
                thread_of(0, &name, ops)
            } else {
                process(&name, ops)
            }
        })
        .collect();
    let (tasks, _) = run(&mut k, specs);
    (k, tasks)
}

#[test]
fn threads_share_one_mm_fault_on_both_cpus_and_shoot_each_other_down() {
    let (k, tasks) = four_tasks(true);
    assert_eq!(k.mms.len(), 1, "one mm for the four threads");
    assert!(tasks.iter().take(4).all(|t| t.mm == 0));
    assert_eq!(ev(&k, VmEvent::Pgfault), 4 * 16 * MIB as u64);
    // A page-out while another thread runs on the other CPU interrupts it.
    assert!(ev(&k, VmEvent::NrTlbRemoteFlush) > 0);
    // The mm went once, with the last thread: everything unmapped and uncharged.
    assert_eq!(k.mms[0].mm_users, 0);
    assert!(k.mms[0].vmas.iter().all(|v| v.is_none()));
    assert_eq!(k.mms[0].rss_anon + k.mms[0].swap_ents, 0);
    assert_eq!(k.memcgs[0].usage_pages, 0);

    // Four processes instead: each CPU runs another mm, so no shootdown reaches it.
    let (k, _) = four_tasks(false);
    assert_eq!(k.mms.len(), 4);
    assert_eq!(ev(&k, VmEvent::NrTlbRemoteFlush), 0);
    assert_eq!(ev(&k, VmEvent::Pgfault), 4 * 16 * MIB as u64);
}

#[test]
fn the_first_thread_to_exit_leaves_the_mm_to_the_others() {
    // Thread 0 maps and touches half of VMA 0 and exits at once; threads 1-3 touch the other
    // half later: the VMA must still be there.
    let mut k = kernel(MADVISE);
    let mut specs = vec![process(
        "t0",
        vec![
            mmap(0, 8 * MIB, ThpAdvice::Default),
            write(0, 0, 4 * MIB),
            Op::Exit,
        ],
    )];
    for i in 1..4u32 {
        specs.push(thread_of(
            0,
            &format!("t{i}"),
            vec![
                Op::Compute { ns: 20 * MS },
                write(0, 4 * MIB + (i - 1) * MIB, MIB),
                Op::Exit,
            ],
        ));
    }
    let (tasks, _) = run(&mut k, specs);
    let exits: Vec<u64> = tasks
        .iter()
        .take(4)
        .map(|t| t.exited_at_ns.unwrap())
        .collect();
    assert!(exits[0] < exits[1].min(exits[2]).min(exits[3]), "{exits:?}");
    assert_eq!(ev(&k, VmEvent::Pgfault), 7 * MIB as u64);
    assert_eq!(k.mms[0].mm_users, 0);
    assert_eq!(k.memcgs[0].usage_pages, 0);
}

#[test]
fn khugepaged_runs_are_deterministic() {
    let a = collapse_scenario();
    let b = collapse_scenario();
    assert_eq!(a.0.vm_events().to_map(), b.0.vm_events().to_map());
    assert_eq!(a.2.steps, b.2.steps);
    assert_eq!(a.2.simulated_ns, b.2.simulated_ns);
    let times = |t: &[Task]| -> Vec<(u64, u64, u64)> {
        t.iter().map(|t| (t.sys_ns, t.user_ns, t.wakeups)).collect()
    };
    assert_eq!(times(&a.1), times(&b.1));
}

#[test]
fn with_pmd_thp_never_there_is_no_khugepaged() {
    // Only 64K enabled: the thread does not exist and MADV_HUGEPAGE registers nothing.
    let text = MADVISE.replace(
        "[sysfs]\nthp_enabled = \"madvise\"",
        "[sysfs]\nthp_enabled = \"never\"\n[sysfs.hugepages]\n\"64K\" = \"always\"",
    );
    let mut k = kernel(&text);
    let khugepaged = foliosim_model::mm::kthread::KthreadKind::Khugepaged;
    assert!(!k.kthreads.kinds.contains(&khugepaged));
    let ops: Vec<Op> = [
        mmap(0, 4 * PMD, ThpAdvice::Default),
        write(0, 0, 4 * PMD),
        madvise(0, 0, 4 * PMD, Advice::Hugepage),
    ]
    .into_iter()
    .chain(compute(100 * MS))
    .collect();
    run(&mut k, vec![process("app", ops)]);
    assert!(k.khugepaged.slots().is_empty());
    assert!(!k.mms[0].khugepaged_registered);
    assert_eq!(ev(&k, VmEvent::ThpCollapseAlloc), 0);
    assert!(k.vm_events().get_mthp(4, MthpStat::AnonFaultAlloc) > 0);
}
