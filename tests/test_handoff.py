"""A pipeline task handed to its session's leader (biossd.measure.own_pipeline.handoff): a real socket, real
descriptors and a real fork; the leader's command line is a small function here (the whole task
path runs in tests/test_own_pipeline.py, whose later tasks are handed off)."""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
import time

import pytest

from biossd.measure.own_pipeline import handoff
from biossd.measure.own_pipeline import task as pipeline_task

#: How long a test waits for a task's process, serving it meanwhile.
WAIT_S = 20.0


def task_argv(owner_pid: int, **extra) -> list[str]:
    word = pipeline_task.encode({"process": "P", "concurrency": "side-by-side", "owner_pid": owner_pid, **extra})
    return ["pipeline", "task", "--task", word, "--", "/bin/true"]


def start_task(argv: list[str], cwd, env_extra: dict[str, str] | None = None) -> subprocess.Popen:
    """A task's process as Nextflow starts it: ``biossd pipeline task ...`` (here the entry's
    hand-off only, which exits 99 where it would run the task itself)."""
    code = ("import sys; from biossd.measure.own_pipeline import handoff\n"
            "status = handoff.hand_off(sys.argv[1:])\n"
            "sys.exit(99 if status is None else status)\n")
    return subprocess.Popen([sys.executable, "-c", code, *argv], cwd=cwd, env={**os.environ, **(env_extra or {})},
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE)


def serve_until_done(listener: handoff.Listener, proc: subprocess.Popen, also=lambda: None) -> None:
    deadline = time.monotonic() + WAIT_S
    while proc.poll() is None and time.monotonic() < deadline:
        listener.serve(0.05)
        also()
    listener._reap()


def test_only_a_side_by_side_task_of_a_named_nextflow_process_is_handed_off():
    assert handoff.member_task(task_argv(1234))["owner_pid"] == 1234
    assert handoff.member_task(task_argv(1234, concurrency="serial")) is None
    assert handoff.member_task(task_argv(1234, executor="slurm")) is None
    assert handoff.member_task(task_argv(0)) is None
    assert handoff.member_task(["pipeline", "task", "--task", "not base64!", "--", "x"]) is None
    assert handoff.member_task(["profile", "--mem", "1G"]) is None


def test_a_task_with_no_leader_listening_runs_in_its_own_process(tmp_path):
    """Nothing listens for this (dead) Nextflow process: nothing was sent, the task is its own."""
    proc = start_task(task_argv(2 ** 22 + 7), tmp_path)
    assert proc.wait(WAIT_S) == 99


def test_the_worker_becomes_the_task_and_its_status_is_the_task_s(tmp_path):
    """Its standard output and error are the task's own descriptors, its directory, environment
    and umask the task's; the task's process exits with the worker's status."""
    def run(argv: list[str]) -> int:
        # (descriptors 1 and 2: pytest's capture has replaced sys.stdout in this process)
        os.write(1, f"cwd={os.getcwd()} var={os.environ.get('HANDOFF_TEST_VAR')} umask={os.umask(0):03o} "
                    f"argv={argv[-1]}\n".encode())
        os.write(2, b"to the task's stderr\n")
        return 7 if handoff.in_worker() else 1

    owner, umask = os.getpid(), os.umask(0o022)
    os.umask(umask)
    with handoff.Listener(owner, lambda request: True, run) as listener:
        path = listener.path
        assert oct(os.stat(path).st_mode & 0o777) == "0o600"
        proc = start_task(task_argv(owner), tmp_path, {"HANDOFF_TEST_VAR": "from-the-task"})
        serve_until_done(listener, proc)
        out, err = proc.communicate(timeout=WAIT_S)
    assert proc.returncode == 7, err
    assert f"cwd={tmp_path} var=from-the-task umask={umask:03o} argv=/bin/true" in out.decode()
    assert "to the task's stderr" in err.decode()
    assert not os.path.exists(path), "the leader's socket is removed with it"


def test_a_declined_task_runs_in_its_own_process(tmp_path):
    owner = os.getpid()
    with handoff.Listener(owner, lambda request: False, lambda argv: 0) as listener:
        proc = start_task(task_argv(owner), tmp_path)
        serve_until_done(listener, proc)
    assert proc.wait(WAIT_S) == 99


