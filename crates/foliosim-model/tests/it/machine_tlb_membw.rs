//! The machine's TLB mechanism and shared memory bandwidth: scenario errors, and what each
//! mechanism does on a small reclaiming run.

use foliosim_model::{run, Scenario};

const BASE: &str = r#"
seed = 1
[machine]
cpus = 4
memory = "512M"
[[machine.swap]]
kind = "ramdisk"
size = "384M"
[kernel]
version = "6.10"
[sysfs.hugepages]
"64K" = "always"
[[memcg]]
name = "bench"
max = "32M"
[[workload]]
kind = "usemem"
nproc = 8
size = "32M"
memcg = "bench"
"#;

fn with_machine(extra: &str) -> String {
    BASE.replacen("cpus = 4\n", &format!("cpus = 4\n{extra}\n"), 1)
}

#[test]
fn unknown_tlb_mechanism_is_an_error_naming_the_allowed_ones() {
    let err = Scenario::from_toml_str(&with_machine(r#"tlb = "riscv-sbi""#))
        .expect_err("an error")
        .to_string();
    for needle in ["tlb", "riscv-sbi", "x86-ipi", "arm64-tlbi"] {
        assert!(err.contains(needle), "{needle} not in: {err}");
    }
}

#[test]
fn memory_bandwidth_out_of_range_is_an_error() {
    let err = Scenario::from_toml_str(&with_machine("memory_bandwidth_bytes_per_s = 5"))
        .expect_err("an error")
        .to_string();
    for needle in ["machine.memory_bandwidth_bytes_per_s", "5", "0 (unlimited)"] {
        assert!(err.contains(needle), "{needle} not in: {err}");
    }
}

#[test]
fn defaults_are_this_vm() {
    let s = Scenario::from_toml_str(BASE).unwrap();
    assert_eq!(s.machine.tlb, foliosim_model::scenario::TlbKind::X86Ipi);
    assert_eq!(
        s.machine.memory_bandwidth_bytes_per_s,
        foliosim_model::scenario::DEFAULT_MEMORY_BANDWIDTH_BYTES_PER_S
    );
}

#[test]
fn x86_sends_ipis_and_arm64_broadcasts() {
    let x86 = run(&Scenario::from_toml_str(BASE).unwrap()).unwrap();
    let arm =
        run(&Scenario::from_toml_str(&with_machine(r#"tlb = "arm64-tlbi""#)).unwrap()).unwrap();
    assert!(x86.counter("pswpout") > 0 && arm.counter("pswpout") > 0);
    // x86 counts its shootdowns; arm64 has no IPIs (and the kernel counts no nr_tlb_* there).
    assert!(x86.counter("nr_tlb_remote_flush") > 0);
    assert_eq!(arm.counter("nr_tlb_remote_flush"), 0);
    assert!(x86
        .cpu_time_ns
        .contains_key("tlb_flush_ipi_ns (+ tlb_ipi_extra_cpu_ns)"));
    assert!(!x86.cpu_time_ns.contains_key("tlb_dsb_ns"));
    // 64K folios are contpte-mapped on arm64: swapping one out whole unfolds its block.
    assert!(arm.cpu_time_ns["contpte_convert PTE rewrite (pte_unmap_ns)"] > 0);
    assert!(arm.cpu_time_ns["tlb_dsb_ns"] > 0);
}

#[test]
fn less_memory_bandwidth_is_slower_and_unlimited_is_fastest() {
    let tput = |bw: u64| {
        let r = run(&Scenario::from_toml_str(&with_machine(&format!(
            "memory_bandwidth_bytes_per_s = {bw}"
        )))
        .unwrap())
        .unwrap();
        (r.workloads[0].throughput_bytes_per_s, r.cpu_time_ns.clone())
    };
    let (unlimited, t0) = tput(0);
    let (narrow, t1) = tput(2_000_000_000);
    assert!(narrow < unlimited * 0.9, "{narrow} vs {unlimited}");
    assert_eq!(
        t0.get("user_write_page_ns contention")
            .copied()
            .unwrap_or(0),
        0
    );
    assert!(t1["user_write_page_ns contention"] > 0);
}
