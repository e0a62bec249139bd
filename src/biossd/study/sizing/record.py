"""A sizing record (``sizing.json``, ``biossd study size``'s output) as a file: its format, the
rule's constants and the study parameters it sets, written, read, checked against this code's
rule, summarised, and compared between hosts (Lee, Min and Yoon 2015, §5.1's caps and inputs,
scaled to this host by :mod:`biossd.study.sizing.procedure`)."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path
from typing import Any, Callable

from biossd.core.errors import BiossdError
from biossd.core.files import atomic_write_text
from biossd.core.units import format_size, parse_size
from biossd.study.sizing import rule

#: The record's format; a study refuses any other (``/1`` carried caps; ``/2`` the data memories,
#: each study measuring its own floors).
FORMAT = "biossd-sizing/2"
#: Every format of ``biossd study size``'s records.
FORMAT_FAMILY = "biossd-sizing/"

#: The rule's constants a record must share with this code to be used.
RULE_CONSTANTS = ("PAPER_MEMORY_BYTES", "INPUT_PER_MEMORY", "FIG9_MEMORY_PER_INPUT", "FLOOR_DIVISOR",
                  "FLOOR_REPEATS", "FLOOR_WARMUPS", "RETIME_WITHIN", "RETIME_REPEATS", "FINE_STEP",
                  "TIME_LIMIT_PER_INPUT_BUDGET", "CENSORED_MIN_SPEEDUP", "HEAP_MARGIN", "SWAP_SIZE")

#: The study parameters a sizing record sets (nextflow_schema.json names each).
PARAMETERS = ("tool_data_memory", "tool_input_sizes", "input_sizes", "data_memory", "java_heaps", "time_limit",
              "emulate_size", "swap")


class SizingError(BiossdError):
    """A sizing record that cannot be used; the message names the file and what is wrong."""


def rule_constants() -> dict[str, Any]:
    """The constants of :mod:`biossd.study.sizing.rule` that decide a record's parameters."""
    return {name: _plain(getattr(rule, name)) for name in RULE_CONSTANTS}


def _plain(value: Any) -> Any:
    return list(value) if isinstance(value, tuple) else value


#: Where a study that sizes itself (``--sizing auto``) keeps its record, in its result folder.
STUDY_RECORD = Path("pipeline_info") / "sizing.json"


def study_place(outdir: Path, work_dir: Path, session: str, replacing: bool) -> dict[str, Any]:
    """Where a study's ``--sizing auto`` record lives, and whether an earlier session's is reused:
    in the result folder's ``pipeline_info/`` (a resumed study reuses the record there), except
    for a study that replaces the folder's results (``--replace_results``), which neither reuses
    the record there nor writes into a folder it may yet set aside: it measures into its work
    directory, and the study copies the record into the new ``pipeline_info/`` with the plan.
    Returns ``record``, ``log`` (the sizing's progress) and ``reuse``."""
    folder = (Path(work_dir) / f"biossd-sizing-{session}") if replacing else Path(outdir) / STUDY_RECORD.parent
    record = folder / STUDY_RECORD.name
    return {"record": str(record), "log": str(folder / "sizing.log"), "reuse": record.is_file() and not replacing}


def write(rec: dict[str, Any], path: Path) -> Path:
    """Write the record whole (a temporary name, then renamed)."""
    return atomic_write_text(Path(path), json.dumps(rec, indent=2) + "\n")


def digest(path: Path) -> str:
    """The record's SHA-256: what a matched twin's report compares."""
    return hashlib.sha256(Path(path).read_bytes()).hexdigest()


def summary(rec: dict[str, Any]) -> str:
    """One paragraph: the host, the budget, M and D, and each tool's input, floor and cap."""
    chose, params = rec["chose"], rec["parameters"]
    memories = dict(pair.split("=", 1) for pair in params["tool_data_memory"].split(";"))
    lines = [f"sizing of {rec['host'].get('hostname')} ({rec['created']}): {rec['budget']['run_s']:g} s a run, "
             f"time limit {rec['budget']['time_limit_s']:g} s; M = {format_size(chose['data_memory'])}, "
             f"D = 1 GB / M = {chose['memory_divisor']:.1f}"]
    for tool in sorted(chose["inputs"]):
        lines.append(f"  {tool:<22} input {format_size(chose['inputs'][tool]):>7}  F here {format_size(chose['floors'][tool]):>7}"
                     f"  data memory {memories[tool]}  data/M uncapped {chose['data_over_m'].get(tool, float('nan')):.2f}")
    for tool, why in chose.get("left_out", {}).items():
        lines.append(f"  {tool:<22} left out: {why}")
    return "\n".join(lines)


