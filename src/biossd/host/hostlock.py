"""One measured run per host at a time: the host lock.

The paper ran one program at a time on a machine (Lee, Min and Yoon 2015, §5.1), and a measurement needs
that: two profiled runs at once would both give their swap areas the top priority, drop each
other's page cache and appear in each other's block traces. Every measuring command
(``biossd profile``, ``biossd device characterize``) therefore holds an exclusive ``flock`` on
``/run/biossd/host.lock`` for its whole run; another one waits, saying whom it waits for, or
refuses (``--no-wait``). Work that measures nothing (stub-runs, ``features``, ``report``) takes
no lock.

The holder describes itself in ``host.holder.json`` beside the lock (pid with start time, what
it runs, its owner — e.g. the Nextflow session —, its partial run directory and the session its
measured command runs in), which ``biossd doctor`` shows. The kernel releases a ``flock`` when its
process dies, even by SIGKILL — but not the tool it was measuring, which runs on in a session of
its own. So the next holder first *reaps* a dead holder (:func:`reap`: its command's session and
its cgroups are killed) and only then measures, and says so in its run's record; the record is
then moved to ``stale/``, and ``biossd cleanup`` removes what it names (see :func:`stale_records`).
Runs that may measure side by side hold it as a group: behind a leader that holds it for them
(:class:`biossd.host.grouplock.GroupMember`), or, where no process may outlive the others (SLURM jobs), shared
(:mod:`biossd.host.sharedlock`).
"""

from __future__ import annotations

import contextlib
import datetime as dt
import fcntl
import json
import os
import sys
import time
from pathlib import Path
from typing import Any, Callable, Iterator

from biossd.core.errors import BiossdError
from biossd.core.files import atomic_write_text
from biossd.core.owners import ProcessRef, kill_tagged, session_members, start_ticks
from biossd.core.runtime import RUN_ROOT, UnsafeRuntimeDir, checked_runtime_dir, ensure_runtime_dir, runtime_dir  # noqa: F401 (callers name them here)

LOCK_NAME = "host.lock"
HOLDER_NAME = "host.holder.json"
STALE_DIR = "stale"
#: How often a waiting run retries the lock (and checks whether it was interrupted).
POLL_S = 0.2
#: Exit status of a measuring command refused with ``--no-wait`` (sysexits' EX_TEMPFAIL).
EXIT_BUSY = 75
#: The holder record's key for the session its measured command runs in: the session leader's
#: pid and start ticks (``biossd profile``'s gate, started with a session of its own).
COMMAND_KEY = "command"
#: The holder record's Docker container of the measured command: ``{"cidfile", "docker_host"}``
#: (the container is the engine's child, not in the command's session or cgroup).
CONTAINER_KEY = "container"
#: The holder record's list of a leaderless group's members (:mod:`biossd.host.sharedlock`), each
#: entry a holder's record of its own (what :func:`reap` and ``cleanup`` read).
MEMBERS_KEY = "shared_members"
#: How long a dead holder's processes are given to be gone after SIGKILL.
REAP_WAIT_S = 5.0


class HostBusy(BiossdError, RuntimeError):
    """Another measured run holds the lock and this one was told not to wait."""


class OwnerGone(BiossdError, RuntimeError):
    """The process a lock was waited for (a pipeline's Nextflow) ended during the wait."""


class WaitInterrupted(Exception):
    """A signal arrived while waiting for the lock."""

    def __init__(self, signum: int) -> None:
        super().__init__(f"interrupted by signal {signum} while waiting for the host lock")
        self.signum = signum


def lock_path() -> Path:
    return checked_runtime_dir() / LOCK_NAME


def holder_path() -> Path:
    return checked_runtime_dir() / HOLDER_NAME


def read_holder(path: Path | None = None) -> dict[str, Any] | None:
    """The holder record, or ``None`` when there is none (or it is unreadable)."""
    try:
        return json.loads((path or holder_path()).read_text())
    except (OSError, ValueError):
        return None


def describe(holder: dict[str, Any] | None) -> str:
    if not holder:
        return "a process that has not described itself yet"
    ref = ProcessRef.from_record(holder)
    owner = ProcessRef.from_record(holder.get("owner"))
    text = f"{holder.get('what', 'a measured run')} (pid {ref.pid if ref else '?'}, since {holder.get('since', '?')})"
    if holder.get("out"):
        text += f" writing {holder['out']}"
    if owner:
        text += f", for {owner.describe()}"
    return text


