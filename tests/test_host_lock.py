"""The host lock between measured runs: a profiler killed by SIGKILL releases the lock but not
the tool it was measuring, which runs on in a session of its own, so the next holder kills that
session and the dead run's cgroup before it measures (biossd.host.hostlock.reap); and a run never
replaces a complete run that appeared at its --out while it waited or ran."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

import pytest

from biossd.core.owners import start_ticks
from biossd.host import hostlock
from biossd.measure import manifest

pytestmark = pytest.mark.integration


def _pid_of(argv_tail: str, timeout_s: float = 15.0) -> int:
    """The pid of the process whose command line ends with ``argv_tail``."""
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        for entry in Path("/proc").iterdir():
            if entry.name.isdigit():
                try:
                    cmdline = (entry / "cmdline").read_bytes().replace(b"\0", b" ").decode().strip()
                except OSError:
                    continue
                if cmdline.endswith(argv_tail) and cmdline.startswith("sleep"):
                    return int(entry.name)
        time.sleep(0.05)
    raise AssertionError(f"no process `{argv_tail}` started")


def _forget_stale(pid: int) -> None:
    """Remove the record a holder this test killed left in the runtime directory's stale/."""
    from biossd.host import hostlock
    from biossd.measure import leftovers

    for record in hostlock.stale_records():
        if record.name.startswith(f"{pid}-"):
            leftovers._remove_stale(record)


