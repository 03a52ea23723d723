//! Bad input to `Scenario::from_toml_str`: every case is an `Err` (never a panic) whose Display
//! text names the field, the offending value and what is allowed.

use foliosim_model::Scenario;

/// A valid scenario; cases below replace pieces of it.
const BASE: &str = r#"
seed = 1

[machine]
cpus = 4
memory = "1G"

[[machine.swap]]
kind = "ramdisk"
size = "512M"

[kernel]
version = "6.10"

[sysfs.hugepages]
"64K" = "always"

[[memcg]]
name = "bench"
max = "256M"

[[workload]]
kind = "usemem"
nproc = 8
size = "64M"
memcg = "bench"
"#;

/// Parse `text` expecting an error (a panic fails the test with the case name); return the
/// error's Display text after checking it mentions each of `needles`.
fn expect_err(case: &str, text: &str, needles: &[&str]) -> String {
    let result = std::panic::catch_unwind(|| Scenario::from_toml_str(text));
    let result = result.unwrap_or_else(|_| panic!("case `{case}`: from_toml_str panicked"));
    let err = match result {
        Ok(_) => panic!("case `{case}`: parsed, expected an error\n{text}"),
        Err(e) => e.to_string(),
    };
    for n in needles {
        assert!(
            err.contains(n),
            "case `{case}`: error does not mention `{n}`:\n{err}"
        );
    }
    if std::env::var_os("SHOW_ERRORS").is_some() {
        eprintln!("--- {case}:\n{err}");
    }
    err
}

fn replace(from: &str, to: &str) -> String {
    assert!(BASE.contains(from), "BASE has no `{from}`");
    BASE.replacen(from, to, 1)
}

#[test]
fn base_is_valid() {
    Scenario::from_toml_str(BASE).expect("BASE parses");
}

#[test]
fn unknown_top_level_key() {
    let t = format!("colour = \"blue\"\n{BASE}");
    expect_err(
        "unknown top-level key",
        &t,
        &["colour", "seed", "machine", "workload"],
    );
}

#[test]
fn unknown_machine_key() {
    let t = replace("cpus = 4", "cpus = 4\nsockets = 2");
    expect_err(
        "unknown key in [machine]",
        &t,
        &["sockets", "cpus", "memory", "swap"],
    );
}

#[test]
fn zero_cpus() {
    let t = replace("cpus = 4", "cpus = 0");
    expect_err("cpus = 0", &t, &["machine.cpus", "0", "1 ..= 1024"]);
}

#[test]
fn memory_bad_suffix() {
    let t = replace("memory = \"1G\"", "memory = \"12X\"");
    expect_err("memory = 12X", &t, &["memory", "12X", "K, M, G or T"]);
}

#[test]
fn memory_negative() {
    let t = replace("memory = \"1G\"", "memory = \"-1G\"");
    expect_err("memory = -1G", &t, &["memory", "-1G", "non-negative"]);
}

#[test]
fn memory_too_small() {
    let t = replace("memory = \"1G\"", "memory = \"1M\"");
    expect_err("memory = 1M", &t, &["machine.memory", "1M", "16M ..= 4T"]);
}

#[test]
fn swap_kind_tape() {
    let t = replace("kind = \"ramdisk\"", "kind = \"tape\"");
    expect_err(
        "swap kind tape",
        &t,
        &["kind", "tape", "ramdisk", "ssd", "hdd"],
    );
}

#[test]
fn swap_too_small() {
    let t = replace("size = \"512M\"", "size = \"1M\"");
    expect_err(
        "swap size 1M",
        &t,
        &["machine.swap[0].size", "1M", "4M ..= 1T"],
    );
}

#[test]
fn kernel_version_unknown() {
    for bad in ["3.10", "6.19", "7.0", "abc", "5.20"] {
        let t = replace("version = \"6.10\"", &format!("version = \"{bad}\""));
        expect_err(bad, &t, &["kernel.version", bad, "4.1", "6.18"]);
    }
    let t = replace("version = \"6.10\"", "version = 6.10");
    expect_err("unquoted", &t, &["kernel.version", "\"6.10\""]);
}