def held_by() -> dict[str, Any] | None:
    """The live holder's record, or ``None`` when the lock is free."""
    path = lock_path()
    if not path.exists():
        return None
    try:
        fd = os.open(path, os.O_RDONLY | os.O_CLOEXEC)
    except OSError:
        return None
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        record = read_holder() or {}
        holder = None if MEMBERS_KEY in record else ProcessRef.from_record(record)
        # A record naming a dead process is no holder's description: the lock is being taken
        # over (a next holder reaping it, the last member of a dead leader's group tidying).
        return {} if holder is not None and not holder.alive() else record
    else:
        fcntl.flock(fd, fcntl.LOCK_UN)
        return None
    finally:
        os.close(fd)


def stale_records() -> list[Path]:
    """Holder records of measured runs that died without releasing their work (SIGKILL): those
    moved aside by later holders, and the holder record of a free lock (moved aside here, under
    the lock, so a run starting meanwhile keeps its own)."""
    path = lock_path()
    if holder_path().exists() and path.exists():
        with contextlib.suppress(OSError):
            fd = os.open(path, os.O_RDWR | os.O_CLOEXEC)
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
                move_aside(read_holder())
                fcntl.flock(fd, fcntl.LOCK_UN)
            except BlockingIOError:
                pass
            finally:
                os.close(fd)
    stale = checked_runtime_dir() / STALE_DIR
    return sorted(stale.glob("*.json")) if stale.is_dir() else []


def reap(old: dict[str, Any] | None) -> list[str]:
    """Kill what a holder that died with the lock left running, before anything else is measured:
    the processes carrying its run's tag in their environment (:data:`biossd.core.owners.RUN_TAG_VAR`:
    a detached grandchild too, with or without a cgroup), the processes of its command's session
    (started at or after the recorded leader; none when the leader's pid now belongs to another
    process), its Docker container (the record names the container id file), the cgroups it made
    (named after its pid, :mod:`biossd.host.cgroups`; removing one kills what is in it, a ``setsid``
    grandchild too), and the swap areas and trace instances of dead runs. A holder still alive is
    never touched. Returns what was done."""
    import signal

    from biossd.host import cgroups

    if old and MEMBERS_KEY in old:  # a leaderless group: each member is a holder of its own
        return [line for entry in old[MEMBERS_KEY] or () for line in reap(entry)]
    holder = ProcessRef.from_record(old)
    if holder is None or holder.alive():
        return []
    done = []
    command = (old or {}).get(COMMAND_KEY) or {}
    if command.get("tag"):  # found however they detached, with or without a cgroup
        tagged = kill_tagged(str(command["tag"]))
        if tagged:
            done.append(f"killed {len(tagged)} process(es) carrying its run's tag {command['tag']} "
                        f"({', '.join(str(t['pid']) + ' ' + t['command'][:60] for t in tagged)})")
    if command.get("pid"):
        sid, ticks = int(command["pid"]), command.get("start_ticks")
        leader = start_ticks(sid)
        if leader is None or leader == ticks:
            members = session_members(sid, ticks)
            for pid in members:
                with contextlib.suppress(ProcessLookupError):
                    os.kill(pid, signal.SIGKILL)
            deadline = time.monotonic() + REAP_WAIT_S
            while session_members(sid, ticks) and time.monotonic() < deadline:
                time.sleep(POLL_S / 4)
            if members:
                done.append(f"killed {len(members)} process(es) of its command's session {sid}")
    container = (old or {}).get(CONTAINER_KEY) or {}
    if container.get("cidfile"):
        from biossd.host import dockerengine

        removed = dockerengine.remove(Path(container["cidfile"]), container.get("docker_host"))
        if removed:
            done.append(f"removed its container {removed}")
    for path in cgroups.find_leftovers():
        if path.name.startswith(f"{cgroups.CGROUP_PREFIX}{holder.pid}-"):
            cgroups.remove_cgroup(path)
            done.append(f"removed its cgroup {path}")
    done += take_down_dead_devices()
    return [f"{describe(old)} died holding the host lock: " + "; ".join(done)] if done else []


def take_down_dead_devices() -> list[str]:
    """What dead runs left that the next run would share: their swap areas (on at the same
    priority as the next run's own, the kernel would page there round-robin, untraced) and their
    block-trace instances. Only those whose maker is gone (:mod:`biossd.core.owners`)."""
    from biossd.host import swap, tracefs

    done = []
    for what, found, remove in (("swap area", swap.find_leftovers(), swap.remove_leftover),
                                ("trace instance", tracefs.find_leftovers(), tracefs.remove_leftover)):
        for item in found:
            try:
                remove(item)
                done.append(f"took down its {what} {item}")
            except (OSError, BiossdError) as err:
                done.append(f"{COULD_NOT} {what} {item} ({err})")
    return done


