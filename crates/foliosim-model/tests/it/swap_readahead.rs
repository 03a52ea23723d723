//! Swap-in through the swap cache with readahead on a device without SWP_SYNCHRONOUS_IO
//! (mm/swap_readahead.rs): a sequential read-back reads ahead (swap_ra) and finds what it
//! read (swap_ra_hit) with fewer major faults than pages read; page-cluster 0 turns it off;
//! a read fault keeps the slot, so reclaim drops the clean page again without writing it,
//! where a write fault frees the slot and the page is written again; with swap more than half
//! full a read fault frees its slot too; zram still bypasses the swap cache.

use crate::common::{parse_shown, run_scenario_tasks};
use foliosim_model::content::ContentClass;
use foliosim_model::mm::invariants::check;
use foliosim_model::mm::Kernel;
use foliosim_model::sched::Task;
use foliosim_model::workload::Op;
use foliosim_model::Scenario;
use std::collections::BTreeMap;

const MIB_PAGES: u32 = 256;

/// 256 MiB, 2 CPUs, a memcg of `limit`, a swap device of `swap_kind` and `swap_size`, no
/// THP; `vm` lines go into [sysctl.vm].
fn scenario(limit: &str, swap_kind: &str, swap_size: &str, vm: &str) -> Scenario {
    let text = format!(
        r#"
seed = 5
check_invariants = true
[machine]
cpus = 2
memory = "256M"
[[machine.swap]]
kind = "{swap_kind}"
size = "{swap_size}"
[kernel]
version = "6.18"
[sysfs]
thp_enabled = "never"
[sysctl.vm]
{vm}
[[memcg]]
name = "cg"
max = "{limit}"
[[workload]]
kind = "usemem"
nproc = 1
size = "1M"
memcg = "cg"
"#
    );
    parse_shown(&text)
}

/// The counters at each mark of one task that writes `nr_pages` (mark 0), then touches them
/// all again in order, a load (`write` false) or a store (mark 1), in memcg "cg".
fn write_then_touch(
    s: &Scenario,
    nr_pages: u32,
    write: bool,
) -> (Kernel, Vec<BTreeMap<String, u64>>) {
    let mut k = Kernel::new(s);
    let memcg = k.memcg_id(Some("cg"));
    let mm = k.new_mm(memcg, ContentClass::Usemem);
    let touch = |write| Op::Touch {
        vma: 0,
        first: 0,
        nr: nr_pages,
        write,
    };
    let ops = vec![
        Op::Mmap {
            vma: 0,
            nr_pages,
            thp: Default::default(),
        },
        touch(true),
        Op::Mark(0),
        touch(write),
        Op::Mark(1),
    ];
    let mut tasks = vec![Task::new("t".into(), mm, 0, ops)];
    run_scenario_tasks(&mut k, &mut tasks, s);
    check(&k).unwrap();
    let marks = tasks[0].program().unwrap().marks.clone();
    (k, marks.into_iter().map(|m| m.unwrap().counters).collect())
}

/// Counter `name` from mark 0 to mark 1.
fn delta(marks: &[BTreeMap<String, u64>], name: &str) -> u64 {
    marks[1][name] - marks[0][name]
}

#[test]
fn a_sequential_read_back_reads_ahead_and_hits() {
    let s = scenario("32M", "ssd", "512M", "");
    let nr = 64 * MIB_PAGES;
    let (_, m) = write_then_touch(&s, nr, false);
    let (ra, hit) = (delta(&m, "swap_ra"), delta(&m, "swap_ra_hit"));
    let (majflt, pswpin) = (delta(&m, "pgmajfault"), delta(&m, "pswpin"));
    assert!(ra > nr as u64 / 4, "swap_ra {ra}");
    // Read in order, the pages read ahead are the next ones faulted: most are hits.
    assert!(hit * 10 > ra * 8, "swap_ra_hit {hit} of {ra}");
    // A hit is no major fault: far fewer major faults than pages read.
    assert!(majflt * 3 < pswpin, "pgmajfault {majflt}, pswpin {pswpin}");
    assert_eq!(majflt + hit, delta(&m, "pgfault") - delta(&m, "swpin_zero"));

    // page-cluster 0: no readahead, one read per major fault.
    let s0 = scenario("32M", "ssd", "512M", "page_cluster = 0");
    let (_, m0) = write_then_touch(&s0, nr, false);
    assert_eq!(delta(&m0, "swap_ra"), 0);
    assert_eq!(delta(&m0, "swap_ra_hit"), 0);
    assert_eq!(delta(&m0, "pgmajfault"), delta(&m0, "pswpin"));
    assert!(delta(&m0, "pgmajfault") > 3 * majflt);
}

#[test]
fn a_read_fault_keeps_the_slot_so_reclaim_drops_the_clean_page_without_writing() {
    let s = scenario("32M", "ssd", "512M", "");
    let nr = 64 * MIB_PAGES;
    let (_, read) = write_then_touch(&s, nr, false);
    let (_, written) = write_then_touch(&s, nr, true);
    // Both passes bring the pages back and push them out again under the limit; the loads
    // leave them clean on their slots, the stores free the slots and dirty them.
    assert!(delta(&read, "pswpin") > nr as u64 / 2);
    assert!(delta(&written, "pswpin") > nr as u64 / 2);
    // The loads write only the pages that had never been swapped out (the half still
    // resident after the first pass); the half read back is dropped again unwritten. The
    // stores write both halves.
    let (out_read, out_written) = (delta(&read, "pswpout"), delta(&written, "pswpout"));
    let half = nr as u64 / 2;
    assert!(out_read < half + half / 8, "pswpout after loads {out_read}");
    assert!(
        out_written > 2 * half - half / 8,
        "pswpout after stores {out_written}"
    );
    // Kept slots: after the loads the pages are still swapped (or cached on their slots).
    assert!(read[1]["nr_swapcached"] > 0);
}

#[test]
fn with_swap_more_than_half_full_a_read_fault_frees_its_slot() {
    // 64 MiB written through a 32 MiB memcg into 48 MiB of swap: two thirds of it used.
    let s = scenario("32M", "ssd", "48M", "");
    let nr = 64 * MIB_PAGES;
    let (_, full) = write_then_touch(&s, nr, false);
    let roomy = scenario("32M", "ssd", "512M", "");
    let (_, kept) = write_then_touch(&roomy, nr, false);
    // Freed slots: the pages read back are written again when pushed out.
    let (out_full, out_kept) = (delta(&full, "pswpout"), delta(&kept, "pswpout"));
    assert!(
        out_full > out_kept + nr as u64 / 4,
        "pswpout {out_full} (swap two thirds full) against {out_kept} (roomy)"
    );
}

#[test]
fn zram_still_swaps_in_outside_the_swap_cache() {
    let s = scenario("32M", "zram", "512M", "");
    let (_, m) = write_then_touch(&s, 64 * MIB_PAGES, false);
    assert_eq!(delta(&m, "swap_ra"), 0);
    assert_eq!(delta(&m, "pgmajfault"), delta(&m, "pswpin"));
}
