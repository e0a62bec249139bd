"""-profile paper (the paper's own setup) and the duration it is estimated to take per class,
from a short probe on this host, printed before anything runs."""

from __future__ import annotations

import json
import math

import pytest

from biossd.core.units import parse_size
from biossd.study.inputs import synthgen
from biossd.study.plan import estimate, matrix
from biossd.study.sizing import rule
from test_matrix import _full_params


def test_the_paper_profile_is_the_paper_s_setup():
    """1 GB a tool, GATK at Fig. 9's 4/16/32 GB on its 20 GB, AmpliconNoise's 2,000 reads, the
    72 h limit, paper-era settings (D = 1); every tool five times its memory in input."""
    params = {**_full_params("paper"), "storage_classes": "ssd", "host": "h"}
    p = matrix.plan(params, stub=True)
    assert p.problems == [] and p.sizing is None
    assert p.time_limit_s == 72 * 3600
    assert parse_size(p.tool_input_sizes["ampliconnoise"]) == (
        rule.PAPER_BASELINE_READS["ampliconnoise"] * synthgen.FLOWGRAM_BYTES_PER_READ)
    for tool in p.tools:
        caps = [parse_size(c) for c in p.caps[tool]]
        if rule.is_gatk(tool):
            assert caps == [4 << 30, 16 << 30, 32 << 30] and p.size_of(tool) == "20G"
            assert p.input_over_cap[tool] == rule.INPUT_PER_MEMORY
        else:
            assert caps == [rule.PAPER_MEMORY_BYTES]
            if tool != "ampliconnoise":
                assert p.input_over_cap[tool] == rule.INPUT_PER_MEMORY
    assert p.settings["samtools_sort"]["sort_mem"] == "768M"


def _runs(tool, walls, start=64 << 10, read_per_byte=1.0):
    return [{"tool": tool, "size_bytes": start << i, "outcome": "ok", "wall_s": w,
             "read_bytes": int(read_per_byte * (start << i)), "write_bytes": 0} for i, w in enumerate(walls)]


def test_growth_is_fitted_past_the_start_up_and_never_below_linear():
    quadratic = estimate.growth(_runs("q", [1.0, 1.0, 1.5, 3.0]))  # adds 0.5 s, then 2 s at twice the size
    assert quadratic["startup_s"] == 1.0 and quadratic["exponent"] == 2.0
    assert estimate.run_s(quadratic, 4 * quadratic["ref_size_bytes"], None) == pytest.approx(1.0 + 2.0 * 16)
    flat = estimate.growth(_runs("f", [0.50, 0.52, 0.51, 0.53]))  # start-up only: linear from a noise floor
    assert flat["exponent"] == estimate.MIN_EXPONENT and flat["ref_added_s"] == estimate.MIN_FIT_S
    sub = estimate.growth(_runs("s", [0.1, 0.5, 0.7]))
    assert sub["exponent"] == estimate.MIN_EXPONENT
    assert estimate.growth([{"tool": "x", "size_bytes": 1, "outcome": "failed", "wall_s": 1}]) is None


def test_the_slow_class_moves_the_run_s_bytes_at_the_disk_s_rate_and_stops_at_the_limit():
    p = matrix.plan({"tools": "samtools_sort", "mem_caps": "1G", "scales": "1,2", "repeats": 3, "host": "h",
                     "storage_classes": "ssd,hdd", "input_size": "1G", "time_limit": "1h"}, stub=True)
    runs = _runs("samtools_sort", [0.1, 0.1, 1.1, 2.1])  # 1 s per 256 KiB: 1 GiB takes about 4096 s
    est = estimate.of(p, runs, {})
    ssd, hdd = est["classes"]["ssd"], est["classes"]["hdd"]
    assert hdd["disk"] == estimate.PAPER_HDD_PROFILE and ssd["disk"] == "the device probed"
    # Every configuration's first repeat reaches the limit; the others are not run (as the study does).
    assert ssd["runs"] == hdd["runs"] == 2 and ssd["runs_at_limit"] == 2 and ssd["seconds"] == 2 * 3600
    fit = est["tools"]["samtools_sort"]
    disk = estimate.slow_disk("hdd", {})
    small = matrix.plan({"tools": "samtools_sort", "mem_caps": "1G", "scales": "1", "repeats": 1, "host": "h",
                         "storage_classes": "ssd,hdd", "input_size": "64M"}, stub=True)
    est = estimate.of(small, runs, {})
    gap = est["classes"]["hdd"]["seconds"] - est["classes"]["ssd"]["seconds"]
    assert gap == pytest.approx((64 << 20) / (disk["seq_read_mbs"] * estimate.MB), abs=1)
    assert math.isclose(estimate.run_s(fit, 64 << 20, None), est["classes"]["ssd"]["seconds"], abs_tol=1)
    assert "about" in estimate.summary(est, None) and "no limit" in estimate.summary(est, None)


@pytest.mark.integration
def test_study_plan_estimate_probes_this_host_and_prints_days_first(biossd, tmp_path):
    """The real probe: the tool's ladder on this host, then the estimate in the plan and on stderr."""
    # Cluster3 grows fast (as the cube of its input): its ladder passes the probe's budget in a few runs.
    params = {"tools": "cluster3", "mem_caps": "1G", "scales": "1", "repeats": 1, "host": "h",
              "storage_classes": "ssd,hdd", "input_size": "64M", "outdir": str(tmp_path / "r")}
    proc = biossd("study", "plan", "--params", json.dumps(params), "--estimate", "--scratch", str(tmp_path))
    body = json.loads(proc.stdout)
    est = body["estimate"]
    probe_runs = est["probe"]["runs"]
    assert probe_runs and all(r["tool"] == "cluster3" and r["step"] == "probe" for r in probe_runs)
    assert est["classes"]["hdd"]["seconds"] > est["classes"]["ssd"]["seconds"] > 0
    assert "estimated duration" in proc.stderr and "hdd: about" in proc.stderr
    assert not list(tmp_path.glob("biossd-estimate-*"))  # the probe's inputs are gone
