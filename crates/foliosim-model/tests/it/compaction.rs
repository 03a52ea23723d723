//! Compaction end to end on a 128 MiB machine without swap: memory fragmented by a process
//! that writes 80 MiB of 4 KiB folios and drops two of every three pages (MADV_DONTNEED),
//! then asked for THPs. Direct compaction migrates the pages left behind and the THP faults
//! succeed; pinned pages keep their pageblocks; sync failures defer the next attempts;
//! kcompactd compacts when woken and proactively; runs are deterministic. Invariants on.

use foliosim_model::content::ContentClass;
use foliosim_model::engine::Ctx;
use foliosim_model::mm::compaction::{
    try_to_compact_pages, CompactPriority, CompactResult, Contended,
};
use foliosim_model::mm::gfp::Gfp;
use foliosim_model::mm::invariants::check;
use foliosim_model::mm::madvise::Advice;
use foliosim_model::mm::mmap::ThpAdvice;
use foliosim_model::mm::page_alloc::{alloc_pages, AllocFlags, PAGEBLOCK_NR_PAGES};
use foliosim_model::mm::vmstat::VmEvent;
use foliosim_model::mm::Kernel;
use foliosim_model::sched::{run_tasks, Task};
use foliosim_model::workload::Op;
use foliosim_model::Scenario;
use std::collections::BTreeMap;

/// 32768 pages, 64 pageblocks; no swap (unless a test adds it), so reclaim frees nothing and
/// only compaction can make a free 2 MiB block. `{sysctl}` and `{sysfs}` lines are added per
/// test.
const MACHINE: &str = r#"
check_invariants = true
[machine]
cpus = 2
memory = "128M"
{swap}
[kernel]
version = "6.18"
[sysfs]
{sysfs}
[sysfs.hugepages]
"2M" = "always"
[sysctl.vm]
{sysctl}
[[workload]]
kind = "usemem"
nproc = 1
size = "4M"
"#;

/// Pages of the fragmenting region: 40 pageblocks' worth.
const FRAG_PAGES: u32 = 20480;
/// Pages of the THP region: 32 THPs, more than the free pageblocks left after fragmenting.
const THP_PAGES: u32 = 16384;

fn kernel(sysfs: &str, sysctl: &str) -> Kernel {
    kernel_with_swap(sysfs, sysctl, "")
}

fn kernel_with_swap(sysfs: &str, sysctl: &str, swap: &str) -> Kernel {
    let text = MACHINE
        .replace("{swap}", swap)
        .replace("{sysfs}", sysfs)
        .replace("{sysctl}", sysctl);
    Kernel::new(&Scenario::from_toml_str(&text).unwrap_or_else(|e| panic!("{e}")))
}

/// Write `FRAG_PAGES` of 4 KiB folios (VMA 0, MADV_NOHUGEPAGE), then drop two pages of every
/// three: each pageblock they filled keeps a third of its pages, in single pages. (Not one in
/// four: the free scanner's stride of 32 would only ever land on the pages kept.)
fn fragment() -> Vec<Op> {
    let mut ops = vec![
        Op::Mmap {
            vma: 0,
            nr_pages: FRAG_PAGES,
            thp: ThpAdvice::NoHugepage,
        },
        Op::Touch {
            vma: 0,
            first: 0,
            nr: FRAG_PAGES,
            write: true,
        },
    ];
    for kept in (0..FRAG_PAGES).step_by(3) {
        ops.push(Op::Madvise {
            vma: 0,
            first: kept + 1,
            nr: 2.min(FRAG_PAGES - kept - 1),
            advice: Advice::Dontneed,
        });
    }
    ops
}

/// Write `THP_PAGES` of a MADV_HUGEPAGE region (VMA 1): a THP fault per 2 MiB.
fn thp_phase() -> Vec<Op> {
    vec![
        Op::Mmap {
            vma: 1,
            nr_pages: THP_PAGES,
            thp: ThpAdvice::Hugepage,
        },
        Op::Touch {
            vma: 1,
            first: 0,
            nr: THP_PAGES,
            write: true,
        },
    ]
}

