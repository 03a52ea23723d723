//! Runs are deterministic functions of (scenario, seed), and the seed-000 slice facts hold on a
//! small usemem scenario: 6.10 swaps 64K mTHP out whole, 6.9 splits them, both store 2M whole.

use foliosim_model::{RunResult, Scenario};
use std::collections::BTreeMap;

const SMALL: &str = include_str!("../../../../scenarios/usemem-64k-small.toml");

/// The small usemem scenario with the given kernel and folio size ("4K", "64K", "2M"),
/// invariants checked.
fn scenario(kernel: &str, size: &str, seed: u64) -> Scenario {
    let sysfs = match size {
        "4K" => String::new(),
        "64K" => "\"64K\" = \"always\"".into(),
        "2M" => "\"2M\" = \"always\"".into(),
        other => panic!("size {other}"),
    };
    let text = format!(
        r#"
seed = {seed}
check_invariants = true

[machine]
cpus = 4
memory = "1G"

[[machine.swap]]
kind = "ramdisk"
size = "512M"

[kernel]
version = "{kernel}"

[sysfs.hugepages]
{sysfs}

[[memcg]]
name = "bench"
max = "256M"

[[workload]]
kind = "usemem"
nproc = 8
size = "64M"
memcg = "bench"
"#
    );
    crate::common::parse(&text)
}

use crate::common::run;

#[test]
fn repository_scenario_matches_the_helper() {
    let file = Scenario::from_toml_str(SMALL).unwrap();
    let mine = scenario("6.10", "64K", 1);
    let mut file_checked = file.clone();
    file_checked.check_invariants = true;
    assert_eq!(file_checked.to_toml_string(), mine.to_toml_string());
}

#[test]
fn same_seed_same_bytes_other_seed_other_bytes() {
    let s = scenario("6.10", "64K", 1);
    let a = run(&s).to_json();
    let b = run(&s).to_json();
    assert!(a == b, "two runs of one scenario differ");
    let other = run(&scenario("6.10", "64K", 2));
    let first = run(&s);
    assert_ne!(other.to_json(), a, "seeds 1 and 2 give identical results");
    assert_ne!(
        other.simulated_ns, first.simulated_ns,
        "seed changes nothing in timing"
    );
    let keys = |r: &RunResult| r.counters.keys().cloned().collect::<Vec<_>>();
    assert_eq!(
        keys(&other),
        keys(&first),
        "counter names depend on the seed"
    );
}

fn counters(kernel: &str, size: &str) -> BTreeMap<String, u64> {
    let r = run(&scenario(kernel, size, 1));
    if std::env::var_os("SHOW_COUNTERS").is_some() {
        eprintln!(
            "{kernel} {size}: {:?}",
            r.counters
                .iter()
                .filter(|(_, v)| **v != 0)
                .collect::<Vec<_>>()
        );
    }
    assert_eq!(r.kernel, kernel);
    assert_eq!(r.counter("oom_kill"), 0, "{kernel} {size}: OOM");
    assert!(
        r.counter("pswpout") > 0,
        "{kernel} {size}: 512M of usemem in a 256M memcg swapped nothing"
    );
    // Nothing is swapped in, and the ramdisk completes writes at once: every page reclaimed was
    // written out exactly once.
    assert_eq!(
        r.counter("pswpin"),
        0,
        "{kernel} {size}: usemem never touches a page twice"
    );
    // Memcg-limit reclaim: /proc/vmstat counts it under pgsteal_anon, not pgsteal_direct
    // (global reclaim only).
    assert_eq!(
        r.counter("pgsteal_anon"),
        r.counter("pswpout"),
        "{kernel} {size}: reclaimed vs swapped-out pages"
    );
    assert_eq!(r.counter("pgsteal_direct"), 0, "{kernel} {size}");
    r.counters
}

