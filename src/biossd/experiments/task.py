"""One planned task, run: in the class's scratch, written to a partial directory renamed into
place when complete (``point.json`` last), nothing left behind on failure or a signal."""

from __future__ import annotations

import contextlib
import datetime as dt
import json
import shutil
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Mapping, Sequence

from biossd.core.files import atomic_write_text, remove_tree
from biossd.core.owners import ProcessRef
from biossd.core.signals import signals_ignored, signals_raise
from biossd.core.units import parse_duration_s, parse_size
from biossd.experiments.planning import check_task
from biossd.experiments.spec import ExperimentError, load_spec, module, substitutes, tool_version
from biossd.measure import profile, rundir, toolrun
from biossd.study.inputs import data

#: A complete task directory's record of its task, runs and observations, written last.
POINT_RECORD = "point.json"

#: The input a task synthesizes into its scratch (on the class's device), unprofiled.
INPUT_DIR = "input"

#: A signal ended the task: the profiler's own exception, so a signal inside a profiled run and
#: one between runs end the task alike (the CLI reports both with the signal's exit status).
Interrupted = profile.Interrupted


@dataclass
class Task:
    """One task being run: its plan entry, the experiment's definition and settings at its size,
    where it works (``scratch``, on the class's device) and writes (``out``, a partial directory),
    and what it runs for (``owner``)."""

    task: dict[str, Any]
    spec: dict[str, Any]
    scratch: Path
    out: Path
    device_record: Path | None = None
    storage: dict[str, Any] = field(default_factory=dict)
    owner: ProcessRef | None = None
    runs: list[str] = field(default_factory=list)

    @property
    def settings(self) -> dict[str, Any]:
        return self.spec["sizes"][self.task["size"]]

    @property
    def values(self) -> dict[str, Any]:
        return self.task["values"]

    @property
    def cap(self) -> str:
        """The point's memory cap: its own (a tool that needs more to start at all) or the size's."""
        return str(self.values.get("cap") or self.settings["cap"])

    @property
    def cap_bytes(self) -> int:
        return parse_size(self.cap)

    @property
    def timeout_s(self) -> float:
        return parse_duration_s(str(self.settings["timeout"]))

    @property
    def input_dir(self) -> Path:
        return self.scratch / INPUT_DIR

    def labels(self, tool: str, **extra: Any) -> dict[str, str]:
        """A run's labels: the study's (host, storage, tool, mem, scale, rep) and the experiment's."""
        base = {"host": self.task["host"], "storage": self.task["storage"], "tool": tool,
                "mem": self.cap, "scale": "1", "rep": self.task["rep"],
                "experiment": self.task["experiment"], "point": self.task["point"]}
        base.update({k: str(v) for k, v in self.values.items()})
        base.update({k: str(v) for k, v in extra.items()})
        return base

    def request(self, argv: Sequence[str], name: str, tool: str, **options: Any) -> profile.ProfileRequest:
        """The profile request of one run of this task, written to ``out/<name>``."""
        labels = self.labels(tool, **options.pop("labels", {}))
        return profile.ProfileRequest(
            argv=list(argv), out_dir=self.out / name, mem_bytes=options.pop("mem_bytes", self.cap_bytes),
            labels=labels, timeout_s=options.pop("timeout_s", self.timeout_s),
            tool_version=tool_version(self.spec, tool), device_record=self.device_record, owner=self.owner,
            **options)

    def profile(self, argv: Sequence[str], name: str, tool: str, cwd: Path, **options: Any) -> dict[str, Any]:
        """Run one profiled command in ``cwd`` (whose device is the one traced): its manifest
        (:func:`biossd.measure.toolrun.measured`, as every study run is profiled)."""
        record = toolrun.measured(self.request(argv, name, tool, cwd=Path(cwd), **options))
        self.runs.append(name)
        return record


class Teardown(contextlib.ExitStack):
    """An :class:`contextlib.ExitStack` whose callbacks run with signals held: what a task brings
    up (servers, mounts, devices) is registered here right after it exists."""

    def __exit__(self, *exc: Any) -> bool:
        with signals_ignored():
            return super().__exit__(*exc)


