//! A large folio found in the swap cache (here: still there after an SSD write-out) is mapped
//! whole by one fault from 6.10 on (do_swap_page), one page per fault before. Invariants on.

use foliosim_model::content::ContentClass;
use foliosim_model::mm::mmap::ThpAdvice;
use foliosim_model::mm::Kernel;
use foliosim_model::sched::{run_tasks, Task};
use foliosim_model::workload::Op;
use foliosim_model::Scenario;

fn kernel(version: &str) -> Kernel {
    let text = format!(
        r#"
check_invariants = true
[machine]
cpus = 1
memory = "256M"
[[machine.swap]]
kind = "ssd"
size = "64M"
[kernel]
version = "{version}"
[sysfs]
thp_enabled = "never"
[sysfs.hugepages]
"64K" = "always"
"2M" = "never"
[[workload]]
kind = "usemem"
nproc = 1
size = "1M"
"#
    );
    Kernel::new(&Scenario::from_toml_str(&text).unwrap_or_else(|e| panic!("{e}")))
}

/// Write 4 x 64K, page them out, read them back: (pgfault of the read-back, the kernel).
fn read_back_faults(version: &str) -> (u64, Kernel) {
    let mut k = kernel(version);
    let mm = k.new_mm(0, ContentClass::Usemem);
    let touch = |write| Op::Touch {
        vma: 0,
        first: 0,
        nr: 64,
        write,
    };
    let ops = vec![
        Op::Mmap {
            vma: 0,
            nr_pages: 64,
            thp: ThpAdvice::Default,
        },
        touch(true),
        Op::Madvise {
            vma: 0,
            first: 0,
            nr: 64,
            advice: foliosim_model::mm::madvise::Advice::Pageout,
        },
        touch(false),
    ];
    let mut tasks = vec![Task::new("t".into(), mm, 0, ops)];
    run_tasks(&mut k, &mut tasks, 1, 3_000_000, true, &mut |_, _| {}).unwrap();
    let c = k.vm_events().to_map();
    assert_eq!(c["pswpout"], 64, "{version}: every page written out");
    assert_eq!(c["pswpin"], 0, "{version}: read back from the swap cache");
    (c["pgfault"] - 4, k)
}

#[test]
fn a_large_swap_cache_folio_is_mapped_whole_from_6_10() {
    let (faults, k) = read_back_faults("6.18");
    assert_eq!(faults, 4, "one fault per 64K folio");
    let vma = k.mms[0].vma(0);
    assert!(vma.ptes.iter().all(|p| p.is_present()));
    let (faults, _) = read_back_faults("6.9");
    assert_eq!(faults, 64, "one fault per page before 6.10");
}
