"""The experiment matrix of a study run: which tools run, under which memory caps, at
which input scales, how many times, on which storage classes — and every problem with the
parameters that say so, found before anything runs.

The study's entry workflow (``study/main.nf``) hands its ``params`` to ``biossd study plan``,
which calls :func:`plan` and prints the result as JSON; the workflow makes one profiled run per
``(tool, cap, scale, repeat, class)`` of it, or stops with the one message listing every problem.

Defaults follow Lee, Min and Yoon (2015), §5.1: caps 1/4/16/32 GB (§3.5 ran GATK at 4, 16 and 32 GB; the other
tools had 1 GB), three repeats.
"""

from __future__ import annotations

import fnmatch
import math
import re
import shutil
import socket
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any, Mapping, Sequence

from biossd.core import paths
from biossd.core.units import format_size, is_size_label, parse_duration_s, parse_size
from biossd.host import cgroups, devices
from biossd.study import catalogue, layout, outdir, sizing
from biossd.study.inputs import sources

#: Every parameter of the study, typed and documented (nf-core's nextflow_schema.json).
SCHEMA_PATH = paths.STUDY_DIR / "nextflow_schema.json"
#: What a class's scratch must have free: this many times the largest input (the sizing module says why).
SCRATCH_PER_INPUT = sizing.SCRATCH_PER_INPUT

#: The smallest cap any run may have (:data:`biossd.host.cgroups.MIN_CAP_BYTES`).
MIN_CAP_BYTES = cgroups.MIN_CAP_BYTES
#: On a scheduler the job holds biossd's profiler beside the tool, and the scheduler's cgroup caps
#: them together (``--cap-backend external``): the job asks for the tool's cap plus this (the
#: profiler's resident memory, with its collectors, stays below it; the run records both).
PROFILER_JOB_OVERHEAD_BYTES = 256 << 20
#: A job's time limit is the run's own (``--time_limit``, the profiler's ``--timeout``) plus
#: this, for staging the input and writing the run, so the profiler records the timeout itself.
JOB_TIME_GRACE_S = 300
#: A probe's input is never smaller than this (the synthetic kinds need some records).
MIN_PROBE_INPUT_BYTES = 16 << 10
#: --sizing none: the parameters as given, outside the sizing rule (the plan says so).
NO_SIZING = "none"
#: --sizing auto: the workflow sizes on this host first (`biossd study size`), then plans.
SIZE_HERE = "auto"
_WHOLE_RE = re.compile(r"^[1-9]\d*$")


