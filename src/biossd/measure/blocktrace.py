"""Block-request traces of the traced devices, in one canonical table (Lee, Min and Yoon 2015, §5.1).

The paper ran blktrace and derived its I/O features from the requests it saw. biossd uses
blktrace where the kernel allows it and otherwise the ``block_rq_issue``/``block_rq_complete``
tracepoints (:mod:`biossd.host.tracefs`); both end in ``blocktrace.tsv.gz``, one row per request,
written as requests complete, so millions of requests never sit in memory:

=============  ========  ==================================================================
``issue_s``    float64   when the request was issued to the device, seconds since run start
``complete_s`` float64   when it completed (null: not seen before the trace ended)
``device``     string    kernel device name (``vda``, ``loop3``)
``op``         string    ``R`` read, ``W`` write, ``D`` discard, ``F`` flush only, ``N`` other
``rwbs``       string    the kernel's full operation flags (``WS``: synchronous write, ...)
``sector``     int64     first sector, 512-byte units
``bytes``      int64     request size in bytes
``pid``        int32     the task that submitted it (the one that allocated the request,
                         ``block_getrq``, or queued it, ``block_rq_insert``; else the one
                         that issued it; null when unknown)
``comm``       string    that task's name (null when unknown)
``error``      int32     completion status (0 = success; null when not completed)
=============  ========  ==================================================================

The file is tab-separated text, gzip-compressed, with a header row; a null is an empty field and
floats are written exactly (``repr``). It is text, not Parquet, so that the profiler writes it
with the standard library alone: every profiled run's process starts right after the previous
run's cache drop, and importing NumPy and PyArrow there read a fifth of a second from disk per run.
The readers (:func:`request_arrays`, :func:`read_blocktrace`) import them, and also read the
``blocktrace.parquet`` of result sets written before.

Times use the monotonic clock of :func:`time.monotonic` (tracefs ``mono`` clock), so they line
up with the sampler's ``t_s``. Events the kernel lost are counted, never silently dropped:
``lost`` in the collector record holds the ring buffer's overrun/dropped counts, and
``unmatched_completions``/``incomplete_requests`` count requests seen on one side only. A
request the driver requeued is kept once, with the time of its last issue (``requeues``
counts them).
"""

from __future__ import annotations

import csv
import gzip
import os
import re
import select
import shutil
import signal
import subprocess
import threading
import time
from collections import deque
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Iterable, Sequence

from biossd.core.errors import BiossdError
from biossd.core.owners import dies_with_parent, session_and_kernel
from biossd.host import tracefs
from biossd.host.devices import SECTOR_BYTES

BLOCKTRACE_FILE = "blocktrace.tsv.gz"
#: The trace of result sets written before the text format.
LEGACY_BLOCKTRACE_FILE = "blocktrace.parquet"
#: gzip's fastest level: the writer runs beside the tool, on the same cores.
GZIP_LEVEL = 1
POLL_S = 0.25
#: The write-back throttling event gives its pause in milliseconds.
MS_PER_S = 1000.0
READ_CHUNK_BYTES = 1 << 20
MODES = ("auto", "blktrace", "tracefs", "off")
#: blktrace is given this long to fail (it fails at once when the kernel refuses it).
BLKTRACE_PROBE_S = 0.3
DEBUGFS_BLOCK = Path("/sys/kernel/debug/block")

#: The canonical table's columns and their Arrow types, in file order.
COLUMNS = (("issue_s", "float64"), ("complete_s", "float64"), ("device", "string"), ("op", "string"),
           ("rwbs", "string"), ("sector", "int64"), ("bytes", "int64"), ("pid", "int32"), ("comm", "string"),
           ("error", "int32"))
COLUMN_NAMES = tuple(name for name, _ in COLUMNS)


def trace_path(run_dir: Path) -> Path:
    """A run's block trace: ``blocktrace.tsv.gz``, or the Parquet file of an older result set."""
    path = Path(run_dir) / BLOCKTRACE_FILE
    legacy = Path(run_dir) / LEGACY_BLOCKTRACE_FILE
    return legacy if not path.exists() and legacy.exists() else path


def _field(value: Any) -> str:
    """One value as the file writes it: empty for null, floats exactly, the rest as text."""
    if value is None:
        return ""
    if isinstance(value, float):
        return repr(value)
    return str(value)


class TraceFile:
    """Rows of the canonical table written to ``path``'s temporary name, renamed on :meth:`close`
    (removed on :meth:`abort`)."""

    def __init__(self, path: Path) -> None:
        self.path = Path(path)
        self.tmp = self.path.with_name(self.path.name + ".part")
        self._file = gzip.open(self.tmp, "wt", compresslevel=GZIP_LEVEL, newline="", encoding="utf-8")
        self._csv = csv.writer(self._file, delimiter="\t", lineterminator="\n")
        self._csv.writerow(COLUMN_NAMES)

    def write(self, row: Sequence[Any]) -> None:
        """One request, its values in :data:`COLUMNS` order (``None`` for null)."""
        self._csv.writerow([_field(v) for v in row])

    def close(self) -> None:
        self._file.close()
        os.replace(self.tmp, self.path)

    def abort(self) -> None:
        try:
            self._file.close()
        finally:
            self.tmp.unlink(missing_ok=True)


def write_trace(path: Path, columns: dict[str, Sequence[Any]]) -> Path:
    """A whole canonical table (every column of :data:`COLUMNS`, equal lengths) written to
    ``path``; for traces made rather than measured (synthetic result sets, tests)."""
    missing = [name for name in COLUMN_NAMES if name not in columns]
    if missing:
        raise ValueError(f"a block trace needs the columns {list(COLUMN_NAMES)}; missing {missing}")
    kinds = dict(COLUMNS)
    out = TraceFile(path)
    try:
        for values in zip(*(columns[name] for name in COLUMN_NAMES)):
            out.write([None if v is None else float(v) if kinds[name] == "float64" else
                       int(v) if kinds[name] in ("int64", "int32") else str(v)
                       for name, v in zip(COLUMN_NAMES, values)])
    except BaseException:
        out.abort()
        raise
    out.close()
    return Path(path)


