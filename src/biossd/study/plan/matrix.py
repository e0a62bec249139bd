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

from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any, Mapping

from biossd.core import paths
from biossd.core.units import format_size, parse_duration_s, parse_size
from biossd.study import catalogue, layout, outdir
from biossd.study.inputs import sources
from biossd.study.plan import parse, resources, schema, storage_classes
from biossd.study.sizing import rule

#: On a scheduler the job holds biossd's profiler beside the tool, and the scheduler's cgroup caps
#: them together (``--cap-backend external``): the job asks for the tool's cap plus this (the
#: profiler's resident memory, with its collectors, stays below it; the run records both).
PROFILER_JOB_OVERHEAD_BYTES = 256 << 20
#: A job's time limit is the run's own (``--time_limit``, the profiler's ``--timeout``) plus
#: this, for staging the input and writing the run, so the profiler records the timeout itself.
JOB_TIME_GRACE_S = 300
#: A probe's input is never smaller than this (the synthetic kinds need some records).
MIN_PROBE_INPUT_BYTES = 16 << 10
#: The probe of a floor run (:meth:`Plan.floors`).
FLOOR_PROBE = layout.FLOOR_PROBE


@dataclass
class Plan:
    """What one invocation runs. ``caps`` gives each tool its caps (texts as given, e.g. ``4G``,
    which name the run directories); ``skipped`` maps tools left out to why."""

    tools: list[str] = field(default_factory=list)
    caps: dict[str, list[str]] = field(default_factory=dict)
    #: Whether ``caps`` are data memories M_t, each run's cap being its tool's floor F, measured in
    #: this session (:meth:`floor_tasks`), plus its M_t (--tool_data_memory, a sizing record's:
    #: docs/study.md, "The floor is measured where the study runs"); else they are the caps.
    floors_in_session: bool = False
    #: Every scale any tool runs at; ``scales_of`` gives each tool its own (--tool_scales).
    scales: list[int] = field(default_factory=list)
    scales_of: dict[str, list[int]] = field(default_factory=dict)
    #: Each tool's input kind, and each kind's baseline size (--input_sizes, else --input_size).
    kinds: dict[str, str] = field(default_factory=dict)
    input_sizes: dict[str, str] = field(default_factory=dict)
    #: A tool's own baseline input size, replacing its kind's (--tool_input_sizes): the sizing
    #: rule sizes inputs per program, as the paper did (biossd.study.sizing.rule).
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

    def floors(self) -> list[dict[str, Any]]:
        """Each tool's floor runs, before any capped run of it (``floors_in_session``): uncapped on
        1/FLOOR_DIVISOR of its input, on the first class, a warm-up (rep 0, ``read_code``: its code
        read whole into its own cgroup once it has ended) and FLOOR_REPEATS runs whose median
        resident peak is its F."""
        if not self.floors_in_session:
            return []
        reps = range(rule.FLOOR_REPEATS + 1) if rule.FLOOR_WARMUPS else range(1, rule.FLOOR_REPEATS + 1)
        return [{"tool": t, "mem": min(self.caps[t], key=parse_size), "scale": 1, "rep": rep, "probe": FLOOR_PROBE,
                 "input": probe_input_id(self.kinds[t], rule.FLOOR_DIVISOR, self.tool_input_sizes.get(t),
                                         self.sources.get(t)),
                 **({"read_code": True} if rep < rule.FLOOR_WARMUPS else {})}
                for t in self.tools if self.caps.get(t) and t in self.kinds for rep in reps]

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

    def floor_tasks(self) -> list[dict[str, Any]]:
        """The floor runs (:meth:`floors`) as tasks with their whole meta, on the first class, in
        tool order, before every other task."""
        return self._tasks(self.floors(), start=-len(self.floors()))

    def firm_tasks(self) -> list[dict[str, Any]]:
        """The extra repeats of every baseline configuration (:attr:`firm_repeats`), as tasks with
        their whole meta; the study runs those of the configurations that are not firm."""
        return self._tasks(self.runs(firm=True), start=len(self.tasks()))

    def _tasks(self, runs: list[dict[str, Any]], start: int = 0) -> list[dict[str, Any]]:
        out: list[dict[str, Any]] = []
        for run in runs:
            classes = self.classes if run["rep"] % 2 else list(reversed(self.classes))
            for cls in classes:
                if run.get("probe") and cls != self.classes[0]:
                    continue
                labels = {"host": self.host, "storage": cls, "tool": run["tool"], "mem": run["mem"],
                          "scale": run["scale"], "rep": run["rep"], **({"probe": run["probe"]} if run.get("probe") else {})}
                # With floors measured in the session the cap is F + M_t, filled in once the floor
                # runs are done (`biossd study caps`); a probe and a floor run are uncapped.
                mem_bytes = None if self.floors_in_session else parse_size(run["mem"])
                floor = {"data_memory_bytes": parse_size(run["mem"])} if self.floors_in_session else {}
                out.append({**labels, "labels": labels, "mem_bytes": mem_bytes, **floor,
                            "partition": self.partitions.get(cls),
                            "settings": self.settings.get(run["tool"], {}),
                            "job_mem_bytes": None if mem_bytes is None else mem_bytes + PROFILER_JOB_OVERHEAD_BYTES,
                            "job_time_s": int(self.time_limit_s + JOB_TIME_GRACE_S) if self.time_limit_s else None,
                            # An uncapped probe cannot page: no swap area to make for it.
                            **self.run_options(), **({"swap": None} if run.get("probe") else {}),
                            "kind": self.kinds.get(run["tool"], ""), "input": run["input"],
                            "publish": str(layout.run_relpath(labels)), "order": start + len(out),
                            **({"read_code": True} if run.get("read_code") else {})})
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
            for cls in self.classes:
                labels = {"host": self.host, "storage": cls, "chain": chained["pipeline"], "rep": chained["rep"],
                          "scale": 1}
                steps = [{**s, "mem_bytes": None if self.floors_in_session else parse_size(s["mem"]),
                          **({"data_memory_bytes": parse_size(s["mem"])} if self.floors_in_session else {}),
                          "settings": self.settings.get(s["tool"], {}),
                          "publish": str(layout.chain_relpath({**labels, "step": s["name"]}))}
                         for s in chained["steps"]]
                out.append({"host": self.host, "storage": cls, "partition": self.partitions.get(cls),
                            "pipeline": chained["pipeline"], **self.run_options(),
                            "rep": chained["rep"], "labels": labels, "input": chained["input"],
                            # One job runs every step: on a scheduler the largest step's cap holds
                            # (with floors measured in the session, filled in with the caps).
                            "job_mem_bytes": None if self.floors_in_session else
                            max(st["mem_bytes"] for st in steps) + PROFILER_JOB_OVERHEAD_BYTES,
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
        for r in self.probes() + self.floors():
            kind = self.kinds[r["tool"]]
            divisor = rule.FLOOR_DIVISOR if r["probe"] == FLOOR_PROBE else self.cachegrind_divisor
            size = max(parse_size(self.size_of(r["tool"])) // divisor, MIN_PROBE_INPUT_BYTES)
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
            return ((len(self.runs()) + sum(len(c["steps"]) for c in self.chain_runs())) * len(self.classes)
                    + len(self.floors()))
        except ValueError:  # a cap that is not a size: named among the problems
            return 0

    def as_json(self) -> dict[str, Any]:
        ok = not self.problems
        tasks = ok and bool(self.host)
        return {**asdict(self), "n_runs": self.n_runs(), "runs": self.runs() if ok else [],
                "probes": self.probes() if ok else [], "chain_runs": self.chain_runs() if ok else [],
                "inputs": self.inputs() if ok else [], "tasks": self.tasks() if tasks else [],
                "floor_tasks": self.floor_tasks() if tasks else [],
                "firm_tasks": self.firm_tasks() if tasks else [],
                "chain_tasks": self.chain_tasks() if tasks else []}


def input_id(kind: str, scale: int, size: str | None = None, source: str | None = None) -> str:
    """The id of the input of ``kind`` at ``scale`` (its STUDY_INPUT task and folder): the kind's
    shared baseline, or a tool's own baseline ``size``; from a data set ``source``, or synthetic."""
    return "_".join(x for x in (kind, source, size, f"x{scale}") if x)


def probe_input_id(kind: str, divisor: int, size: str | None = None, source: str | None = None) -> str:
    """The id of the reduced input of a probe: the baseline's size divided by ``divisor``."""
    return "_".join(x for x in (kind, source, size, f"div{divisor}") if x)


def plan(params: Mapping[str, Any], stub: bool = False,
         catalogue_dir: Path = catalogue.CATALOGUE_DIR, resumed: bool = False, before_sizing: bool = False) -> Plan:
    """The matrix of ``params`` (the study's Nextflow params), with every problem found
    (``resumed``: the study resumes an earlier session, which may change its plan). The schema
    checks each parameter's type and form; the steps below check what it cannot (catalogue
    names, caps against floors, devices, space, images). ``before_sizing``: the workflow's check
    of a ``--sizing auto`` study before it sizes; the sizes the record will set (inputs, the
    emulated disks' size) are not known yet, so the space they need is checked with the record."""
    params = schema.schema_text(params)
    problems: list[str] = schema.schema_problems(params)
    if before_sizing and params.get("sizing") == parse.SIZE_HERE:
        params = {**params, "sizing": parse.NO_SIZING}
    sized, sizing_info = parse.sizing_of(params, problems)
    params = {**params, **sized}
    problems += schema.path_problems(params)
    held = outdir.problem(params.get("outdir") or "results", params, resumed, params.get("replace_results") in (True, "true"))
    if held:
        problems.append(held)
    entries = {e.id: e for e in catalogue.load_all(catalogue_dir)}
    tools, skipped = parse.select_tools(str(params.get("tools", "all")), entries, stub, problems)
    caps, overrides, tool_caps = parse.caps_of(params, tools, entries, problems)
    known = [t for t in tools if t in entries and entries[t].kind == "tool"]
    memories = parse.data_memories_of(params, known, problems)
    if memories is not None:  # a sizing record's: caps are the session's floors plus these
        tool_caps, overrides = memories
        caps = [str(params.get("data_memory") or min((m for ms in tool_caps.values() for m in ms), key=parse_size,
                                                    default="0"))]
    unsized = [t for t in known if sizing_info and t not in sizing_info["tools"]]
    if unsized and not stub:
        problems.append(f"--sizing {sizing_info['path']} sized {', '.join(sizing_info['tools'])}, not "
                        f"{', '.join(unsized)}: size those too (`biossd study size --tools ...`) or leave them out of --tools")
    scale_texts, scales_of = parse.scales_of(params, known, entries, problems)
    kinds = {t: entries[t].data["input"] for t in known}
    tool_input_sizes = parse.tool_input_sizes(params, known, entries, problems)
    settings = parse.settings_of(params, known, entries, problems)
    chains, chain_steps, chain_kinds = parse.chains_of(params, entries, caps, overrides, stub, problems)
    problems += parse.unfloored_chain_tools(chains, chain_steps, known) if memories is not None and not stub else []
    for steps in chain_steps.values():
        for step in steps:
            settings.setdefault(step["tool"], parse.settings_of(params, [step["tool"]], entries, [])[step["tool"]])
    input_sizes = parse.input_sizes(params, sorted(set(kinds.values()) | set(chain_kinds.values())), problems)
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
    repeats = parse.whole(params.get("repeats"))
    classes, emulated, named, partitions = storage_classes.storage_of(params, stub, problems)
    scales = sorted({s for v in scales_of.values() for s in v} or {int(s) for s in scale_texts if parse.WHOLE_RE.match(s)})
    host = str(params.get("host") or "")
    if host and not layout.is_component(host):
        problems.append(f"--host {host!r} is not a single path component (letters, digits, '.', '_', '-'); "
                        "name the host with --host")
        host = ""
    sizes_of = {t: tool_input_sizes.get(t) or input_sizes.get(k, "") for t, k in kinds.items()}
    if not stub and not before_sizing:
        problems += resources.space_problems(params, classes, emulated, parse.largest_input(sizes_of, scales_of))
        problems += resources.image_problems(str(params.get("container_engine") or ""),
                                               [entries[t] for t in tools if t in entries])
    problems += resources.device_record_problems(params.get("device_records"), host, classes)

    return Plan(tools=tools, caps=tool_caps, floors_in_session=memories is not None, scales=scales, scales_of=scales_of,
                kinds=kinds,
                input_sizes=input_sizes, tool_input_sizes=tool_input_sizes, sources=tool_sources,
                kind_sources=kind_sources, data_dir=str(data_dir), data_manifests=data_manifests,
                settings=settings, time_limit_s=time_limit_s,
                scaling_repeats=parse.whole(params.get("scaling_repeats"), repeats),
                cachegrind_divisor=parse.whole(params.get("cachegrind_divisor")), chains=chains, chain_steps=chain_steps,
                chain_kinds=chain_kinds, chain_repeats=parse.whole(params.get("chain_repeats"), repeats) if chains else 0,
                repeats=repeats, firm_repeats=parse.whole(params.get("firm_repeats")), classes=classes, host=host,
                devices=named, partitions=partitions,
                skipped=skipped, problems=problems, sizing=sizing_info,
                input_over_cap=parse.input_over_cap(sizes_of, tool_caps), record=outdir.record(params),
                swap=parse.text_of(params.get("swap")), emulate_size=parse.text_of(params.get("emulate_size")),
                data_memory=parse.text_of(params.get("data_memory")))


