"""The report of a result set: papermill runs every notebook in ``notebooks/`` over one or more
result folders that hold the study's runs, and each notebook of ``notebooks/experiments/`` over
those that hold that experiment's (:func:`notebooks_for`), and writes ``report/`` —
``figures/figNN_<slug>.pdf|png`` (:mod:`biossd.outputs.figures`),
``tables/tableN_<slug>.csv|tex`` (:mod:`biossd.outputs.tables`) and ``notebooks/`` (each executed
notebook, as ``.ipynb`` and ``.html``).

Figure files carry no timestamps or software versions, so the same result set gives
byte-identical files (:func:`save_figure`); so do the tables (:func:`biossd.outputs.tables.write`).
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any, Mapping, Sequence

import matplotlib
import matplotlib.pyplot as plt

from biossd.core.errors import BiossdError
from biossd.core.paths import EXPERIMENT_NOTEBOOKS_DIR, NOTEBOOKS_DIR  # noqa: F401 (callers name them here)
from biossd.study import layout

FIGURE_FORMATS = ("png", "pdf")
FIGURE_DPI = 150
#: A fixed date for PDF metadata (any constant works; 2015-01-01, the paper's year).
SOURCE_DATE_EPOCH = "1420070400"
#: Matplotlib's SVG/PDF hash salt: fixed, so object ids inside the files do not vary per run.
HASH_SALT = "biossd"
TABLES_DIR = "tables"
NOTEBOOKS_OUT_DIR = "notebooks"
#: How many notebooks run at once (each in a process and kernel of its own; they read the same
#: results and write files of their own), at most one per CPU: the report of a result set took
#: 22 s one at a time on a 2-core host.
REPORT_WORKERS = 4


def save_figure(fig: plt.Figure, stem: Path) -> list[Path]:
    """Save ``fig`` as ``stem.png`` and ``stem.pdf`` with fixed metadata, each written whole or
    not at all; closes the figure; returns the paths."""
    os.environ.setdefault("SOURCE_DATE_EPOCH", SOURCE_DATE_EPOCH)
    matplotlib.rcParams["svg.hashsalt"] = HASH_SALT
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
    plt.close(fig)
    return paths


def report_dirs(report_dir: Path) -> dict[str, Path]:
    """Where a report's parts go (figures, tables, notebooks)."""
    report_dir = Path(report_dir)
    return {"figures": report_dir / Path(layout.FIGURES_DIR).name, "tables": report_dir / TABLES_DIR,
            "notebooks": report_dir / NOTEBOOKS_OUT_DIR}


def has_study_runs(dirs: Sequence[Path]) -> bool:
    """Whether any folder holds the study's runs: its run table, or a side with ``runs/``."""
    return any((Path(d) / layout.FEATURES_FILE).is_file() or any(Path(d).glob(f"*/{layout.RUNS_DIR}"))
               for d in dirs)


class ReportError(BiossdError, ValueError):
    pass


def damaged_runs(dirs: Sequence[Path]) -> list[str]:
    """The study's run records (``run.json``) that cannot be read, each with what is wrong with it:
    found before any notebook runs, so that the message is not one inside a notebook's traceback."""
    from biossd.features import extract as features
    from biossd.measure import manifest

    problems = []
    for run_dir in features.find_run_dirs(dirs):
        try:
            manifest.read_manifest(run_dir)
        except manifest.ManifestError as err:
            problems.append(str(err))
    return problems


def notebooks_for(dirs: Sequence[Path], experiments_only: bool = False) -> list[Path]:
    """The notebooks a report of ``dirs`` runs: the study's when they hold its runs, and each
    experiment's whose runs (or table) they hold."""
    from biossd import experiments

    chosen = [] if experiments_only or not has_study_runs(dirs) else sorted(NOTEBOOKS_DIR.glob("*.ipynb"))
    for name in experiments.NAMES:
        if experiments.point_dirs(dirs, name) or any(experiments.table_path(Path(d), name).is_file() for d in dirs):
            chosen += sorted(EXPERIMENT_NOTEBOOKS_DIR.glob(f"*_{name}.ipynb"))
    return chosen


