"""A declared concurrent group's members beside the leader that holds the host lock for them
(:mod:`biossd.host.hostlock`): a member checks the holder is its group's leader, alive, holds
the group lock shared while it runs, and — the last one out after a leader that is gone — takes
down what that leader left."""

from __future__ import annotations

import fcntl
import os
import sys
import time
from typing import Any, Callable

from biossd.core.errors import BiossdError
from biossd.host import hostlock
from biossd.host.hostlock import GROUP_KEY, POLL_S, held_by, lock_path, members_running, read_holder


class NotInGroup(BiossdError, RuntimeError):
    """A run asked to join a concurrent group whose leader does not hold the host lock."""


#: How long `cleanup` waits for a dead leader's members to end their teardown: their grace
#: (biossd.measure.processes.TERM_GRACE_S) and a margin.
GROUP_TEARDOWN_WAIT_S = 15.0


def await_dead_group(timeout_s: float = GROUP_TEARDOWN_WAIT_S) -> bool:
    """When the host lock is free but a group's members still run (their leader died), wait up to
    ``timeout_s`` for them to end their teardown (what `cleanup` removes is then no longer theirs).
    Whether none runs any more."""
    deadline = time.monotonic() + timeout_s
    while held_by() is None and members_running():
        if time.monotonic() > deadline:
            return False
        time.sleep(POLL_S)
    return True


class GroupMember:
    """A measured run that is one of a *declared concurrent group*: its leader holds the host
    lock for the whole group (``HostLock(..., concurrent_group=TOKEN, members=[...])``) and
    starts the members side by side; a member takes no lock of its own but checks that the
    holder is that group's leader, alive. Anything else — no holder, another group, a dead
    leader — is refused, so a stray ``--group`` cannot slip a run beside a measured one."""

    def __init__(self, token: str, also_tidy: Callable[[], list[str]] | None = None) -> None:
        self.token = token
        #: What else the last member out takes down after a dead leader (:func:`tidy_after_group`).
        self.also_tidy = also_tidy
        self.leader: dict[str, Any] | None = None
        self.waited_s = 0.0
        self.fd: int | None = None
        #: What this member, the last one out, took down that its dead leader left.
        self.tidied: list[str] = []

    def __enter__(self) -> "GroupMember":
        holder = held_by()
        if not holder or holder.get(GROUP_KEY) != self.token:
            raise NotInGroup(f"concurrent group {self.token!r}: the host lock {lock_path()} is held by "
                             f"{hostlock.describe(holder)}, not by this group's leader; a group member runs only "
                             "while its leader holds the lock (biossd experiment run does)")
        self.leader = holder
        self.fd = hostlock.open_group_lock()
        fcntl.flock(self.fd, fcntl.LOCK_SH)  # the leader's lock keeps any exclusive taker out
        again = held_by()
        if not again or again.get("pid") != holder.get("pid"):  # the leader went meanwhile
            self.__exit__()
            raise NotInGroup(f"concurrent group {self.token!r}: its leader let go of the host lock as this member "
                             "started; nothing was run")
        return self

    def update(self, **details: Any) -> None:
        """The leader's record is the group's; a member adds nothing to it."""

    def __exit__(self, *exc: object) -> None:
        if self.fd is not None:
            os.close(self.fd)
            self.fd = None
            self.tidied = tidy_after_group(self.token, self.also_tidy)
            if self.tidied:
                print(f"biossd: the last run of concurrent group {self.token} out took down what its leader left: "
                      + "; ".join(self.tidied), file=sys.stderr, flush=True)


def tidy_after_group(token: str, also: Callable[[], list[str]] | None = None) -> list[str]:
    """What the last member of concurrent group ``token`` does on its way out: when no other
    member runs (the group lock taken exclusive, so none can start or claim anything meanwhile)
    and the host lock is free, its leader is gone (killed, or ended while its members still read
    its trace instances). What the leader left — its record, and the devices of dead runs, its
    trace instances among them — is then taken down as the next holder would
    (:meth:`HostLock.__enter__`), and ``also()`` (what else a dead leader leaves: its socket)
    run, so that nothing waits for a next run or ``cleanup``. Returns what was done."""
    group_fd = hostlock.open_group_lock()
    try:
        try:
            fcntl.flock(group_fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            return []  # another member runs: the last one tidies
        with hostlock.taken_if_free() as taken:
            if not taken:
                return []  # the leader holds it, or the next run does
            old = read_holder()
            if old and old.get(GROUP_KEY) != token:
                return []  # another run's record: the next holder's to reap
            done = hostlock.reap(old) if old else hostlock.take_down_dead_devices()
            hostlock.retire(old, done)
            return done + (also() if also is not None else [])
    finally:
        os.close(group_fd)


def await_members(timeout_s: float) -> bool:
    """Wait up to ``timeout_s`` until no member of a concurrent group runs (a leader, before it
    takes down what its members may use). Whether none runs any more."""
    deadline = time.monotonic() + timeout_s
    while members_running():
        if time.monotonic() > deadline:
            return False
        time.sleep(POLL_S)
    return True
