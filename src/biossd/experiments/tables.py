"""An experiment's table (``<outdir>/experiments/<id>.csv``): the run table's columns
(:func:`biossd.features.extract.run_features`) for every run, with the point's values and what the
experiment observed beside the profiler (phases, file counts, ...); and the helpers its rows,
summary and headline share."""

from __future__ import annotations

import contextlib
import json
from pathlib import Path
from typing import Any, Iterable, Mapping, Sequence

import pandas as pd

from biossd.experiments.spec import module
from biossd.experiments.task import POINT_RECORD
from biossd.features import definitions, extract
from biossd.measure import manifest
from biossd.study import layout

#: The columns every experiment table has before its own.
TASK_COLUMNS = ("experiment", "point", "size", "input_size", "cap", "host", "storage", "rep", "run",
                "substitute_of", "failure")

#: What makes two runs of a point comparable: the experiment's size, its input and the run's memory
#: cap. A summary never averages rows that differ in these (:func:`scale_keys`).
SCALE_COLUMNS = ("size", "input_size", "cap")


def point_dirs(roots: Iterable[Path], name: str) -> list[Path]:
    """Complete task directories of experiment ``name`` under each result folder (each side's
    ``experiments/<name>/<point>/<rep>/`` holding ``point.json``)."""
    found = []
    for root in roots:
        for side in sorted(Path(root).iterdir()) if Path(root).is_dir() else []:
            base = side / layout.EXPERIMENTS_DIR / name
            if base.is_dir():
                found.extend(p.parent for p in base.glob(f"*/*/{POINT_RECORD}"))
    return sorted(found)


#: How much of a failed run's last stderr line its row keeps.
FAILURE_CHARS = 160


def last_words(stderr_log: Path) -> str | None:
    """The last non-empty line a failed tool wrote to stderr: what it said of why it failed."""
    with contextlib.suppress(OSError):
        lines = [line.strip() for line in stderr_log.read_text(errors="replace").splitlines() if line.strip()]
        return lines[-1][:FAILURE_CHARS] if lines else None
    return None


def not_ok(table: pd.DataFrame, keys: Sequence[str]) -> str:
    """A sentence on the runs that were not ok, grouped by ``keys`` and outcome, with the
    classes they ran on and what a failed tool said (empty when every run was ok)."""
    bad = table[table["outcome"] != "ok"]
    if bad.empty:
        return ""
    parts = []
    for (outcome, *values), group in bad.groupby(["outcome", *keys], sort=False):
        said = group["failure"].dropna().unique() if "failure" in group else []
        parts.append(f"{' '.join(map(str, values))} on {', '.join(dict.fromkeys(group['storage']))} "
                     f"({len(group)} run(s) {outcome}"
                     + (f": '{said[0]}'" if len(said) else "") + ")")
    return "Not ok: " + "; ".join(parts) + "."


def run_rows(point_dir: Path, record: Mapping[str, Any]) -> list[dict[str, Any]]:
    """The run-table row of each run of a task, with the task's columns and the point's values
    (an experiment's :func:`rows` adds what it observed)."""
    task = record["task"]
    subs = record.get("substitutes", {})
    rows = []
    for name in record["runs"]:
        row = extract.run_features(point_dir / name)
        row["run_dir"] = str(Path(task["publish"]) / name)
        body = manifest.read_manifest(point_dir / name)
        tool = body["labels"].get("tool")
        row.update({"experiment": task["experiment"], "point": task["point"], "size": task["size"],
                    "input_size": task["input"]["size"], "cap": body["labels"].get("mem"),
                    "host": task["host"], "storage": task["storage"], "rep": task["rep"], "run": name,
                    "substitute_of": subs.get(tool),
                    "failure": last_words(point_dir / name / "stderr.log") if body["outcome"] == "failed" else None})
        row.update(task["values"])
        rows.append(row)
    return rows


def table(name: str, roots: Iterable[Path]) -> pd.DataFrame:
    """The experiment's table over the result folders: one row per run (empty, with the shared
    columns, when there is none)."""
    rows: list[dict[str, Any]] = []
    exp = module(name)
    for point_dir in point_dirs(roots, name):
        record = json.loads((point_dir / POINT_RECORD).read_text())
        rows.extend(exp.rows(point_dir, record))
    columns = [*TASK_COLUMNS, *exp.COLUMNS]
    frame = pd.DataFrame(rows)
    if frame.empty:
        return pd.DataFrame(columns=columns)
    rest = [c for c in frame.columns if c not in columns]
    return frame[[c for c in columns if c in frame.columns] + rest].sort_values(
        ["point", "storage", "rep", "run"], kind="stable").reset_index(drop=True)


