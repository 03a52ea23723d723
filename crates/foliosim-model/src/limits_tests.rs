//! Regressions of issue 31's input audit: a run at the cost model's limits ends with an error,
//! never a panic, and a machine the host cannot hold fails its allocation with an error.

use crate::mm::Kernel;
use crate::{Scenario, SimError};

/// Four costs at the allowed maximum (1e12 ns) on the paths a swapping usemem takes under
/// si->lock and the zone lock used to push a lock hold past the calendar's 2^54 ns and panic.
#[test]
fn four_costs_at_the_maximum_end_in_the_time_limit() {
    let text = "seed = 1\n[machine]\ncpus = 2\nmemory = \"64M\"\n\
                [[machine.swap]]\nkind = \"ramdisk\"\nsize = \"64M\"\n\
                [[workload]]\nkind = \"usemem\"\nnproc = 2\nsize = \"48M\"\n\
                [costs]\nfault_4k_ns = 1e12\nswap_alloc_ns = 1e12\n\
                swap_entry_free_ns = 1e12\npage_free_ns = 1e12\n";
    let s = Scenario::from_toml_str(text).expect("1e12 is allowed");
    let r = std::panic::catch_unwind(|| crate::run(&s)).expect("no panic at the maximum costs");
    match r {
        Err(SimError::TimeLimit { at_ns, .. }) => assert!(at_ns > 1 << 53, "{at_ns}"),
        other => panic!(
            "expected the time limit, got {:?}",
            other.map(|r| r.simulated_ns)
        ),
    }
}

/// The child's half of the next test: under `ulimit -v` its tables cannot be allocated.
const CHILD: &str = "FOLIOSIM_TRY_NEW_CHILD";

/// A 1 TiB machine (built without validation, whose pre-flight would refuse it) in a process
/// limited to 1 GiB of address space: Kernel::try_new returns AllocFailed, no abort or panic.
#[test]
fn try_new_on_a_machine_too_big_for_the_host_is_an_error() {
    if std::env::var_os(CHILD).is_some() {
        let mut s: Scenario = serde_json::from_str("{}").unwrap();
        s.machine.memory = crate::scenario::Bytes(1 << 40);
        match Kernel::try_new(&s) {
            Err(e) => println!("try_new refused: {e}"),
            Ok(_) => println!("try_new allocated a 1 TiB machine"),
        }
        return;
    }
    let exe = std::env::current_exe().unwrap();
    let name = "limits_tests::try_new_on_a_machine_too_big_for_the_host_is_an_error";
    let out = std::process::Command::new("sh")
        .arg("-c")
        .arg("ulimit -v 1048576 && exec \"$0\" --exact \"$1\" --nocapture --test-threads 1")
        .arg(exe)
        .arg(name)
        .env(CHILD, "1")
        .output()
        .expect("run the child");
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{stdout}\n{stderr}");
    assert!(stdout.contains("try_new refused"), "{stdout}\n{stderr}");
}
