"""The live backend from Python: refused without allow_live; a real run where possible."""

import os
from pathlib import Path

import pytest

import foliosim

ROOT = Path(__file__).resolve().parents[2]
PAGEOUT = ROOT / "scenarios" / "validate" / "pageout-64k-zram.toml"


def test_live_needs_the_explicit_opt_in():
    with pytest.raises(PermissionError, match="allow_live"):
        foliosim.run(PAGEOUT, backend="live")


def test_unknown_backend_is_a_clear_error():
    with pytest.raises(ValueError, match="allowed: 'sim', 'live'"):
        foliosim.run(PAGEOUT, backend="qemu")


def _live_skip_reason():
    if os.geteuid() != 0:
        return "not root"
    if not Path("/sys/kernel/mm/transparent_hugepage/hugepages-64kB/enabled").exists():
        return "no per-size mTHP sysfs"
    if not (Path("/sys/class/zram-control").exists() or Path("/sys/block/zram0").exists()):
        return "no zram"
    return None


@pytest.mark.skipif(_live_skip_reason() is not None, reason=f"live backend unavailable: {_live_skip_reason()}")
def test_live_pageout_of_64k_mthp():
    r = foliosim.run(PAGEOUT, backend="live", allow_live=True)
    assert r.counter("hugepages-64kB/stats/swpout") == 2048
    assert r.counter("pswpout") == 2 * 16384
    assert r.workloads.loc[0, "throughput_bytes_per_s"] > 0
