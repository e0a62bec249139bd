"""Who owns what biossd makes on a host: a process, named by its pid *and* its start time.

A pid alone is not an identity: after a crash or a reboot the number is reused, and a record
that trusted it would call a stranger's process the owner (or kill it). The start time in
clock ticks since boot (field 22 of ``/proc/PID/stat``) makes the pair unique for the life of
the host, so :meth:`ProcessRef.alive` is false for a dead owner whose pid was reused.
"""

from __future__ import annotations

import ctypes
import os
import signal
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any, Callable, Iterator, Mapping

#: ``/proc/PID/stat``: the fields after the command name (which may hold spaces and parentheses)
#: start at field 3; the start time is field 22.
_STAT_FIRST_FIELD_AFTER_COMM = 3
_STAT_STATE_FIELD = 3
_STAT_PPID_FIELD = 4
_STAT_PGRP_FIELD = 5
_STAT_START_TIME_FIELD = 22
#: Process states of a process that has ended but is not yet reaped by its parent.
_ENDED_STATES = ("Z", "X")


def _stat_fields(pid: int) -> list[str] | None:
    try:
        text = Path(f"/proc/{pid}/stat").read_text()
    except (FileNotFoundError, ProcessLookupError, PermissionError):
        return None
    return text[text.rindex(")") + 2:].split()


def parent_and_group(pid: int) -> tuple[int, int] | None:
    """``pid``'s parent and process group, ``None`` if there is no such process."""
    fields = _stat_fields(pid)
    if fields is None:
        return None
    return (int(fields[_STAT_PPID_FIELD - _STAT_FIRST_FIELD_AFTER_COMM]),
            int(fields[_STAT_PGRP_FIELD - _STAT_FIRST_FIELD_AFTER_COMM]))


_STAT_SESSION_FIELD = 6


def _live_processes() -> Iterator[tuple[int, list[str]]]:
    """Each live process (not ended, not yet reaped) with its ``/proc/PID/stat`` fields after the
    command name."""
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        fields = _stat_fields(int(entry.name))
        if fields is not None and fields[_STAT_STATE_FIELD - _STAT_FIRST_FIELD_AFTER_COMM] not in _ENDED_STATES:
            yield int(entry.name), fields


def session_members(sid: int, started_from: int | None = None) -> list[int]:
    """The live processes of session ``sid`` (a run's command starts one of its own), those that
    started at or after ``started_from`` clock ticks when given: a process of a later session
    that reused the number would have to be its leader, and the leader is checked by its caller."""
    return [pid for pid, fields in _live_processes()
            if int(fields[_STAT_SESSION_FIELD - _STAT_FIRST_FIELD_AFTER_COMM]) == sid
            and (started_from is None
                 or int(fields[_STAT_START_TIME_FIELD - _STAT_FIRST_FIELD_AFTER_COMM]) >= started_from)]


#: The environment variable every process of a measured run's command inherits: its value names
#: the run, so what the command started is found however it detached — a ``setsid`` grandchild,
#: a daemon a tool forked — where no cgroup holds the run (a user without root; the tag is the
#: equivalent that holds for any process that keeps the environment it was started with).
RUN_TAG_VAR = "BIOSSD_RUN"


def tagged(tag: str) -> list[int]:
    """The live processes whose environment carries ``RUN_TAG_VAR=tag`` (those this user may
    read: all of them for root)."""
    needle = f"{RUN_TAG_VAR}={tag}".encode()
    found = []
    for pid, _ in _live_processes():
        try:
            environ = Path(f"/proc/{pid}/environ").read_bytes()
        except OSError:
            continue
        if needle in environ.split(b"\0"):
            found.append(pid)
    return found


