//! Zap of PTE-mapped large folios: from 6.9 (folio_pte_batch in zap_present_ptes) a run of
//! PTEs mapping consecutive pages of one folio loses its rmap at once, so unmapping a whole
//! 64K folio never leaves it partially mapped and never counts split_deferred; a zap of part
//! of a folio still queues it. The live runs showed the difference (docs/validation.md: the sim
//! counted split_deferred at every exit, the kernel none).

use foliosim_model::content::ContentClass;
use foliosim_model::mm::mmap::ThpAdvice;
use foliosim_model::mm::vmstat::MthpStat;
use foliosim_model::mm::Kernel;
use foliosim_model::sched::run_tasks;
use foliosim_model::workload::{Op, TaskSpec};
use foliosim_model::{spawn_tasks, Scenario};

/// 64K folios "always", 2 CPUs, no swap; invariants checked throughout.
const MTHP_64K: &str = r#"
check_invariants = true
[machine]
cpus = 2
memory = "512M"
[kernel]
version = "6.10"
[sysfs]
thp_enabled = "never"
[sysfs.hugepages]
"64K" = "always"
[[workload]]
kind = "usemem"
nproc = 1
size = "1M"
"#;

/// Pages of a 64K folio.
const NR: u32 = 16;
const FOLIOS: u32 = 64;

/// Map and write 64 folios of 64K, then unmap `nr` pages at the start of each folio.
fn unmap_part_of_each(nr: u32) -> Kernel {
    unmap_part_of_each_on(Kernel::new(&Scenario::from_toml_str(MTHP_64K).unwrap()), nr)
}

fn unmap_part_of_each_on(mut k: Kernel, nr: u32) -> Kernel {
    let mut ops = vec![
        Op::Mmap {
            vma: 0,
            nr_pages: FOLIOS * NR,
            thp: ThpAdvice::Default,
        },
        Op::Touch {
            vma: 0,
            first: 0,
            nr: FOLIOS * NR,
            write: true,
        },
    ];
    ops.extend((0..FOLIOS).map(|f| Op::MunmapRange {
        vma: 0,
        first: f * NR,
        nr,
    }));
    let spec = TaskSpec {
        name: "app".into(),
        memcg: None,
        ops,
        shares_mm_with: None,
    };
    let mut tasks = Vec::new();
    spawn_tasks(&mut k, &mut tasks, 0, ContentClass::Usemem, vec![spec]);
    run_tasks(&mut k, &mut tasks, 1, 3_000_000, true, &mut |_, _| {}).unwrap();
    k
}

fn split_deferred(k: &Kernel) -> u64 {
    k.vm_events().get_mthp(4, MthpStat::SplitDeferred)
}

/// Folios on the deferred split queues.
fn queued(k: &Kernel) -> u64 {
    k.deferred_split.iter().map(|q| q.split_queue_len).sum()
}

#[test]
fn unmapping_whole_64k_folios_queues_none_for_deferred_split() {
    let k = unmap_part_of_each(NR);
    assert_eq!(
        k.vm_events().get_mthp(4, MthpStat::AnonFaultAlloc),
        FOLIOS as u64
    );
    assert_eq!(split_deferred(&k), 0);
    assert_eq!(queued(&k), 0);
    assert_eq!(k.mms[0].rss_anon, 0);
}

#[test]
fn unmapping_part_of_each_64k_folio_queues_each_once() {
    let k = unmap_part_of_each(NR / 2);
    assert_eq!(split_deferred(&k), FOLIOS as u64);
    assert_eq!(queued(&k), FOLIOS as u64);
    assert_eq!(k.mms[0].rss_anon, (FOLIOS * NR / 2) as u64);
}

#[test]
fn pte_by_pte_a_whole_unmap_queues_each_folio_on_the_way() {
    // Before 6.9 zap went PTE by PTE: after the first PTE the folio is partially mapped and
    // queued (counted once), and leaves the queue when its last PTE goes and it is freed.
    let mut k = Kernel::new(&Scenario::from_toml_str(MTHP_64K).unwrap());
    assert!(k.cfg.zap_batches_ptes, "6.10 batches");
    k.cfg.zap_batches_ptes = false;
    let k = unmap_part_of_each_on(k, NR);
    assert_eq!(split_deferred(&k), FOLIOS as u64);
    assert_eq!(queued(&k), 0);
    assert_eq!(k.mms[0].rss_anon, 0);
}
