"""The profiler on this machine: real samtools under a real cgroup memory cap, real signals."""

import json
import os
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from biossd.features import extract as features
from biossd.host import swap, tracefs
from biossd.host.cgroups import find_leftovers
from biossd.measure import collectors, manifest
from biossd.measure.counters import parse_perf_csv
from biossd.measure.trace.tracereader import read_blocktrace

pytestmark = pytest.mark.integration


@pytest.fixture(scope="module")
def bam(biossd, tmp_path_factory):
    out = tmp_path_factory.mktemp("bam")
    biossd("data", "synth", "bam", "--size", "8M", "--seed", "7", "-o", str(out))
    return out / "reads.bam"


def test_samtools_sort_under_a_cap_spills_and_is_recorded(biossd, bam, tmp_path, root_required):
    before = set(find_leftovers())
    (tmp_path / "tmp").mkdir()
    cmd = biossd("catalogue", "command", "--mem", "64M", "--set", "sort_mem=16M", "samtools_sort", f"in_bam={bam}",
                 f"out_bam={tmp_path / 'sorted.bam'}", f"tmp_prefix={tmp_path / 'tmp' / 'sort'}").stdout.split()
    run = tmp_path / "run"
    called = time.monotonic()
    biossd("profile", "--mem", "64M", "--out", str(run), "--label", "tool=samtools_sort", "--", *cmd)
    elapsed_s = time.monotonic() - called
    body = manifest.read_manifest(run)
    assert body["outcome"] == "ok" and body["exit_code"] == 0
    # The profiler's own time, phase by phase: none of it is the command's, all of it is inside the call.
    phases = body["harness_s"]
    assert {"lock_wait", "set_up", "drop_caches", "start_collectors", "flush", "stop_collectors",
            "tear_down", "record"} <= set(phases), phases
    assert all(v >= 0 for v in phases.values()) and sum(phases.values()) + body["wall_s"] < elapsed_s, phases
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
    requests = read_blocktrace(run / "blocktrace.tsv.gz")
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


@pytest.mark.parametrize("prefix", [[], ["env", "TMPDIR=/nowhere", 'JAVA_TOOL_OPTIONS=-Dx="a b"']],
                         ids=["bare", "under-env"])
def test_command_not_found_is_recorded_as_exit_127(biossd, tmp_path, prefix):
    """The missing command is named, also behind the `env NAME=VALUE` a staged tool runs under."""
    run = tmp_path / "run"
    biossd("profile", "--mem", "none", "--no-drop-caches", "--out", str(run), "--", *prefix, "no-such-command-xyz")
    body = manifest.read_manifest(run)
    assert body["outcome"] == "failed" and body["exit_code"] == 127
    assert body["error"] == "command not found: no-such-command-xyz"


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
        while not list(tmp_path.glob(".run.biossd-partial-*/sampler.csv")) or state()[0] == before[0] \
                or state()[1] == before[1]:
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
    assert not run.exists() and not list(tmp_path.glob(".run.*")), "the interrupted run left a directory"
    assert state() == before, "a cgroup, tracefs instance, swap area or loop device was left"
    assert not list(tmp_path.glob("biossd-swap-*")), "the swap file was left"
    assert "interrupted" in err


def test_doctor_finds_and_cleanup_removes_what_a_killed_run_left(biossd, env, tmp_path, root_required):
    run = tmp_path / "run"
    before_swaps = swap.active_swaps()
    proc = subprocess.Popen(
        [sys.executable, "-m", "biossd", "profile", "--mem", "64M", "--no-drop-caches", "--swap", "64M",
         "--swap-dir", str(tmp_path), "--out", str(run), "--", "sleep", "60"], env=env,
    )
    deadline = time.monotonic() + 20
    while not list(tmp_path.glob(".run.biossd-partial-*/sampler.csv")):
        assert time.monotonic() < deadline and proc.poll() is None, "the profiled run never started"
        time.sleep(0.05)
    swaps_during = set(swap.active_swaps())
    proc.kill()  # SIGKILL: nothing of the profiler's own cleanup runs
    proc.wait()
    doctor = biossd("doctor", check=False)
    assert doctor.returncode == 1
    for kind in ("cgroup", "tracefs", "swap", "killed run"):
        assert f"leftover {kind}:" in doctor.stdout, doctor.stdout
    cleanup = biossd("cleanup", check=False)
    assert cleanup.returncode == 0, cleanup.stderr
    assert biossd("doctor", check=False).returncode == 0
    assert not list(tmp_path.glob("biossd-swap-*")), "the swap file was left"
    assert not list(tmp_path.glob(".run.*")) and not run.exists(), "the partial run directory was left"
    run_swaps = swaps_during - set(before_swaps)
    assert run_swaps and not run_swaps & set(swap.active_swaps()), "the run's swap area is still on"


