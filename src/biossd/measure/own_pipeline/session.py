"""A profiled pipeline's tasks side by side: one *session leader* holds the host lock for the whole
Nextflow session as a declared concurrent group (:class:`biossd.host.hostlock.HostLock` with the
session's token), and every task runs as a member of that group
(:class:`biossd.host.grouplock.GroupMember`) — as Nextflow schedules it, no task waiting for
another's measurement, while no other measured run (a study's, another pipeline's) can start
beside them.

The leader is started by the session's first task (the one that makes the session's mark under
``--biossd_outdir``, in one step no other task can also take) as a fork of itself, detached from
it (``biossd pipeline lead`` runs one by hand), working for the Nextflow process (its owner): it
ends when Nextflow ends, or on a signal. A task that finds the mark waits until the leader holds
the lock (it may first wait for another measured run to end); a leader that is gone without
holding it is an error naming it.

Once its pool is ready the leader also runs the session's tasks in processes of its own: it
listens on a socket (:mod:`biossd.measure.own_pipeline.handoff`), and a task that finds it there hands itself
off — its profiler forked from the leader, which has it loaded, instead of a new Python process.

The leader also keeps the session's tracefs instances ready once it holds the lock
(:class:`biossd.host.tracefs.InstancePool`, listed in :data:`TRACE_POOL` as each is ready): a task
claims a free one rather than making its own, which spares every task the kernel's cost of making
and removing an instance (the tasks that waited for the leader wait for its first one); a task that finds none free
(or no list yet) makes its own, as a lone run does.

What side by side costs the measurement, said in every run and the report: each task's block
requests are its own by its process tree (:func:`biossd.measure.trace.blocktrace.foreign_issuers`), but
the kernel threads' (write-back, the journal) are kept in every task that overlapped them, and
the host's swap counters (``Pfault``) are the host's, not one task's.
"""

from __future__ import annotations

import contextlib
import json
import os
import time
from pathlib import Path
from typing import Any, Callable

from biossd.core.errors import BiossdError
from biossd.core.files import atomic_write_text
from biossd.core.owners import ProcessRef
from biossd.host import grouplock, hostlock, tracefs
from biossd.measure.own_pipeline.task import component, session_folder

#: The session's leader mark under the outdir (its pid and start, for the tasks that wait on it).
LEADER_MARK = "pipeline_info/.biossd-leader-{session}.json"
#: The session's ready tracefs instances (:class:`biossd.host.tracefs.InstancePool`), written by
#: its leader before it takes the host lock, removed before the instances are.
TRACE_POOL = "pipeline_info/.biossd-tracepool-{session}.json"
#: How often a waiting task looks at the host lock (the first task waits so for the leader it
#: started: on the pipeline's critical path), how long a leader may take to start, and how often
#: the leader looks at its owner (Nextflow) between the tasks it takes.
POLL_S = 0.01
LEADER_START_S = 30.0
#: How long a task that waited for its leader then waits for the leader's first tracefs instance, at most
#: (making one takes the kernel tens of milliseconds; a task that stops waiting makes its own).
POOL_WAIT_S = 1.0
LEADER_POLL_S = 0.2


#: How many times the tasks of a session start a new leader after theirs died (killed alone).
LEADER_TAKEOVERS = 2


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


def node_token(session: str) -> str:
    """The leaderless group's token of a run's tasks on one node (SLURM jobs:
    :class:`biossd.host.sharedlock.SharedHold`)."""
    return f"nextflow-node-{session}"


def _leader_holds(group: str) -> bool:
    holder = hostlock.held_by()
    return bool(holder and holder.get(hostlock.GROUP_KEY) == group)


def join(session: str, owner_pid: int | None, outdir: Path, run_task: Callable[[list[str]], int] | None = None) -> str:
    """The session's group token once its leader holds the host lock; the first task starts the
    leader (the module's text), which runs the tasks handed to it with ``run_task``."""
    if not session or not owner_pid:
        raise SessionError("the task names no Nextflow session or process (session, owner_pid): side by side needs "
                           "both; use nextflow/conf/profile_pipeline.config as it is, or --biossd_concurrency serial")
    group = token(session)
    if _leader_holds(group):
        return group
    mark = session_folder(outdir) / Path(LEADER_MARK.format(session=component(session))).name
    for _ in range(LEADER_TAKEOVERS + 1):
        try:
            fd = os.open(mark, os.O_CREAT | os.O_EXCL | os.O_WRONLY, 0o644)
        except FileExistsError:
            fd = None
        if fd is not None:
            with os.fdopen(fd, "w") as out:
                leader = _fork_leader(session, int(owner_pid), mark, run_task)
                out.write(json.dumps(ProcessRef.of(leader, LEADER_LABEL).record()))
        gone = _await_leader(group, mark, nextflow_of(owner_pid))
        if gone is None:
            break
        # The leader died (killed alone, its workers may still run and hold the host lock): this
        # task takes over — a new leader, which takes the lock once they are done — unless
        # another task already did (the mark then names a live one).
        _forget_leader(mark, gone)
    else:
        raise SessionError(f"the session's leader, recorded in {mark}, died {LEADER_TAKEOVERS + 1} times without "
                           "holding the host lock: see `biossd doctor`, and run the pipeline again")
    # A task that waited for the leader (the first, and any that started beside it) waits for its pool too.
    _await_pool(mark.parent / Path(TRACE_POOL.format(session=component(session))).name, mark)
    return group


