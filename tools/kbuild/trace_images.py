#!/usr/bin/env python3
"""Per cc1 image of a foliosim trace: anon VMAs, pages touched, munmaps (whole/partial), CPU."""
import gzip, sys, collections, statistics as st
path = sys.argv[1]
img = {}          # task -> current image name
vmas = {}         # (task-img-key, vma) -> dict
cur = {}          # task -> image key
images = collections.OrderedDict()
owner = {}        # vma -> image key (vma numbers unique in trace)
parent_img = {}
with gzip.open(path, 'rt') as f:
    started = False
    for line in f:
        if not started:
            started = line.startswith('begin'); continue
        p = line.split()
        if p[0] == 'end': break
        t, task, op = int(p[0]), int(p[1]), p[2]
        if op == 'exec':
            key = (task, len(images)); cur[task] = key
            images[key] = dict(name=p[3], start=t, end=None, cpu=0, mmaps=[], munmaps=[], touched=0, touched_anon=0, vma_pages={}, vma_kind={}, vma_t={}, vma_touch=collections.Counter(), madv=[])
            continue
        if op in ('fork', 'clone'):
            cur[task] = cur.get(int(p[3])); continue
        key = cur.get(task)
        if key is None: continue
        im = images[key]
        if op == 'mmap':
            v, n, kind = int(p[3]), int(p[4]), p[5]
            owner[v] = key; im['vma_pages'][v] = n; im['vma_kind'][v] = kind; im['vma_t'][v] = t
            if kind == 'anon': im['mmaps'].append((t, v, n))
        elif op == 'munmap':
            v, first, n = int(p[3]), int(p[4]), int(p[5])
            if owner.get(v) == key and im['vma_kind'].get(v) == 'anon':
                im['munmaps'].append((t, v, first, n, im['vma_pages'][v], im['vma_touch'][v], t - im['vma_t'][v]))
        elif op == 'madvise':
            im['madv'].append((t, p[3:]))
        elif op == 'touch':
            v, n = int(p[3]), int(p[5])
            im['touched'] += n
            if owner.get(v) == key and im['vma_kind'].get(v) == 'anon':
                im['touched_anon'] += n; im['vma_touch'][v] += n
        elif op == 'cpu':
            im['cpu'] += int(p[3])
        elif op == 'exit':
            im['end'] = t
name = sys.argv[2] if len(sys.argv) > 2 else 'cc1'
sel = [im for im in images.values() if im['name'] == name]
print(f"{len(sel)} images of {name}")
life = [(im['end'] - im['start'])/1e6 for im in sel]
cpu = [im['cpu']/1e6 for im in sel]
ta = [im['touched_anon']*4 for im in sel]
tt = [im['touched']*4 for im in sel]
def q(xs):
    xs = sorted(xs); n = len(xs)
    return f"min {xs[0]:.0f} p25 {xs[n//4]:.0f} median {xs[n//2]:.0f} p75 {xs[3*n//4]:.0f} max {xs[-1]:.0f} sum {sum(xs):.0f}"
print("lifetime ms:", q(life)); print("cpu ms:", q(cpu))
print("anon KiB touched:", q(ta)); print("all KiB touched:", q(tt))
nm = [len(im['mmaps']) for im in sel]; nu = [len(im['munmaps']) for im in sel]
print("anon mmaps per image:", q(nm)); print("anon munmaps before exit per image:", q(nu))
sizes = collections.Counter(); 
for im in sel:
    for (_, v, n) in im['mmaps']: sizes[n] += 1
print("anon mmap sizes (pages after trim: count):", sorted(sizes.items()))
part = whole = 0
for im in sel:
    for (t, v, first, n, size, touched, age) in im['munmaps']:
        if first == 0 and n == size: whole += 1
        else: part += 1
print(f"munmaps of anon vmas: whole {whole} partial {part}")
print("madvise events:", sum(len(im['madv']) for im in sel))
for im in sel[:3]:
    print(im['start'], im['end'], im['cpu'], im['touched_anon'], im['mmaps'][:10], im['munmaps'][:10])
