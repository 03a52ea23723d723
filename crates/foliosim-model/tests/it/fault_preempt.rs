//! A user fault gives up the CPU inside its allocation's slow path and resumes there
//! (mm/preempt.rs): stopped at a preemption point it resumes in reclaim without counting the
//! fault, allocstall or a fallback twice; preempted by another task it maps each page once;
//! throttled in reclaim it sleeps off the CPU while the flusher writes on the other CPU.

use foliosim_model::content::ContentClass;
use foliosim_model::engine::Ctx;
use foliosim_model::mm::gfp::Gfp;
use foliosim_model::mm::invariants::check;
use foliosim_model::mm::memory::touch;
use foliosim_model::mm::mmap::ThpAdvice;
use foliosim_model::mm::page_alloc::{alloc_pages, Wmark};
use foliosim_model::mm::vmscan::{do_try_to_free_pages, DirectReclaim};
use foliosim_model::mm::vmstat::{MthpStat, VmEvent};
use foliosim_model::mm::{Kernel, MmError};
use foliosim_model::sched::{run_tasks_observed, RunObserver, StepTrace, Task};
use foliosim_model::workload::Op;
use foliosim_model::Scenario;

const MIB_PAGES: u32 = 256;

/// 64 MiB, 1 or 2 CPUs, 256 MiB of zram swap, 64K mTHP always (PMD THP off).
fn swap_scenario(cpus: u32, slice_ns: u64) -> Scenario {
    let text = format!(
        r#"
seed = 3
check_invariants = true
[machine]
cpus = {cpus}
memory = "64M"
sched_slice_ns = {slice_ns}
[[machine.swap]]
kind = "zram"
size = "256M"
[kernel]
version = "6.18"
[sysfs]
thp_enabled = "never"
[sysfs.hugepages]
"64K" = "always"
[[workload]]
kind = "usemem"
nproc = 1
size = "1M"
"#
    );
    crate::common::parse(&text)
}

/// What the scheduler does after a step: post kswapd's wake-up, take the posted wake-ups.
fn end_step(k: &mut Kernel, ctx: &Ctx) {
    foliosim_model::mm::vmscan::kswapd::post_kswapd_wakeup(k, ctx.now_ns);
    k.kthreads.clear_pending();
}

/// A kernel whose one anonymous VMA of `nr_pages` (order 0 only) is touched up to the point
/// where the next allocation needs direct reclaim. Returns the kernel, the mm and the next
/// page index.
fn under_pressure(nr_pages: u32) -> (Kernel, u32, Ctx<'static>) {
    let mut s = swap_scenario(1, 3_000_000);
    s.sysfs.hugepages.clear();
    let mut k = Kernel::new(&s);
    let mm = k.new_mm(0, ContentClass::Usemem);
    k.mms[mm as usize].mmap(0, nr_pages, ThpAdvice::default());
    let mut ctx = Ctx::new(0, 0);
    let mut index = 0;
    // Fill memory to the min watermark (each touch may reclaim, in one go).
    while k.pgdat[0].zone.nr_free_pages() > k.pgdat[0].zone.wmark_pages(Wmark::Min) + 64 {
        index += touch(&mut k, &mut ctx, mm, 0, index, nr_pages, true).unwrap();
    }
    (k, mm, ctx)
}

