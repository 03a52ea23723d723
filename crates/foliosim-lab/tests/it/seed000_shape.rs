//! Seed 000's shape, scaled down (sizes x0.03, the scheduler slice with them), invariants on,
//! on the seed's machine (arm64 VM, 8 CPUs, broadcast TLBI, contpte), with the costs fitted on
//! the seed's 6.9 rows only (costs/seed000-fit-6.9.toml, `foliosim fit tables/seed000.toml`;
//! docs/fit.md). What is asserted is the seed's table, never today's output:
//! - the counters as the kernels behave (6.9 splits every 64K folio, 6.10 swaps it whole, 2M
//!   whole on both; no IPIs on arm64; a DSB per swapped-out folio);
//! - the seed's ordering on both kernels, the 6.9 64K regression's sign included;
//! - the stated tolerance (docs/seed000.md): every row within 3 of the seed's standard
//!   deviations of the seed's mean, the fitted 6.9 rows and the predicted 6.10 rows alike
//!   (the 6.10 64K prediction is the known miss: +15..+22 points, 1.8..2.7 std, over the seed).

use foliosim_lab::reproduce::seed000::{reproduce_with_costs, Report, Row};
use std::sync::OnceLock;

const FITTED: &str = concat!(
    env!("CARGO_MANIFEST_DIR"),
    "/../../costs/seed000-fit-6.9.toml"
);

fn report() -> &'static Report {
    static REPORT: OnceLock<Report> = OnceLock::new();
    REPORT.get_or_init(|| {
        let costs = foliosim_lab::fit::costs_file::load(std::path::Path::new(FITTED))
            .expect("the fitted costs file");
        reproduce_with_costs(
            0.03,
            1,
            true,
            &costs,
            &mut foliosim_lab::reproduce::Runs::all_cores(),
        )
        .expect("seed 000 runs")
    })
}

fn row(kernel: &str, size: &str) -> &'static Row {
    report()
        .rows
        .iter()
        .find(|r| r.kernel == kernel && r.size == size)
        .unwrap()
}

fn rel(kernel: &str, size: &str) -> f64 {
    row(kernel, size).mean_rel_pct
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
fn throughput_ordering_is_the_seeds() {
    // Seed: 6.9 4K 0.0, 64K -9.1, 2M +88.9; 6.10 4K +0.5, 64K +44.7, 2M +93.3.
    for k in ["6.9", "6.10"] {
        assert!(
            rel(k, "2M") > rel(k, "64K") && rel(k, "2M") > rel(k, "4K"),
            "{k}: 2M fastest"
        );
    }
    assert!(rel("6.10", "64K") > rel("6.10", "4K"), "6.10: 64K beats 4K");
    assert!(
        rel("6.9", "64K") < rel("6.9", "4K"),
        "6.9: splitting before swap-out makes 64K slower than 4K (the regression's sign): {}",
        rel("6.9", "64K")
    );
    assert!(rel("6.10", "64K") > rel("6.9", "64K"), "the series' gain");
    // The order-0 path is the same allocator code on both kernels (seed: 0.0 vs 0.5, std 3).
    assert!((rel("6.9", "4K") - rel("6.10", "4K")).abs() < 3.1);
}

#[test]
fn every_row_is_within_three_seed_stds_of_the_seed() {
    let mut misses = vec![];
    for r in &report().rows {
        let err = r.mean_rel_pct - r.seed_mean_rel_pct;
        if err.abs() > 3.0 * r.seed_std_rel_pct {
            misses.push(format!(
                "{} {}: ours {:+.1}%, seed {:+.1}% (std {:.1})",
                r.kernel, r.size, r.mean_rel_pct, r.seed_mean_rel_pct, r.seed_std_rel_pct
            ));
        }
    }
    assert!(misses.is_empty(), "{misses:?}");
}

#[test]
fn arm64_broadcasts_and_waits_once_per_swapped_out_folio() {
    let dsb = |k, s| row(k, s).cpu_ms_per_gib["tlb_dsb_ns"];
    for r in &report().rows {
        assert_eq!(r.nr_tlb_remote_flush, 0.0, "no IPIs on arm64: {r:?}");
    }
    // 4K waits for a DSB per page swapped out, 6.10 64K per 16 pages.
    assert!(dsb("6.10", "4K") > 5.0 * dsb("6.10", "64K"));
    // contpte blocks are unfolded only for large folios.
    let contpte = |k, s| {
        row(k, s)
            .cpu_ms_per_gib
            .get("contpte_convert PTE rewrite (pte_unmap_ns)")
            .copied()
            .unwrap_or(0.0)
    };
    assert_eq!(contpte("6.9", "4K"), 0.0);
    assert!(contpte("6.10", "64K") > 0.0 && contpte("6.9", "2M") > 0.0);
}
