//! Seed 001 scaled down (256 MiB, 1 seed): the rows whose direction follows from the RFC's
//! mechanism alone. With defrag=never the baseline's faults never compact and its khugepaged
//! sleeps 10 s between scans, so compaction and collapse happen only with the RFC, which wakes
//! khugepaged at every fallback; with defrag=always the RFC's khugepaged allocates THPs the
//! baseline's never does in so short a run, and fewer faults compact, with more success.

use foliosim_lab::reproduce::seed001::{reproduce, Defrag, Policy};
use std::collections::BTreeMap;

#[test]
fn the_rfc_moves_compaction_and_collapse_to_khugepaged() {
    let report = reproduce(
        0.0625,
        1,
        true,
        &BTreeMap::new(),
        &mut foliosim_lab::reproduce::Runs::all_cores(),
    )
    .unwrap();
    let counter = |defrag, policy, name: &str| {
        report
            .columns
            .iter()
            .find(|c| c.defrag == defrag && c.policy == policy)
            .unwrap()
            .counters
            .get(name)
            .copied()
            .unwrap_or(0.0)
    };
    use Defrag::*;
    use Policy::*;
    for name in ["compact_stall", "pgmigrate_success", "thp_collapse_alloc"] {
        assert_eq!(counter(Never, Baseline, name), 0.0, "{name}");
        assert!(counter(Never, Rfc, name) > 0.0, "{name}");
    }
    assert!(
        counter(Always, Rfc, "thp_collapse_alloc")
            > counter(Always, Baseline, "thp_collapse_alloc")
    );
    // With 4.1's slow path (async-only fault compaction, given up when deferred by
    // khugepaged's sync failures or when the CPU is wanted), fewer faults compact with the
    // RFC, and more of those that do succeed.
    assert!(counter(Always, Rfc, "compact_stall") < counter(Always, Baseline, "compact_stall"));
    let ratio = |policy| {
        counter(Always, policy, "compact_success") / counter(Always, policy, "compact_stall")
    };
    assert!(
        ratio(Rfc) > ratio(Baseline),
        "{} vs {}",
        ratio(Rfc),
        ratio(Baseline)
    );
    // THP faults are tried in both; every region-2 fault is timed and classified.
    assert!(counter(Always, Baseline, "thp_fault_alloc") > 0.0);
    let table = report.to_table();
    assert!(table.contains("Percentage huge-16") && table.contains("Compaction stalls"));
}
