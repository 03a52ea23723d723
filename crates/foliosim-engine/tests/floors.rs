//! docs/architecture.md: the crates are floors and arrows point down only. Cargo refuses a
//! cycle; this refuses a floor that depends on (or names) one above it, which cargo allows.

use std::path::{Path, PathBuf};

/// The floors, lowest first; the top floor's crates sit side by side.
const FLOORS: &[&[&str]] = &[
    &["foliosim-engine"],
    &["foliosim-model"],
    &["foliosim-report"],
    // The facade: engine, model and report under their old paths; nothing depends on it.
    &["foliosim"],
    &["foliosim-lab"],
    // The live backend: the CLI and the Python package run scenarios through it.
    &["foliosim-live"],
    &["foliosim-cli", "foliosim-py"],
];

fn floor_of(krate: &str) -> Option<usize> {
    FLOORS.iter().position(|f| f.contains(&krate))
}

fn crates_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("..")
}

/// The foliosim crates named in the `[dependencies]` tables (target-specific ones included;
/// dev-dependencies are not: a test may use a floor above).
fn dependencies(manifest: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut in_deps = false;
    for line in manifest.lines().map(str::trim) {
        if line.starts_with('[') {
            in_deps = line == "[dependencies]"
                || (line.starts_with("[target.") && line.ends_with(".dependencies]"));
            continue;
        }
        if in_deps {
            let name = line.split(['=', '.', ' ']).next().unwrap_or("");
            if name.starts_with("foliosim") {
                out.push(name.to_string());
            }
        }
    }
    out
}

fn sources(dir: &Path, out: &mut Vec<(PathBuf, String)>) {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return;
    };
    for path in entries.map(|e| e.unwrap().path()) {
        if path.is_dir() {
            sources(&path, out);
        } else if path.extension().is_some_and(|e| e == "rs") {
            let text = std::fs::read_to_string(&path).unwrap();
            out.push((path, text));
        }
    }
}

#[test]
fn every_crate_is_on_a_floor() {
    for entry in std::fs::read_dir(crates_dir()).unwrap() {
        let path = entry.unwrap().path();
        if path.join("Cargo.toml").exists() {
            let name = path.file_name().unwrap().to_str().unwrap().to_string();
            assert!(
                floor_of(&name).is_some(),
                "crates/{name} is on no floor: add it to FLOORS here and to docs/architecture.md"
            );
        }
    }
}

#[test]
fn dependencies_point_down() {
    for krate in FLOORS.iter().flat_map(|f| f.iter()) {
        let manifest = crates_dir().join(krate).join("Cargo.toml");
        let text = std::fs::read_to_string(&manifest).unwrap();
        let floor = floor_of(krate).unwrap();
        for dep in dependencies(&text) {
            let dep_floor =
                floor_of(&dep).unwrap_or_else(|| panic!("{krate}: {dep} is on no floor"));
            assert!(
                dep_floor < floor,
                "{krate} depends on {dep}, which is not on a floor below it"
            );
        }
    }
}

#[test]
fn sources_name_no_floor_above() {
    for krate in FLOORS.iter().flat_map(|f| f.iter()) {
        let floor = floor_of(krate).unwrap();
        let above: Vec<String> = FLOORS[floor + 1..]
            .iter()
            .flat_map(|f| f.iter())
            // The facade's bare name is also the program's, in many comments; its
            // dependency is what dependencies_point_down checks.
            .filter(|c| **c != "foliosim")
            .map(|c| c.replace('-', "_"))
            .collect();
        let mut files = Vec::new();
        sources(&crates_dir().join(krate).join("src"), &mut files);
        for (file, text) in files {
            for (n, line) in text.lines().enumerate() {
                for up in &above {
                    assert!(
                        !line.contains(&format!("{up}::")),
                        "{}:{}: {krate} names {up}, a floor above it: {line}",
                        file.display(),
                        n + 1
                    );
                }
            }
        }
    }
}
