"""From the kernel's trace events to the rows of a run's block trace: the parsers of tracefs and
blkparse lines (requests, forks, write-back throttling, sync calls) and the writer that pairs each
request's issue with its completion and writes it once (:mod:`biossd.measure.trace.tracefile`).
Standard library only: it runs in the profiler, beside the tool."""

from __future__ import annotations

import re
from collections import deque
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from biossd.core.units import SECTOR_BYTES
from biossd.measure.trace.tracefile import TraceFile

#: The write-back throttling event gives its pause in milliseconds.
MS_PER_S = 1000.0


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


_PAGE_CACHE_LINE = re.compile(r"^\s*(?P<comm>.*?)-(?P<pid>\d+)\s.*?: mm_filemap_add_to_page_cache: "
                              r"dev (?P<major>\d+):(?P<minor>\d+) ino (?P<ino>[0-9a-f]+) pfn=\S+ ofs=\d+"
                              r"(?: order=(?P<order>\d+))?")


def parse_page_cache_line(line: str) -> tuple[int, tuple[int, int], int, int] | None:
    """``(pid, (major, minor) of the file system's device, pages, inode)`` of one
    ``filemap:mm_filemap_add_to_page_cache`` line of ``trace_pipe`` (a task brought a folio of
    2**order pages of that file into the page cache; the kernel prints the inode in hex); ``None``
    for other lines."""
    if "mm_filemap_add_to_page_cache" not in line:
        return None
    head = _PAGE_CACHE_LINE.match(line)
    if head is None:
        return None
    return (int(head["pid"]), (int(head["major"]), int(head["minor"])), 1 << int(head["order"] or 0),
            int(head["ino"], 16))


_DIRTY_LINE = re.compile(r"^\s*(?P<comm>.*?)-(?P<pid>\d+)\s.*?: writeback_dirty_folio: bdi (?P<bdi>\S+): "
                         r"ino=(?P<ino>\d+) index=\d+")


def parse_dirty_line(line: str) -> tuple[int, str, int] | None:
    """``(pid, comm, inode)`` of one ``writeback:writeback_dirty_folio`` line of ``trace_pipe`` (a
    task dirtied a folio of that file); ``None`` for other lines."""
    if "writeback_dirty_folio" not in line:
        return None
    head = _DIRTY_LINE.match(line)
    return (int(head["pid"]), head["comm"].strip(), int(head["ino"])) if head else None


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
        #: Pages brought into the page cache on file systems other than the traced devices':
        #: (pid, (major, minor)) -> pages, where the tracer records them (:attr:`page_cache_traced`).
        self.page_cache_adds: dict[tuple[int, tuple[int, int]], int] = {}
        #: The same by file: (pid, (major, minor), inode) -> pages.
        self.page_cache_files: dict[tuple[int, tuple[int, int], int], int] = {}
        self.page_cache_traced = False
        self.page_cache_why = "blktrace records block requests only, not the page cache"
        #: Folios dirtied on the traced devices' file systems: (pid, comm, inode) -> folios, where
        #: the tracer records them (:attr:`dirtied_traced`).
        self.dirtied: dict[tuple[int, str, int], int] = {}
        self.dirtied_traced = False
        self._file = TraceFile(self.path)

    def dirty(self, pid: int, comm: str, inode: int) -> None:
        """Task ``pid`` dirtied a folio of file ``inode`` (:func:`parse_dirty_line`)."""
        key = (pid, comm, inode)
        self.dirtied[key] = self.dirtied.get(key, 0) + 1

    def page_cache_add(self, pid: int, device: tuple[int, int], pages: int, inode: int = 0) -> None:
        """Task ``pid`` brought ``pages`` of file ``inode`` into the page cache on ``device``'s file
        system (:func:`parse_page_cache_line`)."""
        key = (pid, device)
        self.page_cache_adds[key] = self.page_cache_adds.get(key, 0) + pages
        by_file = (pid, device, inode)
        self.page_cache_files[by_file] = self.page_cache_files.get(by_file, 0) + pages

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
