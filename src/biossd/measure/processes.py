"""The profiled command as processes: signalling its process group and waiting for it.

The profiler starts the command behind a gate (:mod:`biossd.measure.profile`) that ``exec``\\s
GNU time (:mod:`biossd.measure.gnutime`), which forks the command; all of them are one
process group, whose id is the gate's pid (the *leader*). Signals for the command — a user's
interrupt, a dead owner, a timeout — go to every member but GNU time: it then sees its command
end, reports how, and exits, so what the run records is the command's own.

If GNU time itself is killed from outside (SLURM signals every process of a job at its time
limit), its command lives on or ends unreported. The profiler is then its parent: it is a
*child subreaper* (``PR_SET_CHILD_SUBREAPER``) while the command runs, so an orphaned command
is reparented to it rather than to init, and is waited for — and accounted — like the leader.
"""

from __future__ import annotations

import contextlib
import ctypes
import os
import resource
import select
import signal
import subprocess
import time
from pathlib import Path
from typing import Callable, Iterator

from biossd.core.owners import ProcessRef, parent_and_group, start_ticks

#: After SIGINT/SIGTERM (or its owner's death) the command gets SIGTERM, and SIGKILL if it is
#: still running this many seconds later (a tool that ignores SIGTERM).
TERM_GRACE_S = 10.0
#: How long GNU time may take to report a command killed with SIGKILL before it is killed too.
REPORT_GRACE_S = 5.0
#: How often the wait for the command wakes to check signals, the timeout and the owner.
_WAIT_POLL_MS = 200
#: prctl(2)'s options.
_PR_SET_CHILD_SUBREAPER = 36
_PR_GET_CHILD_SUBREAPER = 37


def group_members(pgid: int) -> list[int]:
    """The processes of process group ``pgid``."""
    members = []
    for proc in Path("/proc").iterdir():
        if proc.name.isdigit() and (ids := parent_and_group(int(proc.name))) and ids[1] == pgid:
            members.append(int(proc.name))
    return members


def _is_gnu_time(pid: int, gnu_time: str | None) -> bool:
    try:
        return gnu_time is not None and os.readlink(f"/proc/{pid}/exe") == os.path.realpath(gnu_time)
    except OSError:
        return False


def signal_command(leader: int, signum: int, gnu_time: str | None) -> None:
    """``signum`` to the command's process group: all of it, or, once the gate has become GNU
    time, all but GNU time."""
    if not _is_gnu_time(leader, gnu_time):
        with contextlib.suppress(ProcessLookupError):
            os.killpg(leader, signum)
        return
    for pid in group_members(leader):
        if pid != leader:
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signum)


def kill_group(child: subprocess.Popen[bytes]) -> None:
    """Make sure nothing of the command outlives the profiler (no-op once it was reaped)."""
    if child.returncode is None:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(child.pid, signal.SIGKILL)
        with contextlib.suppress(ChildProcessError):
            os.waitpid(child.pid, 0)
        child.returncode = -signal.SIGKILL


@contextlib.contextmanager
def reaping_orphans() -> Iterator[None]:
    """This process is a child subreaper for the block (and as it was after it)."""
    libc = ctypes.CDLL(None, use_errno=True)
    was = ctypes.c_int(0)
    libc.prctl(_PR_GET_CHILD_SUBREAPER, ctypes.byref(was))
    libc.prctl(_PR_SET_CHILD_SUBREAPER, 1)
    try:
        yield
    finally:
        libc.prctl(_PR_SET_CHILD_SUBREAPER, was.value)


def _my_orphans(pgid: int) -> dict[int, int]:
    """Members of the command's group whose parent is now this process (reparented to it), with
    their start times (the earliest is the command: the others are its descendants)."""
    me = os.getpid()
    return {pid: start_ticks(pid) or 0 for pid in group_members(pgid)
            if (ids := parent_and_group(pid)) and ids[0] == me}


def wait(child: subprocess.Popen[bytes], timeout_s: float | None, received: list[int],
         owner: ProcessRef | None, gnu_time: str | None = None,
         reported: Callable[[], bool] = lambda: True) -> tuple[int, list[resource.struct_rusage], bool]:
    """``wait4`` the command. On timeout it is killed; after a signal (or when ``owner`` is
    gone, recorded as SIGTERM) it gets SIGTERM and, :data:`TERM_GRACE_S` later, SIGKILL. Wakes
    at once when the leader exits (a pidfd). If GNU time ended without ``reported()``, its
    orphaned command (reparented here, see :func:`reaping_orphans`) is waited for too.

    Returns (the command's wait status — the leader's, or the orphaned command's —, the rusage
    of the leader and of each orphan reaped, and whether the timeout struck)."""
    deadline = None if timeout_s is None else time.monotonic() + timeout_s
    timed_out = False
    term_at: float | None = None
    killed_at: float | None = None
    leader_status: int | None = None
    usages: list[resource.struct_rusage] = []
    waiting = {child.pid}
    orphans: dict[int, int] = {}
    orphan_status: dict[int, int] = {}
    pidfd = os.pidfd_open(child.pid)
    poller = select.poll()
    poller.register(pidfd, select.POLLIN)
    try:
        while True:
            for pid in sorted(waiting):
                try:
                    got, status, ru = os.wait4(pid, os.WNOHANG)
                except ChildProcessError:
                    if pid == child.pid:
                        raise
                    waiting.discard(pid)  # an orphan that ended and was reaped before it was ours
                    continue
                if not got:
                    continue
                waiting.discard(pid)
                usages.append(ru)
                if pid == child.pid:
                    leader_status = status
                    child.returncode = os.waitstatus_to_exitcode(status)
                    if gnu_time is not None and not reported():
                        orphans = _my_orphans(child.pid)
                        waiting |= set(orphans)
                else:
                    orphan_status[pid] = status
            if not waiting:
                assert leader_status is not None
                first = min(orphan_status, key=orphans.__getitem__, default=None)
                return (leader_status if first is None else orphan_status[first]), usages, timed_out
            now = time.monotonic()
            if owner is not None and not received and not owner.alive():
                received.append(signal.SIGTERM)
                signal_command(child.pid, signal.SIGTERM, gnu_time)
            if received and term_at is None:
                term_at = now
                if leader_status is not None:  # the signal handler signals only a live leader's group
                    signal_command(child.pid, signal.SIGTERM, gnu_time)
            late = term_at is not None and now - term_at > TERM_GRACE_S
            if (late or (deadline is not None and now > deadline)) and killed_at is None:
                timed_out = not late
                killed_at = now
                signal_command(child.pid, signal.SIGKILL, gnu_time)
            if killed_at is not None and now - killed_at > REPORT_GRACE_S:
                with contextlib.suppress(ProcessLookupError):
                    os.killpg(child.pid, signal.SIGKILL)  # GNU time did not end either
            if leader_status is None:
                poller.poll(_WAIT_POLL_MS)
            else:
                time.sleep(_WAIT_POLL_MS / 1000)
    finally:
        os.close(pidfd)
