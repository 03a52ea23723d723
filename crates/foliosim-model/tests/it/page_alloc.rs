//! The page allocator's slow path and kswapd on a small kernel: which requests reclaim, retry
//! or give up (__alloc_pages_slowpath's rules per gfp), the reserve below the min watermark
//! that only reclaim's own stores may use, and kswapd reclaiming to the high watermark.

use foliosim_model::engine::Ctx;
use foliosim_model::mm::gfp::Gfp;
use foliosim_model::mm::invariants::check;
use foliosim_model::mm::memory::touch;
use foliosim_model::mm::mmap::ThpAdvice;
use foliosim_model::mm::page_alloc::{alloc_pages, alloc_pages_memalloc, Wmark};
use foliosim_model::mm::swap_devstore::ZRAM_GFP;
use foliosim_model::mm::vmscan::kswapd::{kswapd_run, kswapd_should_run};
use foliosim_model::mm::vmstat::VmEvent;
use foliosim_model::mm::Kernel;

/// 64 MiB: min_free_kbytes 1024 -> watermarks min 256, low 320, high 384 pages.
const SMALL: &str = r#"
[machine]
cpus = 2
memory = "64M"

[[machine.swap]]
kind = "zram"
size = "64M"

[kernel]
version = "6.18"

[[workload]]
kind = "usemem"
nproc = 1
size = "4M"
"#;

fn ctx() -> Ctx<'static> {
    Ctx::new(0, 0)
}

fn kernel(text: &str) -> Kernel {
    crate::common::kernel(text)
}

/// Allocate unmovable order-0 pages (nothing reclaimable holds them) until the allocator
/// says no: the zone is at its min watermark.
fn exhaust(k: &mut Kernel, c: &mut Ctx) -> u64 {
    let mut n = 0;
    while alloc_pages(k, c, Gfp::GFP_KERNEL, 0).is_some() {
        n += 1;
    }
    n
}

#[test]
fn watermarks_of_the_64_mib_machine() {
    let k = kernel(SMALL);
    let w = k.pgdat[0].zone.wmark;
    assert_eq!((w.min_pages, w.low_pages, w.high_pages), (256, 320, 384));
}

#[test]
fn an_allocation_stops_at_the_min_watermark_and_reclaim_stores_go_below() {
    let mut k = kernel(SMALL);
    let mut c = ctx();
    exhaust(&mut k, &mut c);
    let free = k.pgdat[0].zone.nr_free_pages();
    assert!(
        free <= k.pgdat[0].zone.wmark_pages(Wmark::Min) + 1,
        "{free} free pages left"
    );
    // With nothing reclaimable, GFP_KERNEL reclaimed once (no progress), then gave up.
    assert_eq!(k.vmstat.get(VmEvent::AllocstallNormal), 1);
    assert!(kswapd_should_run(&k, 0), "the slow path woke kswapd");
    // PF_MEMALLOC: zram storing what is swapped out takes the reserve.
    let mut below = 0;
    while {
        let p = &mut k.pgdat[0];
        alloc_pages_memalloc(&mut p.zone, &mut p.kswapd, &k.folios, &mut c, ZRAM_GFP, 0).is_some()
    } {
        below += 1;
    }
    assert!(below >= free, "only {below} of {free} reserve pages");
    assert_eq!(
        k.pgdat[0].zone.nr_free_pages() + k.pgdat[0].zone.nr_pcp_pages(),
        0
    );
}

#[test]
fn the_retry_rules_follow_the_gfp() {
    let mut k = kernel(SMALL);
    let mut c = ctx();
    exhaust(&mut k, &mut c);
    let stalls = |k: &Kernel| k.vmstat.get(VmEvent::AllocstallMovable);
    // THP fault under defrag=always without MADV_HUGEPAGE: costly and __GFP_NORETRY, the
    // compaction that comes first is skipped (no free pages to migrate into), so it gives up
    // before any reclaim.
    assert_eq!(
        alloc_pages(&mut k, &mut c, Gfp::GFP_TRANSHUGE.noretry(), 9),
        None
    );
    assert_eq!(stalls(&k), 0);
    // GFP_TRANSHUGE_LIGHT does not reclaim at all.
    assert_eq!(
        alloc_pages(&mut k, &mut c, Gfp::GFP_TRANSHUGE_LIGHT, 9),
        None
    );
    assert_eq!(stalls(&k), 0);
    // GFP_TRANSHUGE (MADV_HUGEPAGE): one round of direct reclaim, then costly gives up.
    assert_eq!(alloc_pages(&mut k, &mut c, Gfp::GFP_TRANSHUGE, 9), None);
    assert_eq!(stalls(&k), 1);
    // An order-0 fault reclaims, and with no progress and nothing reclaimable fails (the
    // kernel's OOM killer; the caller reports OOM).
    assert_eq!(
        alloc_pages(&mut k, &mut c, Gfp::GFP_HIGHUSER_MOVABLE, 0),
        None
    );
    assert_eq!(stalls(&k), 2);
    assert_eq!(
        k.vmstat.get(VmEvent::CompactStall),
        0,
        "at the min watermark compaction is skipped (no free pages to migrate into)"
    );
}

#[test]
fn kswapd_reclaims_to_the_high_watermark() {
    let mut k = kernel(SMALL);
    let mut c = ctx();
    let memcg = k.memcg_id(None);
    let mm = k.new_mm(memcg, foliosim_model::content::ContentClass::Usemem);
    let pages = 16384;
    k.mms[mm as usize].mmap(0, pages, ThpAdvice::Default);
    // Fault pages in until an allocation falls below the low watermark and wakes kswapd.
    let mut index = 0;
    while !kswapd_should_run(&k, 0) {
        c.step_start_ns = c.now_ns;
        index += touch(&mut k, &mut c, mm, 0, index, pages, true).unwrap();
    }
    assert!(k.pgdat[0].zone.nr_free_pages() < k.pgdat[0].zone.wmark_pages(Wmark::Low));
    // Freshly faulted folios are young: the first run only marks them referenced (a trip
    // round the inactive list, as folio_check_references does) and counts a failure; kswapd
    // stays awake and the next run reclaims.
    let mut runs = 0;
    let mut reclaimed = 0;
    while kswapd_should_run(&k, 0) {
        runs += 1;
        assert!(runs <= 4, "kswapd still awake after {runs} runs");
        reclaimed += kswapd_run(&mut k, &mut c, 0);
    }
    assert!(reclaimed > 0);
    assert_eq!(
        k.pgdat[0].kswapd.kswapd_failures, 0,
        "progress resets the failures"
    );
    assert!(
        k.pgdat[0].zone.nr_free_pages() >= k.pgdat[0].zone.wmark_pages(Wmark::High),
        "kswapd stopped at {} free pages",
        k.pgdat[0].zone.nr_free_pages()
    );
    assert!(!kswapd_should_run(&k, 0), "balanced: kswapd sleeps");
    let v = k.vm_events();
    assert_eq!(v.get(VmEvent::Pageoutrun), runs);
    assert!(v.get(VmEvent::PgstealKswapd) > 0);
    assert!(v.get(VmEvent::PgscanKswapd) >= v.get(VmEvent::PgstealKswapd));
    assert_eq!(v.get(VmEvent::PgstealDirect), 0);
    assert!(v.get(VmEvent::PgallocNormal) >= index as u64);
    check(&k).unwrap();
}