def op_of(rwbs: str) -> str:
    """The request's data direction from the kernel's RWBS flags."""
    for letter in "RWD":
        if letter in rwbs:
            return letter
    return "F" if "F" in rwbs else "N"


@dataclass
class Event:
    """One issue (``kind == "issue"``) or completion of a request, from either source."""

    kind: str
    time_s: float
    dev: tuple[int, int]
    rwbs: str
    sector: int
    nr_sectors: int
    bytes: int | None = None
    pid: int | None = None
    comm: str | None = None
    error: int | None = None


# -- parsing -----------------------------------------------------------------------------------------------------------
_TRACEFS_LINE = re.compile(
    r"^\s*(?P<task>.*)-(?P<pid>\d+)\s+(?:\(\s*[-\d]+\)\s+)?\[(?P<cpu>\d+)\]\s+(?:\S+\s+)?"
    r"(?P<ts>\d+\.\d+): (?P<event>block_\w+): (?P<payload>.*)$"
)
_TRACEFS_PAYLOAD = re.compile(
    r"^(?P<major>\d+),(?P<minor>\d+) (?P<rwbs>\S*) (?:(?P<bytes>\d+) )?\((?P<cmd>.*?)\) "
    r"(?P<sector>\d+) \+ (?P<nr>\d+)(?: \S+)? \[(?P<last>.*)\]$"
)
#: A bio event's payload (``block_getrq``, ``block_bio_frontmerge``): no byte count, no command.
_TRACEFS_BIO_PAYLOAD = re.compile(
    r"^(?P<major>\d+),(?P<minor>\d+) (?P<rwbs>\S*) (?P<sector>\d+) \+ (?P<nr>\d+) \[(?P<last>.*)\]$"
)
_TRACEFS_KINDS = {"block_rq_issue": "issue", "block_rq_complete": "complete",
                  "block_rq_requeue": "requeue", "block_rq_insert": "insert",
                  "block_getrq": "getrq", "block_bio_frontmerge": "frontmerge"}
#: The events that name the task submitting a request (in its own context).
SUBMITTER_KINDS = ("insert", "getrq", "frontmerge")


def parse_tracefs_line(line: str) -> Event | None:
    """One ``trace_pipe`` line of a block event biossd records (:data:`_TRACEFS_KINDS`); ``None``
    for other lines. Raises ``ValueError`` for a block line this parser does not understand."""
    head = _TRACEFS_LINE.match(line)
    if head is None or head["event"] not in _TRACEFS_KINDS:
        return None
    bio = not head["event"].startswith("block_rq_")
    body = (_TRACEFS_BIO_PAYLOAD if bio else _TRACEFS_PAYLOAD).match(head["payload"])
    if body is None:
        raise ValueError(f"unrecognised {head['event']} payload: {head['payload']!r}")
    kind = _TRACEFS_KINDS[head["event"]]
    event = Event(kind=kind, time_s=float(head["ts"]), dev=(int(body["major"]), int(body["minor"])),
                  rwbs=body["rwbs"], sector=int(body["sector"]), nr_sectors=int(body["nr"]))
    if kind in ("issue", *SUBMITTER_KINDS):
        nbytes = None if bio else body["bytes"]
        event.bytes = int(nbytes) if nbytes is not None else event.nr_sectors * SECTOR_BYTES
        event.pid = int(head["pid"])
        event.comm = body["last"]
    elif kind == "complete":
        event.error = int(body["last"])
    return event


_FORK_PAYLOAD = re.compile(r"^comm=.* pid=(?P<parent>\d+) child_comm=.* child_pid=(?P<child>\d+)\s*$")
_FORK_LINE = re.compile(r"^.*?\s(?P<ts>\d+\.\d+): sched_process_fork: (?P<payload>.*)$")


_THROTTLE_LINE = re.compile(r"^\s*(?P<comm>.*?)-(?P<pid>\d+)\s.*?\s(?P<ts>\d+\.\d+): balance_dirty_pages: "
                            r"(?P<payload>.*)$")
_THROTTLE_PAUSE = re.compile(r"\spause=(?P<pause>-?\d+)\s")


def parse_throttle_line(line: str) -> tuple[int, float] | None:
    """``(pid, pause in seconds)`` of one ``writeback:balance_dirty_pages`` line of
    ``trace_pipe``: the kernel paused that task for dirtying pages faster than its device writes
    them back (a pause ≤ 0 is a check that did not sleep); ``None`` for other lines."""
    if "balance_dirty_pages" not in line:
        return None
    head = _THROTTLE_LINE.match(line)
    body = _THROTTLE_PAUSE.search(head["payload"] + " ") if head else None
    if body is None:
        return None
    return int(head["pid"]), max(0, int(body["pause"])) / MS_PER_S


_SYNC_LINE = re.compile(r"^\s*(?P<comm>.*?)-(?P<pid>\d+)\s.*?\s(?P<ts>\d+\.\d+): ext4_sync_file_(?P<kind>enter|exit): ")


def parse_sync_line(line: str) -> tuple[int, str, float] | None:
    """``(pid, "enter" or "exit", time in seconds)`` of one ``ext4:ext4_sync_file_enter`` or
    ``_exit`` line of ``trace_pipe`` (a task calling ``fsync``/``fdatasync``); ``None`` for other
    lines."""
    if "ext4_sync_file_" not in line:
        return None
    head = _SYNC_LINE.match(line)
    return (int(head["pid"]), head["kind"], float(head["ts"])) if head else None


