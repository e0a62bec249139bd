"""biossd.core.commands: the host's administration commands, with errors that say which failed."""

import pytest

from biossd.core.commands import run_checked


class StepFailed(Exception):
    pass


def test_a_command_s_output_is_returned():
    assert run_checked(["echo", "ready"], StepFailed) == "ready\n"


def test_a_failing_command_is_named_with_what_it_said():
    with pytest.raises(StepFailed, match=r"mounting: `ls /no/such/dir` failed: .*No such file"):
        run_checked(["ls", "/no/such/dir"], StepFailed, "mounting")


def test_a_missing_command_is_said_to_be_not_installed():
    with pytest.raises(StepFailed, match="biossd-no-such-command is not installed"):
        run_checked(["biossd-no-such-command"], StepFailed)


INTERRUPTED = r"""
import os, signal, sys, threading
from biossd.core import commands
from biossd.core.signals import signals_raise

commands.INTERRUPTED_COMMAND_GRACE_S = float(sys.argv[2])
threading.Timer(0.3, os.kill, (os.getpid(), signal.SIGTERM)).start()
try:
    with signals_raise(KeyboardInterrupt):
        commands.run_checked(["sh", "-c", sys.argv[1]], RuntimeError)
except KeyboardInterrupt:
    # The command must be gone, reaped: no child of ours is left, not even a zombie.
    children = [p for p in os.listdir("/proc") if p.isdigit()
                and open(f"/proc/{p}/stat").read().rsplit(")", 1)[1].split()[1] == str(os.getpid())]
    print("interrupted; children left:", len(children))
"""


@pytest.mark.parametrize("script, grace_s, finished", [
    ("sleep 1; echo done > finished", 30.0, True),    # it ends on its own within the grace: not cut short
    ("sleep 60; echo done > finished", 0.5, False),   # past the grace: killed, and still reaped
])
def test_an_interrupted_command_has_ended_before_the_interrupt_is_raised(tmp_path, script, grace_s, finished):
    import subprocess
    import sys

    proc = subprocess.run([sys.executable, "-c", INTERRUPTED, script, str(grace_s)], cwd=tmp_path,
                          capture_output=True, text=True, timeout=30)
    assert "interrupted; children left: 0" in proc.stdout, proc.stdout + proc.stderr
    assert (tmp_path / "finished").exists() is finished


def test_a_killed_command_that_does_not_die_is_left_after_a_bounded_wait(monkeypatch, capsys):
    """A command in uninterruptible sleep dies only when its device answers: after SIGKILL biossd
    waits KILLED_COMMAND_WAIT_S for it, then goes on with the interrupt, saying so. (Popen stands
    in for such a command: no test can make the kernel hold one in D state.)"""
    import subprocess

    from biossd.core import commands

    class Stuck:
        pid = 2 ** 22 + 11
        calls: list = []

        def __init__(self, *args, **kwargs):
            pass

        def communicate(self, timeout=None):
            Stuck.calls.append(timeout)
            if len(Stuck.calls) == 1:
                raise KeyboardInterrupt
            raise subprocess.TimeoutExpired("cmd", timeout)

    monkeypatch.setattr(commands.subprocess, "Popen", Stuck)
    with pytest.raises(KeyboardInterrupt):
        commands.run_checked(["mkfs.ext4", "/dev/loop9"], RuntimeError)
    assert Stuck.calls == [None, commands.INTERRUPTED_COMMAND_GRACE_S, commands.KILLED_COMMAND_WAIT_S]
    assert "has not ended 30 s after SIGKILL" in capsys.readouterr().err
