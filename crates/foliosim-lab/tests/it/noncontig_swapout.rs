//! The non-contiguous swap-out fallback (seed 003's idea, not upstream) against the kernel's
//! split: on a swap device fragmented by thp_swap_allocator_test, it keeps every large folio
//! whole (no swpout_fallback), pays for it in bios (one per run of adjacent slots) and gets
//! the folio back page by page (its PTEs do not hold contiguous entries).

use foliosim::scenario::{Kernel, Release, SwapAllocatorKind, SwapoutFallbackKind};
use foliosim::RunResult;
use foliosim_lab::reproduce::seed003::allocator_test_scenario;

fn run(fallback: SwapoutFallbackKind) -> RunResult {
    // 6.18 swaps mTHP in whole; 6.10's allocator fragments the device.
    let kernel = Kernel {
        version: Release::V6_18,
        swap_allocator: Some(SwapAllocatorKind::PercpuOrder),
        swapout_fallback: fallback,
        ..Kernel::default()
    };
    let mut s = allocator_test_scenario(kernel, false, 4, 1);
    s.check_invariants = true;
    foliosim::run(&s).unwrap()
}

#[test]
fn non_contiguous_swapout_never_splits_but_writes_more_bios() {
    let split = run(SwapoutFallbackKind::Split);
    let scattered = run(SwapoutFallbackKind::NonContiguous);
    let stat = |r: &RunResult, s: &str| r.counter(&format!("hugepages-64kB/stats/{s}"));
    assert!(
        stat(&split, "swpout_fallback") > 0,
        "the device never fragmented"
    );
    assert_eq!(stat(&split, "swpout_noncontig"), 0);
    assert_eq!(stat(&scattered, "swpout_fallback"), 0);
    assert!(stat(&scattered, "swpout_noncontig") > 0);
    // The 64K folios split writes go out whole instead, on more bios than folios.
    assert!(stat(&scattered, "swpout") > stat(&split, "swpout"));
    let bios = |r: &RunResult| r.swap_devices.iter().map(|d| d.write_requests).sum::<u64>();
    let folios_out =
        |r: &RunResult| stat(r, "swpout") + r.counter("pswpout") - 16 * stat(r, "swpout");
    for (name, r) in [("split", &split), ("non-contiguous", &scattered)] {
        eprintln!(
            "{name}: 64K swpout {} swpout_fallback {} swpout_noncontig {} swpin {} pswpout {} write bios {} sim {:.3} s",
            stat(r, "swpout"),
            stat(r, "swpout_fallback"),
            stat(r, "swpout_noncontig"),
            stat(r, "swpin"),
            r.counter("pswpout"),
            bios(r),
            r.simulated_ns as f64 / 1e9
        );
    }
    assert_eq!(bios(&split), folios_out(&split), "one bio per folio");
    assert!(
        bios(&scattered) > folios_out(&scattered),
        "scattered folios take more than one bio each"
    );
}
