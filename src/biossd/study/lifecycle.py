"""A study's begin and finish in its result folder, as Nextflow's lifecycle calls them (``biossd study
begin`` and ``biossd study finish``, from ``nextflow/subworkflows/local/study_lifecycle.nf``): the
plan record and the sizing record it took, the session's row in ``pipeline_info/sessions.tsv``, the
provenance record (begun at the begin, whole at the finish), and the count of the runs' outcomes.
Each file is written whole or not at all; this module is their one writer.

A session's row is written when it begins (its launcher's pid and start ticks, with the boot: the
owner each of its runs records), so the report made during the session finds it; it is completed
(``complete``, ``success``) when the session finishes, however it ends."""

from __future__ import annotations

import csv
import json
from pathlib import Path
from typing import Any, Mapping

from biossd.core.errors import BiossdError
from biossd.core.files import atomic_write_text
from biossd.core.owners import ProcessRef, boot_id
from biossd.study import layout, outdir

PIPELINE_INFO = "pipeline_info"
PLAN_FILE = outdir.PLAN_RECORD.name
SIZING_FILE = "sizing.json"
PROVENANCE_FILE = "provenance.json"
SESSIONS_FILE = "sessions.tsv"
#: ``sessions.tsv``'s columns, one row per Nextflow session that wrote into the folder.
SESSION_COLUMNS = ("session_id", "run_name", "boot_id", "pid", "start_ticks", "start", "complete", "success",
                   "resumed")
#: The session keys Nextflow gives at the begin (``workflow``'s).
SESSION_KEYS = ("id", "run_name", "start", "resumed")


class LifecycleError(BiossdError, ValueError):
    """A begin or finish that cannot be done; the message names the file or the field."""


def info_dir(outdir_path: Path) -> Path:
    return Path(outdir_path) / PIPELINE_INFO


def begin(outdir_path: Path, record: Mapping[str, Any], session: Mapping[str, Any], launcher_pid: int, *,
          replace: bool = False, keep: tuple[Path, ...] = (), sizing: Path | None = None,
          provenance: Mapping[str, Any] | None = None) -> dict[str, Any]:
    """The study (or experiments) ``record`` becomes the folder's plan: with ``replace``, another
    plan's results are first moved aside (:func:`biossd.study.outdir.set_aside`, nothing deleted);
    the sizing record the plan took is kept beside it; the session's row is added; and the
    provenance record is begun (``provenance``: what Nextflow knows at the start — command line,
    profile, params — with the session's fields; ``complete`` and ``success`` empty until
    :func:`finish`), so the report made during the session reads this session's. Returns the
    folder's ``pipeline_info`` and where other results went (``None``: nowhere)."""
    missing = [k for k in SESSION_KEYS if k not in session]
    if missing:
        raise LifecycleError(f"--session: missing {', '.join(missing)} (Nextflow's workflow.sessionId, runName, "
                             "start, resume)")
    info = info_dir(outdir_path)
    for name in (PLAN_FILE, SIZING_FILE, PROVENANCE_FILE, SESSIONS_FILE):
        if (info / name).is_symlink() or ((info / name).exists() and not (info / name).is_file()):
            raise LifecycleError(f"{info / name} is not a file (a folder or a link): the study keeps its records there; "
                                 "move it away and run again")
    aside = outdir.set_aside(outdir_path, dict(record), keep=keep, held_by=launcher_pid) if replace else None
    info.mkdir(parents=True, exist_ok=True)
    atomic_write_text(info / PLAN_FILE, json.dumps(record, indent=4) + "\n")
    if sizing is not None and Path(sizing).resolve() != (info / SIZING_FILE).resolve():
        atomic_write_text(info / SIZING_FILE, Path(sizing).read_text())
    launcher = ProcessRef.of(launcher_pid)
    row = {"session_id": session["id"], "run_name": session["run_name"], "boot_id": boot_id(),
           "pid": str(launcher.pid), "start_ticks": "" if launcher.start_ticks is None else str(launcher.start_ticks),
           "start": session["start"], "complete": "", "success": "", "resumed": _flag(session["resumed"])}
    _write_sessions(info / SESSIONS_FILE, [*read_sessions(info / SESSIONS_FILE), row])
    begun = {**dict(provenance or {}), "session_id": session["id"], "run_name": session["run_name"],
             "start": session["start"], "resumed": session["resumed"], "complete": None, "success": None}
    atomic_write_text(info / PROVENANCE_FILE, json.dumps(begun, indent=4) + "\n")
    return {"info": str(info), "set_aside": str(aside) if aside else None}


