"""Time series and plots from Python (Result.timeseries, foliosim.timeseries)."""

import matplotlib

matplotlib.use("Agg")

import math
from pathlib import Path

import pandas as pd
import pytest

import foliosim
from foliosim import timeseries

REPO = Path(__file__).resolve().parents[2]
SMALL = REPO / "scenarios" / "usemem-64k-small.toml"


@pytest.fixture(scope="module")
def sampled():
    return foliosim.run(SMALL, sample_interval="5ms")


def test_sampling_changes_no_counter(sampled):
    plain = foliosim.run(SMALL)
    assert sampled.raw["counters"] == plain.raw["counters"]
    assert "timeseries" not in plain.raw
    with pytest.raises(ValueError, match="sample_interval"):
        plain.timeseries()


def test_timeseries_is_a_dataframe_of_cumulative_counters(sampled):
    df = sampled.timeseries()
    assert isinstance(df, pd.DataFrame)
    assert df.attrs["interval_ns"] == 5_000_000
    assert list(df["t_ns"].iloc[:3]) == [0, 5_000_000, 10_000_000]
    assert df["t_ns"].iloc[-1] == sampled.simulated_ns
    assert df["pswpout"].iloc[-1] == sampled.counter("pswpout")
    assert df["pgfault"].is_monotonic_increasing
    r = timeseries.rates(df)
    assert len(r) == len(df) - 1
    assert (r["swapout_mib_s"] >= 0).all() and r["swapout_mib_s"].max() > 0
    assert r["free_mib"].min() > 0
    assert r["swpout_fallback_pct"].dropna().between(0, 100).all()


def test_a_bad_interval_names_the_field():
    with pytest.raises(ValueError, match="sample_interval"):
        foliosim.run(SMALL, sample_interval="10 parsecs")


def test_plots_draw_lines(sampled, tmp_path):
    for plot in (sampled.plot_fallback, sampled.plot_swapout_rate, sampled.plot_free_memory, sampled.plot_lock_wait):
        ax = plot()
        assert ax.get_lines(), plot.__name__
        assert ax.get_xlabel() == "simulated time, s"
    fig = foliosim.plot_timeseries([sampled, sampled], labels=["a", "b"])
    assert len(fig.axes) == 4
    fig.savefig(tmp_path / "ts.png")
    assert (tmp_path / "ts.png").stat().st_size > 10_000


def test_plot_counters_labels_are_not_cut_off(sampled):
    ax = sampled.plot_counters()
    fig = ax.figure
    fig.canvas.draw()
    renderer = fig.canvas.get_renderer()
    fig_box = fig.get_window_extent(renderer)
    labels = [t for t in ax.get_yticklabels() if t.get_text()]
    assert any(t.get_text().startswith("hugepages-64kB/") for t in labels)
    for t in labels:
        box = t.get_window_extent(renderer)
        assert box.x0 >= fig_box.x0 - 0.5 and box.x1 <= fig_box.x1 + 0.5, t.get_text()
    assert not math.isnan(fig.get_size_inches()[0])
