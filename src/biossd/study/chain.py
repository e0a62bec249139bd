"""Chained pipelines (Lee, Min and Yoon 2015, §2.3, Fig. 3): a pipeline's steps run one after another in one
scratch directory on the storage class's device, each step's output being the next step's
input, and each step profiled as a run of its own.

A pipeline entry's ``chain`` block says how (``study/catalogue/pipeline_*.yaml``)::

    chain:
      input: vcf                       # the synthetic input kind the chain starts from
      prepare: [[samtools, fastq, ...]] # unprofiled, in scratch, before the first step
      steps:
      - tool: bwa                      # a runnable catalogue tool
      - tool: samtools_sort
        files: {in_bam: out.sam}       # stage-file values taken from earlier steps' outputs
        prepare: []                    # replaces the tool's own preparation (default: kept)
        added: why                     # a step the paper's list does not name (a conversion)
      not_chained: {tool: why}         # the paper's steps this chain cannot run, and why

A step's other values are its own ``stage`` block's (files relative to scratch), so a file the
chain's input kind provides under the same name is found there. A step of the paper's list that
the chain runs through its substitute (``substitute_steps``) is named by the figure.
"""

from __future__ import annotations

import os
import shutil
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from biossd.core.errors import BiossdError
from biossd.study import catalogue
from biossd.study.staging import SYNTH_RECORD, StageError, check_image, command_argv, existing_scratch, run_prepare

#: A step's directory name inside its chain's run folder: its 1-based position and tool.
STEP_NAME = "{index:02d}-{tool}"


class ChainError(BiossdError, ValueError):
    """A pipeline entry whose ``chain`` block cannot be run; the message names the field."""


@dataclass(frozen=True)
class Step:
    index: int
    tool: str
    files: dict[str, str] = field(default_factory=dict)
    prepare: list[list[str]] | None = None
    added: str | None = None

    @property
    def name(self) -> str:
        return STEP_NAME.format(index=self.index, tool=self.tool)


@dataclass(frozen=True)
class Chain:
    pipeline: str
    input_kind: str
    prepare: list[list[str]]
    steps: list[Step]
    not_chained: dict[str, str]


def of(entry: catalogue.Entry) -> Chain:
    """The chain of a pipeline entry; a missing or malformed block is refused naming the field."""
    where = f"{entry.source}: chain"
    block = entry.data.get("chain")
    if entry.kind != "pipeline" or not isinstance(block, dict):
        raise ChainError(f"{entry.source}: {entry.id} has no chain block (a pipeline's steps, wired)")
    if not isinstance(block.get("input"), str):
        raise ChainError(f"{where}.input: the synthetic input kind the chain starts from (e.g. 'vcf')")

    def argvs(value: object, field_name: str) -> list[list[str]]:
        """``value`` as a list of argvs of strings, or the field's error."""
        if not isinstance(value, list) or not all(isinstance(a, list) and a and all(isinstance(x, str) for x in a)
                                                   for a in value):
            raise ChainError(f"{where}.{field_name}: a list of argvs of strings (quote '-0' and numbers)")
        return value

    prepare = argvs(block.get("prepare") or [], "prepare")
    steps = []
    for i, raw in enumerate(block.get("steps") or [], start=1):
        if not isinstance(raw, dict) or not isinstance(raw.get("tool"), str):
            raise ChainError(f"{where}.steps[{i}]: a mapping with a 'tool'")
        unknown = set(raw) - {"tool", "files", "prepare", "added"}
        if unknown:
            raise ChainError(f"{where}.steps[{i}]: unknown fields {sorted(unknown)}")
        tool = catalogue.get(raw["tool"])
        stage = tool.data.get("stage") or {}
        bad = [k for k in raw.get("files") or {} if k not in (stage.get("files") or {})]
        if bad:
            raise ChainError(f"{where}.steps[{i}].files: {raw['tool']} has no stage files {bad}; "
                             f"it has {sorted(stage.get('files') or {})}")
        own = None if raw.get("prepare") is None else argvs(raw["prepare"], f"steps[{i}].prepare")
        steps.append(Step(i, tool.id, dict(raw.get("files") or {}), own, raw.get("added")))
    if not steps:
        raise ChainError(f"{where}.steps: at least one step")
    return Chain(entry.id, block["input"], prepare, steps,
                 dict(block.get("not_chained") or {}))


