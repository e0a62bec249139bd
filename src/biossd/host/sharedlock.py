"""The host lock held together by a leaderless group: runs that may measure side by side, none of
which outlives the others.

A concurrent group with a leader (:class:`biossd.host.grouplock.GroupMember`) needs a process that
holds the host lock for the whole group. Where no process may outlive a task — a SLURM job's
processes end with it (``proctrack/cgroup`` kills a detached one too) — the tasks of one Nextflow
run on one node hold the lock *shared* instead: each member holds ``host.lock`` with a shared
``flock`` while it runs, so an exclusive run (``biossd profile``, a characterization, a study's
run) waits until the last member ends, and no member starts while one holds it.

The holder record is the group's: its token (:data:`biossd.host.hostlock.GROUP_KEY`), and one
entry per member (pid with start time, its partial run directory, its command's session — what
:func:`biossd.host.hostlock.reap` needs). Every change to it, and every shared or exclusive taking
of the lock by a member, happens under a short exclusive ``flock`` on ``host.admit`` beside it, so
the record always names the members that hold the lock: the last member removes the record before
it lets go of the lock, and a member that finds another's entry dead (SIGKILL) moves that entry to
``stale/`` as a record of its own (``biossd cleanup`` reaps it). A run of another group, or a dead
exclusive holder's record, is handled as :class:`biossd.host.hostlock.HostLock` handles it: the
member waits for a live one, and reaps a dead one first.
"""

from __future__ import annotations

import contextlib
import datetime as dt
import fcntl
import json
import os
import time
from typing import Any, Callable, Iterator

from biossd.core.files import atomic_write_text
from biossd.core.owners import ProcessRef
from biossd.host import hostlock

ADMIT_NAME = "host.admit"
#: What a leaderless group's holder record says it is.
WHAT = "a shared group of measured runs"


@contextlib.contextmanager
def _admitting() -> Iterator[None]:
    """Hold ``host.admit`` exclusively: the only way a member takes, changes or lets go of its share."""
    fd = os.open(hostlock.ensure_runtime_dir() / ADMIT_NAME, os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o600)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)
        yield
    finally:
        os.close(fd)


def _alive(entry: dict[str, Any]) -> bool:
    ref = ProcessRef.from_record(entry)
    return bool(ref and ref.alive())


def _is(entry: dict[str, Any], ref: ProcessRef) -> bool:
    return entry.get("pid") == ref.pid and entry.get("start_ticks") == ref.start_ticks


def live_members(record: dict[str, Any] | None) -> list[dict[str, Any]]:
    """The entries of a leaderless group's record whose process still runs."""
    return [m for m in (record or {}).get(hostlock.MEMBERS_KEY) or [] if _alive(m)]


def _write_record(token: str, members: list[dict[str, Any]]) -> None:
    """The group's holder record: its token and members; its top-level pid is the first
    member's (a live one), so a reader of the lock sees a live holder."""
    first = members[0]
    atomic_write_text(hostlock.holder_path(), json.dumps(
        {"pid": first.get("pid"), "start_ticks": first.get("start_ticks"), "what": WHAT, "since": first.get("since"),
         hostlock.GROUP_KEY: token, hostlock.MEMBERS_KEY: members}, indent=2) + "\n")


def _keep_live(members: list[dict[str, Any]], me: ProcessRef, reaped: list[str]) -> list[dict[str, Any]]:
    """The other members still running. A dead one (SIGKILL) is reaped as a dead holder is
    (:func:`biossd.host.hostlock.reap`: what it ran, its cgroups; said in ``reaped``), and its
    entry goes to ``stale/``, where ``biossd cleanup`` finds its partial run directory."""
    kept = []
    for entry in members:
        if _is(entry, me):
            continue
        if _alive(entry):
            kept.append(entry)
        else:
            reaped += hostlock.reap(entry)
            hostlock.move_entry_aside(entry)
    return kept


