"""Calls that hold (docs/study.md): the page cache evicted run by run so that code stays out of the
cap, the code a run reads counted by device, the floor measured in the session and the caps it
gives, a sizing that jitter cannot move, the dead band, and the load outside a run."""

from __future__ import annotations

import json
import math
import os
import subprocess
import sys
from pathlib import Path

import pytest

from biossd.core import owners
from biossd.core.units import parse_size
from biossd.host import pagecache, resident
from biossd.measure import floors, hostload, manifest
from biossd.measure.trace import traceevents
from biossd.study.plan import matrix
from biossd.study.sizing import procedure, rule
from biossd.study.sizing import reference as sizing_reference
from biossd.study.sizing import run as sizing_run
from biossd.study.sizing.record import SizingError


# -- the page cache ------------------------------------------------------------------------------------------------
def _cached(path, size=1 << 20):
    path.write_bytes(os.urandom(size))
    path.read_bytes()
    return path


def test_the_run_s_files_are_evicted_and_the_rest_stays(tmp_path):
    run, other = tmp_path / "run", tmp_path / "code"
    run.mkdir()
    other.mkdir()
    data = _cached(run / "input.bam")
    os.link(data, run / "input-link.bam")  # a hard link of the shared copy: one file
    code = _cached(other / "libtool.so")
    os.sync()
    assert pagecache.resident_bytes(code) > 0
    record = pagecache.evict_run([run], [])
    assert record["policy"] == "run" and record["files"] == 1 and record["bytes"] == 1 << 20
    assert record["resident_after_bytes"] == 0 and pagecache.resident_bytes(data) == 0
    assert pagecache.resident_bytes(code) == 1 << 20, "a file outside the run's roots was evicted"


def test_a_device_that_cannot_be_flushed_is_named_not_raised(tmp_path):
    problem = pagecache.flush_buffers("no-such-device-here")
    assert problem and "no-such-device-here" in problem
    record = pagecache.evict_run([tmp_path], ["no-such-device-here"])
    assert record["problems"] == [problem]


def test_a_page_cache_add_line_is_read_with_its_device_and_folio():
    line = ("     java-4242    [001] ..... 12345.678901: mm_filemap_add_to_page_cache: dev 254:0 ino 1a2b "
            "pfn=0x12345 ofs=8192 order=2")
    assert traceevents.parse_page_cache_line(line) == (4242, (254, 0), 4, 0x1a2b)
    old = "  sh-7 [000] ..... 1.0: mm_filemap_add_to_page_cache: dev 7:1 ino 3 pfn=0x1 ofs=0"
    assert traceevents.parse_page_cache_line(old) == (7, (7, 1), 1, 3)
    assert traceevents.parse_page_cache_line("sh-7 [000] 1.0: block_rq_issue: 7,1 R 4096 () 8 + 8 [sh]") is None


def test_a_dirtied_page_is_read_with_its_process_and_file_and_a_removed_file_is_transient(tmp_path):
    from biossd.measure.trace import blocktrace

    line = "        FCluster-5150    [000] ..... 812.000001: writeback_dirty_folio: bdi 7:1: ino=4242 index=3"
    assert traceevents.parse_dirty_line(line) == (5150, "FCluster", 4242)
    assert traceevents.parse_dirty_line("sh-1 [000] 1.0: balance_dirty_pages: bdi 7:1: pause=4 ") is None
    writer = traceevents.CanonicalWriter(tmp_path / "t.tsv.gz", {}, 0.0)
    writer.dirtied_traced, writer.forks_traced = True, True
    writer.forks = [(100, 101)]
    for _ in range(2048):  # 8 MiB of a segment the launcher removed before the run ended
        writer.dirty(101, "FCluster", 4242)
    writer.dirty(101, "FCluster", 77)  # the output, left
    writer.dirty(999, "nextflow", 5)  # another process's: not the run's
    record = blocktrace.dirtied(writer, 100, {77: "out.fa"}, {4242: "biossd-tmp/ompi/vader_segment.0"})
    writer.abort()
    assert record["by_process"] == {"FCluster": 2049 * blocktrace.PAGE_BYTES}
    assert record["transient_bytes"] == 2048 * blocktrace.PAGE_BYTES
    assert record["files"][0] == {"file": "biossd-tmp/ompi/vader_segment.0", "left": False,
                                  "bytes": 2048 * blocktrace.PAGE_BYTES, "by": {"FCluster": 2048 * blocktrace.PAGE_BYTES}}
    assert record["files"][1]["file"] == "out.fa" and record["files"][1]["left"]