/// Run one task of `ops` to its end (no Exit: its mm stays mapped for inspection). Returns
/// the mm.
fn run(k: &mut Kernel, ops: Vec<Op>) -> u32 {
    let mm = k.new_mm(0, ContentClass::Usemem);
    let mut tasks = vec![Task::new("t".into(), mm, 0, ops)];
    run_tasks(k, &mut tasks, 1, 3_000_000, true, &mut |_, _| {}).unwrap();
    mm
}

fn pfn_of(k: &Kernel, mm: u32, vma: u32, index: u32) -> u32 {
    k.mms[mm as usize].vma(vma).ptes[index as usize].pfn()
}

/// Free blocks of a pageblock or more.
fn free_pageblocks(k: &Kernel) -> u32 {
    let area = k.zone.free_area();
    area.nr_free(9) + 2 * area.nr_free(10)
}

fn ev(k: &Kernel, e: VmEvent) -> u64 {
    k.vm_events().get(e)
}

#[test]
fn direct_compaction_makes_room_for_thps_in_fragmented_memory() {
    let with_thps = |sysctl: &str| {
        let mut k = kernel("", sysctl);
        let mut ops = fragment();
        ops.extend(thp_phase());
        run(&mut k, ops);
        check(&k).unwrap();
        k
    };
    let k = with_thps("compaction_proactiveness = 0");
    let thps = ev(&k, VmEvent::ThpFaultAlloc);
    assert!(ev(&k, VmEvent::CompactStall) > 0);
    assert!(ev(&k, VmEvent::CompactSuccess) > 0);
    assert!(ev(&k, VmEvent::PgmigrateSuccess) > 0);
    assert!(ev(&k, VmEvent::CompactIsolated) >= ev(&k, VmEvent::PgmigrateSuccess));
    assert!(ev(&k, VmEvent::CompactMigrateScanned) > 0);
    assert!(ev(&k, VmEvent::CompactFreeScanned) > 0);
    assert_eq!(ev(&k, VmEvent::PgmigrateFail), 0, "nothing is pinned");
    assert_eq!(
        ev(&k, VmEvent::ThpMigrationSuccess),
        0,
        "a THP is never compacted"
    );
    // Compaction that never runs (every fragmentation index is at most 1000): only the free
    // pageblocks become THPs.
    let base = with_thps("compaction_proactiveness = 0\nextfrag_threshold = 1000");
    assert_eq!(ev(&base, VmEvent::CompactStall), 0);
    assert_eq!(ev(&base, VmEvent::PgmigrateSuccess), 0);
    let base_thps = ev(&base, VmEvent::ThpFaultAlloc);
    assert!(
        thps > base_thps + 4,
        "{thps} THPs with compaction, {base_thps} without"
    );
    assert!(ev(&base, VmEvent::ThpFaultFallback) > ev(&k, VmEvent::ThpFaultFallback));
}

#[test]
fn a_pinned_page_keeps_its_pageblock_from_being_compacted() {
    // Page 4098 of the region (a page kept by the fragmenting) and its neighbour 4101 share a
    // pageblock in the lower half of the region, which compact_memory empties.
    let (pinned, neighbour) = (4098, 4101);
    let setup = |pin: bool, compact: bool| {
        let mut k = kernel("", "compaction_proactiveness = 0");
        let mut ops = fragment();
        if pin {
            ops.push(Op::Pin {
                vma: 0,
                first: pinned,
                nr: 1,
            });
        }
        if compact {
            ops.push(Op::CompactMemory);
        }
        let mm = run(&mut k, ops);
        check(&k).unwrap();
        (k, mm)
    };
    let (before, mm) = setup(true, false);
    let (p0, n0) = (
        pfn_of(&before, mm, 0, pinned),
        pfn_of(&before, mm, 0, neighbour),
    );
    assert_eq!(
        p0 / PAGEBLOCK_NR_PAGES,
        n0 / PAGEBLOCK_NR_PAGES,
        "the two pages share a pageblock"
    );
    let (after, mm) = setup(true, true);
    assert_eq!(pfn_of(&after, mm, 0, pinned), p0, "the pinned page stayed");
    assert_ne!(pfn_of(&after, mm, 0, neighbour), n0, "its neighbour moved");
    assert!(
        after
            .zone
            .free_area()
            .buddy_order(p0 & !(PAGEBLOCK_NR_PAGES - 1))
            != Some(9),
        "the pinned page's pageblock is not free"
    );
    assert!(free_pageblocks(&after) > free_pageblocks(&before) + 8);
    assert!(ev(&after, VmEvent::PgmigrateSuccess) > 0);
    assert_eq!(
        ev(&after, VmEvent::CompactStall),
        0,
        "compact_memory is not a stall"
    );
    // Unpinned, the same page moves with the others.
    let (free, mm) = setup(false, true);
    assert_ne!(pfn_of(&free, mm, 0, pinned), p0);
    assert!(free_pageblocks(&free) > free_pageblocks(&after));
}

