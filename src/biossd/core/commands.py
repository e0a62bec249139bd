"""Running the host's administration commands (losetup, mount, mkfs, mkswap, ...) with errors that
say which command failed and what it printed.

Each runs in a session of its own, so a terminal's Ctrl-C (SIGINT to the foreground process
group) does not kill it half way — a ``losetup`` or ``swapoff`` cut short would leave the host
in a state no record describes. biossd reacts to the signal itself, after the command ends: the
interrupt is raised only once the command has exited and been reaped, so the rollback that follows
never races it (a ``mkfs.ext4`` killed and left unreaped still flushes its device for as long as
that takes, holding the disk below it busy while the rollback tries to unmount it)."""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import sys
from typing import Sequence

from biossd.core.signals import signals_held

#: How long an interrupted command may go on to its own end before it is killed…
INTERRUPTED_COMMAND_GRACE_S = 60.0
#: …and how long biossd then waits for it to die: a command in uninterruptible sleep (a device
#: that stopped answering) dies only when its I/O returns, and biossd must stay stoppable.
KILLED_COMMAND_WAIT_S = 30.0


def run_checked(argv: Sequence[str], error: type[Exception], what: str | None = None) -> str:
    """Run ``argv``; return its stdout, or raise ``error`` naming the step and the command's own
    message (or that the command is not installed). An exception while it runs (a signal raised
    in this process) is re-raised once the command has ended: it is given
    :data:`INTERRUPTED_COMMAND_GRACE_S` to finish, then killed with what it started and reaped, for
    at most :data:`KILLED_COMMAND_WAIT_S` more."""
    prefix = f"{what}: " if what else ""
    try:
        proc = subprocess.Popen(list(argv), stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                                start_new_session=True)
    except FileNotFoundError:
        raise error(f"{prefix}{argv[0]} is not installed") from None
    try:
        stdout, stderr = proc.communicate()
    except BaseException:
        with signals_held():  # a second signal waits for the command too
            try:
                proc.communicate(timeout=INTERRUPTED_COMMAND_GRACE_S)
            except subprocess.TimeoutExpired:
                with contextlib.suppress(ProcessLookupError):
                    os.killpg(proc.pid, signal.SIGKILL)  # its session: what it started holds its pipes too
                try:
                    proc.communicate(timeout=KILLED_COMMAND_WAIT_S)
                except subprocess.TimeoutExpired:
                    print(f"biossd: `{' '.join(argv)}` (pid {proc.pid}) has not ended {KILLED_COMMAND_WAIT_S:g} s after "
                          "SIGKILL (uninterruptible sleep: its device does not answer); going on without it — "
                          "`biossd doctor` lists what it may hold", file=sys.stderr)
        raise
    if proc.returncode != 0:
        raise error(f"{prefix}`{' '.join(argv)}` failed: {(stderr or stdout).strip()}")
    return stdout
