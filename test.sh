#!/usr/bin/env bash
# All tests: Rust unit, property and integration tests (invariant checking on), then Python.
set -euo pipefail
cd "$(dirname "$0")"
# Habits: formatted, and no clippy warning (release profile, so it shares the tests' build).
cargo fmt --all --check
cargo clippy --release --workspace --exclude foliosim-py --all-targets -- -D warnings
cargo test --release --workspace --exclude foliosim-py
# Coverage-guided fuzzing, 30 s per input format (scenario, costs, trace) after replaying the
# corpus, debug assertions on; a crash fails (docs/fuzz-and-soak.md).
tools/fuzz.sh 30
python3 -m pytest -q tests/python
