#!/usr/bin/env bash
# One-time set-up of a fresh machine: Rust build, the Python package (maturin) and its
# dependencies. Idempotent. Usage: ./setup.sh
set -euo pipefail
cd "$(dirname "$0")"
python3 -m pip install --quiet --upgrade maturin pytest pandas matplotlib pyarrow
cargo build --release --workspace --exclude foliosim-py
# The Python extension: build a wheel and install it (works without a virtualenv).
rm -rf target/wheels
maturin build --release --quiet -o target/wheels
python3 -m pip install --quiet --force-reinstall --no-deps target/wheels/foliosim-*.whl
