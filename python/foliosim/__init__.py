"""foliosim from Python: run scenarios of the Linux mm simulator and get pandas DataFrames.

    >>> import foliosim
    >>> r = foliosim.run("scenarios/usemem-64k-small.toml")
    >>> r.counters.set_index("counter").loc["pswpout", "value"]
    >>> foliosim.reproduce("000", scale=0.05, seeds=2)

A scenario is TOML text, a path to a ``.toml`` file (``str`` or ``pathlib.Path``), or a dict
with the same structure as the TOML (tables are dicts, ``[[workload]]`` is a list of dicts).
Invalid scenarios raise ``ValueError`` naming the field, the value and what is allowed;
simulation failures raise ``RuntimeError``. Runs are deterministic: the same scenario gives
the same JSON byte for byte.
"""

from __future__ import annotations

import datetime as _dt
import json
import math
import numbers
import os
from pathlib import Path
from typing import Any, Iterable, Mapping, Sequence, Union

import pandas as pd

from . import _foliosim
from . import timeseries
from .timeseries import plot_timeseries

__version__ = _foliosim.__version__

__all__ = [
    "run",
    "reproduce",
    "scenario_defaults",
    "to_toml",
    "Result",
    "LiveResult",
    "timeseries",
    "plot_timeseries",
    "sweep",
    "compare",
    "fit",
    "FitResult",
    "load_sweep",
    "__version__",
]

ScenarioLike = Union[str, "os.PathLike[str]", Mapping[str, Any]]


# --------------------------------------------------------------------------------------------
# dict -> JSON -> Rust (the Scenario's own serde types read it; the toml crate writes TOML)
# --------------------------------------------------------------------------------------------


def _json_default(v: Any) -> Any:
    """What json.dumps cannot write itself: paths, dates, numpy scalars and arrays."""
    if isinstance(v, os.PathLike):
        return os.fspath(v)
    if isinstance(v, (_dt.datetime, _dt.date, _dt.time)):
        return v.isoformat()
    if hasattr(v, "tolist"):  # numpy scalars and arrays
        return v.tolist()
    if hasattr(v, "item"):
        return v.item()
    raise TypeError(f"unsupported type {type(v).__name__}: {v!r}")


def _first_path(v: Any, where: str, bad) -> Union[str, None]:
    """The path (``workload[0].nproc``) of the first value in `v` that `bad` says is bad."""
    if isinstance(v, Mapping):
        items = ((f"{where}.{k}" if where else str(k), x) for k, x in v.items())
    elif isinstance(v, (list, tuple)):
        items = ((f"{where}[{i}]", x) for i, x in enumerate(v))
    else:
        return where if bad(v) else None
    return next((p for p in (_first_path(x, w, bad) for w, x in items) if p is not None), None)


def _unwritable(v: Any) -> bool:
    try:
        json.dumps(v, default=_json_default)
        return False
    except TypeError:
        return True


def _scenario_json(scenario: Mapping[str, Any]) -> str:
    if not isinstance(scenario, Mapping):
        raise TypeError(f"expected a dict, found {type(scenario).__name__}")
    where = _first_path(scenario, "", lambda v: isinstance(v, float) and not math.isfinite(v))
    if where is not None:
        raise ValueError(f"scenario field `{where}`: not a finite number; allowed: finite numbers")
    try:
        return json.dumps(scenario, default=_json_default, allow_nan=False)
    except TypeError as e:
        where = _first_path(scenario, "", _unwritable)  # None: a key is at fault
        raise TypeError(f"scenario field `{where}`: {e}" if where else f"scenario: {e}") from None


def to_toml(scenario: Mapping[str, Any]) -> str:
    """A scenario dict (the TOML's structure: tables are dicts, ``[[workload]]`` a list of
    dicts; None leaves a field out) as TOML text with every default written out. Validates it:
    ValueError naming the field if it is invalid."""
    return _foliosim.scenario_toml_from_json(_scenario_json(scenario))


