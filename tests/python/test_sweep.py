"""Sweeps and compare tables from Python and the CLI, on local threads and on a local Ray
cluster (started once for the module, on the loopback address; the CLI joins it with
--ray-address, as it would join a real cluster)."""

import json
import os
import subprocess
import sys
from pathlib import Path

import pandas as pd
import pytest

import foliosim

REPO = Path(__file__).resolve().parents[2]
SEED000 = REPO / "scenarios" / "seed000-usemem-small.toml"
CLI = REPO / "target" / "release" / "foliosim"

# Three axes, as in the README: kernel x 64K x 2M, five seeds (40 runs of seed 000 at 1/20).
AXES = {
    "kernel.version": ["6.9", "6.10"],
    'sysfs.hugepages."64K"': ["always", "never"],
    'sysfs.hugepages."2M"': ["always", "never"],
}
SETS = ["kernel.version=6.9,6.10", 'sysfs.hugepages."64K"=always,never', 'sysfs.hugepages."2M"=always,never']

TINY = """\
[machine]
cpus = 2
memory = "256M"
sched_slice_ns = 200000
[[machine.swap]]
kind = "ramdisk"
size = "64M"
[kernel]
version = "6.9"
[sysfs]
defrag = "always"
[sysfs.hugepages]
"2M" = "never"
[[memcg]]
name = "bench"
max = "24M"
[[workload]]
kind = "usemem"
nproc = 4
size = "8M"
memcg = "bench"
"""


@pytest.fixture(scope="module")
def ray_cluster():
    # A local cluster serves this machine only: loopback addresses (read when ray is imported).
    os.environ.setdefault("RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER", "0")
    ray = pytest.importorskip("ray", reason="the Ray backend needs `pip install ray` (./setup.sh)")
    ray.init(num_cpus=2, include_dashboard=False, log_to_driver=False)
    yield ray.get_runtime_context().gcs_address
    ray.shutdown()


@pytest.fixture(scope="module")
def local(tmp_path_factory):
    out = tmp_path_factory.mktemp("local")
    return foliosim.sweep(SEED000, AXES, seeds=5, out=out)


def test_local_table_has_a_row_per_run_with_axes_seed_and_counters(local):
    assert len(local) == 2 * 2 * 2 * 5
    assert local.attrs["axes"] == ["kernel.version", "sysfs.hugepages.64K", "sysfs.hugepages.2M"]
    assert list(local.columns[:5]) == [*local.attrs["axes"], "seed", "run_id"]
    for col in ["pswpout", "hugepages-64kB/stats/swpout", "usemem.throughput_bytes_per_s", "simulated_ns"]:
        assert col in local.columns
    assert sorted(local["seed"].unique()) == [1, 2, 3, 4, 5]
    assert local["run_id"].is_unique
    # The seed feeds the scheduler's start and slice jitter: runs of one configuration differ.
    per_config = local.groupby(local.attrs["axes"])["simulated_ns"].nunique()
    assert (per_config > 1).all()
    loaded = foliosim.load_sweep(local.attrs["out"])
    pd.testing.assert_frame_equal(loaded, local)


def test_ray_gives_the_same_parquet_bytes_from_python_and_the_cli(local, ray_cluster, tmp_path):
    df = foliosim.sweep(SEED000, AXES, seeds=5, out=tmp_path / "py", backend="ray")
    want = Path(local.attrs["parquet"]).read_bytes()
    assert Path(df.attrs["parquet"]).read_bytes() == want
    pd.testing.assert_frame_equal(df, local)

    assert CLI.exists(), f"{CLI} missing: run ./setup.sh"
    cmd = [str(CLI), "sweep", str(SEED000), "--seeds", "5", "--out", str(tmp_path / "cli"), "--format", "json"]
    for s in SETS:
        cmd += ["--set", s]
    env = dict(os.environ, FOLIOSIM_PYTHON=sys.executable)
    ray_cmd = cmd + ["--backend", "ray", "--ray-address", ray_cluster]
    p = subprocess.run(ray_cmd, capture_output=True, text=True, env=env, timeout=600)
    assert p.returncode == 0, p.stderr
    outcome = json.loads(p.stdout)  # nothing but the JSON on stdout
    assert (outcome["runs"], outcome["ran"]) == (40, 40)
    assert Path(outcome["parquet"]).read_bytes() == want
    # Rerun: everything is found finished.
    p = subprocess.run(cmd, capture_output=True, text=True, env=env, timeout=600)
    assert p.returncode == 0, p.stderr
    assert json.loads(p.stdout)["ran"] == 0


def test_compare_marks_the_64k_difference_significant_and_the_4k_one_not(local):
    c = foliosim.compare(
        local,
        metrics="usemem.throughput_bytes_per_s",
        columns="kernel.version",
        where={'sysfs.hugepages."2M"': "never"},
    )
    table = c.attrs["table"]
    print(table)
    assert "Welch's t-test" in c.attrs["test"]
    new = c[c["config"] == "6.10"].set_index("sysfs.hugepages.64K")
    # 64K on (6.9 splits each folio to swap it out, 6.10 swaps it out whole): significant.
    assert new.loc["always", "significant"] and new.loc["always", "p_value"] < 0.05
    assert new.loc["always", "pct_diff"] > 50
    # 4K only (64K and 2M off): the kernels do the same work; not significant.
    assert not new.loc["never", "significant"] and new.loc["never", "p_value"] > 0.05
    assert abs(new.loc["never", "pct_diff"]) < 1
    assert "Amean    usemem.throughput_bytes_per_s 64K=always" in table
    # The CLI prints the same table from the Parquet file.
    p = subprocess.run(
        [str(CLI), "compare", local.attrs["out"], "--metric", "usemem.throughput_bytes_per_s",
         "--columns", "kernel.version", "--where", 'sysfs.hugepages."2M"=never'],
        capture_output=True, text=True, timeout=60,
    )
    assert p.returncode == 0, p.stderr
    assert p.stdout == table


def test_named_axes_and_bad_axes(tmp_path):
    sizes = {
        "size": {
            "4K": {'sysfs.hugepages."64K"': "never"},
            "64K": {'sysfs.hugepages."64K"': "always"},
        }
    }
    df = foliosim.sweep(TINY, sizes, seeds=2, out=tmp_path / "named", jobs=1)
    assert list(df["size"]) == ["4K", "4K", "64K", "64K"]
    # Any release from 4.1 to 6.18 resolves (the release table); 6.19 is past it.
    with pytest.raises(ValueError, match=r"kernel\.version.*6\.19.*6\.18"):
        foliosim.sweep(TINY, {"kernel.version": ["6.10", "6.19"]}, seeds=1, out=tmp_path / "bad")
    with pytest.raises(ValueError, match="kernel.verison"):
        foliosim.sweep(TINY, {"kernel.verison": ["6.10"]}, seeds=1, out=tmp_path / "bad2")
    assert not (tmp_path / "bad" / "runs").exists()
    # Another sweep into the same out: refused, then replaced with force and a warning.
    other = {"kernel.version": ["6.10"]}
    with pytest.raises(ValueError, match=r"holds a different sweep.*force=True"):
        foliosim.sweep(TINY, other, seeds=1, out=tmp_path / "named", jobs=1)
    with pytest.warns(UserWarning, match="replacing the sweep"):
        replaced = foliosim.sweep(TINY, other, seeds=1, out=tmp_path / "named", jobs=1, force=True)
    assert list(replaced["kernel.version"]) == ["6.10"]
    with pytest.raises(ValueError, match="not a numeric column"):
        foliosim.compare(df, metrics="pswpot")
