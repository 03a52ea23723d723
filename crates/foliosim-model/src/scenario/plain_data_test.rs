//! The schema is plain data: scenario.rs and scenario/ name nothing of the model above them
//! (hw/, mm/, workload/, footprint, ...). Checks that need the model live in validate.rs.
//! docs/architecture.md, "Where validation lives".

use std::path::{Path, PathBuf};

/// The crate's modules the schema may name: itself, the engine (the floor below) and the
/// registries, whose handles name a policy by its table entry (registry.rs; the schema never
/// calls an entry: validate.rs and the run do).
const ALLOWED: &[&str] = &["scenario", "engine", "registry"];

/// This file names forbidden paths in its own test cases.
const SELF: &str = "plain_data_test.rs";

fn schema_files() -> Vec<PathBuf> {
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let mut files = vec![src.join("scenario.rs")];
    let mut dirs = vec![src.join("scenario")];
    while let Some(dir) = dirs.pop() {
        let mut entries: Vec<PathBuf> = std::fs::read_dir(&dir)
            .unwrap_or_else(|e| panic!("{}: {e}", dir.display()))
            .map(|e| e.expect("a directory entry").path())
            .collect();
        entries.sort();
        for path in entries {
            if path.is_dir() {
                dirs.push(path);
            } else if path.extension().is_some_and(|x| x == "rs") && !path.ends_with(SELF) {
                files.push(path);
            }
        }
    }
    files
}

/// The first path segment after each `crate::` (and inside `crate::{...}`), and any reach out
/// of the schema through `super::super` or a foliosim crate: what `text` names.
fn named_modules(text: &str, top_file: bool) -> Vec<String> {
    let mut out = Vec::new();
    for (i, _) in text.match_indices("crate::") {
        let rest = &text[i + "crate::".len()..];
        if let Some(group) = rest.strip_prefix('{') {
            let inner = &group[..group.find('}').unwrap_or(group.len())];
            for item in inner.split(',') {
                out.push(first_segment(item.trim()));
            }
        } else {
            out.push(first_segment(rest));
        }
    }
    if text.contains("super::super") || (top_file && text.contains("super::")) {
        out.push("super (the crate root)".into());
    }
    if let Some(i) = text.find("foliosim_") {
        out.push(first_segment(&text[i..]));
    }
    out
}

fn first_segment(path: &str) -> String {
    path.split(|c: char| !(c.is_alphanumeric() || c == '_'))
        .next()
        .unwrap_or("")
        .to_string()
}

fn forbidden(text: &str, top_file: bool) -> Vec<String> {
    let mut names = named_modules(text, top_file);
    names.retain(|n| !ALLOWED.contains(&n.as_str()));
    names.sort();
    names.dedup();
    names
}

#[test]
fn the_scanner_sees_what_it_must() {
    assert_eq!(
        forbidden("use crate::mm::swapfile::MAX_SWAPFILES;", false),
        ["mm"]
    );
    assert_eq!(
        forbidden("use crate::{engine::arch, hw::profile, workload};", false),
        ["hw", "workload"]
    );
    assert_eq!(
        forbidden("x: crate::footprint::Estimate,", false),
        ["footprint"]
    );
    assert_eq!(forbidden("use super::super::mm;", false).len(), 1);
    assert_eq!(forbidden("use super::report;", true).len(), 1);
    assert!(forbidden(
        "use super::Bytes; use crate::engine::cost::CostModel;",
        false
    )
    .is_empty());
}

#[test]
fn the_schema_names_nothing_above_it() {
    let files = schema_files();
    assert!(files.len() >= 5, "found only {files:?}");
    let mut bad = Vec::new();
    for path in &files {
        let text = std::fs::read_to_string(path).expect("a schema file");
        let top_file = path.file_name().is_some_and(|n| n == "scenario.rs");
        for name in forbidden(&text, top_file) {
            bad.push(format!("{} names `{name}`", path.display()));
        }
    }
    assert!(
        bad.is_empty(),
        "the schema must be plain data; move these into validate.rs or the schema:\n{}",
        bad.join("\n")
    );
}