#[test]
fn swap_allocator_unknown() {
    let t = replace(
        "version = \"6.10\"",
        "version = \"6.10\"\nswap_allocator = \"foo\"",
    );
    expect_err(
        "swap_allocator foo",
        &t,
        &["swap_allocator", "foo", "legacy", "percpu-order"],
    );
}

#[test]
fn hugepages_size_not_a_power_of_two() {
    let t = replace("\"64K\" = \"always\"", "\"3K\" = \"always\"");
    expect_err(
        "hugepages 3K",
        &t,
        &["sysfs.hugepages", "3K", "16K", "64K", "2M"],
    );
}

#[test]
fn hugepages_size_bad_suffix() {
    let t = replace("\"64K\" = \"always\"", "\"64Q\" = \"always\"");
    expect_err(
        "hugepages 64Q",
        &t,
        &["sysfs.hugepages", "64Q", "16K", "2M"],
    );
}

#[test]
fn hugepages_value_unknown() {
    let t = replace("\"64K\" = \"always\"", "\"64K\" = \"sometimes\"");
    expect_err(
        "hugepages sometimes",
        &t,
        &["64K", "sometimes", "always", "madvise", "inherit", "never"],
    );
}

#[test]
fn memcg_max_too_small() {
    let t = replace("max = \"256M\"", "max = \"1K\"");
    expect_err("memcg max 1K", &t, &["memcg[0].max", "1K", ">= 1M"]);
}

#[test]
fn memcg_duplicate_names() {
    let t = replace("[[memcg]]", "[[memcg]]\nname = \"bench\"\n\n[[memcg]]");
    expect_err("duplicate memcg", &t, &["memcg[1].name", "bench", "unique"]);
}

/// Memcg ids are a u16 (MEM_CGROUP_ID_MAX = 65535, the root's included): one memcg more than
/// the ids left is refused by name. A chain as deep as allowed validates and is linked into
/// its tree (the parent checks once searched every earlier memcg, and the tree walk recursed:
/// 10^5 memcgs hung).
#[test]
fn memcg_count_is_bounded_and_a_full_chain_is_linked() {
    use foliosim_model::mm::memcontrol::{link_parents, MemCgroup, MemcgTree};
    use foliosim_model::scenario::{CgroupVersion, MemcgSpec, MAX_MEMCGS};
    let mut s = Scenario::from_toml_str(BASE).unwrap();
    s.memcgs = (0..MAX_MEMCGS)
        .map(|i| MemcgSpec {
            parent: (i > 0).then(|| format!("m{}", i - 1)),
            ..MemcgSpec::with_max(&format!("m{i}"), None)
        })
        .collect();
    s.memcgs[0].name = "bench".into();
    s.memcgs[1].parent = Some("bench".into());
    s.validate().expect("65534 memcgs in a chain are allowed");
    let mut cgs = vec![MemCgroup::new("/".into(), None)];
    cgs.extend(
        s.memcgs
            .iter()
            .map(|m| MemCgroup::from_spec(m, CgroupVersion::V2)),
    );
    link_parents(&mut cgs, &s.memcgs);
    let tree = MemcgTree::new(&cgs);
    assert_eq!(
        tree.subtree(1).len(),
        MAX_MEMCGS,
        "the chain under the first"
    );
    assert!(tree.is_descendant(MAX_MEMCGS as u16, 1));

    s.memcgs.push(MemcgSpec::with_max("one-too-many", None));
    let err = s.validate().expect_err("65535 memcgs").to_string();
    for needle in ["field `memcg`", "65535 [[memcg]] tables", "at most 65534"] {
        assert!(err.contains(needle), "`{needle}` not in: {err}");
    }
}