def table_path(results_dir: Path, name: str) -> Path:
    return Path(results_dir) / layout.EXPERIMENTS_DIR / f"{name}.csv"


def load_table(results_dirs: Sequence[Path | str], name: str) -> pd.DataFrame:
    """The experiment's table of these result folders: the written ``experiments/<name>.csv`` of
    each where it exists, else made from their task directories."""
    frames = []
    for d in results_dirs:
        path = table_path(Path(d), name)
        frames.append(pd.read_csv(path) if path.is_file() else table(name, [Path(d)]))
    frames = [f for f in frames if not f.empty]
    return pd.concat(frames, ignore_index=True) if frames else table(name, [])


def scale_keys(table: pd.DataFrame) -> list[str]:
    """The :data:`SCALE_COLUMNS` a table has (tables written by older versions lack them), to
    lead every summary's grouping."""
    return [c for c in SCALE_COLUMNS if c in table.columns]


def headline(name: str, table: pd.DataFrame) -> str:
    """The experiment's headline (its module's ``headline``), one per size and input when the
    table holds runs of more than one: points of different sizes are never put together."""
    head = module(name).headline
    keys = [c for c in ("size", "input_size") if c in table.columns]
    scales = table[keys].drop_duplicates() if keys and not table.empty else pd.DataFrame()
    if len(scales) <= 1:
        return head(table)
    parts = []
    for values, part in table.groupby(keys, sort=False):
        values = values if isinstance(values, tuple) else (values,)
        label = ", ".join(f"{k} {v}" for k, v in zip(keys, values))
        parts.append(f"At {label}: {head(part)}")
    return " ".join(parts)


def since_start_s(body: Mapping[str, Any], monotonic_s: float | None) -> float | None:
    """An observer's ``time.monotonic()`` time as seconds since the run's command started (the
    manifest's ``monotonic_origin_s`` and ``command_started_s``); ``None`` when either is unknown."""
    origin, started = body.get("monotonic_origin_s"), body.get("command_started_s")
    if monotonic_s is None or origin is None or started is None:
        return None
    return monotonic_s - origin - started


#: The storage classes' order in tables and text: the fast class first.
CLASS_ORDER = ("ssd", "hdd")


def by_class(frame: pd.DataFrame, *then: str) -> pd.DataFrame:
    """``frame`` sorted by its scale (:data:`SCALE_COLUMNS`, in order of first appearance), storage
    class (:data:`CLASS_ORDER`, then others by name), then by ``then``."""
    rank = frame["storage"].map(lambda c: CLASS_ORDER.index(c) if c in CLASS_ORDER else len(CLASS_ORDER))
    scale = scale_keys(frame)
    scale_rank = (frame.groupby(scale, sort=False).ngroup() if scale and not frame.empty
                  else pd.Series(0, index=frame.index))
    return (frame.assign(_scale=scale_rank, _class=rank).sort_values(["_scale", "_class", "storage", *then], kind="stable")
            .drop(columns=["_scale", "_class"]).reset_index(drop=True))


def window_features(run_dir: Path, start_s: float, end_s: float | None = None) -> dict[str, float]:
    """The block-trace features (Riops, Wiops, Rsize, Wsize, CAR, WBlen, Butil) of one run over
    the window ``[start_s, end_s]``, in seconds since the command started (``end_s`` ``None``: the
    run's end and its flush), rates per second of the window. NaN for all when the run has no
    block trace."""
    from biossd.features import blockstats
    from biossd.measure.trace import tracereader

    body = manifest.read_manifest(run_dir)
    if not body["collectors"].get("blocktrace", {}).get("ran") or body.get("command_started_s") is None:
        return {f: float("nan") for f in extract.BLOCK_TRACE_FEATURES}
    started = body["command_started_s"]
    start_s, end_s = started + start_s, (None if end_s is None else started + end_s)
    t_end = started + manifest.window_s(body)
    end_s = t_end if end_s is None else end_s
    requests = tracereader.run_requests(run_dir, body)
    tally = blockstats.tally_requests(requests, start_s, max(start_s, end_s))
    device = extract.device_record(run_dir, body)
    return definitions.block_features(tally, 1.0, device.bandwidth_bps, runtime_s=max(end_s - start_s, 0.0) or None)