def _count(name: str, value: Any) -> Union[int, None]:
    """An int argument >= 0 (None stays None), or ValueError naming it: the extension's
    unsigned conversion would raise an OverflowError that names nothing."""
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, numbers.Integral) or value < 0:
        raise ValueError(f"{name}: found {value!r}; allowed: a whole number >= 1")
    return int(value)


def _scenario_text(scenario: ScenarioLike) -> str:
    if isinstance(scenario, Mapping):
        return to_toml(scenario)  # validated, every default written out
    if isinstance(scenario, os.PathLike):
        return Path(scenario).read_text(encoding="utf-8")
    if isinstance(scenario, bytes):
        scenario = scenario.decode("utf-8")
    if isinstance(scenario, str):
        one_line = "\n" not in scenario and "=" not in scenario and "[" not in scenario
        if one_line and scenario.strip():
            path = Path(scenario.strip()).expanduser()
            if path.is_file():
                return path.read_text(encoding="utf-8")
            if path.exists():
                raise ValueError(f"scenario: {scenario!r} is not a regular file; allowed: a .toml file")
            raise FileNotFoundError(f"scenario file not found: {scenario!r}")
        return scenario
    raise TypeError(
        f"scenario must be TOML text, a path to a .toml file or a dict, found {type(scenario).__name__}"
    )


# --------------------------------------------------------------------------------------------
# Results
# --------------------------------------------------------------------------------------------


class Result:
    """The result of one run.

    Attributes: ``raw`` (the JSON as a dict), ``counters`` (DataFrame ``counter``, ``value``:
    /proc/vmstat and ``hugepages-<size>kB/stats/*`` deltas, kernel names), ``workloads``
    (DataFrame, one row per workload), ``locks`` (DataFrame, one row per lock instance),
    ``swap_devices`` (DataFrame), ``cpu_time`` (DataFrame ``work``, ``ns``, ``share``: the CPU
    time by the kernel or user work that spent it, largest first, adding up to user + sys time),
    ``simulated_s``, ``steps``, ``seed``, ``kernel``, ``swap_allocator``.
    """

    def __init__(self, json_text: str):
        self._json = json_text
        self.raw: dict = json.loads(json_text)
        raw = self.raw
        self.kernel: str = raw["kernel"]
        self.swap_allocator: str = raw["swap_allocator"]
        self.seed: int = raw["seed"]
        self.steps: int = raw["steps"]
        self.simulated_ns: int = raw["simulated_ns"]
        self.simulated_s: float = raw["simulated_ns"] / 1e9
        self.foliosim_version: str = raw.get("foliosim_version", "")
        counters = raw["counters"]
        self.counters = pd.DataFrame(
            {"counter": list(counters.keys()), "value": pd.Series(list(counters.values()), dtype="int64")}
        )
        self.workloads = pd.DataFrame(raw.get("workloads", []))
        self.locks = pd.DataFrame(raw.get("locks", []))
        self.swap_devices = pd.DataFrame(raw.get("swap_devices", []))
        cpu = sorted(raw.get("cpu_time_ns", {}).items(), key=lambda kv: (-kv[1], kv[0]))
        total_ns = max(sum(ns for _, ns in cpu), 1)
        self.cpu_time = pd.DataFrame(
            {
                "work": [w for w, _ in cpu],
                "ns": pd.Series([ns for _, ns in cpu], dtype="int64"),
                "share": pd.Series([ns / total_ns for _, ns in cpu], dtype="float64"),
            }
        )

    def timeseries(self) -> pd.DataFrame:
        """Counters over simulated time (run with ``sample_interval=``): one row per sample,
        ``t_ns``, ``t_s`` and every counter, cumulative (see ``foliosim.timeseries``).
        ``foliosim.timeseries.rates(df)`` gives per-interval rates and percentages."""
        raw = self.raw.get("timeseries")
        if raw is None:
            raise ValueError(
                "this run has no time series: run it with sample_interval='100ms' (or 'auto'), "
                "or set [report] sample_interval in the scenario"
            )
        return timeseries.frame(raw)

    def plot_fallback(self, ax=None, **kwargs):
        """mTHP swap-out fallback % per interval; returns the Axes."""
        return timeseries.plot_fallback(self, ax=ax, **kwargs)

    def plot_swapout_rate(self, ax=None, **kwargs):
        """Swap-out rate (pswpout MiB/s) per interval; returns the Axes."""
        return timeseries.plot_swapout_rate(self, ax=ax, **kwargs)

    def plot_free_memory(self, ax=None, **kwargs):
        """Free memory over time; returns the Axes."""
        return timeseries.plot_free_memory(self, ax=ax, **kwargs)

    def plot_lock_wait(self, ax=None, **kwargs):
        """Spinlock wait over time (average CPUs spinning); returns the Axes."""
        return timeseries.plot_lock_wait(self, ax=ax, **kwargs)

    def to_json(self) -> str:
        """The run's JSON exactly as the simulator wrote it (identical for identical scenarios)."""
        return self._json

    def counter(self, name: str) -> int:
        """One counter's value; KeyError naming the counter if there is none."""
        try:
            return int(self.raw["counters"][name])
        except KeyError:
            raise KeyError(f"no counter named {name!r}") from None

    def plot_counters(self, names: Union[str, Iterable[str], None] = None, ax=None, **kwargs):
        """Horizontal bar chart of the named counters (all non-zero ones if ``names`` is None).

        Returns the matplotlib Axes. A figure made here is sized to its labels and laid out
        so that they show in full (``constrained`` layout); with your own ``ax``, save with
        ``bbox_inches="tight"`` or give the figure room on the left.
        """
        import matplotlib.pyplot as plt  # lazily: importing foliosim must not need a display

        if names is None:
            df = self.counters[self.counters["value"] != 0]
        else:
            if isinstance(names, str):
                names = [names]
            names = list(names)
            missing = [n for n in names if n not in self.raw["counters"]]
            if missing:
                raise KeyError(f"no counters named {missing}")
            df = self.counters.set_index("counter").loc[names].reset_index()
        if ax is None:
            longest = max((len(str(n)) for n in df["counter"]), default=10)
            # ~0.075 in per character of a 10 pt label, beside a 5 in plot.
            _, ax = plt.subplots(
                figsize=(5 + 0.075 * longest, 0.3 * max(len(df), 1) + 1.3),
                layout="constrained",
            )
        ax.barh(df["counter"], df["value"], **kwargs)
        ax.invert_yaxis()
        ax.set_xlabel("count")
        ax.set_title(f"kernel {self.kernel}, {self.swap_allocator}, seed {self.seed}")
        return ax

    def __repr__(self) -> str:
        return (
            f"<foliosim.Result kernel={self.kernel} swap_allocator={self.swap_allocator} "
            f"seed={self.seed} simulated_s={self.simulated_s:.3f} counters={len(self.counters)}>"
        )