#[test]
fn workload_kind_unknown() {
    let t = replace("kind = \"usemem\"", "kind = \"nope\"");
    expect_err("workload kind nope", &t, &["kind", "nope", "usemem"]);
}

#[test]
fn usemem_zero_nproc() {
    let t = replace("nproc = 8", "nproc = 0");
    expect_err("nproc 0", &t, &["workload[0].nproc", "0", "1 ..= 100000"]);
}

#[test]
fn usemem_undefined_memcg() {
    let t = replace("memcg = \"bench\"", "memcg = \"batch\"");
    expect_err(
        "undefined memcg",
        &t,
        &["workload[0].memcg", "batch", "bench"],
    );
    // With no memcg defined at all, the message says so.
    let none = replace("[[memcg]]\nname = \"bench\"\nmax = \"256M\"\n", "");
    let t = none.replacen("memcg = \"bench\"", "memcg = \"batch\"", 1);
    expect_err(
        "undefined memcg, none defined",
        &t,
        &["workload[0].memcg", "batch", "none defined"],
    );
}

#[test]
fn no_workload() {
    let cut = BASE.find("[[workload]]").unwrap();
    expect_err(
        "no workload",
        &BASE[..cut],
        &["workload", "none", "[[workload]]"],
    );
}

#[test]
fn unknown_cost_name() {
    let t = format!("{BASE}\n[costs]\nno_such_cost = 1\n");
    expect_err(
        "costs.no_such_cost",
        &t,
        &[
            "costs.no_such_cost",
            "no_such_cost",
            "fault_4k_ns",
            "swap_alloc_ns",
        ],
    );
}

#[test]
fn times_that_would_overflow_simulated_time() {
    // Once accepted and run, these wrapped simulated time and printed a normal-looking table.
    let t = format!("{BASE}\n[costs]\nfault_4k_ns = 1e30\n");
    expect_err("costs 1e30", &t, &["costs.fault_4k_ns", "1e12"]);
    let t = replace(
        "kind = \"ramdisk\"",
        "kind = \"ssd\"\nlatency_ns = 2000000000000",
    );
    expect_err(
        "swap latency",
        &t,
        &["machine.swap[0].latency_ns", "1000 s"],
    );
    let t = replace(
        "kind = \"usemem\"\nnproc = 8\nsize = \"64M\"",
        "kind = \"kbuild\"\njobs = 10\njobs_concurrent = 2\nuser_ns_per_page = 2000000000000",
    );
    expect_err(
        "kbuild user time",
        &t,
        &["workload[0].user_ns_per_page", "1000 s"],
    );
}

#[test]
fn negative_cost() {
    let t = format!("{BASE}\n[costs]\nfault_4k_ns = -5\n");
    expect_err(
        "costs.fault_4k_ns = -5",
        &t,
        &["costs.fault_4k_ns", "-5", "0 ..= 1e12"],
    );
}

#[test]
fn sched_slice_too_small() {
    let t = replace("cpus = 4", "cpus = 4\nsched_slice_ns = 1");
    expect_err(
        "sched_slice_ns = 1",
        &t,
        &["machine.sched_slice_ns", "found 1;", "10000 ..= 1000000000"],
    );
}

#[test]
fn toml_syntax_error() {
    let t = replace("cpus = 4", "cpus = = 4");
    let err = expect_err("syntax error", &t, &["line"]);
    assert!(
        err.contains("cpus"),
        "syntax error should show the offending line:\n{err}"
    );
}

#[test]
fn wrong_type() {
    let t = replace("cpus = 4", "cpus = \"four\"");
    expect_err("cpus string", &t, &["cpus", "four"]);
}