#: How :func:`reap` says that something a dead run left is still there.
COULD_NOT = "could not take down the"
#: What a holder record may name that ``biossd cleanup`` removes once its holder is dead
#: (:func:`biossd.measure.leftovers.find_all`'s killed runs).
CLEANUP_KEYS = ("partial", "experiment_partial", "test_file", "swap_file")


def retire(old: dict[str, Any] | None, done: list[str]) -> None:
    """After :func:`reap` (call with the lock held): a dead concurrent group leader's record that
    names nothing for ``cleanup`` and whose reap took everything down is done with, and removed
    (its members' runs keep their own records); any other is moved aside (:func:`move_aside`)."""
    if old is None:
        return
    leader_only = bool(old.get(GROUP_KEY)) and MEMBERS_KEY not in old and not any(old.get(k) for k in CLEANUP_KEYS)
    if leader_only and not any(COULD_NOT in line for line in done):
        with contextlib.suppress(OSError):
            holder_path().unlink()
        return
    move_aside(old)


def reap_dead_holder() -> list[str]:
    """When the lock is free and a dead holder's record remains, :func:`reap` it and move the
    record aside (``storage up`` does this before it touches a device); the lock held by a live
    run is left alone. Returns what was done."""
    if not (holder_path().exists() and lock_path().exists()):
        return []
    with taken_if_free() as taken:
        if not taken:
            return []
        old = read_holder()
        done = reap(old)
        move_aside(old)
        return done


@contextlib.contextmanager
def taken_if_free() -> Iterator[bool]:
    """The host lock held for the block if no run holds it (``True``), else not taken (``False``)."""
    try:
        fd = os.open(lock_path(), os.O_RDWR | os.O_CLOEXEC)
    except OSError:
        yield False
        return
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        os.close(fd)
        yield False
        return
    try:
        yield True
    finally:
        fcntl.flock(fd, fcntl.LOCK_UN)
        os.close(fd)


def move_aside(old: dict[str, Any] | None) -> None:
    """Keep a dead holder's record in ``stale/`` for ``cleanup`` (call with the lock held); a
    leaderless group's record as one record per member."""
    if old is None:
        return
    if MEMBERS_KEY in old:
        for entry in old[MEMBERS_KEY] or ():
            move_entry_aside(entry)
        with contextlib.suppress(OSError):
            holder_path().unlink()
        return
    with contextlib.suppress(OSError):
        os.replace(holder_path(), _stale_path(old))


def _stale_path(entry: dict[str, Any]) -> Path:
    stale = checked_runtime_dir() / STALE_DIR
    stale.mkdir(exist_ok=True)
    return stale / f"{entry.get('pid', 'unknown')}-{entry.get('start_ticks', 0)}.json"


def move_entry_aside(entry: dict[str, Any]) -> None:
    """A dead run's holder entry (a leaderless group's member) as a stale record of its own."""
    atomic_write_text(_stale_path(entry), json.dumps(entry, indent=2) + "\n")


