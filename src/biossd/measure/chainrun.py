"""A chained pipeline run in one process (Lee, Min and Yoon 2015, §2.3, Fig. 3).

The chain's steps run one after another in one scratch on the storage class's device, each
step's output the next step's input (:mod:`biossd.study.chain`). Here:

* the scratch is made, marked and removed however the chain ends (:func:`biossd.measure.rundir.scratch`);
* each step is staged in it — under the host lock when asked, so the copy never falls inside
  another run's measured window — and profiled there as a run of its own, under its tool's cap
  and memory settings from the study plan, into ``OUT/<NN-tool>/``;
* a step whose outcome is not ``ok`` ends the chain: the steps after it have no input and are
  not run (said on stderr); a signal ends it too, with nothing of the interrupted step kept.
"""

from __future__ import annotations

import contextlib
import dataclasses
import sys
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any, ContextManager

from biossd.core.errors import BiossdError
from biossd.core.units import parse_size
from biossd.measure import rundir, toolrun
from biossd.measure.request import ProfileRequest
from biossd.study import catalogue, chain
from biossd.study.catalogue import containers

#: The fields of one planned step (the study plan's ``steps``: ``biossd study tasks``).
STEP_FIELDS = ("index", "name", "tool", "mem")


class ChainRunError(BiossdError, ValueError):
    """Planned steps that do not match the pipeline's chain; the message names the field."""


@dataclasses.dataclass(frozen=True)
class PlannedStep:
    """One step as the study plan runs it: its tool's cap and memory settings (the sizing rule)."""

    index: int
    name: str
    tool: str
    mem: str
    settings: Mapping[str, str] = dataclasses.field(default_factory=dict)
    #: The cap in bytes where it is not ``mem`` (with floors measured in the session: its tool's F
    #: plus the data memory ``mem``), and what the step's run records of it (its floor labels).
    cap_bytes: int | None = None
    floor_labels: Mapping[str, Any] = dataclasses.field(default_factory=dict)

    @property
    def mem_bytes(self) -> int | None:
        if self.cap_bytes is not None:
            return self.cap_bytes
        return None if self.mem.lower() == "none" else parse_size(self.mem)


@dataclasses.dataclass
class StepRun:
    """What became of one step: its run directory, tool version and outcome (``None``: stopped
    by a signal, nothing kept)."""

    step: PlannedStep
    out_dir: Path
    tool_version: str
    outcome: str | None


@dataclasses.dataclass
class ChainRun:
    steps: list[StepRun]
    #: The signal that stopped the chain, or ``None``.
    signum: int | None = None

    def versions(self) -> dict[str, str]:
        """Each tool's version, in step order."""
        return {run.step.tool: run.tool_version for run in self.steps}


def planned_steps(ch: chain.Chain, raw: Sequence[Mapping[str, Any]], where: str = "--steps") -> list[PlannedStep]:
    """The plan's steps for ``ch``, checked against it: the same steps in the same order, each a
    mapping with :data:`STEP_FIELDS` (and optional ``settings``)."""
    if not isinstance(raw, list) or not raw:
        raise ChainRunError(f"{where}: a list of the chain's steps ({', '.join(STEP_FIELDS)}, settings)")
    steps = []
    for i, item in enumerate(raw, start=1):
        missing = [f for f in STEP_FIELDS if not isinstance(item, Mapping) or f not in item]
        if missing:
            raise ChainRunError(f"{where}[{i}]: missing {missing}")
        settings = item.get("settings") or {}
        if not isinstance(settings, Mapping):
            raise ChainRunError(f"{where}[{i}].settings: a mapping of memory settings, NAME: VALUE")
        cap = item.get("mem_bytes")
        steps.append(PlannedStep(int(item["index"]), str(item["name"]), str(item["tool"]), str(item["mem"]),
                                 {str(k): str(v) for k, v in settings.items()},
                                 int(cap) if cap is not None else None, dict(item.get("floor_labels") or {})))
    want = [(s.index, s.name, s.tool) for s in ch.steps]
    got = [(s.index, s.name, s.tool) for s in steps]
    if got != want:
        raise ChainRunError(f"{where}: the steps {got} are not {ch.pipeline}'s chain {want}; plan the study again")
    return steps


def _step_labels(base: Mapping[str, str], step: PlannedStep, version: str, scratch: Path) -> dict[str, str]:
    return {**base, **{f"setting.{k}": v for k, v in step.settings.items()}, **dict(step.floor_labels),
            "tool": step.tool, "mem": step.mem, "step": step.name, "tool_version": version, "scratch": str(scratch)}


def run(ch: chain.Chain, steps: Sequence[PlannedStep], input_dir: Path, scratch: Path, out_dir: Path,
        base: ProfileRequest, container: str | None = None,
        staging_lock: Callable[[str], ContextManager[Any]] = lambda what: contextlib.nullcontext(),
        version_of: Callable[[catalogue.Entry, str | None], str] = containers.installed_version) -> ChainRun:
    """Run ``steps`` of ``ch`` from ``input_dir`` in a scratch made at ``scratch`` (its name
    made unique), each staged and profiled there (:func:`biossd.measure.toolrun.staged_and_profiled`: a
    signal ends the chain)
    with ``base``'s options into ``out_dir/<step name>``, working in the scratch."""
    out_dir = Path(out_dir).absolute()
    input_dir = Path(input_dir).absolute()
    result = ChainRun([])
    with rundir.scratch(Path(scratch), unique=True) as where:
        for step in steps:
            entry = catalogue.get(step.tool)
            version = version_of(entry, container)
            request, body, signum = toolrun.staged_and_profiled(
                where, lambda cidfile, step=step: chain.stage_step(ch, step.index, input_dir, where, step.mem_bytes,
                                                                   container, dict(step.settings), create_scratch=False,
                                                                   cidfile=cidfile),
                base, what=f"biossd chain run {ch.pipeline} step {step.name} (into {where})", name="biossd chain run",
                container=container, cidfile_name=f"{containers.CIDFILE_NAME}-{step.index}", staging_lock=staging_lock,
                out_dir=out_dir / step.name, mem_bytes=step.mem_bytes, tool_version=version,
                labels=_step_labels(base.labels, step, version, where))
            result.steps.append(StepRun(step, request.out_dir, version, None if body is None else body["outcome"]))
            if signum is not None:
                result.signum = signum
                break
            if body["outcome"] != "ok":
                print(f"biossd chain run: {ch.pipeline} step {step.name} ended {body['outcome']}; the steps after it "
                      "have no input and are not run", file=sys.stderr)
                break
    return result
