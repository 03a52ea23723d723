//! Inputs the fuzzers (fuzz/) and the soak (src/soak/) found to panic or break an invariant,
//! each kept as the smallest case that did: they must now give a clear error or run.

use foliosim::workload::trace::{self, Trace};
use foliosim::{Scenario, SimError};
use foliosim_lab::fuzz::{self, Outcome};

/// A trace replayed in fuzz::BASE_SCENARIO under a name of its own.
fn run_trace(name: &str, text: &str) -> Result<foliosim::RunResult, SimError> {
    let path = trace::register(name, Trace::parse(text).expect("a valid trace"));
    let scenario = fuzz::BASE_SCENARIO.replace(
        "kind = \"usemem\"\nnproc = 2\nsize = \"16M\"",
        &format!("kind = \"trace\"\npath = \"{path}\""),
    );
    let s = Scenario::from_toml_str(&scenario).unwrap();
    let r = foliosim::run(&s);
    trace::unregister(&path);
    r
}

/// A thread (clone) touches a VMA that its process's main thread unmaps later in the trace;
/// the replay orders threads only at clone/exec/wait, so the sim may run the munmap first.
/// It panicked ("access to an unmapped vma"); now the touch is a segmentation fault.
#[test]
fn trace_thread_touching_after_another_threads_munmap_is_an_error() {
    let text = "foliosim-trace 1\nbegin\n0 1 exec a\n1 1 mmap 1 64 anon\n2 2 clone 1\n\
                3 2 cpu 5000000\n4 2 touch 1 0 64 w\n5 2 exit\n6 1 munmap 1 0 64\n7 1 exit\nend 8\n";
    match run_trace("regression-thread-munmap", text) {
        Err(SimError::Mm { error, .. }) => {
            assert!(error.to_string().contains("vma 0 is not mapped"), "{error}")
        }
        other => panic!(
            "expected a segmentation fault: {:?}",
            other.map(|r| r.steps)
        ),
    }
}

#[test]
fn the_fuzz_targets_run_their_base_scenario() {
    assert!(matches!(fuzz::costs_file(b"[costs]\n"), Outcome::Ran));
}

/// A kept case (tests/regressions/NAME.toml) runs to the end, or ends in an error that is not
/// a broken invariant; never a panic.
fn run_kept(name: &str) {
    let path = format!(
        "{}/tests/regressions/{name}.toml",
        env!("CARGO_MANIFEST_DIR")
    );
    let text = std::fs::read_to_string(&path).unwrap();
    let mut s = Scenario::from_toml_str(&text).unwrap();
    s.check_invariants = true;
    match foliosim::run(&s) {
        Ok(_) | Err(SimError::Mm { .. }) => {}
        Err(e) => panic!("{name}: {e}"),
    }
}

/// The per-CPU swap slot cache, drained inside an allocation when swap ran low, released
/// slots that the same allocation handed out again; their release then wiped the new owner's
/// data ("referenced by 1 PTEs, not in the swap cache, and its data is nowhere").
#[test]
fn soak_2486_slots_released_by_an_allocation_keep_their_new_data() {
    run_kept("soak-2486-slot-cache-drain");
}

/// The non-contiguous swap-out fallback gave back the slots it took when it ran out, and the
/// split fallback's order-0 allocation took them again before their release was applied.
#[test]
fn soak_183_slots_given_back_by_the_noncontiguous_fallback_keep_their_new_data() {
    run_kept("soak-183-noncontiguous-giveback");
}

/// Compaction split a large folio still in the swap cache after its VMA was unmapped:
/// split_folio read the gone VMA's page table and panicked ("access to an unmapped vma").
#[test]
fn soak_3028_split_of_a_swap_cache_folio_whose_vma_is_gone() {
    run_kept("soak-3028-split-after-munmap");
}

