//! docs/architecture.md: arrows point down only. Inside the model, hw/ sits on the engine (a
//! crate of its own, so cargo keeps it the ground floor: foliosim-engine/tests/floors.rs) and
//! may not reach up into the kernel model, the scheduler or the workloads.

use std::path::Path;

fn sources(dir: &Path) -> Vec<(String, String)> {
    let mut out = Vec::new();
    for entry in std::fs::read_dir(dir).unwrap() {
        let path = entry.unwrap().path();
        if path.is_dir() {
            out.extend(sources(&path));
        } else if path.extension().is_some_and(|e| e == "rs") {
            out.push((
                path.display().to_string(),
                std::fs::read_to_string(&path).unwrap(),
            ));
        }
    }
    out
}

fn assert_no_upward_use(layer: &str, forbidden: &[&str]) {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("src")
        .join(layer);
    for (file, text) in sources(&dir) {
        for (n, line) in text.lines().enumerate() {
            for up in forbidden {
                assert!(
                    !line.contains(&format!("crate::{up}")),
                    "{file}:{}: the {layer} layer uses crate::{up}: {line}",
                    n + 1
                );
            }
        }
    }
}

#[test]
fn hardware_models_hold_no_kernel_policy() {
    assert_no_upward_use("hw", &["mm", "sched", "workload", "reproduce"]);
}