def parse_fork_line(line: str) -> tuple[int, int] | None:
    """``(parent pid, child pid)`` of one ``sched_process_fork`` line of ``trace_pipe``; ``None``
    for other lines."""
    if "sched_process_fork" not in line:
        return None
    head = _FORK_LINE.match(line)
    body = _FORK_PAYLOAD.match(head["payload"]) if head else None
    return (int(body["parent"]), int(body["child"])) if body else None


#: ``blkparse -f`` format giving the fields :func:`parse_blkparse_line` reads.
BLKPARSE_FORMAT = "%a %M %m %d %S %n %N %T.%9t %p %C\\n"
_BLKPARSE_KINDS = {"D": "issue", "C": "complete", "R": "requeue", "I": "insert", "G": "getrq", "F": "frontmerge"}


def parse_blkparse_line(line: str) -> Event | None:
    """One line of ``blkparse -f BLKPARSE_FORMAT``; ``None`` for actions biossd does not record
    (:data:`_BLKPARSE_KINDS`: issue D, complete C, requeue R, and the submitter's G, I and F)."""
    parts = line.rstrip("\n").split(" ", 9)
    if len(parts) < 9 or parts[0] not in _BLKPARSE_KINDS:
        return None
    action, major, minor, rwbs, sector, nr, nbytes, ts, pid = parts[:9]
    kind = _BLKPARSE_KINDS[action]
    event = Event(kind=kind, time_s=float(ts), dev=(int(major), int(minor)), rwbs=rwbs,
                  sector=int(sector), nr_sectors=int(nr), bytes=int(nbytes))
    if kind in ("issue", *SUBMITTER_KINDS):
        event.pid = int(pid)
        event.comm = parts[9] if len(parts) > 9 else None
    elif kind == "complete":
        event.error = 0
    return event


# -- pairing and writing -----------------------------------------------------------------------------------------------
#: The key under which a device's flushes are paired (they have no sector of their own).
FLUSH_KEY = -1
def request_key(event: Event) -> tuple[tuple[int, int], int]:
    """What pairs an event with its request: the device and first sector. A flush carries no
    sector (issued at 0, completed at the kernel's ``(sector_t)-1``): a device's flushes are
    paired in order, under :data:`FLUSH_KEY`."""
    return event.dev, FLUSH_KEY if event.nr_sectors == 0 and op_of(event.rwbs) == "F" else event.sector


#: Requests whose submitter is remembered until they are issued. A device holds at most its
#: ``nr_requests`` per hardware queue (hundreds) between allocation and issue; a request merged
#: into another is never issued, so the oldest entries past this bound are forgotten (counted).
MAX_UNISSUED_REQUESTS = 65536