/// file_read with more tasks than the file has pages gave a task an empty mapping and the
/// touch indexed past it ("index out of bounds: the len is 0"); now a validation error.
#[test]
fn soak_1463_file_read_needs_a_page_per_task() {
    let text = "[machine]\nmemory = \"64M\"\n[machine.disk]\nkind = \"ssd\"\nsize = \"4M\"\n\
                [[file]]\nname = \"f0\"\nsize = \"4K\"\n\
                [[workload]]\nkind = \"file_read\"\nfile = \"f0\"\nnproc = 2\n";
    let e = Scenario::from_toml_str(text).unwrap_err().to_string();
    assert!(
        e.contains("workload[0].nproc") && e.contains("1 ..= 1"),
        "{e}"
    );
}

/// The OOM killer killed trace-replay tasks (memory.oom.group) that others were to meet at
/// fork, exec and wait barriers: those waited forever and the run ended in a deadlock. Now a
/// killed task's barriers are dead: a waiting parent goes on, a child it was to fork never
/// starts.
#[test]
fn soak_4252_tasks_meeting_an_oom_killed_task_at_a_barrier_go_on() {
    run_kept("soak-4252-oom-kill-at-barrier");
}

/// kcompactd migrated a large folio in the swap cache whose slots still had swap references:
/// migration re-added its slots to the swap cache and tripped the assertion that they held
/// SWAP_HAS_CACHE only (seen with debug assertions, as tools/fuzz.sh builds). Now it only
/// repoints the cache (Swap::replace_swap_cache). The input is also in fuzz/corpus/scenario/.
#[test]
fn fuzz_migration_of_a_swap_cache_folio_with_swap_references() {
    run_kept("fuzz-migrate-swapcache-with-swap-refs");
}

/// A 4K anonymous folio was left allocated, on the LRU, unmapped (its PTE a hole) and out of
/// the swap cache (soak case 100344, kernel 6.10, trace replay with forks, memcg max 4M). The
/// kept case runs clean since the swap-in and reclaim changes merged after it was found; its
/// cause was not pinned down (the case no longer reaches that state), so it stays as a check.
#[test]
fn soak_100344_leaked_folio() {
    run_kept("soak-100344-leaked-folio");
}

/// A swap-cache folio written to zram, dirtied again and then stored by zswap left zram's
/// copy behind: the kernel keeps a slot's last device write until the slot is freed
/// (zram_slot_free_notify), so that is a stale copy, not a second owner. The invariant
/// allowed only zram data for a slot whose data is on the device (soak case 3742).
#[test]
fn soak_3742_zswap_entry_over_a_stale_zram_copy() {
    run_kept("soak-3742-zswap-and-zram-data");
}

/// A swap-cache folio over a stale zram copy (written to zram, dirtied, stored by zswap) was
/// swapped in from zswap: zswap_load frees the entry and the dirty folio is the data, but zram
/// keeps its copy until the slot is freed (zram_slot_free_notify). The invariant allowed a
/// stale zram copy only under a zswap entry or the zero map, not under no data (soak case
/// 540206).
#[test]
fn soak_540206_zswap_load_over_a_stale_zram_copy() {
    run_kept("soak-540206-zswap-load-over-stale-zram");
}

/// memory.high reclaim ran on every return to user space for the one page each fault charged,
/// 17 fruitless rounds each with the swap device full: a step of a few hundred faults took
/// minutes (soak cases 207382 and 300189 "hung"). The kernel checks memory.high only when a
/// charge refills the per-CPU stock and bills the batch (try_charge_memcg), once per 64 pages.
#[test]
fn soak_207382_memory_high_reclaim_once_per_charge_batch() {
    run_kept("soak-207382-hang-in-memory-high-reclaim");
}

#[test]
fn soak_300189_memory_high_reclaim_once_per_charge_batch() {
    run_kept("soak-300189-over-high-reclaim-per-page");
}