def test_the_code_a_run_read_is_named_by_file_the_most_read_first(tmp_path):
    from biossd.measure.trace import blocktrace

    writer = traceevents.CanonicalWriter(tmp_path / "t.tsv.gz", {}, 0.0)
    writer.page_cache_traced, writer.forks_traced = True, True
    writer.forks = [(100, 101)]
    writer.page_cache_add(101, (254, 0), 256, 0x77)  # 1 MiB of the JDK's modules image, which java maps
    writer.page_cache_add(100, (254, 0), 4, 0x5)  # a file the run wrote new on the host's disk
    writer.page_cache_add(999, (254, 0), 8, 0x77)  # another process's: not the run's
    record = blocktrace.page_cache_reads(writer, 100, (), {0x77: "/usr/lib/jvm/java-17/lib/modules"})
    writer.abort()
    assert record["bytes"] == 260 * blocktrace.PAGE_BYTES and record["others_bytes"] == 8 * blocktrace.PAGE_BYTES
    assert [(f["file"], f["inode"], f["bytes"]) for f in record["files"]] == [
        ("/usr/lib/jvm/java-17/lib/modules", 0x77, 256 * blocktrace.PAGE_BYTES), (None, 0x5, 4 * blocktrace.PAGE_BYTES)]


def test_a_process_s_resident_parts_are_read_by_name():
    name, parts = resident.process_parts(os.getpid())
    assert name.startswith("py") and set(parts) == set(resident.PROCESS_STATUS_PARTS.values())
    assert parts["anon_bytes"] > 0
    assert resident.process_parts(2 ** 22 + 7) is None


# -- the floor in the session ----------------------------------------------------------------------------------------
def _floor_run(root, tool, rep, peak, outcome="ok"):
    run = root / f"{tool}-{rep}"
    run.mkdir()
    manifest.write_manifest(run, {"labels": {"tool": tool, "probe": "floor", "rep": rep}, "outcome": outcome,
                                  "memory_cap": {"resident": {"peak_bytes": peak}}})
    return run


def test_the_floor_is_the_median_of_the_runs_after_the_warm_up(tmp_path):
    runs = [_floor_run(tmp_path, "maq", 0, 900 << 20)]  # the warm-up, which read the code: left out
    runs += [_floor_run(tmp_path, "maq", rep, peak) for rep, peak in ((1, 140 << 20), (2, 142 << 20), (3, 141 << 20))]
    measured = floors.floors_of(runs)["maq"]
    assert measured["floor_bytes"] == 141 << 20 and measured["floor_runs"] == rule.FLOOR_REPEATS
    assert measured["floor_sd_bytes"] == pytest.approx(1 << 20, rel=0.01)


def test_a_tool_with_no_floor_run_ok_stops_the_caps_naming_it(tmp_path):
    runs = [_floor_run(tmp_path, "blat", rep, None, "failed") for rep in range(4)]
    with pytest.raises(floors.FloorError, match="blat: no floor run ended ok.*rep 3 failed"):
        floors.floors_of(runs)


