"""The collectors beside a profiled command (Lee, Min and Yoon 2015, §5.1): perf stat, the block
trace and the 1 Hz sampler, started before the command's first instruction and stopped after its
dirty data reached the device; each records whether it ran and, if not, why — one that fails does
not stop the others or the run."""

from __future__ import annotations

import contextlib
import json
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Sequence

from biossd.host.cgroups import MemoryCap
from biossd.measure import counters, manifest
from biossd.measure.request import ProfileRequest
from biossd.measure.sampler import Sampler
from biossd.measure.trace import blocktrace

#: perf stat: ``auto`` (hardware events where the host has a PMU, else software ones), ``pmu``
#: (only where the host has a PMU: without one perf counts only what process accounting already
#: gives — CPU time, page faults, context switches — and a run that needs no more, a pipeline's
#: short task, saves perf's start), ``off``.
PERF_MODES = ("auto", "pmu", "off")

#: Why perf did not run under ``pmu`` on a host without one.
NO_PMU_WHY = ("this host has no PMU (no hardware counters): perf stat would count only software events, which the "
              "process accounting records (CPU time, page faults, context switches)")


def not_run(why: str) -> dict[str, Any]:
    return {"ran": False, "why": why, "files": []}


def traced_devices(names: Sequence[str]) -> dict[tuple[int, int], str]:
    out = {}
    for name in names:
        major, minor = (int(x) for x in Path(f"/sys/class/block/{name}/dev").read_text().split(":"))
        out[(major, minor)] = name
    return out


@dataclass
class Running:
    """The collectors running beside the command (``None``: not running, why in the record)."""

    perf: counters.PerfStat | None
    tracer: Any
    trace_notes: Sequence[str]
    sampler: Sampler | None


def start(request: ProfileRequest, out_dir: Path, traced: list[str], t0: float, pid: int,
                      cap: MemoryCap, stack: contextlib.ExitStack, collectors: dict[str, Any]) -> Running:
    """perf on the gate process ``pid``, the block trace of the ``traced`` devices and the
    sampler, each aborted by ``stack`` if the run ends early; one that cannot start is recorded
    as not run. perf starts first and is waited for last: its start overlaps the others'."""
    perf = _start_perf(request, out_dir, pid, collectors)
    if perf is not None:
        stack.callback(perf.abort)
    tracer, trace_notes = _start_blocktrace(request, out_dir, traced, t0, collectors)
    if tracer is not None:
        stack.callback(tracer.abort)
    sampler: Sampler | None = Sampler(out_dir / "sampler.csv", traced, cap.usage_bytes, request.sample_interval_s)
    try:
        sampler.start(t0)
        stack.callback(sampler.stop)
    except OSError as exc:
        collectors["sampler"] = not_run(f"could not start: {exc}")
        sampler = None
    return Running(_perf_counting(perf, collectors), tracer, trace_notes, sampler)


def attribution(request: ProfileRequest, roots: list[int] = ()) -> str | None:
    """Why a run's block requests are not attributed to processes (``None``: they are). A tool in
    Docker's container is attributed when its container was seen running (``roots``: its first
    process, whose tree is the tool's) and the run is one whose device others may share (a
    pipeline's task); else its trace is its device's."""
    if request.group and not request.attribute_in_group:
        return "a concurrent group's members share the device by design"
    if request.container_id_file is not None and not (roots and request.attribute_in_group):
        return ("the tool runs in Docker's container, outside the profiler's process tree"
                + ("" if roots else " (its first process was not seen running)"))
    return None


