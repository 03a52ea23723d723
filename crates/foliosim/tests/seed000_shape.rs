//! Seed 000's shape, scaled down (sizes x0.03, the scheduler slice with them), invariants on,
//! on the seed's machine (arm64 VM, 8 CPUs, broadcast TLBI, contpte).
//! What holds (docs/seed000.md): the per-size counters; 6.10 64K much faster than 4K and than
//! 6.9 64K; 2M fastest on both kernels; no IPIs; one DSB per swapped-out folio. What does not:
//! the magnitudes (2M and 6.10 64K are 3-7x the seed's gain) and the sign of 6.9 64K (the seed:
//! -9%; here faster than 4K). Those are asserted only as bands, so a change that moves them is
//! seen and docs/seed000.md updated.

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

#[test]
fn magnitudes_stay_in_the_documented_bands() {
    let rel = |k, s| row(k, s).mean_rel_pct;
    // docs/seed000.md: the seed's -9% does not emerge; the model gives +40..+80%.
    assert!(
        (0.0..150.0).contains(&rel("6.9", "64K")),
        "{}",
        rel("6.9", "64K")
    );
    // Seed +45% / +89..93%: the model overshoots (per-4K-folio kernel work is large against
    // the per-page memory streams on the borrowed x86 costs).
    assert!(
        (100.0..800.0).contains(&rel("6.10", "64K")),
        "{}",
        rel("6.10", "64K")
    );
    for k in ["6.9", "6.10"] {
        assert!(
            (200.0..1500.0).contains(&rel(k, "2M")),
            "{k}: {}",
            rel(k, "2M")
        );
    }
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