#[test]
fn sync_failures_defer_the_next_attempts() {
    let mut k = kernel("", "compaction_proactiveness = 0");
    // A pin on every 96th page (a kept one): no fragmented pageblock can be emptied.
    let mut ops = fragment();
    ops.extend((0..FRAG_PAGES).step_by(96).map(|first| Op::Pin {
        vma: 0,
        first,
        nr: 1,
    }));
    run(&mut k, ops);
    let mut ctx = Ctx::new(0, 1 << 40);
    // Take every free pageblock (with the pages on per-CPU lists merged back), so only
    // compaction could make one.
    k.zone.drain_all_pages(&mut ctx);
    let mut held = Vec::new();
    while let Some(pfn) = alloc_pages(&mut k, &mut ctx, Gfp::GFP_TRANSHUGE_LIGHT, 9) {
        held.push(pfn);
    }
    assert!(held.len() > 4, "{} free pageblocks", held.len());
    let flags = AllocFlags::WMARK_MIN;
    // Async failures never defer.
    let dc = try_to_compact_pages(
        &mut k,
        &mut ctx,
        Gfp::GFP_TRANSHUGE,
        9,
        flags,
        CompactPriority::Async,
    );
    let (r, page) = (dc.result, dc.page);
    assert!(page.is_none() && r != CompactResult::Success, "{r:?}");
    assert_ne!(r, CompactResult::Skipped, "compaction ran");
    assert_eq!(k.compaction.zone.defer_shift, 0);
    // Sync (light) ones do: after the k-th failure, 2^k - 1 attempts are deferred.
    let mut results = Vec::new();
    for _ in 0..15 {
        let dc = try_to_compact_pages(
            &mut k,
            &mut ctx,
            Gfp::GFP_TRANSHUGE,
            9,
            flags,
            CompactPriority::SyncLight,
        );
        let (r, page) = (dc.result, dc.page);
        assert!(page.is_none());
        results.push(r == CompactResult::Deferred);
    }
    let ran: Vec<usize> = (0..15).filter(|&i| !results[i]).collect();
    assert_eq!(ran, [0, 2, 6, 14], "attempts that ran: {results:?}");
    assert_eq!(results.iter().filter(|&&d| d).count(), 1 + 3 + 7);
    assert_eq!(k.compaction.zone.defer_shift, 4);
    // The thoroughest priority ignores deferral.
    let dc = try_to_compact_pages(
        &mut k,
        &mut ctx,
        Gfp::GFP_TRANSHUGE,
        9,
        flags,
        CompactPriority::SyncFull,
    );
    let (r, page) = (dc.result, dc.page);
    assert_ne!(r, CompactResult::Deferred);
    held.extend(page);
    assert!(ev(&k, VmEvent::PgmigrateSuccess) > 0);
    for pfn in held {
        k.zone.free(&mut ctx, pfn, 9);
    }
    check(&k).unwrap();
}

