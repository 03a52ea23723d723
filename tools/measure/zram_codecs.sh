#!/bin/bash
# Measure this machine's zram codecs live: compression ratio of usemem's data and kernel CPU ns
# to compress/decompress one 4 KiB page, per algorithm zram offers (docs/compression.md).
#
#   sudo tools/measure/zram_codecs.sh [MIB=256] [REPEATS=5] [CHUNK_KIB=256]
#
# Hot-adds its own zram device, and for each algorithm in its comp_algorithm list: sets it,
# sets disksize, writes MIB of usemem-pattern pages with O_DIRECT (zram compresses in the
# writer's context), reads mm_stat, reads everything back with O_DIRECT (decompression in the
# reader's context), resets. The same again with same-filled pages, which zram stores without
# compressing: their per-page time is the block-layer + zram overhead, subtracted from the
# usemem time. Reports the minimum over repeats. Touches no other zram device, no zswap setting and no swap; resets and
# hot-removes its device on exit (also on error or ^C).
set -euo pipefail
MIB=${1:-256}
REPEATS=${2:-5}
CHUNK_KIB=${3:-256}
here=$(cd "$(dirname "$0")" && pwd)
[ "$(id -u)" = 0 ] || { echo "zram_codecs.sh: needs root (zram hot_add)" >&2; exit 1; }
[ -e /sys/class/zram-control/hot_add ] || modprobe zram num_devices=0 2>/dev/null || true
[ -e /sys/class/zram-control/hot_add ] || { echo "no /sys/class/zram-control" >&2; exit 1; }

tool=$(mktemp -d)/zram_io
gcc -O2 -Wall -o "$tool" "$here/zram_io.c"

id=$(cat /sys/class/zram-control/hot_add)
sys=/sys/block/zram$id
dev=/dev/zram$id
cleanup() {
    echo 1 > "$sys/reset" 2>/dev/null || true
    echo "$id" > /sys/class/zram-control/hot_remove 2>/dev/null || true
    rm -rf "$(dirname "$tool")"
}
trap cleanup EXIT INT TERM
for _ in $(seq 50); do [ -b "$dev" ] && break; sleep 0.1; done

# The minimum over repeats: CPU cost is a floor; a neighbour on the shared cores only adds.
minimum() { sort -n | head -1; }

algs=$(tr -d '[]' < "$sys/comp_algorithm")
echo "# host: $(uname -r), $(nproc) CPUs, $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ //')"
echo "# zram$id algorithms: $algs; ${MIB} MiB per run, ${CHUNK_KIB} KiB O_DIRECT requests, minimum of $REPEATS"
printf "%-8s %-7s %12s %12s %14s %14s %14s %8s\n" alg pattern write_ns/pg read_ns/pg orig_data_size compr_data_size mem_used_total ratio
for alg in $algs; do
    for pat in usemem same; do
        w=(); r=(); stat=""
        for _ in $(seq "$REPEATS"); do
            echo "$alg" > "$sys/comp_algorithm"
            echo "${MIB}M" > "$sys/disksize"
            w+=("$("$tool" write "$dev" "$MIB" "$pat" "$CHUNK_KIB" | sed 's/.*ns_per_page=//')")
            stat=$(cat "$sys/mm_stat")
            r+=("$("$tool" read "$dev" "$MIB" "$pat" "$CHUNK_KIB" | sed 's/.*ns_per_page=//')")
            echo 1 > "$sys/reset"
        done
        read -r orig compr used _ <<< "$stat"
        ratio=$(awk -v o="$orig" -v c="$compr" 'BEGIN {printf "%.3f", c ? o / c : 0}')
        printf "%-8s %-7s %12s %12s %14s %14s %14s %8s\n" "$alg" "$pat" \
            "$(printf '%s\n' "${w[@]}" | minimum)" "$(printf '%s\n' "${r[@]}" | minimum)" \
            "$orig" "$compr" "$used" "$ratio"
    done
done
