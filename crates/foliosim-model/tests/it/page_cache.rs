//! The page cache: files read through a mapping or read(2) fill it (with readahead cutting
//! the major faults), memory pressure reclaims clean file pages (before anon, and without
//! swap at all), dirty shared pages are written back by the flusher, drop_caches empties
//! what is not mapped, runs are deterministic, and bad file operations are errors.

use foliosim_model::mm::gfp::Gfp;
use foliosim_model::mm::migrate::{
    folio_isolate_lru, migrate_pages, MigrateMode, MigrateReason, MigrationTarget,
};
use foliosim_model::mm::page_alloc::alloc_pages;
use foliosim_model::mm::{invariants, Kernel, MmError};
use foliosim_model::sched::{run_tasks, SimError, Task};
use foliosim_model::workload::Op;
use foliosim_model::{engine::Ctx, Scenario};

const MIB_PAGES: u32 = 256;

/// A machine of `memory` with a 1 GiB SSD holding file "data" of `file_mib`, and `rest`
/// (workloads, swap, sysctls) appended; invariants checked.
fn scenario(memory: &str, file_mib: u32, rest: &str) -> Scenario {
    let text = format!(
        r#"
seed = 1
check_invariants = true
[machine]
cpus = 2
memory = "{memory}"
[machine.disk]
kind = "ssd"
size = "1G"
[[file]]
name = "data"
size = "{file_mib}M"
[kernel]
version = "6.18"
{rest}
"#
    );
    parse_shown(&text)
}

/// A scenario for `run_ops`, which runs its own tasks (the workload table only validates).
fn ops_scenario(memory: &str, file_mib: u32, rest: &str) -> Scenario {
    scenario(memory, file_mib, &format!("{rest}\n{READ_MMAP}"))
}

use crate::common::{parse_shown, run};

/// A kernel after its tasks ran, and when they ended.
struct Ran {
    k: Kernel,
    end_ns: u64,
}

impl Ran {
    /// /proc/vmstat at the end.
    fn counter(&self, name: &str) -> u64 {
        self.k.vmstat_map(self.end_ns)[name]
    }
}

/// mmap of a file's first `nr_pages` (shared or private) as `vma`.
fn map_file(vma: u32, file: u32, nr_pages: u32, shared: bool) -> Op {
    Op::MmapFile {
        vma,
        file,
        offset_pages: 0,
        nr_pages,
        shared,
    }
}

/// An anonymous mapping of `nr_pages` as `vma`, THP as the scenario says.
fn map_anon(vma: u32, nr_pages: u32) -> Op {
    Op::Mmap {
        vma,
        nr_pages,
        thp: Default::default(),
    }
}

/// Read or write every page of the first `nr` of `vma`.
fn touch_all(vma: u32, nr: u32, write: bool) -> Op {
    Op::Touch {
        vma,
        first: 0,
        nr,
        write,
    }
}

/// Run one task per entry of `programs` (in the root memcg) on the kernel of `s`, to
/// completion, invariants checked; the kernel is returned for inspection.
fn run_ops(s: &Scenario, programs: Vec<Vec<Op>>) -> Result<Ran, SimError> {
    let mut k = Kernel::new(s);
    let mut tasks = Vec::new();
    for (i, ops) in programs.into_iter().enumerate() {
        let mm = k.new_mm(0, foliosim_model::content::ContentClass::Usemem);
        tasks.push(Task::new(format!("t{i}"), mm, 0, ops));
    }
    let stats = run_tasks(
        &mut k,
        &mut tasks,
        s.seed,
        s.machine.sched_slice_ns,
        true,
        &mut |_, _| {},
    )?;
    // A program without Exit ends without an exit time: its last step's end is the clock.
    let end_ns = tasks
        .iter()
        .map(|t| t.exited_at_ns.unwrap_or(0))
        .max()
        .unwrap_or(0)
        .max(stats.simulated_ns);
    Ok(Ran { k, end_ns })
}

const READ_MMAP: &str = r#"
[[workload]]
kind = "file_read"
file = "data"
"#;

