"""How long a planned study takes on each storage class, estimated before anything runs
(``biossd study plan --estimate``; ``-profile paper`` asks for it).

Lee, Min and Yoon (2015, §5.1) chose inputs that finished "in less than 72 hours" and report
runs of days on the HDD; a user should see that before starting. The estimate comes from a short
probe on this host: each tool's uncapped runs on a doubling ladder of synthetic inputs from the
sizing's smallest (its runs, :mod:`biossd.study.sizing.procedure`), stopped once a run adds
:data:`PROBE_RUN_BUDGET_S` over the tool's start-up (its quickest run on the two smallest). From the probe:

- a run's time is its start-up plus what its input adds, grown from the probe's largest sizes as
  a power of the input (``added ∝ size^p``; ``p`` fitted on the last two probe points that add
  measurably, never below linear: every record is read);
- on a class of the paper's HDD (a class named ``hdd``, or emulating a device profile), each run
  also moves its bytes at that disk's sequential rates (the probe's block reads and writes,
  grown linearly with the input);
- a run is stopped at the time limit, and a configuration whose first repeat reaches it is not
  repeated (as the study does).

What the estimate leaves out, and says so: paging under the caps (a probe runs uncapped; a run
that pages takes longer, up to the limit) and random positioning on the HDD. Its ceiling is
every run reaching the limit.
"""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any, Callable

from biossd.core.units import parse_size

#: Seconds an input may add over the tool's start-up before the probe's ladder stops.
PROBE_RUN_BUDGET_S = 2.0
#: Probe points that add less than this over start-up are timer noise, not growth.
MIN_FIT_S = 0.2
#: A run's time grows at least linearly with its input.
MIN_EXPONENT = 1.0
#: The probe's largest input: far past any size its budget could reach on a host of today.
PROBE_LADDER_MAX = "256M"
#: The disk a class named ``hdd`` is estimated on when it emulates none: the paper's Barracuda.
PAPER_HDD_PROFILE = "seagate-barracuda-7200"
MB = 1_000_000
DAY_S = 86_400.0


def probe(tools: list[str], scratch: Path, seed: int = 7, log: Callable[[str], None] = print) -> list[dict[str, Any]]:
    """Each tool's uncapped ladder runs (step, size, outcome, wall, block bytes read and written),
    in ``scratch``, a directory of its own that the caller makes, marks and removes."""
    from biossd.study import catalogue
    from biossd.study.sizing import procedure

    entries = {e.id: e for e in catalogue.load_all()}
    runner = procedure.Runner(entries, Path(scratch), seed, log)
    for tool in tools:
        heap = {"java_mem": procedure.JVM_LADDER_HEAP} if procedure.is_jvm(entries[tool]) else {}
        size, start_s = parse_size(procedure.SMALLEST_INPUT), None
        while size <= parse_size(PROBE_LADDER_MAX):
            r = runner.run(tool, size, None, heap, "probe", PROBE_RUN_BUDGET_S * 4 + procedure.LADDER_TIMEOUT_STARTUP_S)
            if r["outcome"] == "ok":
                start_s = r["wall_s"] if start_s is None else min(start_s, r["wall_s"])
                if r["wall_s"] - start_s > PROBE_RUN_BUDGET_S:
                    break
            elif r["outcome"] == "timeout":
                break
            size *= 2
    return runner.runs


def growth(runs: list[dict[str, Any]]) -> dict[str, Any] | None:
    """A tool's fitted growth from its probe runs: start-up, a reference point, the exponent and
    the block bytes per input byte; ``None`` when no probe run ended ok."""
    ok = sorted((r for r in runs if r["outcome"] == "ok"), key=lambda r: r["size_bytes"])
    if not ok:
        return None
    start_s = min(r["wall_s"] for r in ok[:2])
    grown = [r for r in ok if r["wall_s"] - start_s >= MIN_FIT_S]
    if len(grown) >= 2:
        a, b = grown[-2], grown[-1]
        p = math.log((b["wall_s"] - start_s) / (a["wall_s"] - start_s)) / math.log(b["size_bytes"] / a["size_bytes"])
        ref = b
    else:
        p = MIN_EXPONENT
        ref = grown[-1] if grown else ok[-1]
    last = ok[-1]
    return {"startup_s": round(start_s, 3), "ref_size_bytes": ref["size_bytes"],
            "ref_added_s": round(max(ref["wall_s"] - start_s, MIN_FIT_S), 3),
            "exponent": round(max(p, MIN_EXPONENT), 3),
            "read_per_input_byte": round((last.get("read_bytes") or 0) / last["size_bytes"], 4),
            "write_per_input_byte": round((last.get("write_bytes") or 0) / last["size_bytes"], 4)}


