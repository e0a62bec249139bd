"""The profiler on this machine: real samtools under a real cgroup memory cap, real signals."""

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from biossd import manifest
from biossd.cgroups import find_leftovers

pytestmark = pytest.mark.integration


@pytest.fixture(scope="module")
def bam(biossd, tmp_path_factory):
    out = tmp_path_factory.mktemp("bam")
    biossd("data", "synth", "bam", "--size", "8M", "--seed", "7", "-o", str(out))
    return out / "reads.bam"


def test_samtools_sort_under_a_cap_spills_and_is_recorded(biossd, bam, tmp_path, root_required):
    before = set(find_leftovers())
    (tmp_path / "tmp").mkdir()
    cmd = biossd("catalogue", "command", "--mem", "64M", "samtools_sort", f"in_bam={bam}",
                 f"out_bam={tmp_path / 'sorted.bam'}", f"tmp_prefix={tmp_path / 'tmp' / 'sort'}").stdout.split()
    run = tmp_path / "run"
    biossd("profile", "--mem", "64M", "--out", str(run), "--label", "tool=samtools_sort", "--", *cmd)
    body = manifest.read_manifest(run)
    assert body["outcome"] == "ok" and body["exit_code"] == 0
    assert body["memory_cap"]["backend"] in ("cgroup-v1", "cgroup-v2")
    assert body["memory_cap"]["limit_bytes"] == 64 << 20
    assert 0 < body["memory_cap"]["peak_usage_bytes"] <= 64 << 20
    assert body["page_cache"]["dropped"] is True
    assert "merging from" in (run / "stderr.log").read_text(), "sort did not spill to temporary files"
    acct = json.loads((run / "rusage.json").read_text())
    for key in ("wall_s", "user_s", "sys_s", "max_rss_kib", "major_faults", "minor_faults", "read_bytes", "write_bytes"):
        assert key in acct
    assert acct["write_bytes"] > bam.stat().st_size, "spilled temporaries and output were written"
    assert acct["max_rss_kib"] * 1024 < 64 << 20
    recorded = {f["path"]: f for f in body["files"]}
    assert recorded["rusage.json"]["sha256"] == manifest.sha256_file(run / "rusage.json")
    assert body["collectors"]["blocktrace"]["ran"] is False and body["collectors"]["blocktrace"]["why"]
    subprocess.run(["samtools", "quickcheck", str(tmp_path / "sorted.bam")], check=True)
    assert set(find_leftovers()) == before, "the run's cgroup was not removed"
    assert not Path(body["memory_cap"]["cgroup"]).exists()


def test_refuses_to_overwrite_a_complete_run(biossd, tmp_path):
    run = tmp_path / "run"
    biossd("profile", "--mem", "none", "--no-drop-caches", "--out", str(run), "--", "true")
    proc = biossd("profile", "--mem", "none", "--no-drop-caches", "--out", str(run), "--", "true", check=False)
    assert proc.returncode != 0 and "--overwrite" in proc.stderr
    biossd("profile", "--mem", "none", "--no-drop-caches", "--overwrite", "--out", str(run), "--", "false")
    assert manifest.read_manifest(run)["outcome"] == "failed"


def test_command_not_found_is_recorded_as_exit_127(biossd, tmp_path):
    run = tmp_path / "run"
    biossd("profile", "--mem", "none", "--no-drop-caches", "--out", str(run), "--", "no-such-command-xyz")
    body = manifest.read_manifest(run)
    assert body["outcome"] == "failed" and body["exit_code"] == 127
    assert "no-such-command-xyz" in body["error"]


def test_unknown_device_refuses_before_running(biossd, tmp_path):
    proc = biossd("profile", "--mem", "none", "--device", "/dev/nosuchdisk", "--out", str(tmp_path / "r"),
                  "--", "touch", str(tmp_path / "ran"), check=False)
    assert proc.returncode != 0 and "/dev/nosuchdisk" in proc.stderr
    assert not (tmp_path / "ran").exists()


def test_sigterm_leaves_no_cgroup_and_no_manifest(env, tmp_path, root_required):
    before = set(find_leftovers())
    run = tmp_path / "run"
    proc = subprocess.Popen(
        [sys.executable, "-m", "biossd", "profile", "--mem", "64M", "--no-drop-caches", "--out", str(run),
         "--", "sleep", "60"], env=env, stderr=subprocess.PIPE, text=True,
    )
    deadline = time.monotonic() + 20
    while not (set(find_leftovers()) - before):  # wait until the cap exists and sleep runs
        assert time.monotonic() < deadline, "the profiled run never started"
        time.sleep(0.05)
    time.sleep(0.3)
    proc.send_signal(signal.SIGTERM)
    _, err = proc.communicate(timeout=20)
    assert proc.returncode == 128 + signal.SIGTERM, err
    assert not manifest.is_complete(run)
    assert set(find_leftovers()) == before
    assert "interrupted" in err