def kill_tagged(tag: str, rounds: int = 20, pause_s: float = 0.05) -> list[dict[str, Any]]:
    """SIGKILL every process tagged ``tag`` until none is left (a process may fork while its
    siblings die); what was killed: each one's pid and command line."""
    import time

    killed: dict[int, str] = {}
    for _ in range(rounds):
        pids = [pid for pid in tagged(tag) if pid != os.getpid()]
        if not pids:
            break
        for pid in pids:
            try:
                argv = Path(f"/proc/{pid}/cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")
            except OSError:
                argv = ""
            try:
                os.kill(pid, signal.SIGKILL)
                killed.setdefault(pid, argv.strip())
            except ProcessLookupError:
                pass
        time.sleep(pause_s)
    return [{"pid": pid, "command": argv} for pid, argv in sorted(killed.items())]


_STAT_FLAGS_FIELD = 9
#: ``/proc/PID/stat``'s flag of a kernel thread (PF_KTHREAD): writeback, the journal, kswapd.
PF_KTHREAD = 0x00200000


def session_and_kernel(pid: int) -> tuple[int, bool] | None:
    """A live ``pid``'s session and whether it is a kernel thread; ``None`` if it has ended."""
    fields = _stat_fields(pid)
    if fields is None or fields[_STAT_STATE_FIELD - _STAT_FIRST_FIELD_AFTER_COMM] in _ENDED_STATES:
        return None
    return (int(fields[_STAT_SESSION_FIELD - _STAT_FIRST_FIELD_AFTER_COMM]),
            bool(int(fields[_STAT_FLAGS_FIELD - _STAT_FIRST_FIELD_AFTER_COMM]) & PF_KTHREAD))


def open_targets(pid: int) -> list[str]:
    """What process ``pid``'s open descriptors point at (``/proc/<pid>/fd`` links: paths,
    ``socket:[inode]``, ...); none when it is gone or not ours to read."""
    targets = []
    try:
        fds = list(Path(f"/proc/{pid}/fd").iterdir())
    except OSError:
        return targets
    for fd in fds:
        try:
            targets.append(os.readlink(fd))
        except OSError:
            continue  # closed meanwhile
    return targets


def start_ticks(pid: int) -> int | None:
    """When ``pid`` started, in clock ticks since boot; ``None`` if there is no such process
    or it has ended (a zombie waiting for its parent runs no more)."""
    fields = _stat_fields(pid)
    if fields is None or fields[_STAT_STATE_FIELD - _STAT_FIRST_FIELD_AFTER_COMM] in _ENDED_STATES:
        return None
    return int(fields[_STAT_START_TIME_FIELD - _STAT_FIRST_FIELD_AFTER_COMM])


def age_s(pid: int | None = None) -> float | None:
    """How long ago ``pid`` (default: this process) started, in seconds, to the clock tick;
    ``None`` if it has ended."""
    ticks = start_ticks(os.getpid() if pid is None else pid)
    if ticks is None:
        return None
    uptime_s = float(Path("/proc/uptime").read_text().split()[0])
    return max(0.0, uptime_s - ticks / os.sysconf("SC_CLK_TCK"))


@dataclass(frozen=True)
class ProcessRef:
    """One process: ``pid`` and its ``start_ticks``; ``label`` says what it is to a reader
    (e.g. ``nextflow session 1b2c…``)."""

    pid: int
    start_ticks: int | None
    label: str = ""

    @classmethod
    def of(cls, pid: int, label: str = "") -> "ProcessRef":
        return cls(pid, start_ticks(pid), label)

    @classmethod
    def current(cls, label: str = "") -> "ProcessRef":
        return cls.of(os.getpid(), label)

    @classmethod
    def from_record(cls, record: Mapping[str, Any] | None) -> "ProcessRef | None":
        if not record or record.get("pid") is None:
            return None
        return cls(int(record["pid"]), record.get("start_ticks"), str(record.get("label", "")))

    def alive(self) -> bool:
        """Whether this very process still runs (a reused pid is not it)."""
        now = start_ticks(self.pid)
        return now is not None and (self.start_ticks is None or now == self.start_ticks)

    def record(self) -> dict[str, Any]:
        return asdict(self)

    def describe(self) -> str:
        return f"{self.label + ' ' if self.label else ''}(pid {self.pid})"


