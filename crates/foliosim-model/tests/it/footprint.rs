//! Scenarios too big for the simulator end with an error naming the fields, never an abort in
//! the allocator (issue 13): a static bound in validation, and the host's MemAvailable checked
//! before the kernel is built.

use foliosim_model::footprint::{
    check_host, estimate, host_available_bytes, HostLimit, STATIC_MAX_BYTES,
};
use foliosim_model::{Scenario, SimError};

const GIB: u64 = 1 << 30;

fn usemem(memory: &str, nproc: u32, size: &str) -> String {
    format!(
        r#"
[machine]
cpus = 4
memory = "{memory}"

[[workload]]
kind = "usemem"
nproc = {nproc}
size = "{size}"
"#
    )
}

/// Parse without panicking.
fn parse(text: &str) -> Result<Scenario, String> {
    std::panic::catch_unwind(|| Scenario::from_toml_str(text))
        .expect("from_toml_str panicked")
        .map_err(|e| e.to_string())
}

#[test]
fn machine_memory_4t_is_refused_naming_the_field() {
    let s = parse(&usemem("4T", 1, "1G")).expect("4T is within validation's bounds");
    let need = estimate(&s).total_bytes();
    assert!(need > 32 * GIB && need < STATIC_MAX_BYTES, "{need}");
    let err = check_host(&s, Some(HostLimit::mem_available(16 * GIB)))
        .unwrap_err()
        .to_string();
    for needle in [
        "machine.memory = 4T",
        "16.0 GiB",
        "MemAvailable",
        "make machine.memory smaller",
    ] {
        assert!(err.contains(needle), "`{needle}` not in: {err}");
    }
    // The run itself refuses it on a host that cannot hold it (this one), before allocating.
    if host_available_bytes().is_some_and(|a| a < need) {
        let result = std::panic::catch_unwind(|| foliosim_model::run(&s)).expect("run panicked");
        match result {
            Err(SimError::TooBig(e)) => assert!(e.to_string().contains("machine.memory")),
            Err(other) => panic!("{other}"),
            Ok(_) => panic!("a 4T machine ran"),
        }
    }
}

#[test]
fn a_huge_nproc_x_size_is_a_validation_error() {
    let err = parse(&usemem("1G", 100_000, "4T")).unwrap_err();
    for needle in [
        "workload[0].nproc x size",
        "100000 x 4T",
        "1 TiB",
        "page tables",
    ] {
        assert!(err.contains(needle), "`{needle}` not in: {err}");
    }
}

#[test]
fn a_large_nproc_x_size_is_refused_on_a_small_host() {
    let s = parse(&usemem("1G", 1000, "16G")).unwrap();
    let err = check_host(&s, Some(HostLimit::mem_available(8 * GIB)))
        .unwrap_err()
        .to_string();
    assert!(
        err.contains("make workload[0].nproc x size smaller"),
        "{err}"
    );
    assert!(err.contains("1000 x 16G"), "{err}");
    // Page tables alone: 1000 x 4M PTEs of 8 bytes.
    assert!(estimate(&s).total_bytes() >= 1000 * (4 << 20) * 8);
    assert!(check_host(&s, Some(HostLimit::mem_available(64 * GIB))).is_ok());
}

#[test]
fn a_huge_kbuild_program_is_counted() {
    let text = r#"
[machine]
cpus = 4
memory = "1G"

[[workload]]
kind = "kbuild"
jobs = 1000000
jobs_concurrent = 8
phases = 1000
"#;
    let s = parse(text).unwrap();
    let err = check_host(&s, Some(HostLimit::mem_available(8 * GIB)))
        .unwrap_err()
        .to_string();
    assert!(
        err.contains("workload[0].jobs x phases = 1000000 x 1000"),
        "{err}"
    );
}

#[test]
fn file_sizes_that_would_overflow_are_refused() {
    let text = r#"
[machine]
cpus = 4
memory = "1G"

[machine.disk]
kind = "ssd"
size = "4T"

[[file]]
name = "a"
size = "4T"

[[file]]
name = "b"
size = "16777215T"

[[workload]]
kind = "usemem"
nproc = 1
size = "1M"
"#;
    // 4T + 16777215T wraps u64: the sum must not, and the second file is refused.
    let err = parse(text).unwrap_err();
    assert!(
        err.contains("file[1].size") && err.contains("at most 0"),
        "{err}"
    );
}

#[test]
fn the_shipped_scenarios_fit_easily() {
    let dir = concat!(env!("CARGO_MANIFEST_DIR"), "/../../scenarios");
    for entry in std::fs::read_dir(dir).unwrap() {
        let path = entry.unwrap().path();
        if path.extension().is_some_and(|e| e == "toml") {
            let s = parse(&std::fs::read_to_string(&path).unwrap()).unwrap();
            let f = estimate(&s);
            assert!(
                f.total_bytes() > 0 && f.total_bytes() < 4 * GIB,
                "{}: {}",
                path.display(),
                f.summary()
            );
            assert!(check_host(&s, Some(HostLimit::mem_available(4 * GIB))).is_ok());
        }
    }
}
