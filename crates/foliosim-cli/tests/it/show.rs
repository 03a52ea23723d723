//! `foliosim show`: a bare release prints the release table's switches and the resolved
//! defaults with what chose them; a release outside 4.1-6.18 is an error naming the field.

fn show(args: &[&str]) -> (bool, String, String) {
    let out = crate::common::foliosim()
        .arg("show")
        .args(args)
        .env_remove("RUST_BACKTRACE")
        .output()
        .expect("run foliosim show");
    let text = |b: &[u8]| String::from_utf8_lossy(b).into_owned();
    (out.status.success(), text(&out.stdout), text(&out.stderr))
}

#[test]
fn show_kernel_6_6_prints_every_switch() {
    let (ok, out, err) = show(&["--kernel", "6.6"]);
    assert!(ok, "{err}");
    assert!(out.contains("kernel.version = \"6.6\""), "{out}");
    let on = |name: &str| out.lines().any(|l| l.contains("on ") && l.contains(name));
    let off = |name: &str| out.lines().any(|l| l.contains("off") && l.contains(name));
    assert!(on("ttu-batch-flush") && on("72b252aed506"), "{out}");
    assert!(on("lru-gen") && on("tlb-skip-inaccessible"), "{out}");
    assert!(
        off("anon-mthp") && off("zap-pte-batch") && off("swapin-mthp"),
        "{out}"
    );
    for key in [
        "kernel.swap_allocator = legacy: release table: swap-all-orders (6.10, 845982eb264b) off",
        "kernel.swapin_mthp = false: release table: swapin-mthp",
        "kernel.zswap_large_folios = reject: release table",
        "sysfs.defrag = madvise: release table: thp-defrag-madvise (4.6, 444eb2a449ef) on",
        "kernel.lru_policy = classic: default",
        "kernel.thp_fault_alloc = direct: default",
    ] {
        assert!(out.contains(key), "{key} in\n{out}");
    }
}

#[test]
fn show_kernel_outside_the_range_names_the_field() {
    for bad in ["3.10", "6.19", "7.0", "abc", "4.21"] {
        let (ok, _, err) = show(&["--kernel", bad]);
        assert!(!ok, "{bad} accepted");
        assert!(
            err.contains("kernel.version") && err.contains(bad) && err.contains("6.18"),
            "{bad}: {err}"
        );
    }
}

#[test]
fn show_scenario_keeps_toml_and_says_what_chose() {
    let dir = std::env::temp_dir().join(format!("foliosim-show-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let path = dir.join("s.toml");
    let text = "[kernel]\nversion = \"6.12\"\nswap_allocator = \"legacy\"\n\n\
                [[workload]]\nkind = \"usemem\"\nnproc = 1\nsize = \"1M\"\n";
    std::fs::write(&path, text).unwrap();
    let (ok, out, err) = show(&[path.to_str().unwrap()]);
    assert!(ok, "{err}");
    assert!(out.contains("version = \"6.12\""), "{out}");
    assert!(
        out.contains("kernel.swap_allocator = legacy: scenario"),
        "{out}"
    );
    let (ok, out, err) = show(&[path.to_str().unwrap(), "--kernel", "6.14"]);
    assert!(ok, "{err}");
    assert!(out.contains("version = \"6.14\""), "{out}");
    std::fs::remove_dir_all(&dir).unwrap();
}