def test_a_killed_profiler_s_tool_is_gone_before_the_next_run_measures(env, tmp_path, root_required):
    exe = shutil.which("biossd", path=env["PATH"])
    duration = f"30.{os.getpid()}"  # a command line no other process has
    common = ["profile", "--mem", "64M", "--no-drop-caches", "--blocktrace", "off", "--perf", "off"]
    first = subprocess.Popen([exe, *common, "--out", str(tmp_path / "first"), "--", "sleep", duration], env=env,
                             stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    tool = _pid_of(f"sleep {duration}")
    tool_start = start_ticks(tool)
    time.sleep(2)
    first.kill()
    first.wait()
    assert start_ticks(tool) == tool_start, "the tool died with its profiler: nothing to reap in this test"
    # The second run's command looks for the first run's tool: it must be gone before it starts.
    # (Gone or a zombie: a subreaper above this test may hold the dead tool unreaped.)
    gone = (f"s=$(cut -d' ' -f3,22 /proc/{tool}/stat 2>/dev/null); case \"$s\" in ''|Z*|X*) exit 0;; esac; "
            f"[ \"${{s#* }}\" != {tool_start} ]")
    second = subprocess.run([exe, *common, "--out", str(tmp_path / "second"), "--", "sh", "-c", gone],
                            env=env, capture_output=True, text=True, timeout=120)
    assert second.returncode == 0, second.stderr
    body = manifest.read_manifest(tmp_path / "second")
    assert body["outcome"] == "ok", ("the first run's tool was still running when the second run started",
                                     body["host_lock"], (tmp_path / "second" / "stderr.log").read_text())
    reaped = " ".join(body["host_lock"]["reaped_stale_holder"])
    assert "died holding the host lock" in reaped and "killed" in reaped, json.dumps(body["host_lock"])
    assert start_ticks(tool) != tool_start
    assert not (tmp_path / "first").exists()
    _forget_stale(first.pid)


def test_a_run_that_appeared_at_the_target_meanwhile_is_kept(env, tmp_path, root_required):
    """The second profile checks --out before it waits for the lock (nothing there yet) and
    again when it publishes (the first run is there now): it keeps the first and refuses itself."""
    exe = shutil.which("biossd", path=env["PATH"])
    common = ["profile", "--mem", "64M", "--no-drop-caches", "--blocktrace", "off", "--perf", "off",
              "--out", str(tmp_path / "run")]
    first = subprocess.Popen([exe, *common, "--", "sleep", "3"], env=env, stdout=subprocess.DEVNULL,
                             stderr=subprocess.DEVNULL)
    _pid_of("sleep 3")
    second = subprocess.run([exe, *common, "--", "true"], env=env, capture_output=True, text=True, timeout=120)
    assert first.wait(timeout=60) == 0
    assert second.returncode != 0 and "appeared there while this one ran; it is kept" in second.stderr
    assert manifest.read_manifest(tmp_path / "run")["argv"] == ["sleep", "3"]
    assert [p.name for p in tmp_path.iterdir()] == ["run"], "the refused run left its partial directory"


def test_a_stale_record_removes_only_the_partial_its_dead_holder_made(tmp_path):
    """biossd cleanup follows a dead holder's record: the partial run directory it names is
    removed only when that directory's marker names the same process."""
    from biossd.measure import leftovers, rundir

    target = tmp_path / "run"
    ours = rundir.make_partial(target)  # made by this process
    theirs = rundir.make_partial(tmp_path / "other")
    marker = json.loads((theirs / rundir.MARKER).read_text())
    (theirs / rundir.MARKER).write_text(json.dumps({**marker, "pid": marker["pid"] + 1}))
    me = json.loads((ours / rundir.MARKER).read_text())
    try:
        for partial in (ours, theirs):
            record = tmp_path / f"{partial.name}.json"
            record.write_text(json.dumps({"pid": me["pid"], "start_ticks": me["start_ticks"], "partial": str(partial)}))
            leftovers._remove_stale(record)
            assert not record.exists()
        assert not ours.exists() and theirs.exists()
    finally:  # this test made both (and their records, which outlive it): the host as it was
        for partial in (ours, theirs):
            rundir.remove(partial)


def test_a_user_s_runtime_directory_must_be_theirs_alone(tmp_path, monkeypatch):
    from biossd.core import runtime
    from biossd.host import hostlock

    monkeypatch.setattr(runtime.os, "geteuid", lambda: 1000)
    monkeypatch.setattr(runtime, "runtime_dir", lambda: tmp_path / "rt")
    (tmp_path / "rt").mkdir(mode=0o755)
    (tmp_path / "rt").chmod(0o755)
    with pytest.raises(hostlock.UnsafeRuntimeDir, match="is owned by uid 0|has mode 0755"):
        hostlock.ensure_runtime_dir()


def test_a_workflow_s_staging_copies_only_while_no_run_measures(biossd, env, tmp_path, root_required):
    """--hold-host-lock (PROFILE, CHAIN): the copy into scratch waits for the run holding the
    lock, so it never writes to the device inside another run's measured window."""
    from biossd.host import hostlock

    source = tmp_path / "in"
    biossd("data", "synth", "bam", "--size", "64K", "-o", str(source))
    scratch = tmp_path / "scratch"
    scratch.mkdir()
    exe = shutil.which("biossd", path=env["PATH"])
    with hostlock.HostLock("a measured run (this test)"):
        staging = subprocess.Popen([exe, "catalogue", "stage", "samtools_sort", "--input", str(source), "--scratch",
                                    str(scratch), "--existing-scratch", "--hold-host-lock"], env=env,
                                   stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        time.sleep(2)
        assert staging.poll() is None and list(scratch.iterdir()) == [], "staged inside a held window"
    out, err = staging.communicate(timeout=60)
    assert staging.returncode == 0 and "waiting for the host lock" in err
    assert (scratch / "reads.bam").is_file()


def test_a_group_member_stops_when_its_leader_is_killed(env, tmp_path, root_required):
    """A concurrent group's member (`biossd profile --group --die-with-parent`, as the shared-device experiment's
    leader starts them) gets SIGTERM from the kernel when its leader dies, even by SIGKILL, and
    stops its tool at once instead of measuring on without the lock."""
    exe = shutil.which("biossd", path=env["PATH"])
    duration = f"40.{os.getpid()}"
    leader = ("import subprocess, sys, time\n"
              "from biossd.host import hostlock\n"
              "with hostlock.HostLock('test leader', **{hostlock.GROUP_KEY: 'g-kill'}):\n"
              f"    subprocess.Popen([{exe!r}, 'profile', '--group', 'g-kill', '--die-with-parent', '--mem', 'none',"
              f" '--blocktrace', 'off', '--perf', 'off', '--no-drop-caches', '--out', {str(tmp_path / 'm')!r},"
              f" '--', 'sleep', {duration!r}])\n"
              "    time.sleep(600)\n")
    proc = subprocess.Popen([sys.executable, "-c", leader], env=env)
    tool = _pid_of(f"sleep {duration}")
    tool_start = start_ticks(tool)
    proc.kill()
    proc.wait()
    deadline = time.monotonic() + 5
    while start_ticks(tool) == tool_start and time.monotonic() < deadline:
        time.sleep(0.05)
    assert start_ticks(tool) != tool_start, "the member's tool ran on after its leader died"
    assert not (tmp_path / "m").exists() and not list(tmp_path.glob(".m.biossd-partial-*"))
    _forget_stale(proc.pid)


def test_no_run_measures_while_a_dead_leader_s_members_tear_down(env, tmp_path, root_required):
    """A concurrent group's leader SIGKILLed: its members, still ending (their grace), hold the
    group lock; the next holder of the host lock waits for them, and `cleanup` too, before either
    touches anything."""
    from biossd.host import hostlock

    leader = subprocess.Popen([sys.executable, "-c", (
        "import time; from biossd.host import hostlock\n"
        "with hostlock.HostLock('leader', concurrent_group='g'):\n"
        "    print('held', flush=True); time.sleep(60)\n")], env=env, stdout=subprocess.PIPE, text=True)
    member = None
    try:
        assert leader.stdout.readline().strip() == "held"
        ended = tmp_path / "member-ended"
        member = subprocess.Popen([sys.executable, "-c", (
            "import sys, time; from pathlib import Path; from biossd.host import grouplock\n"
            "with grouplock.GroupMember('g'):\n"
            "    print('in', flush=True); time.sleep(4)\n"
            "    Path(sys.argv[1]).write_text('teardown done')\n"), str(ended)],
            env=env, stdout=subprocess.PIPE, text=True)
        assert member.stdout.readline().strip() == "in"
        leader.kill()
        leader.wait()
        assert hostlock.members_running()
        t0 = time.monotonic()
        with hostlock.HostLock("next", notify=lambda text: None):
            # The member's last act inside its group section; its interpreter may still be exiting.
            assert ended.exists(), "the next holder measured beside a member still tearing down"
        assert time.monotonic() - t0 > 1
        assert not hostlock.members_running()
    finally:
        for proc in (leader, member):
            if proc is not None and proc.poll() is None:
                proc.kill()
        # The killed leader's record, moved aside by the next holder: this test's to remove.
        for record in hostlock.stale_records():
            if json.loads(record.read_text()).get("pid") == leader.pid:
                record.unlink()


def test_the_next_holder_takes_down_what_a_dead_run_left_without_its_record(monkeypatch):
    """A leader that ended while its tasks still read its trace instances removed its holder record
    but kept them: the next holder takes them down (their makers are dead), record or not."""
    left = ["trace instance /tmp/biossd-tracefs-1-2-x/instances/biossd-1-2-abcdef12"]
    monkeypatch.setattr(hostlock, "take_down_dead_devices", lambda: [f"took down its {left[0]}"])
    with hostlock.HostLock("next (this test)") as lock:
        assert hostlock.read_holder() is not None
        assert lock.reaped == [f"a dead run left: took down its {left[0]}"]


def test_a_wait_for_the_lock_ends_when_the_process_it_waits_for_is_gone():
    """A pipeline's leader waiting behind another run stops once its Nextflow has ended, rather
    than taking the lock for nobody when that run is done."""
    from biossd.core.owners import ProcessRef

    dead = subprocess.Popen(["true"])
    dead.wait()
    gone = ProcessRef(dead.pid, 1, "Nextflow (this test)")
    with hostlock.HostLock("a measured run (this test)"):
        with pytest.raises(hostlock.OwnerGone, match="is gone; stopped waiting"):
            with hostlock.HostLock("biossd pipeline lead (this test)", owner=gone, notify=lambda text: None):
                pass


def test_a_task_waiting_for_its_leader_stops_when_its_nextflow_is_gone(tmp_path, monkeypatch):
    from biossd.core.owners import ProcessRef
    from biossd.measure.own_pipeline import session as pipeline_session

    dead = subprocess.Popen(["true"])
    dead.wait()
    monkeypatch.setattr(pipeline_session, "_leader_holds", lambda group: False)
    with pytest.raises(pipeline_session.SessionError, match="is gone: this task of its session stops waiting"):
        pipeline_session._await_leader("g", tmp_path / "mark", ProcessRef(dead.pid, 1, "Nextflow"))


def _pooled_leader(env, group: str, fork_worker: bool) -> tuple[subprocess.Popen, dict]:
    """A concurrent group's leader holding the host lock with a trace pool of its own, and with
    ``fork_worker`` a worker forked from it as a session leader's are (it closes the inherited lock
    descriptor); what it made, as it says."""
    leader = subprocess.Popen([sys.executable, "-c", (
        "import json, os, time; from biossd.host import hostlock, tracefs\n"
        f"with hostlock.HostLock('leader (this test)', concurrent_group={group!r}):\n"
        "    with tracefs.InstancePool(size=2) as pool:\n"
        "        worker = os.fork() if %s else None\n"
        "        if worker == 0:\n"
        "            hostlock.close_inherited(); time.sleep(30); os._exit(0)\n"
        "        print(json.dumps({'instances': [str(p) for p in pool.paths], 'mount': str(pool.mount_point),\n"
        "                          'worker': worker}), flush=True)\n"
        "        time.sleep(60)\n") % fork_worker], env=env, stdout=subprocess.PIPE, text=True)
    return leader, json.loads(leader.stdout.readline())


def test_a_killed_leader_s_worker_does_not_keep_its_lock(env, root_required):
    """A worker forked from a leader (a pipeline session's, running a task handed to it) closes the
    lock's descriptor it inherited: the leader SIGKILLed, the lock is free at once, not once the
    worker ends, so a next leader can take over."""
    from biossd.host import grouplock, tracefs

    leader, made = _pooled_leader(env, "g-fork", fork_worker=True)
    try:
        leader.kill()
        leader.wait()
        assert start_ticks(made["worker"]) is not None, "the worker should still run"
        assert hostlock.held_by() is None, "the dead leader's worker kept the host lock"
    finally:
        if leader.poll() is None:
            leader.kill()
        os.kill(made["worker"], 9)
        deadline = time.monotonic() + 5
        while start_ticks(made["worker"]) is not None and time.monotonic() < deadline:
            time.sleep(0.05)
        # What the killed leader left, taken down as its group's last one out does.
        tidied = grouplock.tidy_after_group("g-fork")
    assert any("trace instance" in line for line in tidied), tidied
    assert not any(Path(p).exists() for p in made["instances"]) and not tracefs.find_leftovers()


def test_the_last_member_out_takes_down_what_its_killed_leader_left(env, root_required):
    """A leader SIGKILLed beside a member that claimed one of its pool's trace instances: nothing is
    taken from under the member, and once it ends, the leader's record, instances and private
    tracefs mount are gone — before any `cleanup` or next run."""
    from biossd.host import tracefs

    leader, made = _pooled_leader(env, "g-tidy", fork_worker=False)
    member = subprocess.Popen([sys.executable, "-c", (
        "import os, sys; from pathlib import Path; from biossd.host import grouplock, tracefs\n"
        "root = os.stat('/').st_dev\n"
        "with grouplock.GroupMember('g-tidy'):\n"
        "    with tracefs.BlockTraceInstance(devices=[(os.major(root), os.minor(root))], forks=False,\n"
        "                                    pooled=[Path(p) for p in sys.argv[1:]]) as mine:\n"
        "        print(mine.path, flush=True); sys.stdin.readline()\n"
        "        (mine.path / 'tracing_on').write_text('1')\n"), *made["instances"]],
        env=env, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        claimed = member.stdout.readline().strip()
        assert claimed in made["instances"]
        leader.kill()
        leader.wait()
        assert Path(claimed).is_dir(), "the killed leader's instance went from under its member"
        _out, err = member.communicate("end\n", timeout=30)
        assert member.returncode == 0, err
        assert "took down what its leader left" in err
    finally:
        for proc in (leader, member):
            if proc.poll() is None:
                proc.kill()
    assert not any(Path(p).exists() for p in made["instances"])
    assert made["mount"] == str(tracefs.HOST_TRACEFS) or not os.path.ismount(made["mount"])
    assert not tracefs.find_leftovers()
    assert hostlock.read_holder() is None and not any(
        json.loads(r.read_text()).get("pid") == leader.pid for r in hostlock.stale_records())