def test_out_never_deletes_what_biossd_did_not_make(biossd, tmp_path, monkeypatch):
    """An existing directory of the user's, the current and home directories and / are refused,
    and nothing in them is touched."""
    mine = tmp_path / "mine"
    mine.mkdir()
    (mine / "precious.txt").write_text("keep me")
    empty = tmp_path / "empty"
    empty.mkdir()
    for out, cwd in ((mine, None), (empty, None), (Path("."), tmp_path), (Path("/"), None),
                     (Path.home(), None), (tmp_path, mine)):
        proc = biossd("profile", "--mem", "none", "--out", str(out), "--", "true", check=False, cwd=cwd)
        assert proc.returncode == 2 and "nothing was run" in proc.stderr, (out, proc.stderr)
    assert (mine / "precious.txt").read_text() == "keep me" and empty.is_dir() and not list(empty.iterdir())


def test_host_lock_serializes_runs_and_no_wait_refuses(biossd, env, tmp_path):
    first = subprocess.Popen([sys.executable, "-m", "biossd", "profile", "--mem", "none", "--no-drop-caches",
                              "--out", str(tmp_path / "a"), "--", "sleep", "3"], env=env,
                             stderr=subprocess.PIPE, text=True)
    try:
        deadline = time.monotonic() + 20
        while "host lock" not in (doctor := biossd("doctor", check=False).stdout):
            assert time.monotonic() < deadline and first.poll() is None, "the first run never took the lock"
            time.sleep(0.05)
        assert f"writing {tmp_path / 'a'}" in doctor, doctor
        busy = biossd("profile", "--mem", "none", "--no-wait", "--out", str(tmp_path / "b"), "--", "true", check=False)
        assert busy.returncode == 75 and "holds the host lock" in busy.stderr and str(tmp_path / "a") in busy.stderr
        waited = biossd("profile", "--mem", "none", "--no-drop-caches", "--out", str(tmp_path / "c"), "--", "true")
        assert "waiting for the host lock" in waited.stderr
        assert first.poll() is not None, "the second run started while the first held the lock"
    finally:
        first.communicate(timeout=30)
    assert manifest.read_manifest(tmp_path / "c")["outcome"] == "ok" and not (tmp_path / "b").exists()


def test_a_tool_that_ignores_sigterm_is_killed_after_the_grace_period(env, tmp_path, root_required):
    from biossd.measure.processes import TERM_GRACE_S

    proc = subprocess.Popen([sys.executable, "-m", "biossd", "profile", "--mem", "64M", "--no-drop-caches",
                             "--out", str(tmp_path / "run"), "--", "sh", "-c",
                             "trap '' TERM INT; echo ready; sleep 120"],
                            env=env, stderr=subprocess.PIPE, text=True)
    deadline = time.monotonic() + 20
    # Until the tool itself runs (its trap set), not just the profiler's gate before it.
    while "ready" not in "".join(p.read_text() for p in tmp_path.glob(".run.biossd-partial-*/stdout.log")):
        assert time.monotonic() < deadline and proc.poll() is None, "the profiled run never started"
        time.sleep(0.05)
    t0 = time.monotonic()
    proc.send_signal(signal.SIGINT)
    _, err = proc.communicate(timeout=TERM_GRACE_S + 30)
    assert proc.returncode == 128 + signal.SIGINT, err
    assert TERM_GRACE_S <= time.monotonic() - t0 < TERM_GRACE_S + 15
    assert not find_leftovers(include_live=True) and not list(tmp_path.iterdir())