def stop(running: Running, collectors: dict[str, Any], session: int,
                     attribute: str | None = None, roots: list[int] = (), left: dict[int, str] | None = None,
                     mapped: dict[int, str] | None = None) -> None:
    """Each running collector stopped (after the flush: the trace holds the tool's writeback)
    and its record kept; the block trace's record names the requests of processes other than
    the command's (:func:`biossd.measure.trace.blocktrace.foreign_issuers`, its ``session`` leader's
    tree), asked before the session is killed — unless ``attribute`` says why not."""
    if running.perf is not None:
        collectors["perf"] = _collect(running.perf.stop)
    if running.sampler is not None:
        running.sampler.stop()
        collectors["sampler"] = running.sampler.record()
    if running.tracer is not None:
        collectors["blocktrace"] = _collect(running.tracer.stop, notes=running.trace_notes)
        if collectors["blocktrace"].get("ran"):
            collectors["blocktrace"]["foreign"] = (
                blocktrace.foreign_issuers(running.tracer.writer, session, roots) if attribute is None else
                {"pids": {}, "requests": 0, "attributed_by": None, "why": f"not attributed: {attribute}"})
            collectors["blocktrace"]["throttle"] = blocktrace.throttled(
                running.tracer.writer, session if attribute is None else None, roots)
            collectors["blocktrace"]["page_cache"] = blocktrace.page_cache_reads(
                running.tracer.writer, session if attribute is None else None, roots, mapped)
            collectors["blocktrace"]["dirtied"] = blocktrace.dirtied(
                running.tracer.writer, session if attribute is None else None, left or {}, mapped or {}, roots)
            collectors["blocktrace"]["sync"] = blocktrace.sync_waits(
                running.tracer.writer, time.monotonic() - running.tracer.writer.t0_s,
                session if attribute is None else None, roots)


def record_after(request: ProfileRequest, out_dir: Path, accounting: dict[str, Any] | None, started: bool,
                  collectors: dict[str, Any]) -> None:
    """What is recorded once everything is torn down: the process accounting, and the cachegrind
    probe's record (or why there is none)."""
    if accounting is not None:
        manifest.atomic_write_text(out_dir / "rusage.json", json.dumps(accounting, indent=2) + "\n")
        collectors["rusage"] = {"ran": True, "why": None, "files": ["rusage.json"]}
    if request.cachegrind:
        collectors["cachegrind"] = (counters.cachegrind_record(out_dir) if started
                                    else not_run("the command did not start"))
    else:
        collectors["cachegrind"] = not_run("opt-in: pass --cachegrind (slow; small inputs)")


def _start_blocktrace(request: ProfileRequest, out_dir: Path, traced: list[str], t0: float,
                      collectors: dict[str, Any]):
    tracer, notes = blocktrace.start(request.blocktrace, out_dir, traced_devices(traced), t0, request.trace_pool)
    if tracer is None:
        collectors["blocktrace"] = not_run("; ".join(notes) or "no tracer available")
    return tracer, notes


def _start_perf(request: ProfileRequest, out_dir: Path, pid: int, collectors: dict[str, Any]):
    if request.perf == "off":
        collectors["perf"] = not_run("disabled (--perf off)")
        return None
    if request.perf == "pmu" and not counters.has_pmu():
        collectors["perf"] = not_run(NO_PMU_WHY)
        return None
    perf = counters.PerfStat(out_dir)
    try:
        perf.start(pid)
    except counters.CounterError as err:
        collectors["perf"] = not_run(str(err))
        return None
    return perf


def _perf_counting(perf: counters.PerfStat | None, collectors: dict[str, Any]) -> counters.PerfStat | None:
    """``perf`` once it counts; ``None`` (and why, in ``collectors``) when it did not start."""
    if perf is None:
        return None
    try:
        perf.wait_counting()
    except counters.CounterError as err:
        collectors["perf"] = not_run(str(err))
        return None
    return perf


def _collect(stop, notes: Sequence[str] = ()) -> dict[str, Any]:
    """A collector's record from its ``stop``; a failure is recorded, not raised."""
    try:
        record = stop()
    except Exception as err:
        return {"ran": False, "why": f"failed during the run: {err}", "files": []}
    if notes:
        record["passed_over"] = list(notes)
    return record