def _await_leader(group: str, mark: Path, nextflow: ProcessRef | None) -> ProcessRef | None:
    """Wait until the session's leader holds the host lock (None), or return the leader ``mark``
    records when it died before it did; stop when the session's Nextflow is gone (another run
    holding the lock would otherwise keep this task waiting after its pipeline ended)."""
    started = time.monotonic()
    while not _leader_holds(group):
        if nextflow is not None and not nextflow.alive():
            raise SessionError(f"{nextflow.describe()} is gone: this task of its session stops waiting for its leader")
        recorded = _recorded_leader(mark)
        if recorded is not None and not recorded.alive():
            return None if _leader_holds(group) else recorded
        if recorded is None and time.monotonic() - started > LEADER_START_S:
            raise SessionError(f"{mark}: no leader recorded after {LEADER_START_S:g} s; remove it if no "
                               "pipeline of this session runs")
        time.sleep(POLL_S)
    return None


def _forget_leader(mark: Path, gone: ProcessRef) -> None:
    """Remove ``mark`` if it still names the dead leader ``gone`` (not another task's new one)."""
    recorded = _recorded_leader(mark)
    if recorded is not None and (recorded.pid, recorded.start_ticks) == (gone.pid, gone.start_ticks):
        mark.unlink(missing_ok=True)


def _await_pool(pool_file: Path, mark: Path) -> None:
    """A task that waited for its leader waits a little longer for its first ready tracefs
    instance (or its empty list): claiming one costs the pipeline's critical path less than making
    and removing an instance of its own beside the leader making its pool (a task that finds the
    listed ones claimed makes its own). Not past :data:`POOL_WAIT_S`, nor past the leader's end."""
    deadline = time.monotonic() + POOL_WAIT_S
    while not pool_file.exists() and time.monotonic() < deadline:
        recorded = _recorded_leader(mark)
        if recorded is None or not recorded.alive():
            return
        time.sleep(POLL_S)


#: What the leader is, to a reader of its records.
LEADER_LABEL = "biossd pipeline lead"


def _fork_leader(session: str, owner_pid: int, mark: Path, run_task: Callable[[list[str]], int] | None) -> int:
    """Start the session's leader: a fork of this task's process (the first task's, which has
    loaded what the leader and its workers run — a new interpreter would cost the pipeline's
    first task its start), forked twice so that it is no descendant of the task (Nextflow stops a
    task by killing every descendant of its process: a time limit, a retry, must not take the
    session's leader and every task handed to it), in a session of its own, its standard streams
    on ``/dev/null`` and no other descriptor of the task's kept (Nextflow waits for the task's
    output to close). Returns the leader's pid."""
    read_fd, write_fd = os.pipe()
    middle = os.fork()
    if middle:
        os.close(write_fd)
        with os.fdopen(read_fd, "rb") as said:
            text = said.read().decode()
        os.waitpid(middle, 0)  # it exits as soon as the leader is forked
        if not text.strip().isdigit():
            raise SessionError("the session's leader could not be started (its fork failed)")
        return int(text)
    status = 1
    try:
        os.close(read_fd)
        os.setsid()
        leader = os.fork()
        if leader:  # the middle process: say who leads, and go (the leader is then init's)
            os.write(write_fd, str(leader).encode())
            status = 0
        else:
            os.close(write_fd)
            null = os.open(os.devnull, os.O_RDWR)
            for target in (0, 1, 2):
                os.dup2(null, target)
            os.closerange(3, os.sysconf("SC_OPEN_MAX"))
            owner = nextflow_of(owner_pid)
            if owner is not None:
                status = run_leader(session, ProcessRef(owner.pid, owner.start_ticks, f"Nextflow session {session}"),
                                    mark, run_task)
    finally:
        os._exit(status)


def run_leader(session: str, owner: ProcessRef, mark: Path | None,
               run_task: Callable[[list[str]], int] | None = None) -> int:
    """:func:`lead` until its owner ends, the held signals ending it (``biossd pipeline lead``)."""
    from biossd.core.signals import signals_call

    received: list[int] = []
    with signals_call(lambda signum, _frame: received.append(signum)):
        lead(session, owner, lambda: received[0] if received else None, mark, run_task)
    return 0


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
    return trace_pool_file(session_folder(outdir) / Path(TRACE_POOL.format(session=component(session))).name)


