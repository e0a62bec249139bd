"""The sizing rule measured on the host under study (``biossd study size``): the procedure that
turns the rule of :mod:`biossd.study.sizing.rule` into a study's parameters, and the record it writes.

Every step is a profiled run (``biossd catalogue stage`` + ``biossd profile``, as the study's
PROFILE task does it) on a scratch directory of the host's fast class, the page cache dropped:

1. **Inputs.** For each input group (the GATK steps share one input, and the aligners of Fig. 1
   another; every other tool is its own group), a doubling ladder from ``LADDER_MIN``, uncapped:
   the group's input is the largest size at which each of its tools' runs adds at most the
   per-run budget over its run at 1/FLOOR_DIVISOR of that size (its start-up excluded); a step
   within RETIME_WITHIN of the budget, or over it, is timed RETIME_REPEATS times (its reference
   too) and the medians decide, and past the first doubling over the budget the step FINE_STEP below it is
   tried; given a reference record (``--reference``), a median within RETIME_WITHIN of the budget
   keeps the reference's call on the step, and every step above the reference's input is timed
   RETIME_REPEATS times. JVM tools run the ladder with a generous heap.
2. **Heaps.** For each JVM tool, the smallest heap on a doubling ladder that completes its input
   (and, for the record, the smallest that completes 1/FLOOR_DIVISOR of it); its heap size is
   HEAP_MARGIN times that, not pre-touched.
3. **M and D.** M = median of the non-GATK inputs / INPUT_PER_MEMORY; the GATK steps' M is their
   input / INPUT_PER_MEMORY; AmpliconNoise's input is the paper's 2,000-read baseline scaled by
   √(M / 1 GB).
4. **Floors.** Each tool's peak resident memory (every process of the run, from its cgroup)
   uncapped on 1/FLOOR_DIVISOR of its input, with the rule's settings: FLOOR_WARMUPS warm-up
   (its code read into the page cache, charged to its own cgroup), then the median of
   FLOOR_REPEATS runs. A study measures its own (the sizing record carries no caps).
5. **Time.** Each tool capped (F + M, with swap) on the fast class: an input whose run exceeds
   the time limit / CENSORED_MIN_SPEEDUP (by the median of RETIME_REPEATS within RETIME_WITHIN
   of it or over it) steps down by FINE_STEP until it fits.
6. **Data.** Each tool uncapped at its final input: its peak resident memory less F, over M (the
   regime's data / M, which a capped run cannot show).

The record (:data:`FORMAT`) holds the budget, the rule's constants, the host's facts and its
scratch device, every run, what each step chose and the study parameters those choices give
(:func:`parameters`). A study takes it whole with ``--sizing``; :func:`check` refuses a record
whose parameters do not follow from its own measurements, or that an older rule wrote.
"""

from __future__ import annotations

import datetime as dt
import json
import math
import statistics
from pathlib import Path
from typing import Any, Callable

from biossd.core.units import format_size, parse_size
from biossd.study.sizing import record as sizing_record
from biossd.study.sizing import rule
from biossd.study.sizing import run as sizing_run
from biossd.study.sizing.record import FORMAT, PARAMETERS, SizingError, rule_constants
from biossd.study.sizing.reference import Reference, kept_input
from biossd.study.sizing.run import Runner

#: A JVM tool's heap while its input ladder runs (step 1), before its own heap is measured.
JVM_LADDER_HEAP = "1G"
#: An input over the limit / 2 capped steps down by FINE_STEP until it fits, at most this many times.
MAX_STEPS_DOWN = 16
#: The smallest input a floor or a small-heap run is made of.
SMALLEST_INPUT = "16K"
#: An uncapped ladder run is stopped after this many budgets (plus the start-up allowance below):
#: far past any size the ladder could choose.
LADDER_TIMEOUT_BUDGETS = 4
LADDER_TIMEOUT_STARTUP_S = 30.0
#: The time limit is kept to milliseconds (the study's --time_limit is its text).
TIME_LIMIT_DECIMALS = 3
#: The device profile whose stroke the emulated slow class spans (``emulate_size`` = its capacity / D).
DEFAULT_SLOW_PROFILE = "seagate-barracuda-7200"


def is_jvm(entry) -> bool:
    return any(o["rule"] == "heap" for o in entry.memory_options())


