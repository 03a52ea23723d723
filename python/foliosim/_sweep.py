"""Sweeps and compare tables from Python, as ``foliosim sweep`` / ``foliosim compare`` do.

    >>> import foliosim
    >>> df = foliosim.sweep("scenarios/seed000-usemem-small.toml",
    ...                     {"kernel.version": ["6.9", "6.10"],
    ...                      'sysfs.hugepages."64K"': ["always", "never"]}, seeds=5)
    >>> cmp = foliosim.compare(df, metrics=["usemem.throughput_bytes_per_s"],
    ...                        columns=["kernel.version"])
    >>> print(cmp.attrs["table"])

The runs, the results table (Parquet) and the compare statistics are the Rust library's
(foliosim::sweep), so a sweep from Python and one from the CLI give the same bytes.
"""

from __future__ import annotations

import json
import math
import os
import tempfile
import warnings
from pathlib import Path
from typing import Any, Mapping, Optional, Sequence, Union

import pandas as pd

from . import _foliosim

AxesLike = Union[Mapping[str, Any], Sequence[Mapping[str, Any]], str, "os.PathLike[str]", None]


def _axes_json(axes: AxesLike) -> tuple:
    """(axes_json, axes_toml) for the binding."""
    if axes is None:
        return None, None
    if isinstance(axes, (str, os.PathLike)):
        path = Path(axes)
        if not path.is_file():
            raise FileNotFoundError(f"axes file not found: {os.fspath(axes)!r}")
        return None, path.read_text(encoding="utf-8")
    if isinstance(axes, Mapping):
        specs = []
        for key, values in axes.items():
            if isinstance(values, Mapping):
                # A named axis: {label: {key: value, ...}, ...}
                specs.append(
                    {"name": key, "values": [{"label": str(label), "set": dict(s)} for label, s in values.items()]}
                )
            else:
                if isinstance(values, (str, bytes)) or not isinstance(values, Sequence):
                    raise TypeError(f"axis {key!r}: values must be a list, found {values!r}")
                specs.append({"key": key, "values": list(values)})
        return json.dumps(specs), None
    return json.dumps([dict(a) for a in axes]), None


def _frame(parquet: str, axes: Sequence[str], out: str) -> pd.DataFrame:
    df = pd.read_parquet(parquet)
    df.attrs["axes"] = list(axes)
    df.attrs["out"] = out
    df.attrs["parquet"] = parquet
    return df


def sweep(
    base,
    axes: AxesLike = None,
    seeds: Optional[int] = None,
    out: Union[str, "os.PathLike[str]", None] = None,
    backend: str = "local",
    jobs: Optional[int] = None,
    ray_address: Optional[str] = None,
    csv: bool = False,
    check_invariants: bool = False,
    force: bool = False,
) -> pd.DataFrame:
    """Run ``base`` (a scenario: TOML text, path or dict) over ``axes`` x seeds 1..=``seeds``.

    ``axes``: ``{"kernel.version": ["6.9", "6.10"], ...}`` (a scenario key in TOML dotted form
    and its values), a named axis ``{"size": {"4K": {'sysfs.hugepages."64K"': "never"}, ...}}``
    whose values set several keys, a list of ``[[axis]]`` dicts, or the path of an axes file.
    ``seeds``: runs per configuration (default: the axes file's ``seeds``, else 5).
    ``out``: the output directory (plan.json, runs/, sweep.parquet); a rerun with the same one
    skips finished runs, and one with more seeds or values extends it; an ``out`` holding a
    different sweep raises ValueError unless ``force`` (then a warning says what was replaced;
    finished runs stay). Default: a new temporary directory.
    ``backend``: ``"local"`` (``jobs`` threads, default every core) or ``"ray"`` (the cluster at
    ``ray_address``, else RAY_ADDRESS, else a local Ray; needs ``pip install ray``).

    Returns the results table (one row per run: the axes' values, ``seed``, ``run_id``, run
    metrics, counters), as ``pandas.read_parquet`` reads sweep.parquet; ``attrs`` hold
    ``axes``, ``out`` and ``parquet``. Bad axes raise ValueError before anything runs.
    """
    from . import _scenario_text

    if backend not in ("local", "ray"):
        raise ValueError(f"backend: found {backend!r}; allowed: 'local', 'ray'")
    out = os.fspath(out) if out is not None else tempfile.mkdtemp(prefix="foliosim-sweep-")
    axes_json, axes_toml = _axes_json(axes)
    plan_json, replaced = _foliosim.sweep_plan_json(
        _scenario_text(base), out, axes_json, axes_toml, seeds, bool(check_invariants), bool(force)
    )
    if replaced:
        warnings.warn(f"sweep: replacing the sweep under {out} (force): {'; '.join(replaced)}")
    plan = json.loads(plan_json)
    if backend == "local":
        ran = _foliosim.sweep_run_local(out, int(jobs or 0))
    else:
        if jobs is not None:
            raise ValueError("jobs: for backend='local'; Ray places runs on the cluster's CPUs")
        from . import ray_backend

        ran = ray_backend.run(out, address=ray_address)
    outcome = json.loads(_foliosim.sweep_merge_json(out, bool(csv), ran))
    return _frame(outcome["parquet"], plan["axes"], out)