def test_dirty_data_is_flushed_inside_the_traced_window(biossd, tmp_path, root_required):
    """A tool that exits with its writes still in the page cache: the scratch is synced after it,
    traced but outside wall_s, so its writes are in the run's window and counted (Wsize)."""
    import math

    from biossd.features import extract as features

    run = tmp_path / "run"
    biossd("profile", "--mem", "none", "--no-drop-caches", "--out", str(run), "--", "dd", "if=/dev/zero",
           f"of={tmp_path}/x", "bs=1M", "count=16", cwd=tmp_path)
    body = manifest.read_manifest(run)
    assert body["flush_s"] is not None and body["flush_s"] >= 0
    # The window ends when the flush ended, not at wall_s + flush_s: the profiler's own work between
    # the command's end and the flush would otherwise push the flush's writes out of it.
    assert body["flush_ended_s"] >= body["command_started_s"] + body["wall_s"] + body["flush_s"] - 1e-6
    trace = read_blocktrace(run / "blocktrace.tsv.gz")
    t0 = body["command_started_s"]
    window = trace[(trace.op == "W") & trace.issue_s.between(t0, t0 + manifest.window_s(body))]
    assert window.bytes.sum() >= 16 << 20, "the 16 MiB dd left in the page cache reached the traced window"
    assert math.isfinite(features.run_features(run)["Wsize"])


@pytest.mark.parametrize(("mib", "floor_mib", "ceiling_mib"), [(0, 0, 16), (100, 100, 140)])
def test_the_peak_rss_is_the_commands_own_not_the_profilers(biossd, tmp_path, mib, floor_mib, ceiling_mib):
    """Linux keeps a process's peak RSS across exec: measured by wait4 after the profiler's fork,
    a tiny command would weigh as much as the Python profiler (some 30-60 MiB). GNU time's report
    is the command's own."""
    run = tmp_path / "run"
    argv = ["true"] if mib == 0 else [sys.executable, str(Path(__file__).parent / "programs" / "memory_hog.py"), str(mib)]
    biossd("profile", "--mem", "1G", "--no-drop-caches", "--blocktrace", "off", "--perf", "off", "--out", str(run),
           "--", *argv)
    acct = json.loads((run / "rusage.json").read_text())
    assert acct["max_rss_source"].startswith("GNU time"), acct
    assert floor_mib << 10 <= acct["max_rss_kib"] <= ceiling_mib << 10, acct


HOLD = ("import time\nx = bytearray({mib} << 20)\nfor i in range(0, len(x), 4096): x[i] = 1\n"
        "print('ready', flush=True)\ntime.sleep({sleep_s})\n")


def test_a_timed_out_command_is_accounted_as_itself(biossd, tmp_path):
    """The timeout kills the command, not GNU time, which reports it: its faults and peak are
    in the record (a timed-out run's paging is what explains it)."""
    run = tmp_path / "run"
    biossd("profile", "--mem", "1G", "--no-drop-caches", "--blocktrace", "off", "--perf", "off", "--timeout", "3s",
           "--out", str(run), "--", sys.executable, "-c", HOLD.format(mib=64, sleep_s=60))
    body = manifest.read_manifest(run)
    acct = json.loads((run / "rusage.json").read_text())
    assert body["outcome"] == "timeout" and body["signal"] == signal.SIGKILL
    assert acct["max_rss_source"].startswith("GNU time") and acct["max_rss_kib"] >= 64 << 10, acct
    assert acct["minor_faults"] >= (64 << 20) // 4096, acct


