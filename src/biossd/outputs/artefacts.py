"""The one registry of the paper's artefacts this package regenerates: every table and figure
with its file stem, the paper's number, its caption, the notebook that makes it and the function
that draws it. The notebooks make them with :func:`make`, the supplement takes their captions
from here, and the tests expect exactly these files: adding a figure is one entry here and one
function in :mod:`biossd.outputs.figures` (or :mod:`biossd.outputs.tables`).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path, PurePosixPath
from typing import Any, Callable, Mapping

import pandas as pd

from biossd.analysis import Analysis, open_results
from biossd.core import paths
from biossd.outputs import figures, report, tables
from biossd.study import layout

FIGURE = "figure"
TABLE = "table"
#: The numbers of this package's own artefacts (not in the paper) start with this.
SUPPLEMENT_PREFIX = "S"


@dataclass(frozen=True)
class Artefact:
    """One table or figure: ``stem`` names its files (``figures/<stem>.png|pdf`` or
    ``tables/<stem>.csv|tex`` under the report), ``number`` is the paper's (Lee, Min and Yoon 2015), and
    ``function(a, **params)`` returns the figure or the table (``None``: nothing to write)."""

    stem: str
    kind: str
    number: str
    caption: str
    notebook: str
    function: Callable[..., Any]
    #: Notebook parameters the function takes (by name).
    params: tuple[str, ...] = ()
    #: Whether the supplement prints it (Fig. 5(c)'s numbers are part of Fig. 5 there).
    in_supplement: bool = True
    #: Whether it can be absent (a table of a clustering that the data did not allow).
    optional: bool = field(default=False)
    #: A table's LaTeX view (what a page sets, in human units) of what ``function`` returns; the
    #: CSV keeps every column. ``None``: the same columns.
    latex: Callable[[pd.DataFrame], pd.DataFrame] | None = None

    @property
    def files(self) -> tuple[PurePosixPath, ...]:
        """Its files, relative to the report directory."""
        if self.kind == FIGURE:
            return tuple(PurePosixPath("figures", f"{self.stem}.{fmt}") for fmt in report.FIGURE_FORMATS)
        return tuple(PurePosixPath(report.TABLES_DIR, f"{self.stem}.{ext}") for ext in tables.TABLE_FORMATS)

    @property
    def label(self) -> str:
        """How the paper names it: ``Table 1``, ``Fig. 2``."""
        return f"{'Table' if self.kind == TABLE else 'Fig.'} {self.number}"

    @property
    def from_paper(self) -> bool:
        """Whether the paper has it (a number of the supplement's own, ``S1``, is not)."""
        return not self.number.startswith(SUPPLEMENT_PREFIX)

    @property
    def supplement_label(self) -> str:
        """How the supplement captions it: ``Fig. 2 of Lee, Min and Yoon (2015)`` for the paper's, ``Fig. S1 (biossd)``
        for this package's own."""
        return f"{self.label} of Lee, Min and Yoon (2015)" if self.from_paper else f"{self.label} (biossd)"


ARTEFACTS: tuple[Artefact, ...] = (
    Artefact("table1_tools", TABLE, "1", "The tools: the paper's group and speedup beside this result set's "
             "baseline speedup with its 95% interval, group and call (G+ at the threshold or more, G0 below 1.2x, "
             "marginal at an edge, counted as neither agreement nor disagreement), the repeats that ended ok and those "
             "redone because the host was busy, and why a tool has none",
             "01_speedup", tables.table1_tools, latex=tables.table1_latex),
    Artefact("tables6_regime", TABLE, "S6", "The regime each tool ran in and what its call rests on, in MiB: its floor "
             "F measured in the session and its spread, its data memory, cap, the headroom its capped runs left and "
             "the dead band, its uncapped data demand over its data memory, what it swapped out, the code its capped "
             "runs read from elsewhere than the device under study, page swaps per second, and the CPU busy outside "
             "its runs", "01_speedup", tables.table_regime, latex=tables.regime_latex),
    Artefact("fig01_aligners", FIGURE, "1", "Short-read aligners: runtime on both storage classes and quality "
             "against the synthetic truth", "01_speedup", figures.fig01_aligners),
    Artefact("fig02_speedup", FIGURE, "2", "Speedup of every tool, one panel per pair of a fast and a slow side",
             "01_speedup", figures.fig02_speedup),
    Artefact("fig03_pipelines", FIGURE, "3", "Pipelines: runtime on both storage classes broken down by step",
             "01_speedup", figures.fig03_pipelines),
    Artefact("table2_features", TABLE, "2", "The eight storage features and their definitions",
             "02_storage_features", lambda a: tables.table2_features()),
    Artefact("fig04_storage_features", FIGURE, "4", "Storage feature measurements per tool",
             "02_storage_features", figures.fig04_storage_features),
    Artefact("fig05c_pattern_means", TABLE, "5(c)", "Each pattern's members, mean speedup and mean normalized "
             "features", "03_patterns", tables.table_pattern_means, in_supplement=False, optional=True),
    Artefact("fig05_patterns", FIGURE, "5", "Clustering the tools on their normalized storage features: dendrogram, "
             "patterns, radar charts and their numbers", "03_patterns", figures.fig05_patterns),
    Artefact("fig06_traces", FIGURE, "6", "Representative read and write traces of each pattern",
             "03_patterns", figures.fig06_traces),
    Artefact("fig07_randomness", FIGURE, "7", "Impact of randomness on speedup: CAR against Rsize and Wsize",
             "03_patterns", figures.fig07_randomness),
    Artefact("fig08_input_size", FIGURE, "8", "Input size and SSD effectiveness, with the break-even scale",
             "04_scaling", figures.fig08_input_size, params=("focus_tool",)),
    Artefact("fig09_memory", FIGURE, "9", "Main memory size and SSD effectiveness", "04_scaling", figures.fig09_memory),
    Artefact("fig10_cpu_memory", FIGURE, "10", "CPU and memory features with speedup",
             "02_storage_features", figures.fig10_cpu_memory),
    Artefact("table3_ssd_devices", TABLE, "3", "The fast class's devices as measured (the sequential write effective, "
             "with its final sync; fio's own figure beside it), beside the paper's SSDs",
             "05_devices_inputs", lambda a: tables.table_devices(a, "SSD")),
    Artefact("table4_hdd_devices", TABLE, "4", "The slow class's devices as measured (the sequential write effective, "
             "with its final sync), beside the paper's HDDs",
             "05_devices_inputs", lambda a: tables.table_devices(a, "HDD")),
    Artefact("table5_inputs", TABLE, "5", "The inputs of each tool", "05_devices_inputs", tables.table5_inputs),
    Artefact("tables1_prediction", TABLE, "S1", "Prediction validated: each tool's baseline runs on one side predicted "
             "on the other side's device model, against the measured mean runtime", "06_prediction",
             tables.table_prediction),
    Artefact("figs1_prediction", FIGURE, "S1", "Predicted against measured runtime and speedup, per tool",
             "06_prediction", figures.figs1_prediction),
    Artefact("tables7_today_storage", TABLE, "S7", "The paper's tools on today's storage: per tool and cloud volume "
             "behind one instance, the runtime (measured where a class ran on it, else predicted), its interval, the "
             "speedup over the fast side, a run's cost on the volume with the price's source, and the storage to rent",
             "06_prediction", tables.table_today_storage, latex=tables.today_storage_latex),
    Artefact("figs7_today_storage", FIGURE, "S7", "The paper's tools on today's storage: speedup over the fast side "
             "on every cloud volume behind one instance, the storage to rent boxed", "06_prediction",
             figures.figs7_today_storage),
    Artefact("fig02b_predicted_ssds", FIGURE, "2(b)", "Speedup of each tool on the paper's five other SSDs over its "
             "Seagate Barracuda, predicted from this result set's block traces, beside the paper's measured groups",
             "06_prediction", figures.fig02b_predicted_ssds),
)

_BY_STEM = {artefact.stem: artefact for artefact in ARTEFACTS}


def get(stem: str) -> Artefact:
    """The artefact whose files are named ``stem``."""
    try:
        return _BY_STEM[stem]
    except KeyError:
        raise KeyError(f"no artefact {stem!r}; the registry has {', '.join(_BY_STEM)}") from None


def of_notebook(notebook: str) -> list[Artefact]:
    """The artefacts one notebook makes, in the registry's order."""
    return [artefact for artefact in ARTEFACTS if artefact.notebook == notebook]


def make(stem: str, a: Analysis, out: Mapping[str, Path], **params: Any) -> pd.DataFrame | None:
    """Draw or compute one artefact from the analysis ``a`` and write its files under ``out``
    (:func:`biossd.outputs.report.report_dirs`); a table is returned for display."""
    artefact = get(stem)
    unknown = set(params) - set(artefact.params)
    if unknown:
        raise TypeError(f"{stem} takes the parameters {artefact.params or 'none'}, not {sorted(unknown)}")
    made = artefact.function(a, **params)
    if artefact.kind == FIGURE:
        report.save_figure(made, Path(out["figures"]) / stem)
        return None
    if made is not None:
        tables.write(made, Path(out["tables"]) / stem, artefact.latex(made) if artefact.latex else None)
    return made


#: How notebooks show tables (wide enough for Table 1 beside the paper's columns).
DISPLAY_WIDTH_CHARS = 160
DISPLAY_MAX_COLUMNS = 30


def open_analysis(results_dirs: list[str], report_dir: str | None, fast: str, slow: str,
                  speedup_threshold: float, n_patterns: int, feature_side: str | None) -> tuple[Analysis, dict[str, Path]]:
    """The setup every notebook shares, from its ``parameters`` cell: the analysis of the result
    folders (:func:`biossd.analysis.open_results`) and where the report's files go (default: the
    first folder's ``report/``); prints what was read."""
    pd.set_option("display.width", DISPLAY_WIDTH_CHARS, "display.max_columns", DISPLAY_MAX_COLUMNS)
    a = open_results(results_dirs, fast=fast, slow=slow, threshold=speedup_threshold,
                     n_patterns=n_patterns, feature_side=feature_side)
    out = report.report_dirs(Path(report_dir) if report_dir else Path(results_dirs[0]) / layout.REPORT_DIR)
    print(a.describe())
    return a, out


# -- the related experiments (the four related studies, biossd.experiments) --------------------------------------------
def _experiment_figure(name: str) -> Callable[[pd.DataFrame], Any]:
    from biossd.outputs.figures import experiments

    return getattr(experiments, name)


def _experiment_summary(name: str) -> Callable[[pd.DataFrame], pd.DataFrame | None]:
    from biossd import experiments

    def summary(table: pd.DataFrame) -> pd.DataFrame | None:
        return None if table.empty else experiments.module(name).summary(table)

    return summary


#: Each experiment's notebook: ``notebooks/experiments/<NN>_<id>.ipynb``, found by its name.
EXPERIMENT_NOTEBOOKS = {path.stem.split("_", 1)[1]: path.stem
                        for path in sorted(paths.EXPERIMENT_NOTEBOOKS_DIR.glob("[0-9]*_*.ipynb"))}


def _experiment_artefacts() -> tuple[Artefact, ...]:
    """Each experiment's figure and table, as its definition's ``artefacts`` names and captions
    them (number ``S2`` → ``figs2_<id>``, drawn by the function of that name in
    :mod:`biossd.outputs.figures.experiments`, and ``tables2_<id>``, its summary), drawn from its
    table, not from the study's analysis: its notebook makes them only when the results hold its
    runs. The study each experiment re-runs is named once, in its definition's ``source``, which
    the supplement's section and the notebook print above these."""
    from biossd import experiments

    made = []
    for name in experiments.NAMES:
        spec = experiments.load_spec(name)
        number = str(spec["artefacts"]["number"])
        notebook = EXPERIMENT_NOTEBOOKS.get(name, f"(no notebook {name}.ipynb)")
        figure = f"fig{number.lower()}_{name}"
        made += [Artefact(figure, FIGURE, number, spec["artefacts"]["figure"], notebook, _experiment_figure(figure)),
                 Artefact(f"table{number.lower()}_{name}", TABLE, number, spec["artefacts"]["table"], notebook,
                          _experiment_summary(name))]
    return tuple(made)


EXPERIMENT_ARTEFACTS: tuple[Artefact, ...] = _experiment_artefacts()
_BY_EXPERIMENT_STEM = {artefact.stem: artefact for artefact in EXPERIMENT_ARTEFACTS}


def of_experiment(name: str) -> list[Artefact]:
    """An experiment's artefacts, in the registry's order."""
    return [x for x in EXPERIMENT_ARTEFACTS if x.notebook == EXPERIMENT_NOTEBOOKS[name]]


def make_experiment(stem: str, table: pd.DataFrame, out: Mapping[str, Path]) -> pd.DataFrame | None:
    """Draw or compute one experiment artefact from its table and write its files under ``out``;
    nothing is written for an experiment without runs (its notebook says so)."""
    try:
        artefact = _BY_EXPERIMENT_STEM[stem]
    except KeyError:
        raise KeyError(f"no experiment artefact {stem!r}; the registry has {', '.join(_BY_EXPERIMENT_STEM)}") from None
    if table.empty:
        return None
    made = artefact.function(table)
    if artefact.kind == FIGURE:
        report.save_figure(made, Path(out["figures"]) / stem)
        return None
    tables.write(made, Path(out["tables"]) / stem)
    return made


def open_experiment(name: str, results_dirs: list[str], report_dir: str | None) -> tuple[pd.DataFrame, dict, dict[str, Path]]:
    """The setup every experiment notebook shares: the experiment's table over the result folders
    (:func:`biossd.experiments.load_table`), its definition, and where the report's files go;
    prints what was read and the headline."""
    from biossd import experiments

    pd.set_option("display.width", DISPLAY_WIDTH_CHARS, "display.max_columns", DISPLAY_MAX_COLUMNS)
    table = experiments.load_table([Path(d) for d in results_dirs], name)
    spec = experiments.load_spec(name)
    out = report.report_dirs(Path(report_dir) if report_dir else Path(results_dirs[0]) / layout.REPORT_DIR)
    print(f"{name} (after {spec['source']}): {len(table)} runs in {', '.join(map(str, results_dirs))}")
    return table, spec, out