#[test]
fn kcompactd_compacts_for_thp_faults_that_only_wake_kswapd() {
    // defrag=defer: THP faults never compact themselves; they wake kswapd, which has nothing
    // to reclaim (no swap) and fails; once it has failed 16 times the node is hopeless, and
    // the faults wake kcompactd instead. Each probe touches one page of a fresh 2 MiB region
    // (a THP, or a 4 KiB page when that fails), then computes 1 ms.
    let mut k = kernel("defrag = \"defer\"", "compaction_proactiveness = 0");
    let mut ops = fragment();
    let regions = 64;
    ops.push(Op::Mmap {
        vma: 1,
        nr_pages: regions * 512,
        thp: ThpAdvice::Hugepage,
    });
    for r in 0..regions {
        ops.push(Op::Touch {
            vma: 1,
            first: r * 512,
            nr: 1,
            write: true,
        });
        ops.push(Op::Compute { ns: 1_000_000 });
    }
    run(&mut k, ops);
    check(&k).unwrap();
    assert_eq!(ev(&k, VmEvent::CompactStall), 0, "no direct compaction");
    assert!(k.kswapd.kswapd_failures >= 16, "kswapd gave up");
    assert!(ev(&k, VmEvent::CompactDaemonWake) > 0);
    assert!(ev(&k, VmEvent::CompactDaemonMigrateScanned) > 0);
    assert!(ev(&k, VmEvent::PgmigrateSuccess) > 0);
    // The same without kcompactd's compaction (never suitable): fewer THPs.
    let mut base = kernel(
        "defrag = \"defer\"",
        "compaction_proactiveness = 0\nextfrag_threshold = 1000",
    );
    let mut ops = fragment();
    ops.push(Op::Mmap {
        vma: 1,
        nr_pages: regions * 512,
        thp: ThpAdvice::Hugepage,
    });
    for r in 0..regions {
        ops.push(Op::Touch {
            vma: 1,
            first: r * 512,
            nr: 1,
            write: true,
        });
        ops.push(Op::Compute { ns: 1_000_000 });
    }
    run(&mut base, ops);
    assert_eq!(ev(&base, VmEvent::CompactDaemonWake), 0);
    assert!(ev(&k, VmEvent::ThpFaultAlloc) > ev(&base, VmEvent::ThpFaultAlloc));
}

#[test]
fn kswapd_going_to_sleep_asks_kcompactd_for_its_order() {
    use foliosim_model::mm::vmscan::kswapd::{kswapd_run, kswapd_should_run};
    let swap = "[[machine.swap]]\nkind = \"ramdisk\"\nsize = \"64M\"";
    let mut k = kernel_with_swap("", "compaction_proactiveness = 0", swap);
    run(&mut k, fragment());
    // Woken for a THP, as a failed order-9 allocation would.
    k.kswapd.kswapd_order = 9;
    k.kswapd.woken = true;
    let mut ctx = Ctx::new(0, 1 << 40);
    while kswapd_should_run(&k) {
        kswapd_run(&mut k, &mut ctx);
    }
    assert_eq!(k.compaction.kcompactd.max_order, 9);
    check(&k).unwrap();
}

#[test]
fn kcompactd_compacts_proactively_above_the_score() {
    // proactiveness 90: compact while more than 20% (leeway 10) of free memory is in blocks
    // below 2 MiB. After fragmenting, the task computes for 1.2 s: two 500 ms checks.
    let go = |proactiveness: u32| {
        let mut k = kernel("", &format!("compaction_proactiveness = {proactiveness}"));
        let mut ops = fragment();
        ops.push(Op::Compute { ns: 1_200_000_000 });
        run(&mut k, ops);
        check(&k).unwrap();
        k
    };
    let k = go(90);
    assert!(ev(&k, VmEvent::CompactDaemonMigrateScanned) > 0);
    assert!(ev(&k, VmEvent::PgmigrateSuccess) > 0);
    assert_eq!(
        ev(&k, VmEvent::CompactDaemonWake),
        0,
        "timer, not a wake-up"
    );
    let off = go(0);
    assert_eq!(ev(&off, VmEvent::PgmigrateSuccess), 0);
    assert!(free_pageblocks(&k) > free_pageblocks(&off));
    use foliosim_model::mm::compaction::fragmentation::fragmentation_score_node;
    assert!(
        fragmentation_score_node(k.zone.free_area())
            < fragmentation_score_node(off.zone.free_area())
    );
}

#[test]
fn compaction_runs_are_deterministic() {
    let go = || {
        let mut k = kernel("", "compaction_proactiveness = 20");
        let mut ops = fragment();
        ops.extend(thp_phase());
        ops.push(Op::CompactMemory);
        let mm = run(&mut k, ops);
        let layout: Vec<u32> = (0..THP_PAGES)
            .step_by(512)
            .map(|i| pfn_of(&k, mm, 1, i))
            .collect();
        let counters: BTreeMap<String, u64> = k.vm_events().to_map();
        (counters, layout, k.zone.buddyinfo())
    };
    let a = go();
    assert!(a.0["pgmigrate_success"] > 0);
    assert_eq!(a, go());
}