def trace_pool_file(pool_file: Path) -> list[Path]:
    """The ready tracefs instances ``pool_file`` lists (none: no list, or an empty one)."""
    try:
        body = json.loads(Path(pool_file).read_text())
    except (OSError, ValueError):
        return []
    return [Path(p) for p in body.get("instances", [])]


def _list_pool(pool_file: Path, paths: list[Path]) -> None:
    atomic_write_text(pool_file, json.dumps({"instances": [str(p) for p in paths]}))


def _open_pool(stack: contextlib.ExitStack, pool_file: Path) -> None:
    """Make the session's tracefs instances ready, listing them in ``pool_file`` as each is
    ready (the first task claims the first while the others are made); without tracefs the list
    is empty and each task makes its own, as a lone run does. The list is removed before the
    instances are."""
    stack.callback(pool_file.unlink, missing_ok=True)  # however the pool ends
    try:
        stack.enter_context(tracefs.InstancePool(on_ready=lambda paths: _list_pool(pool_file, paths)))
    except tracefs.TracefsError:
        _list_pool(pool_file, [])
        return
    stack.callback(pool_file.unlink, missing_ok=True)


#: What a task's profiler loads, loaded by the leader before it takes tasks (its workers start
#: with them; a leader forked from the first task has them already, one run by hand has not).
PRELOAD = ("biossd.measure.profile", "biossd.measure.toolrun", "biossd.measure.own_pipeline.run", "biossd.measure.manifest",
           "biossd.measure.trace.blocktrace", "biossd.host.dockerengine")


def accepts(session: str, argv: list[str]) -> bool:
    """Whether the leader of ``session`` runs the task of command line ``argv`` (a side-by-side
    task of its own Nextflow process); anything else runs in its own process, which refuses what
    is wrong with it."""
    from biossd.measure.own_pipeline import task as pipeline_task

    try:
        task = pipeline_task.decode(argv[3])
    except (pipeline_task.PipelineTaskError, IndexError):
        return False
    return task["concurrency"] == "side-by-side" and session_of(task.get("owner_pid")) == session


def _serve(stack: contextlib.ExitStack, session: str, owner: ProcessRef, run_task: Callable[[list[str]], int]):
    """The session's hand-off socket (:mod:`biossd.measure.own_pipeline.handoff`; ``run_task(argv)``, the
    command line a worker runs), its tasks' modules loaded; ``None`` where it cannot listen (each
    task then runs in its own process)."""
    import importlib

    from biossd.measure.own_pipeline import handoff

    for name in PRELOAD:
        importlib.import_module(name)
    try:
        return stack.enter_context(handoff.Listener(owner.pid, lambda request: accepts(session, request["argv"]),
                                                         run_task))
    except (OSError, BiossdError):
        return None


def lead(session: str, owner: ProcessRef, interrupted, mark: Path | None = None,
         run_task: Callable[[list[str]], int] | None = None) -> dict[str, Any]:
    """Hold the host lock for the session's tasks until ``owner`` (Nextflow) ends or
    ``interrupted()`` names a signal; returns what the lock's record said. ``mark``: the session's
    leader mark, removed at the end if it names this process; beside it, once the lock is held
    (listed as each is ready: the tasks that waited for the leader wait for the first), the session's ready tracefs instances
    (:data:`TRACE_POOL`), removed before the lock is let go; then, given ``run_task`` (the command
    line's runner of a task), the tasks that hand themselves off run in its workers
    (:mod:`biossd.measure.own_pipeline.handoff`)."""
    try:
        with hostlock.HostLock(f"biossd pipeline lead (Nextflow session {session})", owner=owner,
                               interrupted=interrupted, **{hostlock.GROUP_KEY: token(session)},
                               members="the session's tasks, as Nextflow starts them") as lock, \
                contextlib.ExitStack() as stack:
            if mark is not None:
                _open_pool(stack, mark.parent / Path(TRACE_POOL.format(session=component(session))).name)
            listener = _serve(stack, session, owner, run_task) if run_task is not None else None
            while owner.alive() and not interrupted():
                if listener is None:
                    time.sleep(LEADER_POLL_S)
                else:
                    listener.serve(LEADER_POLL_S)
            # Its tasks may still be ending (Nextflow was killed), their trace instances claimed
            # from its pool: it is taken down once they are done (any left, the last one out takes).
            grouplock.await_members(grouplock.GROUP_TEARDOWN_WAIT_S)
            return {"waited_s": lock.waited_s, "reaped": lock.reaped}
    finally:
        recorded = _recorded_leader(mark) if mark else None
        if recorded is not None and recorded.pid == os.getpid():
            mark.unlink(missing_ok=True)