def test_every_capped_task_gets_its_floor_plus_its_data_memory():
    measured = {"bwa": {"floor_bytes": 3 << 20, "floor_sd_bytes": 4096.0, "floor_runs": 3},
                "gatk_printreads": {"floor_bytes": 100 << 20, "floor_sd_bytes": 0.0, "floor_runs": 3}}
    tasks = [{"tool": "bwa", "mem": "6554K", "mem_bytes": None, "data_memory_bytes": 6554 << 10, "labels": {"rep": 1}},
             {"tool": "gatk_printreads", "mem": "1M", "mem_bytes": None, "data_memory_bytes": 1 << 20, "labels": {}},
             {"tool": "bwa", "mem": "64M", "mem_bytes": 64 << 20, "labels": {}},  # a cap as given: kept
             {"pipeline": "p", "steps": [{"tool": "bwa", "mem": "6554K", "mem_bytes": None,
                                          "data_memory_bytes": 6554 << 10}], "job_mem_bytes": None}]
    capped = floors.with_caps(tasks, measured, lambda tool: 128 << 20 if tool.startswith("gatk") else 2 << 20)
    assert capped[0]["mem_bytes"] == rule.cap_bytes(3 << 20, 6554 << 10)
    assert capped[0]["labels"] == {"rep": 1, "floor_bytes": 3 << 20, "floor_sd_bytes": 4096.0, "floor_runs": 3,
                                   "data_memory_bytes": 6554 << 10}
    assert capped[0]["job_mem_bytes"] == capped[0]["mem_bytes"] + matrix.PROFILER_JOB_OVERHEAD_BYTES
    assert capped[1]["mem_bytes"] == 128 << 20, "a cap is never below what a run of the tool needs"
    assert capped[2] == tasks[2]
    assert capped[3]["steps"][0]["mem_bytes"] == capped[0]["mem_bytes"]
    assert capped[3]["steps"][0]["floor_labels"]["floor_bytes"] == 3 << 20
    with pytest.raises(floors.FloorError, match="maq: no floor runs were given"):
        floors.with_caps([{"tool": "maq", "mem_bytes": None, "data_memory_bytes": 1}], measured, lambda t: 0)


def test_a_sized_plan_measures_floors_first_and_leaves_the_caps_to_them():
    p = matrix.plan({"tools": "bwa,gatk_printreads", "mem_caps": "1G", "tool_caps": "gatk_*=4G",
                     "tool_data_memory": "bwa=6554K;gatk_*=1639K,6554K", "data_memory": "6554K", "scales": "1",
                     "repeats": 2, "input_size": "8M", "storage_classes": "ssd,hdd", "host": "h"}, stub=True)
    assert p.problems == [] and p.floors_in_session and p.caps == {"bwa": ["6554K"], "gatk_printreads": ["1639K", "6554K"]}
    floor_tasks = p.floor_tasks()
    assert [(t["tool"], t["rep"]) for t in floor_tasks] == [(t, r) for t in ("bwa", "gatk_printreads")
                                                             for r in range(rule.FLOOR_REPEATS + 1)]
    assert {t["storage"] for t in floor_tasks} == {"ssd"} and all(t["probe"] == "floor" for t in floor_tasks)
    assert floor_tasks[1]["publish"] == "h-ssd/probes/floor/bwa/1"
    assert floor_tasks[0]["input"].endswith(f"div{rule.FLOOR_DIVISOR}")
    assert {i["id"] for i in p.inputs()} >= {t["input"] for t in floor_tasks}
    runs = [t for t in p.tasks() if not t.get("probe")]
    assert runs and all(t["mem_bytes"] is None and t["data_memory_bytes"] == parse_size(t["mem"]) for t in runs)


# -- a sizing that jitter cannot move ----------------------------------------------------------------------------------
class _Ladder:
    """A stand-in for the sizer's runner (the real one is exercised by tests/test_sizer.py): wall
    times from ``walls(size, how many times timed)``; records every run."""

    def __init__(self, walls):
        self.walls, self.runs = walls, []

    def run(self, tool, size, cap, settings, step, timeout_s):
        n = sum(1 for r in self.runs if r[:3] == (tool, size, cap))
        self.runs.append((tool, size, cap, step))
        return {"outcome": "ok", "wall_s": self.walls(size, n), "resident_peak_bytes": 1 << 20}


class _BusyOnce(sizing_run.Runner):
    """The sizer's runner with its one run replaced: the first run of each size reports a busy host."""

    def _run_once(self, tool, size, cap, settings, step, timeout_s):
        busy = not any(r["size_bytes"] == size for r in self.seen)
        record = {"step": step, "tool": tool, "size_bytes": size, "wall_s": 9.0 if busy else 4.0,
                  "outside_cores": 0.9 if busy else 0.02}
        self.seen.append(record)
        self.runs.append(record)
        return record, busy


def test_a_sizing_run_on_a_busy_host_is_run_again_once_and_the_quiet_one_decides():
    logged = []
    runner = _BusyOnce({}, Path("/nonexistent"), 7, logged.append)
    runner.seen = []
    got = runner.run("bwa", 1 << 20, None, {}, "input", 60.0)
    assert got["wall_s"] == 4.0 and got["redone"] == {"first_wall_s": 9.0, "first_outside_cores": 0.9}
    assert runner.runs == [got] and "busy outside the run (0.90 cores)" in logged[0]
    assert runner.run("bwa", 1 << 20, None, {}, "input", 60.0)["wall_s"] == 4.0 and len(runner.runs) == 2