def group_of(tool: str) -> str:
    """The input group of ``tool``: the GATK steps share one input, Fig. 1's aligners another."""
    return "gatk" if rule.is_gatk(tool) else "fig1" if tool in rule.FIG1_TOOLS else tool


def measure(tools: list[str], run_budget_s: float, scratch: Path, seed: int = 7,
            ladder_max: str = rule.LADDER_MAX, log: Callable[[str], None] = print,
            reference: Reference | None = None) -> dict[str, Any]:
    """Measure the sizing rule for ``tools`` (catalogue ids) within ``run_budget_s`` a run, in
    ``scratch``, a directory of its own on the fast class's disk that the caller makes, marks and
    removes (:func:`biossd.measure.rundir.scratch`); returns the record (without host facts:
    :func:`record` adds them). Given a ``reference`` record
    (:func:`biossd.study.sizing.reference.of_record`), a tool timed at the reference's speed where the
    reference chose keeps its call (:func:`biossd.study.sizing.rule.same_speed`), and elsewhere a
    timing within RETIME_WITHIN of its bound keeps the reference's call on that step
    (:func:`biossd.study.sizing.rule.over_budget`)."""
    from biossd.study import catalogue

    entries = {e.id: e for e in catalogue.load_all()}
    unknown = [t for t in tools if t not in entries or entries[t].kind != "tool"]
    if unknown:
        raise SizingError(f"biossd study size: --tools names no catalogue tool: {', '.join(unknown)}")
    absent = [t for t in tools if entries[t].installed_version() is None]
    if absent:  # else every run of the tool fails, and the ladder leaves it out with a log line only
        raise SizingError(f"biossd study size: not installed on this host: {', '.join(absent)} (its version command "
                          "finds no version); install the tools with `make install`, or leave them out of --tools")
    limit_s = round(rule.time_limit_s(run_budget_s), TIME_LIMIT_DECIMALS)
    ladder_timeout_s = LADDER_TIMEOUT_BUDGETS * run_budget_s + LADDER_TIMEOUT_STARTUP_S
    smallest = parse_size(SMALLEST_INPUT)
    runner = Runner(entries, Path(scratch), seed, log)
    heap_of = {t: {"java_mem": JVM_LADDER_HEAP} for t in tools if is_jvm(entries[t])}

    speeds: dict[str, dict[str, float | None]] = {"input": {}, "capped": {}}
    chosen, left_out = _inputs_per_group(runner, tools, heap_of, run_budget_s, parse_size(ladder_max),
                                         ladder_timeout_s, log, reference, speeds["input"])
    heaps, smallest_heaps = _fixed_heaps(runner, chosen, heap_of, smallest, ladder_timeout_s, log)

    # 3. M and D; the paper's stated baselines from M.
    others = [chosen[t] for t in chosen if not rule.is_gatk(t)]
    if not others:
        raise SizingError("biossd study size: no tool outside GATK was sized; M is the median of their inputs "
                          "(give --tools with at least one of them)")
    ladder_inputs = dict(chosen)  # M is taken from these, before any is halved (step 5)
    m = rule.data_memory_bytes(others)
    d = rule.memory_divisor(m)
    for tool in tools:
        n = rule.baseline_reads(tool, m)
        if n is not None:
            chosen[tool] = _baseline_bytes(entries[tool], n)
            log(f"==> input of {tool}: {n} reads, {format_size(chosen[tool])}")
    gatk = [chosen[t] for t in chosen if rule.is_gatk(t)]
    m_gatk = rule.data_memory_bytes(gatk[:1]) if gatk else None

    def settings_of(tool: str) -> dict[str, str]:
        return rule.settings(entries[tool].memory_options(), d, heap_of.get(tool, {}))

    def memory_of(tool: str) -> int:
        return m_gatk if rule.is_gatk(tool) and m_gatk else m

    floors, floor_sds = _floors(runner, chosen, settings_of, smallest, ladder_timeout_s)
    _fit_time_limit(runner, chosen, floors, floor_sds, memory_of, settings_of, limit_s, log,
                    lambda tool, size: floor_at(runner, tool, size, settings_of(tool), smallest, ladder_timeout_s, 0),
                    reference, speeds["capped"])

    # 6. The regime's data / M: uncapped at the final input.
    data_over_m: dict[str, float] = {}
    for tool in sorted(chosen):
        r = runner.run(tool, chosen[tool], None, settings_of(tool), "data", ladder_timeout_s)
        if r["outcome"] == "ok" and r["resident_peak_bytes"] is not None:
            data_over_m[tool] = round((r["resident_peak_bytes"] - floors[tool]) / memory_of(tool), 3)
    runs = runner.runs

    kinds = {t: entries[t].data["input"] for t in chosen}
    chose = {"inputs": {t: chosen[t] for t in sorted(chosen)}, "ladder_inputs": ladder_inputs, "kinds": kinds,
             "floors": {t: floors[t] for t in sorted(floors)}, "floor_sds": {t: floor_sds[t] for t in sorted(floor_sds)},
             "heaps": heaps, "smallest_heaps": smallest_heaps,
             "data_memory": m, "data_memory_gatk": m_gatk, "memory_divisor": d, "data_over_m": data_over_m,
             "left_out": left_out, **({"reference_speed": speeds} if reference is not None else {})}
    return {"format": FORMAT, "rule": rule_constants(),
            "budget": {"run_s": run_budget_s, "time_limit_s": limit_s}, "tools": sorted(tools), "seed": seed,
            "chose": chose, "runs": runs}


