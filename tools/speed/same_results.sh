#!/usr/bin/env bash
# Byte-identity of two builds: `run --format json` of every shipped scenario, the speed
# scenarios and the regression scenarios, old against new. A speed change must print
# "same: N of N". Usage: tools/speed/same_results.sh OLD_BINARY NEW_BINARY
set -uo pipefail
old=$1
new=$2
old=$(realpath "$old")
new=$(realpath "$new")
root=$(cd "$(dirname "$0")/../.." && pwd)
# Scenarios name their traces relative to the repository.
cd "$root"
out=$(mktemp -d)
same=0
total=0
for s in "$root"/tools/speed/seed000-4K-small.toml "$root"/scenarios/*.toml \
    "$root"/scenarios/validate/*.toml "$root"/tools/speed/seed000-64K.toml \
    "$root"/tools/speed/thpscale*.toml "$root"/crates/foliosim-lab/tests/regressions/*.toml; do
    b=$(basename "$s" .toml)
    # The JSON, or for a run that ends in an error (a few regression scenarios), the error.
    for build in old new; do
        bin=$old
        [ "$build" = new ] && bin=$new
        timeout 600 "$bin" run "$s" --format json >"$out/$build-$b.json" 2>"$out/$build-$b.err"
        grep -m1 '^Error' "$out/$build-$b.err" >>"$out/$build-$b.json"
    done
    total=$((total + 1))
    if [ ! -s "$out/old-$b.json" ]; then
        echo "no output from the old build: $s"
    elif cmp -s "$out/old-$b.json" "$out/new-$b.json"; then
        same=$((same + 1))
    else
        echo "differs: $s"
    fi
done
rm -rf "$out"
echo "same: $same of $total"
[ "$same" -eq "$total" ]