@dataclass
class Plan:
    """What one invocation runs. ``caps`` gives each tool its caps (texts as given, e.g. ``4G``,
    which name the run directories); ``skipped`` maps tools left out to why."""

    tools: list[str] = field(default_factory=list)
    caps: dict[str, list[str]] = field(default_factory=dict)
    #: Every scale any tool runs at; ``scales_of`` gives each tool its own (--tool_scales).
    scales: list[int] = field(default_factory=list)
    scales_of: dict[str, list[int]] = field(default_factory=dict)
    #: Each tool's input kind, and each kind's baseline size (--input_sizes, else --input_size).
    kinds: dict[str, str] = field(default_factory=dict)
    input_sizes: dict[str, str] = field(default_factory=dict)
    #: A tool's own baseline input size, replacing its kind's (--tool_input_sizes): the sizing
    #: rule sizes inputs per program, as the paper did (biossd.study.sizing).
    tool_input_sizes: dict[str, str] = field(default_factory=dict)
    #: Each tool's data set of the paper's (--inputs; a tool absent reads its kind's synthetic
    #: input), each kind's for the chained pipelines, and where the fetched data sets (DIR/<id>)
    #: and their manifests are (biossd.study.inputs.sources).
    sources: dict[str, str] = field(default_factory=dict)
    kind_sources: dict[str, str] = field(default_factory=dict)
    data_dir: str = ""
    data_manifests: str = ""
    #: Each tool's memory settings (its catalogue memory_options) under the sizing rule:
    #: paper-era defaults / (1 GB / --data_memory), JVM heaps from --java_heaps.
    settings: dict[str, dict[str, str]] = field(default_factory=dict)
    #: A run's time limit in seconds (outcome ``timeout`` past it); ``None``: none.
    time_limit_s: float | None = None
    #: Repeats of a tool's configurations other than its baseline (its smallest cap and scale):
    #: the scaling experiments of Figs. 8 and 9 (--scaling_repeats, else --repeats).
    scaling_repeats: int = 0
    #: Fig. 10 without a PMU: each tool once under cachegrind on the first class, at its kind's
    #: size divided by this (--cachegrind_divisor; 0: no probes).
    cachegrind_divisor: int = 0
    #: Fig. 3: the pipelines run chained (--chains), ``chain_repeats`` times on every class, and
    #: each chain step's cap (its tool's baseline cap by --tool_caps/--mem_caps) and input kind.
    chains: list[str] = field(default_factory=list)
    chain_repeats: int = 0
    chain_steps: dict[str, list[dict[str, Any]]] = field(default_factory=dict)
    chain_kinds: dict[str, str] = field(default_factory=dict)
    repeats: int = 0
    #: A baseline configuration whose speedup's interval straddles a group's bound after
    #: ``repeats`` runs to this many in all (--firm_repeats; 0: never): the plan lists those extra
    #: repeats (:meth:`firm_tasks`), the study runs only the ones its first repeats call for.
    firm_repeats: int = 0
    classes: list[str] = field(default_factory=list)
    #: The host name of the result layout (--host, else the workflow's host); tasks need it.
    host: str = ""
    devices: dict[str, str] = field(default_factory=dict)
    #: On SLURM, each class's partition (--slurm_partitions, else --slurm_default_partition).
    partitions: dict[str, str] = field(default_factory=dict)
    skipped: dict[str, str] = field(default_factory=dict)
    problems: list[str] = field(default_factory=list)
    #: The sizing record whose parameters the plan took (--sizing), or ``None``.
    sizing: dict[str, Any] | None = None
    #: Each tool's baseline input over its smallest cap (what keeps, or does not keep, the study in
    #: the paper's regime).
    input_over_cap: dict[str, float] = field(default_factory=dict)
    #: The plan's parameters as the result folder keeps them (:func:`biossd.study.outdir.record`),
    #: those of the sizing record included.
    record: dict[str, str | None] = field(default_factory=dict)
    #: Each run's swap (--swap) and the emulated disks' size and scaling (--emulate_size,
    #: --data_memory) as planned: a sizing record's, else the parameters' (the workflow passes
    #: these on, never the raw params, so that --sizing decides them).
    swap: str | None = None
    emulate_size: str | None = None
    data_memory: str | None = None

    def runs(self, firm: bool = False) -> list[dict[str, Any]]:
        """Every run of one storage class: tool, cap, scale, repeat and the id of its input
        (baseline configurations ``repeats`` times, the others ``scaling_repeats`` times);
        ``firm``: instead, the baseline configurations' repeats after ``repeats`` up to
        ``firm_repeats``."""
        out = []
        for tool in self.tools:
            caps, scales = self.caps.get(tool, []), self.scales_of.get(tool, self.scales)
            for cap in caps:
                for scale in scales:
                    base = cap == min(caps, key=parse_size) and scale == min(scales)
                    reps = (range(self.repeats + 1, self.firm_repeats + 1) if firm and base else range(0) if firm
                            else range(1, (self.repeats if base else self.scaling_repeats or self.repeats) + 1))
                    for rep in reps:
                        out.append({"tool": tool, "mem": cap, "scale": scale, "rep": rep,
                                    "input": self.input_of(tool, scale)})
        return out

    def probes(self) -> list[dict[str, Any]]:
        """Fig. 10's cachegrind probes: each tool once on a reduced input, its options set for its
        smallest cap (``mem``); the probe itself runs uncapped (valgrind needs memory of its own)."""
        if not self.cachegrind_divisor:
            return []
        return [{"tool": t, "mem": min(self.caps[t], key=parse_size), "scale": 1, "rep": 1, "probe": "cachegrind",
                 "input": probe_input_id(self.kinds[t], self.cachegrind_divisor, self.tool_input_sizes.get(t),
                                         self.sources.get(t))}
                for t in self.tools if self.caps.get(t) and t in self.kinds]

    def size_of(self, tool: str) -> str:
        """The baseline input size ``tool`` reads: its own (--tool_input_sizes), else its kind's."""
        return self.tool_input_sizes.get(tool) or self.input_sizes.get(self.kinds.get(tool, ""), "")

    def input_of(self, tool: str, scale: int) -> str:
        """The id of the input ``tool`` reads at ``scale``: its kind's shared one, or its own size's."""
        return input_id(self.kinds.get(tool, ""), scale, self.tool_input_sizes.get(tool), self.sources.get(tool))

    def chain_runs(self) -> list[dict[str, Any]]:
        """Every chained pipeline run of one storage class: the pipeline, the repeat, the id of
        its input (its kind at scale 1, as the baseline runs read it) and its steps."""
        return [{"pipeline": p, "rep": rep, "steps": self.chain_steps[p],
                 "input": input_id(self.chain_kinds[p], 1, source=self.kind_sources.get(self.chain_kinds[p]))}
                for p in self.chains for rep in range(1, self.chain_repeats + 1)]

    def tasks(self) -> list[dict[str, Any]]:
        """Every profiled task of the invocation (Nextflow's PROFILE), with its whole ``meta``, in
        the order the tasks start: each run on every class side by side, the first class
        alternating with the repeat, so that a drift of the host's load over the study falls on
        both classes alike rather than on one; a probe on the first class only. ``labels`` are
        what the run records (and where it lands, :func:`biossd.study.layout.run_relpath`),
        ``publish`` that path, ``mem_bytes`` the cap in bytes, and for a scheduler ``job_mem_bytes``
        and ``job_time_s`` (:data:`PROFILER_JOB_OVERHEAD_BYTES`, :data:`JOB_TIME_GRACE_S`)."""
        return self._tasks(self.runs() + self.probes())

    def firm_tasks(self) -> list[dict[str, Any]]:
        """The extra repeats of every baseline configuration (:attr:`firm_repeats`), as tasks with
        their whole meta; the study runs those of the configurations that are not firm."""
        return self._tasks(self.runs(firm=True), start=len(self.tasks()))

    def _tasks(self, runs: list[dict[str, Any]], start: int = 0) -> list[dict[str, Any]]:
        out: list[dict[str, Any]] = []
        for run in runs:
            classes = self.classes if run["rep"] % 2 else list(reversed(self.classes))
            for storage in classes:
                if run.get("probe") and storage != self.classes[0]:
                    continue
                labels = {"host": self.host, "storage": storage, "tool": run["tool"], "mem": run["mem"],
                          "scale": run["scale"], "rep": run["rep"], **({"probe": run["probe"]} if run.get("probe") else {})}
                mem_bytes = parse_size(run["mem"])
                out.append({**labels, "labels": labels, "mem_bytes": mem_bytes, "partition": self.partitions.get(storage),
                            "settings": self.settings.get(run["tool"], {}),
                            "job_mem_bytes": mem_bytes + PROFILER_JOB_OVERHEAD_BYTES,
                            "job_time_s": int(self.time_limit_s + JOB_TIME_GRACE_S) if self.time_limit_s else None,
                            **self.run_options(),
                            "kind": self.kinds.get(run["tool"], ""), "input": run["input"],
                            "publish": str(layout.run_relpath(labels)), "order": start + len(out)})
        return out

    def run_options(self) -> dict[str, Any]:
        """What every profiled run is given beyond its cap: its swap and its time limit (seconds)."""
        return {"swap": self.swap, "timeout_s": self.time_limit_s}

    def chain_tasks(self) -> list[dict[str, Any]]:
        """Every chained pipeline of the invocation on every class (Nextflow's CHAIN), with its
        whole ``meta``: the labels each step records, the steps (each with its cap in bytes and
        its publish path) and ``publish``, the chain's directory in the result layout."""
        out = []
        for chained in self.chain_runs():
            for storage in self.classes:
                labels = {"host": self.host, "storage": storage, "chain": chained["pipeline"], "rep": chained["rep"],
                          "scale": 1}
                steps = [{**s, "mem_bytes": parse_size(s["mem"]), "settings": self.settings.get(s["tool"], {}),
                          "publish": str(layout.chain_relpath({**labels, "step": s["name"]}))}
                         for s in chained["steps"]]
                out.append({"host": self.host, "storage": storage, "partition": self.partitions.get(storage),
                            "pipeline": chained["pipeline"], **self.run_options(),
                            "rep": chained["rep"], "labels": labels, "input": chained["input"],
                            # One job runs every step: on a scheduler the largest step's cap holds.
                            "job_mem_bytes": max(st["mem_bytes"] for st in steps) + PROFILER_JOB_OVERHEAD_BYTES,
                            "kind": self.chain_kinds[chained["pipeline"]], "steps": steps,
                            "publish": str(layout.chain_dir_relpath(labels))})
        return out

    def inputs(self) -> list[dict[str, Any]]:
        """Every input the runs and probes read: id, kind, scale, baseline size and source
        (``synthetic``, or a data set with its fetched folder ``data`` and ``manifests``)."""
        seen: dict[str, dict[str, Any]] = {}
        for r in self.runs():
            kind = self.kinds.get(r["tool"], "")
            seen.setdefault(r["input"], {"id": r["input"], "kind": kind, "scale": r["scale"],
                                         "size": self.size_of(r["tool"]), **self._source(self.sources.get(r["tool"]))})
        for p, kind in self.chain_kinds.items():
            the_id = input_id(kind, 1, source=self.kind_sources.get(kind))
            seen.setdefault(the_id, {"id": the_id, "kind": kind, "scale": 1, "size": self.input_sizes.get(kind, ""),
                                     **self._source(self.kind_sources.get(kind))})
        for r in self.probes():
            kind = self.kinds[r["tool"]]
            size = max(parse_size(self.size_of(r["tool"])) // self.cachegrind_divisor, MIN_PROBE_INPUT_BYTES)
            seen.setdefault(r["input"], {"id": r["input"], "kind": kind, "scale": 1, "size": format_size(size),
                                         **self._source(self.sources.get(r["tool"]))})
        return list(seen.values())

    def _source(self, dataset: str | None) -> dict[str, str]:
        if not dataset:
            return {"source": sources.SYNTHETIC}
        return {"source": dataset, "data": str(Path(self.data_dir) / dataset), "manifests": self.data_manifests}

    def n_runs(self) -> int:
        """The runs the plan makes; none when it has problems (nothing runs, and a count out of
        range is never expanded)."""
        if self.problems:
            return 0
        try:
            return (len(self.runs()) + sum(len(c["steps"]) for c in self.chain_runs())) * len(self.classes)
        except ValueError:  # a cap that is not a size: named among the problems
            return 0

    def as_json(self) -> dict[str, Any]:
        ok = not self.problems
        tasks = ok and bool(self.host)
        return {**asdict(self), "n_runs": self.n_runs(), "runs": self.runs() if ok else [],
                "probes": self.probes() if ok else [], "chain_runs": self.chain_runs() if ok else [],
                "inputs": self.inputs() if ok else [], "tasks": self.tasks() if tasks else [],
                "firm_tasks": self.firm_tasks() if tasks else [],
                "chain_tasks": self.chain_tasks() if tasks else []}


def input_id(kind: str, scale: int, size: str | None = None, source: str | None = None) -> str:
    """The id of the input of ``kind`` at ``scale`` (its STUDY_INPUT task and folder): the kind's
    shared baseline, or a tool's own baseline ``size``; from a data set ``source``, or synthetic."""
    return "_".join(x for x in (kind, source, size, f"x{scale}") if x)


def probe_input_id(kind: str, divisor: int, size: str | None = None, source: str | None = None) -> str:
    """The id of the reduced input of a probe: the baseline's size divided by ``divisor``."""
    return "_".join(x for x in (kind, source, size, f"div{divisor}") if x)


def csv_list(value: object) -> list[str]:
    """``'a, b,,c'`` → ``['a', 'b', 'c']``; ``None`` → ``[]``; ``0`` → ``['0']``."""
    return [part.strip() for part in ("" if value is None else str(value)).split(",") if part.strip()]


def parse_pairs(value: object, param: str, problems: list[str]) -> dict[str, str]:
    """``'ssd=/dev/sdb,hdd=/dev/sdc'`` → ``{'ssd': '/dev/sdb', ...}``; bad items become problems."""
    out = {}
    for item in csv_list(value):
        key, sep, val = item.partition("=")
        if not sep or not key.strip() or not val.strip():
            problems.append(f"--{param} takes NAME=VALUE[,NAME=VALUE...]; '{item}' is not of that form")
        else:
            out[key.strip()] = val.strip()
    return out


def parse_tool_caps(value: object, problems: list[str], param: str = "tool_caps",
                    example: str = "gatk_*=4G,16G") -> list[tuple[str, list[str]]]:
    """``'gatk_*=4G,16G,32G;maq=1G'`` → ``[('gatk_*', ['4G', '16G', '32G']), ('maq', ['1G'])]``:
    per-tool lists (shell-style patterns over catalogue ids) that replace --mem_caps (or, for
    --tool_scales, --scales) for the tools they match; the first matching pattern wins."""
    out = []
    for item in (part.strip() for part in str(value or "").split(";")):
        if not item:
            continue
        pattern, sep, caps = item.partition("=")
        if not sep or not pattern.strip() or not csv_list(caps):
            problems.append(f"--{param} takes PATTERN=VALUE[,VALUE...][;...] (e.g. '{example}'); "
                            f"'{item}' is not of that form")
            continue
        out.append((pattern.strip(), csv_list(caps)))
    return out


def _per_tool(tools: list[str], overrides: list[tuple[str, list[str]]], default: list[str]) -> dict[str, list[str]]:
    return {t: next((v for p, v in overrides if fnmatch.fnmatchcase(t, p)), default) for t in tools}


def _cap_problems(cap: str, where: str, min_bytes: int, who: str) -> list[str]:
    if not is_size_label(cap):
        return [f"Memory cap '{cap}' in {where} is not a size like 1G or 512M"]
    if parse_size(cap) < min_bytes:
        return [f"Memory cap '{cap}' in {where} is below the {format_size(min_bytes)} minimum of {who}"]
    if parse_size(cap) > cgroups.MAX_CAP_BYTES:
        return [f"Memory cap '{cap}' in {where} is above {format_size(cgroups.MAX_CAP_BYTES)}: no host has it, and "
                "it would be no cap"]
    return []


def select_tools(spec: str, entries: Mapping[str, catalogue.Entry], stub: bool,
                 problems: list[str]) -> tuple[list[str], dict[str, str]]:
    """``--tools all``: every tool entry runnable here (in a stub-run, every tool entry), the rest
    skipped with the catalogue's reason; otherwise the ids given, each checked."""
    tools = sorted(e.id for e in entries.values() if e.kind == "tool")
    if spec == "all":
        if stub:
            return tools, {}
        runnable = [t for t in tools if entries[t].data["status"] == "runnable"]
        skipped = {t: entries[t].data.get("status_reason", "recipe-only") for t in tools if t not in runnable}
        return runnable, skipped
    chosen = csv_list(spec)
    for tool in chosen:
        if tool not in entries:
            problems.append(f"Unknown tool '{tool}' in --tools; the catalogue's tools are: {', '.join(tools)}")
        elif entries[tool].kind != "tool":
            problems.append(f"'{tool}' in --tools is a pipeline, not a tool")
        elif not stub and entries[tool].data["status"] != "runnable":
            problems.append(f"'{tool}' in --tools is recipe-only here: {entries[tool].data.get('status_reason')}")
    if not chosen:
        problems.append("--tools is empty")
    return chosen, {}


def min_cap_bytes(entry: catalogue.Entry) -> int:
    """The smallest cap ``entry`` may run under: its catalogue ``min_mem``, at least the global floor."""
    own = entry.data.get("min_mem")
    return max(MIN_CAP_BYTES, parse_size(own) if own else 0)


def device_problems(classes: list[str], named: Mapping[str, str], scratch_dir: str | None,
                    emulated: set[str]) -> list[str]:
    """A named device that does not exist, a device named for an emulated class (which gets its
    own), and a scratch directory not on the device named for its class."""
    problems = []
    for cls, dev in sorted(named.items()):
        if cls not in classes:
            problems.append(f"--devices names class '{cls}', which is not in --storage_classes")
            continue
        if cls in emulated:
            problems.append(f"--devices names {dev} for class '{cls}', but that class is emulated (--emulate)")
            continue
        try:
            want = devices.resolve(dev)
        except devices.DeviceError as err:
            problems.append(f"--devices: the device of class '{cls}' is missing: {err}")
            continue
        if scratch_dir and Path(scratch_dir).is_dir():
            have = devices.device_of_path(Path(scratch_dir))
            if have != want and devices.whole_disk(have) != want:
                problems.append(f"--scratch_dir {scratch_dir} is on {have}, not on {want} named for class "
                                f"'{cls}' in --devices: give a scratch directory on that device")
        elif not scratch_dir:
            problems.append(f"--devices names {dev} for class '{cls}', but no --scratch_dir on it is given "
                            "(runs would use the task directory, on whatever device that is)")
    return problems


def slurm_partitions() -> dict[str, list[str]] | None:
    """The SLURM cluster's partitions and the nodes of each (``sinfo``, as ``SLURM_CONF`` points);
    ``None`` when SLURM cannot be asked."""
    import subprocess

    if shutil.which("sinfo") is None:
        return None
    try:
        proc = subprocess.run(["sinfo", "-h", "-N", "-o", "%P %N"], capture_output=True, text=True, timeout=30)
    except (OSError, subprocess.TimeoutExpired):
        return None
    if proc.returncode != 0:
        return None
    out: dict[str, list[str]] = {}
    for line in proc.stdout.splitlines():
        partition, _, node = line.strip().partition(" ")
        out.setdefault(partition.rstrip("*"), []).append(node)
    return out


def slurm_problems(classes: list[str], emulated: set[str], partitions: Mapping[str, str],
                   default: object, cluster: Mapping[str, list[str]] | None = None,
                   this_host: str | None = None) -> list[str]:
    """On SLURM every class needs a partition that exists (``cluster``: the partitions and their
    nodes, from :func:`slurm_partitions`). One invocation studies one partition's nodes: several
    partitions are allowed only when they hold the same nodes (a one-node cluster's per-class
    partitions), since every class's device is characterized once. An emulated class needs those
    nodes to be this host, where the emulation is mounted."""
    chosen = {c: partitions.get(c) or (str(default) if default else None) for c in classes}
    problems = [f"-profile slurm: class '{c}' has no partition; give --slurm_partitions {c}=PARTITION "
                "or --slurm_default_partition" for c, p in chosen.items() if p is None]
    used = sorted({p for p in chosen.values() if p})
    if cluster is None:
        return problems + ["-profile slurm: SLURM cannot be asked for its partitions (sinfo is missing or fails); "
                           "check SLURM_CONF, or `biossd slurm up` for the one-node cluster on this host"]
    unknown = [p for p in used if p not in cluster]
    problems += [f"-profile slurm: partition '{p}' does not exist; the cluster has {', '.join(sorted(cluster)) or 'none'}"
                 for p in unknown]
    nodes = {p: frozenset(cluster[p]) for p in used if p in cluster}
    if len(set(nodes.values())) > 1:
        problems.append("-profile slurm: the classes map to partitions on different nodes "
                        f"({', '.join(f'{c}={p}' for c, p in sorted(chosen.items()))}); run one invocation per "
                        "partition (-profile ssd,slurm and -profile hdd,slurm), as the paper's matched pair")
    local = this_host or socket.gethostname().split(".")[0]
    remote = sorted({n for ns in nodes.values() for n in ns} - {local})
    if emulated and remote:
        problems += [f"-profile slurm: class '{c}' is emulated on this host ({local}), but its partition's nodes "
                     f"are {', '.join(remote)}; emulated storage needs the one-node cluster on this host "
                     "(`biossd slurm up`)" for c in sorted(emulated)]
    return problems


def _camel(name: str) -> str:
    head, *rest = name.split("_")
    return head + "".join(part.title() for part in rest)


def schema_parameters(schema: Mapping[str, Any]) -> dict[str, dict[str, Any]]:
    """Every parameter of a Nextflow schema by name: the properties of each group under ``$defs``
    (nf-core's layout: the groups joined by ``allOf``), and any at its top level."""
    out: dict[str, dict[str, Any]] = {}
    for group in (schema.get("$defs") or {}).values():
        out.update(group.get("properties") or {})
    out.update(schema.get("properties") or {})
    return out


def schema_text(params: Mapping[str, Any], schema_path: Path = SCHEMA_PATH) -> dict[str, Any]:
    """``params`` with a number given for a parameter the schema takes only as text read as its
    text: Nextflow reads ``--scales 1`` or ``--budget 90`` from the command line as a number."""
    import json

    known = schema_parameters(json.loads(Path(schema_path).read_text()))
    out = dict(params)
    for name, value in params.items():
        types = known.get(name, {}).get("type") or []
        types = {types} if isinstance(types, str) else set(types)
        if isinstance(value, (int, float)) and not isinstance(value, bool) and "string" in types \
                and not types & {"integer", "number"}:
            out[name] = str(value)
    return out


def schema_problems(params: Mapping[str, Any], schema_path: Path = SCHEMA_PATH) -> list[str]:
    """Every parameter checked against the study's schema (types, enums, patterns), and every
    parameter the schema does not know; each problem names the parameter."""
    import json

    import jsonschema

    schema = json.loads(Path(schema_path).read_text())
    known = schema_parameters(schema)
    aliases = {_camel(k) for k in known} | {k.replace("_", "-") for k in known}
    given = {k: v for k, v in params.items() if k in known}
    problems = [f"Unknown parameter --{k}: not in {schema_path.name} (see the README or `nextflow run study "
                "--help`)" for k in sorted(params) if k not in known and k not in aliases]
    validator = jsonschema.Draft202012Validator(schema)
    for error in sorted(validator.iter_errors(given), key=lambda e: list(e.path)):
        name = ".".join(str(p) for p in error.path) or "(parameters)"
        rule = known.get(name, {})
        if error.validator == "pattern":
            why = f"does not match the form {rule['pattern']}"
        elif error.validator == "enum":
            why = f"is not one of {', '.join(str(v) for v in rule['enum'])}"
        elif error.validator == "type":
            why = f"is not of type {rule['type'] if isinstance(rule['type'], str) else ' or '.join(rule['type'])}"
        elif error.validator in ("minimum", "maximum"):
            why = f"is {'below the minimum' if error.validator == 'minimum' else 'above the maximum'} {rule[error.validator]}"
        else:
            why = error.message
        said = rule.get("description", "").split(". ")[0].rstrip(".")
        problems.append(f"Parameter --{name} = {error.instance!r} {why} ({said})")
    return problems


def _chains(params: Mapping[str, Any], entries: Mapping[str, catalogue.Entry], caps: list[str],
            overrides: list[tuple[str, list[str]]], stub: bool, problems: list[str]
            ) -> tuple[list[str], dict[str, list[dict[str, Any]]], dict[str, str]]:
    """--chains (``all``, or pipeline ids): the pipelines with a chain, each step's cap (its
    tool's smallest by --tool_caps, else --mem_caps: the cap of its baseline runs) and the
    chain's input kind. A step whose tool cannot run here is a problem (not in a stub-run)."""
    from biossd.study import chain

    given = csv_list(params.get("chains"))
    with_chain = [e.id for e in entries.values() if e.kind == "pipeline" and e.data.get("chain")]
    names = with_chain if given == ["all"] else given
    problems += [f"Unknown pipeline '{n}' in --chains; pipelines with a chain: {', '.join(with_chain)}"
                 for n in names if n not in with_chain]
    steps: dict[str, list[dict[str, Any]]] = {}
    kinds: dict[str, str] = {}
    for name in (n for n in names if n in with_chain):
        try:
            c = chain.of(entries[name])
        except (chain.ChainError, catalogue.CatalogueError) as err:
            problems.append(str(err))
            continue
        kinds[name] = c.input_kind
        steps[name] = []
        for step in c.steps:
            own = next((v for p, v in overrides if fnmatch.fnmatchcase(step.tool, p)), None)
            mem = min(own if own is not None else caps, key=lambda t: parse_size(t) if is_size_label(t) else 0)
            steps[name].append({"index": step.index, "name": step.name, "tool": step.tool, "mem": mem})
            if not stub and entries[step.tool].data.get("status") != "runnable":
                problems.append(f"--chains {name}: step {step.name} needs {step.tool}, which is "
                                f"{entries[step.tool].data.get('status')} here")
    return [n for n in names if n in steps], steps, kinds


def _input_sizes(params: Mapping[str, Any], kinds: list[str], problems: list[str]) -> dict[str, str]:
    """Each kind's baseline input size: its entry in --input_sizes (KIND=SIZE,...), else --input_size."""
    named = parse_pairs(params.get("input_sizes"), "input_sizes", problems)
    from biossd.study.inputs.data import KINDS

    problems += [f"--input_sizes names '{k}', which is not an input kind ({', '.join(sorted(KINDS))})"
                 for k in sorted(named) if k not in KINDS]
    problems += [f"--input_sizes: '{v}' for '{k}' is not a size like 8M" for k, v in sorted(named.items())
                 if not is_size_label(v)]
    return {k: named.get(k, str(params.get("input_size"))) for k in kinds}


def _tool_input_sizes(params: Mapping[str, Any], tools: list[str], entries: Mapping[str, catalogue.Entry],
                      problems: list[str]) -> dict[str, str]:
    """--tool_input_sizes PATTERN=SIZE[;...]: a tool's own baseline input size (the sizing rule's
    per-program inputs); the first matching pattern wins."""
    given = parse_tool_caps(params.get("tool_input_sizes"), problems, "tool_input_sizes", "cluster3=512K;maq,bwa=8M")
    expanded = [(p.strip(), v) for pats, v in given for p in pats.split(",")] if given else []
    for pattern, values in expanded:
        if len(values) != 1 or not is_size_label(values[0]):
            problems.append(f"--tool_input_sizes: '{pattern}={','.join(values)}' needs one size like 8M")
        if not any(fnmatch.fnmatchcase(t, pattern) for t in entries):
            problems.append(f"--tool_input_sizes pattern '{pattern}' matches no catalogue tool")
    out = {}
    for tool in tools:
        own = next((v for p, v in expanded if fnmatch.fnmatchcase(tool, p)), None)
        if own and len(own) == 1 and is_size_label(own[0]):
            out[tool] = own[0]
    return out


def _settings(params: Mapping[str, Any], tools: list[str], entries: Mapping[str, catalogue.Entry],
              problems: list[str]) -> dict[str, dict[str, str]]:
    """Each tool's memory settings under the sizing rule (biossd.study.sizing): its paper-era
    defaults divided by D = 1 GB / --data_memory (M; unset: the defaults), and its JVM heap from
    --java_heaps PATTERN=SIZE[;...] (else the catalogue's default)."""
    divisor = 1.0
    if params.get("data_memory"):
        text = str(params["data_memory"])
        if is_size_label(text) and parse_size(text) > 0:
            divisor = sizing.memory_divisor(parse_size(text))
        else:
            problems.append(f"--data_memory {text!r} is not a size like 6M")
    heaps = parse_tool_caps(params.get("java_heaps"), problems, "java_heaps", "gatk_*=256M;igvtools=128M")
    for pattern, values in heaps:
        if len(values) != 1 or not is_size_label(values[0]):
            problems.append(f"--java_heaps: '{pattern}={','.join(values)}' needs one size like 256M")
    out = {}
    for tool in tools:
        entry = entries.get(tool)
        if entry is None or entry.kind != "tool":
            continue
        heap = next((v[0] for p, v in heaps if fnmatch.fnmatchcase(tool, p) and len(v) == 1), None)
        names = [o["name"] for o in entry.memory_options() if o["rule"] == "heap"]
        out[tool] = entry.settings(divisor, {n: heap for n in names} if heap else None)
    return out


def _largest_input(sizes_of: Mapping[str, str], scales_of: Mapping[str, list[int]]) -> int:
    """Bytes of the largest input any run reads (its tool's baseline size times its largest scale)."""
    largest = 0
    for tool, size in sizes_of.items():
        try:
            largest = max(largest, parse_size(size) * max(scales_of.get(tool) or [1]))
        except (KeyError, ValueError):
            continue  # named by the checks of the sizes
    return largest


def space_problems(params: Mapping[str, Any], classes: list[str], emulated: set[str],
                   input_bytes: int) -> list[str]:
    """Free space on each class's scratch (and the emulated disks' size) against the largest
    input a run reads, before any run: a full scratch mid-study would be a harness failure."""
    try:
        swap_bytes = parse_size(str(params["swap"])) if params.get("swap") and not params.get("swap_dir") else 0
        emulate_bytes = parse_size(str(params.get("emulate_size") or "0"))
    except ValueError:
        return []  # named by the schema check
    need = input_bytes * SCRATCH_PER_INPUT + swap_bytes
    problems = []
    for cls in classes:
        if cls in emulated:
            if emulate_bytes * sizing.EXT4_FILES_SHARE < need:  # its own file system takes a share
                problems.append(f"--emulate_size {params.get('emulate_size')} is too small for class '{cls}': a run "
                                f"needs {format_size(need)} of scratch ({SCRATCH_PER_INPUT}x the "
                                f"{format_size(input_bytes)} input{' plus swap' if swap_bytes else ''}), and its ext4 "
                                f"leaves {sizing.EXT4_FILES_SHARE:.0%} of the device for files")
            continue
        where = Path(str(params.get("scratch_dir") or Path.cwd()))
        if where.is_dir():
            free = shutil.disk_usage(where).free
            if free < need:
                problems.append(f"The scratch of class '{cls}' ({where}) has {format_size(free)} free; a run "
                                f"needs {format_size(need)} ({SCRATCH_PER_INPUT}x the {format_size(input_bytes)} "
                                f"input of --input_size{' plus --swap ' + str(params['swap']) if swap_bytes else ''}): "
                                "free space, lower them, or give --scratch_dir elsewhere")
    if emulated:
        root = Path(str(params.get("storage_root") or Path.cwd()))
        probe = next((p for p in [root, *root.parents] if p.is_dir()), Path.cwd())
        total = emulate_bytes * len(emulated)
        free = shutil.disk_usage(probe).free
        if free < total:
            problems.append(f"--storage_root {root} ({probe}) has {format_size(free)} free; the emulated disks "
                            f"need {format_size(total)} ({len(emulated)} x --emulate_size)")
    return problems


def image_problems(engine: str, entries: list[catalogue.Entry]) -> list[str]:
    """With a container engine: the engine must answer and every planned tool's image must be
    there, before any run (each missing image named with the command that builds it)."""
    if not engine:
        return []
    from biossd.study.catalogue import containers

    try:
        containers.check_engine(engine)
    except containers.ContainerError as err:
        return [str(err)]
    missing = [e.id for e in entries if e.kind == "tool" and not containers.built(e, engine)]
    return [f"{tool}'s {engine} image is not built here: run `biossd catalogue build --engine {engine} {tool}`"
            for tool in missing]


def device_record_problems(records_dir: object, host: str, classes: list[str]) -> list[str]:
    """--device_records DIR: an earlier result folder must hold a device record for every class
    of this host (whether each is of the same device is checked when the class is up)."""
    if not records_dir:
        return []
    root = Path(str(records_dir))
    if not root.is_dir():
        return [f"--device_records {root} is not a directory (give the result folder of an earlier run on this host)"]
    if not host:
        return []  # named by the --host check
    missing = [str(layout.device_record_relpath(host, c)) for c in classes
               if not (root / layout.device_record_relpath(host, c)).is_file()]
    if missing:
        return [f"--device_records {root} has no device record {', '.join(missing)}: give a result folder of an "
                f"earlier run with --host {host} and these classes, or leave it out to measure the devices"]
    return []


def plan(params: Mapping[str, Any], stub: bool = False,
         catalogue_dir: Path = catalogue.CATALOGUE_DIR, resumed: bool = False) -> Plan:
    """The matrix of ``params`` (the study's Nextflow params), with every problem found
    (``resumed``: the study resumes an earlier session, which may change its plan). The schema
    checks each parameter's type and form; the steps below check what it cannot (catalogue
    names, caps against floors, devices, space, images)."""
    params = schema_text(params)
    problems: list[str] = schema_problems(params)
    sized, sizing_info = _sizing_of(params, problems)
    params = {**params, **sized}
    problems += path_problems(params)
    held = outdir.problem(params.get("outdir") or "results", params, resumed, params.get("replace_results") in (True, "true"))
    if held:
        problems.append(held)
    entries = {e.id: e for e in catalogue.load_all(catalogue_dir)}
    tools, skipped = select_tools(str(params.get("tools", "all")), entries, stub, problems)
    caps, overrides, tool_caps = _caps_of(params, tools, entries, problems)
    known = [t for t in tools if t in entries and entries[t].kind == "tool"]
    unsized = [t for t in known if sizing_info and t not in sizing_info["tools"]]
    if unsized and not stub:
        problems.append(f"--sizing {sizing_info['path']} sized {', '.join(sizing_info['tools'])}, not "
                        f"{', '.join(unsized)}: size those too (`biossd study size --tools ...`) or leave them out of --tools")
    scale_texts, scales_of = _scales_of(params, known, entries, problems)
    kinds = {t: entries[t].data["input"] for t in known}
    tool_input_sizes = _tool_input_sizes(params, known, entries, problems)
    settings = _settings(params, known, entries, problems)
    chains, chain_steps, chain_kinds = _chains(params, entries, caps, overrides, stub, problems)
    for steps in chain_steps.values():
        for step in steps:
            settings.setdefault(step["tool"], _settings(params, [step["tool"]], entries, [])[step["tool"]])
    input_sizes = _input_sizes(params, sorted(set(kinds.values()) | set(chain_kinds.values())), problems)
    data_dir = Path(str(params.get("data_dir") or "data")).absolute()
    data_manifests = str(params.get("data_manifests") or paths.DATA_MANIFESTS_DIR)
    tool_sources, kind_sources = sources.resolve(str(params.get("inputs") or sources.SYNTHETIC), kinds, chain_kinds,
                                                 data_dir, Path(data_manifests), stub, problems)
    time_limit_s = None
    if params.get("time_limit"):
        try:
            time_limit_s = parse_duration_s(str(params["time_limit"])) or None
        except ValueError as err:
            problems.append(f"--time_limit: {err}")
    repeats = _whole(params.get("repeats"))
    classes, emulated, named, partitions = _storage_of(params, stub, problems)
    scales = sorted({s for v in scales_of.values() for s in v} or {int(s) for s in scale_texts if _WHOLE_RE.match(s)})
    host = str(params.get("host") or "")
    if host and not layout.is_component(host):
        problems.append(f"--host {host!r} is not a single path component (letters, digits, '.', '_', '-'); "
                        "name the host with --host")
        host = ""
    sizes_of = {t: tool_input_sizes.get(t) or input_sizes.get(k, "") for t, k in kinds.items()}
    if not stub:
        problems += space_problems(params, classes, emulated, _largest_input(sizes_of, scales_of))
        problems += image_problems(str(params.get("container_engine") or ""), [entries[t] for t in tools if t in entries])
    problems += device_record_problems(params.get("device_records"), host, classes)

    return Plan(tools=tools, caps=tool_caps, scales=scales, scales_of=scales_of, kinds=kinds,
                input_sizes=input_sizes, tool_input_sizes=tool_input_sizes, sources=tool_sources,
                kind_sources=kind_sources, data_dir=str(data_dir), data_manifests=data_manifests,
                settings=settings, time_limit_s=time_limit_s,
                scaling_repeats=_whole(params.get("scaling_repeats"), repeats),
                cachegrind_divisor=_whole(params.get("cachegrind_divisor")), chains=chains, chain_steps=chain_steps,
                chain_kinds=chain_kinds, chain_repeats=_whole(params.get("chain_repeats"), repeats) if chains else 0,
                repeats=repeats, firm_repeats=_whole(params.get("firm_repeats")), classes=classes, host=host,
                devices=named, partitions=partitions,
                skipped=skipped, problems=problems, sizing=sizing_info,
                input_over_cap=_input_over_cap(sizes_of, tool_caps), record=outdir.record(params),
                swap=_text(params.get("swap")), emulate_size=_text(params.get("emulate_size")),
                data_memory=_text(params.get("data_memory")))


#: The study's folders: where results are published, where its emulated disks and scratch live.
PATH_PARAMS = ("outdir", "storage_root", "scratch_dir", "swap_dir", "data_dir")
#: Characters a folder the study writes, mounts or traces may not hold: the kernel's tables write
#: them escaped, and a line-based record would split on them.
_CONTROL_RE = re.compile(r"[\x00-\x1f\x7f]")


def path_problems(params: Mapping[str, Any]) -> list[str]:
    """Folders that cannot be meant: the root directory, one holding the current directory or the
    home directory (publishing or emulating there would mix the study into them), a name with a
    control character (a newline, a tab), and results published into the storage root (its
    emulated disks' mount points) or the other way round."""
    problems = []
    resolved = {}
    for name in PATH_PARAMS:
        value = params.get(name)
        if value in (None, ""):
            continue
        text = str(value)
        if _CONTROL_RE.search(text):
            problems.append(f"--{name} {text!r} holds a control character (a newline or a tab); name a plain folder")
            continue
        path = Path(text).expanduser().absolute().resolve()
        resolved[name] = path
        if name in ("outdir", "storage_root") and (path == Path(path.anchor) or path in Path.cwd().resolve().parents
                                                  or path == Path.home().resolve()):
            problems.append(f"--{name} {text} is {path}: the study would write into it beside what is there; "
                            "give a folder of its own")
    out, root = resolved.get("outdir"), resolved.get("storage_root")
    if out is not None and root is not None and (out == root or root in out.parents or out in root.parents):
        problems.append(f"--outdir {params['outdir']} and --storage_root {params['storage_root']} overlap: the "
                        "results would be published among the emulated disks' mount points; give two separate folders")
    time_limit = params.get("time_limit")
    if time_limit not in (None, "") and str(time_limit).strip() in ("0", "0s", "0m", "0h"):
        problems.append("--time_limit 0 would end every run at once; leave it unset for no limit")
    return problems


def _text(value: Any) -> str | None:
    """A parameter's text, or None when unset."""
    return None if value in (None, "") else str(value)


def _sizing_of(params: Mapping[str, Any], problems: list[str]) -> tuple[dict[str, str], dict[str, Any] | None]:
    """--sizing FILE: the parameters of a record of `biossd study size` (checked,
    :func:`biossd.study.sizer.load`) replace the study's own, and the plan names the record
    (--memory_factor k: derived with k times its data memory, the rule's sensitivity to D);
    --sizing none (or unset) keeps the parameters as given."""
    from biossd.study import sizer

    value = params.get("sizing")
    if value in (None, "", NO_SIZING):
        return {}, None
    if value == SIZE_HERE:
        problems.append("--sizing auto is the workflow's: it runs `biossd study size` on this host first and plans "
                        "with its record; to plan by hand, give that record (--sizing sizing.json) or none")
        return {}, None
    try:
        rec = sizer.load(Path(str(value)))
    except sizer.SizingError as err:
        problems.append(str(err))
        return {}, None
    factor = float(params.get("memory_factor") or 1)
    derived = rec["parameters"] if factor == 1 else sizer.parameters(rec, memory_factor=factor,
                                                                       min_cap_bytes=MIN_CAP_BYTES)
    sized = {name: v for name, v in derived.items() if v is not None}
    return sized, {"memory_factor": factor, "path": str(value), "sha256": sizer.digest(Path(str(value))),
                   "host": rec["host"].get("hostname"), "created": rec.get("created"),
                   "run_budget_s": rec["budget"]["run_s"], "tools": rec["tools"], "parameters": sorted(sized)}


def _input_over_cap(sizes_of: Mapping[str, str], caps: Mapping[str, list[str]]) -> dict[str, float]:
    """Each tool's baseline input over its smallest cap: the paper's regime has inputs several
    times the memory (Fig. 9: 20 GB on 4 GB); a study far below 1 cannot page."""
    out = {}
    for tool, size in sizes_of.items():
        try:
            cap = min(parse_size(c) for c in caps.get(tool, []))
            out[tool] = round(parse_size(size) / cap, 3) if cap else math.nan
        except ValueError:
            continue  # a size or cap that is not one: named among the problems
    return out


def _whole(value: Any, default: int = 0) -> int:
    """A count parameter (the schema has checked it is a whole number >= 1), else ``default``
    (unset; or malformed, which the schema has reported)."""
    return int(value) if value is not None and _WHOLE_RE.match(str(value)) else default


def _caps_of(params: Mapping[str, Any], tools: Sequence[str], entries: Mapping[str, catalogue.Entry],
             problems: list[str]) -> tuple[list[str], list[tuple[str, list[str]]], dict[str, list[str]]]:
    """The study's caps (``--mem_caps``), the per-tool overrides (``--tool_caps``) and each
    tool's caps, each checked against the tool's memory floor."""
    caps = csv_list(params.get("mem_caps"))
    if not caps:
        problems.append("--mem_caps is empty")
    overrides = parse_tool_caps(params.get("tool_caps"), problems)
    for pattern, _ in overrides:
        if not any(fnmatch.fnmatchcase(t, pattern) for t in entries):
            problems.append(f"--tool_caps pattern '{pattern}' matches no catalogue tool")
    tool_caps: dict[str, list[str]] = {}
    for tool in tools:
        if tool not in entries:
            continue
        own = next((c for p, c in overrides if fnmatch.fnmatchcase(tool, p)), None)
        tool_caps[tool] = own if own is not None else caps
        where = "--tool_caps" if own is not None else "--mem_caps"
        floor = min_cap_bytes(entries[tool])
        who = f"{tool} (its catalogue min_mem)" if floor > MIN_CAP_BYTES else "any run"
        for cap in tool_caps[tool]:
            for problem in _cap_problems(cap, where, floor, who):
                if problem not in problems:
                    problems.append(problem)
    return caps, overrides, tool_caps


#: The largest replication of a baseline input: Lee, Min and Yoon (2015) grew inputs up to 16
#: copies (§3.4, Fig. 8); a scale above this is a typo, and would fill any disk.
MAX_SCALE = 1024


def _scales_of(params: Mapping[str, Any], known: Sequence[str], entries: Mapping[str, catalogue.Entry],
               problems: list[str]) -> tuple[list[str], dict[str, list[int]]]:
    """The study's scales (``--scales``) and each tool's (``--tool_scales`` overrides)."""
    scale_texts = csv_list(params.get("scales"))
    if not scale_texts:
        problems.append("--scales is empty")
    scale_overrides = parse_tool_caps(params.get("tool_scales"), problems, "tool_scales", "ampliconnoise=1,2,4,8")
    for pattern, _ in scale_overrides:
        if not any(fnmatch.fnmatchcase(t, pattern) for t in entries):
            problems.append(f"--tool_scales pattern '{pattern}' matches no catalogue tool")
    scale_texts_of = _per_tool(known, scale_overrides, scale_texts)
    for where, texts in (("--scales", scale_texts), *(("--tool_scales", v) for _, v in scale_overrides)):
        problems += [p for p in (f"Scale '{s}' in {where} is not a whole number >= 1" for s in texts
                                 if not _WHOLE_RE.match(s)) if p not in problems]
        problems += [p for p in (f"Scale '{s}' in {where} is above {MAX_SCALE}: the input would be {s} copies of its "
                                 "baseline; grow the baseline (--input_size) instead" for s in texts
                                 if _WHOLE_RE.match(s) and int(s) > MAX_SCALE) if p not in problems]
    return scale_texts, {t: sorted({int(s) for s in v if _WHOLE_RE.match(s)}) for t, v in scale_texts_of.items()}


def _storage_of(params: Mapping[str, Any], stub: bool,
                problems: list[str]) -> tuple[list[str], set[str], dict[str, str], dict[str, str]]:
    """The storage classes, which are emulated, the devices named for them and (under SLURM)
    each class's partition, every one checked against this host (not in a ``stub`` run)."""
    classes = csv_list(params.get("storage_classes"))
    if not classes:
        problems.append("--storage_classes is empty")
    emulated = {name for name in parse_pairs(params.get("emulate"), "emulate", problems)}
    problems += [f"--emulate names class '{c}', which is not in --storage_classes" for c in sorted(emulated - set(classes))]
    scratch = params.get("scratch_dir") or None
    if scratch and not Path(str(scratch)).is_dir():
        problems.append(f"--scratch_dir {scratch} is not an existing directory on the device under study")
    named = parse_pairs(params.get("devices"), "devices", problems)
    if not stub:
        problems += device_problems(classes, named, str(scratch) if scratch else None, emulated)
    partitions: dict[str, str] = {}
    if params.get("executor") == "slurm":
        given = parse_pairs(params.get("slurm_partitions"), "slurm_partitions", problems)
        default = params.get("slurm_default_partition")
        partitions = {c: given.get(c) or str(default) for c in classes if given.get(c) or default}
        problems += slurm_problems(classes, emulated, given, default, None if stub else slurm_partitions())
    swap_dir = params.get("swap_dir") or None
    if swap_dir and not Path(str(swap_dir)).is_dir():
        problems.append(f"--swap_dir {swap_dir} is not an existing directory")
    return classes, emulated, named, partitions