def test_a_sizing_s_runs_are_owned_by_its_workflow_else_by_the_sizing_itself(monkeypatch):
    """Code a warm-up holds resident (biossd.host.codeholder) lasts as long as its owner: the
    Nextflow session that started the sizing, or else the sizing's own process."""
    monkeypatch.delenv(owners.OWNER_ENV, raising=False)
    alone = owners.from_environment(sizing_run._owned_environment())
    assert alone is not None and alone.pid == os.getpid() and alone.label == "biossd study size"
    workflow = owners.environment_value("nextflow (the study's launcher)", os.getppid())
    monkeypatch.setenv(owners.OWNER_ENV, workflow)
    assert sizing_run._owned_environment()[owners.OWNER_ENV] == workflow


def test_a_step_next_to_the_budget_is_timed_three_times_and_its_median_decides():
    budget = 5.0

    def walls(size, n):  # 8M adds 5.10 s, then 4.95 and 4.96 (the jitter that moved ABySS); past it, over
        if size == 8 << 20:
            return 1.0 + (5.10, 4.95, 4.96)[n % 3]
        return 1.0 + (0.0 if size < 8 << 20 else size / (1 << 20) * 0.6)

    ladder = _Ladder(walls)
    best = procedure._ladder(ladder, ["abyss"], {}, budget, 256 << 20, 60)
    timed = [r for r in ladder.runs if r[1] == 8 << 20]
    reference = [r for r in ladder.runs if r[1] == (8 << 20) // rule.FLOOR_DIVISOR]
    assert len(timed) == len(reference) == rule.RETIME_REPEATS
    assert best == 8 << 20, "the median (4.96 s) is within the budget, though the first timing (5.10 s) was not"
    fine = rule.fine_step(16 << 20)
    assert any(r[1] == fine for r in ladder.runs), "the step √2 below the first over the budget is tried"


def test_one_slow_run_does_not_end_the_ladder():
    def walls(size, n):  # ABySS's 8M step: one run at 6.92 s, then 5.18 and 5.50 (the sizings of 2026-11-28)
        if size == 8 << 20:
            return (6.92, 5.18, 5.50)[n % 3]
        return 1.0 + (0.0 if size < 8 << 20 else size / (1 << 20) * 0.6)

    ladder = _Ladder(walls)
    assert procedure._ladder(ladder, ["abyss"], {}, 5.0, 256 << 20, 60) == 8 << 20
    assert sum(r[1] == 8 << 20 for r in ladder.runs) == rule.RETIME_REPEATS
    far_below = [r for r in ladder.runs if r[1] == 1 << 20]
    assert len(far_below) == 1, "a step far within the budget is timed once"


def test_the_fine_step_is_taken_when_it_fits():
    def walls(size, n):
        return 1.0 + size / (1 << 20) * 0.4  # adds 0.4 s a MiB: 8M 3.2 s, 11.3M 4.5 s, 16M 6.4 s
    best = procedure._ladder(_Ladder(walls), ["maq"], {}, 5.0, 256 << 20, 60)
    assert best == rule.fine_step(16 << 20) and 8 << 20 < best < 16 << 20


def test_an_input_over_half_the_limit_steps_down_by_root_two():
    def walls(size, n):
        return size / (1 << 20) * 2.0  # capped: 2 s a MiB against a bound of 30 s
    chosen, floors, sds = {"cluster3": 32 << 20}, {"cluster3": 1 << 20}, {"cluster3": 0.0}
    ladder = _Ladder(walls)
    measured = []

    def floor_at(tool, size):  # measured again at every step down, as the study will measure it
        measured.append(size)
        return (1 << 20) + size // 1024, 1.0

    procedure._fit_time_limit(ladder, chosen, floors, sds, lambda t: 4 << 20, lambda t: {}, 60.0, lambda s: None, floor_at,
                              None)
    sizes = [r[1] for r in ladder.runs]
    first = [32 << 20, rule.fine_step(32 << 20), rule.fine_step(rule.fine_step(32 << 20))]
    assert sizes[:3 * rule.RETIME_REPEATS] == [s for s in first for _ in range(rule.RETIME_REPEATS)], \
        "each step over the bound is decided by the median of its timings"
    assert measured[-1] == chosen["cluster3"] and floors["cluster3"] == (1 << 20) + chosen["cluster3"] // 1024
    assert chosen["cluster3"] * 2.0 / (1 << 20) <= 30.0 < chosen["cluster3"] * rule.FINE_STEP * 2.0 / (1 << 20)


def _session(drift):
    """A group whose 46341K step adds about the budget (bowtie2's on the project's VM: 5.09 s in one
    sizing, 5.20 s in another), with every timing of the session ``drift`` times slower."""
    edge = rule.fine_step(64 << 20)

    def walls(size, n):
        return drift * (1.0 + 5.0 * size / edge)
    return walls


def test_a_reference_record_s_call_holds_within_the_band_on_both_sides():
    edge = rule.fine_step(64 << 20)
    for drift in (0.97, 1.0, 1.03, 1.06):  # a few per cent either way: without a reference, the step flips
        plain = procedure._ladder(_Ladder(_session(drift)), ["bowtie2"], {}, 5.0, 256 << 20, 60)
        took = procedure._ladder(_Ladder(_session(drift)), ["bowtie2"], {}, 5.0, 256 << 20, 60, edge)
        refused = procedure._ladder(_Ladder(_session(drift)), ["bowtie2"], {}, 5.0, 256 << 20, 60, 32 << 20)
        assert plain == (edge if drift <= 1.0 else 32 << 20), drift
        assert (took, refused) == (edge, 32 << 20), f"drift {drift}: the reference's call stands"
    faster = procedure._ladder(_Ladder(_session(0.8)), ["bowtie2"], {}, 5.0, 256 << 20, 60, 32 << 20)
    slower = procedure._ladder(_Ladder(_session(1.2)), ["bowtie2"], {}, 5.0, 256 << 20, 60, edge)
    assert faster >= edge and slower == 32 << 20, "a host clearly faster or slower still moves the step"


def test_one_fast_run_does_not_take_a_step_above_the_reference():
    def walls(size, n):  # Lighter's 128M step: one run at 4.47 s, then 7.45, 5.81 (the re-sizings of 2026-11-28)
        if size == 128 << 20:
            return (4.47, 7.45, 5.81)[n % 3]
        return 1.0 + size / (1 << 20) * 0.03  # 64M adds 1.9 s, 90.5M 2.7 s: each clearly fits
    reference = 23171 << 10
    ladder = _Ladder(walls)
    best = procedure._ladder(ladder, ["lighter"], {}, 5.0, 256 << 20, 60, reference)
    assert best == rule.fine_step(128 << 20), "the median of three (5.81 s) is over 0.9 budgets: 128M is not taken"
    assert sum(r[1] == 128 << 20 for r in ladder.runs) == rule.RETIME_REPEATS
    assert sum(r[1] == 64 << 20 for r in ladder.runs) == rule.RETIME_REPEATS, "every step above it is timed thrice"
    assert sum(r[1] == 16 << 20 for r in ladder.runs) == 1, "a step at or below the reference's is timed once"
    assert rule.needs_retiming(4.47, 5.0, above_reference=True) and not rule.needs_retiming(math.inf, 5.0, True)


def test_the_time_limit_keeps_a_reference_s_input_within_the_band():
    def walls(size, n):  # capped at 1M: 31 s, just over the bound of 30 s (60 s / 2), within its band
        return 31.0 * size / (1 << 20)
    for final, kept in ((1 << 20, 1 << 20), (512 << 10, 512 << 10)):
        chosen = {"cluster3": 1 << 20}
        reference = sizing_reference.Reference({"chose": {"inputs": {"cluster3": final}}, "runs": []})
        procedure._fit_time_limit(_Ladder(walls), chosen, {"cluster3": 1 << 20}, {"cluster3": 0.0}, lambda t: 4 << 20,
                                  lambda t: {}, 60.0, lambda s: None, lambda t, s: (1 << 20, 0.0), reference)
        assert chosen["cluster3"] == (kept if kept == 1 << 20 else rule.fine_step(1 << 20)), reference
    assert rule.over_budget(5.4, 5.0) and not rule.over_budget(5.4, 5.0, True)
    assert rule.over_budget(4.6, 5.0, False) and not rule.over_budget(4.4, 5.0, False)
    assert rule.over_budget(5.6, 5.0, True)


def _reference(tool, ladder_input, final_input, input_s, capped_s):
    """A reference record that chose ``ladder_input`` for ``tool`` (timed ``input_s`` there) and
    ran it on ``final_input`` (its capped runs ``capped_s``: size -> wall)."""
    runs = [{"tool": tool, "step": "input", "size_bytes": ladder_input, "outcome": "ok", "wall_s": input_s}]
    runs += [{"tool": tool, "step": "capped", "size_bytes": size, "outcome": "ok", "wall_s": wall}
             for size, wall in capped_s.items()]
    return sizing_reference.Reference({"chose": {"ladder_inputs": {tool: ladder_input}, "inputs": {tool: final_input}},
                                       "runs": runs})


def test_a_tool_at_the_reference_s_speed_keeps_its_input_without_a_ladder():
    """ABySS on 2026-11-28: the reference chose 5793K (its 8M step was 5.1 s over its 1/64 run); a
    session a quarter faster took 8M. At the reference's speed the reference's input stands."""
    chosen = 5793 << 10
    reference = _reference("abyss", chosen, chosen, 4.0, {})
    for drift in (0.55, 0.75, 1.0, 1.3, 1.9):
        ladder = _Ladder(lambda size, n, d=drift: d * (1.0 + 3.0 * size / chosen))
        logged = []
        best, ratios = sizing_reference.kept_input(reference, ["abyss"], lambda t, size: procedure._timed(
            ladder, {"abyss": {}}, {}, 60, t, size, rule.RETIME_REPEATS), logged.append)
        assert best == chosen and [r[1] for r in ladder.runs] == [chosen] * rule.RETIME_REPEATS, drift
        assert ratios["abyss"] == pytest.approx(drift) and "kept within 2 x" in logged[0]
    for drift in (0.45, 2.2):  # a host clearly faster or slower: the group is sized again on its ladder
        ladder = _Ladder(lambda size, n, d=drift: d * (1.0 + 3.0 * size / chosen))
        best, ratios = sizing_reference.kept_input(reference, ["abyss"], lambda t, size: procedure._timed(
            ladder, {"abyss": {}}, {}, 60, t, size, rule.RETIME_REPEATS), lambda line: None)
        assert best is None and not rule.same_speed(ratios["abyss"]), drift
    split = sizing_reference.Reference({"chose": {"ladder_inputs": {"bwa": 1 << 20, "maq": 2 << 20}}, "runs": []})
    assert sizing_reference.kept_input(split, ["bwa", "maq"], lambda t, s: 1.0, print) == (None, {})


def test_a_group_of_several_tools_keeps_its_input_only_if_each_runs_at_the_reference_s_speed():
    size = 8 << 20
    runs = [{"tool": t, "step": "input", "size_bytes": size, "outcome": "ok", "wall_s": 4.0} for t in ("a", "b")]
    reference = sizing_reference.Reference({"chose": {"ladder_inputs": {"a": size, "b": size}}, "runs": runs})
    here = {"a": 5.0, "b": 9.0}  # b runs 2.25 x the reference's time
    best, ratios = sizing_reference.kept_input(reference, ["a", "b"], lambda t, s: here[t], lambda line: None)
    assert best is None and ratios == {"a": 1.25, "b": 2.25}
    here["b"] = 7.0
    assert sizing_reference.kept_input(reference, ["a", "b"], lambda t, s: here[t], lambda line: None)[0] == size


def test_the_time_limit_keeps_the_reference_s_call_at_its_speed():
    """IGVtools' capped runs at 46341K: 20.3 s in the reference, 29.6-35.5 s in a session two hours
    later (over the bound of 30 s and its band), which stepped it down to 32769K."""
    size = 46341 << 10
    bound_cases = ((34.0, size), (45.0, rule.fine_step(size)))  # 1.67 x: kept; 2.2 x: the host decides
    for wall, kept in bound_cases:
        chosen, speeds = {"igvtools": size}, {}
        ladder = _Ladder(lambda s, n, w=wall: w * s / size)
        reference = _reference("igvtools", size, size, 4.3, {size: 20.3})
        procedure._fit_time_limit(ladder, chosen, {"igvtools": 1 << 20}, {"igvtools": 0.0}, lambda t: 4 << 20,
                                  lambda t: {}, 60.0, lambda s: None, lambda t, s: (1 << 20, 0.0), reference, speeds)
        assert chosen["igvtools"] == kept and speeds["igvtools"] == pytest.approx(wall / 20.3), wall
        assert sum(r[1] == size for r in ladder.runs) == rule.RETIME_REPEATS, "given a reference, timed thrice"
    # At its speed, where the reference stepped down, this host steps down too, though it fits here.
    chosen = {"igvtools": size}
    reference = _reference("igvtools", size, rule.fine_step(size), 4.3, {size: 20.0, rule.fine_step(size): 14.0})
    procedure._fit_time_limit(_Ladder(lambda s, n: 25.0 * s / size), chosen, {"igvtools": 1 << 20}, {"igvtools": 0.0},
                              lambda t: 4 << 20, lambda t: {}, 60.0, lambda s: None, lambda t, s: (1 << 20, 0.0),
                              reference)
    assert chosen["igvtools"] == rule.fine_step(size)


def test_a_tool_not_installed_is_refused_before_any_run(monkeypatch, tmp_path):
    """Every run of a tool that is not installed fails at once; the ladder would leave it out of
    the record with a log line only (a clone bootstrapped without `make install` lacked BLAT)."""
    from biossd.study.catalogue.entries import Entry

    monkeypatch.setattr(Entry, "installed_version", lambda self, prefix=(): None if self.id == "blat" else "1")
    with pytest.raises(SizingError, match=r"not installed on this host: blat \(.*make install"):
        procedure.measure(["blat", "bwa"], 5.0, tmp_path, log=pytest.fail)


def test_the_rule_s_small_pieces():
    assert rule.floor_of([3, 1, 2]) == (1024, 1.0) and rule.floor_of([5000]) == (5120, 0.0)
    assert rule.band_bytes(6 << 20, 10) == 3 << 20 and rule.band_bytes(1 << 20, 1 << 20) == 3 << 20
    assert rule.needs_retiming(4.6, 5.0) and rule.needs_retiming(5.4, 5.0) and rule.needs_retiming(9.0, 5.0)
    assert not rule.needs_retiming(4.4, 5.0) and not rule.needs_retiming(math.inf, 5.0)
    assert rule.same_speed(0.5) and rule.same_speed(2.0) and not rule.same_speed(2.01) and not rule.same_speed(None)
    assert rule.data_memories("bwa", 6 << 20, 8 << 20) == [6 << 20]
    assert rule.data_memories("gatk_printreads", 6 << 20, 10 << 20) == [rule.round_kib(f * (10 << 20))
                                                                          for f in rule.FIG9_MEMORY_PER_INPUT]


# -- the load outside a run ------------------------------------------------------------------------------------------
BUSY = "import time\nend = time.monotonic() + {s}\nwhile time.monotonic() < end: pass\n"


@pytest.mark.alone
def test_a_busy_program_beside_a_run_is_load_outside_it_and_the_run_is_not():
    run = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(1.0)"])
    load = hostload.HostLoad(run.pid).start()
    beside = subprocess.Popen([sys.executable, "-c", BUSY.format(s=0.8)], start_new_session=True)
    beside.wait()
    run.wait()
    load.stop()
    busy = load.record(run_cpu_s=0.0)
    assert busy["measured"] and busy["outside_cores"] > 0.4 and busy["busy"], busy

    # The same work as the run's own (its accounting, wait4's, says so): not outside it.
    command = subprocess.Popen([sys.executable, "-c", BUSY.format(s=0.5)])
    quiet = hostload.HostLoad(command.pid).start()
    _, _, usage = os.wait4(command.pid, 0)
    quiet.stop()
    command.returncode = 0
    mine = quiet.record(run_cpu_s=usage.ru_utime + usage.ru_stime)
    assert mine["outside_cores"] < busy["outside_cores"] - 0.3, (mine, busy)
    assert json.dumps(mine) and "steal_cores" in mine and hostload.HostLoad(None).record(0.0)["measured"] is False