def run_task(task: Mapping[str, Any], scratch: Path, out: Path, device_record: Path | None = None,
             storage: Mapping[str, Any] | None = None, owner: ProcessRef | None = None,
             input_dir: Path | None = None) -> dict[str, Any]:
    """Run one planned task; returns its ``point.json`` record. ``out`` must not exist: the task
    is written to a marked partial directory beside it (:func:`biossd.measure.rundir.task_partial`,
    which refuses an existing ``out``) and renamed when complete; on failure or a
    signal the partial directory and the task's scratch contents are removed. ``scratch``: an
    empty directory (but for its mark) of the task's own, on the class's device. ``input_dir``: the
    task's synthetic input made beforehand (``biossd data synth``, the workflow's SYNTH_INPUT),
    copied into scratch; without it, the input is synthesized there."""
    task = check_task(task)
    out = Path(out).absolute()  # the runs change into scratch: every path is made absolute first
    device_record = Path(device_record).absolute() if device_record else None
    scratch = Path(scratch).absolute()
    if not scratch.is_dir() or any(p.name != rundir.SCRATCH_MARKER for p in scratch.iterdir()):
        raise ExperimentError(f"--scratch {scratch} is not an empty directory; a task works in one of its own "
                              "(biossd.measure.rundir.scratch makes, marks and removes it)")
    spec = load_spec(task["experiment"])
    try:
        with rundir.task_partial(out) as partial, signals_raise(Interrupted):  # a profiled run raises the same way
            ctx = Task(task, spec, scratch, partial, device_record, dict(storage or {}), owner)
            started = _utc_now()
            _stage_input(task, ctx.input_dir, Path(input_dir) if input_dir else None)
            observed = module(task["experiment"]).run(ctx)
            record = {"task": task, "runs": ctx.runs, "observed": observed, "started_at": started,
                      "ended_at": _utc_now(), "substitutes": substitutes(spec),
                      "storage": dict(storage or {})}
            atomic_write_text(partial / POINT_RECORD, json.dumps(record, indent=2, sort_keys=True, default=str) + "\n")
        return record
    finally:
        with signals_ignored():
            _empty_scratch(scratch)


def _stage_input(task: Mapping[str, Any], dest: Path, made: Path | None) -> None:
    """The task's input in its scratch, on the class's device (unprofiled): a copy of ``made``
    (checked to be this task's kind, size and seed by its ``synth.json``, and the copy to hold
    exactly the files that record lists, byte for byte), else synthesized."""
    from biossd.study import staging

    want = task["input"]
    if made is None:
        data.synth(want["kind"], dest, parse_size(str(want["size"])), int(task["seed"]))
        return
    try:
        record = json.loads((made / data.SYNTH_RECORD).read_text())
        given = (record["kind"], record["requested_size_bytes"], record["seed"])
    except (OSError, ValueError, KeyError, TypeError) as err:
        raise ExperimentError(f"--input {made}: no readable {data.SYNTH_RECORD} ({err}); give the input "
                              "`biossd data synth` made for this task") from None
    if given != (want["kind"], parse_size(str(want["size"])), int(task["seed"])):
        raise ExperimentError(f"--input {made}: it is {given} (kind, bytes, seed), the task needs "
                              f"{(want['kind'], parse_size(str(want['size'])), int(task['seed']))}")
    shutil.copytree(made, dest, symlinks=False)
    staging.check_input(dest)  # a damaged input is refused, never run and recorded as the tool failing


def _empty_scratch(scratch: Path) -> None:
    """The task's scratch emptied as it was given (its mark kept: the scratch is its maker's)."""
    if not scratch.exists():
        return
    for child in scratch.iterdir():
        if child.name == rundir.SCRATCH_MARKER:
            continue
        if child.is_dir() and not child.is_symlink():
            with contextlib.suppress(OSError):  # never into a disk still mounted there
                remove_tree(child)
        else:
            child.unlink(missing_ok=True)


def _utc_now() -> str:
    return dt.datetime.now(dt.timezone.utc).isoformat(timespec="milliseconds")