def load(results: Union[str, "os.PathLike[str]"]) -> pd.DataFrame:
    """A finished sweep's table from its output directory or its sweep.parquet."""
    path = Path(results)
    parquet = path / "sweep.parquet" if path.is_dir() else path
    import pyarrow.parquet as pq

    meta = pq.read_schema(parquet).metadata or {}
    raw = meta.get(b"foliosim.axes")
    df = pd.read_parquet(parquet)
    axes = json.loads(raw) if raw else list(df.columns[: list(df.columns).index("seed")])
    df.attrs["axes"] = axes
    df.attrs["out"] = os.fspath(path if path.is_dir() else path.parent)
    df.attrs["parquet"] = os.fspath(parquet)
    return df


def _table_json(df: pd.DataFrame, axes: Sequence[str]) -> str:
    columns = []
    for name in df.columns:
        s = df[name]
        if pd.api.types.is_bool_dtype(s) or pd.api.types.is_integer_dtype(s):
            kind = "int"
            cells = [None if pd.isna(v) else int(v) for v in s]
        elif pd.api.types.is_float_dtype(s):
            kind = "float"
            cells = [None if (v is None or math.isnan(v)) else float(v) for v in s]
        else:
            kind = "str"
            cells = [None if (v is None or (isinstance(v, float) and math.isnan(v))) else str(v) for v in s]
        columns.append({"name": str(name), "kind": kind, "cells": cells})
    return json.dumps({"axes": list(axes), "columns": columns})


def compare(
    results,
    metrics: Union[str, Sequence[str], None] = None,
    columns: Union[str, Sequence[str], None] = None,
    baseline: Optional[str] = None,
    where: Optional[Mapping[str, Any]] = None,
) -> pd.DataFrame:
    """An mmtests compare table over sweep results (a DataFrame from :func:`sweep`, or an
    output directory / sweep.parquet path).

    ``metrics``: metric or counter columns (default: every ``*.throughput_bytes_per_s`` and
    ``simulated_ns``); ``columns``: the axes whose values make the columns (default: every
    axis; the others split the rows); ``baseline``: the column compared against (default: the
    first); ``where``: ``{axis: value}`` to keep only some runs.

    Returns one row per (metric, row group, configuration): ``samples``, ``min``, ``amean``,
    ``stddev``, ``coeffvar``, ``max``, ``pct_diff`` (% better than the baseline's Amean),
    ``t``, ``dof``, ``p_value``, ``significant`` (Welch's t-test, two-sided, p < 0.05) and the
    group's axis values. ``attrs["table"]`` is the table as ``foliosim compare`` prints it.
    """
    if isinstance(metrics, str):
        metrics = [metrics]
    if isinstance(columns, str):
        columns = [columns]
    opts = {
        "metrics": list(metrics or []),
        "columns": list(columns) if columns is not None else None,
        "baseline": baseline,
        "filters": [[k, str(v)] for k, v in (where or {}).items()],
    }
    if isinstance(results, pd.DataFrame):
        axes = results.attrs.get("axes")
        if axes is None:
            cols = list(results.columns)
            if "seed" not in cols:
                raise ValueError("compare: the table has no `seed` column (is it a sweep's results?)")
            axes = cols[: cols.index("seed")]
        c = json.loads(_foliosim.compare_json(json.dumps(opts), table_json=_table_json(results, axes)))
    else:
        path = Path(results)
        parquet = path / "sweep.parquet" if path.is_dir() else path
        c = json.loads(_foliosim.compare_json(json.dumps(opts), parquet=os.fspath(parquet)))
    rows = []
    for cell in c["cells"]:
        row = {"metric": cell["metric"]}
        for axis, value in cell["group"]:
            row[axis] = value
        row["config"] = cell["config"]
        row["baseline"] = cell["baseline"]
        for k in ("samples", "min", "amean", "stddev", "coeffvar", "max"):
            v = cell.get(k)
            row[k] = float("nan") if v is None else v
        for k in ("pct_diff", "t", "dof", "p_value"):
            v = cell.get(k)
            row[k] = float("nan") if v is None else v
        row["significant"] = cell["significant"]
        row["higher_is_better"] = cell["higher_is_better"]
        rows.append(row)
    df = pd.DataFrame(rows)
    df.attrs["table"] = c["rendered"]
    df.attrs["test"] = c["test"]
    df.attrs["baseline"] = c["baseline"]
    df.attrs["columns"] = c["columns"]
    return df