/// A 4K anonymous folio was left allocated, on the LRU, unmapped and out of the swap cache
/// (soak case 400002, THP always, swap on, forks; likely what case 100344 hit). The model gave
/// anonymous faults order-1 folios (`8K = "inherit"`), which no kernel does (THP_ORDERS_ALL_ANON):
/// deferred_split_folio cannot queue one left partially mapped, so reclaim's add_to_swap split
/// it, and its unmapped head, finding no swap slot, went back on the LRU owned by nobody. The
/// case runs without the 8K key, which is refused now.
#[test]
fn soak_400002_leaked_folio() {
    run_kept("soak-400002-leaked-folio");
    let path = format!(
        "{}/tests/regressions/soak-400002-leaked-folio.toml",
        env!("CARGO_MANIFEST_DIR")
    );
    let text = std::fs::read_to_string(&path).unwrap();
    let with_8k = text.replace(
        "[sysfs.hugepages]\n",
        "[sysfs.hugepages]\n8K = \"inherit\"\n",
    );
    assert_ne!(with_8k, text);
    let e = Scenario::from_toml_str(&with_8k).expect_err("an anonymous 8K THP size is refused");
    assert!(e.to_string().contains("8K"), "{e}");
}

/// khugepaged swapped in the pages of a range to collapse; a swap-in's charge OOM-killed the
/// process being collapsed and its exit unmapped the VMA, and the swap-in went on with it
/// ("access to an unmapped vma", soak case 508787). Now do_swap_page checks pte_same after its
/// allocations (the kernel's oom_reaper zaps the PTE: out_nomap) and the collapse fails
/// revalidation (SCAN_ANY_PROCESS).
#[test]
fn soak_508787_khugepaged_swapin_that_oom_kills_the_collapsed_process() {
    run_kept("soak-508787-khugepaged-swapin-oom-kill");
}

/// Swap readahead freed a page whose memcg charge failed to node 0's zone, though the
/// allocation had fallen back to a lower node ("index out of bounds: the len is 16 but the
/// index is 19", soak case 520103); it goes back to its own node now.
#[test]
fn soak_520103_readahead_frees_a_lower_node_page_to_its_node() {
    run_kept("soak-520103-readahead-free-on-lower-node");
}

/// A swap-cache folio whose write the ramdisk (brd, out of memory) refused stays dirty in the
/// cache, the only copy of its data; a zap of some of its swap PTEs (MADV_DONTNEED, munmap)
/// then took it out of the swap cache and freed it while other PTEs still referred to its
/// slots ("referenced by 1 PTEs, not in the swap cache, and its data is nowhere").
/// release_unmapped_folio now keeps a folio_swapped folio in the cache, as folio_free_swap does.
#[test]
fn soak_513370_zap_keeps_a_swap_cache_folio_other_ptes_refer_to() {
    run_kept("soak-513370-zap-frees-swapped-folio");
}

/// The same, on 6.18's percpu-order allocator with trace replay and usemem beside the tool.
#[test]
fn soak_514670_zap_keeps_a_swap_cache_folio_other_ptes_refer_to() {
    run_kept("soak-514670-zap-frees-swapped-folio");
}

/// The same on 4.1 with the non-contiguous fallback: the folio's slots spread over a swap file
/// and a ramdisk, the ramdisk refused its run, and munmap of part of the range freed the folio.
#[test]
fn soak_524616_zap_keeps_a_swap_cache_folio_other_ptes_refer_to() {
    run_kept("soak-524616-zap-frees-swapped-folio");
}

/// The same on 6.18's cluster-lists-c12 allocator with a 512K folio.
#[test]
fn soak_525507_zap_keeps_a_swap_cache_folio_other_ptes_refer_to() {
    run_kept("soak-525507-zap-frees-swapped-folio");
}

/// MIGRC: a block freed with a generation tag and captured by a direct compactor while it
/// merged (compaction_capture) left the buddy without its tags being taken, so the page was
/// in use with a flush still owed on it ("pfn 1952 is in use with MIGRC generation 1 still on
/// it"). The capture now takes the tags as a free-list removal does, and the captured page is
/// checked (check_flush_task_mgen) as prep_new_page checks any other.
#[test]
fn soak_3004354_migrc_tags_of_a_captured_block() {
    run_kept("soak-3004354-migrc-capture");
}
