"""The study's parameters read into what the plan needs (Lee, Min and Yoon 2015, §5.1): lists,
``tool:value`` overrides, the tools selected, their caps, scales, settings and input sizes, the
chains, and the sizing record a plan follows. A malformed value is named
among the problems, never raised."""

from __future__ import annotations

import fnmatch
import math
import re
from pathlib import Path
from typing import Any, Mapping, Sequence

from biossd.core.units import format_size, is_size_label, parse_size
from biossd.host import cgroups
from biossd.study import catalogue
from biossd.study.sizing import rule

#: The smallest cap any run may have (:data:`biossd.host.cgroups.MIN_CAP_BYTES`).
MIN_CAP_BYTES = cgroups.MIN_CAP_BYTES

#: --sizing none: the parameters as given, outside the sizing rule (the plan says so).
NO_SIZING = "none"

#: --sizing auto: the workflow sizes on this host first (`biossd study size`), then plans.
SIZE_HERE = "auto"

#: --chains none: no chained pipeline (a command line cannot give Nextflow a null).
NO_CHAINS = "none"
WHOLE_RE = re.compile(r"^[1-9]\d*$")


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
    """The smallest cap ``entry`` may run under (:meth:`biossd.study.catalogue.Entry.min_cap_bytes`)."""
    return entry.min_cap_bytes()


def chains_of(params: Mapping[str, Any], entries: Mapping[str, catalogue.Entry], caps: list[str],
            overrides: list[tuple[str, list[str]]], stub: bool, problems: list[str]
            ) -> tuple[list[str], dict[str, list[dict[str, Any]]], dict[str, str]]:
    """--chains (``all``, pipeline ids, or :data:`NO_CHAINS`): the pipelines with a chain, each step's cap (its
    tool's smallest by --tool_caps, else --mem_caps: the cap of its baseline runs) and the
    chain's input kind. A step whose tool cannot run here is a problem (not in a stub-run)."""
    from biossd.study import chain

    given = csv_list(params.get("chains"))
    with_chain = [e.id for e in entries.values() if e.kind == "pipeline" and e.data.get("chain")]
    names = with_chain if given == ["all"] else [] if given == [NO_CHAINS] else given
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


def unfloored_chain_tools(chains: list[str], chain_steps: Mapping[str, list[dict[str, Any]]],
                          tools: Sequence[str]) -> list[str]:
    """With floors measured in the session (docs/study.md, "The floor is measured where the study
    runs") a chain's step is capped at its tool's floor plus M, and only the tools of --tools have
    floor runs: a chain that runs another tool is a problem, said with what to do."""
    unfloored = sorted({step["tool"] for steps in chain_steps.values() for step in steps} - set(tools))
    if not unfloored:
        return []
    return [f"--chains {','.join(chains)} runs {', '.join(unfloored)}, which --tools leaves out: with floors measured "
            "in the session, only the tools of --tools have floor runs to cap them by; add them to --tools, or run no "
            f"chain (--chains {NO_CHAINS})"]


def input_sizes(params: Mapping[str, Any], kinds: list[str], problems: list[str]) -> dict[str, str]:
    """Each kind's baseline input size: its entry in --input_sizes (KIND=SIZE,...), else --input_size."""
    named = parse_pairs(params.get("input_sizes"), "input_sizes", problems)
    from biossd.study.inputs.data import KINDS

    problems += [f"--input_sizes names '{k}', which is not an input kind ({', '.join(sorted(KINDS))})"
                 for k in sorted(named) if k not in KINDS]
    problems += [f"--input_sizes: '{v}' for '{k}' is not a size like 8M" for k, v in sorted(named.items())
                 if not is_size_label(v)]
    return {k: named.get(k, str(params.get("input_size"))) for k in kinds}