def stage_step(chain: Chain, index: int, input_dir: Path | None, scratch: Path, mem_bytes: int | None,
               container: str | None = None, settings: dict[str, str] | None = None,
               create_scratch: bool = True, cidfile: Path | None = None) -> list[str]:
    """Prepare step ``index`` (1-based) in ``scratch`` and return its argv, to be run with
    ``scratch`` as its working directory (its paths are relative to it, or to the directory
    its command changes into; in a container, the container's paths). The first step first
    copies the chain's input into scratch (a real copy: the tools read it from the device under
    study) and runs the chain's preparation; a later step finds its inputs where the earlier
    steps wrote them. ``cidfile``: where Docker writes the step's container id
    (:func:`biossd.study.catalogue.containers.wrap_argv`)."""
    if not 1 <= index <= len(chain.steps):
        raise ChainError(f"{chain.pipeline}: no step {index} (the chain has {len(chain.steps)})")
    step = chain.steps[index - 1]
    scratch = Path(scratch).resolve()
    if index == 1:
        if input_dir is None:
            raise ChainError(f"{chain.pipeline}: the first step needs the chain's input (--input)")
        if create_scratch:
            scratch.mkdir(parents=True, exist_ok=True)
        else:
            existing_scratch(scratch)
        for path in sorted(Path(input_dir).iterdir()):
            if path.is_file() and path.name != SYNTH_RECORD:
                shutil.copyfile(path, scratch / path.name)
        run_prepare(chain.prepare, scratch, chain.pipeline)
    entry = catalogue.get(step.tool)
    if container is not None:
        check_image(entry, container)
    block = entry.data.get("stage") or {}
    run_prepare(block.get("prepare", []) if step.prepare is None else step.prepare, scratch,
                f"{chain.pipeline} step {step.name}")
    files = {**block.get("files", {}), **step.files}
    missing = [f"{name} ({rel})" for name, rel in step.files.items() if not (scratch / rel).exists()]
    if missing:
        raise StageError(f"{chain.pipeline} step {step.name}: the earlier steps left no {', '.join(missing)} in scratch")
    values: dict[str, Any] = {name: str(scratch / rel) for name, rel in files.items()}
    values.update({name: str(v) for name, v in block.get("values", {}).items()})
    if container is None:
        # Relative to where the tool reads them: scratch, the step's working directory, or the
        # directory its command changes into first (stage.chdir: abyss-pe -C). Some tools'
        # wrappers (HISAT2's) pass paths through a shell unquoted and fail on a scratch path with
        # a space or a semicolon.
        into = block.get("chdir")
        base = scratch / files[into] if into else scratch
        values.update({name: str(rel) if name == into else os.path.relpath(scratch / rel, base)
                       for name, rel in files.items()})
    return command_argv(entry, values, scratch, mem_bytes, container, settings, cidfile)


def step_labels(entry: catalogue.Entry) -> tuple[dict[str, str], dict[str, str]]:
    """What a figure says of a chain: each run step's label, by step name (the tool, "tool (for
    paper step)" for a substitute, "tool (added: why)" for a conversion the paper does not list),
    and each of the paper's steps the chain does not run, with why."""
    chain = of(entry)
    subs = entry.data.get("substitute_steps") or {}
    paper_of = {subs.get(p, p): p for p in entry.data.get("steps", [])}
    labels = {}
    for step in chain.steps:
        paper = paper_of.get(step.tool)
        labels[step.name] = (step.tool if paper == step.tool else f"{step.tool} (for {paper})" if paper
                             else f"{step.tool} (added: {step.added or 'not in the paper'})")
    ran = {s.tool for s in chain.steps}
    not_run = {p: chain.not_chained.get(p) or f"{catalogue.get(p).data.get('status', 'not chained')} here"
               for p in entry.data.get("steps", []) if subs.get(p, p) not in ran and p not in ran}
    return labels, not_run