class CanonicalWriter:
    """Pairs issues with completions and writes ``blocktrace.tsv.gz`` as requests complete.

    Each request is attributed to the task that submitted it: the one that allocated it
    (``getrq``, always in the submitter's context), else the one that queued it (``insert``),
    else the one that issued it — a block-layer worker (``kworker/*H``) issues requests that
    waited on a busy device, another study's among them, and none of those is the worker's.
    The file is written under a temporary name and renamed on :meth:`close`."""

    def __init__(self, path: Path, device_names: dict[tuple[int, int], str], t0_s: float) -> None:
        self.path = Path(path)
        self.names = device_names
        self.t0_s = t0_s
        self.rows = 0
        self.unmatched_completions = 0
        self.requeues = 0
        self.incomplete_requests = 0
        self._pending: dict[tuple[tuple[int, int], int], deque[list[Any]]] = {}
        #: Requests allocated or queued and not yet issued: (dev, first sector) -> the submitting
        #: task's (pid, comm), oldest first (bounded by :data:`MAX_UNISSUED_REQUESTS`).
        self._submitted: dict[tuple[tuple[int, int], int], tuple[int | None, str | None]] = {}
        #: Submitters forgotten to keep that bound (requests merged away, never issued).
        self.submitters_forgotten = 0
        #: Every task that issued a request: pid -> [comm, requests].
        self.issuers: dict[int, list[Any]] = {}
        #: ``(parent, child)`` of every fork seen while tracing, when the tracer records them
        #: (:attr:`forks_traced`).
        self.forks: list[tuple[int, int]] = []
        self.forks_traced = False
        #: Write-back throttling: per pid, the kernel's pauses (count, seconds slept), where the
        #: tracer records them (:attr:`throttle_traced`).
        self.pauses: dict[int, list[float]] = {}
        self.throttle_traced = False
        self.throttle_why = "blktrace records block requests only, not write-back throttling"
        #: ``fsync``/``fdatasync`` calls: ``[pid, entered, returned]`` on the trace's clock
        #: (``returned`` None while inside), where the tracer records them (:attr:`syncs_traced`).
        self.syncs: list[list[Any]] = []
        self._in_sync: dict[int, list[Any]] = {}
        self.syncs_traced = False
        self.syncs_why = "blktrace records block requests only, not fsync calls"
        self._file = TraceFile(self.path)

    def sync(self, pid: int, kind: str, time_s: float) -> None:
        """A task entered (``enter``) or returned from (``exit``) ``fsync`` (:func:`parse_sync_line`)."""
        if kind == "enter":
            window = [pid, time_s - self.t0_s, None]
            self._in_sync[pid] = window
            self.syncs.append(window)
        elif pid in self._in_sync:
            self._in_sync.pop(pid)[2] = time_s - self.t0_s

    def pause(self, pid: int, pause_s: float) -> None:
        """One write-back throttling pause of task ``pid`` (:func:`parse_throttle_line`)."""
        count_s = self.pauses.setdefault(pid, [0, 0.0])
        count_s[0] += 1
        count_s[1] += pause_s

    def add(self, event: Event) -> None:
        key = request_key(event)
        if event.kind in SUBMITTER_KINDS:
            self._remember_submitter(event)
            return
        if event.kind == "issue":
            submitter = self._submitted.pop(key, None)
            if submitter is not None:
                event.pid, event.comm = submitter
            # [issue_s, dev, rwbs, sector, bytes, pid, comm, sectors still to complete]
            row = [event.time_s - self.t0_s, event.dev, event.rwbs, event.sector,
                   event.bytes, event.pid, event.comm, event.nr_sectors]
            self._pending.setdefault(key, deque()).append(row)
            return
        queue = self._pending.get(key)
        if event.kind == "requeue":
            # The driver handed the request back; its next issue (by a worker) is the one that
            # counts, and the request is still its submitter's.
            self.requeues += 1
            if queue:
                row = queue.pop()
                if not queue:
                    del self._pending[key]
                self._remember(key, (row[5], row[6]))
            return
        if not queue:
            self.unmatched_completions += 1
            return
        row = queue.popleft()
        if not queue:
            del self._pending[key]
        remaining = row[7] - event.nr_sectors
        if event.nr_sectors and remaining > 0:  # a partial completion: wait for the rest
            row[7] = remaining
            self._pending.setdefault((event.dev, event.sector + event.nr_sectors), deque()).append(row)
            return
        self._emit(row, event.time_s - self.t0_s, event.error)

    def _remember_submitter(self, event: Event) -> None:
        key = request_key(event)
        if event.kind == "frontmerge":
            # A bio joined a request at its front: the request now starts at the bio's sector.
            # Its submitter is still the one that allocated it.
            moved = self._submitted.pop((event.dev, event.sector + event.nr_sectors), None)
            self._remember(key, moved if moved is not None else (event.pid, event.comm))
        elif event.kind == "getrq" or key not in self._submitted:
            # Allocation is in the submitter's context; a queueing seen later may be a worker's.
            self._remember(key, (event.pid, event.comm))

    def _remember(self, key: tuple[tuple[int, int], int], submitter: tuple[int | None, str | None]) -> None:
        """``submitter`` for the request at ``key``, newest last, within :data:`MAX_UNISSUED_REQUESTS`."""
        self._submitted.pop(key, None)
        self._submitted[key] = submitter
        while len(self._submitted) > MAX_UNISSUED_REQUESTS:
            del self._submitted[next(iter(self._submitted))]
            self.submitters_forgotten += 1

    def _emit(self, row: list[Any], complete_s: float | None, error: int | None) -> None:
        issue_s, dev, rwbs, sector, nbytes, pid, comm, _ = row
        self._file.write((issue_s, complete_s, self.names.get(dev, f"{dev[0]}:{dev[1]}"), op_of(rwbs), rwbs,
                          sector, nbytes, pid, comm, error))
        if pid is not None:
            self.issuers.setdefault(pid, [comm, 0])[1] += 1
        self.rows += 1

    def close(self) -> None:
        """Write requests never completed (``complete_s`` null), close, and rename."""
        for queue in self._pending.values():
            for row in queue:
                self.incomplete_requests += 1
                self._emit(row, None, None)
        self._pending.clear()
        self._file.close()

    def abort(self) -> None:
        self._file.abort()


#: The kernel's mark of a synchronous request in ``rwbs`` (REQ_SYNC): reads, O_DIRECT and
#: O_SYNC/fsync writes, journal commits. A write without it is writeback that whoever dirtied the
#: pages did not wait for (the flusher's, or one started by ``close``/``rename``).
SYNC_FLAG = "S"


def waited_for(op, rwbs, comm=None, issue_s=None, windows=()):
    """Per request (NumPy arrays of ``op``, ``rwbs`` and the issuing ``comm``): whether the task
    that caused it waited for it — every read, a write carrying :data:`SYNC_FLAG`, a flush the
    run's own process issued, and a flush issued (at ``issue_s``) inside one of the run's sync
    calls, ``windows`` (:func:`sync_waits`: ``fsync`` waits for the journal's commit and the cache
    flush, which the kernel's threads issue for it); a write without the flag is background
    writeback, and any other flush a kernel thread issued (the journal's periodic commit) is the
    file system's, which the run does not wait for (without ``comm``: every flush is taken as
    waited for)."""
    import numpy as np

    op, rwbs = np.asarray(op, dtype=str), np.asarray(rwbs, dtype=str)
    waited = ((op != "W") & (op != "F")) | ((op == "W") & (np.char.find(rwbs, SYNC_FLAG) >= 0))
    if comm is None:
        return waited | (op == "F")
    comm = np.asarray([str(c or "") for c in comm], dtype=str)
    kernel = np.zeros(comm.shape, bool)
    for prefix in KERNEL_THREAD_COMMS:
        kernel |= np.char.startswith(comm, prefix)
    for_a_sync = inside(issue_s, windows) if issue_s is not None else np.zeros(op.shape, bool)
    return waited | ((op == "F") & (~kernel | for_a_sync))


def inside(times_s, windows) -> "np.ndarray":
    """Per time, whether it falls in one of ``windows`` (``[start, end]`` pairs, any order)."""
    import numpy as np

    times = np.asarray(times_s, dtype=float)
    found = np.zeros(times.shape, bool)
    for start, end in windows or ():
        found |= (times >= start) & (times <= end)
    return found


def window_ends(times_s, windows) -> "np.ndarray":
    """Per time, the earliest end of a window in ``windows`` holding it (NaN where none does)."""
    import numpy as np

    times = np.asarray(times_s, dtype=float)
    ends = np.full(times.shape, np.inf)
    for start, end in windows or ():
        ends = np.where((times >= start) & (times <= end), np.minimum(ends, end), ends)
    return np.where(np.isinf(ends), np.nan, ends)