@pytest.mark.parametrize("how", ["signal", "kill"])
def test_the_worker_ends_the_task_when_its_process_is_stopped(tmp_path, how):
    """Nextflow stops a task by SIGTERM to its process, which sends it on to the worker; a task
    process killed outright (SIGKILL) ends the worker's run as SIGTERM would."""
    mark = tmp_path / "worker-got"

    def run(argv: list[str]) -> int:
        got: list[int] = []
        signal.signal(signal.SIGTERM, lambda signum, _frame: got.append(signum))
        deadline = time.monotonic() + WAIT_S
        while not got and time.monotonic() < deadline:
            time.sleep(0.01)
        mark.write_text(str(got[0] if got else "nothing"))
        return 128 + got[0] if got else 0

    owner = os.getpid()
    sent: list[bool] = []

    def stop_once_started() -> None:
        if not sent and proc.poll() is None and _worker_running(listener):
            proc.send_signal(signal.SIGTERM if how == "signal" else signal.SIGKILL)
            sent.append(True)

    with handoff.Listener(owner, lambda request: True, run) as listener:
        proc = start_task(task_argv(owner), tmp_path)
        serve_until_done(listener, proc, stop_once_started)
        deadline = time.monotonic() + WAIT_S
        while not mark.exists() and time.monotonic() < deadline:
            time.sleep(0.05)
    assert mark.read_text() == str(int(signal.SIGTERM))
    assert proc.wait(WAIT_S) == (128 + signal.SIGTERM if how == "signal" else -signal.SIGKILL)


def _worker_running(listener: handoff.Listener) -> bool:
    """A worker has started (given a moment to set its handler)."""
    if not listener.workers:
        return False
    time.sleep(0.3)
    return True


def test_a_killed_leader_s_socket_is_a_leftover_that_cleanup_removes(tmp_path):
    """A leader SIGKILLed before it removed its socket leaves it; ``biossd cleanup`` finds it
    (nothing answers) and removes it — and not a live leader's."""
    owner = os.getpid()
    with handoff.Listener(owner, lambda request: True, lambda argv: 0) as live:
        dead = live.path.replace(f"-{owner}.sock", f"-{2 ** 22 + 9}.sock")
        stale = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        stale.bind(dead)
        stale.close()  # bound, no longer listening: what a killed leader leaves
        try:
            found = handoff.find_leftovers()
            assert dead in found and live.path not in found
            handoff.remove_leftover(dead)
            assert not os.path.exists(dead) and os.path.exists(live.path)
        finally:
            if os.path.exists(dead):
                os.unlink(dead)


def test_a_new_leader_replaces_its_killed_predecessor_s_socket_and_never_a_live_one_s():
    """The leader that takes over after a killed one (same Nextflow process, same socket name)
    binds in place of the dead socket — the kernel refuses a bound name with EADDRINUSE — and
    removes it at its end; beside a live leader it refuses to listen."""
    owner = 2 ** 22 + 11
    dead = handoff.socket_path(owner)
    stale = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    stale.bind(dead)
    stale.close()  # what the killed leader left
    try:
        with handoff.Listener(owner, lambda request: True, lambda argv: 0) as taken_over:
            assert taken_over.path == dead and handoff._answers(dead)
            with pytest.raises(OSError, match="another leader of this Nextflow process listens"):
                with handoff.Listener(owner, lambda request: True, lambda argv: 0):
                    pass
            assert handoff._answers(dead), "the live leader's socket is left alone"
        assert not os.path.exists(dead)
    finally:
        if os.path.exists(dead):
            os.unlink(dead)


def test_the_biossd_script_runs_a_task_itself_where_no_leader_takes_it(tmp_path):
    """``biossd`` (biossd.entry) tries the hand-off first; with no leader it is the whole command
    line, which refuses this task (no command after ``--``) as it always did."""
    from biossd import entry

    argv = task_argv(2 ** 22 + 11)[:-1]  # ... -- (nothing)
    assert entry.main(argv) == 2


def test_a_leader_that_stalls_after_the_request_does_not_hold_the_task(tmp_path):
    """The leader's socket took the request but nothing answers (a stalled leader): past
    HANDOFF_START_S the task runs in its own process, saying why."""
    code = ("import sys; from biossd.measure.own_pipeline import handoff\n"
            "handoff.HANDOFF_START_S = 0.5\n"
            "status = handoff.hand_off(sys.argv[1:])\n"
            "sys.exit(99 if status is None else status)\n")
    owner = os.getpid()
    with handoff.Listener(owner, lambda request: True, lambda argv: 0):  # listening, never serving
        proc = subprocess.Popen([sys.executable, "-c", code, *task_argv(owner)], cwd=tmp_path, stdout=subprocess.PIPE,
                                stderr=subprocess.PIPE)
        assert proc.wait(WAIT_S) == 99
    # (read once the socket is closed: the request in its queue holds the task's descriptors)
    assert b"did not start the task within 0.5 s" in proc.stderr.read()