#[test]
fn an_mmap_read_fills_the_cache_and_readahead_saves_the_major_faults() {
    let s = scenario("256M", 64, READ_MMAP);
    let r = run(&s);
    let pages = 64 * MIB_PAGES as u64;
    assert_eq!(r.counter("nr_file_pages"), pages);
    assert_eq!(r.counter("nr_inactive_file"), pages);
    assert_eq!(
        r.counter("nr_mapped"),
        0,
        "unmapped at the end, still cached"
    );
    assert_eq!(r.counter("pgpgin"), pages * 4, "KiB read");
    assert_eq!(r.memcg_stats["/"]["memory.current"], pages * 4096);
    // Read-around, then async readahead ahead of the reader: one miss in all.
    assert!(r.counter("pgmajfault") <= 2, "{}", r.counter("pgmajfault"));
    // Fault-around maps 16 pages per fault; PG_readahead pages fault on their own.
    assert!(r.counter("pgfault") < pages / 8, "{}", r.counter("pgfault"));
    assert!(r.cpu_iowait_ns > 0);

    // Without readahead every page is a major fault, read on its own.
    let mut s0 = s.clone();
    s0.machine.disk.as_mut().unwrap().read_ahead_kb = 0;
    let r0 = run(&s0);
    assert_eq!(r0.counter("pgmajfault"), pages);
    assert_eq!(r0.counter("pgpgin"), pages * 4);
    assert!(r0.simulated_ns > 3 * r.simulated_ns);
    assert!(r0.workloads[0].throughput_bytes_per_s < r.workloads[0].throughput_bytes_per_s / 3.0);
}

#[test]
fn read_syscalls_read_ahead_and_a_second_pass_activates_the_pages() {
    let s = scenario(
        "256M",
        16,
        r#"
[[workload]]
kind = "file_read"
file = "data"
mmap = false
passes = 2
"#,
    );
    let r = run(&s);
    let pages = 16 * MIB_PAGES as u64;
    assert_eq!(r.counter("pgpgin"), pages * 4, "the second pass hits");
    assert_eq!(r.counter("pgmajfault"), 0, "read(2) maps nothing");
    // folio_mark_accessed on each pass: referenced, then active.
    assert_eq!(r.counter("nr_active_file"), pages);
    assert_eq!(r.counter("pgactivate"), pages);
}

#[test]
fn anon_pressure_without_swap_reclaims_clean_file_pages() {
    // 128 MiB of cache, then 200 MiB of anon in 256 MiB: the file pages must go (no swap).
    let s = ops_scenario("256M", 128, "");
    let file = 128 * MIB_PAGES;
    let anon = 200 * MIB_PAGES;
    let k = run_ops(
        &s,
        vec![vec![
            map_file(0, 0, file, true),
            touch_all(0, file, false),
            map_anon(1, anon),
            touch_all(1, anon, true),
        ]],
    )
    .unwrap();
    let stolen = k.counter("pgsteal_file");
    assert!(stolen > 40 * MIB_PAGES as u64, "pgsteal_file {stolen}");
    // Both kswapd (below the low watermark) and the faulting task (below min) reclaimed.
    assert!(k.counter("pgsteal_kswapd") > 0 && k.counter("pgsteal_direct") > 0);
    assert_eq!(
        k.counter("pgsteal_kswapd") + k.counter("pgsteal_direct"),
        stolen
    );
    assert_eq!(k.counter("pgsteal_anon"), 0);
    assert_eq!(k.counter("pgscan_anon"), 0, "no swap: anon is not scanned");
    assert!(k.counter("nr_file_pages") < file as u64 - 40 * MIB_PAGES as u64);
    // Mapped pages were unmapped by reclaim (rmap through i_mmap): the rest stay mapped.
    assert_eq!(k.counter("nr_mapped"), k.k.mms[0].rss_file);
    assert_eq!(k.k.mms[0].rss_anon, anon as u64);
    invariants::check(&k.k).unwrap();
}

#[test]
fn with_swap_reclaim_takes_the_page_cache_first() {
    let s = ops_scenario(
        "256M",
        96,
        r#"
[[machine.swap]]
kind = "ssd"
size = "512M"
"#,
    );
    let file = 96 * MIB_PAGES;
    let anon = 200 * MIB_PAGES;
    let k = run_ops(
        &s,
        vec![vec![
            Op::ReadFile {
                file: 0,
                first: 0,
                nr: file,
            },
            map_anon(0, anon),
            touch_all(0, anon, true),
        ]],
    )
    .unwrap();
    let (file_stolen, anon_stolen) = (k.counter("pgsteal_file"), k.counter("pgsteal_anon"));
    // Reading once left the cache inactive and unreferenced twice over: cache_trim_mode
    // scans file only while the inactive file list is large.
    assert!(
        file_stolen > 4 * anon_stolen && file_stolen > 40 * MIB_PAGES as u64,
        "file {file_stolen} anon {anon_stolen}"
    );
}

