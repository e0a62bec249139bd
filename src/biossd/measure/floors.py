"""A study's floors, measured in its own session, and the caps they give (docs/study.md, "The
floor is measured where the study runs"; Lee, Min and Yoon 2015, §5.1 gave every program one RAM).

Each tool's floor runs (the plan's ``floor`` probes, :meth:`biossd.study.plan.matrix.Plan.floors`) are
read here: the warm-up (rep 0) is left out, the median of the others' resident peaks is F and
their standard deviation σ_F (:func:`biossd.study.sizing.rule.floor_of`). Every task whose cap is its
tool's floor plus a data memory M_t (``data_memory_bytes`` in its meta) gets its cap, F + M_t —
never below what a run of the tool may have — and labels that record F, σ_F, the floor runs and
M_t in its run. ``biossd study caps`` calls :func:`with_caps`.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, Callable, Iterable

from biossd.core.errors import BiossdError
from biossd.measure import manifest
from biossd.study import layout
from biossd.study.plan import matrix
from biossd.study.sizing import rule

#: The labels a capped run records of its floor (bytes; the floor runs counted).
FLOOR_LABELS = ("floor_bytes", "floor_sd_bytes", "floor_runs", "data_memory_bytes")


class FloorError(BiossdError, RuntimeError):
    """A tool's floor could not be measured; the message names its floor runs."""


def floors_of(run_dirs: Iterable[Path]) -> dict[str, dict[str, Any]]:
    """Each tool's floor from its floor runs' directories: ``floor_bytes`` (F), ``floor_sd_bytes``
    (σ_F), ``floor_runs`` (how many counted), the warm-up's and the counted runs' outcomes. A
    tool none of whose counted runs ended ok with a resident peak is an error naming them."""
    peaks: dict[str, list[float]] = {}
    seen: dict[str, list[str]] = {}
    for run in run_dirs:
        body = manifest.read_manifest(Path(run))
        labels = body.get("labels") or {}
        if labels.get("probe") != layout.FLOOR_PROBE:
            continue
        tool = str(labels.get("tool"))
        seen.setdefault(tool, []).append(f"rep {labels.get('rep')} {body.get('outcome')}")
        peak = ((body.get("memory_cap") or {}).get("resident") or {}).get("peak_bytes")
        if int(labels.get("rep", 1)) >= rule.FLOOR_WARMUPS and body.get("outcome") == "ok" and peak:
            peaks.setdefault(tool, []).append(float(peak))
    out = {}
    for tool in sorted(seen):
        if not peaks.get(tool):
            raise FloorError(f"{tool}: no floor run ended ok with a resident peak ({', '.join(sorted(seen[tool]))}); "
                             "its caps cannot be set — see its runs under probes/floor/ (run as root, with a memory "
                             "cgroup)")
        floor, sd = rule.floor_of(peaks[tool])
        out[tool] = {"floor_bytes": floor, "floor_sd_bytes": sd, "floor_runs": len(peaks[tool]),
                     "runs": sorted(seen[tool])}
    return out


def with_caps(tasks: list[dict[str, Any]], floors: dict[str, dict[str, Any]],
              min_cap_bytes: Callable[[str], int]) -> list[dict[str, Any]]:
    """``tasks`` (the plan's metas: profiled tasks, or chained pipelines with their ``steps``) with
    every cap that is a floor plus a data memory filled in: ``mem_bytes`` = F + M_t (at least
    ``min_cap_bytes`` of the tool), the scheduler's ``job_mem_bytes``, and the :data:`FLOOR_LABELS`
    in its labels; a task with its cap already set is returned as it is."""
    out = []
    for task in tasks:
        if task.get("steps") is not None:
            steps = with_caps(task["steps"], floors, min_cap_bytes)
            capped = [s["mem_bytes"] for s in steps if s.get("mem_bytes") is not None]
            job = max(capped) + matrix.PROFILER_JOB_OVERHEAD_BYTES if capped else task.get("job_mem_bytes")
            out.append({**task, "steps": steps, "job_mem_bytes": job})
            continue
        if task.get("mem_bytes") is not None or task.get("data_memory_bytes") is None:
            out.append(task)
            continue
        tool = task["tool"]
        if tool not in floors:
            raise FloorError(f"{tool}: no floor runs were given, so its cap (its floor plus "
                             f"{task['data_memory_bytes']} bytes of data memory) cannot be set")
        f = floors[tool]
        cap = max(rule.cap_bytes(f["floor_bytes"], task["data_memory_bytes"]), min_cap_bytes(tool))
        labels = {**(task.get("labels") or {}), "floor_bytes": f["floor_bytes"], "floor_sd_bytes": f["floor_sd_bytes"],
                  "floor_runs": f["floor_runs"], "data_memory_bytes": task["data_memory_bytes"]}
        floor_labels = {k: labels[k] for k in FLOOR_LABELS}
        out.append({**task, "mem_bytes": cap, "job_mem_bytes": cap + matrix.PROFILER_JOB_OVERHEAD_BYTES,
                    "labels": labels, "floor_labels": floor_labels})
    return out
