//! Memory tiering: a memory-only lower node takes what node 0 cannot hold, the NUMA scanner
//! makes lower-tier PTEs PROT_NONE, hint faults promote hot pages, kswapd demotes to make
//! room, and migration's TLB flushes are eager (mainline) or deferred (MIGRC).

use crate::common::{parse_shown, run_scenario_tasks};
use foliosim_model::mm::Kernel;
use foliosim_model::sched::Task;
use foliosim_model::workload::Op;
use foliosim_model::Scenario;

const MIB_PAGES: u32 = 256;

/// Node 0 of `node0`, a lower node of 1 GiB, tiering and demotion on, `cpus` CPUs;
/// `extra` appended (e.g. the flush policy).
fn scenario(node0: &str, cpus: u32, extra: &str) -> Scenario {
    let text = format!(
        r#"
seed = 1
check_invariants = true
[machine]
cpus = {cpus}
memory = "{node0}"
[[machine.node]]
memory = "1G"
[sysctl.kernel]
numa_balancing = 2
numa_balancing_scan_delay_ms = 10
numa_balancing_scan_period_min_ms = 20
[sysfs.numa]
demotion_enabled = true
[kernel]
version = "6.10"
{extra}
[[workload]]
kind = "usemem"
nproc = 1
size = "1M"
"#
    );
    parse_shown(&text)
}

/// Threads of one process: thread 0 maps and writes `mib`, all wait at a barrier, then each
/// reads the whole region `passes` times. Returns the kernel after the run.
fn run_threads(s: &Scenario, threads: u32, mib: u32, passes: u32) -> Kernel {
    let mut k = Kernel::new(s);
    let mm = k.new_mm(0, foliosim_model::content::ContentClass::Usemem);
    let nr = mib * MIB_PAGES;
    let mut tasks = Vec::new();
    for t in 0..threads {
        let mut ops = Vec::new();
        if t == 0 {
            ops.push(Op::Mmap {
                vma: 0,
                nr_pages: nr,
                thp: foliosim_model::mm::mmap::ThpAdvice::NoHugepage,
            });
            ops.push(Op::Touch {
                vma: 0,
                first: 0,
                nr,
                write: true,
            });
        }
        ops.push(Op::Barrier {
            id: 0,
            parties: threads,
        });
        for _ in 0..passes {
            // Each thread starts its pass at another offset, so they spread over the region.
            let start = nr / threads * t;
            ops.push(Op::Touch {
                vma: 0,
                first: start,
                nr: nr - start,
                write: false,
            });
            if start > 0 {
                ops.push(Op::Touch {
                    vma: 0,
                    first: 0,
                    nr: start,
                    write: false,
                });
            }
            ops.push(Op::Compute { ns: 2_000_000 });
        }
        ops.push(Op::Barrier {
            id: 1,
            parties: threads,
        });
        ops.push(Op::Exit);
        tasks.push(Task::new(format!("t{t}"), mm, 0, ops));
    }
    run_scenario_tasks(&mut k, &mut tasks, s);
    k
}

fn counter(k: &Kernel, name: &str) -> u64 {
    k.vm_events().to_map()[name]
}

#[test]
fn a_working_set_larger_than_node0_spills_then_churns_between_tiers() {
    let s = scenario("128M", 4, "");
    let k = run_threads(&s, 4, 192, 30);
    for c in [
        "numa_pte_updates",
        "numa_hint_faults",
        "pgpromote_candidate",
        "pgpromote_success",
        "pgdemote_kswapd",
        "pgdemote_direct",
        "numa_pages_migrated",
        "pgmigrate_success",
        "nr_tlb_remote_flush",
        "nr_tlb_remote_flush_received",
        "migrc_requested",
        "migrc_flushed",
    ] {
        eprintln!("{c} {}", counter(&k, c));
    }
    assert!(counter(&k, "numa_pte_updates") > 0);
    assert!(counter(&k, "numa_hint_faults") > 0);
    assert!(counter(&k, "pgpromote_success") > 0);
    assert!(counter(&k, "pgdemote_kswapd") > 0);
    assert_eq!(
        counter(&k, "numa_pages_migrated"),
        counter(&k, "pgpromote_success")
    );
}

#[test]
fn migrc_defers_the_flushes_of_read_only_demotions_and_flushes_before_reuse() {
    let flushes = |policy: &str| {
        let s = scenario("128M", 4, &format!("migrate_tlb_flush = \"{policy}\""));
        let k = run_threads(&s, 4, 192, 30);
        for c in [
            "pgdemote_kswapd",
            "pgpromote_success",
            "nr_tlb_remote_flush",
            "nr_tlb_remote_flush_received",
            "migrc_requested",
            "migrc_flushed",
        ] {
            eprintln!("{policy} {c} {}", counter(&k, c));
        }
        (
            counter(&k, "nr_tlb_remote_flush_received"),
            counter(&k, "migrc_requested"),
            counter(&k, "migrc_flushed"),
            counter(&k, "pgdemote_kswapd"),
        )
    };
    let (eager, eager_req, _, eager_demoted) = flushes("eager");
    let (migrc, req, done, demoted) = flushes("migrc");
    assert_eq!(eager_req, 0);
    assert!(eager_demoted > 0 && demoted > 0);
    assert!(req > 0, "read-only demotions deferred their flush");
    assert!(
        done > 0 && done < req,
        "owed flushes coalesce: {done} of {req}"
    );
    // The runs churn differently (the flushes' timing moves the scheduler), so compare the
    // shootdowns per demoted page.
    let per_page = |flushes: u64, demoted: u64| flushes as f64 / demoted as f64;
    assert!(
        per_page(migrc, demoted) < 0.9 * per_page(eager, eager_demoted),
        "fewer shootdowns per demoted page: {migrc}/{demoted} vs {eager}/{eager_demoted}"
    );
}