def run_s(fit: dict[str, Any], size_bytes: int, disk: dict[str, float] | None) -> float:
    """One run's estimated seconds at ``size_bytes``; ``disk``: the slow class's sequential rates
    (MB/s), whose transfer of the run's bytes is added."""
    seconds = fit["startup_s"] + fit["ref_added_s"] * (size_bytes / fit["ref_size_bytes"]) ** fit["exponent"]
    if disk:
        seconds += size_bytes * (fit["read_per_input_byte"] / (disk["seq_read_mbs"] * MB)
                                 + fit["write_per_input_byte"] / (disk["seq_write_mbs"] * MB))
    return seconds


def slow_disk(storage: str, emulate: dict[str, str]) -> dict[str, Any] | None:
    """The disk a class is estimated on: its emulated profile, the paper's HDD for a class named
    ``hdd``, else none (the host's own fast device, as the probe ran)."""
    from biossd.host.models.diskmodel import load_profile

    name = emulate.get(storage)
    name = name if name and name != "native" else PAPER_HDD_PROFILE if storage == "hdd" else None
    if not name:
        return None
    p = load_profile(name)
    return {"profile": name, "seq_read_mbs": p.seq_read_mbs, "seq_write_mbs": p.seq_write_mbs}


def of(plan: Any, runs: list[dict[str, Any]], emulate: dict[str, str]) -> dict[str, Any]:
    """The estimate of ``plan`` (a :class:`biossd.study.plan.matrix.Plan`) from the probe's ``runs``:
    per class its seconds, runs, runs at the limit and the ceiling; per tool its fit."""
    fits = {t: growth([r for r in runs if r["tool"] == t]) for t in plan.tools}
    limit = plan.time_limit_s
    classes: dict[str, Any] = {}
    for storage in plan.classes:
        disk = slow_disk(storage, emulate)
        total = ceiling = 0.0
        n = at_limit = 0
        censored: set[tuple[str, str, int]] = set()
        for r in sorted(plan.runs(), key=lambda r: r["rep"]):
            fit = fits.get(r["tool"])
            config = (r["tool"], r["mem"], r["scale"])
            if fit is None or config in censored:
                continue
            seconds = run_s(fit, parse_size(plan.size_of(r["tool"])) * r["scale"], disk)
            if limit and seconds >= limit:
                seconds = limit
                at_limit += 1
                censored.add(config)
            total += seconds
            ceiling += limit or seconds
            n += 1
        classes[storage] = {"seconds": round(total), "days": round(total / DAY_S, 2), "runs": n,
                            "runs_at_limit": at_limit, "ceiling_days": round(ceiling / DAY_S, 2),
                            "disk": disk["profile"] if disk else "the device probed"}
    return {"probe": {"run_budget_s": PROBE_RUN_BUDGET_S, "runs": runs,
                      "seconds": round(sum(r["wall_s"] for r in runs), 1)},
            "tools": fits, "classes": classes,
            "not_probed": sorted(t for t, f in fits.items() if f is None),
            "leaves_out": "paging under the caps (the probe runs uncapped) and the HDD's positioning; a run that "
                          "pages takes longer, up to the time limit (the ceiling)"}


def summary(estimate: dict[str, Any], time_limit_s: float | None) -> str:
    """The estimate in a few lines, days first."""
    limit = f"the {time_limit_s / HOUR_S:g} h limit" if time_limit_s else "no limit"
    lines = [f"estimated duration, from a probe of {len(estimate['probe']['runs'])} short runs "
             f"({estimate['probe']['seconds']:g} s) on this host:"]
    for storage, c in estimate["classes"].items():
        lines.append(f"  {storage}: about {_days(c['seconds'] / DAY_S)} for {c['runs']} run(s) on {c['disk']}, "
                     f"{c['runs_at_limit']} of them stopped at {limit}; at most {_days(c['ceiling_days'])} "
                     "if every run reached it")
    lines.append(f"  not in it: {estimate['leaves_out']}")
    if estimate["not_probed"]:
        lines.append(f"  no probe run ended ok, so not estimated: {', '.join(estimate['not_probed'])}")
    return "\n".join(lines)


HOUR_S = 3600.0
MINUTE_S = 60.0


def _days(days: float) -> str:
    seconds = days * DAY_S
    return (f"{days:.1f} days" if seconds >= DAY_S else f"{seconds / HOUR_S:.1f} hours" if seconds >= HOUR_S
            else f"{seconds / MINUTE_S:.0f} minutes" if seconds >= MINUTE_S else f"{seconds:.0f} s")