class HostLock:
    """Hold the host lock for ``what`` (a context manager).

    ``wait=False`` raises :class:`HostBusy` at once when another run holds it; otherwise the
    wait is announced once through ``notify``, and ``interrupted()`` (a signal number or
    ``None``) is polled so a signal ends the wait (:class:`WaitInterrupted`).
    """

    def __init__(self, what: str, *, wait: bool = True, owner: ProcessRef | None = None,
                 interrupted: Callable[[], int | None] = lambda: None,
                 notify: Callable[[str], None] | None = None, **details: Any) -> None:
        self.what = what
        self.wait = wait
        self.owner = owner
        self.interrupted = interrupted
        self.notify = notify or (lambda text: print(text, file=sys.stderr, flush=True))
        self.details = details
        self.fd: int | None = None
        self.waited_s = 0.0
        #: What :func:`reap` did about a holder that died with the lock, before this one measured.
        self.reaped: list[str] = []

    def __enter__(self) -> "HostLock":
        directory = ensure_runtime_dir()
        self.fd = os.open(directory / LOCK_NAME, os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o600)
        t0 = time.monotonic()
        try:
            announced = self.wait_for(self._try_exclusive)
        except BaseException:
            os.close(self.fd)
            self.fd = None
            raise
        _HELD[self.fd] = os.getpid()
        try:
            self._await_members(announced)
        except BaseException:
            self.__exit__()
            raise
        self.waited_s = time.monotonic() - t0
        old = read_holder()  # left by a run killed with the lock held
        try:
            # What a dead run left is taken down even without its record: a leader that ended
            # while its tasks still read its trace instances removed its record but kept them.
            self.reaped = reap(old) if old else [f"a dead run left: {what}" for what in take_down_dead_devices()]
        except BaseException:
            self.__exit__()
            raise
        retire(old, self.reaped)
        self._write()
        return self

    def _try_exclusive(self) -> str | None:
        try:
            fcntl.flock(self.fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            return None
        except BlockingIOError:
            return describe(read_holder())

    def wait_for(self, attempt: Callable[[], str | None]) -> bool:
        """Call ``attempt`` (``None`` once it has the lock, else who holds it) until it has it:
        refused at once without ``wait`` (:class:`HostBusy`), the wait announced once, a signal
        ending it (:class:`WaitInterrupted`). Whether the wait was announced."""
        announced = False
        while True:
            holder = attempt()
            if holder is None:
                return announced
            if not self.wait:
                raise HostBusy(f"another measured run holds the host lock {lock_path()}: {holder}; wait for it, "
                               "or run without --no-wait to wait")
            if not announced:
                self.notify(f"biossd: waiting for the host lock {lock_path()}, held by {holder}")
                announced = True
            signum = self.interrupted()
            if signum:
                raise WaitInterrupted(signum)
            if self.owner is not None and not self.owner.alive():  # nobody is left to measure for
                raise OwnerGone(f"{self.owner.describe()}, for which {self.what} waited for the host lock, is gone; "
                                "stopped waiting")
            time.sleep(POLL_S)

    def _await_members(self, announced: bool) -> None:
        """Wait until no member of an earlier group runs (a dead leader's members tearing down)."""
        while members_running():
            if not self.wait:
                raise HostBusy(f"the members of a concurrent group whose leader is gone still run ({GROUP_LOCK_NAME}); "
                               "wait for them, or run without --no-wait to wait")
            if not announced:
                self.notify("biossd: waiting for a concurrent group's members to end their teardown")
                announced = True
            signum = self.interrupted()
            if signum:
                raise WaitInterrupted(signum)
            time.sleep(POLL_S)

    def _write(self) -> None:
        me = ProcessRef.current(self.what)
        record = {**me.record(), "what": self.what,
                  "since": dt.datetime.now(dt.timezone.utc).isoformat(timespec="seconds"),
                  "owner": self.owner.record() if self.owner else None, **self.details}
        atomic_write_text(holder_path(), json.dumps(record, indent=2) + "\n")

    def update(self, **details: Any) -> None:
        """Add to the holder record (e.g. the partial run directory, for cleanup after SIGKILL)."""
        self.details.update(details)
        self._write()

    def __exit__(self, *exc: object) -> None:
        if self.fd is None:
            return
        with contextlib.suppress(OSError):
            holder_path().unlink()
        fcntl.flock(self.fd, fcntl.LOCK_UN)
        os.close(self.fd)
        _HELD.pop(self.fd, None)
        self.fd = None


#: The host lock's descriptors this process holds, and the process that took each: a fork (a
#: session leader's worker) inherits them, and with them the lock, until it closes its copies.
_HELD: dict[int, int] = {}


def close_inherited() -> None:
    """Close the host lock's descriptors this process inherited by fork from their holder (not
    let go: the holder keeps the lock), so that a holder that dies, even by SIGKILL, frees it
    at once rather than when the last process forked from it ends."""
    for fd, pid in list(_HELD.items()):
        if pid != os.getpid():
            with contextlib.suppress(OSError):
                os.close(fd)
            del _HELD[fd]


#: The holder record's key naming a declared concurrent group (the SMUFIN NVMe-over-Fabrics study's shared device).
GROUP_KEY = "concurrent_group"
#: Beside the host lock: every member of a concurrent group holds it shared while it runs, and
#: every new holder takes it exclusive once (then lets go), so no run measures while a dead
#: leader's members still tear down (they get SIGTERM when it dies, and a grace to end).
GROUP_LOCK_NAME = "group.lock"


def open_group_lock() -> int:
    return os.open(ensure_runtime_dir() / GROUP_LOCK_NAME, os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o600)


def members_running() -> bool:
    """Whether a concurrent group's member still runs (holds the group lock shared)."""
    fd = open_group_lock()
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        return True
    finally:
        os.close(fd)  # closing lets go of the lock
    return False
