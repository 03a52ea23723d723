#!/bin/bash
# Build and run split_tlb.c: cost of splitting anonymous large folios (per
# size, local vs. with the mm live on a remote CPU) and cost of one TLB
# shootdown. Needs root and 2+ CPUs. Changes only
# /sys/kernel/mm/transparent_hugepage/hugepages-*/enabled (and mounts debugfs
# if METHOD=debugfs); all of it is restored on exit.
#
# Env: REPS (default 5), MIB (default 512), TLB_ITERS (default 50000),
#      METHOD=free|debugfs (default free: debugfs is blocked under lockdown),
#      OUT (default /tmp/split_tlb_results), SIZES (default "16 32 64 128 256 512 1024 2048").
set -euo pipefail
HERE="$(cd "$(dirname "$0")" && pwd)"
REPS=${REPS:-5}
MIB=${MIB:-512}
TLB_ITERS=${TLB_ITERS:-50000}
METHOD=${METHOD:-free}
OUT=${OUT:-/tmp/split_tlb_results}
SIZES=${SIZES:-"16 32 64 128 256 512 1024 2048"}
THP=/sys/kernel/mm/transparent_hugepage
BIN="$OUT/split_tlb"

[ "$(id -u)" = 0 ] || { echo "must run as root" >&2; exit 1; }
[ "$(nproc)" -ge 2 ] || { echo "needs 2 CPUs" >&2; exit 1; }
mkdir -p "$OUT"
gcc -O2 -Wall -pthread -o "$BIN" "$HERE/split_tlb.c"

# ---- save and restore settings ----
declare -A ORIG
for f in "$THP"/hugepages-*/enabled; do
	ORIG[$f]=$(sed -n 's/.*\[\(.*\)\].*/\1/p' "$f")
done
MOUNTED_DEBUGFS=0
restore() {
	for f in "${!ORIG[@]}"; do
		echo "${ORIG[$f]}" > "$f" 2>/dev/null || echo "restore failed: $f" >&2
	done
	if [ "$MOUNTED_DEBUGFS" = 1 ]; then umount /sys/kernel/debug || true; fi
}
trap restore EXIT
trap 'exit 130' INT TERM

if [ "$METHOD" = debugfs ] && ! mountpoint -q /sys/kernel/debug; then
	mount -t debugfs none /sys/kernel/debug && MOUNTED_DEBUGFS=1
fi

only_size() {   # $1 = size in kB to enable ("4" = none)
	for f in "$THP"/hugepages-*/enabled; do echo never > "$f"; done
	if [ "$1" != 4 ]; then echo always > "$THP/hugepages-${1}kB/enabled"; fi
}

run() {   # name, args...
	local name=$1; shift
	echo "== $name: $*" >&2
	taskset -c 0 "$BIN" "$@" > "$OUT/$name.txt"
	cat "$OUT/$name.txt" >&2
}

uname -r > "$OUT/kernel.txt"
{ date; uname -a; nproc; grep -m1 'model name' /proc/cpuinfo; } > "$OUT/env.txt"

# ---- folio split ----
for kb in $SIZES; do
	for rem in 0 1 2; do
		only_size "$kb"
		run "split_${kb}_r${rem}" split "$METHOD" "$kb" "$kb" "$MIB" "$rem" "$REPS"
		only_size 4
		run "base_${kb}_r${rem}" split "$METHOD" 4 "$kb" "$MIB" "$rem" "$REPS"
	done
done
if [[ " $SIZES " == *" 2048 "* ]]; then
	for rem in 0 1; do
		only_size 2048
		run "split_2048pte_r${rem}" split "$METHOD" 2048 2048 "$MIB" "$rem" "$REPS" ptemap
	done
	only_size 2048
	run "split_2048zero_r0" split "$METHOD" 2048 2048 "$MIB" 0 "$REPS" zero
fi
only_size 64
run "split_64zero_r0" split "$METHOD" 64 64 "$MIB" 0 "$REPS" zero
only_size 4

# ---- TLB flush ----
for op in mprotect nopte madvise; do
	for rem in 0 1 2; do
		run "tlb_${op}_r${rem}" tlb "$op" "$rem" "$TLB_ITERS" "$REPS"
	done
done

# ---- summary (means over reps) ----
mean() {   # file, column (1-based) -> mean over data lines
	awk -v c="$2" '!/^#/ && NF { s += $c; n++ } END { if (n) printf "%.2f", s / n; else printf "nan" }' "$1"
}
{
	echo "kernel $(uname -r), reps $REPS, $MIB MiB, method $METHOD"
	echo "# split: size remote ns_per_call base_ns_per_call split_us_per_folio ns_per_4k folios_split/call ipis/call base_ipis/call"
	for f in "$OUT"/split_*_r*.txt; do
		n=$(basename "$f" .txt); n=${n#split_}
		kb=${n%%_*}; kb=${kb%pte}; kb=${kb%zero}; rem=${n##*_r}
		b="$OUT/base_${kb}_r${rem}.txt"
		[ -f "$b" ] || continue
		c=$(mean "$f" 8); bc=$(mean "$b" 8)
		calls=$(mean "$f" 3); fs=$(mean "$f" 5); ip=$(mean "$f" 7); bip=$(mean "$b" 7)
		awk -v n="$n" -v kb="$kb" -v r="$rem" -v c="$c" -v bc="$bc" -v calls="$calls" -v fs="$fs" -v ip="$ip" -v bip="$bip" \
			'BEGIN { us = (c - bc) / 1000; printf "%s r%s %.1f %.1f %.2f %.1f %.3f %.2f %.2f\n", n, r, c, bc, us, us * 1000 / (kb / 4), fs / calls, ip / calls, bip / calls }'
	done
	echo "# tlb: op remote ns_per_op ipis_per_op"
	for f in "$OUT"/tlb_*.txt; do
		echo "$(basename "$f" .txt) $(mean "$f" 3) $(mean "$f" 5)"
	done
} | tee "$OUT/summary.txt"
