"""The shipped notebook runs: every code cell of examples/first-question.ipynb, in order, in
one namespace (as a kernel would), with a non-interactive matplotlib backend; then what its
last cell says is checked against what it computed."""

import json
from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402

NOTEBOOK = Path(__file__).resolve().parents[2] / "examples" / "first-question.ipynb"


def run_notebook(path: Path) -> dict:
    nb = json.loads(path.read_text())
    namespace: dict = {"__name__": "__main__"}
    for i, cell in enumerate(nb["cells"]):
        if cell["cell_type"] != "code":
            continue
        source = "".join(cell["source"])
        exec(compile(source, f"{path.name} cell {i}", "exec"), namespace)
    return namespace


def test_first_question_runs_and_says_what_it_computed():
    ns = run_notebook(NOTEBOOK)
    df, summary = ns["df"], ns["summary"]
    assert len(df) == 12
    assert "Amean" in ns["table"].attrs["table"]
    assert len(ns["fig"].axes) == 2
    on = summary.xs("always", level="sysfs.hugepages.64K")
    whole = on["hugepages-64kB/stats/swpout"] * 16
    # "6.9 splits them all"; "6.10 writes most of what it swaps as whole 64K folios".
    assert whole["6.9"] == 0
    assert whole["6.10"] > 0.5 * on.loc["6.10", "pswpout"]
    # "its sys time and usemem's throughput move with it".
    assert on.loc["6.10", "cpu_sys_ns"] < on.loc["6.9", "cpu_sys_ns"]
    assert (
        on.loc["6.10", "usemem.throughput_bytes_per_s"]
        > on.loc["6.9", "usemem.throughput_bytes_per_s"]
    )
    plt.close("all")
