#!/usr/bin/env bash
# All tests: Rust unit, property and integration tests (invariant checking on; the fuzz corpus
# replayed by tests/it/fuzz_corpus.rs), then Python. Fuzzing itself is a long run, like the soak:
# tools/fuzz.sh (docs/fuzz-and-soak.md).
set -euo pipefail
cd "$(dirname "$0")"
# Habits: formatted, and no clippy warning (release profile, so it shares the tests' build),
# functions no longer than clippy.toml's too-many-lines-threshold included.
cargo fmt --all --check
cargo clippy --release --workspace --all-targets -- -D warnings -W clippy::too_many_lines
cargo test --release --workspace
python3 -m pytest -q tests/python