class LiveResult:
    """The result of a live run (``run(..., backend="live")``).

    Attributes: ``raw`` (the JSON as a dict), ``counters`` (DataFrame ``counter``, ``value``:
    event deltas under the sim's names), ``workloads`` (DataFrame), ``wall_s``, ``cpu_user_s``,
    ``cpu_sys_s``, ``kernel_release``, ``notes``, ``task_failures``.
    """

    def __init__(self, json_text: str):
        self._json = json_text
        self.raw: dict = json.loads(json_text)
        raw = self.raw
        self.kernel_release: str = raw["kernel_release"]
        self.wall_s: float = raw["wall_ns"] / 1e9
        self.cpu_user_s: float = raw["cpu_user_ns"] / 1e9
        self.cpu_sys_s: float = raw["cpu_sys_ns"] / 1e9
        counters = raw["counters"]
        self.counters = pd.DataFrame(
            {"counter": list(counters.keys()), "value": pd.Series(list(counters.values()), dtype="int64")}
        )
        self.workloads = pd.DataFrame(raw.get("workloads", []))
        self.notes: list = raw.get("notes", [])
        self.task_failures: list = raw.get("task_failures", [])

    def to_json(self) -> str:
        return self._json

    def counter(self, name: str) -> int:
        try:
            return int(self.raw["counters"][name])
        except KeyError:
            raise KeyError(f"no counter named {name!r}") from None

    def __repr__(self) -> str:
        return f"<foliosim.LiveResult kernel={self.kernel_release} wall_s={self.wall_s:.3f}>"


