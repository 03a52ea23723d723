"""Tests of the foliosim Python package (build it first: see the README)."""

from pathlib import Path

import pandas as pd
import pytest

import foliosim

REPO = Path(__file__).resolve().parents[2]

SMALL_TOML = """\
# usemem, 8 processes x 64 MiB in a 256 MiB memcg, ramdisk swap, 64K mTHP, kernel 6.10.
seed = 1

[machine]
cpus = 4
memory = "1G"

[[machine.swap]]
kind = "ramdisk"
size = "512M"

[kernel]
version = "6.10"

[sysfs.hugepages]
"64K" = "always"

[[memcg]]
name = "bench"
max = "256M"

[[workload]]
kind = "usemem"
nproc = 8
size = "64M"
memcg = "bench"
"""

SMALL_DICT = {
    "seed": 1,
    "machine": {"cpus": 4, "memory": "1G", "swap": [{"kind": "ramdisk", "size": "512M"}]},
    "kernel": {"version": "6.10"},
    "sysfs": {"hugepages": {"64K": "always"}},
    "memcg": [{"name": "bench", "max": "256M"}],
    "workload": [{"kind": "usemem", "nproc": 8, "size": "64M", "memcg": "bench"}],
}


@pytest.fixture(scope="module")
def small_path(tmp_path_factory):
    path = tmp_path_factory.mktemp("scenarios") / "usemem-64k-small.toml"
    path.write_text(SMALL_TOML)
    return path


@pytest.fixture(scope="module")
def result():
    return foliosim.run(SMALL_TOML)


def counter(df: pd.DataFrame, name: str) -> int:
    row = df.loc[df["counter"] == name, "value"]
    assert len(row) == 1, f"counter {name} missing"
    return int(row.iloc[0])


def test_counters_dataframe(result):
    df = result.counters
    assert isinstance(df, pd.DataFrame)
    assert list(df.columns) == ["counter", "value"]
    assert df["counter"].is_unique
    assert counter(df, "pswpout") > 0
    assert counter(df, "hugepages-64kB/stats/swpout") > 0
    assert result.counter("pswpout") == counter(df, "pswpout")


def test_result_attributes(result):
    assert result.kernel == "6.10"
    assert result.swap_allocator == result.raw["swap_allocator"] != ""
    assert result.simulated_s > 0
    assert result.simulated_s == pytest.approx(result.raw["simulated_ns"] / 1e9)
    assert isinstance(result.workloads, pd.DataFrame) and len(result.workloads) == 1
    assert result.workloads.loc[0, "kind"] == "usemem"
    assert result.workloads.loc[0, "throughput_bytes_per_s"] > 0
    assert isinstance(result.locks, pd.DataFrame) and len(result.locks) >= 1
    assert {"name", "instance", "acquisitions", "contended"} <= set(result.locks.columns)
    cpu = result.cpu_time
    assert list(cpu.columns) == ["work", "ns", "share"] and cpu.ns.is_monotonic_decreasing
    assert "other" not in set(cpu.work)
    kthreads_ns = sum(t["sys_ns"] for t in result.raw["kernel_threads"])
    assert cpu.ns.sum() == result.raw["cpu_user_ns"] + result.raw["cpu_sys_ns"] + kthreads_ns


def test_path_and_dict_give_the_same_result(result, small_path):
    assert foliosim.run(small_path).to_json() == result.to_json()
    assert foliosim.run(str(small_path)).to_json() == result.to_json()
    assert foliosim.run(SMALL_DICT).to_json() == result.to_json()


def test_repo_scenario_file_runs():
    path = REPO / "scenarios" / "usemem-64k-small.toml"
    if not path.exists():
        pytest.skip("scenarios/usemem-64k-small.toml not in this checkout")
    assert foliosim.run(path).counter("pswpout") > 0


def test_deterministic(result):
    assert foliosim.run(SMALL_TOML).to_json() == result.to_json()


def test_bad_kernel_version_is_value_error():
    with pytest.raises(ValueError) as e:
        # 5.1 became a known release (release table); 3.0 is older than every one.
        foliosim.run(SMALL_TOML.replace('version = "6.10"', 'version = "3.0"'))
    assert "3.0" in str(e.value) and "6.18" in str(e.value)


def test_bad_value_names_the_field():
    bad = dict(SMALL_DICT, machine=dict(SMALL_DICT["machine"], cpus=0))
    with pytest.raises(ValueError, match="machine.cpus"):
        foliosim.run(bad)


def test_missing_file():
    with pytest.raises(FileNotFoundError):
        foliosim.run("no/such/scenario.toml")


def test_to_toml_round_trips_through_defaults():
    text = foliosim.scenario_defaults(SMALL_DICT)
    assert "cost_profile" in text and "sched_slice_ns" in text
    assert foliosim.scenario_defaults(text) == text


def test_plot_counters(result):
    import matplotlib

    matplotlib.use("Agg")
    ax = result.plot_counters(["pswpout", "hugepages-64kB/stats/swpout"])
    assert len(ax.patches) == 2
    with pytest.raises(KeyError):
        result.plot_counters(["no_such_counter"])


def test_a_panic_in_the_simulator_is_a_runtime_error():
    # A panic inside the simulator is a bug; it must reach Python as the RuntimeError the
    # docstrings promise (PyO3 alone would raise PanicException, a BaseException). The hook
    # is private to the extension module and panics where the simulator would run.
    with pytest.raises(RuntimeError, match=r"^internal error in foliosim \(please report\): boom$"):
        foliosim._foliosim._panic_for_tests("boom")
    # The module still works afterwards.
    assert "seed" in foliosim.scenario_defaults(SMALL_TOML)


def test_an_oom_kill_is_in_the_result():
    text = (REPO / "scenarios" / "oom-memcg.toml").read_text()
    r = foliosim.run(text)
    data = __import__("json").loads(r.to_json())
    assert [k["tasks"] for k in data["oom_kills"]] == [["usemem-0"]]
    assert r.counter("oom_kill") == 1