def test_a_command_whose_gnu_time_was_killed_is_reaped_and_accounted_by_the_profiler(env, tmp_path):
    """SLURM signals every process of a job: if GNU time dies first, its command is reparented
    to the profiler (a child subreaper), waited for, and recorded as itself."""
    run = tmp_path / "run"
    proc = subprocess.Popen([sys.executable, "-m", "biossd", "profile", "--mem", "1G", "--no-drop-caches",
                             "--blocktrace", "off", "--perf", "off", "--out", str(run), "--", sys.executable, "-c",
                             HOLD.format(mib=64, sleep_s=3)], env=env, stderr=subprocess.PIPE, text=True)
    deadline = time.monotonic() + 30
    while "ready" not in "".join(p.read_text() for p in tmp_path.glob(".run.biossd-partial-*/stdout.log")):
        assert time.monotonic() < deadline and proc.poll() is None, "the profiled command never started"
        time.sleep(0.05)
    gnu_time = subprocess.run(["pgrep", "-f", f"^{shutil.which('time')} --output {tmp_path}/"],
                              capture_output=True, text=True).stdout.split()
    assert len(gnu_time) == 1, gnu_time
    os.kill(int(gnu_time[0]), signal.SIGKILL)
    _, err = proc.communicate(timeout=60)
    assert proc.returncode == 0, err
    body = manifest.read_manifest(run)
    acct = json.loads((run / "rusage.json").read_text())
    assert body["outcome"] == "ok" and body["exit_code"] == 0, "the command's own status, not GNU time's"
    assert "reaped by the profiler" in acct["max_rss_source"] and acct["max_rss_kib"] >= 64 << 10, acct
    assert body["wall_s"] >= 3


def test_another_process_s_requests_on_the_device_are_named_and_left_out(biossd, tmp_path, root_required):
    """A process outside the run reading the same device meanwhile (another study, a daemon) is
    named in the block trace's record as foreign; the run's features count only its own."""
    mine, theirs = tmp_path / "mine.bin", tmp_path / "theirs.bin"
    for path in (mine, theirs):
        path.write_bytes(os.urandom(8 << 20))
    reader = subprocess.Popen(["sh", "-c", f"while :; do dd if={theirs} of=/dev/null bs=64k iflag=direct "
                               "status=none; done"], start_new_session=True)
    try:
        run = tmp_path / "run"
        biossd("profile", "--mem", "64M", "--no-drop-caches", "--out", str(run), "--", "sh", "-c",
               f"for i in 1 2 3 4; do dd if={mine} of=/dev/null bs=64k iflag=direct status=none; done")
    finally:
        os.killpg(reader.pid, signal.SIGKILL)
        reader.wait()
    body = manifest.read_manifest(run)
    trace = body["collectors"]["blocktrace"]
    foreign = trace["foreign"]
    assert foreign["requests"] > 0 and {f["comm"] for f in foreign["pids"].values()} >= {"dd"}, foreign
    requests = read_blocktrace(run / "blocktrace.tsv.gz")
    own = requests[~requests.pid.isin([int(p) for p in foreign["pids"]])]
    row = features.run_features(run)
    mine_read = own[own.op.eq("R")].bytes.sum()
    assert mine_read >= 4 * mine.stat().st_size, "the run's own O_DIRECT reads are kept"
    assert row["Riops"] == pytest.approx((own.op == "R").sum() / body["wall_s"], rel=0.05)


def test_the_resident_memory_is_every_process_s_not_the_largest_one_s(biossd, tmp_path, root_required):
    """The sizing rule's floor counts a program's every process (a wrapper holding memory while
    its child works, say): the run's cgroup is read every few ms, uncapped runs included, where
    GNU time's peak is the largest process's alone."""
    parent, child = 48, 64  # MiB each holds, the parent while waiting for the child
    script = (f"import subprocess, sys; held = bytearray({parent} << 20); "
              f"subprocess.run([sys.executable, '-c', 'import time; x = bytearray({child} << 20); time.sleep(0.3)'])")
    biossd("profile", "--mem", "none", "--out", str(tmp_path / "run"), "--", sys.executable, "-c", script)
    body = manifest.read_manifest(tmp_path / "run")
    resident = body["memory_cap"]["resident"]
    largest_kib = json.loads((tmp_path / "run" / "rusage.json").read_text())["max_rss_kib"]
    assert body["memory_cap"]["backend"] == "none" and body["memory_cap"]["accounted_in"]
    assert resident["peak_bytes"] >= (parent + child) << 20
    assert largest_kib << 10 < (parent + child) << 20 <= resident["peak_bytes"] < (parent + child + 64) << 20
    assert find_leftovers() == []  # the accounting cgroup is gone with the run
    row = features.run_features(tmp_path / "run")
    assert row["resident_peak_kib"] == resident["peak_bytes"] / 1024


