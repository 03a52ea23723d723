"""Counters over simulated time (``run(..., sample_interval="100ms")``), as ``vmstat 1``.

``Result.timeseries()`` is the raw series: one row per sample, ``t_ns`` / ``t_s`` and every
counter under its kernel name, cumulative since the start (gauges such as ``nr_free_pages`` are
the value at that time). ``rates(df)`` turns it into per-interval figures, and the ``plot_*``
helpers draw what kernel people draw: mTHP swap-out fallback % per interval, swap-out rate,
free memory and lock wait over time. The HTML report (``foliosim run --html``) draws the same.
"""

from __future__ import annotations

from typing import Optional, Sequence

import numpy as np
import pandas as pd

PAGE_SIZE = 4096
MIB = 1 << 20

__all__ = [
    "frame",
    "rates",
    "plot_fallback",
    "plot_swapout_rate",
    "plot_free_memory",
    "plot_lock_wait",
    "plot_timeseries",
]


def frame(raw_timeseries: dict) -> pd.DataFrame:
    """The JSON ``timeseries`` object as a DataFrame (one row per sample)."""
    t_ns = np.asarray(raw_timeseries["t_ns"], dtype="int64")
    columns = raw_timeseries["columns"]
    # One 2-D block for every counter: a Series per column costs ~0.4 ms each (227 columns).
    counters = np.asarray(list(columns.values()), dtype="int64").reshape(len(columns), len(t_ns))
    df = pd.concat(
        [
            pd.DataFrame({"t_ns": t_ns, "t_s": t_ns / 1e9}),
            pd.DataFrame(counters.T, columns=list(columns)),
        ],
        axis=1,
    )
    df.attrs["interval_ns"] = raw_timeseries["interval_ns"]
    df.attrs["requested_interval"] = raw_timeseries["requested_interval"]
    return df


def _sum(df: pd.DataFrame, suffix: str) -> pd.Series:
    cols = [c for c in df.columns if c.startswith("hugepages-") and c.endswith(suffix)]
    if not cols:
        return pd.Series(0, index=df.index, dtype="int64")
    return df[cols].sum(axis=1)


def _col(df: pd.DataFrame, name: str) -> pd.Series:
    return df[name] if name in df.columns else pd.Series(0, index=df.index, dtype="int64")


def _pct(part: pd.Series, rest: pd.Series) -> pd.Series:
    total = part + rest
    return (100.0 * part / total).where(total > 0)


def rates(df: pd.DataFrame) -> pd.DataFrame:
    """Per-interval figures of a time series, indexed by the end of each interval (``t_s``).

    Columns: ``swpout_fallback_pct`` (mTHP swap-outs that fell back to splitting, % of mTHP
    swap-outs, all sizes), ``swapout_mib_s`` (pswpout), ``split_per_s`` (large folios split),
    ``fault_fallback_pct`` (mTHP faults falling back), ``free_mib`` (nr_free_pages at the
    end), ``lock_wait_cpus`` (spinlock wait per second: the average number of CPUs spinning,
    mmap_lock's sleepers left out), ``mmap_lock_wait_tasks`` (tasks asleep on mmap_lock),
    ``cpu_busy_cpus`` (user + system + kernel threads), ``sys_cpus`` (system + kernel
    threads), ``iowait_tasks``, ``pgfault_per_s``. Time is spread over the intervals each step
    covers, so the CPU figures never exceed the machine's CPUs. NaN where an interval had nothing to divide (no mTHP swap-out).
    """
    d = df.diff().iloc[1:]
    dt_s = d["t_ns"].clip(lower=1) / 1e9
    out = pd.DataFrame(index=df["t_s"].iloc[1:])
    out.index.name = "t_s"
    values = {
        "swpout_fallback_pct": _pct(_sum(d, "/stats/swpout_fallback"), _sum(d, "/stats/swpout")),
        "swapout_mib_s": _col(d, "pswpout") * PAGE_SIZE / MIB / dt_s,
        "split_per_s": _sum(d, "/stats/split") / dt_s,
        "fault_fallback_pct": _pct(_sum(d, "/stats/anon_fault_fallback"), _sum(d, "/stats/anon_fault_alloc")),
        "free_mib": _col(df, "nr_free_pages").iloc[1:] * PAGE_SIZE / MIB,
        "lock_wait_cpus": (_col(d, "lock_wait_ns") - _col(d, "lock_wait_ns/mmap_lock")) / 1e9 / dt_s,
        "mmap_lock_wait_tasks": _col(d, "lock_wait_ns/mmap_lock") / 1e9 / dt_s,
        "cpu_busy_cpus": (_col(d, "cpu_user_ns") + _col(d, "cpu_sys_ns") + _col(d, "kthread_sys_ns"))
        / 1e9
        / dt_s,
        "sys_cpus": (_col(d, "cpu_sys_ns") + _col(d, "kthread_sys_ns")) / 1e9 / dt_s,
        "iowait_tasks": _col(d, "cpu_iowait_ns") / 1e9 / dt_s,
        "pgfault_per_s": _col(d, "pgfault") / dt_s,
    }
    for name, series in values.items():
        out[name] = series.to_numpy(dtype="float64")
    return out