#[test]
fn a_stopped_reclaim_resumes_at_its_next_priority_and_counts_allocstall_once() {
    let (mut k, _mm, mut ctx) = under_pressure(64 * MIB_PAGES);
    let stalls = k.vmstat.get(VmEvent::AllocstallMovable);
    k.current.may_stop = true;
    // need_resched from the start: reclaim stops after its first priority.
    ctx.resched_at_ns = 0;
    let mut dr = DirectReclaim::default();
    let gfp = Gfp::GFP_HIGHUSER_MOVABLE;
    assert_eq!(
        do_try_to_free_pages(&mut k, &mut ctx, gfp, &mut dr, true),
        None
    );
    assert_eq!(dr.priority, Some(11), "{dr:?}");
    assert!(dr.started);
    assert_eq!(k.vmstat.get(VmEvent::AllocstallMovable), stalls + 1);
    assert_eq!(k.current.resched_stops, 1);
    // Resumed with the CPU to itself: it goes on from priority 11 to the end.
    end_step(&mut k, &ctx);
    ctx.resched_at_ns = u64::MAX;
    let reclaimed = do_try_to_free_pages(&mut k, &mut ctx, gfp, &mut dr, true).unwrap();
    assert!(reclaimed >= dr.reclaimed && reclaimed > 0);
    assert_eq!(dr.priority, None);
    assert_eq!(k.vmstat.get(VmEvent::AllocstallMovable), stalls + 1);
    // Not resumable (the 4.1 slow path, a kernel thread): never stops.
    let mut dr = DirectReclaim::default();
    ctx.resched_at_ns = 0;
    assert!(do_try_to_free_pages(&mut k, &mut ctx, gfp, &mut dr, false).is_some());
}

#[test]
fn a_fault_stopped_before_reclaim_resumes_once_counted() {
    let (mut k, mm, mut ctx) = under_pressure(64 * MIB_PAGES);
    let ptes = &k.mms[mm as usize].vma(0).ptes;
    let mut index = ptes.iter().position(|p| p.is_none()).unwrap() as u32;
    let stalls = k.vmstat.get(VmEvent::AllocstallMovable);
    // Touch page after page with need_resched set until a fault's allocation reaches
    // reclaim: it stops at __perform_reclaim's cond_resched, before reclaiming.
    ctx.resched_at_ns = 0;
    loop {
        let faults = k.vmstat.get(VmEvent::Pgfault);
        match touch(&mut k, &mut ctx, mm, 0, index, 64 * MIB_PAGES, true) {
            Err(MmError::Resched) => {
                assert_eq!(k.vmstat.get(VmEvent::Pgfault), faults + 1);
                break;
            }
            Ok(n) => index += n,
            Err(e) => panic!("{e}"),
        }
    }
    assert!(k.current.alloc_stopped());
    assert_eq!(k.current.resched_stops, 1);
    assert!(k.mms[mm as usize].vma(0).ptes[index as usize].is_none());
    assert_eq!(
        k.vmstat.get(VmEvent::AllocstallMovable),
        stalls,
        "stopped before reclaim"
    );
    let faults = k.vmstat.get(VmEvent::Pgfault);
    // The same access again, with the CPU to itself: the fault resumes and maps the page.
    end_step(&mut k, &ctx);
    ctx.resched_at_ns = u64::MAX;
    assert_eq!(
        touch(&mut k, &mut ctx, mm, 0, index, index + 1, true),
        Ok(1)
    );
    assert!(k.mms[mm as usize].vma(0).ptes[index as usize].is_present());
    assert!(!k.current.alloc_stopped() && k.current.fault.is_none());
    assert_eq!(
        k.vmstat.get(VmEvent::Pgfault),
        faults,
        "the resumed fault is not counted again"
    );
    assert_eq!(k.vmstat.get(VmEvent::AllocstallMovable), stalls + 1);
    check(&k).unwrap();
}

#[test]
fn a_reclaimer_that_woke_a_sleeping_kernel_thread_stops_at_its_next_preemption_point() {
    let (mut k, _mm, mut ctx) = under_pressure(64 * MIB_PAGES);
    k.current.may_stop = true;
    ctx.resched_at_ns = u64::MAX;
    let asleep = !k.pgdat[0].kswapd.woken;
    assert!(asleep);
    k.pgdat[0].kswapd.woken = true;
    assert!(foliosim_model::mm::preempt::cond_resched(&k, &ctx));
    // Posted (the scheduler placed it): no more reason to stop.
    k.pgdat[0].kswapd.posted = true;
    assert!(!foliosim_model::mm::preempt::cond_resched(&k, &ctx));
    // Not in a user fault's allocation: never.
    k.pgdat[0].kswapd.posted = false;
    k.current.may_stop = false;
    assert!(!foliosim_model::mm::preempt::cond_resched(&k, &ctx));
}