@pytest.mark.parametrize("pmu", [False, True])
def test_perf_pmu_runs_perf_only_where_the_host_has_a_pmu(tmp_path, monkeypatch, pmu):
    """``perf="pmu"`` (a pipeline's tasks): without a PMU perf would count only what the process
    accounting gives, so it is not started and the record says why; with one it counts."""
    from biossd.measure import counters, manifest, profile

    monkeypatch.setattr(counters, "has_pmu", lambda: pmu)
    if pmu:  # this host has none: perf counts its software events, which is enough to see it ran
        monkeypatch.setattr(counters, "default_events", lambda: counters.SOFTWARE_EVENTS)
    run = tmp_path / "run"
    profile.run(profile.ProfileRequest(argv=["true"], out_dir=run, mem_bytes=None, blocktrace="off", perf="pmu",
                                       drop_caches=False))
    record = manifest.read_manifest(run)["collectors"]["perf"]
    if pmu:
        assert record["ran"] is True, record
    else:
        assert record["ran"] is False and record["why"] == collectors.NO_PMU_WHY


def test_the_command_works_in_the_request_s_directory_and_the_profiler_s_stays_put(tmp_path):
    """``ProfileRequest.cwd``: the command's relative writes and a relative program path are the
    working directory's, the manifest records it, and the profiler's own directory is unchanged
    (nothing sets it: the process's directory is not how a run says where it works)."""
    from biossd.measure import profile
    from biossd.measure.request import ProfileRequest

    work = tmp_path / "scratch"
    work.mkdir()
    (work / "tool.sh").write_text("#!/bin/sh\npwd > here.txt\n")
    (work / "tool.sh").chmod(0o755)
    before = os.getcwd()
    profile.run(ProfileRequest(argv=["./tool.sh"], out_dir=tmp_path / "run", mem_bytes=None, cwd=work,
                               blocktrace="off", perf="off", drop_caches=False))
    body = manifest.read_manifest(tmp_path / "run")
    assert body["outcome"] == "ok" and body["cwd"] == str(work) and os.getcwd() == before
    assert (work / "here.txt").read_text().strip() == str(work)
    assert body["mounts"]["cwd"]["mount_point"] == body["mounts"]["out"]["mount_point"]
    missing = profile.run(ProfileRequest(argv=["./tool.sh"], out_dir=tmp_path / "elsewhere", mem_bytes=None,
                                         cwd=tmp_path, blocktrace="off", perf="off", drop_caches=False))
    assert (missing["outcome"], missing["exit_code"]) == ("failed", 127), "a relative program is the working directory's"
    with pytest.raises(profile.ProfileError, match="not a directory"):
        profile.run(ProfileRequest(argv=["true"], out_dir=tmp_path / "r3", mem_bytes=None, cwd=tmp_path / "gone"))


def test_a_signal_during_the_run_interrupts_it_unless_slurm_s_time_limit_sent_it(monkeypatch):
    """The run's state: SIGTERM from SLURM at its time limit kills the command and is recorded as a
    timeout; any other signal is the run's interruption, passed on to the command."""
    from biossd.host.slurm import scheduler
    from biossd.measure import measurement, processes
    from biossd.measure.request import Interrupted

    sent = []
    monkeypatch.setattr(processes, "signal_command", lambda pid, signum, timer: sent.append((pid, signum)))
    child = type("Child", (), {"pid": 4242, "returncode": None})()
    for at_limit, expected in ((True, signal.SIGKILL), (False, signal.SIGTERM)):
        monkeypatch.setattr(scheduler, "time_limit_reached", lambda at_limit=at_limit: at_limit)
        state = measurement.RunState(gnu_time=None)
        state.check()  # nothing came yet
        state.child = child
        state.on_signal(signal.SIGTERM, None)
        assert sent[-1] == (4242, expected) and state.scheduler_timeout is at_limit
        if at_limit:
            state.check()
        else:
            with pytest.raises(Interrupted):
                state.check()
