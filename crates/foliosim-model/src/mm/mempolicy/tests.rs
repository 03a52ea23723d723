//! The era rules on a machine of two nodes (node 1 a second socket's memory without CPUs, as
//! the model has no CPUs on node 1 yet): a usemem larger than node 0 with THP always.

use crate::scenario::Scenario;
use std::collections::BTreeMap;

/// The run's counters for `version` and `defrag`, with a swap device so that reclaim of the
/// local node can make progress.
fn run(version: &str, defrag: &str) -> BTreeMap<String, u64> {
    let text = format!(
        r#"
[machine]
cpus = 2
memory = "256M"
[[machine.node]]
memory = "512M"
latency_ns = 140
[[machine.swap]]
kind = "ramdisk"
size = "512M"
[kernel]
version = "{version}"
[sysfs]
thp_enabled = "always"
defrag = "{defrag}"
[[workload]]
kind = "usemem"
nproc = 1
size = "384M"
"#
    );
    let s = Scenario::from_toml_str(&text).unwrap();
    crate::run(&s).unwrap().counters
}

fn get(c: &BTreeMap<String, u64>, key: &str) -> u64 {
    *c.get(key)
        .unwrap_or_else(|| panic!("no counter `{key}` in {:?}", c.keys()))
}

#[test]
fn a_4x_thp_fault_stays_on_its_node_and_reclaims_it() {
    let c = run("4.19", "always");
    assert_eq!(get(&c, "node1 nr_anon_transparent_hugepages"), 0, "{c:?}");
    assert!(get(&c, "node0 nr_anon_transparent_hugepages") > 0, "{c:?}");
    // The base pages of the fallback go remote (numa_miss on node 1, foreign on node 0).
    assert!(get(&c, "node1 numa_miss") > 0, "{c:?}");
    assert_eq!(get(&c, "numa_miss"), get(&c, "numa_foreign"));
}

#[test]
fn a_6x_thp_fault_falls_back_to_the_remote_node_when_it_may_reclaim() {
    let c = run("6.18", "always");
    assert!(get(&c, "node1 nr_anon_transparent_hugepages") > 0, "{c:?}");
    let old = run("4.19", "always");
    // Remote THPs instead of reclaiming the local node for them.
    assert!(
        get(&c, "pswpout") < get(&old, "pswpout"),
        "6.18 {c:?}\n4.19 {old:?}"
    );
}

#[test]
fn a_6x_thp_fault_that_may_not_reclaim_stays_local() {
    // defrag=madvise, VMA not madvised: GFP_TRANSHUGE_LIGHT, no direct reclaim, no retry.
    let c = run("6.18", "madvise");
    assert_eq!(get(&c, "node1 nr_anon_transparent_hugepages"), 0, "{c:?}");
}
