"""The profiler on this machine: real samtools under a real cgroup memory cap, real signals."""

import json
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from biossd import manifest, swap, tracefs
from biossd.blocktrace import read_blocktrace
from biossd.counters import parse_perf_csv
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
    trace = body["collectors"]["blocktrace"]
    assert trace["ran"] is True and trace["source"] in ("blktrace", "tracefs"), trace
    assert trace["lost_total"] == 0 and trace["requests"] > 0
    requests = read_blocktrace(run / "blocktrace.parquet")
    assert len(requests) == trace["requests"]
    mine = requests[requests.comm.eq("samtools") & requests.op.eq("R")]
    assert mine.bytes.sum() > 0, "samtools' reads of its cold input were not traced"
    perf = body["collectors"]["perf"]
    assert perf["ran"] is True, perf
    counts = parse_perf_csv((run / "perf_stat.csv").read_text())
    assert counts["task-clock"]["value"] > 0 and counts["page-faults"]["value"] > 0
    assert body["collectors"]["cachegrind"]["ran"] is False
    facts = body["device_facts"][0]
    assert facts["name"] == body["devices"][0] and facts["rotational"] in (True, False)
    assert facts["scheduler"] and body["mounts"]["out"]["fstype"]
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


def test_sigterm_leaves_no_cgroup_tracepoint_swap_or_manifest(env, tmp_path, root_required):
    def state():
        return (set(find_leftovers(include_live=True)), set(tracefs.find_leftovers(include_live=True)),
                swap.active_swaps(), subprocess.run(["losetup", "-l", "-n"], capture_output=True, text=True).stdout)

    before = state()
    run = tmp_path / "run"
    proc = subprocess.Popen(
        [sys.executable, "-m", "biossd", "profile", "--mem", "64M", "--no-drop-caches", "--swap", "64M",
         "--swap-dir", str(tmp_path), "--out", str(run), "--", "sleep", "60"],
        env=env, stderr=subprocess.PIPE, text=True,
    )
    try:
        deadline = time.monotonic() + 20
        # Wait until the cap, the swap and the tracefs instance exist and the command runs.
        while not (run / "sampler.csv").exists() or state()[0] == before[0] or state()[1] == before[1]:
            assert time.monotonic() < deadline, "the profiled run never started"
            assert proc.poll() is None, proc.stderr.read()
            time.sleep(0.05)
        assert state()[2] != before[2], "the run's swap is on"
        time.sleep(0.3)
        proc.send_signal(signal.SIGTERM)
        _, err = proc.communicate(timeout=30)
    finally:
        if proc.poll() is None:
            proc.kill()
    assert proc.returncode == 128 + signal.SIGTERM, err
    assert not manifest.is_complete(run)
    assert state() == before, "a cgroup, tracefs instance, swap area or loop device was left"
    assert not list(tmp_path.glob("biossd-swap-*")), "the swap file was left"
    assert "interrupted" in err


def test_doctor_finds_and_cleanup_removes_what_a_killed_run_left(biossd, env, tmp_path, root_required):
    run = tmp_path / "run"
    proc = subprocess.Popen(
        [sys.executable, "-m", "biossd", "profile", "--mem", "64M", "--no-drop-caches", "--swap", "64M",
         "--swap-dir", str(tmp_path), "--out", str(run), "--", "sleep", "60"], env=env,
    )
    deadline = time.monotonic() + 20
    while not (run / "sampler.csv").exists():
        assert time.monotonic() < deadline and proc.poll() is None, "the profiled run never started"
        time.sleep(0.05)
    proc.kill()  # SIGKILL: nothing of the profiler's own cleanup runs
    proc.wait()
    doctor = biossd("doctor", check=False)
    assert doctor.returncode == 1
    for kind in ("cgroup", "tracefs", "swap"):
        assert f"leftover {kind}:" in doctor.stdout, doctor.stdout
    cleanup = biossd("cleanup", check=False)
    assert cleanup.returncode == 0, cleanup.stderr
    assert biossd("doctor", check=False).returncode == 0
    assert not list(tmp_path.glob("biossd-swap-*"))
    assert not swap.active_swaps() or all("biossd" not in s for s in swap.active_swaps())
