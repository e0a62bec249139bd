"""A profiled pipeline's tasks side by side: one *session leader* holds the host lock for the whole
Nextflow session as a declared concurrent group (:class:`biossd.host.hostlock.HostLock` with the
session's token), and every task runs as a member of that group
(:class:`biossd.host.hostlock.GroupMember`) — as Nextflow schedules it, no task waiting for
another's measurement, while no other measured run (a study's, another pipeline's) can start
beside them.

The leader is ``biossd pipeline lead``, started by the session's first task (the one that makes
the session's mark under ``--biossd_outdir``, in one step no other task can also take), detached
from it, working for the Nextflow process (its owner): it ends when Nextflow ends, or on a
signal. A task that finds the mark waits until the leader holds the lock (it may first wait for
another measured run to end); a leader that is gone without holding it is an error naming it.

The leader also keeps the session's tracefs instances ready once it holds the lock
(:class:`biossd.host.tracefs.InstancePool`, listed in :data:`TRACE_POOL`): a task claims a free
one rather than making its own, which spares every task the kernel's cost of making and removing
an instance; a task that finds none free (or no list yet) makes its own, as a lone run does.

What side by side costs the measurement, said in every run and the report: each task's block
requests are its own by its process tree (:func:`biossd.measure.blocktrace.foreign_issuers`), but
the kernel threads' (write-back, the journal) are kept in every task that overlapped them, and
the host's swap counters (``Pfault``) are the host's, not one task's.
"""

from __future__ import annotations

import contextlib
import json
import os
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

from biossd.core.errors import BiossdError
from biossd.core.files import atomic_write_text
from biossd.core.owners import ProcessRef
from biossd.host import hostlock, tracefs
from biossd.measure.pipelinetask import component

#: The session's leader mark under the outdir (its pid and start, for the tasks that wait on it).
LEADER_MARK = "pipeline_info/.biossd-leader-{session}.json"
#: The session's ready tracefs instances (:class:`biossd.host.tracefs.InstancePool`), written by
#: its leader before it takes the host lock, removed before the instances are.
TRACE_POOL = "pipeline_info/.biossd-tracepool-{session}.json"
#: How often a waiting task looks at the host lock, and how long a leader may take to start.
POLL_S = 0.05
LEADER_START_S = 30.0


class SessionError(BiossdError, RuntimeError):
    pass


def session_of(nextflow_pid: int | None) -> str | None:
    """The session a task belongs to: its Nextflow process, by pid and start time (a resumed run
    is a new process, a new session); None when it is not known or gone."""
    if not nextflow_pid:
        return None
    ref = ProcessRef.of(int(nextflow_pid))
    return f"{ref.pid}-{ref.start_ticks}" if ref.start_ticks is not None else None


def token(session: str) -> str:
    """The concurrent group's token of a Nextflow session."""
    return f"nextflow-session-{session}"


def _leader_holds(group: str) -> bool:
    holder = hostlock.held_by()
    return bool(holder and holder.get(hostlock.GROUP_KEY) == group)


def join(session: str, owner_pid: int | None, outdir: Path) -> str:
    """The session's group token once its leader holds the host lock; the first task starts the
    leader (the module's text)."""
    if not session or not owner_pid:
        raise SessionError("the task names no Nextflow session or process (session, owner_pid): side by side needs "
                           "both; use nextflow/conf/profile_pipeline.config as it is, or --biossd_concurrency serial")
    group = token(session)
    if _leader_holds(group):
        return group
    mark = Path(outdir) / LEADER_MARK.format(session=component(session))
    mark.parent.mkdir(parents=True, exist_ok=True)
    try:
        fd = os.open(mark, os.O_CREAT | os.O_EXCL | os.O_WRONLY, 0o644)
    except FileExistsError:
        fd = None
    if fd is not None:
        with os.fdopen(fd, "w") as out:
            leader = subprocess.Popen(
                [sys.executable, "-m", "biossd", "pipeline", "lead", "--session", session,
                 "--owner-pid", str(owner_pid), "--owner-label", f"Nextflow session {session}", "--mark", str(mark)],
                stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                start_new_session=True, close_fds=True)
            out.write(json.dumps(ProcessRef.of(leader.pid, "biossd pipeline lead").record()))
    started = time.monotonic()
    while not _leader_holds(group):
        recorded = _recorded_leader(mark)
        if recorded is not None and not recorded.alive():
            if _leader_holds(group):
                break
            raise SessionError(f"the session's leader ({recorded.describe()}, recorded in {mark}) is gone without "
                               "holding the host lock: see `biossd cleanup`, and run the pipeline again")
        if recorded is None and time.monotonic() - started > LEADER_START_S:
            raise SessionError(f"{mark}: no leader recorded after {LEADER_START_S:g} s; remove it if no "
                               "pipeline of this session runs")
        time.sleep(POLL_S)
    return group


def _recorded_leader(mark: Path) -> ProcessRef | None:
    try:
        return ProcessRef.from_record(json.loads(mark.read_text()))
    except (OSError, ValueError):
        return None


def nextflow_of(owner_pid: int | None) -> ProcessRef | None:
    """The Nextflow process a task works for (its run stops if Nextflow dies), if it lives."""
    ref = ProcessRef.of(int(owner_pid), "Nextflow") if owner_pid else None
    return ref if ref is not None and ref.start_ticks is not None else None


def trace_pool(session: str, outdir: Path) -> list[Path]:
    """The session's ready tracefs instances its leader listed; none when it listed none (not
    root, no tracefs: each task makes its own)."""
    try:
        body = json.loads((Path(outdir) / TRACE_POOL.format(session=component(session))).read_text())
    except (OSError, ValueError):
        return []
    return [Path(p) for p in body.get("instances", [])]


def _open_pool(stack: contextlib.ExitStack, pool_file: Path) -> None:
    """Make the session's tracefs instances ready and list them in ``pool_file``; without
    tracefs each task makes its own, as a lone run does."""
    try:
        pool = stack.enter_context(tracefs.InstancePool())
    except tracefs.TracefsError:
        return
    atomic_write_text(pool_file, json.dumps({"instances": [str(p) for p in pool.paths]}))
    stack.callback(pool_file.unlink, missing_ok=True)


def lead(session: str, owner: ProcessRef, interrupted, mark: Path | None = None) -> dict[str, Any]:
    """Hold the host lock for the session's tasks until ``owner`` (Nextflow) ends or
    ``interrupted()`` names a signal; returns what the lock's record said. ``mark``: the session's
    leader mark, removed at the end if it names this process; beside it, once the lock is held
    (the first task does not wait for them), the session's ready tracefs instances
    (:data:`TRACE_POOL`), removed before the lock is let go."""
    try:
        with hostlock.HostLock(f"biossd pipeline lead (Nextflow session {session})", owner=owner,
                               interrupted=interrupted, **{hostlock.GROUP_KEY: token(session)},
                               members="the session's tasks, as Nextflow starts them") as lock, \
                contextlib.ExitStack() as stack:
            if mark is not None:
                _open_pool(stack, mark.parent / Path(TRACE_POOL.format(session=component(session))).name)
            while owner.alive() and not interrupted():
                time.sleep(POLL_S * 4)
            return {"waited_s": lock.waited_s, "reaped": lock.reaped}
    finally:
        recorded = _recorded_leader(mark) if mark else None
        if recorded is not None and recorded.pid == os.getpid():
            mark.unlink(missing_ok=True)
