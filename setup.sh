#!/usr/bin/env bash
# One-time set-up of a fresh machine: Rust build, the Python package (maturin) and its
# dependencies, and headless Chromium for the report tests. Idempotent. Usage: ./setup.sh
set -euo pipefail
cd "$(dirname "$0")"
# ray: the sweep backend for clusters (`foliosim sweep --backend ray`, its tests start one locally).
python3 -m pip install --quiet --upgrade maturin pytest pandas matplotlib pyarrow ray
# Headless Chromium (Debian's package): the tests open the HTML reports in it.
if ! command -v chromium >/dev/null 2>&1; then
    SUDO=""
    [ "$(id -u)" -eq 0 ] || SUDO="sudo -n"
    $SUDO apt-get update -qq
    DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq chromium >/dev/null
fi
cargo build --release --workspace
# The Python package: pip builds the extension through maturin (pyproject.toml) and installs
# it (no virtualenv needed, unlike `maturin develop`).
python3 -m pip install --quiet --force-reinstall --no-deps .