#: Kernel threads (writeback, the journal, loop devices' workers, kswapd) issue everyone's
#: requests, the run's included: kept, even once they have ended.
KERNEL_THREAD_COMMS = ("kworker/", "jbd2/", "kswapd", "kcompactd", "ksoftirqd/", "kthreadd", "loop")


def descendants(root: int, forks: Sequence[tuple[int, int]]) -> set[int]:
    """``root`` and every process forked from it, or from one of those, in ``forks`` order."""
    tree = {root}
    for parent, child in forks:
        if parent in tree:
            tree.add(child)
    return tree


def foreign_issuers(writer: CanonicalWriter, leader: int, roots: Sequence[int] = ()) -> dict[str, Any]:
    """Which of a trace's issuers are not the run's (asked once the command has ended, before its
    session is killed). The run's are the command's ``leader`` and every process forked from it
    while tracing (where the tracer saw forks: ``sched_process_fork``), else those alive in its
    session; kernel threads issue everyone's writeback and journal, the run's included, and are
    kept. Foreign: every other process — another study's Nextflow and tasks, a daemon — and the
    profiler itself. Without fork events a process that has ended cannot be told apart and is
    kept. Foreign requests stay in the trace and are left out of the run's features
    (:func:`run_requests`). ``roots``: other processes whose trees are the run's too (a
    container's first process, forked by its engine, not by the command)."""
    profiler = {int(tid) for tid in os.listdir("/proc/self/task")}
    own = descendants(leader, writer.forks) if writer.forks_traced else {leader}
    for root in roots:
        own |= descendants(root, writer.forks) if writer.forks_traced else {root}
    foreign = {}
    for pid, (comm, count) in writer.issuers.items():
        if pid in own:
            continue
        facts = session_and_kernel(pid)
        kernel = facts[1] if facts is not None else str(comm or "").startswith(KERNEL_THREAD_COMMS)
        if pid in profiler:
            foreign[str(pid)] = {"comm": comm, "requests": count}
        elif kernel:
            continue
        elif writer.forks_traced or (facts is not None and facts[0] != leader):
            foreign[str(pid)] = {"comm": comm, "requests": count}
    how = ("the run's process tree from fork events" if writer.forks_traced
           else "liveness: processes alive outside the run's session (an ended one is kept)")
    if roots:
        how += f" (and the tree of {', '.join(map(str, roots))}: the container's first process)"
    return {"pids": foreign, "requests": sum(f["requests"] for f in foreign.values()), "attributed_by": how,
            "why": "issued by processes other than the run's or the kernel's; kept in the trace, left out of the "
                   "features"}


def own_pids(writer: CanonicalWriter, leader: int, roots: Sequence[int] = ()) -> set[int]:
    """The run's processes as the trace tells them: ``leader`` and, where forks were traced, every
    process forked from it, and the same for each of ``roots`` (:func:`foreign_issuers`)."""
    own = descendants(leader, writer.forks) if writer.forks_traced else {leader}
    for root in roots:
        own |= descendants(root, writer.forks) if writer.forks_traced else {root}
    return own


def throttled(writer: CanonicalWriter, leader: int | None, roots: Sequence[int] = ()) -> dict[str, Any]:
    """The run's write-back throttling: how often and how long the kernel paused its processes
    (``leader``'s tree and ``roots``', as :func:`foreign_issuers` tells them; ``None``: every
    process but the profiler, for a run whose requests are not attributed) for dirtying pages
    faster than their device wrote them back (``balance_dirty_pages``). Time a task slept there
    is time the device's write speed cost it while it ran, apart from the flush after it ended."""
    if not writer.throttle_traced:
        return {"traced": False, "why": writer.throttle_why}
    profiler = {int(tid) for tid in os.listdir("/proc/self/task")}
    own = ({pid for pid in writer.pauses if pid not in profiler} if leader is None
           else own_pids(writer, leader, roots))
    mine = [writer.pauses[pid] for pid in own if pid in writer.pauses]
    return {"traced": True, "pauses": int(sum(c for c, _ in mine)), "paused_s": round(sum(p for _, p in mine), 6),
            "others_paused_s": round(sum(p for pid, (_, p) in writer.pauses.items() if pid not in own), 6)}


#: The sync calls a run's record lists one by one, at most; past it they are counted, not listed
#: (the flushes issued in an unlisted call are taken as not waited for).
MAX_SYNC_WINDOWS = 4096


def sync_waits(writer: CanonicalWriter, end_s: float, leader: int | None,
               roots: Sequence[int] = ()) -> dict[str, Any]:
    """The run's ``fsync``/``fdatasync`` calls (its processes as :func:`throttled` tells them):
    how many, the seconds its processes spent inside them, and each call's ``[entered,
    returned]`` on the trace's clock (one still inside at ``end_s`` returns then). A flush of the
    device's write cache issued inside one of them was issued for it, whichever kernel thread
    issued it, and the call waited for it (:func:`waited_for`)."""
    if not writer.syncs_traced:
        return {"traced": False, "why": writer.syncs_why}
    profiler = {int(tid) for tid in os.listdir("/proc/self/task")}
    own = (None if leader is None else own_pids(writer, leader, roots))
    windows = [[enter, end_s if returned is None else returned] for pid, enter, returned in writer.syncs
               if (pid not in profiler if own is None else pid in own)]
    return {"traced": True, "calls": len(windows), "waited_s": round(sum(b - a for a, b in windows), 6),
            "windows_s": [[round(a, 6), round(b, 6)] for a, b in windows[:MAX_SYNC_WINDOWS]],
            "windows_unlisted": max(0, len(windows) - MAX_SYNC_WINDOWS)}


def sync_windows(body: dict[str, Any]) -> list[list[float]]:
    """The ``[entered, returned]`` of each sync call a run's manifest lists (:func:`sync_waits`)."""
    return (((body.get("collectors") or {}).get("blocktrace") or {}).get("sync") or {}).get("windows_s") or []