#[test]
fn minimal_scenario_parses_with_defaults() {
    let s = Scenario::from_toml_str("[[workload]]\nkind = \"usemem\"\nnproc = 1\nsize = \"1M\"\n")
        .expect("minimal scenario");
    assert_eq!(s.seed, 1);
    assert_eq!(s.machine.cpus, 8);
    assert_eq!(s.machine.memory.0, 16 << 30);
    assert_eq!(s.machine.sched_slice_ns, 3_000_000);
    assert!(s.machine.swap_devices.is_empty());
    assert_eq!(s.kernel.version, foliosim_model::scenario::Release::V6_10);
    assert_eq!(s.workloads.len(), 1);
    assert!(!s.check_invariants);
}

fn round_trip(text: &str) {
    let s = Scenario::from_toml_str(text).expect("scenario parses");
    let first = s.to_toml_string();
    let again = Scenario::from_toml_str(&first)
        .unwrap_or_else(|e| panic!("serialized scenario does not parse: {e}\n{first}"));
    let second = again.to_toml_string();
    assert_eq!(first, second, "to_toml_string does not round-trip");
}

#[test]
fn round_trip_minimal() {
    round_trip("[[workload]]\nkind = \"usemem\"\nnproc = 1\nsize = \"1M\"\n");
}

#[test]
fn round_trip_full() {
    let t = format!(
        "{}\ncheck_invariants = true\n{}\n[costs]\nfault_4k_ns = 1500\nswap_alloc_ns = 12.5\n",
        "",
        BASE.replacen(
            "version = \"6.10\"",
            "version = \"6.9\"\nswap_allocator = \"percpu-order\"",
            1
        )
        .replacen(
            "size = \"512M\"",
            "size = \"1.5G\"\npriority = 5\nlatency_ns = 1000\nbandwidth_bytes_per_s = 1000000000",
            1
        )
        .replacen("[[memcg]]", "[[memcg]]\nname = \"other\"\n\n[[memcg]]", 1)
        .replacen(
            "memcg = \"bench\"",
            "memcg = \"bench\"\nmadv_hugepage = true\npageout_after_write = true",
            1
        )
    );
    round_trip(&t);
    let s = Scenario::from_toml_str(&t).unwrap();
    assert_eq!(s.machine.swap_devices[0].size.0, 3 << 29);
    assert_eq!(s.memcgs.len(), 2);
    assert!(s.check_invariants);
}

#[test]
fn round_trip_repository_scenarios() {
    let dir = concat!(env!("CARGO_MANIFEST_DIR"), "/../../scenarios");
    let mut n = 0;
    for entry in std::fs::read_dir(dir).expect("scenarios/ exists") {
        let path = entry.unwrap().path();
        if path.extension().is_some_and(|e| e == "toml") {
            round_trip(&std::fs::read_to_string(&path).unwrap());
            n += 1;
        }
    }
    assert!(n > 0, "no scenario files found in {dir}");
}

/// A per-size key that validates must take effect (or be rejected): `"64k"` (lowercase),
/// `"65536"`, `"0.0625M"` and `"64.0K"` all parse as 64 KiB. Regression: `Sysfs::orders_enabled`
/// once looked keys up only under the canonical spelling "64K", so these enabled nothing.
#[test]
fn hugepages_key_spelling_takes_effect_or_is_rejected() {
    for key in ["64k", "65536", "0.0625M", "64.0K"] {
        let t = replace("\"64K\" = \"always\"", &format!("\"{key}\" = \"always\""));
        match Scenario::from_toml_str(&t) {
            Err(e) => assert!(e.to_string().contains(key), "{key}: {e}"),
            Ok(s) => assert_eq!(
                s.sysfs.orders_enabled(false),
                1 << 4,
                "key `{key}` accepted but 64K not enabled"
            ),
        }
    }
}

#[test]
fn hugepages_same_size_twice() {
    let t = replace(
        "\"64K\" = \"always\"",
        "\"64K\" = \"always\"\n\"64k\" = \"never\"",
    );
    expect_err("64K and 64k", &t, &["sysfs.hugepages", "64k", "once"]);
}

