//! Every file of the fuzz corpus (fuzz/corpus/TARGET/, minimised) and of the hand-written
//! seeds (fuzz/seeds/TARGET/) through its target's body, without the fuzzer: what the fuzzer
//! once found interesting must still return without a panic (docs/fuzz-and-soak.md). The seeds
//! named `small-*` and `all-ops*` must get past validation, so the targets are known to reach
//! the simulation.

use foliosim_lab::fuzz::{Outcome, TARGETS};
use std::path::PathBuf;

fn files(dir: &str, target: &str) -> Vec<PathBuf> {
    let dir = PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("../../fuzz")
        .join(dir)
        .join(target);
    std::fs::read_dir(&dir)
        .unwrap_or_else(|e| panic!("{}: {e}", dir.display()))
        .map(|e| e.unwrap().path())
        .collect()
}

#[test]
fn every_corpus_file_returns_without_a_panic() {
    for (name, body) in TARGETS {
        let mut paths = files("corpus", name);
        paths.extend(files("seeds", name));
        paths.sort();
        assert!(paths.len() > 3, "{name}: no corpus");
        let (mut rejected, mut too_big, mut ran, mut run_error) = (0, 0, 0, 0);
        for f in &paths {
            let data = std::fs::read(f).unwrap();
            let outcome = body(&data);
            let file = f.file_name().unwrap().to_string_lossy();
            if std::env::var_os("FUZZ_CORPUS_VERBOSE").is_some() {
                eprintln!("{name}/{file}: {outcome:?}");
            }
            if file.starts_with("small-") || file.starts_with("all-ops") {
                assert!(
                    matches!(outcome, Outcome::Ran | Outcome::RunError(_)),
                    "{name}/{file}: a hand-written seed must run: {outcome:?}"
                );
            }
            match outcome {
                Outcome::Rejected(_) => rejected += 1,
                Outcome::TooBig(_) => too_big += 1,
                Outcome::Ran => ran += 1,
                Outcome::RunError(_) => run_error += 1,
            }
        }
        eprintln!(
            "{name}: {} files: {rejected} rejected, {too_big} too big, {ran} ran, {run_error} ended in an error",
            paths.len()
        );
    }
}