#: The owner a workflow hands its tasks through the environment, not the task's script (a
#: session's pid in the script would change every task's hash and defeat ``-resume``):
#: ``"<boot id> <pid> <label>"``. The boot id (``/proc/sys/kernel/random/boot_id``) says on which
#: host and boot the pid means something; on another node of a cluster, or after a reboot, the
#: variable is ignored.
OWNER_ENV = "BIOSSD_OWNER"
BOOT_ID_PATH = Path("/proc/sys/kernel/random/boot_id")


def boot_id() -> str:
    """This host's current boot (a new id at every boot, a different one on every host)."""
    try:
        return BOOT_ID_PATH.read_text().strip()
    except OSError:
        return ""


def environment_value(label: str, pid: int | None = None) -> str:
    """:data:`OWNER_ENV`'s value naming ``pid`` (default: this process) as the owner, as a
    workflow hands it to its tasks."""
    return f"{boot_id()} {os.getpid() if pid is None else pid} {label}"


def from_environment(environ: Mapping[str, str] | None = None) -> ProcessRef | None:
    """The owner named by :data:`OWNER_ENV` when it names a process of this host and boot,
    else ``None`` (unset, malformed, another host, another boot)."""
    text = (os.environ if environ is None else environ).get(OWNER_ENV, "").strip()
    parts = text.split(" ", 2)
    if len(parts) < 2 or not parts[1].isdigit() or not parts[0] or parts[0] != boot_id():
        return None
    return ProcessRef.of(int(parts[1]), parts[2] if len(parts) > 2 else "")


class HostObject:
    """Something a run makes on the host (a swap area, a tracefs instance): ``_setup`` makes it,
    ``close`` undoes whatever part of it exists. As a context manager it is closed on exit and
    also when ``_setup`` fails half-way."""

    def _setup(self) -> None:
        raise NotImplementedError

    def close(self) -> None:
        raise NotImplementedError

    def __enter__(self):
        try:
            self._setup()
        except BaseException:
            self.close()
            raise
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def owned_name(prefix: str) -> str:
    """A fresh name for something this process makes on the host (a cgroup, a tracefs instance,
    a swap file): ``<prefix><pid>-<start ticks>-<hex>``, so its owner is known by pid *and* start
    time (:func:`owner_alive`)."""
    import uuid

    return f"{prefix}{os.getpid()}-{start_ticks(os.getpid())}-{uuid.uuid4().hex[:8]}"


def is_owned_name(name: str, prefix: str) -> bool:
    """Whether ``name`` is one :func:`owned_name` gives (or an older biossd's ``<prefix><pid>-<hex>``):
    something else that merely starts with ``prefix`` (``biossd-docker``, a user's ``biossd-notes``)
    is never taken for a leftover."""
    import re

    return re.fullmatch(re.escape(prefix) + r"\d+-(\d+-)?\w{8}(\.[a-z]+)?", name) is not None


def owner_alive(name: str, prefix: str) -> bool:
    """Whether the process that made ``name`` (:func:`owned_name`) still runs: its pid alive with
    the recorded start ticks; a name of an older biossd (``<prefix><pid>-<hex>``) by pid alone."""
    parts = name[len(prefix):].split("-")
    if not parts[0].isdigit():
        return False
    now = start_ticks(int(parts[0]))
    if len(parts) >= 3 and parts[1].isdigit():
        return now is not None and now == int(parts[1])
    return now is not None


#: prctl(2)'s option: the signal a child gets when its parent dies.
_PR_SET_PDEATHSIG = 1


def dies_with_parent(signum: int = signal.SIGKILL) -> Callable[[], None]:
    """A ``preexec_fn`` for a helper biossd starts and waits for (perf, blktrace, fio): the
    helper gets ``signum`` when biossd dies, even by SIGKILL, so no helper outlives the run it
    measured (SIGINT lets blktrace take its kernel trace down itself). The kernel sends it
    when the *thread* that started the helper ends: start helpers from the main thread."""

    def arm() -> None:
        ctypes.CDLL(None, use_errno=True).prctl(_PR_SET_PDEATHSIG, signum)

    return arm