#[test]
fn dirty_shared_pages_are_written_back_by_the_flusher() {
    let s = ops_scenario("256M", 16, "");
    let pages = 16 * MIB_PAGES;
    let k = run_ops(
        &s,
        vec![vec![map_file(0, 0, pages, true), touch_all(0, pages, true)]
            .into_iter()
            // Past dirty_expire_centisecs (30 s): kupdate writes the file back. (In short
            // steps: a step sees only the wake-ups known when it starts.)
            .chain(std::iter::repeat_n(Op::Compute { ns: 100_000_000 }, 400))
            .collect()],
    )
    .unwrap();
    assert_eq!(k.counter("nr_dirtied"), pages as u64);
    assert_eq!(k.counter("nr_written"), pages as u64);
    assert_eq!(k.counter("pgpgout"), pages as u64 * 4);
    assert_eq!(k.counter("nr_dirty"), 0);
    assert_eq!(k.counter("nr_writeback"), 0, "the writes completed");
    assert_eq!(k.counter("nr_mapped"), pages as u64);
}

#[test]
fn dirty_pages_under_pressure_are_written_then_reclaimed() {
    // 96 MiB dirtied through a shared mapping (background writeback cleans all but ~10% of
    // dirtyable memory), then anon pressure without swap beyond the clean part: reclaim finds
    // dirty pages, marks them for immediate reclaim and wakes the flusher; once written they
    // are freed.
    let s = ops_scenario("256M", 96, "");
    let file = 96 * MIB_PAGES;
    let anon = 236 * MIB_PAGES;
    let k = run_ops(
        &s,
        vec![vec![
            map_file(0, 0, file, true),
            touch_all(0, file, true),
            Op::Munmap { vma: 0 },
            map_anon(1, anon),
            touch_all(1, anon, true),
        ]],
    )
    .unwrap();
    // Dirty pages met by reclaim were marked and activated; written, they rotated back.
    assert!(k.counter("nr_vmscan_immediate_reclaim") > 0);
    assert!(k.counter("pgrotated") > 0);
    let written = k.counter("nr_written");
    assert!(written > 20 * MIB_PAGES as u64, "nr_written {written}");
    assert_eq!(k.counter("pgpgout"), written * 4);
    assert!(k.counter("pgsteal_file") > 20 * MIB_PAGES as u64);
    let flusher =
        k.k.kthreads
            .kinds
            .iter()
            .any(|t| t.name().contains("flush"));
    assert!(flusher);
}

#[test]
fn drop_caches_drops_what_is_not_mapped() {
    let s = ops_scenario("256M", 16, "");
    let pages = 16 * MIB_PAGES;
    let k = run_ops(
        &s,
        vec![vec![
            Op::ReadFile {
                file: 0,
                first: 0,
                nr: pages,
            },
            map_file(0, 0, 1024, false),
            touch_all(0, 1024, false),
            Op::DropCaches,
        ]],
    )
    .unwrap();
    assert_eq!(k.counter("drop_pagecache"), 1);
    assert_eq!(k.counter("nr_file_pages"), 1024, "the mapped pages stay");
    assert_eq!(k.counter("nr_mapped"), 1024);
    assert_eq!(k.k.memcgs[0].usage_pages, 1024);
}

#[test]
fn a_private_mapping_copies_the_pages_it_writes() {
    let s = ops_scenario("256M", 4, "");
    let pages = 4 * MIB_PAGES;
    let k = run_ops(
        &s,
        vec![vec![
            map_file(0, 0, pages, false),
            Op::Touch {
                vma: 0,
                first: 0,
                nr: pages / 2,
                write: false,
            },
            touch_all(0, pages, true),
        ]],
    )
    .unwrap();
    assert_eq!(k.counter("nr_dirtied"), 0, "the file is not written");
    assert_eq!(
        k.k.mms[0].rss_anon, pages as u64,
        "every page is a private copy"
    );
    assert_eq!(k.k.mms[0].rss_file, 0);
    assert_eq!(
        k.counter("nr_file_pages"),
        pages as u64,
        "the file stays cached"
    );
}

#[test]
fn pinning_a_file_mapping_faults_in_page_cache_pages() {
    // pin_user_pages faults absent pages in through handle_mm_fault, which must take a file
    // VMA's faults to the page cache, not make anonymous pages of them.
    let s = ops_scenario("256M", 4, "");
    let pages = MIB_PAGES;
    let k = run_ops(
        &s,
        vec![vec![
            map_file(0, 0, pages, true),
            Op::Pin {
                vma: 0,
                first: 0,
                nr: pages,
            },
        ]],
    )
    .unwrap();
    assert_eq!(k.k.mms[0].rss_anon, 0);
    assert_eq!(k.k.mms[0].rss_file, pages as u64);
    // Readahead may cache a little past the mapping.
    assert!(k.counter("nr_file_pages") >= pages as u64);
}