#[test]
fn an_allocation_resumes_in_its_slow_path_not_the_fast_path() {
    let (mut k, _mm, mut ctx) = under_pressure(64 * MIB_PAGES);
    let gfp = Gfp::GFP_HIGHUSER_MOVABLE;
    k.current.may_stop = true;
    ctx.resched_at_ns = 0;
    // Allocate (and keep) pages until one needs reclaim: it stops before reclaiming.
    while alloc_pages(&mut k, &mut ctx, gfp, 0).is_some() {}
    assert!(k.current.alloc_stopped());
    // Another request finds nothing saved for it; the stopped one resumes.
    assert!(k.current.take_alloc(gfp, 1).is_none());
    end_step(&mut k, &ctx);
    ctx.resched_at_ns = u64::MAX;
    assert!(alloc_pages(&mut k, &mut ctx, gfp, 0).is_some());
    assert!(!k.current.alloc_stopped());
}

/// Each step's trace, and the kernel's nr_written after it.
#[derive(Default)]
struct Steps {
    names: Vec<String>,
    steps: Vec<(StepTrace, u64)>,
}

impl RunObserver for Steps {
    fn start(&mut self, tasks: &[Task], _ncpus: usize) {
        self.names = tasks.iter().map(|t| t.name.clone()).collect();
    }
    fn wants_steps(&self) -> bool {
        true
    }
    fn step(&mut self, k: &Kernel, step: &StepTrace) {
        self.steps
            .push((*step, k.vm_events().get(VmEvent::NrWritten)));
    }
}

/// One task faulting `nr_pages` in (writes, sequentially) and, when `with_hog`, a second that
/// only computes; run to the end with invariants checked.
fn faulting_run(cpus: u32, slice_ns: u64, nr_pages: u32, with_hog: bool) -> (Kernel, Vec<Task>) {
    let s = swap_scenario(cpus, slice_ns);
    let mut k = Kernel::new(&s);
    let mut tasks = Vec::new();
    let mm = k.new_mm(0, ContentClass::Usemem);
    tasks.push(Task::new(
        "faulter".into(),
        mm,
        0,
        vec![
            Op::Mmap {
                vma: 0,
                nr_pages,
                thp: Default::default(),
            },
            Op::Touch {
                vma: 0,
                first: 0,
                nr: nr_pages,
                write: true,
            },
        ],
    ));
    if with_hog {
        let hog = k.new_mm(0, ContentClass::Usemem);
        tasks.push(Task::new(
            "hog".into(),
            hog,
            0,
            vec![Op::Compute { ns: 2_000_000_000 }, Op::Exit],
        ));
    }
    run_tasks_observed(
        &mut k,
        &mut tasks,
        s.seed,
        s.machine.sched_slice_ns,
        true,
        &mut |_, _| {},
        None,
    )
    .unwrap_or_else(|e| panic!("{e}"));
    (k, tasks)
}

#[test]
fn a_fault_preempted_in_reclaim_resumes_and_maps_each_page_once() {
    let nr_pages = 96 * MIB_PAGES;
    // One CPU shared with a hog, 20 us slices: reclaim often runs past the slice's end.
    let (k, tasks) = faulting_run(1, 20_000, nr_pages, true);
    let (resched, _, _) = tasks[0].fault_stops();
    assert!(resched > 0, "the faulter stopped {resched} times");
    let v = k.vm_events();
    let (alloc, fallback) = (
        v.get_mthp(4, MthpStat::AnonFaultAlloc),
        v.get_mthp(4, MthpStat::AnonFaultFallback),
    );
    // Every 64K range is faulted once: as one folio, or (its allocation failed) as 16 pages,
    // the first of which counted the fallback. A resumed fault counts neither twice.
    assert_eq!(alloc + fallback, (nr_pages / 16) as u64);
    assert_eq!(v.get(VmEvent::Pgfault), alloc + 16 * fallback);
    assert!(
        fallback > 0 && alloc > 0,
        "alloc {alloc} fallback {fallback}"
    );
    let m = &k.mms[tasks[0].mm as usize];
    assert_eq!(m.rss_anon + m.swap_ents, nr_pages as u64);
    check(&k).unwrap();

    // Alone on its CPU nothing preempts it: the same identities, no stop.
    let (k1, t1) = faulting_run(2, 20_000, nr_pages, false);
    assert_eq!(t1[0].fault_stops().0, 0);
    let v1 = k1.vm_events();
    let (a1, f1) = (
        v1.get_mthp(4, MthpStat::AnonFaultAlloc),
        v1.get_mthp(4, MthpStat::AnonFaultFallback),
    );
    assert_eq!(a1 + f1, (nr_pages / 16) as u64);
    assert_eq!(v1.get(VmEvent::Pgfault), a1 + 16 * f1);
}

