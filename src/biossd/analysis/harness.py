"""Harness time: what a study spends around its tools' own runs.

A profiled task (Nextflow's PROFILE, PROFILE_REPEAT, PROFILE_FIRM and PROFILE_FLOOR) is the tool's run — its wall time in the
run's ``run.json`` (``wall_s``) — inside everything that makes it measurable: making the scratch,
copying the prepared input onto the device under study, setting up and tearing down the memory
cap, swap area and block trace, dropping caches, the flush after exit, writing the record and the
quality check. The task's ``realtime`` in Nextflow's trace minus the tool's wall time is that
harness; the study keeps it a small share of the tools' time (preparation and version queries run
once per input and tool, not per run).
"""

from __future__ import annotations

import json
import re
from pathlib import Path

import pandas as pd

from biossd.measure import manifest

#: Nextflow's trace of each session (``trace-<start>-<pid>.txt``; ``trace.txt`` from an older biossd).
TRACE_DIR = Path("pipeline_info")
TRACE_GLOBS = ("trace-*.txt", "trace.txt")
#: The processes whose tasks are profiled runs.
PROFILED_PROCESSES = ("PROFILE", "PROFILE_REPEAT", "PROFILE_FIRM", "PROFILE_FLOOR")
#: Nextflow's trace durations: "1h 2m 3s", "4.5s", "120ms".
_DURATION_PART = re.compile(r"([\d.]+)\s*(ms|s|m|h|d)")
_UNIT_S = {"ms": 1e-3, "s": 1.0, "m": 60.0, "h": 3600.0, "d": 86400.0}


class HarnessError(ValueError):
    pass


def trace_duration_s(text: object) -> float:
    """A duration of Nextflow's trace (``1m 2s``, ``9.4s``, ``500ms``) in seconds; NaN for ``-``."""
    parts = _DURATION_PART.findall(str(text))
    return sum(float(v) * _UNIT_S[u] for v, u in parts) if parts else float("nan")


def profiled_tasks(results_dir: Path) -> pd.DataFrame:
    """Every profiled task of the last session's trace with its task time (``realtime_s``), the
    tool's own wall time (``tool_s``, from the run in the task's work directory) and their
    difference (``harness_s``). A task whose work directory is gone has no tool time."""
    path = last_trace(results_dir)
    trace = pd.read_csv(path, sep="\t", dtype=str)
    if "workdir" not in trace.columns:
        raise HarnessError(f"{path}: the trace has no workdir column (written by an older biossd); run the study again")
    process = trace["name"].str.extract(r":?([A-Z_]+) \(", expand=False)
    tasks = trace.loc[process.isin(PROFILED_PROCESSES), ["name", "status", "realtime", "workdir"]].copy()
    tasks["realtime_s"] = tasks["realtime"].map(trace_duration_s)
    records = [_run_record(Path(w) / "run" / manifest.MANIFEST_NAME) for w in tasks["workdir"]]
    tasks["tool_s"] = [float(r.get("wall_s") or "nan") for r in records]
    tasks["harness_s"] = tasks["realtime_s"] - tasks["tool_s"]
    phases = pd.DataFrame([r.get("harness_s") or {} for r in records], index=tasks.index)
    tasks = tasks.join(phases.add_prefix(PHASE_PREFIX))
    return tasks.reset_index(drop=True)


def last_trace(results_dir: Path) -> Path:
    """The trace of the study's last session that ran a task (a session refused at its start
    leaves a trace of its header only)."""
    folder = Path(results_dir) / TRACE_DIR
    traces = sorted({p for pattern in TRACE_GLOBS for p in folder.glob(pattern) if p.is_file()},
                    key=lambda p: p.stat().st_mtime, reverse=True)
    for path in traces:
        with open(path) as f:
            if len(f.readlines(1 << 16)) > 1:
                return path
    raise HarnessError(f"{folder}: no Nextflow trace with a task (run the study with --outdir {results_dir} first)")


#: A profiled task's columns of its harness phases (the run's ``harness_s``, written by
#: :func:`biossd.measure.profile.run` and ``biossd catalogue run``).
PHASE_PREFIX = "phase_s."
#: What the profiler cannot time itself: Nextflow's task wrapper and staging, the quality check,
#: publishing the run and the process's exit.
OUTSIDE = "outside the profiler"


def _run_record(run_json: Path) -> dict:
    try:
        return json.loads(run_json.read_text())
    except (OSError, ValueError):
        return {}


def phases(tasks: pd.DataFrame) -> pd.Series:
    """The harness's minutes by phase over the tasks with a run (largest first), the rest of
    each task's harness as :data:`OUTSIDE`."""
    known = tasks.dropna(subset=["tool_s"])
    columns = [c for c in known.columns if c.startswith(PHASE_PREFIX)]
    by_phase = known[columns].sum().rename(lambda c: c[len(PHASE_PREFIX):])
    by_phase[OUTSIDE] = (known["harness_s"] - known[columns].fillna(0.0).sum(axis=1)).sum()
    return (by_phase / 60.0).sort_values(ascending=False)


def summary(tasks: pd.DataFrame) -> pd.DataFrame:
    """Per task status (COMPLETED this session, CACHED from an earlier one): tasks, task minutes,
    the tools' minutes, harness minutes and the harness as a share of the tools' time."""
    known = tasks.dropna(subset=["tool_s"])
    table = known.groupby("status").agg(tasks=("name", "size"), task_min=("realtime_s", "sum"),
                                        tool_min=("tool_s", "sum"), harness_min=("harness_s", "sum"))
    table[["task_min", "tool_min", "harness_min"]] /= 60.0
    table["harness_over_tool"] = table["harness_min"] / table["tool_min"]
    return table


def summary_text(results_dir: Path) -> str:
    """One line per task status: the profiled tasks' time, the tools' own and the harness."""
    tasks = profiled_tasks(results_dir)
    if tasks.empty:
        return "no profiled tasks in the trace"
    lines = [f"profiled tasks {status.lower()}: {int(r.tasks)}; task {r.task_min:.1f} min = tools {r.tool_min:.1f} min "
             f"+ harness {r.harness_min:.1f} min ({100 * r.harness_over_tool:.0f}% of the tools' time)"
             for status, r in summary(tasks).iterrows()]
    completed = tasks[tasks["status"].eq("COMPLETED")]
    if completed.filter(like=PHASE_PREFIX).notna().any().any():
        lines.append("harness of the tasks run this session, by phase: " + ", ".join(
            f"{name} {minutes:.1f} min" for name, minutes in phases(completed).items()))
    missing = int(tasks["tool_s"].isna().sum())
    if missing:
        lines.append(f"{missing} profiled task(s) without a run in their work directory (not counted)")
    return "\n".join(lines)
