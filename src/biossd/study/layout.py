"""The result layout every run lands in (the study pipeline's output contract):

``OUTDIR/<host>-<storage>/runs/<tool>/<mem>/<scale>/<rep>/run.json``,
``OUTDIR/<host>-<storage>/probes/<probe>/<tool>/run.json`` (a short run under a slow instrument,
e.g. cachegrind for Fig. 10: not a timed run, never in ``features.csv``),
``OUTDIR/<host>-<storage>/chains/<pipeline>/<rep>/<NN-tool>/run.json`` (a step of a chained
pipeline, Fig. 3: a timed run, but of the chain, never in ``features.csv``),
``OUTDIR/<host>-<storage>/device.json`` (``biossd device characterize`` of the class's device),
``OUTDIR/features.csv`` and ``OUTDIR/report/{figures,tables,notebooks}/``.

The study plan (:mod:`biossd.study.plan.matrix`) hands every Nextflow task its path from here
(``meta.publish``), and ``nextflow/conf/modules.config`` publishes there: the layout is written once.
"""

from __future__ import annotations

import re
from pathlib import Path, PurePosixPath
from typing import Mapping

RUN_PATH_LABELS = ("host", "storage", "tool", "mem", "scale", "rep")
FEATURES_FILE = "features.csv"
DEVICE_RECORD = "device.json"
#: How far a run directory is below its ``<host>-<storage>`` directory (runs/tool/mem/scale/rep).
RUN_DEPTH = 5
RUNS_DIR = "runs"
PROBES_DIR = "probes"
CHAINS_DIR = "chains"
#: The related experiments (the four related studies, :mod:`biossd.experiments`): each side's tasks, and the
#: result folder's tables ``experiments/<id>.csv``.
EXPERIMENTS_DIR = "experiments"
EXPERIMENT_PATH_KEYS = ("host", "storage", "experiment", "point", "rep")
REPORT_DIR = "report"
FIGURES_DIR = PurePosixPath(REPORT_DIR) / "figures"


#: A label that names a directory: one path component, no way up or out.
_COMPONENT_RE = re.compile(r"^(?!\.\.?$)[A-Za-z0-9._-]+$")


def run_relpath(labels: Mapping[str, object]) -> PurePosixPath:
    """Where a run with these labels lives, relative to the output directory; each label must be
    a single path component (``--host ../../x`` would place results elsewhere)."""
    if labels.get("probe"):
        return probe_relpath(labels)
    if labels.get("chain"):
        return chain_relpath(labels)
    missing = [k for k in RUN_PATH_LABELS if labels.get(k) in (None, "")]
    if missing:
        raise ValueError(f"run labels lack {missing}, needed for the result layout")
    bad = [f"{k}={labels[k]!r}" for k in RUN_PATH_LABELS if not _COMPONENT_RE.match(str(labels[k]))]
    if bad:
        raise ValueError(f"run labels {', '.join(bad)} are not single path components (letters, digits, "
                         "'.', '_', '-'); rename them")
    return PurePosixPath(
        f"{labels['host']}-{labels['storage']}", RUNS_DIR, str(labels["tool"]), str(labels["mem"]),
        str(labels["scale"]), str(labels["rep"]),
    )


def experiment_relpath(task: Mapping[str, object]) -> PurePosixPath:
    """Where one task of a related experiment lands: ``<host>-<storage>/experiments/<id>/<point>/<rep>``."""
    host, storage, experiment, point, rep = _checked(task, EXPERIMENT_PATH_KEYS, "experiment task")
    return PurePosixPath(f"{host}-{storage}", EXPERIMENTS_DIR, experiment, point, rep)