def finish(outdir_path: Path, provenance: Mapping[str, Any], launcher_pid: int) -> list[str]:
    """The session ends: its provenance record written whole (the begun one replaced), its row completed (added whole if it never
    began: a plan that failed), and the count of its runs' outcomes. Returns what to say."""
    for key in ("session_id", "run_name", "start", "complete", "success", "resumed", "stub_run"):
        if key not in provenance:
            raise LifecycleError(f"--provenance: missing {key}")
    info = info_dir(outdir_path)
    info.mkdir(parents=True, exist_ok=True)
    atomic_write_text(info / PROVENANCE_FILE, json.dumps(provenance, indent=4) + "\n")
    launcher = ProcessRef.of(launcher_pid)
    me = (str(launcher.pid), "" if launcher.start_ticks is None else str(launcher.start_ticks))
    rows = read_sessions(info / SESSIONS_FILE)
    done = {"complete": str(provenance["complete"]), "success": _flag(provenance["success"])}
    mine = [r for r in rows if (r["pid"], r["start_ticks"]) == me and r["session_id"] == str(provenance["session_id"])]
    if mine:
        mine[-1].update(done)
    else:
        rows.append({"session_id": str(provenance["session_id"]), "run_name": str(provenance["run_name"]),
                     "boot_id": boot_id(), "pid": me[0], "start_ticks": me[1], "start": str(provenance["start"]),
                     "resumed": _flag(provenance["resumed"]), **done})
    _write_sessions(info / SESSIONS_FILE, rows)
    said = [f"provenance: {info / PROVENANCE_FILE}"]
    # Only a study that completed wrote its features table (an interrupted one leaves the earlier
    # session's, which is not this one's count).
    table = Path(outdir_path) / layout.FEATURES_FILE
    if provenance["success"] in (True, "true") and provenance["stub_run"] not in (True, "true") and table.is_file():
        said.append(outcome_counts(table))
    return said


def outcome_counts(table: Path) -> str:
    """``N runs; outcomes: ok N, oom N, ...`` of a features table (its ``outcome`` column)."""
    with open(table, newline="") as handle:
        reader = csv.DictReader(handle)
        if reader.fieldnames is None or "outcome" not in reader.fieldnames:
            raise LifecycleError(f"{table}: no outcome column; not a features table")
        counts: dict[str, int] = {}
        for row in reader:
            counts[row["outcome"]] = counts.get(row["outcome"], 0) + 1
    total = sum(counts.values())
    return f"{total} runs; outcomes: " + ", ".join(f"{k} {v}" for k, v in sorted(counts.items()))


def read_sessions(path: Path) -> list[dict[str, str]]:
    """The rows of a ``sessions.tsv`` (none when there is no file)."""
    if not Path(path).is_file():
        return []
    with open(path, newline="") as handle:
        reader = csv.DictReader(handle, delimiter="\t")
        if tuple(reader.fieldnames or ()) != SESSION_COLUMNS:
            raise LifecycleError(f"{path}: columns {reader.fieldnames}, expected {list(SESSION_COLUMNS)}; "
                                 "it is not biossd's sessions record")
        return [dict(row) for row in reader]


def _write_sessions(path: Path, rows: list[dict[str, str]]) -> None:
    lines = ["\t".join(SESSION_COLUMNS)] + ["\t".join(str(r.get(c, "")) for c in SESSION_COLUMNS) for r in rows]
    atomic_write_text(path, "\n".join(lines) + "\n")


def _flag(value: Any) -> str:
    """A boolean as Groovy wrote it into the table (``true``/``false``)."""
    return "true" if value in (True, "true", "True") else "false"
