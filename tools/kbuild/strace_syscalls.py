#!/usr/bin/env python3
"""strace -ff logs: per cc1 process, brk growth/shrink, anon mmaps, munmaps (whole/partial), mremap."""
import glob, re, sys, collections
def q(xs):
    xs = sorted(xs); n = len(xs)
    if not n: return "none"
    return f"n {n} min {xs[0]} p25 {xs[n//4]} median {xs[n//2]} p75 {xs[3*n//4]} p90 {xs[9*n//10]} max {xs[-1]} sum {sum(xs)}"
procs = []
for fn in glob.glob(sys.argv[1] + '/s.*'):
    lines = open(fn).read().splitlines()
    name = None; cur = None
    for l in lines:
        m = re.match(r'([\d.]+) (\w+)\((.*)\)\s+= (\S+)', l)
        if not m: continue
        t, call, args, ret = float(m.group(1)), m.group(2), m.group(3), m.group(4)
        if call == 'execve' and ret == '0':
            name = args.split(',')[0].strip('"').split('/')[-1]
            cur = dict(name=name, start=t, brk0=None, brk=None, brk_grow=[], brk_shrink=[], mmaps={}, mmap_sizes=[], munmap=[], mremap=[], end=t, peak_brk=0)
            procs.append(cur); continue
        if cur is None: continue
        cur['end'] = t
        if call == 'brk':
            r = int(ret, 16)
            if cur['brk0'] is None: cur['brk0'] = cur['brk'] = r; continue
            if args != 'NULL':
                d = r - cur['brk']
                if d > 0: cur['brk_grow'].append(d)
                elif d < 0: cur['brk_shrink'].append(-d)
                cur['brk'] = r; cur['peak_brk'] = max(cur['peak_brk'], r - cur['brk0'])
        elif call == 'mmap':
            a = [x.strip() for x in args.split(',')]
            if 'MAP_ANONYMOUS' in a[3] and a[4] == '-1' and ret.startswith('0x'):
                size = int(a[1]); addr = int(ret, 16)
                cur['mmaps'][addr] = (size, t); cur['mmap_sizes'].append(size)
        elif call == 'munmap':
            a = [x.strip() for x in args.split(',')]
            addr, size = int(a[0], 16), int(a[1])
            # find anon mapping containing it
            for base, (sz, t0) in cur['mmaps'].items():
                if base <= addr < base + sz:
                    whole = base == addr and size >= sz
                    cur['munmap'].append((size, sz, whole, t - t0, addr - base))
                    if whole: del cur['mmaps'][base]
                    else:
                        # keep the rest as one mapping (approximation for stats)
                        if addr == base: cur['mmaps'][base + size] = (sz - size, t0); del cur['mmaps'][base]
                        else: cur['mmaps'][base] = (addr - base, t0)
                    break
        elif call == 'mremap':
            a = [x.strip() for x in args.split(',')]
            cur['mremap'].append((int(a[1]), int(a[2])))
name = sys.argv[2] if len(sys.argv) > 2 else 'cc1'
sel = [p for p in procs if p['name'] == name]
K = lambda xs: [x // 1024 for x in xs]
print(f"{len(sel)} {name} processes")
print("lifetime ms:", q([int((p['end'] - p['start']) * 1000) for p in sel]))
print("brk peak KiB:", q(K([p['peak_brk'] for p in sel])))
print("brk growth steps KiB:", q(K(sum((p['brk_grow'] for p in sel), []))))
print("brk shrink steps KiB:", q(K(sum((p['brk_shrink'] for p in sel), []))))
print("brk grows per process:", q([len(p['brk_grow']) for p in sel]))
print("brk shrinks per process:", q([len(p['brk_shrink']) for p in sel]))
ms = sum((p['mmap_sizes'] for p in sel), [])
print("anon mmap KiB:", q(K(ms)))
print("anon mmap size histogram KiB:", sorted(collections.Counter(K(ms)).items()))
print("anon mmaps per process:", q([len(p['mmap_sizes']) for p in sel]))
mu = sum((p['munmap'] for p in sel), [])
print("munmap of anon: whole", sum(1 for m in mu if m[2]), "partial", sum(1 for m in mu if not m[2]))
print("partial munmap KiB (of region KiB, offset KiB):", collections.Counter((m[0]//1024, m[1]//1024, m[4]//1024) for m in mu if not m[2]).most_common(12))
print("whole munmap KiB:", q(K([m[1] for m in mu if m[2]])))
print("whole munmap age ms:", q([int(m[3]*1000) for m in mu if m[2]]))
print("anon mmaps alive at exit per process (KiB):", q(K([sum(s for s, _ in p['mmaps'].values()) for p in sel])))
print("mremap:", sum((p['mremap'] for p in sel), []))