def excluded_pids(body: dict[str, Any]) -> list[int]:
    """The pids a run's manifest names as foreign issuers (:func:`foreign_issuers`)."""
    foreign = ((body.get("collectors") or {}).get("blocktrace") or {}).get("foreign") or {}
    return [int(pid) for pid in foreign.get("pids") or {}]


def stacked_devices(body: dict[str, Any]) -> list[str]:
    """Traced devices whose every request reaches another traced device below them: a run's swap
    area, a loop device over a file on the class's traced file system. Each of its requests is
    traced twice, on the swap device (issued by the process that paged) and on the one below (by
    the loop's worker); the features and predictions count it once, below, where the disk served
    it."""
    swap = body.get("swap") or {}
    loop = swap.get("loop_device")
    traced = list(body.get("devices") or [])
    if not loop or Path(loop).name not in traced:
        return []
    under = swap.get("backing_device")
    if under is None:  # a result set from before the swap recorded it: its file on the run's directory
        point = ((body.get("mounts") or {}).get("cwd") or {}).get("mount_point")
        backing = swap.get("backing_file") or ""
        if point and backing.startswith(point.rstrip("/") + "/"):
            under = next((d for d in traced if d != Path(loop).name), None)
    return [Path(loop).name] if under in traced else []


def swap_device(body: dict[str, Any]) -> str | None:
    """The run's swap device, when it was traced."""
    loop = (body.get("swap") or {}).get("loop_device")
    return Path(loop).name if loop and Path(loop).name in (body.get("devices") or []) else None


def run_requests(run_dir: Path, body: dict[str, Any]) -> dict[str, Any]:
    """A run's own requests, each counted once (:func:`request_arrays` without its foreign
    issuers' and without those of a device stacked on another traced one, :func:`stacked_devices`)."""
    return request_arrays(trace_path(run_dir), excluded_pids(body), exclude_devices=stacked_devices(body),
                          sync_windows_s=sync_windows(body))


def kernel_thread_issue_s(run_dir: Path, body: dict[str, Any]) -> "np.ndarray":
    """When the run's kept requests that a kernel thread issued (write-back, the journal:
    :data:`KERNEL_THREAD_COMMS`) were issued, in seconds on the run's clock: the requests a run
    cannot tell from those of another run beside it."""
    import numpy as np

    table = read_table(trace_path(run_dir)).select(["issue_s", "pid", "comm"])
    pids = table.column("pid").to_numpy(zero_copy_only=False)
    comms = np.asarray([str(c or "") for c in table.column("comm").to_pylist()])
    kernel = np.char.startswith(comms, KERNEL_THREAD_COMMS[0])
    for prefix in KERNEL_THREAD_COMMS[1:]:
        kernel |= np.char.startswith(comms, prefix)
    kept = kernel & ~np.isin(pids, np.asarray(excluded_pids(body), dtype=float))
    return table.column("issue_s").to_numpy()[kept]


def swap_issuers(run_dir: Path, body: dict[str, Any]) -> dict[str, Any]:
    """Who paged: the read and write requests of the run's swap device (swap-ins and swap-outs as
    the processes that paged submitted them; the kernel's reclaim threads for some writes), and
    the swap-in reads per issuing command (``comm``), most first. Zero counts without a traced
    swap device."""
    import pyarrow.compute as pc

    out: dict[str, Any] = {"reads": 0, "writes": 0, "read_comms": {}}
    device = swap_device(body)
    if device is None:
        return out
    table = read_table(trace_path(run_dir)).select(["device", "op", "comm"])
    table = table.filter(pc.equal(table.column("device"), device))
    ops = table.column("op").to_pylist()
    comms = table.column("comm").to_pylist()
    out["reads"], out["writes"] = ops.count("R"), ops.count("W")
    counts: dict[str, int] = {}
    for op, comm in zip(ops, comms):
        if op == "R":
            counts[comm or "?"] = counts.get(comm or "?", 0) + 1
    out["read_comms"] = dict(sorted(counts.items(), key=lambda kv: (-kv[1], kv[0])))
    return out


def request_arrays(path: Path, exclude_pids: Sequence[int] = (), exclude_devices: Sequence[str] = (),
                   sync_windows_s: Sequence[Sequence[float]] = ()) -> dict[str, Any]:
    """The canonical trace as NumPy arrays in issue order, for the features: ``issue_s``,
    ``complete_s`` (NaN when not seen), ``device`` (integer codes), ``op`` (``R``/``W``/...),
    ``sector``, ``bytes``, and ``waited`` (:func:`waited_for`, with the run's sync calls
    ``sync_windows_s``); without the requests of ``exclude_pids`` and of ``exclude_devices``. A
    flush issued inside a sync call and not seen to complete completes when the call returned."""
    import numpy as np
    import pyarrow as pa

    table = read_table(path).select(["issue_s", "complete_s", "device", "op", "rwbs", "sector", "bytes", "pid", "comm"])
    if len(exclude_pids):
        pids = table.column("pid").to_numpy(zero_copy_only=False)
        table = table.filter(pa.array(~np.isin(pids, np.asarray(exclude_pids, dtype=float))))
    if len(exclude_devices):
        names = table.column("device").to_numpy(zero_copy_only=False).astype(str)
        table = table.filter(pa.array(~np.isin(names, np.asarray(list(exclude_devices), dtype=str))))
    order = np.argsort(table.column("issue_s").to_numpy(), kind="stable")
    device = table.column("device").dictionary_encode().combine_chunks().indices.to_numpy(zero_copy_only=False)
    issue = table.column("issue_s").to_numpy()
    op = table.column("op").to_numpy(zero_copy_only=False).astype(str)
    complete = table.column("complete_s").to_numpy(zero_copy_only=False).astype(float)
    unseen_flush = (op == "F") & np.isnan(complete)
    complete = np.where(unseen_flush, window_ends(issue, sync_windows_s), complete)
    return {
        "issue_s": issue[order],
        "complete_s": complete[order],
        "device": device[order],
        "op": op[order],
        "waited": waited_for(op, table.column("rwbs").to_numpy(zero_copy_only=False).astype(str),
                             table.column("comm").to_pylist(), issue, sync_windows_s)[order],
        "sector": table.column("sector").to_numpy()[order],
        "bytes": table.column("bytes").to_numpy()[order],
    }


