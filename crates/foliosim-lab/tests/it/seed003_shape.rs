//! Seed 003's shapes (spec-swap.md §15), emerging from the allocators, at a scale that runs in
//! seconds, with the invariant checker on. Tolerances: a fallback rate "near 0" is <= 5 % per
//! iteration; "near 100" is >= 95 %; "climbing" is <= 5 % in iteration 1 and >= 80 % by
//! iteration 10 (the seed: 0, 42, 68, 82, then 90-97 %).

use foliosim::scenario::{Kernel, Release};
use foliosim::workload::FallbackPoint;
use foliosim_lab::reproduce::seed003::{allocator_test_scenario, kbuild_scenario};

const ITERATIONS: u32 = 10;

fn fallback(version: Release, swapin_mthp: Option<bool>, aligned: bool) -> Vec<FallbackPoint> {
    let kernel = Kernel {
        version,
        swapin_mthp,
        ..Kernel::default()
    };
    let mut s = allocator_test_scenario(kernel, aligned, ITERATIONS, 1);
    s.check_invariants = true;
    let r = foliosim::run(&s).unwrap_or_else(|e| panic!("{}: {e}", version.name()));
    r.workloads[0].fallback_series.clone()
}

fn percents(series: &[FallbackPoint]) -> Vec<f64> {
    series.iter().map(|p| p.fallback_percent).collect()
}

#[test]
fn v4_fails_almost_always_once_free_clusters_are_gone() {
    for aligned in [false, true] {
        let p = percents(&fallback(Release::V6_10, None, aligned));
        assert!(p[0] >= 50.0, "-a {aligned}: iteration 1 {p:?}");
        assert!(p[1..].iter().all(|&x| x >= 95.0), "-a {aligned}: {p:?}");
    }
}

#[test]
fn cluster_lists_with_aligned_swapin_stay_near_zero() {
    for version in [Release::V6_12, Release::V6_18] {
        let series = fallback(version, Some(false), true);
        let p = percents(&series);
        assert!(p.iter().all(|&x| x <= 5.0), "{}: {p:?}", version.name());
        assert!(
            series.iter().all(|s| s.swpout > 150),
            "{}: {series:?}",
            version.name()
        );
    }
}

#[test]
fn cluster_lists_without_aligned_swapin_fragment_over_iterations() {
    for version in [Release::V6_12, Release::V6_18] {
        let p = percents(&fallback(version, Some(false), false));
        assert!(p[0] <= 5.0, "{}: {p:?}", version.name());
        assert!(p[9] >= 80.0, "{}: {p:?}", version.name());
    }
}

#[test]
fn mthp_swapin_keeps_fallback_at_zero() {
    let series = fallback(Release::V6_18, Some(true), false);
    assert!(series.iter().all(|s| s.swpout_fallback == 0), "{series:?}");
    // Nearly all 960 regions are resident 64K folios at each page-out.
    assert!(series.iter().all(|s| s.swpout >= 900), "{series:?}");
}

/// make -j96 in a (scaled) 1G memcg: the lock split cuts the wait on si->lock by more than an
/// order of magnitude, and the build finishes sooner with less system time. At x0.125 the
/// margins are wide (wait 9,000x, elapsed and sys 2x, 2026-11-28); invariants are not checked
/// here (they took 60% of the test's 29 CPU-s): the model's own tests and the soak check them.
#[test]
fn lock_split_makes_the_build_faster() {
    let run = |version| {
        let kernel = Kernel {
            version,
            ..Kernel::default()
        };
        let r = foliosim::run(&kbuild_scenario(kernel, "4K", 0.125, 1)).unwrap();
        let wait: u64 = r
            .locks
            .iter()
            .filter(|l| l.name == "si->lock")
            .map(|l| l.stats.wait_ns_total)
            .sum();
        (r.workloads[0].elapsed_ns_max, r.cpu_sys_ns, wait)
    };
    let (c12, c18) = (run(Release::V6_12), run(Release::V6_18));
    eprintln!("make -j96 x0.125 (elapsed ns, sys ns, si->lock wait ns): C12 {c12:?} C18 {c18:?}");
    assert!(c12.2 > 10 * c18.2.max(1), "si->lock wait {c12:?} {c18:?}");
    assert!(c18.0 < c12.0, "elapsed C12 {} ns, C18 {} ns", c12.0, c18.0);
    assert!(c18.1 < c12.1, "sys C12 {} ns, C18 {} ns", c12.1, c18.1);
}

/// The kernel build with 64K mTHP (scaled): the 6.10 allocator falls back for most 64K
/// swap-outs once the device fragments, the 6.12 cluster lists for far fewer (seed: ~99% ->
/// <10%; full scale here 85.5% -> 1.1%, this scale ~80% -> 0%).
#[test]
fn kbuild_fallback_drops_with_the_cluster_lists() {
    let share = |version| {
        let kernel = Kernel {
            version,
            ..Kernel::default()
        };
        let r = foliosim::run(&kbuild_scenario(kernel, "64K", 0.25, 1)).unwrap();
        let (out, fb) = (
            r.counter("hugepages-64kB/stats/swpout"),
            r.counter("hugepages-64kB/stats/swpout_fallback"),
        );
        assert!(
            out + fb > 1000,
            "{version:?}: too few 64K swap-outs ({out} + {fb})"
        );
        FallbackPoint::new(0, 0, out, fb).fallback_percent
    };
    let (v4, c12) = (share(Release::V6_10), share(Release::V6_12));
    eprintln!("kbuild 64K x0.25 fallback: 6.10 {v4:.1}%, 6.12 {c12:.1}%");
    // The seed's ~99% is the fragmented device's; our share includes the build's warm-up
    // before the device fragments (docs/seed003-lock-split.md: 100% from the second tenth on),
    // so only "most" is asserted here. The cluster lists: the seed's own bound, under 10%.
    assert!(v4 > 50.0, "6.10 fallback {v4:.1}%");
    assert!(
        c12 < 10.0,
        "6.12 fallback {c12:.1}% (seed: under 10% for 64K)"
    );
}