#[test]
fn seed003_fields() {
    expect_err(
        "discard on a ramdisk",
        &replace("size = \"512M\"", "size = \"512M\"\ndiscard = true"),
        &["machine.swap[0].discard", "ramdisk", "ssd"],
    );
    expect_err(
        "erase block not a power of two",
        &replace(
            "kind = \"ramdisk\"\nsize = \"512M\"",
            "kind = \"ssd\"\nsize = \"512M\"\nerase_block = \"96K\"",
        ),
        &["machine.swap[0].erase_block", "96K", "power of two"],
    );
    expect_err(
        "mthp reserve with the 6.10 allocator",
        &replace(
            "size = \"512M\"",
            "size = \"512M\"\nmthp_reserve_percent = 20",
        ),
        &[
            "machine.swap[0].mthp_reserve_percent",
            "20",
            "cluster-lists",
        ],
    );
    expect_err(
        "unknown kernel version",
        &replace("version = \"6.10\"", "version = \"6.19\""),
        &["6.19", "4.1", "6.18"],
    );
    expect_err(
        "unknown allocator",
        &replace(
            "version = \"6.10\"",
            "version = \"6.10\"\nswap_allocator = \"buddy\"",
        ),
        &["buddy", "cluster-lists-c18"],
    );
    let kbuild = |fields: &str| {
        replace(
            "kind = \"usemem\"\nnproc = 8\nsize = \"64M\"",
            &format!("kind = \"kbuild\"\n{fields}"),
        )
    };
    expect_err(
        "kbuild without concurrency",
        &kbuild("jobs = 10\njobs_concurrent = 0"),
        &["workload[0].jobs_concurrent", "0", "1 ..= 4096"],
    );
    expect_err(
        "kbuild rss_max below rss_min",
        &kbuild("jobs = 10\njobs_concurrent = 2\nrss_min = \"64M\"\nrss_max = \"8M\""),
        &["workload[0].rss_max", "8M", "64M"],
    );
    expect_err(
        "allocator test with no iterations",
        &replace(
            "kind = \"usemem\"\nnproc = 8\nsize = \"64M\"",
            "kind = \"thp_swap_allocator_test\"\niterations = 0",
        ),
        &["workload[0].iterations", "0"],
    );
}

#[test]
fn sysctl_vm_knobs_are_range_checked() {
    let with = |knobs: &str| replace("[kernel]", &format!("[sysctl.vm]\n{knobs}\n\n[kernel]"));
    expect_err(
        "watermark_scale_factor 0",
        &with("watermark_scale_factor = 0"),
        &["sysctl.vm.watermark_scale_factor", "found 0", "1 ..= 3000"],
    );
    expect_err(
        "watermark_scale_factor 3001",
        &with("watermark_scale_factor = 3001"),
        &["sysctl.vm.watermark_scale_factor", "3001", "1 ..= 3000"],
    );
    expect_err(
        "watermark_boost_factor negative",
        &with("watermark_boost_factor = -1"),
        &["watermark_boost_factor"],
    );
    expect_err(
        "watermark_boost_factor past an int",
        &with("watermark_boost_factor = 3000000000"),
        &["sysctl.vm.watermark_boost_factor", "0 ..= 2147483647"],
    );
    // BASE has 1 GiB: min_free_kbytes must stay under half of it.
    expect_err(
        "min_free_kbytes half the machine",
        &with("min_free_kbytes = 524288"),
        &[
            "sysctl.vm.min_free_kbytes",
            "524288",
            "0 ..= 524287",
            "machine.memory",
        ],
    );
    // Compaction's knobs: the kernel's proc_dointvec_minmax ranges.
    expect_err(
        "extfrag_threshold 1001",
        &with("extfrag_threshold = 1001"),
        &["sysctl.vm.extfrag_threshold", "1001", "0 ..= 1000"],
    );
    expect_err(
        "extfrag_threshold negative",
        &with("extfrag_threshold = -1"),
        &["extfrag_threshold"],
    );
    expect_err(
        "compaction_proactiveness 101",
        &with("compaction_proactiveness = 101"),
        &["sysctl.vm.compaction_proactiveness", "101", "0 ..= 100"],
    );
    expect_err(
        "compact_unevictable_allowed 2",
        &with("compact_unevictable_allowed = 2"),
        &["sysctl.vm.compact_unevictable_allowed", "2", "0 ..= 1"],
    );
    let compaction = with(
        "extfrag_threshold = 1000\ncompaction_proactiveness = 0\ncompact_unevictable_allowed = 0",
    );
    round_trip(&compaction);
    let s = Scenario::from_toml_str(&compaction).unwrap();
    assert_eq!(s.sysctl.vm.extfrag_threshold, Some(1000));
    assert_eq!(s.sysctl.vm.compaction_proactiveness, Some(0));
    assert_eq!(s.sysctl.vm.compact_unevictable_allowed, Some(0));
    expect_err(
        "unknown vm knob",
        &with("overcommit_memory = 1"),
        &["overcommit_memory"],
    );
    expect_err(
        "swappiness 201",
        &with("swappiness = 201"),
        &["sysctl.vm.swappiness", "201", "0 ..= 200"],
    );
    let ok =
        with("watermark_scale_factor = 200\nwatermark_boost_factor = 0\nmin_free_kbytes = 65536");
    round_trip(&ok);
    let s = Scenario::from_toml_str(&ok).unwrap();
    assert_eq!(s.sysctl.vm.watermark_scale_factor, Some(200));
    assert_eq!(s.sysctl.vm.min_free_kbytes, Some(65536));
}

