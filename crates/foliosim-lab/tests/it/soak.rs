//! The random soak (src/soak/, docs/fuzz-and-soak.md), bounded: a fixed set of cases, so the
//! test is as deterministic as the cases. `foliosim soak --minutes N` runs it for longer.

use foliosim_lab::soak::{self, Verdict};
use std::collections::BTreeSet;

/// Cases the test runs: the first ones, whatever they draw.
const CASES: u64 = 12;

/// Kinds of ending counted apart: only a run to completion is a pass; out of memory and the
/// step limit are endings the generator drew, reported, and bounded below half the cases.
#[test]
fn soak_cases_pass_with_invariants_checked() {
    let mut failures = Vec::new();
    let (mut passed, mut oom, mut cut) = (0, 0, 0);
    for seed in 0..CASES {
        let case = soak::case(seed);
        match soak::run_case(&case, soak::MAX_STEPS) {
            Verdict::Passed => passed += 1,
            Verdict::OutOfMemory => oom += 1,
            Verdict::Cut => cut += 1,
            Verdict::Failed(why) => failures.push(format!("seed {seed}: {why}")),
        }
    }
    eprintln!(
        "{CASES} cases: {passed} passed, {oom} out of memory, {cut} cut at the step limit, {} errors",
        failures.len()
    );
    assert!(failures.is_empty(), "{}", failures.join("\n"));
    assert!(
        passed * 2 >= CASES,
        "only {passed} of {CASES} cases ran to completion ({oom} out of memory, {cut} cut)"
    );
}

#[test]
fn a_case_is_a_function_of_its_seed() {
    for seed in [0, 1, 99] {
        let (a, b) = (soak::case(seed), soak::case(seed));
        assert_eq!(a.scenario.to_toml_string(), b.scenario.to_toml_string());
        assert_eq!(a.trace, b.trace);
    }
    assert_ne!(
        soak::case(1).scenario.to_toml_string(),
        soak::case(2).scenario.to_toml_string()
    );
}

/// Over a few hundred seeds the generator draws every release, policy (MGLRU or the classic
/// LRU included) and workload kind.
#[test]
fn the_generator_covers_every_policy() {
    let mut seen = BTreeSet::new();
    for seed in 0..400 {
        let s = soak::case(seed).scenario;
        let k = &s.kernel;
        seen.insert(format!("version {:?}", k.version));
        seen.insert(format!("allocator {:?}", k.swap_allocator()));
        seen.insert(format!("zswap store {:?}", k.zswap_large_folios()));
        seen.insert(format!("fallback {:?}", k.swapout_fallback));
        seen.insert(format!("thp fault {:?}", k.thp_fault_alloc));
        seen.insert(format!("cgroup {:?}", k.cgroup));
        seen.insert(format!("oom {:?}", k.oom));
        seen.insert(format!("tlb {:?}", s.machine.tlb));
        seen.insert(format!("lru_gen {}", s.sysfs.lru_gen.enabled()));
        for d in &s.machine.swap_devices {
            seen.insert(format!("swap {:?}", d.kind));
        }
        for w in &s.workloads {
            let kind = toml::Value::try_from(w).unwrap();
            seen.insert(format!("workload {}", kind["kind"].as_str().unwrap()));
        }
    }
    let expected = 5
        + 4
        + 3
        + 2
        + 2
        + 2
        + 2
        + 2
        + 2
        + soak::machine::SWAP_KINDS.len()
        + soak::workloads::KINDS.len();
    assert_eq!(seen.len(), expected, "{seen:#?}");
}
