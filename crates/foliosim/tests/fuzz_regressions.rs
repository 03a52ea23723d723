//! Inputs the fuzzers (fuzz/) and the soak (src/soak/) found to panic or break an invariant,
//! each kept as the smallest case that did: they must now give a clear error or run.

use foliosim::fuzz::{self, Outcome};
use foliosim::workload::trace::{self, Trace};
use foliosim::{Scenario, SimError};

/// A trace replayed in fuzz::BASE_SCENARIO under a name of its own.
fn run_trace(name: &str, text: &str) -> Result<foliosim::RunResult, SimError> {
    let path = trace::register(name, Trace::parse(text).expect("a valid trace"));
    let scenario = fuzz::BASE_SCENARIO.replace(
        "kind = \"usemem\"\nnproc = 2\nsize = \"16M\"",
        &format!("kind = \"trace\"\npath = \"{path}\""),
    );
    let s = Scenario::from_toml_str(&scenario).unwrap();
    let r = foliosim::run(&s);
    trace::unregister(&path);
    r
}

/// A thread (clone) touches a VMA that its process's main thread unmaps later in the trace;
/// the replay orders threads only at clone/exec/wait, so the sim may run the munmap first.
/// It panicked ("access to an unmapped vma"); now the touch is a segmentation fault.
#[test]
fn trace_thread_touching_after_another_threads_munmap_is_an_error() {
    let text = "foliosim-trace 1\nbegin\n0 1 exec a\n1 1 mmap 1 64 anon\n2 2 clone 1\n\
                3 2 cpu 5000000\n4 2 touch 1 0 64 w\n5 2 exit\n6 1 munmap 1 0 64\n7 1 exit\nend 8\n";
    match run_trace("regression-thread-munmap", text) {
        Err(SimError::Mm { error, .. }) => {
            assert!(error.to_string().contains("vma 0 is not mapped"), "{error}")
        }
        other => panic!(
            "expected a segmentation fault: {:?}",
            other.map(|r| r.steps)
        ),
    }
}

#[test]
fn the_fuzz_targets_run_their_base_scenario() {
    assert!(matches!(fuzz::costs_file(b"[costs]\n"), Outcome::Ran));
}
