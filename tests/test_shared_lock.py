"""A leaderless group holds the host lock shared (biossd.host.sharedlock): members of one group
measure side by side, an exclusive run and another group wait for the last of them, the record
names only members that hold the lock, and a SIGKILLed member is reaped and left to cleanup. Each
member is a process of its own (the lock is per process), in a runtime directory of the test's."""

from __future__ import annotations

import json
import signal
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from biossd.core import runtime
from biossd.host import hostlock

MEMBER = textwrap.dedent("""
    import sys
    from pathlib import Path
    from biossd.core import runtime
    runtime.runtime_dir = lambda: Path(sys.argv[1])
    from biossd.host import sharedlock
    with sharedlock.SharedHold(sys.argv[2], "test member", wait=False, notify=lambda text: None) as hold:
        hold.update(partial=sys.argv[3])
        print(hold.members_at_start, flush=True)
        sys.stdin.readline()
""")


@pytest.fixture
def rundir(tmp_path, monkeypatch):
    directory = tmp_path / "rt"
    directory.mkdir(mode=0o700)
    monkeypatch.setattr(runtime, "runtime_dir", lambda: directory)
    return directory


def _member(rundir: Path, token: str, partial: str = "none") -> tuple[subprocess.Popen, str]:
    proc = subprocess.Popen([sys.executable, "-c", MEMBER, str(rundir), token, partial], stdin=subprocess.PIPE,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    line = proc.stdout.readline().strip()
    return proc, line


def _end(proc: subprocess.Popen) -> None:
    proc.communicate("\n", timeout=30)
    assert proc.returncode == 0


def test_members_of_one_group_hold_the_lock_together_and_an_exclusive_run_waits(rundir):
    first, joined_first = _member(rundir, "group-a")
    second, joined_second = _member(rundir, "group-a")
    try:
        assert (joined_first, joined_second) == ("1", "2"), first.stderr.read() if not joined_first else ""
        record = hostlock.held_by()
        assert record[hostlock.GROUP_KEY] == "group-a" and record["pid"] == first.pid
        assert [m["pid"] for m in record[hostlock.MEMBERS_KEY]] == [first.pid, second.pid]
        with pytest.raises(hostlock.HostBusy):
            with hostlock.HostLock("exclusive", wait=False):
                pass
        other, said = _member(rundir, "group-b")
        other.wait(timeout=30)
        assert other.returncode != 0 and "shared group of measured runs group-a (2 running)" in other.stderr.read()
        _end(first)
        record = hostlock.held_by()
        assert record["pid"] == second.pid and [m["pid"] for m in record[hostlock.MEMBERS_KEY]] == [second.pid]
    finally:
        for proc in (first, second):
            if proc.poll() is None:
                _end(proc)
    assert hostlock.held_by() is None and not hostlock.holder_path().exists()
    with hostlock.HostLock("exclusive", wait=False):
        pass


def test_a_killed_member_is_left_to_cleanup_and_the_last_one_frees_the_lock(rundir):
    killed, _ = _member(rundir, "group-a", partial="/nonexistent/killed")
    kept, _ = _member(rundir, "group-a", partial="/nonexistent/kept")
    killed.send_signal(signal.SIGKILL)
    killed.wait()
    _end(kept)
    assert hostlock.held_by() is None and not hostlock.holder_path().exists()
    stale = hostlock.stale_records()
    assert [json.loads(p.read_text())["partial"] for p in stale] == ["/nonexistent/killed"]
    assert stale[0].name.startswith(f"{killed.pid}-")


def test_an_exclusive_run_reaps_a_group_whose_members_were_all_killed(rundir):
    members = [_member(rundir, "group-a", partial=f"/nonexistent/{n}")[0] for n in range(2)]
    for proc in members:
        proc.send_signal(signal.SIGKILL)
        proc.wait()
    assert hostlock.read_holder()[hostlock.GROUP_KEY] == "group-a"  # what they left
    with hostlock.HostLock("exclusive", wait=False):
        assert hostlock.read_holder()["what"] == "exclusive"
    names = sorted(p.name.split("-")[0] for p in hostlock.stale_records())
    assert names == sorted(str(p.pid) for p in members)


def test_a_member_reaps_a_dead_exclusive_holder_before_it_joins(rundir):
    dead = subprocess.run([sys.executable, "-c", "import os; print(os.getpid())"], capture_output=True, text=True)
    pid = int(dead.stdout)
    hostlock.holder_path().write_text(json.dumps({"pid": pid, "start_ticks": 1, "what": "a killed run"}))
    member, joined = _member(rundir, "group-a")
    try:
        assert joined == "1"
        assert [p.name for p in hostlock.stale_records()] == [f"{pid}-1.json"]
        assert hostlock.read_holder()[hostlock.GROUP_KEY] == "group-a"
    finally:
        _end(member)


def test_a_leader_s_record_naming_its_members_is_not_taken_for_a_shared_group(rundir):
    """A group leader's holder record lists its members by name (`members`): reaping it reaps the
    leader, not each name as a holder."""
    dead = subprocess.run([sys.executable, "-c", "import os; print(os.getpid())"], capture_output=True, text=True)
    record = {"pid": int(dead.stdout), "start_ticks": 1, hostlock.GROUP_KEY: "experiment-x", "members": ["a", "b"]}
    assert hostlock.reap(record) == []
    hostlock.holder_path().write_text(json.dumps(record))
    hostlock.move_aside(record)
    assert [p.name for p in hostlock.stale_records()] == [f"{record['pid']}-1.json"]
