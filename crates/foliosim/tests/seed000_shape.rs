//! Seed 000's shape, scaled down (sizes x0.03, the scheduler slice with them), invariants on.
//! Tolerances: the signs and orderings the seed reports, plus the per-size counters; the
//! magnitudes differ from the seed (see the issue note and README) and are not asserted.

use foliosim::reproduce::seed000::{reproduce, Report, Row};
use std::sync::OnceLock;

fn report() -> &'static Report {
    static REPORT: OnceLock<Report> = OnceLock::new();
    REPORT.get_or_init(|| reproduce(0.03, 1, true, &mut |_, _| {}).expect("seed 000 runs"))
}

fn row(kernel: &str, size: &str) -> &'static Row {
    report()
        .rows
        .iter()
        .find(|r| r.kernel == kernel && r.size == size)
        .unwrap()
}

#[test]
fn mthp_is_swapped_out_whole_on_6_10_and_split_on_6_9() {
    let (new, old) = (row("6.10", "64K"), row("6.9", "64K"));
    assert!(
        new.swpout > 0.0 && new.swpout_fallback == 0.0 && new.split == 0.0,
        "6.10 64K: {new:?}"
    );
    assert!(
        old.swpout == 0.0 && old.split > 0.0 && old.swpout_fallback == 0.0,
        "6.9 64K: {old:?}"
    );
    // Every split 64K folio became 16 order-0 swap-outs.
    assert!(old.pswpout > 0.0);
}

#[test]
fn pmd_thp_goes_whole_on_both_kernels() {
    for kernel in ["6.9", "6.10"] {
        let r = row(kernel, "2M");
        assert!(
            r.thp_swpout > 0.0 && r.pswpout == 512.0 * r.thp_swpout,
            "{kernel} 2M: {r:?}"
        );
    }
}

#[test]
fn throughput_ordering_matches_the_seed() {
    let rel = |k, s| row(k, s).mean_rel_pct;
    // 6.10: 64K clearly faster than 4K; 2M fastest on both kernels.
    assert!(rel("6.10", "64K") > rel("6.10", "4K") + 20.0);
    for k in ["6.9", "6.10"] {
        assert!(
            rel(k, "2M") > rel(k, "64K") && rel(k, "2M") > rel(k, "4K"),
            "{k}"
        );
    }
    // Splitting before swap-out costs 64K most of its advantage.
    assert!(rel("6.10", "64K") > rel("6.9", "64K") + 50.0);
    // The order-0 path is the same allocator code on both kernels.
    assert!((rel("6.9", "4K") - rel("6.10", "4K")).abs() < 1.0);
}