def read_table(path: Path):
    """The canonical trace at ``path`` as an Arrow table of :data:`COLUMNS` (a ``.parquet`` path:
    an older result set's)."""
    import pyarrow as pa
    import pyarrow.csv as pacsv
    import pyarrow.parquet as pq

    path = Path(path)
    if path.suffix == ".parquet":
        return pq.read_table(path)
    types = {name: pa.type_for_alias(kind) for name, kind in COLUMNS}
    try:
        table = pacsv.read_csv(path, parse_options=pacsv.ParseOptions(delimiter="\t"),
                               convert_options=pacsv.ConvertOptions(column_types=types, null_values=[""],
                                                                    strings_can_be_null=True))
    except (pa.ArrowInvalid, OSError, EOFError) as err:
        raise BiossdError(f"{path}: not a readable block trace ({err}); re-run the profile that wrote it") from None
    if table.column_names != list(COLUMN_NAMES):
        raise BiossdError(f"{path}: block-trace columns {table.column_names}, expected {list(COLUMN_NAMES)}")
    return table


def read_blocktrace(path: Path):
    """The canonical trace as a pandas DataFrame, in issue order."""
    table = read_table(path)
    return table.to_pandas().sort_values("issue_s", kind="stable").reset_index(drop=True)


# -- collectors --------------------------------------------------------------------------------------------------------
class BlockTraceUnavailable(BiossdError, RuntimeError):
    pass


class TracefsBlockTrace:
    """Reads the tracefs instance's ``trace_pipe`` on a thread into a :class:`CanonicalWriter`."""

    source = "tracefs"

    def __init__(self, out_dir: Path, devices: dict[tuple[int, int], str], pooled: Sequence[Path] = ()) -> None:
        self.out_dir = out_dir
        self.devices = devices
        self.instance = tracefs.BlockTraceInstance(list(devices), pooled=pooled)
        self.writer: CanonicalWriter | None = None
        self.error: str | None = None
        self.parse_errors = 0
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self._fd: int | None = None
        #: Written to on stop, so the reader leaves its wait at once rather than at the next poll.
        self._wake_r: int | None = None
        self._wake_w: int | None = None
        self.pooled = False

    def start(self, t0_s: float) -> None:
        try:
            self.instance.__enter__()
        except tracefs.TracefsError as err:
            raise BlockTraceUnavailable(str(err)) from None
        self.pooled = self.instance.claim_fd is not None
        self.writer = CanonicalWriter(self.out_dir / BLOCKTRACE_FILE, self.devices, t0_s)
        self.writer.forks_traced = self.instance.tracing_forks
        self.writer.throttle_traced = self.instance.tracing_throttle
        self.writer.throttle_why = "this kernel's tracefs has no writeback:balance_dirty_pages event"
        self.writer.syncs_traced = self.instance.tracing_syncs
        self.writer.syncs_why = "this kernel's tracefs has no ext4:ext4_sync_file_enter/_exit events"
        self._fd = os.open(self.instance.pipe, os.O_RDONLY | os.O_NONBLOCK)
        self._wake_r, self._wake_w = os.pipe()
        self.instance.start()
        self._thread = threading.Thread(target=self._loop, name="biossd-blocktrace", daemon=True)
        self._thread.start()

    def _lines(self, chunk: bytes, tail: bytes) -> tuple[Iterable[str], bytes]:
        data = tail + chunk
        cut = data.rfind(b"\n") + 1
        return data[:cut].decode("utf-8", "replace").splitlines(), data[cut:]

    def _read_available(self, tail: bytes) -> tuple[bytes, bool]:
        """Read and parse all that is buffered; returns the partial last line and whether the
        pipe had anything."""
        assert self._fd is not None and self.writer is not None
        got = False
        while True:
            try:
                chunk = os.read(self._fd, READ_CHUNK_BYTES)
            except BlockingIOError:
                return tail, got
            if not chunk:
                return tail, got
            got = True
            lines, tail = self._lines(chunk, tail)
            for line in lines:
                fork = parse_fork_line(line)
                if fork is not None:
                    self.writer.forks.append(fork)
                    continue
                pause = parse_throttle_line(line)
                if pause is not None:
                    self.writer.pause(*pause)
                    continue
                sync = parse_sync_line(line)
                if sync is not None:
                    self.writer.sync(*sync)
                    continue
                try:
                    event = parse_tracefs_line(line)
                except ValueError:
                    self.parse_errors += 1
                    continue
                if event is not None:
                    self.writer.add(event)

    def _loop(self) -> None:
        tail = b""
        try:
            while not self._stop.is_set():
                select.select([self._fd, self._wake_r], [], [], POLL_S)
                tail, _ = self._read_available(tail)
            # Recording is off: drain what the ring buffer still holds.
            while True:
                tail, got = self._read_available(tail)
                if not got:
                    break
        except Exception as err:  # recorded in the manifest; the run itself goes on
            self.error = f"{type(err).__name__}: {err}"

    def stop(self) -> dict[str, Any]:
        """Stop tracing, drain, close the file and tear the instance down; returns the record."""
        lost: dict[str, int] = {}
        try:
            self.instance.stop()
            self._wake()
            if self._thread is not None:
                self._thread.join()
            lost = self.instance.lost_events()
        finally:
            self._close_fds()
            self.instance.close()
        assert self.writer is not None
        if self.error is not None:
            self.writer.abort()
            raise RuntimeError(self.error)
        self.writer.close()
        record = _record(self.source, self.writer, lost, self.parse_errors)
        record["instance"] = "pooled" if self.pooled else "own"  # a pool's, made ready, or made for this run
        return record

    def _wake(self) -> None:
        self._stop.set()
        if self._wake_w is not None:
            os.write(self._wake_w, b"x")

    def _close_fds(self) -> None:
        for name in ("_fd", "_wake_r", "_wake_w"):
            fd = getattr(self, name)
            if fd is not None:
                os.close(fd)
                setattr(self, name, None)

    def abort(self) -> None:
        self._wake()
        if self._thread is not None:
            self._thread.join(timeout=5)
        self._close_fds()
        self.instance.close()
        if self.writer is not None:
            self.writer.abort()


