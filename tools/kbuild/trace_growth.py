#!/usr/bin/env python3
"""cc1 images of a foliosim trace: growth curve by tenth of life, age of whole munmaps, touched
fraction by VMA size, and re-faults (pages faulted again: visible under --memcg-limit).
Usage: trace_growth.py TRACE.gz"""
import gzip, sys, collections
cur, images, owner, kind, vsize, vt = {}, {}, {}, {}, {}, {}
vtouch = collections.Counter()
started = False
for line in gzip.open(sys.argv[1], 'rt'):
    if not started:
        started = line.startswith('begin'); continue
    p = line.split()
    if p[0] == 'end': break
    t, task, op = int(p[0]), int(p[1]), p[2]
    if op == 'exec':
        k = (task, len(images)); cur[task] = k
        images[k] = dict(name=p[3], start=t, end=None, touches=[], unmaps=[], seen=set(), re=0, first=0)
        continue
    if op in ('fork', 'clone'): cur[task] = cur.get(int(p[3])); continue
    k = cur.get(task)
    if k is None: continue
    im = images[k]
    if op == 'mmap':
        v = int(p[3]); owner[v] = k; kind[v] = p[5]; vsize[v] = int(p[4]); vt[v] = t
    elif op == 'touch':
        v, f, n = int(p[3]), int(p[4]), int(p[5])
        if owner.get(v) == k and kind[v] == 'anon':
            im['touches'].append((t, n)); vtouch[v] += n
            for q in range(f, f + n):
                if (v, q) in im['seen']: im['re'] += 1
                else: im['seen'].add((v, q)); im['first'] += 1
    elif op == 'munmap':
        v, f, n = int(p[3]), int(p[4]), int(p[5])
        for q in range(f, f + n): im['seen'].discard((v, q))
        if owner.get(v) == k and kind[v] == 'anon' and f == 0 and n == vsize[v]:
            im['unmaps'].append((vt[v], t))
    elif op == 'exit': im['end'] = t
cc = [im for im in images.values() if im['name'] == 'cc1']
qs = lambda xs, ps: [round(sorted(xs)[int(len(xs) * q)], 4) for q in ps]
tenths = [[] for _ in range(10)]
for im in cc:
    L = im['end'] - im['start']; tot = sum(n for _, n in im['touches'])
    for i in range(10):
        until = im['start'] + L * (i + 1) / 10
        tenths[i].append(sum(n for t, n in im['touches'] if t <= until) / tot)
print('growth, median share touched by each tenth of life:', [qs(x, [.5])[0] for x in tenths])
ages = [(t1 - t0) / (im['end'] - im['start']) for im in cc for t0, t1 in im['unmaps']]
print('whole munmaps', len(ages), 'age/life p10 p25 p50 p75 p90:', qs(ages, [.1, .25, .5, .75, .9]))
cls = collections.defaultdict(lambda: [0, 0, 0])
for v, k in owner.items():
    if kind[v] != 'anon' or images[k]['name'] != 'cc1': continue
    s = vsize[v]
    c = '<=16p' if s <= 16 else '17-64p' if s <= 64 else '65-511p' if s < 512 else '512p' if s == 512 else '>512p'
    cls[c][0] += 1; cls[c][1] += s; cls[c][2] += vtouch[v]
for c, (n, s, tch) in sorted(cls.items()):
    print(f'{c}: vmas {n} pages {s} touched {tch} ({tch / s:.2f})')
first = sum(im['first'] for im in cc); re = sum(im['re'] for im in cc)
print(f're-faults {re} of {first} first touches ({re / first:.3f}); per image p50 p90:',
      qs([im['re'] / im['first'] for im in cc], [.5, .9]))