def _floors(runner: Runner, chosen: dict[str, int], settings_of: Callable[[str], dict[str, str]], smallest: int,
            timeout_s: float) -> tuple[dict[str, int], dict[str, float]]:
    """Step 4: each tool's floor F and σ_F, with the rule's settings: FLOOR_WARMUPS warm-up runs
    (step ``warmup``: the code read, not counted), then the median of FLOOR_REPEATS (``floor``)."""
    floors: dict[str, int] = {}
    sds: dict[str, float] = {}
    for tool in sorted(chosen):
        floors[tool], sds[tool] = floor_at(runner, tool, chosen[tool], settings_of(tool), smallest, timeout_s,
                                           rule.FLOOR_WARMUPS)
    return floors, sds


def floor_size(input_bytes: int, smallest: int) -> int:
    """The input a floor is measured on: 1/FLOOR_DIVISOR of the tool's, at least ``smallest``."""
    return max(input_bytes // rule.FLOOR_DIVISOR, smallest)


def floor_at(runner: Runner, tool: str, input_bytes: int, settings: dict[str, str], smallest: int, timeout_s: float,
             warmups: int) -> tuple[int, float]:
    """F and σ_F of ``tool`` at ``input_bytes``: ``warmups`` warm-up runs, then the median of
    FLOOR_REPEATS uncapped runs on 1/FLOOR_DIVISOR of it, as a study measures it."""
    size = floor_size(input_bytes, smallest)
    peaks = []
    for i in range(warmups + rule.FLOOR_REPEATS):
        step = sizing_run.WARMUP_STEP if i < warmups else "floor"
        r = runner.run(tool, size, None, settings, step, timeout_s)
        if r["resident_peak_bytes"] is None:
            raise SizingError(f"biossd study size: {tool}'s floor run has no resident memory "
                              "(run as root, on a host with a memory cgroup)")
        if step == "floor":
            peaks.append(r["resident_peak_bytes"])
    return rule.floor_of(peaks)


def _inputs_per_group(runner: Runner, tools: list[str], heap_of: dict, budget_s: float, ladder_max: int,
                      timeout_s: float, log: Callable[[str], None], reference: Reference | None,
                      speeds: dict[str, float | None]) -> tuple[dict[str, int], dict[str, str]]:
    """Step 1: each input group's size, the largest on the ladder that ends ok within the budget
    (the paper's stated baselines are left to step 3); and the tools left out, with why. Given a
    ``reference``, a group whose every member runs at the reference's speed at the reference's
    input keeps it (:func:`biossd.study.sizing.reference.kept_input`; each ratio in ``speeds``)."""
    groups: dict[str, list[str]] = {}
    for tool in sorted(tools):
        if tool not in rule.PAPER_BASELINE_READS:
            groups.setdefault(group_of(tool), []).append(tool)
    chosen: dict[str, int] = {}
    left_out: dict[str, str] = {}
    for key, members in groups.items():
        walls: dict[str, dict[int, list[float | None]]] = {t: {} for t in members}
        best = None
        if reference is not None:
            best, ratios = kept_input(reference, members, lambda t, size: _timed(
                runner, walls, heap_of, timeout_s, t, size, rule.RETIME_REPEATS), log)
            speeds.update(ratios)
        if best is None:
            best = _ladder(runner, members, heap_of, budget_s, ladder_max, timeout_s,
                           next((reference.ladder_input(t) for t in members if reference and reference.ladder_input(t)),
                                None), walls)
        if best is None:
            for tool in members:
                left_out[tool] = "no size on the ladder ends ok within the budget"
            log(f"==> {key}: no size on the ladder ends ok within the budget; left out of the sizing")
            continue
        chosen.update({tool: best for tool in members})
        log(f"==> input of {key}: {format_size(best)}")
    return chosen, left_out


def _fixed_heaps(runner: Runner, chosen: dict[str, int], heap_of: dict, smallest: int, timeout_s: float,
                 log: Callable[[str], None]) -> tuple[dict[str, str], dict[str, dict[str, str]]]:
    """Step 2: each JVM tool's fixed heap, a margin over the smallest that completes its input
    (``heap_of`` is updated to it); and the smallest heaps measured."""
    heaps: dict[str, str] = {}
    smallest_heaps: dict[str, dict[str, str]] = {}
    for tool in sorted(t for t in heap_of if t in chosen):
        heap = _smallest_heap(runner, tool, chosen[tool], "heap", timeout_s)
        small = _smallest_heap(runner, tool, max(chosen[tool] // rule.FLOOR_DIVISOR, smallest), "heap64", timeout_s)
        smallest_heaps[tool] = {"input": format_size(heap), "input_over_floor_divisor": format_size(small)}
        heaps[tool] = format_size(rule.HEAP_MARGIN * heap)
        heap_of[tool] = {"java_mem": heaps[tool]}
        log(f"==> heap of {tool}: {heaps[tool]} ({rule.HEAP_MARGIN} x {format_size(heap)}; "
            f"{format_size(small)} completes 1/{rule.FLOOR_DIVISOR} of the input)")
    return heaps, smallest_heaps


def _fit_time_limit(runner: Runner, chosen: dict[str, int], floors: dict[str, int], floor_sds: dict[str, float],
                    memory_of: Callable[[str], int], settings_of: Callable[[str], dict[str, str]], limit_s: float,
                    log: Callable[[str], None], measure_floor: Callable[[str, int], tuple[int, float]],
                    reference: Reference | None, speeds: dict[str, float | None] | None = None) -> None:
    """Step 5: each tool's capped run within the limit / CENSORED_MIN_SPEEDUP (a run within
    RETIME_WITHIN of it, or over it, decided by the median of RETIME_REPEATS), else its input stepped down by
    FINE_STEP (in ``chosen``), unless the input is shared or the paper's; a stepped-down input's
    floor is measured again at it (``measure_floor``: in ``floors`` and ``floor_sds``), as the study will
    measure it, so that the capped run has the cap the study's will. Given a ``reference``, every
    capped step that ends is timed RETIME_REPEATS times; one the reference timed too, at its speed
    (:func:`biossd.study.sizing.rule.same_speed`, the ratio in ``speeds``), keeps the reference's
    call; elsewhere a run within RETIME_WITHIN of the bound keeps it."""
    from biossd.study import catalogue

    bound_s = limit_s / rule.CENSORED_MIN_SPEEDUP
    for tool in sorted(chosen):
        cap = max(rule.cap_bytes(floors[tool], memory_of(tool)), catalogue.get(tool).min_cap_bytes())
        for _ in range(MAX_STEPS_DOWN):
            runs = [runner.run(tool, chosen[tool], cap, settings_of(tool), "capped", limit_s)]
            if runs[0]["outcome"] in ("ok", "oom", "failed") and (
                    reference is not None or rule.needs_retiming(runs[0]["wall_s"], bound_s)):
                runs += [runner.run(tool, chosen[tool], cap, settings_of(tool), "capped", limit_s)
                         for _ in range(rule.RETIME_REPEATS - 1)]
            walls = [math.inf if r["outcome"] == "timeout" else r["wall_s"] for r in runs]
            ended = sum(r["outcome"] in ("ok", "oom", "failed") for r in runs) * 2 > len(runs)
            final = reference.final_input(tool) if reference is not None else None
            keeps = None if final is None else chosen[tool] <= final
            ratio = reference.speed_ratio(tool, chosen[tool], "capped", statistics.median(walls)) if final else None
            if speeds is not None and final is not None:
                speeds.setdefault(tool, ratio)
            if rule.same_speed(ratio) and keeps:
                log(f"==> {tool}: capped at {format_size(chosen[tool])}, the reference's input, at its speed; kept")
                break
            if ended and not rule.same_speed(ratio) and rule.fits_time_limit(statistics.median(walls), limit_s, keeps):
                break
            if group_of(tool) != tool or tool in rule.PAPER_BASELINE_READS:
                log(f"==> {tool}: over the limit / {rule.CENSORED_MIN_SPEEDUP:g} capped, but its input is "
                    "shared or the paper's; kept")
                break
            before = chosen[tool]
            chosen[tool] = rule.fine_step(chosen[tool])
            if floor_size(chosen[tool], parse_size(SMALLEST_INPUT)) != floor_size(before, parse_size(SMALLEST_INPUT)):
                floors[tool], floor_sds[tool] = measure_floor(tool, chosen[tool])
            cap = max(rule.cap_bytes(floors[tool], memory_of(tool)), catalogue.get(tool).min_cap_bytes())
            log(f"==> {tool}: over the limit / {rule.CENSORED_MIN_SPEEDUP:g} capped: input stepped down to "
                f"{format_size(chosen[tool])}, floor {format_size(floors[tool])}")


def _timed(runner: Runner, walls: dict[str, dict[int, list[float | None]]], heap_of: dict, timeout_s: float,
           tool: str, size: int, times: int = 1) -> float | None:
    """The median wall time of ``tool`` at ``size`` over at least ``times`` uncapped runs, kept in
    ``walls`` (a timeout is infinite); ``None`` when none ended ok (a failure: too small an input
    for the tool, e.g. ABySS's distance estimate with few pairs)."""
    runs = walls[tool].setdefault(size, [])
    while len(runs) < times:
        r = runner.run(tool, size, None, heap_of.get(tool, {}), "input", timeout_s)
        runs.append(math.inf if r["outcome"] == "timeout" else r["wall_s"] if r["outcome"] == "ok" else None)
    done = [w for w in runs if w is not None]
    return statistics.median(done) if done else None


def _ladder(runner: Runner, members: list[str], heap_of: dict, budget_s: float, ladder_max: int,
            timeout_s: float, reference_input: int | None = None,
            walls: dict[str, dict[int, list[float | None]]] | None = None) -> int | None:
    """Step 1 for one group: the largest step within the budget for every member — doubling, then
    the FINE_STEP below the first doubling over it; a step within RETIME_WITHIN of the budget, or over it, is
    decided by the medians of RETIME_REPEATS timings of it and of its reference run; given a
    reference record's choice (``reference_input``), a median within RETIME_WITHIN of the budget
    keeps that record's call on the step. ``walls``: timings made before (:func:`_timed`)."""
    walls = walls if walls is not None else {t: {} for t in members}
    least = parse_size(rule.LADDER_MIN)

    def timed(tool: str, size: int, times: int = 1) -> float | None:
        return _timed(runner, walls, heap_of, timeout_s, tool, size, times)

    def added(tool: str, size: int) -> float | None:
        """What ``size`` adds over its reference (the first size from 1/FLOOR_DIVISOR of it that
        ended ok); re-timed next to the budget."""
        wall = timed(tool, size)
        low = max(size // rule.FLOOR_DIVISOR, least)
        timed(tool, low)
        ref = next((k for k in sorted(walls[tool]) if k >= low and timed(tool, k) is not None), None)
        if wall is None or ref is None or ref == size:
            return None
        excess = wall - timed(tool, ref)
        if rule.needs_retiming(excess, budget_s, reference_input is not None and size > reference_input):
            excess = timed(tool, size, rule.RETIME_REPEATS) - timed(tool, ref, rule.RETIME_REPEATS)
        return excess

    def step(size: int) -> tuple[bool, bool]:
        """Whether ``size`` is over the budget for any member, and whether every member ended ok."""
        over, all_ok = False, True
        for tool in members:
            excess = added(tool, size)
            all_ok &= timed(tool, size) is not None
            keeps = None if reference_input is None else size <= reference_input
            over |= excess is not None and rule.over_budget(excess, budget_s, keeps)
        return over, all_ok

    size, best = least, None
    while size <= ladder_max:
        over, all_ok = step(size)
        if over:
            fine = rule.fine_step(size)
            if best is not None and best < fine < size:
                fine_over, fine_ok = step(fine)
                if not fine_over and fine_ok:
                    best = fine
            break
        if all_ok:
            best = size
        size *= 2
    return best


def _smallest_heap(runner: Runner, tool: str, size: int, step: str, timeout_s: float) -> int:
    heap = parse_size(rule.HEAP_LADDER_MIN)
    while heap <= parse_size(rule.HEAP_LADDER_MAX):
        if runner.run(tool, size, None, {"java_mem": format_size(heap)}, step, timeout_s)["outcome"] == "ok":
            break
        heap *= 2
    return heap


def _baseline_bytes(entry, reads: int) -> int:
    """The size to ask of a synthetic input of ``reads`` reads (the paper states AmpliconNoise's
    baseline as a read count, of flowgrams)."""
    from biossd.study.inputs import synthgen

    if entry.data["input"] != "flowgrams":
        raise SizingError(f"biossd study size: {entry.id}'s baseline is a read count, but only flowgram inputs "
                          f"are sized by reads (its input is {entry.data['input']})")
    return reads * synthgen.FLOWGRAM_BYTES_PER_READ


def parameters(record: dict[str, Any], slow_profile: str = DEFAULT_SLOW_PROFILE,
               memory_factor: float = 1.0) -> dict[str, str]:
    """The study parameters (:data:`PARAMETERS`) that a record's choices give: each tool's data
    memories M_t (Fig. 9's three for the GATK steps; a study's caps are its own floors plus each,
    measured in its session), inputs per tool and per kind (each kind's smallest, for the chained
    pipelines), M, the JVM heaps, the time limit, and the emulated slow device's size
    (``slow_profile``'s capacity / D, so that it spans the whole stroke).

    ``memory_factor`` k: the rule's sensitivity to D — the same inputs with k M as the data memory
    (settings / the D that follows; the GATK steps' Fig. 9 points and the emulated device as
    measured)."""
    from biossd.host.models.diskmodel import load_profile

    chose = record["chose"]
    inputs = chose["inputs"]
    m = chose["data_memory"]
    m_k = rule.round_kib(m * memory_factor) if memory_factor != 1 else m
    gatk_input = next((inputs[t] for t in sorted(inputs) if rule.is_gatk(t)), None)
    memories = {tool: [format_size(x) for x in rule.data_memories(tool, m_k, gatk_input)] for tool in sorted(inputs)}
    kinds: dict[str, int] = {}
    for tool, size in inputs.items():
        kind = chose["kinds"][tool]
        kinds[kind] = min(kinds.get(kind, size), size)
    capacity = load_profile(slow_profile).capacity_bytes
    return {
        "tool_data_memory": ";".join(f"{t}={','.join(x)}" for t, x in memories.items()),
        "tool_input_sizes": ";".join(f"{t}={format_size(s)}" for t, s in sorted(inputs.items())),
        "input_sizes": ",".join(f"{k}={format_size(s)}" for k, s in sorted(kinds.items())),
        "data_memory": format_size(m_k),
        "java_heaps": ";".join(f"{t}={h}" for t, h in sorted(chose["heaps"].items())) or None,
        "time_limit": f"{record['budget']['time_limit_s']:g}s",
        "emulate_size": format_size(_emulate_bytes(capacity / rule.memory_divisor(m), max(inputs.values()))),
        # Every run pages to its class's device, as the sizing's capped runs did.
        "swap": rule.SWAP_SIZE,
    }


def _emulate_bytes(stroke_bytes: float, largest_input: int) -> int:
    """The emulated slow device: the model's stroke scaled by D (``stroke_bytes``), so that it spans
    it, in whole MiB; larger when a run needs more (its scratch, :data:`~biossd.study.sizing.rule.SCRATCH_PER_INPUT`
    times the largest input, and its swap, which live on the device under study, in the share its
    file system leaves for files, :data:`~biossd.study.sizing.rule.EXT4_FILES_SHARE`), the room past the
    stroke costing a full-stroke seek (:meth:`~biossd.host.models.diskmodel.DiskModel.stroke_fraction`)."""
    mib = 1 << 20
    stroke = rule.round_kib(stroke_bytes) // mib * mib
    needed = (rule.SCRATCH_PER_INPUT * largest_input + parse_size(rule.SWAP_SIZE)) / rule.EXT4_FILES_SHARE
    return max(stroke, math.ceil(needed / mib) * mib)


def record(measured: dict[str, Any], scratch: Path, study_budget_s: float | None,
           reference: Path | None = None) -> dict[str, Any]:
    """The full record: what :func:`measure` returned, the study budget it was derived from,
    the host's facts and the scratch device's, when, the parameters, and the reference record
    whose calls it kept within the band (its file and sha256), if any."""
    from biossd.host import devices, hostfacts

    out = dict(measured)
    if reference is not None:
        out["reference"] = {"file": str(reference), "sha256": sizing_record.digest(reference),
                            "same_speed_within": rule.SAME_SPEED_WITHIN}
    out["budget"] = {**measured["budget"], "study_s": study_budget_s}
    device = devices.device_of_path(scratch)
    out["host"] = {**hostfacts.host_facts(), "scratch": str(scratch), "scratch_device": devices.device_facts(device),
                   "scratch_mount": devices.mount_facts(scratch)}
    out["created"] = dt.datetime.now(dt.timezone.utc).isoformat(timespec="seconds")
    out["parameters"] = parameters(out)
    return out


def load(path: Path, option: str = "--sizing") -> dict[str, Any]:
    """A sizing record, checked (:func:`check`); ``option`` names it in errors."""
    path = Path(path)
    try:
        rec = json.loads(path.read_text())
    except OSError as err:
        raise SizingError(f"{option} {path}: cannot read it ({err.strerror}); give the sizing.json that "
                          "`biossd study size` wrote (a study keeps it in pipeline_info/)") from None
    except json.JSONDecodeError as err:
        raise SizingError(f"{option} {path}: not JSON ({err}); give the sizing.json that `biossd study size` wrote") from None
    problems = check(rec)
    if problems:
        raise SizingError(f"{option} {path}: " + "; ".join(problems))
    return rec


def check(rec: Any) -> list[str]:
    """What keeps a record from sizing a study: another format, another rule, parameters that do
    not follow from its own choices, or choices that its runs did not measure."""
    if not isinstance(rec, dict) or rec.get("format") != FORMAT:
        found = rec.get("format") if isinstance(rec, dict) else None
        why = ("a record of an earlier rule, which carried caps where a study now measures its own floors"
               if str(found or "").startswith("biossd-sizing/") else
               "a record of benchmarks/sizing.py before `biossd study size`, or not a sizing record")
        return [f"its format is {found!r}, not {FORMAT!r} ({why}); size again with `biossd study size`"]
    problems = []
    for name, value in rule_constants().items():
        if rec.get("rule", {}).get(name) != value:
            problems.append(f"rule.{name} is {rec.get('rule', {}).get(name)!r}, but this biossd's rule has "
                            f"{value!r}; size again with `biossd study size`")
    try:
        given, derived = rec["parameters"], parameters(rec)
    except (KeyError, TypeError, ValueError) as err:
        return problems + [f"it lacks what its parameters follow from ({err}); size again"]
    for name in PARAMETERS:
        if given.get(name) != derived[name]:
            problems.append(f"parameters.{name} is {given.get(name)!r}, but its own measurements give "
                            f"{derived[name]!r} (edited by hand?)")
    runs = rec.get("runs") or []
    if not isinstance(runs, list) or not all(isinstance(r, dict) for r in runs):
        return problems + ["runs is not a list of run objects (edited by hand, or damaged); size again"]
    smallest = parse_size(SMALLEST_INPUT)
    for tool, floor in rec["chose"]["floors"].items():
        size = floor_size(rec["chose"]["inputs"].get(tool, 0), smallest)
        measured = [r["resident_peak_bytes"] for r in runs if r.get("step") == "floor" and r.get("tool") == tool
                    and r.get("size_bytes") == size and r.get("resident_peak_bytes")]
        if not measured or floor != rule.floor_of(measured[-rule.FLOOR_REPEATS:])[0]:
            problems.append(f"chose.floors.{tool} is {floor}, which is not the median of its floor runs")
    for tool, size in rec["chose"]["inputs"].items():
        sizes = {r.get("size_bytes") for r in runs if r.get("step") == "capped" and r.get("tool") == tool}
        if size not in sizes:
            problems.append(f"chose.inputs.{tool} is {size}, which no capped run of {tool} used")
    return problems