#[test]
fn khugepaged_knobs_are_range_checked() {
    let with = |knobs: &str| {
        replace(
            "[[memcg]]",
            &format!("[sysfs.khugepaged]\n{knobs}\n\n[[memcg]]"),
        )
    };
    for name in ["max_ptes_none", "max_ptes_swap", "max_ptes_shared"] {
        expect_err(
            name,
            &with(&format!("{name} = 512")),
            &[&format!("sysfs.khugepaged.{name}"), "512", "0 ..= 511"],
        );
    }
    expect_err(
        "pages_to_scan 0",
        &with("pages_to_scan = 0"),
        &["sysfs.khugepaged.pages_to_scan", "found 0", ">= 1"],
    );
    expect_err(
        "scan_sleep_millisecs negative",
        &with("scan_sleep_millisecs = -1"),
        &["scan_sleep_millisecs"],
    );
    expect_err(
        "alloc_sleep_millisecs past a u32",
        &with("alloc_sleep_millisecs = 5000000000"),
        &["alloc_sleep_millisecs"],
    );
    expect_err("defrag not a bool", &with("defrag = 2"), &["defrag"]);
    expect_err(
        "unknown khugepaged knob",
        &with("max_ptes_zero = 1"),
        &["max_ptes_zero"],
    );
    let ok = with(
        "defrag = false\npages_to_scan = 512\nscan_sleep_millisecs = 100\n\
         alloc_sleep_millisecs = 1000\nmax_ptes_none = 0\nmax_ptes_swap = 511\n\
         max_ptes_shared = 0",
    );
    round_trip(&ok);
    let s = Scenario::from_toml_str(&ok).unwrap();
    assert_eq!(s.sysfs.khugepaged.max_ptes_none, Some(0));
    assert_eq!(s.sysfs.khugepaged.defrag, Some(false));
}

#[test]
fn mthp_size_on_a_4_1_kernel() {
    let t = replace("version = \"6.10\"", "version = \"4.1\"");
    expect_err(
        "64K on 4.1",
        &t,
        &["sysfs.hugepages.\"64K\"", "2M only", "4.1"],
    );
}