#[test]
fn the_flusher_writes_on_the_other_cpu_while_the_dirtier_sleeps_in_reclaim() {
    // 96 MiB dirtied through a shared mapping, then anon pressure without swap: the
    // dirtier's direct reclaim meets only dirty page cache, wakes the flusher and sleeps in
    // reclaim_throttle; the flusher writes on the idle CPU meanwhile.
    let text = r#"
seed = 1
check_invariants = true
[machine]
cpus = 2
memory = "256M"
[machine.disk]
kind = "ssd"
size = "1G"
[[file]]
name = "data"
size = "96M"
[kernel]
version = "6.18"
[[workload]]
kind = "file_read"
file = "data"
"#;
    let s = Scenario::from_toml_str(text).unwrap();
    let mut k = Kernel::new(&s);
    let file = 96 * MIB_PAGES;
    let anon = 236 * MIB_PAGES;
    let mm = k.new_mm(0, ContentClass::Usemem);
    let mut tasks = vec![Task::new(
        "dirtier".into(),
        mm,
        0,
        vec![
            Op::MmapFile {
                vma: 0,
                file: 0,
                offset_pages: 0,
                nr_pages: file,
                shared: true,
            },
            Op::Touch {
                vma: 0,
                first: 0,
                nr: file,
                write: true,
            },
            Op::Munmap { vma: 0 },
            Op::Mmap {
                vma: 1,
                nr_pages: anon,
                thp: Default::default(),
            },
            Op::Touch {
                vma: 1,
                first: 0,
                nr: anon,
                write: true,
            },
        ],
    )];
    let mut obs = Steps::default();
    run_tasks_observed(
        &mut k,
        &mut tasks,
        s.seed,
        s.machine.sched_slice_ns,
        true,
        &mut |_, _| {},
        Some(&mut obs),
    )
    .unwrap_or_else(|e| panic!("{e}"));
    let (_, throttled, woke) = tasks[0].fault_stops();
    assert!(throttled > 0, "the dirtier never slept in reclaim");
    // Its reclaim woke the flusher (and kswapd): the step ended there, and they started on
    // the idle CPU from then.
    assert!(woke > 0);
    assert!(tasks[0].sleep_ns > 0);
    let flusher = obs.names.iter().position(|n| n.contains("flush")).unwrap();
    // The dirtier's throttle sleeps: from a step's release to its end.
    let sleeps: Vec<(u64, u64)> = obs
        .steps
        .iter()
        .filter(|(s, _)| s.tid == 0 && s.sleep_ns > 0)
        .map(|(s, _)| (s.release_ns, s.end_ns))
        .collect();
    let mut written_meanwhile = 0;
    let mut last_written = 0;
    for (s, written) in &obs.steps {
        if s.tid == flusher
            && sleeps
                .iter()
                .any(|&(from, to)| s.busy_from_ns >= from && s.busy_from_ns < to)
        {
            written_meanwhile += written - last_written;
        }
        last_written = *written;
    }
    assert!(
        written_meanwhile > MIB_PAGES as u64,
        "{written_meanwhile} pages written while the dirtier slept"
    );
    check(&k).unwrap();
}
