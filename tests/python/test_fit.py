"""foliosim.fit: a small fit of seed 000's table returns DataFrames (pytest -k fit)."""

from pathlib import Path

import pandas as pd
import pytest

import foliosim

REPO = Path(__file__).resolve().parents[2]
TABLE = REPO / "tables" / "seed000.toml"


def test_fit_returns_dataframes(tmp_path):
    out = tmp_path / "fitted.toml"
    r = foliosim.fit(
        TABLE,
        split="baseline-to-proposal",
        free={"tlbi_issue_ns": (5, 20000)},
        scale=0.02,
        seeds=1,
        max_iters=4,
        output=out,
    )
    assert isinstance(r.costs, pd.DataFrame) and isinstance(r.rows, pd.DataFrame)
    assert list(r.costs["cost"]) == ["tlbi_issue_ns"]
    assert {"value", "factor", "factor_alone", "low", "high", "at_bound", "source"} <= set(r.costs.columns)
    assert list(r.rows["id"]) == ["6.9-4K", "6.9-64K", "6.9-2M", "6.10-4K", "6.10-64K", "6.10-2M"]
    assert r.fit_rows == ["6.9-4K", "6.9-64K", "6.9-2M"]
    predicted = r.rows[~r.rows["fitted"]]
    assert len(predicted) == 3
    assert predicted["error"].notna().all() and predicted["inside_spread"].notna().all()
    assert r.loo.empty
    text = out.read_text()
    assert "[costs]" in text and "[source]" in text and "fitted on rows 6.9-4K" in text


def test_fit_bad_input_is_value_error():
    with pytest.raises(ValueError, match="unknown cost `no_such_ns`"):
        foliosim.fit(TABLE, free={"no_such_ns": (1, 2)})
    with pytest.raises(ValueError, match="low 9 > high 1"):
        foliosim.fit(TABLE, free={"fault_4k_ns": (9, 1)})
    with pytest.raises(ValueError, match="at most rows - 1"):
        foliosim.fit(TABLE, fit_rows=["6.9-4K", "6.9-64K"], free={"fault_4k_ns": (9, 100), "tlbi_issue_ns": (1, 100)})
    with pytest.raises(FileNotFoundError):
        foliosim.fit("no/such/table.toml")
