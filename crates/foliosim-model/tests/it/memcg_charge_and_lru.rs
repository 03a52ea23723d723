//! At a memcg limit: a large folio's charge follows `transparent_hugepage/defrag`
//! (vma_thp_gfp_mask), memcg reclaim is counted where the kernel counts it, and pages written
//! once are reclaimed from the inactive list without being activated. Small, invariants on.

use foliosim_model::{RunResult, Scenario};

/// usemem, one process writing 16 MiB through an 8 MiB memcg; `size` enabled `always`.
fn run(size: &str, defrag: Option<&str>, madv_hugepage: bool) -> RunResult {
    let defrag = defrag.map_or(String::new(), |d| format!("defrag = \"{d}\""));
    let other = if size == "2M" { "64K" } else { "2M" };
    // 4K is the base page, not a knob: every other size off is what maps 4K.
    let enabled = if size == "4K" {
        String::new()
    } else {
        format!("\"{size}\" = \"always\"")
    };
    let text = format!(
        r#"
check_invariants = true
[machine]
cpus = 2
memory = "256M"
[[machine.swap]]
kind = "ramdisk"
size = "64M"
[kernel]
version = "6.18"
[sysfs]
{defrag}
[sysfs.hugepages]
{enabled}
"{other}" = "never"
[[memcg]]
name = "a"
max = "8M"
[[workload]]
kind = "usemem"
nproc = 1
size = "16M"
memcg = "a"
madv_hugepage = {madv_hugepage}
"#
    );
    let s = Scenario::from_toml_str(&text).unwrap_or_else(|e| panic!("{e}"));
    foliosim_model::run(&s).unwrap_or_else(|e| panic!("{size} {defrag}: {e}"))
}

const CHARGE_64K: &str = "hugepages-64kB/stats/anon_fault_fallback_charge";

#[test]
fn without_direct_reclaim_a_64k_charge_falls_back_at_the_limit() {
    // Default (the kernel's `madvise`), `never` and `defer`: no MADV_HUGEPAGE, no reclaim.
    for defrag in [None, Some("madvise"), Some("never"), Some("defer")] {
        let r = run("64K", defrag, false);
        let charge = r.counter(CHARGE_64K);
        assert!(charge > 0, "{defrag:?}: no charge fallback");
        assert_eq!(
            r.counter("hugepages-64kB/stats/anon_fault_fallback"),
            charge,
            "{defrag:?}: every fallback is a charge fallback (memory is plentiful)"
        );
        assert_eq!(r.counter("oom_kill"), 0);
    }
}

#[test]
fn a_charge_that_may_reclaim_does() {
    // `always` reclaims (once, __GFP_NORETRY) for any VMA; `madvise` and `defer+madvise` for
    // MADV_HUGEPAGE VMAs.
    for (defrag, madvised) in [
        ("always", false),
        ("always", true),
        ("madvise", true),
        ("defer+madvise", true),
    ] {
        let r = run("64K", Some(defrag), madvised);
        assert_eq!(r.counter(CHARGE_64K), 0, "{defrag} madvised {madvised}");
        assert_eq!(
            r.counter("hugepages-64kB/stats/anon_fault_alloc"),
            256,
            "{defrag} madvised {madvised}"
        );
    }
}

#[test]
fn a_pmd_fault_charge_follows_the_same_rule() {
    let r = run("2M", Some("madvise"), false);
    let charge = r.counter("thp_fault_fallback_charge");
    assert!(charge > 0);
    assert_eq!(
        r.counter("hugepages-2048kB/stats/anon_fault_fallback_charge"),
        charge
    );
    assert_eq!(r.counter("thp_fault_fallback"), charge);
    let r = run("2M", Some("always"), false);
    assert_eq!(r.counter("thp_fault_fallback_charge"), 0);
    assert_eq!(r.counter("thp_fault_alloc"), 8);
}

#[test]
fn memcg_reclaim_counts_as_anon_scans_and_in_the_memcg_not_as_direct_reclaim() {
    for size in ["4K", "64K"] {
        let r = run(size, Some("always"), false);
        let (scan, steal) = (r.counter("pgscan_anon"), r.counter("pgsteal_anon"));
        assert!(scan >= steal && steal > 0, "{size}");
        assert_eq!(steal, r.counter("pswpout"), "{size}");
        assert_eq!(r.counter("pgscan_direct"), 0, "{size}: global-only counter");
        assert_eq!(
            r.counter("pgsteal_direct"),
            0,
            "{size}: global-only counter"
        );
        let a = &r.memcg_stats["a"];
        assert_eq!((a["pgscan_direct"], a["pgsteal_direct"]), (scan, steal));
    }
}

#[test]
fn pages_written_once_are_reclaimed_without_activation() {
    // New anon folios go on the inactive list; the first reclaim trip finds them young and
    // rotates them (PG_referenced), the second reclaims them. Nothing is activated, so the
    // active list never needs deactivating.
    for size in ["4K", "64K", "2M"] {
        let r = run(size, Some("always"), false);
        assert_eq!(r.counter("pgactivate"), 0, "{size}");
        assert_eq!(r.counter("pgdeactivate"), 0, "{size}");
        // Every page was scanned twice: once young, once to reclaim.
        assert!(
            r.counter("pgscan_anon") >= 2 * r.counter("pgsteal_anon") - 512,
            "{size}: scanned {} stole {}",
            r.counter("pgscan_anon"),
            r.counter("pgsteal_anon")
        );
    }
}

#[test]
fn global_reclaim_is_kswapd_and_direct_reclaim() {
    let text = r#"
check_invariants = true
[machine]
cpus = 2
memory = "16M"
# zram: its compressed store takes machine memory too, but less than the pages it frees (a
# RAM disk would take a page per page and leave global reclaim nothing to gain).
[[machine.swap]]
kind = "zram"
size = "64M"
[kernel]
version = "6.18"
[[workload]]
kind = "usemem"
nproc = 1
size = "24M"
"#;
    let r = foliosim_model::run(&Scenario::from_toml_str(text).unwrap()).unwrap();
    // kswapd (woken below the low watermark) reclaims in the background; faults that find
    // the min watermark reached reclaim directly.
    assert!(r.counter("pgsteal_kswapd") > 0);
    assert!(r
        .kernel_threads
        .iter()
        .any(|t| t.name == "kswapd0" && t.sys_ns > 0));
    let sum = |a: &str, b: &str| r.counter(a) + r.counter(b);
    assert_eq!(
        sum("pgscan_direct", "pgscan_kswapd"),
        r.counter("pgscan_anon")
    );
    assert_eq!(
        sum("pgsteal_direct", "pgsteal_kswapd"),
        r.counter("pgsteal_anon")
    );
    assert_eq!(
        r.memcg_stats["/"]["pgsteal_direct"],
        r.counter("pgsteal_direct")
    );
}