/// The 4.1 profile's kernel: the same machine.
fn kernel_v4_1() -> Kernel {
    let text = MACHINE
        .replace("version = \"6.18\"", "version = \"4.1\"")
        .replace("{swap}", "")
        .replace("{sysfs}", "")
        .replace("{sysctl}", "");
    Kernel::new(&Scenario::from_toml_str(&text).unwrap_or_else(|e| panic!("{e}")))
}

/// Fragment memory and take every free pageblock, so only compaction can make one.
fn fragmented_and_full(k: &mut Kernel, ctx: &mut Ctx) -> Vec<u32> {
    run(k, fragment());
    k.zone.drain_all_pages(ctx);
    let mut held = Vec::new();
    while let Some(pfn) = alloc_pages(k, ctx, Gfp::GFP_TRANSHUGE_LIGHT, 9) {
        held.push(pfn);
    }
    held
}

#[test]
fn before_5_1_async_compaction_stops_when_another_task_wants_the_cpu() {
    for (mut k, stops) in [(kernel_v4_1(), true), (kernel("", ""), false)] {
        let mut ctx = Ctx::new(0, 1 << 40);
        let held = fragmented_and_full(&mut k, &mut ctx);
        // The tick has set need_resched: another task is runnable and the slice is over.
        ctx.resched_at_ns = ctx.now_ns;
        let migrated = ev(&k, VmEvent::PgmigrateSuccess);
        let dc = try_to_compact_pages(
            &mut k,
            &mut ctx,
            Gfp::GFP_TRANSHUGE,
            9,
            AllocFlags::WMARK_MIN,
            CompactPriority::Async,
        );
        if stops {
            assert_eq!(dc.contended, Contended::Sched);
            assert_eq!(dc.result, CompactResult::Contended);
            assert_eq!(
                ev(&k, VmEvent::PgmigrateSuccess),
                migrated,
                "nothing migrated"
            );
        } else {
            assert_ne!(dc.contended, Contended::Sched);
            assert!(ev(&k, VmEvent::PgmigrateSuccess) > migrated, "{dc:?}");
        }
        for pfn in held.into_iter().chain(dc.page) {
            k.zone.free(&mut ctx, pfn, 9);
        }
        check(&k).unwrap();
    }
}

#[test]
fn on_4_1_a_thp_fault_falls_back_without_reclaim_when_compaction_is_deferred_or_contended() {
    let mut k = kernel_v4_1();
    let mut ctx = Ctx::new(0, 1 << 40);
    let held = fragmented_and_full(&mut k, &mut ctx);
    assert!(held.len() > 4, "{} free pageblocks", held.len());
    // 4.1's THP fault under defrag=always: GFP_TRANSHUGE with __GFP_NORETRY.
    let fault_gfp = Gfp::transhuge_of(foliosim_model::scenario::Release::V4_1);
    let allocstall =
        |k: &Kernel| ev(k, VmEvent::AllocstallNormal) + ev(k, VmEvent::AllocstallMovable);
    let before = |k: &Kernel| {
        (
            allocstall(k),
            ev(k, VmEvent::CompactStall),
            ev(k, VmEvent::CompactFail),
        )
    };
    // Asked to reschedule: the async run stops, counts a failed stall, and the fault does
    // not go on to reclaim.
    ctx.resched_at_ns = ctx.now_ns;
    let (stalls, compact_stall, compact_fail) = before(&k);
    assert_eq!(alloc_pages(&mut k, &mut ctx, fault_gfp, 9), None);
    assert_eq!(allocstall(&k), stalls, "no direct reclaim");
    assert_eq!(ev(&k, VmEvent::CompactStall), compact_stall + 1);
    assert_eq!(ev(&k, VmEvent::CompactFail), compact_fail + 1);
    // Deferred after a sync failure (khugepaged's): no stall is counted, no reclaim.
    ctx.resched_at_ns = u64::MAX;
    k.compaction.zone.defer_compaction(9);
    let (stalls, compact_stall, _) = before(&k);
    assert_eq!(alloc_pages(&mut k, &mut ctx, fault_gfp, 9), None);
    assert_eq!(allocstall(&k), stalls);
    assert_eq!(ev(&k, VmEvent::CompactStall), compact_stall);
    for pfn in held {
        k.zone.free(&mut ctx, pfn, 9);
    }
    check(&k).unwrap();
}