def _series(results, labels) -> list:
    """(label, rates DataFrame) for a Result, a time-series DataFrame, or a list of them."""
    if isinstance(results, pd.DataFrame) or hasattr(results, "timeseries"):
        results = [results]
    results = list(results)
    if labels is None:
        labels = [
            f"kernel {r.kernel} seed {r.seed}" if hasattr(r, "kernel") else f"run {i}" for i, r in enumerate(results)
        ]
    out = []
    for r, label in zip(results, labels):
        df = r if isinstance(r, pd.DataFrame) else r.timeseries()
        out.append((label, rates(df)))
    return out


def _plot(column: str, ylabel: str, title: str, results, labels, ax, **kwargs):
    import matplotlib.pyplot as plt  # lazily: importing foliosim must not need a display

    if ax is None:
        _, ax = plt.subplots(figsize=(8, 3.5), layout="constrained")
    for label, r in _series(results, labels):
        ax.plot(r.index, r[column], label=label, **kwargs)
    ax.set_xlabel("simulated time, s")
    ax.set_ylabel(ylabel)
    ax.set_title(title)
    ax.grid(True, alpha=0.3)
    if len(ax.get_lines()) > 1:
        ax.legend(fontsize="small")
    return ax


def plot_fallback(results, labels: Optional[Sequence[str]] = None, ax=None, **kwargs):
    """mTHP swap-out fallback % per interval (swpout_fallback / (swpout + swpout_fallback))."""
    return _plot("swpout_fallback_pct", "swap-out fallback, %", "mTHP swap-out fallback per interval",
                 results, labels, ax, **kwargs)


def plot_swapout_rate(results, labels: Optional[Sequence[str]] = None, ax=None, **kwargs):
    """Swap-out rate (pswpout), MiB/s per interval."""
    return _plot("swapout_mib_s", "pswpout, MiB/s", "Swap-out rate", results, labels, ax, **kwargs)


def plot_free_memory(results, labels: Optional[Sequence[str]] = None, ax=None, **kwargs):
    """Free memory (nr_free_pages), MiB."""
    return _plot("free_mib", "nr_free_pages, MiB", "Free memory", results, labels, ax, **kwargs)


def plot_lock_wait(results, labels: Optional[Sequence[str]] = None, ax=None, **kwargs):
    """Lock wait per interval, as the average number of CPUs waiting for a lock."""
    return _plot("lock_wait_cpus", "CPUs spinning on a lock (average)", "Spinlock wait", results, labels, ax, **kwargs)


def plot_timeseries(results, labels: Optional[Sequence[str]] = None):
    """The four plots above in one figure (2 x 2); returns the Figure."""
    import matplotlib.pyplot as plt

    fig, axes = plt.subplots(2, 2, figsize=(12, 7), layout="constrained")
    plot_fallback(results, labels, ax=axes[0][0])
    plot_swapout_rate(results, labels, ax=axes[0][1])
    plot_free_memory(results, labels, ax=axes[1][0])
    plot_lock_wait(results, labels, ax=axes[1][1])
    return fig