#[test]
fn the_same_file_scenario_gives_the_same_bytes() {
    let s = scenario(
        "128M",
        96,
        r#"
[[workload]]
kind = "file_read"
file = "data"
nproc = 2
[[workload]]
kind = "usemem"
nproc = 1
size = "80M"
sleep_s = 1
"#,
    );
    // usemem holds its memory (-s 1) until the reads are done, whatever the disk's speed:
    // the page cache must be reclaimed.
    let (a, b) = (run(&s), run(&s));
    assert_eq!(a.to_json(), b.to_json());
    assert!(a.counter("pgsteal_file") > 0);
}

#[test]
fn migrating_a_page_cache_folio_moves_the_slot_and_the_ptes() {
    let s = ops_scenario("64M", 1, "");
    let mut r = run_ops(
        &s,
        vec![vec![map_file(0, 0, 256, true), touch_all(0, 256, true)]],
    )
    .unwrap();
    let k = &mut r.k;
    let old = k.pagecache.files[0].as_ref().unwrap().pages[7];
    assert_eq!(k.mms[0].vma(0).ptes[7].pfn(), old);
    let mut ctx = Ctx::new(0, 1 << 40);
    // Compaction's path: isolate from the LRU, migrate to a page from the allocator.
    struct Target;
    impl MigrationTarget for Target {
        fn alloc(&mut self, k: &mut Kernel, ctx: &mut Ctx, order: u32) -> Option<u32> {
            alloc_pages(k, ctx, Gfp::GFP_HIGHUSER_MOVABLE, order)
        }
        fn free(&mut self, k: &mut Kernel, ctx: &mut Ctx, pfn: u32, order: u32) {
            k.pgdat[0].zone.free(ctx, pfn, order);
        }
    }
    folio_isolate_lru(k, old);
    let mut from = vec![old];
    let (failed, pages) = migrate_pages(
        k,
        &mut ctx,
        &mut from,
        &mut Target,
        MigrateMode::Sync,
        MigrateReason::Compaction,
    );
    assert_eq!((failed, pages), (Ok(0), 1));
    let new = k.pagecache.files[0].as_ref().unwrap().pages[7];
    assert_ne!(new, old);
    assert_eq!(k.mms[0].vma(0).ptes[7].pfn(), new);
    assert_eq!(k.folios.mapcount(new as usize), 1);
    invariants::check(k).unwrap();
}

#[test]
fn bad_file_operations_are_errors() {
    let s = ops_scenario("64M", 1, "");
    let err = |ops: Vec<Op>| match run_ops(&s, vec![ops]) {
        Err(SimError::Mm { error, .. }) => error,
        other => panic!("expected an mm error, got {:?}", other.map(|_| ())),
    };
    assert_eq!(
        err(vec![Op::ReadFile {
            file: 3,
            first: 0,
            nr: 1
        }]),
        MmError::NoSuchFile { file: 3 }
    );
    assert!(matches!(
        err(vec![Op::CreateFile {
            file: 1,
            nr_pages: 1 << 20
        }]),
        MmError::NoSpace { file: 1, .. }
    ));
    assert_eq!(
        err(vec![Op::CreateFile {
            file: 0,
            nr_pages: 1
        }]),
        MmError::FileExists { file: 0 }
    );
    let beyond = vec![
        map_file(0, 0, 512, true),
        Op::Touch {
            vma: 0,
            first: 300,
            nr: 1,
            write: false,
        },
    ];
    assert_eq!(
        err(beyond),
        MmError::Sigbus {
            file: 0,
            index: 300
        }
    );
}

#[test]
fn page_cache_is_charged_to_the_reader_and_reclaimed_at_its_memcg_limit() {
    let s = scenario(
        "256M",
        64,
        r#"
[[memcg]]
name = "m"
max = "32M"
[[workload]]
kind = "file_read"
file = "data"
mmap = false
memcg = "m"
"#,
    );
    let r = run(&s);
    let limit = 32 << 20;
    assert_eq!(r.memcg_stats["/"]["memory.current"], 0);
    let current = r.memcg_stats["m"]["memory.current"];
    assert!(current <= limit && current > limit / 2, "{current}");
    // Memcg reclaim: counted in the memcg and as pgsteal_file, not as direct reclaim.
    assert!(r.counter("pgsteal_file") >= 32 * MIB_PAGES as u64);
    assert_eq!(r.counter("pgsteal_direct"), 0);
    assert_eq!(
        r.memcg_stats["m"]["pgsteal_direct"],
        r.counter("pgsteal_file")
    );
    assert_eq!(
        r.counter("pgpgin"),
        64 * MIB_PAGES as u64 * 4,
        "nothing read twice"
    );
}