def data_over_m(rec: dict[str, Any] | None) -> dict[str, float]:
    """Each tool's uncapped data part over M from a record (also from a record that
    ``benchmarks/sizing.py`` wrote before this command, which kept it at the top level)."""
    if not rec:
        return {}
    return dict((rec.get("chose") or {}).get("data_over_m") or rec.get("data_over_m") or {})


def capped_timeouts(rec: dict[str, Any] | None, tool: str) -> list[int]:
    """The inputs (bytes) of ``tool`` whose capped run timed out in the sizing, largest first."""
    sizes = set()
    for r in (rec or {}).get("runs") or []:
        if r.get("tool") == tool and r.get("step") == "capped" and r.get("outcome") == "timeout":
            size = r.get("size_bytes", r.get("size"))
            sizes.add(int(size) if isinstance(size, (int, float)) else parse_size(str(size)))
    return sorted(sizes, reverse=True)


def differences(records: dict[str, dict[str, Any] | None]) -> list[str]:
    """What differs between the sizings of result sets that one report would compare (by result
    set name): a matched twin runs with the first host's record, so its parameters are the same."""
    named = {root: (rec or {}).get("parameters") if (rec or {}).get("format") == FORMAT else None
             for root, rec in records.items()}
    if len({json.dumps(p, sort_keys=True) for p in named.values()}) <= 1:
        return []
    (first, ref), *others = named.items()
    out = []
    for root, params in others:
        if params is None or ref is None:
            unsized = root if params is None else first
            out.append(f"{unsized} has no sizing record of `biossd study size` (pipeline_info/sizing.json)")
            continue
        for name in PARAMETERS:
            if params.get(name) != ref.get(name):
                out.append(f"{name}: {ref.get(name)!r} in {first}, {params.get(name)!r} in {root}")
    return out


def provenance(rec: dict[str, Any] | None) -> dict[str, Any]:
    """How a result set was sized, for its methods: the per-run budget, the time limit, the host
    and the command, from its record (a record of ``benchmarks/sizing.py`` before this command
    kept only its budget: the rule's constants then)."""
    if rec and str(rec.get("format", "")).startswith(FORMAT_FAMILY):
        earlier = "" if rec.get("format") == FORMAT else f" ({rec.get('format')}: an earlier rule's record, with its caps)"
        return {"run_s": rec["budget"]["run_s"], "time_limit_s": rec["budget"]["time_limit_s"],
                "host": rec["host"].get("hostname"), "created": rec.get("created"), "by": "biossd study size" + earlier}
    run_s = float((rec or {}).get("budget_s") or rule.INPUT_BUDGET_S)
    return {"run_s": run_s, "time_limit_s": rule.TIME_LIMIT_S, "host": None, "created": None,
            "by": "benchmarks/sizing.py"}


def cap_problems(rec: dict[str, Any], min_cap_bytes: Callable[[str], int]) -> list[str]:
    """Caps that a record's floors and data memories would give below what a run of the tool may
    have (``min_cap_bytes`` of its id: the study's, :meth:`biossd.study.catalogue.Entry.min_cap_bytes`):
    a budget so small that M leaves a tool less than a run needs. (A study's caps are its own
    floors plus M_t; the record's floors stand in for them here.)"""
    out = []
    params = rec["parameters"]
    for pair in params["tool_data_memory"].split(";"):
        tool, memories = pair.split("=", 1)
        least = min_cap_bytes(tool)
        floor = rec["chose"]["floors"].get(tool, 0)
        low = [format_size(rule.cap_bytes(floor, parse_size(x))) for x in memories.split(",")
               if rule.cap_bytes(floor, parse_size(x)) < least]
        if low:
            out.append(f"{tool}'s cap {low[0]} is below the {format_size(least)} a run of it needs: the budget "
                       f"gives too small a data memory M ({params['data_memory']}); give a larger budget")
    return out