def run(
    scenario: ScenarioLike,
    backend: str = "sim",
    allow_live: bool = False,
    enable_zswap: bool = False,
    sample_interval: Union[str, None] = None,
):
    """Run a scenario (TOML text, path to a .toml file, or dict) and return its Result.

    ``backend="live"`` runs it on this machine's kernel instead (root only, and only with
    ``allow_live=True``): it changes sysfs knobs, swap devices and memcgs for the run and
    restores them afterwards; it returns a LiveResult. A scenario that turns zswap on also
    needs ``enable_zswap=True``: zswap is turned off again after the run, but the host then
    swaps mTHP in as order 0 until reboot.

    Raises ValueError for an invalid scenario or backend, RuntimeError if the run fails,
    PermissionError if a live run is refused.

    ``sample_interval`` (sim only: ``"100ms"``, ``"1s"``, ``"auto"``) records every counter over
    simulated time, as ``vmstat 1`` does: ``Result.timeseries()``. It changes no result.
    """
    text = _scenario_text(scenario)
    if backend == "sim":
        return Result(_foliosim.run_json(text, sample_interval))
    if backend == "live":
        if sample_interval is not None:
            raise ValueError("sample_interval: the sim's only; a live run has no time series")
        return LiveResult(_foliosim.run_live_json(text, bool(allow_live), bool(enable_zswap)))
    raise ValueError(f"backend: found {backend!r}; allowed: 'sim', 'live'")


def scenario_defaults(scenario: ScenarioLike) -> str:
    """The scenario as TOML with every default written out (validates it too)."""
    return _foliosim.scenario_defaults_toml(_scenario_text(scenario))


def reproduce(
    seed: Union[str, int] = "000", scale: float = 1.0, seeds: int = 1, jobs: Union[int, None] = None
) -> pd.DataFrame:
    """Reproduce a seed document's experiment and return its table, one row per configuration.

    ``seed``: ``"000"`` .. ``"004"`` (or ``0`` .. ``4``), as ``foliosim reproduce``. ``scale``
    multiplies every size of the experiment (1.0 = the seed's full size; 0.02 ..= 4 allowed;
    seed 004 scales its lookups only, 0.001 ..= 4);
    ``seeds`` is the number of runs (seeds 1..=seeds) per configuration; ``jobs`` runs at a time
    (default: every core; the table is the same whatever the count).

    Seeds 000, 002 and 004 give their ``rows``, seed 001 its ``columns`` (one row per defrag
    setting and policy). A row's nested figures are columns ``<field>.<name>``: seed 000's
    ``cpu_ms_per_gib.shrink_folio_list``, ..., seed 004's ``ours.lookups/s``, ``seed.lookups/s``,
    ``counters.pgdemote_kswapd``, .... Seed 003 has three tables: their rows are stacked, with a ``table``
    column first (``allocator_test``, ``kbuild_fallback``, ``lock_split``). The DataFrame's
    ``attrs`` hold ``seed`` and the report's other fields (``scale``, ``seeds``, ...).
    Raises ValueError for an unknown seed or a bad argument, RuntimeError if a run fails.
    """
    report = json.loads(
        _foliosim.reproduce_json(seed, float(scale), _count("seeds", seeds), _count("jobs", jobs))
    )
    tables = {k: v for k, v in report.items() if isinstance(v, list)}
    # json_normalize: nested figures become columns, not dicts in cells; flat rows come out
    # as pd.DataFrame would make them.
    if len(tables) == 1:
        df = pd.json_normalize(next(iter(tables.values())))
    else:
        df = pd.concat(
            [pd.json_normalize(rows).assign(table=name) for name, rows in tables.items()],
            ignore_index=True,
        )
        df = df[["table", *[c for c in df.columns if c != "table"]]]
    df.attrs["seed"] = f"{int(seed):03d}" if isinstance(seed, int) else str(seed).zfill(3)
    df.attrs.update({k: v for k, v in report.items() if k not in tables})
    return df


