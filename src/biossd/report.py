"""Figures and notebooks: papermill runs every notebook in ``notebooks/`` over a result set and
writes ``RESULTS/report/`` (executed notebooks, ``figures/figNN_<slug>.pdf|png``).

Plotting lives here so notebooks narrate and call it; figure files carry no timestamps or
software versions, so the same features table gives byte-identical files.
"""

from __future__ import annotations

import os
import textwrap
from pathlib import Path
from typing import Sequence

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import pandas as pd  # noqa: E402

from biossd.catalogue import REPO_ROOT  # noqa: E402
from biossd.features import STORAGE_FEATURES, parse_missing  # noqa: E402

NOTEBOOKS_DIR = REPO_ROOT / "notebooks"
FIGURE_FORMATS = ("png", "pdf")
FIGURE_DPI = 150
#: A fixed date for PDF metadata (any constant works; 2015-01-01, the paper's year).
SOURCE_DATE_EPOCH = "1420070400"
_NOTE_WIDTH_CHARS = 34

#: Fig. 4 of seed 000: which features share a panel, with the panel's axis label and units.
FIG04_PANELS: tuple[tuple[str, tuple[str, ...], str], ...] = (
    ("(a) Butil", ("Butil",), "fraction of bandwidth"),
    ("(b) Riops, Wiops", ("Riops", "Wiops"), "requests/s"),
    ("(c) Pfault", ("Pfault",), "major faults/s"),
    ("(d) CAR", ("CAR",), "fraction"),
    ("(e) Rsize, Wsize", ("Rsize", "Wsize"), "KiB/request"),
    ("(f) WBlen", ("WBlen",), "requests"),
)


def save_figure(fig: plt.Figure, stem: Path) -> list[Path]:
    """Save ``fig`` as ``stem.png`` and ``stem.pdf`` with fixed metadata; returns the paths."""
    os.environ.setdefault("SOURCE_DATE_EPOCH", SOURCE_DATE_EPOCH)
    stem = Path(stem)
    stem.parent.mkdir(parents=True, exist_ok=True)
    metadata = {
        "png": {"Software": None},
        "pdf": {"Creator": None, "Producer": None, "CreationDate": None, "ModDate": None},
    }
    paths = []
    for fmt in FIGURE_FORMATS:
        path = stem.with_suffix(f".{fmt}")
        tmp = path.with_name(f".{path.name}.tmp")
        fig.savefig(tmp, format=fmt, dpi=FIGURE_DPI, metadata=metadata[fmt], bbox_inches="tight")
        tmp.replace(path)
        paths.append(path)
    return paths


def run_means(table: pd.DataFrame, columns: Sequence[str]) -> pd.DataFrame:
    """Mean of ``columns`` over repeats, per tool and storage class (the paper averaged three
    repeats, §5.1). Only runs with outcome ``ok`` count; NaN stays NaN."""
    ok = table[table["outcome"] == "ok"]
    return ok.groupby(["tool", "storage"], sort=True)[list(columns)].mean()


def plot_storage_features(table: pd.DataFrame) -> plt.Figure:
    """Fig. 4: the eight storage features per tool and storage class, one panel per group of
    features as in the paper; a feature with no measurement says so in its panel."""
    means = run_means(table, STORAGE_FEATURES)
    fig, axes = plt.subplots(2, 3, figsize=(12, 6.5))
    for ax, (title, feats, unit) in zip(axes.flat, FIG04_PANELS):
        ax.set_title(title, loc="left", fontsize=10)
        data = means[list(feats)].dropna(how="all")
        if data.empty:
            reason = _missing_reason(table, feats[0])
            text = "not measured\n" + textwrap.fill(reason, _NOTE_WIDTH_CHARS)
            ax.text(0.5, 0.5, text, ha="center", va="center",
                    fontsize=8, color="0.35", transform=ax.transAxes)
            ax.set_xticks([])
            ax.set_yticks([])
            continue
        data.index = [f"{tool}\n[{storage}]" for tool, storage in data.index]
        data.plot.bar(ax=ax, rot=0, legend=len(feats) > 1, width=0.7)
        ax.set_ylabel(unit)
    fig.suptitle("Storage feature measurements (seed 000, Fig. 4)")
    fig.tight_layout()
    return fig


def _missing_reason(table: pd.DataFrame, feature: str) -> str:
    for text in table.get("missing_reason", pd.Series(dtype=str)).dropna():
        why = parse_missing(text).get(feature)
        if why:
            return why
    return "no runs"


def render(results_dir: Path, report_dir: Path | None = None,
           notebooks: Sequence[Path] | None = None) -> list[Path]:
    """Execute the notebooks with papermill over ``results_dir``; returns the executed copies."""
    import papermill  # imported here: slow, and only this function needs it

    results_dir = Path(results_dir).resolve()
    report_dir = Path(report_dir).resolve() if report_dir else results_dir / "report"
    executed_dir = report_dir / "notebooks"
    executed_dir.mkdir(parents=True, exist_ok=True)
    notebooks = list(notebooks) if notebooks else sorted(NOTEBOOKS_DIR.glob("*.ipynb"))
    if not notebooks:
        raise FileNotFoundError(f"no notebooks found in {NOTEBOOKS_DIR}")
    done = []
    for nb in notebooks:
        target = executed_dir / Path(nb).name
        papermill.execute_notebook(
            str(nb), str(target), cwd=str(Path(nb).parent), progress_bar=False,
            parameters={"results_dir": str(results_dir), "report_dir": str(report_dir)},
        )
        done.append(target)
    return done

