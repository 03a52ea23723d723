#!/usr/bin/env bash
# Byte-identity of two builds: `run --format json` of every shipped scenario, the speed
# scenarios and the regression scenarios, old against new. A speed change must print
# "same: N of N". Usage: tools/speed/same_results.sh OLD_BINARY NEW_BINARY
set -uo pipefail
old=$1
new=$2
root=$(cd "$(dirname "$0")/../.." && pwd)
out=$(mktemp -d)
same=0
total=0
for s in "$root"/tools/speed/seed000-4K-small.toml "$root"/scenarios/*.toml \
    "$root"/scenarios/validate/*.toml "$root"/tools/speed/seed000-64K.toml \
    "$root"/tools/speed/thpscale*.toml "$root"/crates/foliosim/tests/regressions/*.toml; do
    b=$(basename "$s" .toml)
    timeout 600 "$old" run "$s" --format json >"$out/old-$b.json" 2>/dev/null
    timeout 600 "$new" run "$s" --format json >"$out/new-$b.json" 2>/dev/null
    total=$((total + 1))
    if cmp -s "$out/old-$b.json" "$out/new-$b.json"; then
        same=$((same + 1))
    else
        echo "differs: $s"
    fi
done
rm -rf "$out"
echo "same: $same of $total"
[ "$same" -eq "$total" ]