#[test]
fn mglru_on_a_4_1_kernel() {
    let t = replace("version = \"6.10\"", "version = \"4.1\"")
        .replacen(
            "[sysfs.hugepages]",
            "[sysfs.lru_gen]\nenabled = true\n[sysfs.hugepages]",
            1,
        )
        .replace("\"64K\" = \"always\"", "\"2M\" = \"always\"");
    expect_err(
        "MGLRU on 4.1",
        &t,
        &["sysfs.lru_gen.enabled", "true", "false", "4.1", "6.1"],
    );
}

#[test]
fn defer_defrag_on_a_4_1_kernel() {
    let t = replace("version = \"6.10\"", "version = \"4.1\"")
        .replacen(
            "[sysfs.hugepages]",
            "[sysfs]\ndefrag = \"defer\"\n[sysfs.hugepages]",
            1,
        )
        .replace("\"64K\" = \"always\"", "\"2M\" = \"always\"");
    expect_err(
        "defrag = defer on 4.1",
        &t,
        &["sysfs.defrag", "defer", "always, madvise, never", "4.1"],
    );
}

#[test]
fn unknown_thp_fault_alloc_policy() {
    let t = replace(
        "version = \"6.10\"",
        "version = \"6.10\"\nthp_fault_alloc = \"khugepaged\"",
    );
    expect_err(
        "thp_fault_alloc",
        &t,
        &["thp_fault_alloc", "khugepaged", "direct", "thp-avail-nodes"],
    );
}

/// BASE with a disk of `disk`, the `[[file]]` tables of `files` and a file_read workload on
/// `read`.
fn with_files(disk: &str, files: &str, read: &str) -> String {
    replace(
        "[kernel]",
        &format!(
            "[machine.disk]\n{disk}\n\n{files}\n\n[[workload]]\nkind = \"file_read\"\nfile = \"{read}\"\n\n[kernel]"
        ),
    )
}

#[test]
fn files_and_their_disk_are_checked() {
    let disk = "kind = \"ssd\"\nsize = \"64M\"";
    let data = "[[file]]\nname = \"data\"\nsize = \"32M\"";
    let ok = with_files(disk, data, "data");
    round_trip(&ok);
    expect_err(
        "file larger than the disk",
        &with_files(
            disk,
            &format!("{data}\n[[file]]\nname = \"big\"\nsize = \"48M\""),
            "data",
        ),
        &[
            "file[1].size",
            "48M",
            "at most 32M",
            "machine.disk.size = 64M",
        ],
    );
    expect_err(
        "unknown file",
        &with_files(disk, data, "nope"),
        &["workload[0].file", "`nope`", "a [[file]] name: data"],
    );
    expect_err(
        "file without a disk",
        &replace(
            "[kernel]",
            "[[file]]\nname = \"data\"\nsize = \"1M\"\n\n[kernel]",
        ),
        &["file[0]", "[machine.disk]"],
    );
    expect_err(
        "disk of kind zram",
        &with_files("kind = \"zram\"\nsize = \"64M\"", data, "data"),
        &["machine.disk.kind", "zram", "ssd, hdd, ramdisk"],
    );
    expect_err(
        "read_ahead_kb not in pages",
        &with_files(&format!("{disk}\nread_ahead_kb = 6"), data, "data"),
        &["machine.disk.read_ahead_kb", "6", "multiple of 4"],
    );
    expect_err(
        "a file twice",
        &with_files(disk, &format!("{data}\n{data}"), "data"),
        &["file[1].name", "`data`", "unique"],
    );
    expect_err(
        "file size not in pages",
        &with_files(disk, "[[file]]\nname = \"data\"\nsize = 5000", "data"),
        &["file[0].size", "whole number of 4K pages"],
    );
    expect_err(
        "file_read nproc 0",
        &with_files(disk, data, "data").replace("file = \"data\"", "file = \"data\"\nnproc = 0"),
        &["workload[0].nproc", "1 ..= 4096"],
    );
}

