//! Refault detection (mm/workingset.rs): reclaim leaves a shadow entry where it evicts a folio,
//! and a page read back into that slot comes back active when its refault distance fits in
//! the workingset it competes with. The setups below make the distance exact: a MADV_PAGEOUT
//! of N anon pages ages the root lruvec by one per page, and reading them back in order gives
//! page i a distance of N - i plus the activations before it, against the file pages cached
//! (all inactive, read once) plus the anon pages activated so far. MGLRU instead asks whether
//! the generation a page left is still the oldest.

use crate::common::parse_shown;
use foliosim_model::mm::madvise::Advice;
use foliosim_model::mm::Kernel;
use foliosim_model::sched::{run_tasks, Task};
use foliosim_model::workload::Op;
use foliosim_model::Scenario;

/// Anon pages paged out and read back.
const N: u32 = 512;
/// Pages of the file read first (readahead caches a little more): the anon refaults'
/// competition.
const FILE_PAGES: u32 = 400;

/// 1 GiB, zram swap, a file "data" of 2 MiB on an SSD, no THP; `lru_gen` is the
/// `[sysfs.lru_gen]` table's `enabled`.
fn scenario(lru_gen: bool) -> Scenario {
    let text = format!(
        r#"
seed = 1
check_invariants = true
[machine]
cpus = 2
memory = "1G"
[machine.disk]
kind = "ssd"
size = "64M"
[[machine.swap]]
kind = "zram"
size = "64M"
[[file]]
name = "data"
size = "2M"
[kernel]
version = "6.18"
[sysfs]
thp_enabled = "never"
[sysfs.hugepages]
"2M" = "never"
[sysfs.lru_gen]
enabled = {lru_gen}
[[workload]]
kind = "file_read"
file = "data"
"#
    );
    parse_shown(&text)
}

/// Page the anon region out and fault every page of it back (reads, in order).
fn pageout_and_read_back() -> [Op; 2] {
    [
        Op::Madvise {
            vma: 0,
            first: 0,
            nr: N,
            advice: Advice::Pageout,
        },
        Op::Touch {
            vma: 0,
            first: 0,
            nr: N,
            write: false,
        },
    ]
}

/// Read `file_pages` of the file (none: 0), write N anon pages, then `rounds` of page-out and
/// read-back; one task in the root memcg, invariants checked. Returns /proc/vmstat's
/// workingset lines (refault, activate, restore of anon), the file refaults and the file pages
/// cached.
fn run(lru_gen: bool, file_pages: u32, rounds: usize) -> ([u64; 3], u64, u64) {
    let s = scenario(lru_gen);
    let mut k = Kernel::new(&s);
    let mut ops = Vec::new();
    if file_pages > 0 {
        ops.push(Op::ReadFile {
            file: 0,
            first: 0,
            nr: file_pages,
        });
    }
    ops.extend([
        Op::Mmap {
            vma: 0,
            nr_pages: N,
            thp: Default::default(),
        },
        Op::Touch {
            vma: 0,
            first: 0,
            nr: N,
            write: true,
        },
    ]);
    for _ in 0..rounds {
        ops.extend(pageout_and_read_back());
    }
    ops.push(Op::Exit);
    let mm = k.new_mm(0, foliosim_model::content::ContentClass::Usemem);
    let mut tasks = vec![Task::new("t".into(), mm, 0, ops)];
    let stats = run_tasks(
        &mut k,
        &mut tasks,
        1,
        s.machine.sched_slice_ns,
        true,
        &mut |_, _| {},
    )
    .unwrap();
    let v = k.vmstat_map(stats.simulated_ns);
    (
        [
            v["workingset_refault_anon"],
            v["workingset_activate_anon"],
            v["workingset_restore_anon"],
        ],
        v["workingset_refault_file"],
        v["nr_file_pages"],
    )
}

#[test]
fn refaults_within_the_workingset_come_back_active() {
    let ([refault, activate, restore], file, cached) = run(false, FILE_PAGES, 1);
    assert_eq!(refault, N as u64, "every page read back had left a shadow");
    assert!(
        (FILE_PAGES as u64..N as u64).contains(&cached),
        "{cached} file pages"
    );
    // Pages 0..N-cached were evicted longer ago than the workingset is large; from page
    // N - cached on, each activation both ages the lruvec and grows the active anon list.
    assert_eq!(activate, cached);
    assert_eq!(restore, 0, "none was active when paged out");
    assert_eq!(file, 0);
}

#[test]
fn an_active_page_paged_out_refaults_as_a_restore() {
    let ([refault, activate, restore], _, cached) = run(false, FILE_PAGES, 2);
    assert_eq!(refault, 2 * N as u64);
    assert_eq!(activate, 2 * cached);
    // The second page-out marked the pages the first read-back activated (PG_workingset), and
    // the same pages are the ones within the distance again.
    assert_eq!(restore, cached);
}

#[test]
fn without_a_competing_workingset_nothing_is_activated() {
    // Evicted anon pages compete with file pages and active anon only: with no file read
    // and no active anon, every distance is too long.
    let ([refault, activate, _], _, _) = run(false, 0, 1);
    assert_eq!(refault, N as u64);
    assert_eq!(activate, 0);
}

#[test]
fn mglru_refaults_are_recent_while_the_oldest_generation_stays() {
    // lru_gen_test_recent: nothing aged between the page-out and the read-back, so the
    // type's min_seq is the one stamped in every shadow; each refault happens in a fault, so
    // each is also a restore (LRU_REFS and PG_workingset set). The distance rule of the
    // classic LRU plays no part: without the file, the same counts.
    for file_pages in [FILE_PAGES, 0] {
        let (anon, file, _) = run(true, file_pages, 2);
        let n = 2 * N as u64;
        assert_eq!((anon, file), ([n, n, n], 0), "{file_pages} file pages");
    }
}

#[test]
fn file_pages_evicted_by_memcg_reclaim_refault_when_read_again() {
    // A 32 MiB memcg reads a 48 MiB file twice through read(2): the second pass finds the
    // shadows the first pass's reclaim left.
    let text = r#"
seed = 1
check_invariants = true
[machine]
cpus = 2
memory = "512M"
[machine.disk]
kind = "ssd"
size = "128M"
[[file]]
name = "data"
size = "48M"
[kernel]
version = "6.18"
[sysfs]
thp_enabled = "never"
[[memcg]]
name = "a"
max = "32M"
[[workload]]
kind = "file_read"
file = "data"
mmap = false
passes = 2
memcg = "a"
"#;
    let r = foliosim_model::run(&Scenario::from_toml_str(text).unwrap()).unwrap();
    let refault = r.counter("workingset_refault_file");
    let activate = r.counter("workingset_activate_file");
    // The first pass evicted at least the 16 MiB that did not fit; each comes back once.
    assert!(refault >= 16 * 256, "{refault} file refaults");
    assert!(refault <= 48 * 256, "{refault} file refaults");
    assert!(activate <= refault);
    assert_eq!(r.memcg_stats["a"]["workingset_refault_file"], refault);
}
