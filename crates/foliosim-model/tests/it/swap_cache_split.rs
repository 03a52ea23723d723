//! A large folio in the swap cache can be split: on a device with asynchronous writeback (SSD,
//! HDD) folios stay in the swap cache after swap-out, and MADV_PAGEOUT of part of one splits
//! it into pages each in the swap cache on its own slot. The shipped
//! thp_swap_allocator_test scenario (a ramdisk) on such a device used to stop with "split of folio in the
//! swap cache is not modelled". Invariants (swap cache <-> folio slots) are checked.

use foliosim_model::Scenario;

fn shipped_on(kind: &str) -> Scenario {
    let path = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../../scenarios/thp-swap-allocator-test.toml"
    );
    let text = std::fs::read_to_string(path).unwrap();
    assert!(
        text.contains("kind = \"ramdisk\""),
        "the shipped scenario swaps to a ramdisk"
    );
    let text = format!(
        "check_invariants = true\n{}",
        text.replace("kind = \"ramdisk\"", &format!("kind = \"{kind}\""))
    );
    Scenario::from_toml_str(&text).unwrap_or_else(|e| panic!("{e}"))
}

#[test]
fn thp_swap_allocator_test_runs_on_ssd_and_hdd() {
    for kind in ["ssd", "hdd"] {
        let r = foliosim_model::run(&shipped_on(kind)).unwrap_or_else(|e| panic!("{kind}: {e}"));
        let c = |name: &str| r.counters.get(name).copied().unwrap_or(0);
        assert!(
            c("hugepages-64kB/stats/split") > 0,
            "{kind}: folios were split"
        );
        assert!(c("pswpout") > 0, "{kind}");
        assert!(
            c("nr_swapcached") > 0,
            "{kind}: written pages stay in the swap cache"
        );
    }
}
