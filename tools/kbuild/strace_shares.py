#!/usr/bin/env python3
"""Per cc1 process (strace -ff): KiB in brk peak, 2 MiB mmaps, small (<=64K) and other anon mmaps."""
import glob, re, sys
rows = []
for fn in glob.glob(sys.argv[1] + '/s.*'):
    name = None; brk0 = brk = peak = 0; big = small = mid = 0; nsmall = nmid = nbig = 0
    for l in open(fn):
        m = re.match(r'([\d.]+) (\w+)\((.*)\)\s+= (\S+)', l)
        if not m: continue
        call, args, ret = m.group(2), m.group(3), m.group(4)
        if call == 'execve' and ret == '0': name = args.split(',')[0].strip('"').split('/')[-1]; brk0 = 0; continue
        if name != 'cc1': continue
        if call == 'brk':
            r = int(ret, 16)
            if not brk0: brk0 = brk = r
            brk = r; peak = max(peak, r - brk0)
        elif call == 'mmap':
            a = [x.strip() for x in args.split(',')]
            if 'MAP_ANONYMOUS' in a[3] and a[4] == '-1':
                s = int(a[1])
                if s == 2 << 20: big += s; nbig += 1
                elif s <= 64 << 10: small += s; nsmall += 1
                else: mid += s; nmid += 1
    if name == 'cc1':
        rows.append((peak >> 10, big >> 10, small >> 10, mid >> 10, nbig, nsmall, nmid))
rows.sort(key=lambda r: sum(r[:4]))
print("brkKiB ggc2MKiB smallKiB midKiB | n2M nsmall nmid | brk% ggc% small% mid%")
for r in rows:
    t = sum(r[:4]); print(*r[:4], '|', *r[4:], '|', *[round(100 * x / t) for x in r[:4]])
