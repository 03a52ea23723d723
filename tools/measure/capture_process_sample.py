# Capture 64 resident pages (256 KiB) of a running python3's [heap] into process-heap.bin.
import os, re, subprocess, sys, time
# A python3 doing ordinary work: import the stdlib json/re/collections, build dicts and strings.
child = subprocess.Popen([sys.executable, "-c",
  "import json,re,collections,decimal,email.parser,http.client\n"
  "d={f'key{i}':[i,str(i)*3,{'v':i*1.5}] for i in range(20000)}\n"
  "s=json.dumps(d); c=collections.Counter(s)\n"
  "import time; print('ready',flush=True); time.sleep(60)"], stdout=subprocess.PIPE)
child.stdout.readline()
pid = child.pid
maps = open(f"/proc/{pid}/maps").read().splitlines()
heap = [l for l in maps if l.endswith("[heap]")][0]
lo, hi = (int(x, 16) for x in heap.split()[0].split("-"))
out = bytearray()
with open(f"/proc/{pid}/mem", "rb") as mem:
    # take 64 pages from the middle of the heap (past the allocator's first arenas)
    start = lo + ((hi - lo) // 2 // 4096) * 4096
    mem.seek(start)
    out += mem.read(64 * 4096)
child.kill()
open("process-heap.bin", "wb").write(out)
print(heap, hex(start), len(out))
