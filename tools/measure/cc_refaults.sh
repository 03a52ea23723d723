#!/usr/bin/env bash
# How often a real compiler revisits its heap: compile one C file with gcc -O2 in a memory
# cgroup (v1) at each limit given, swapping to a private zram device, and print user/sys time
# and pages swapped in. The make -j96 model's re-touch rate (reproduce/seed003.rs,
# MAKE_J96_PHASES) comes from this. Root only; removes its zram device and cgroup on exit.
#
#   tools/measure/cc_refaults.sh FILE.c [CFLAGS...] -- 1G 64M 32M
set -euo pipefail
[[ $(id -u) == 0 ]] || { echo "needs root" >&2; exit 1; }
src=$1; shift
cflags=()
while [[ $# -gt 0 && $1 != -- ]]; do cflags+=("$1"); shift; done
shift || true
cg=/sys/fs/cgroup/memory/foliosim-cc-$$
[[ -d /sys/fs/cgroup/memory ]] || { echo "needs the cgroup v1 memory controller" >&2; exit 1; }
id=$(cat /sys/class/zram-control/hot_add)
cleanup() {
  swapoff /dev/zram$id 2>/dev/null || true
  echo 1 > /sys/block/zram$id/reset 2>/dev/null || true
  echo $id > /sys/class/zram-control/hot_remove 2>/dev/null || true
  rmdir $cg 2>/dev/null || true
}
trap cleanup EXIT INT TERM
echo lzo-rle > /sys/block/zram$id/comp_algorithm
echo 4G > /sys/block/zram$id/disksize
mkswap /dev/zram$id > /dev/null
swapon -p 32000 /dev/zram$id
mkdir $cg
vm() { awk -v k=$1 '$1 == k { print $2 }' /proc/vmstat; }
echo "limit  user_s  sys_s  elapsed_s  maxrss_kib  pswpin  pswpout"
for limit in "$@"; do
  echo "$limit" > $cg/memory.limit_in_bytes
  in0=$(vm pswpin); out0=$(vm pswpout)
  /usr/bin/time -f "%U %S %e %M" -o /tmp/foliosim-cc-time.$$ \
    sh -c 'echo $$ > "$0"/tasks; exec gcc -c -o /dev/null "$@"' $cg "${cflags[@]}" "$src"
  echo "$limit $(cat /tmp/foliosim-cc-time.$$) $(( $(vm pswpin) - in0 )) $(( $(vm pswpout) - out0 ))"
done
rm -f /tmp/foliosim-cc-time.$$