class FitResult:
    """The result of :func:`fit`.

    ``costs``: one row per free cost (fitted value, ×/÷ one standard deviation from the
    curvature with the others re-fitted and held, bounds, prior, ``at_bound``, source).
    ``rows``: one row per table row (fitted or predicted, published mean and std, predicted,
    the simulator's seed std, the fit's spread, error, z, inside the published spread).
    ``loo``: leave-one-out predictions (empty unless ``loo=True``). ``costs_toml``: the costs
    file (every cost with where it came from; ``output=`` writes it). ``report``: the raw dict.
    """

    def __init__(self, report: dict, costs_toml: str):
        self.report = report
        self.costs_toml = costs_toml
        fit = report["fit"]
        self.costs = pd.DataFrame(fit["free"])
        self.rows = pd.DataFrame(fit["rows"])
        self.loo = pd.DataFrame(report["loo"])
        self.warnings = list(fit["warnings"])
        self.chi2 = fit["chi2"]
        self.fit_rows = list(fit["fit_rows"])

    def __repr__(self) -> str:
        values = ", ".join(f"{r.cost}={r.value:.0f}" for r in self.costs.itertuples())
        return f"<foliosim.FitResult {self.report['fit']['table']}: {values}; chi2 {self.chi2:.3f}>"


def fit(
    table: Union[str, "os.PathLike[str]"],
    split: str = "default",
    fit_rows: Sequence[str] | None = None,
    free: Mapping[str, Sequence[float]] | None = None,
    loo: bool = False,
    scale: float | None = None,
    seeds: int | None = None,
    jobs: int | None = None,
    max_iters: int = 80,
    output: Union[str, "os.PathLike[str]", None] = None,
) -> FitResult:
    """Fit named costs to a published table and predict the rows left out (docs/fit.md).

    ``table`` is a path to a table TOML (e.g. ``tables/seed000.toml``) or its text. ``split``:
    ``"default"`` (the table's), ``"baseline-to-proposal"`` or ``"proposal-to-baseline"``;
    ``fit_rows`` names the rows instead. ``free`` replaces the table's free costs:
    ``{"tlbi_issue_ns": (5, 20000)}`` or ``(low, high, prior, prior_factor)``. ``loo`` adds
    leave-one-out. ``scale``/``seeds`` override the table's. Deterministic; runs the rows on
    ``jobs`` threads (default: all cores). Raises ValueError for a bad table or arguments.
    """
    table_dir = None
    if isinstance(table, os.PathLike) or (isinstance(table, str) and "\n" not in table and "=" not in table):
        path = Path(table).expanduser()
        if not path.is_file():
            raise FileNotFoundError(f"fit table not found: {str(table)!r}")
        text = path.read_text(encoding="utf-8")
        table_dir = str(path.parent)
    elif isinstance(table, str):
        text = table
    else:
        raise TypeError(f"table must be a path or TOML text, found {type(table).__name__}")
    free_list = []
    for name, spec in (free or {}).items():
        spec = list(spec)
        if len(spec) == 2:
            free_list.append((name, float(spec[0]), float(spec[1]), None, None))
        elif len(spec) == 4:
            free_list.append((name, float(spec[0]), float(spec[1]), float(spec[2]), float(spec[3])))
        else:
            raise ValueError(f"free[{name!r}]: {spec!r}; allowed: (low, high) or (low, high, prior, prior_factor)")
    report_json, costs_toml = _foliosim.fit_json(
        text,
        table_dir,
        split,
        list(fit_rows or []),
        free_list,
        bool(loo),
        None if scale is None else float(scale),
        _count("seeds", seeds),
        _count("jobs", jobs),
        _count("max_iters", max_iters),
    )
    result = FitResult(json.loads(report_json), costs_toml)
    if output is not None:
        Path(output).write_text(costs_toml, encoding="utf-8")
    return result


# Sweeps and compare tables (python/foliosim/_sweep.py).
from ._sweep import compare, load as load_sweep, sweep  # noqa: E402
