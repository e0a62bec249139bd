"""papermill runs the whole notebook set over a synthetic result set whose truth is known
every table and figure of the paper is written, with the content the fixture implies,
and byte-identical when run again over the same raw data."""

from __future__ import annotations

import json
from pathlib import Path

import pandas as pd
import pytest

from biossd.outputs import artefacts
from biossd.study import catalogue

#: Nothing here measures: these tests run beside others (tests/alone.py).
pytestmark = [pytest.mark.integration, pytest.mark.beside]

NOTEBOOKS = tuple(sorted({x.notebook for x in artefacts.ARTEFACTS}))
#: A figure file smaller than this is a blank page, not a figure.
MIN_FIGURE_BYTES = 10_000


@pytest.fixture(scope="module")
def rendered(synthetic_study, tmp_path_factory):
    truth = synthetic_study
    first, second = Path(truth["roots"][0]) / "report", tmp_path_factory.mktemp("report-2")
    # The second time in this process, straight from the registry (no papermill): the notebooks
    # add nothing to the files, and the same raw data gives the same bytes either way.
    a, dirs = artefacts.open_analysis([str(r) for r in truth["roots"]], str(second), "ssd", "hdd", 2.0, 5, None)
    for artefact in artefacts.ARTEFACTS:
        artefacts.make(artefact.stem, a, dirs, **{p: "ampliconnoise" for p in artefact.params})
    return truth, first, second


def test_every_figure_table_and_notebook_is_written(rendered):
    _, report, _ = rendered
    magic = {".png": b"\x89PNG", ".pdf": b"%PDF"}
    for artefact in artefacts.ARTEFACTS:
        for rel in artefact.files:
            data = (report / rel).read_bytes()
            if artefact.kind == artefacts.FIGURE:
                assert data.startswith(magic[rel.suffix]) and len(data) > MIN_FIGURE_BYTES, (rel, len(data))
            elif rel.suffix == ".csv":
                assert len(data) > 100, rel
            else:
                assert data.startswith(b"\\begin{tabular}"), rel
    made = {str(p.relative_to(report)) for sub in ("figures", "tables") for p in (report / sub).iterdir()}
    assert made == {str(f) for x in artefacts.ARTEFACTS for f in x.files}, "the registry names every file made"
    for nb in NOTEBOOKS:
        executed = json.loads((report / "notebooks" / f"{nb}.ipynb").read_text())
        assert not [c for c in executed["cells"] if c.get("outputs") and any(o.get("output_type") == "error"
                                                                                 for o in c["outputs"])]
        assert (report / "notebooks" / f"{nb}.html").stat().st_size > 10_000


def test_table1_has_every_tool_and_the_planted_speedups(rendered):
    truth, report, _ = rendered
    t1 = pd.read_csv(report / "tables" / "table1_tools.csv", keep_default_na=False).set_index("tool")
    assert set(t1.index) == {e.id for e in catalogue.load_all() if e.kind == "tool"}
    for tool, planted in truth["baseline_speedup"].items():
        if tool == truth["not_run"]:
            assert t1.at[tool, "status"].startswith("not run") and t1.at[tool, "speedup"] == ""
            continue
        assert float(t1.at[tool, "speedup"]) == pytest.approx(planted, rel=0.1), tool
        assert t1.at[tool, "group"] == truth["groups"][tool] and t1.at[tool, "status"] == "ok"


def test_dendrogram_cut_gives_the_planted_patterns(rendered):
    truth, report, _ = rendered
    means = pd.read_csv(report / "tables" / "fig05c_pattern_means.csv")
    found = {frozenset(t.split(", ")) for t in means["tools"]}
    planted: dict[str, set[str]] = {}
    for tool, pattern in truth["patterns"].items():
        if tool != truth["not_run"]:
            planted.setdefault(pattern, set()).add(tool)
    assert found == {frozenset(v) for v in planted.values()}
    assert dict(zip(means["pattern"], means["cluster"])) == {"P1": "C1", "P2": "C1", "P3": "C1", "P4": "C2", "P5": "C2"}


def test_the_same_raw_data_gives_byte_identical_files(rendered):
    _, first, second = rendered
    for rel in (f for x in artefacts.ARTEFACTS for f in x.files):
        a, b = (r / rel for r in (first, second))
        assert a.read_bytes() == b.read_bytes(), f"{rel} differs between two runs"