class SharedHold:
    """Hold the host lock shared as a member of the leaderless group ``token`` (the module's
    text): a context manager with :class:`biossd.host.hostlock.HostLock`'s ``update``,
    ``waited_s`` and ``reaped``; ``members_at_start`` is how many members held it when this
    one joined (itself included)."""

    def __init__(self, token: str, what: str, *, wait: bool = True, owner: ProcessRef | None = None,
                 interrupted: Callable[[], int | None] = lambda: None,
                 notify: Callable[[str], None] | None = None, **details: Any) -> None:
        self.token = token
        # The lock's settings and its way of waiting; its own flock is never taken.
        self.lock = hostlock.HostLock(what, wait=wait, owner=owner, interrupted=interrupted, notify=notify, **details)
        self.fd: int | None = None
        self.waited_s = 0.0
        self.reaped: list[str] = []
        self.members_at_start = 0
        self.me = ProcessRef.current(what)
        self.since = dt.datetime.now(dt.timezone.utc).isoformat(timespec="seconds")

    def _entry(self) -> dict[str, Any]:
        lock = self.lock
        return {**self.me.record(), "what": lock.what, "since": self.since,
                "owner": lock.owner.record() if lock.owner else None, **lock.details}

    def __enter__(self) -> "SharedHold":
        path = hostlock.ensure_runtime_dir() / hostlock.LOCK_NAME
        self.fd = os.open(path, os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o600)
        t0 = time.monotonic()
        try:
            self.lock.wait_for(self._try_join)
        except BaseException:
            os.close(self.fd)
            self.fd = None
            raise
        self.waited_s = time.monotonic() - t0
        return self

    def _try_join(self) -> str | None:
        """Join the group under ``host.admit``; what holds the lock instead, when it cannot."""
        members_key = hostlock.MEMBERS_KEY
        with _admitting():
            try:
                fcntl.flock(self.fd, fcntl.LOCK_SH | fcntl.LOCK_NB)
            except BlockingIOError:
                return hostlock.describe(hostlock.read_holder())
            record = hostlock.read_holder()
            if record is not None and record.get(hostlock.GROUP_KEY) == self.token and members_key in record:
                members = record[members_key]
            elif record is not None and members_key in record and live_members(record):
                fcntl.flock(self.fd, fcntl.LOCK_UN)  # another group's members hold it
                return f"{WHAT} {record.get(hostlock.GROUP_KEY)} ({len(live_members(record))} running)"
            elif hostlock.members_running():  # a dead leader's members still tear down
                fcntl.flock(self.fd, fcntl.LOCK_UN)
                return "the members of a concurrent group whose leader is gone, ending their teardown"
            else:  # no holder, or one that died with the lock (no live process holds it: we got it)
                members = []
                self.reaped = hostlock.reap(record)
                hostlock.move_aside(record)
            kept = _keep_live(members, self.me, self.reaped) + [self._entry()]
            self.members_at_start = len(kept)
            _write_record(self.token, kept)
        return None

    def update(self, **details: Any) -> None:
        """Add to this member's entry (e.g. its partial run directory, for cleanup after SIGKILL)."""
        self.lock.details.update(details)
        with _admitting():
            members = (hostlock.read_holder() or {}).get(hostlock.MEMBERS_KEY) or []
            _write_record(self.token, _keep_live(members, self.me, self.reaped) + [self._entry()])

    def __exit__(self, *exc: object) -> None:
        if self.fd is None:
            return
        with _admitting():  # the record names only the members that hold the lock: changed first
            live = _keep_live((hostlock.read_holder() or {}).get(hostlock.MEMBERS_KEY) or [], self.me, self.reaped)
            if live:
                _write_record(self.token, live)
            else:
                with contextlib.suppress(OSError):
                    hostlock.holder_path().unlink()
            fcntl.flock(self.fd, fcntl.LOCK_UN)
            os.close(self.fd)
            self.fd = None