def tool_input_sizes(params: Mapping[str, Any], tools: list[str], entries: Mapping[str, catalogue.Entry],
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


def settings_of(params: Mapping[str, Any], tools: list[str], entries: Mapping[str, catalogue.Entry],
              problems: list[str]) -> dict[str, dict[str, str]]:
    """Each tool's memory settings under the sizing rule (biossd.study.sizing.rule): its paper-era
    defaults divided by D = 1 GB / --data_memory (M; unset: the defaults), and its JVM heap from
    --java_heaps PATTERN=SIZE[;...] (else the catalogue's default)."""
    divisor = 1.0
    if params.get("data_memory"):
        text = str(params["data_memory"])
        if is_size_label(text) and parse_size(text) > 0:
            divisor = rule.memory_divisor(parse_size(text))
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
        out[tool] = rule.settings(entry.memory_options(), divisor, {n: heap for n in names} if heap else None)
    return out


def largest_input(sizes_of: Mapping[str, str], scales_of: Mapping[str, list[int]]) -> int:
    """Bytes of the largest input any run reads (its tool's baseline size times its largest scale)."""
    largest = 0
    for tool, size in sizes_of.items():
        try:
            largest = max(largest, parse_size(size) * max(scales_of.get(tool) or [1]))
        except (KeyError, ValueError):
            continue  # named by the checks of the sizes
    return largest


def text_of(value: Any) -> str | None:
    """A parameter's text, or None when unset."""
    return None if value in (None, "") else str(value)


def sizing_of(params: Mapping[str, Any], problems: list[str]) -> tuple[dict[str, str], dict[str, Any] | None]:
    """--sizing FILE: the parameters of a record of `biossd study size` (checked,
    :func:`biossd.study.sizing.procedure.load`) replace the study's own, and the plan names the record
    (--memory_factor k: derived with k times its data memory, the rule's sensitivity to D);
    --sizing none (or unset) keeps the parameters as given."""
    from biossd.study.sizing import procedure
    from biossd.study.sizing import record as sizing_record

    value = params.get("sizing")
    if value in (None, "", NO_SIZING):
        return {}, None
    if value == SIZE_HERE:
        problems.append("--sizing auto is the workflow's: it runs `biossd study size` on this host first and plans "
                        "with its record; to plan by hand, give that record (--sizing sizing.json) or none")
        return {}, None
    try:
        rec = procedure.load(Path(str(value)))
    except sizing_record.SizingError as err:
        problems.append(str(err))
        return {}, None
    factor = float(params.get("memory_factor") or 1)
    derived = rec["parameters"] if factor == 1 else procedure.parameters(rec, memory_factor=factor)
    sized = {name: v for name, v in derived.items() if v is not None}
    return sized, {"memory_factor": factor, "path": str(value), "sha256": sizing_record.digest(Path(str(value))),
                   "host": rec["host"].get("hostname"), "created": rec.get("created"),
                   "run_budget_s": rec["budget"]["run_s"], "tools": rec["tools"], "parameters": sorted(sized)}


def input_over_cap(sizes_of: Mapping[str, str], caps: Mapping[str, list[str]]) -> dict[str, float]:
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


def whole(value: Any, default: int = 0) -> int:
    """A count parameter (the schema has checked it is a whole number >= 1), else ``default``
    (unset; or malformed, which the schema has reported)."""
    return int(value) if value is not None and WHOLE_RE.match(str(value)) else default


def caps_of(params: Mapping[str, Any], tools: Sequence[str], entries: Mapping[str, catalogue.Entry],
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


def data_memories_of(params: Mapping[str, Any], tools: Sequence[str], problems: list[str]
                     ) -> tuple[dict[str, list[str]], list[tuple[str, list[str]]]] | None:
    """--tool_data_memory PATTERN=SIZE[,SIZE...][;...] (a sizing record's): each tool's data
    memories M_t, its caps being the floor F its study measures in its session plus each (docs/
    study.md, "The floor is measured where the study runs"), and the patterns (for the chains'
    steps); then --mem_caps and --tool_caps are not used. ``None`` when not given (the caps as
    given)."""
    value = params.get("tool_data_memory")
    if value in (None, ""):
        return None
    overrides = parse_tool_caps(value, problems, "tool_data_memory", "bwa=6554K;gatk_*=1639K,6554K,13108K")
    out: dict[str, list[str]] = {}
    default = [str(params["data_memory"])] if params.get("data_memory") else []
    for tool in tools:
        # A tool the record did not size runs under M (a -stub-run's; a real study names it a problem).
        own = next((m for p, m in overrides if fnmatch.fnmatchcase(tool, p)), None) or default
        if not own:
            problems.append(f"--tool_data_memory gives no data memory for {tool}: size it too (`biossd study size`) "
                            "or leave it out of --tools")
            continue
        bad = [m for m in own if not is_size_label(m)]
        if bad:
            problems.append(f"--tool_data_memory: '{bad[0]}' for {tool} is not a size like 6554K")
            continue
        out[tool] = own
    return out, overrides


#: The largest replication of a baseline input: Lee, Min and Yoon (2015) grew inputs up to 16
#: copies (§3.4, Fig. 8); a scale above this is a typo, and would fill any disk.
MAX_SCALE = 1024


def scales_of(params: Mapping[str, Any], known: Sequence[str], entries: Mapping[str, catalogue.Entry],
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
                                 if not WHOLE_RE.match(s)) if p not in problems]
        problems += [p for p in (f"Scale '{s}' in {where} is above {MAX_SCALE}: the input would be {s} copies of its "
                                 "baseline; grow the baseline (--input_size) instead" for s in texts
                                 if WHOLE_RE.match(s) and int(s) > MAX_SCALE) if p not in problems]
    return scale_texts, {t: sorted({int(s) for s in v if WHOLE_RE.match(s)}) for t, v in scale_texts_of.items()}