#[test]
fn a_lower_node_with_cpus() {
    let t = format!("{BASE}\n[[machine.node]]\nmemory = \"1G\"\ncpus = 2\n");
    expect_err(
        "node with cpus",
        &t,
        &["machine.node[0].cpus", "2", "machine.node[i].socket"],
    );
}

#[test]
fn a_lower_node_too_small() {
    let t = format!("{BASE}\n[[machine.node]]\nmemory = \"1M\"\n");
    expect_err(
        "node of 1M",
        &t,
        &["machine.node[0].memory", "1M", "16M ..= 4T"],
    );
}

#[test]
fn numa_balancing_normal_mode() {
    let t = format!("{BASE}\n[sysctl.kernel]\nnuma_balancing = 1\n");
    expect_err(
        "numa_balancing = 1",
        &t,
        &["sysctl.kernel.numa_balancing", "1", "0 or 2"],
    );
}

#[test]
fn numa_scan_size_zero() {
    let t = format!("{BASE}\n[sysctl.kernel]\nnuma_balancing_scan_size_mb = 0\n");
    expect_err(
        "scan size 0",
        &t,
        &["sysctl.kernel.numa_balancing_scan_size_mb", "0", "1 ..="],
    );
}

#[test]
fn migrate_tlb_flush_unknown() {
    let t = BASE.replace(
        "version = \"6.10\"",
        "version = \"6.10\"\nmigrate_tlb_flush = \"lazy\"",
    );
    expect_err("flush lazy", &t, &["migrate_tlb_flush", "lazy", "eager"]);
}

#[test]
fn wbt_lat_usec_only_on_queued_devices_and_bounded() {
    let on_ramdisk = replace(
        "size = \"512M\"\n",
        "size = \"512M\"\nwbt_lat_usec = 2000\n",
    );
    expect_err(
        "wbt_lat_usec on ramdisk",
        &on_ramdisk,
        &["machine.swap[0].wbt_lat_usec", "only for kind"],
    );
    let huge = replace(
        "kind = \"ramdisk\"\nsize = \"512M\"\n",
        "kind = \"file\"\nsize = \"512M\"\nwbt_lat_usec = 2000000000\n",
    );
    expect_err(
        "wbt_lat_usec too large",
        &huge,
        &[
            "machine.swap[0].wbt_lat_usec",
            "2000000000",
            "0 (wbt off) ..= 1000000000",
        ],
    );
    let off = replace(
        "kind = \"ramdisk\"\nsize = \"512M\"\n",
        "kind = \"file\"\nsize = \"512M\"\nwbt_lat_usec = 0\n",
    );
    assert!(Scenario::from_toml_str(&off).is_ok(), "0 turns wbt off");
}

#[test]
fn queue_limits_only_on_queued_devices_and_bounded() {
    let on_ramdisk = replace("size = \"512M\"\n", "size = \"512M\"\nmax_segments = 128\n");
    expect_err(
        "max_segments on ramdisk",
        &on_ramdisk,
        &["machine.swap[0].max_segments", "only for kind"],
    );
    for (field, bad, allowed) in [
        ("max_segments", "0", "1 ..= 65535"),
        ("max_sectors_kb", "2", "4 ..= 4194304"),
        ("max_segment_size", "512", "4096 ..= 4294967295"),
    ] {
        let t = replace(
            "kind = \"ramdisk\"\nsize = \"512M\"\n",
            &format!("kind = \"file\"\nsize = \"512M\"\n{field} = {bad}\n"),
        );
        let name = format!("machine.swap[0].{field}");
        expect_err(field, &t, &[name.as_str(), bad, allowed]);
    }
    let ok = replace(
        "kind = \"ramdisk\"\nsize = \"512M\"\n",
        "kind = \"file\"\nsize = \"512M\"\nmax_sectors_kb = 1280\nmax_segments = 254\n",
    );
    assert!(Scenario::from_toml_str(&ok).is_ok());
}