def _checked(labels: Mapping[str, object], keys: tuple[str, ...], what: str) -> list[str]:
    """The labels ``keys`` as path components, each present and a single component."""
    missing = [k for k in keys if labels.get(k) in (None, "")]
    if missing:
        raise ValueError(f"{what} labels lack {missing}, needed for the result layout")
    bad = [f"{k}={labels[k]!r}" for k in keys if not _COMPONENT_RE.match(str(labels[k]))]
    if bad:
        raise ValueError(f"{what} labels {', '.join(bad)} are not single path components; rename them")
    return [str(labels[k]) for k in keys]


#: The probe of a tool's floor runs (its warm-up and the runs whose median is F), one directory a repeat.
FLOOR_PROBE = "floor"


def probe_relpath(labels: Mapping[str, object]) -> PurePosixPath:
    """Where a probe run lives: ``<host>-<storage>/probes/<probe>/<tool>`` (a floor run's:
    ``…/probes/floor/<tool>/<rep>``, rep 0 its warm-up)."""
    host, storage, probe, tool = _checked(labels, ("host", "storage", "probe", "tool"), "probe")
    if probe == FLOOR_PROBE:
        rep, = _checked(labels, ("rep",), "floor run")
        return PurePosixPath(f"{host}-{storage}", PROBES_DIR, probe, tool, rep)
    return PurePosixPath(f"{host}-{storage}", PROBES_DIR, probe, tool)


def chain_dir_relpath(labels: Mapping[str, object]) -> PurePosixPath:
    """Where one chained pipeline run's steps live: ``<host>-<storage>/chains/<chain>/<rep>``."""
    host, storage, chain, rep = _checked(labels, ("host", "storage", "chain", "rep"), "chain")
    return PurePosixPath(f"{host}-{storage}", CHAINS_DIR, chain, rep)


def chain_relpath(labels: Mapping[str, object]) -> PurePosixPath:
    """Where a chained pipeline's step lives: ``<host>-<storage>/chains/<chain>/<rep>/<step>``."""
    step, = _checked(labels, ("step",), "chain step")
    return chain_dir_relpath(labels) / step


def device_record_relpath(host: str, storage: str) -> PurePosixPath:
    """Where a result folder keeps a storage class's device record (published by CHARACTERIZE)."""
    return PurePosixPath(f"{host}-{storage}") / DEVICE_RECORD


def is_component(text: str) -> bool:
    """Whether ``text`` can name a directory of the layout (one path component, no way up)."""
    return bool(_COMPONENT_RE.match(text))


def assemble(dest: Path, runs: Mapping[str, Path], device_records: Mapping[str, Path] | None = None,
             extra_files: Mapping[str, Path] | None = None) -> list[PurePosixPath]:
    """Lay run directories out under ``dest`` as a result set, for a step that sees them only as
    staged inputs (the pipeline's REPORT): ``runs`` maps each run's layout path (the study plan's
    ``publish``, which the workflow carries in its ``meta``) to its directory, made a symbolic
    link there; ``device_records`` (``<host>-<storage>`` → file) and ``extra_files`` (relative
    path → file) are copied in. A path that is not a layout path, or given twice, is refused.
    Returns the run paths made."""
    dest = Path(dest)
    made = []
    for rel_text, run in runs.items():
        rel = PurePosixPath(rel_text)
        if rel.is_absolute() or not all(is_component(part) for part in rel.parts):
            raise ValueError(f"{rel_text!r} is not a result-layout path (relative, of names only)")
        target = dest / rel
        target.parent.mkdir(parents=True, exist_ok=True)
        if target.is_symlink() or target.exists():
            raise FileExistsError(f"{target}: two runs have the layout path {rel}")
        target.symlink_to(Path(run).resolve(), target_is_directory=True)
        made.append(rel)
    for side, record in (device_records or {}).items():
        (dest / side).mkdir(parents=True, exist_ok=True)
        (dest / side / DEVICE_RECORD).write_bytes(Path(record).read_bytes())
    for rel_path, source in (extra_files or {}).items():
        (dest / rel_path).parent.mkdir(parents=True, exist_ok=True)
        (dest / rel_path).write_bytes(Path(source).read_bytes())
    return made