def render(results_dirs: Sequence[Path] | Path, report_dir: Path | None = None,
           notebooks: Sequence[Path] | None = None, parameters: Mapping[str, Any] | None = None,
           html: bool = True, experiments_only: bool = False) -> list[Path]:
    """Execute the notebooks with papermill over ``results_dirs`` (default report folder: the
    first one's ``report/``), side by side (:data:`REPORT_WORKERS`); returns the executed copies.
    ``parameters`` override the notebooks' other parameters (fast, slow, speedup_threshold, ...)."""
    dirs = [results_dirs] if isinstance(results_dirs, (str, Path)) else list(results_dirs)
    dirs = [Path(d).resolve() for d in dirs]
    damaged = damaged_runs(dirs)
    if damaged:
        raise ReportError(f"{len(damaged)} run record(s) cannot be read, so no report was made: "
                          + "; ".join(damaged[:5]) + ("; …" if len(damaged) > 5 else "")
                          + ". Restore them from the run's source, or move those run folders out of the result set")
    report_dir = Path(report_dir).resolve() if report_dir else dirs[0] / layout.REPORT_DIR
    executed_dir = report_dirs(report_dir)["notebooks"]
    executed_dir.mkdir(parents=True, exist_ok=True)
    notebooks = list(notebooks) if notebooks else notebooks_for(dirs, experiments_only)
    if not notebooks:
        raise FileNotFoundError(f"nothing to report in {', '.join(map(str, dirs))}: neither the study's runs "
                                f"({layout.FEATURES_FILE} or <side>/{layout.RUNS_DIR}/) nor an experiment's")
    os.environ.setdefault("SOURCE_DATE_EPOCH", SOURCE_DATE_EPOCH)
    jobs = [(str(nb), str(executed_dir / Path(nb).name),
             {**({} if Path(nb).parent == EXPERIMENT_NOTEBOOKS_DIR else (parameters or {})),
              "results_dirs": [str(d) for d in dirs], "report_dir": str(report_dir)}, html) for nb in notebooks]
    workers = min(len(jobs), REPORT_WORKERS, os.cpu_count() or 1)
    if workers <= 1:
        return [_execute(*job) for job in jobs]
    import concurrent.futures
    import multiprocessing

    with concurrent.futures.ProcessPoolExecutor(workers, mp_context=multiprocessing.get_context("spawn")) as pool:
        futures = [pool.submit(_execute, *job) for job in jobs]
        try:
            return [future.result() for future in futures]  # the first failure, in the notebooks' order
        except BaseException:
            for future in futures:
                future.cancel()
            raise


def _execute(notebook: str, target: str, parameters: dict[str, Any], html: bool) -> Path:
    """One notebook executed by papermill into ``target`` (written whole: a temporary name, then
    renamed), and its HTML page when ``html``."""
    import papermill  # imported here: slow, and only the report needs it

    out = Path(target)
    tmp = out.with_name(f".{out.stem}.tmp{out.suffix}")
    try:
        papermill.execute_notebook(notebook, str(tmp), cwd=str(Path(notebook).parent), progress_bar=False,
                                   parameters=parameters)
        tmp.replace(out)
    except BaseException:
        tmp.unlink(missing_ok=True)  # a notebook that failed, or a full disk, leaves no half-written copy
        raise
    if html:
        _to_html(out)
    return out


def _to_html(notebook: Path) -> Path:
    """The executed notebook as a standalone HTML page beside it."""
    import nbconvert
    import nbformat

    body, _ = nbconvert.HTMLExporter().from_notebook_node(nbformat.read(notebook, as_version=4))
    path = notebook.with_suffix(".html")
    tmp = path.with_name(f".{path.name}.tmp")
    tmp.write_text(body)
    tmp.replace(path)
    return path
