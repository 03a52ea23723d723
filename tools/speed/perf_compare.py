#!/usr/bin/env python3
"""Engine speed of several foliosim builds side by side, interleaved run by run.

Usage: perf_compare.py REPS NAME=PATH [NAME=PATH ...] -- SCENARIO.toml [...]
Each (repetition, scenario, build) runs `PATH run SCENARIO` under `perf stat -e
cycles,instructions` (Debian: apt-get install linux-perf); prints one JSON line per run, then
mean and sample std per (scenario, build) of cycles, instructions, wall seconds (the CLI's engine
line on stderr) and M steps/s. Cycles are the figure to compare on a shared machine: wall time
also counts waiting for a CPU.
"""
import json
import re
import statistics
import subprocess
import sys

ENGINE = re.compile(r"(\d+) steps in ([\d.]+) s wall = ([\d.]+) M steps/s; ([\d.]+) simulated s")


def run(path, scenario):
    p = subprocess.run(
        ["perf", "stat", "-x,", "-e", "cycles,instructions", "--", path, "run", scenario],
        stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True, check=True)
    counts = {}
    for line in p.stderr.splitlines():
        f = line.split(",")
        if len(f) > 2 and f[2].split(":")[0] in ("cycles", "instructions"):
            counts[f[2].split(":")[0]] = int(f[0])
    m = ENGINE.search(p.stderr)
    return dict(cycles=counts["cycles"], instr=counts["instructions"], steps=int(m[1]),
                wall=float(m[2]), msteps=float(m[3]), simulated_s=float(m[4]))


def main():
    args = sys.argv[1:]
    split = args.index("--")
    reps, builds, scenarios = int(args[0]), [a.split("=", 1) for a in args[1:split]], args[split + 1:]
    rows = []
    for rep in range(reps):
        for s in scenarios:
            for name, path in builds:
                row = dict(scenario=s, build=name, rep=rep, **run(path, s))
                rows.append(row)
                print(json.dumps(row), flush=True)

    def ms(v):
        return statistics.mean(v), statistics.stdev(v) if len(v) > 1 else 0.0

    print(f"{'scenario':40} {'build':8} {'G cycles':>16} {'G instr':>8} {'wall s':>13} {'M steps/s':>9}")
    for s in scenarios:
        for name, _ in builds:
            rr = [r for r in rows if r["scenario"] == s and r["build"] == name]
            c = ms([r["cycles"] / 1e9 for r in rr])
            i = ms([r["instr"] / 1e9 for r in rr])
            w = ms([r["wall"] for r in rr])
            e = ms([r["msteps"] for r in rr])
            print(f"{s:40} {name:8} {c[0]:8.3f} ±{c[1]:6.3f} {i[0]:8.3f} {w[0]:6.2f} ±{w[1]:5.2f} {e[0]:9.3f}")


if __name__ == "__main__":
    main()