class BlktraceBlockTrace:
    """blktrace's binary per-CPU files, converted with blkparse after the run."""

    source = "blktrace"

    def __init__(self, out_dir: Path, devices: dict[tuple[int, int], str]) -> None:
        self.out_dir = out_dir
        self.devices = devices
        self.proc: subprocess.Popen[str] | None = None
        self.t_start = 0.0
        self.t0_s = 0.0

    def start(self, t0_s: float) -> None:
        if shutil.which("blktrace") is None or shutil.which("blkparse") is None:
            raise BlockTraceUnavailable("blktrace/blkparse are not installed")
        if not DEBUGFS_BLOCK.is_dir():
            raise BlockTraceUnavailable(f"debugfs is not mounted ({DEBUGFS_BLOCK} is missing)")
        argv = ["blktrace", "-o", "blktrace", "-D", str(self.out_dir)]
        for name in self.devices.values():
            argv += ["-d", f"/dev/{name}"]
        self.t0_s = t0_s
        self.t_start = time.monotonic()
        self.proc = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                                     start_new_session=True, preexec_fn=dies_with_parent(signal.SIGINT))
        try:
            self.proc.wait(timeout=BLKTRACE_PROBE_S)
        except subprocess.TimeoutExpired:
            return  # still running: tracing
        out = (self.proc.stdout.read() if self.proc.stdout else "").strip()
        self.proc = None
        for leftover in self.out_dir.glob("blktrace.*"):
            leftover.unlink()
        raise BlockTraceUnavailable(f"blktrace refused: {out or 'exited at once'}")

    def stop(self) -> dict[str, Any]:
        assert self.proc is not None
        self.proc.send_signal(signal.SIGINT)
        summary, _ = self.proc.communicate(timeout=60)
        dropped = sum(int(n) for n in re.findall(r"dropped (\d+)", summary or ""))
        # blkparse times count from the first traced event, which came after t_start.
        writer = CanonicalWriter(self.out_dir / BLOCKTRACE_FILE, self.devices, self.t0_s - self.t_start)
        parse = subprocess.Popen(
            ["blkparse", "-i", "blktrace", "-D", str(self.out_dir), "-q", "-f", BLKPARSE_FORMAT],
            stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True,
        )
        assert parse.stdout is not None
        try:
            for line in parse.stdout:
                event = parse_blkparse_line(line)
                if event is not None:
                    writer.add(event)
        except BaseException:
            parse.kill()
            writer.abort()
            raise
        if parse.wait() != 0:
            writer.abort()
            raise RuntimeError("blkparse failed on blktrace's output")
        writer.close()
        record = _record(self.source, writer, {"dropped": dropped}, 0)
        record["files"] += sorted(p.name for p in self.out_dir.glob("blktrace.blktrace.*"))
        record["time_base"] = "blktrace start (approximate: blkparse counts from the first event)"
        return record

    def abort(self) -> None:
        if self.proc is not None:
            self.proc.kill()
            self.proc.wait()


def _record(source: str, writer: CanonicalWriter, lost: dict[str, int], parse_errors: int) -> dict[str, Any]:
    return {
        "ran": True, "why": None, "source": source, "files": [BLOCKTRACE_FILE],
        "requests": writer.rows, "lost": lost, "lost_total": sum(lost.values()),
        "unmatched_completions": writer.unmatched_completions,
        "incomplete_requests": writer.incomplete_requests, "requeues": writer.requeues,
        "submitters_forgotten": writer.submitters_forgotten,
        "parse_errors": parse_errors,
    }


def start(mode: str, out_dir: Path, devices: dict[tuple[int, int], str], t0_s: float, pooled: Sequence[Path] = ()):
    """Start the first block tracer that works for ``mode``; returns ``(tracer, notes)`` where
    ``tracer`` is ``None`` when none could start and ``notes`` says why each was passed over.
    ``pooled``: tracefs instances made ready (:class:`biossd.host.tracefs.InstancePool`) to
    claim before making one."""
    if mode not in MODES:
        raise ValueError(f"unknown block-trace mode {mode!r}; choose one of {MODES}")
    notes: list[str] = []
    if mode == "off":
        return None, ["disabled (--blocktrace off)"]
    if not devices:
        return None, ["no device to trace"]
    kinds = {"auto": (BlktraceBlockTrace, TracefsBlockTrace), "blktrace": (BlktraceBlockTrace,),
             "tracefs": (TracefsBlockTrace,)}[mode]
    for kind in kinds:
        tracer = kind(out_dir, devices, pooled) if kind is TracefsBlockTrace else kind(out_dir, devices)
        try:
            tracer.start(t0_s)
        except BlockTraceUnavailable as err:
            notes.append(f"{kind.source}: {err}")
            continue
        return tracer, notes
    return None, notes
