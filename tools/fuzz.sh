#!/usr/bin/env bash
# Fuzz every target (fuzz/, docs/fuzz-and-soak.md) for SECONDS each, one after the other, on one
# core at nice 19. Installs cargo-fuzz (crates.io) on first use; stable Rust: `-s none` (no sanitizer:
# the code is safe Rust) and `-a` (debug assertions, so arithmetic overflow panics).
#   tools/fuzz.sh SECONDS [TARGET...]        new inputs go to a scratch copy; a crash fails
#   FUZZ_KEEP=1 tools/fuzz.sh SECONDS ...    new inputs go to fuzz/corpus/TARGET (then minimise:
#                                            cargo fuzz cmin -s none -a TARGET; hand-written
#                                            seeds stay apart in fuzz/seeds/TARGET)
#   FUZZ_FORK=1 ...                          keep going past crashes (fuzz/artifacts/TARGET/)
set -euo pipefail
cd "$(dirname "$0")/../fuzz"
command -v cargo-fuzz >/dev/null 2>&1 || cargo install --locked cargo-fuzz
secs=${1:-30}
shift || true
targets=("$@")
[ ${#targets[@]} -gt 0 ] || targets=(scenario costs trace)
flags=(-max_total_time="$secs" -timeout=10 -rss_limit_mb=4096 -max_len=65536 -print_final_stats=1)
if [ -n "${FUZZ_FORK:-}" ]; then
    flags+=(-fork=1 -ignore_crashes=1 -ignore_timeouts=1 -ignore_ooms=1)
fi
for t in "${targets[@]}"; do
    mkdir -p "artifacts/$t"
    # New inputs go to the first directory; seeds/ (hand-written, kept as they are) is read.
    if [ -n "${FUZZ_KEEP:-}" ]; then
        dirs=("corpus/$t" "seeds/$t")
    else
        scratch=$(mktemp -d)
        dirs=("$scratch" "corpus/$t" "seeds/$t")
    fi
    echo "fuzz: $t for ${secs}s" >&2
    nice -n 19 cargo fuzz run -s none -a "$t" "${dirs[@]}" -- "${flags[@]}"
    [ -n "${FUZZ_KEEP:-}" ] || rm -rf "$scratch"
done
