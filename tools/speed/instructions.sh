#!/usr/bin/env bash
# Instructions one run executes, counted by callgrind: the speed figure the VM's timing noise
# does not move (docs/speed.md). Needs valgrind (Debian: apt-get install valgrind).
# Usage: tools/speed/instructions.sh BINARY [SCENARIO] — prints the total; the profile is left
# in callgrind.out.instructions (callgrind_annotate --inclusive=yes callgrind.out.instructions).
set -euo pipefail
bin=$1
scenario=${2:-$(dirname "$0")/seed000-4K-small.toml}
out=${CALLGRIND_OUT:-callgrind.out.instructions}
valgrind --tool=callgrind --callgrind-out-file="$out" "$bin" run "$scenario" --format json \
    2>&1 >/dev/null | awk '/Collected/ {print $4}'
