"""The Python API's side of the bad-input catalogue (crates/foliosim-cli/tests/bad_input/ is
the CLI's): every bad argument raises, quickly, an error naming the argument and what it
allows; none hangs, panics or is accepted."""

import copy

import pytest

import foliosim

from test_run import REPO, SMALL_DICT

TABLE = str(REPO / "tables/seed000.toml")


def with_field(path, value):
    d = copy.deepcopy(SMALL_DICT)
    t = d
    for k in path[:-1]:
        t = t[k]
    t[path[-1]] = value
    return d


CASES = [
    # (id, call, exception, message pattern)
    ("run-backend", lambda: foliosim.run(SMALL_DICT, backend="nope"), ValueError, "backend: found 'nope'"),
    ("run-sample-interval-1ns", lambda: foliosim.run(SMALL_DICT, sample_interval="1ns"), ValueError, "sample_interval"),
    ("run-scenario-int", lambda: foliosim.run(5), TypeError, "scenario must be"),
    ("run-scenario-directory", lambda: foliosim.run(str(REPO)), ValueError, "not a regular file"),
    ("run-scenario-dev-zero", lambda: foliosim.run("/dev/zero"), ValueError, "not a regular file"),
    ("run-scenario-missing", lambda: foliosim.run("/no/such.toml"), FileNotFoundError, "no/such.toml"),
    ("run-cpus-nan", lambda: foliosim.run(with_field(["machine", "cpus"], float("nan"))), ValueError, "machine.cpus"),
    ("run-memory-zero", lambda: foliosim.run(with_field(["machine", "memory"], 0)), ValueError, "machine.memory"),
    ("run-cost-inf", lambda: foliosim.run(with_field(["costs"], {"fault_4k_ns": float("inf")})), ValueError, "costs.fault_4k_ns"),
    (
        "run-swap-priority",
        lambda: foliosim.run(with_field(["machine", "swap"], [{"kind": "ssd", "size": "64M", "priority": 40000}])),
        ValueError,
        r"machine.swap\[0\].priority",
    ),
    ("reproduce-seed", lambda: foliosim.reproduce("009"), ValueError, "seed: unknown seed"),
    ("reproduce-scale", lambda: foliosim.reproduce("000", scale=100), ValueError, "scale 100 is out of range"),
    ("reproduce-seeds-negative", lambda: foliosim.reproduce("000", scale=0.02, seeds=-1), ValueError, "seeds: found -1"),
    ("reproduce-seeds-huge", lambda: foliosim.reproduce("000", scale=0.02, seeds=10**9), ValueError, r"seeds: found 1000000000; allowed: 1 \.\.= 1000"),
    ("reproduce-jobs-zero", lambda: foliosim.reproduce("000", scale=0.02, jobs=0), ValueError, "jobs: found 0"),
    ("reproduce-jobs-negative", lambda: foliosim.reproduce("000", scale=0.02, jobs=-1), ValueError, "jobs: found -1"),
    ("fit-split", lambda: foliosim.fit(TABLE, split="nope"), ValueError, "split `nope`"),
    ("fit-free-shape", lambda: foliosim.fit(TABLE, free={"fault_4k_ns": (1,)}), ValueError, r"free\['fault_4k_ns'\]"),
    ("fit-free-nan", lambda: foliosim.fit(TABLE, free={"fault_4k_ns": (float("nan"), 5)}), ValueError, r"free\[0\].low"),
    ("fit-seeds-huge", lambda: foliosim.fit(TABLE, seeds=10**6), ValueError, r"seeds: found 1000000; allowed: 1 \.\.= 100"),
    ("fit-jobs-zero", lambda: foliosim.fit(TABLE, jobs=0), ValueError, "jobs: found 0"),
    ("fit-max-iters-negative", lambda: foliosim.fit(TABLE, max_iters=-1), ValueError, "max_iters: found -1"),
    ("fit-rows-unknown", lambda: foliosim.fit(TABLE, fit_rows=["nope"]), ValueError, "`nope` is not a row"),
    ("fit-missing", lambda: foliosim.fit("/no/such.toml"), FileNotFoundError, "no/such.toml"),
]


@pytest.mark.parametrize("call,exc,pattern", [c[1:] for c in CASES], ids=[c[0] for c in CASES])
def test_bad_argument_is_named(call, exc, pattern):
    with pytest.raises(exc, match=pattern):
        call()