#[test]
fn kernel_6_10_swaps_64k_whole() {
    let c = counters("6.10", "64K");
    let swpout = c["hugepages-64kB/stats/swpout"];
    assert!(swpout > 0, "6.10 64K: no 64K folio swapped out whole");
    assert_eq!(
        c["hugepages-64kB/stats/swpout_fallback"], 0,
        "6.10 64K: fell back on a near-empty swap device"
    );
    assert!(c["hugepages-64kB/stats/anon_fault_alloc"] > 0);
    // Conservation: every swapped-out page is a page of a whole 64K folio or an order-0 page.
    let pswpout = c["pswpout"];
    let whole_pages = 16 * swpout;
    assert!(
        pswpout >= whole_pages,
        "pswpout {pswpout} < 16 x 64K swpout {swpout}"
    );
    let order0 = pswpout - whole_pages;
    assert_eq!(pswpout, 16 * swpout + order0);
    // Order-0 swap-outs come only from pages faulted at order 0 (a fallback) or split off a
    // 64K folio: none is split here.
    assert_eq!(
        c["hugepages-64kB/stats/split"], 0,
        "6.10 64K split folios without a fallback"
    );
    assert!(
        order0 <= 16 * c["hugepages-64kB/stats/anon_fault_fallback"],
        "{order0} order-0 pages swapped out of nowhere"
    );
}

#[test]
fn kernel_6_9_splits_64k() {
    let c = counters("6.9", "64K");
    assert_eq!(
        c["hugepages-64kB/stats/swpout"], 0,
        "6.9 swapped a 64K folio out whole"
    );
    assert!(
        c["hugepages-64kB/stats/split"] > 0,
        "6.9 64K: no split before swap-out"
    );
    // Every page swapped out is an order-0 page, split off a 64K folio or faulted at order 0.
    let order0_sources =
        16 * (c["hugepages-64kB/stats/split"] + c["hugepages-64kB/stats/anon_fault_fallback"]);
    assert!(
        c["pswpout"] <= order0_sources,
        "pswpout {} > 16 x (split + fallback) = {order0_sources}",
        c["pswpout"]
    );
    assert!(c["hugepages-64kB/stats/anon_fault_alloc"] > 0);
}

#[test]
fn both_kernels_swap_2m_whole() {
    for kernel in ["6.9", "6.10"] {
        let c = counters(kernel, "2M");
        assert!(c["thp_swpout"] > 0, "{kernel} 2M: no THP swapped out whole");
        assert!(c["thp_fault_alloc"] > 0);
        assert_eq!(
            c["hugepages-2048kB/stats/swpout"], c["thp_swpout"],
            "{kernel}: thp_swpout vs per-size swpout"
        );
    }
}

#[test]
fn both_kernels_4k() {
    for kernel in ["6.9", "6.10"] {
        let c = counters(kernel, "4K");
        let large: u64 = c
            .iter()
            .filter(|(k, _)| k.starts_with("hugepages-"))
            .map(|(_, v)| v)
            .sum();
        assert_eq!(
            large, 0,
            "{kernel} 4K: large folio activity with every size off"
        );
        assert_eq!(c["thp_swpout"], 0);
    }
}

/// The same workload on a rotational swap device: 512M of swap is plenty, so it must not OOM.
/// Regression: order-0 slot allocation on "hdd" once stopped after cluster 0.
#[test]
fn hdd_swap_does_not_oom() {
    let mut s = scenario("6.9", "4K", 1);
    s.machine.swap_devices[0].kind = foliosim_model::scenario::SwapDeviceKind::Hdd;
    // Small enough to stay quick: 8M written in a 2M memcg needs ~1536 slots of 131071.
    s.memcgs[0].max = Some(foliosim_model::scenario::Bytes(2 << 20));
    let foliosim_model::scenario::WorkloadSpec::Usemem(u) = &mut s.workloads[0] else {
        unreachable!("the test scenario runs usemem")
    };
    u.nproc = 1;
    u.size = foliosim_model::scenario::Bytes(8 << 20);
    let r = foliosim_model::run(&s).unwrap_or_else(|e| panic!("hdd swap: {e}"));
    assert!(r.counter("pswpout") > 1024);
}
