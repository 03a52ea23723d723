"""foliosim.reproduce: every seed document's table as a DataFrame, and its argument errors.

Each seed runs at its smallest scale (0.02; seed 004, which scales its lookups only, 0.002)
with one seed per configuration. Wall times on the 2-core dev machine with `foliosim
reproduce <seed> --scale 0.02 --seeds 1 --jobs 1` (the machine shared): 000 1.2 s, 001 0.3 s,
002 1.8 s, 003 19 s; 004 at 0.002: see README.md's table.
"""

import functools

import pandas as pd
import pytest

import foliosim

SCALE = 0.02
SCALE_OF = {"004": 0.002}


@functools.cache
def table(seed: str) -> pd.DataFrame:
    """Each seed's table run once for the module (seed 003's takes 20-40 s)."""
    return foliosim.reproduce(seed, scale=SCALE_OF.get(seed, SCALE), seeds=1)

# seed -> (rows, columns every table has)
EXPECTED = {
    "000": (6, {"kernel", "size", "throughput_mib_s"}),
    "001": (4, {"defrag", "policy", "percent_huge"}),
    "002": (6, {"config", "size", "throughput_kb_s"}),
    "003": (None, {"table", "kernel", "allocator"}),
    "004": (2, {"config", "ours.TLB shootdowns per CPU", "seed.TLB shootdowns per CPU"}),
}


@pytest.mark.parametrize("seed", sorted(EXPECTED))
def test_reproduce_each_seed(seed):
    df = table(seed)
    rows, columns = EXPECTED[seed]
    assert isinstance(df, pd.DataFrame) and len(df) > 0
    if rows is not None:
        assert len(df) == rows
    assert columns <= set(df.columns)
    assert df.attrs["seed"] == seed
    assert df.attrs["scale"] == SCALE_OF.get(seed, SCALE) and df.attrs["seeds"] == 1
    assert not any(isinstance(v, dict) for v in df.iloc[0]), "a nested figure left as a dict"


def test_reproduce_000_table():
    df = table("000")
    assert set(df["kernel"]) == {"6.9", "6.10"}
    assert set(df["size"]) == {"4K", "64K", "2M"}
    assert (df["throughput_mib_s"] > 0).all()


def test_reproduce_003_stacks_its_three_tables():
    df = table("003")
    assert list(df.columns)[0] == "table"
    assert list(dict.fromkeys(df["table"])) == ["allocator_test", "kbuild_fallback", "lock_split"]
    assert df.attrs["iterations"] > 0


def test_reproduce_takes_ints_and_short_strings():
    want = table("001").to_json()
    assert foliosim.reproduce(1, scale=SCALE, seeds=1).to_json() == want
    assert foliosim.reproduce("1", scale=SCALE, seeds=1).to_json() == want
    assert foliosim.reproduce(1, scale=SCALE, seeds=1).attrs["seed"] == "001"


def test_reproduce_is_the_same_whatever_the_jobs():
    one = foliosim.reproduce("000", scale=SCALE, seeds=1, jobs=1)
    two = foliosim.reproduce("000", scale=SCALE, seeds=1, jobs=2)
    assert one.to_json() == two.to_json()


@pytest.mark.parametrize("seed", ["005", 5, -1, "abc", "", "0001", "0000", 1.5, None, True])
def test_reproduce_unknown_seed(seed):
    with pytest.raises(ValueError, match=r"seed: unknown seed .*allowed: \"000\", .*\"004\""):
        foliosim.reproduce(seed, scale=SCALE)


@pytest.mark.parametrize(
    "seed, kwargs, field",
    [
        *[(s, kw, f) for s in ("001", "004") for kw, f in
          [({"scale": 5.0}, "scale"), ({"seeds": 0}, "seeds"), ({"jobs": 0}, "jobs")]],
        ("001", {"scale": 0.01}, "scale"),
        ("004", {"scale": 0.0005}, "scale"),  # seed 004 scales its lookups only: 0.001 ..= 4
    ],
)
def test_reproduce_bad_arguments(seed, kwargs, field):
    # Checked before anything runs.
    with pytest.raises(ValueError, match=f"^{field}"):
        foliosim.reproduce(seed, **{"scale": SCALE, **kwargs})
