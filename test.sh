#!/usr/bin/env bash
# All tests: Rust unit, property and integration tests (invariant checking on), then Python.
set -euo pipefail
cd "$(dirname "$0")"
cargo test --release --workspace --exclude foliosim-py
python3 -m pytest -q tests/python
