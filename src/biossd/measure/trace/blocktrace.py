"""Block-request traces of the traced devices (Lee, Min and Yoon 2015, §5.1): the tracers, and
whose requests they were.

The paper ran blktrace and derived its I/O features from the requests it saw. biossd uses
blktrace where the kernel allows it and otherwise the ``block_rq_issue``/``block_rq_complete``
tracepoints (:mod:`biossd.host.tracefs`); both end in one canonical file, ``blocktrace.tsv.gz``
(:mod:`biossd.measure.trace.tracefile`: its columns), one row per request, written as requests complete
(:mod:`biossd.measure.trace.traceevents`), so millions of requests never sit in memory. The readers are
:mod:`biossd.measure.trace.tracereader`'s.

Times use the monotonic clock of :func:`time.monotonic` (tracefs ``mono`` clock), so they line
up with the sampler's ``t_s``. Events the kernel lost are counted, never silently dropped:
``lost`` in the collector record holds the ring buffer's overrun/dropped counts, and
``unmatched_completions``/``incomplete_requests`` count requests seen on one side only. A
request the driver requeued is kept once, with the time of its last issue (``requeues``
counts them).
"""

from __future__ import annotations

import os
import re
import select
import shutil
import signal
import subprocess
import threading
import time
from pathlib import Path
from typing import Any, Iterable, Sequence

from biossd.core.errors import BiossdError
from biossd.core.owners import dies_with_parent, session_and_kernel
from biossd.host import tracefs
from biossd.measure.trace.traceevents import (
    BLKPARSE_FORMAT,
    CanonicalWriter,
    parse_blkparse_line,
    parse_dirty_line,
    parse_fork_line,
    parse_page_cache_line,
    parse_sync_line,
    parse_throttle_line,
    parse_tracefs_line,
)
from biossd.measure.trace.tracefile import BLOCKTRACE_FILE, KERNEL_THREAD_COMMS

POLL_S = 0.25
READ_CHUNK_BYTES = 1 << 20
PAGE_BYTES = os.sysconf("SC_PAGE_SIZE")
MODES = ("auto", "blktrace", "tracefs", "off")
#: blktrace is given this long to fail (it fails at once when the kernel refuses it).
BLKTRACE_PROBE_S = 0.3
DEBUGFS_BLOCK = Path("/sys/kernel/debug/block")


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


#: The files a run's record names among those its code reads came from (the most read first), at most.
MAX_CODE_FILES = 10


def page_cache_reads(writer: CanonicalWriter, leader: int | None, roots: Sequence[int] = (),
                     mapped: dict[int, str] | None = None) -> dict[str, Any]:
    """What the run's processes (as :func:`throttled` tells them; ``None``: every process but the
    profiler's) brought into the page cache from file systems other than the traced devices' —
    its code, read from the host's own disk (docs/study.md, "Code is not data") — in bytes per
    device, and the run's total; the files most read, named from ``mapped`` (inode -> path: those
    its processes were seen to map) else by device and inode (a file written new counts too: its
    pages enter the cache as it writes them); what other processes brought in meanwhile beside it."""
    if not writer.page_cache_traced:
        return {"traced": False, "why": writer.page_cache_why}
    profiler = {int(tid) for tid in os.listdir("/proc/self/task")}
    own = None if leader is None else own_pids(writer, leader, roots)
    mine: dict[str, int] = {}
    others = 0
    for (pid, (major, minor)), pages in writer.page_cache_adds.items():
        if (pid not in profiler) if own is None else (pid in own):
            name = _device_name(major, minor)
            mine[name] = mine.get(name, 0) + pages * PAGE_BYTES
        else:
            others += pages * PAGE_BYTES
    files: dict[tuple[tuple[int, int], int], int] = {}
    for (pid, device, inode), pages in writer.page_cache_files.items():
        if (pid not in profiler) if own is None else (pid in own):
            files[(device, inode)] = files.get((device, inode), 0) + pages * PAGE_BYTES
    top = sorted(files.items(), key=lambda item: -item[1])[:MAX_CODE_FILES]
    return {"traced": True, "bytes_by_device": dict(sorted(mine.items())), "bytes": sum(mine.values()),
            "others_bytes": others,
            "files": [{"device": _device_name(*device), "inode": inode, "bytes": n,
                       "file": (mapped or {}).get(inode)} for (device, inode), n in top],
            "what": "file pages the run's processes brought into the page cache on file systems other than the "
                    "device under study (its code), by the file system's device"}


#: The files a run's record names one by one (the most dirtied first), at most.
MAX_DIRTIED_FILES = 20


def dirtied(writer: CanonicalWriter, leader: int | None, left: dict[int, str], mapped: dict[int, str],
            roots: Sequence[int] = ()) -> dict[str, Any]:
    """What the run's processes (as :func:`throttled` tells them) dirtied in the files of the
    device under study, whoever wrote it back later: bytes by process name, and by file — named
    from ``left`` (inode -> path: the files left in its working directory at the end) or
    ``mapped`` (those its processes were seen to map), else by inode — with whether the file was
    left (``left`` false: a transient file, removed before the run ended, an MPI launcher's
    shared-memory segment, say), and the bytes dirtied in transient files."""
    if not writer.dirtied_traced:
        return {"traced": False, "why": "this kernel's tracefs has no writeback:writeback_dirty_folio event"
                if writer.page_cache_traced else "blktrace records block requests only, not dirtied pages"}
    profiler = {int(tid) for tid in os.listdir("/proc/self/task")}
    own = None if leader is None else own_pids(writer, leader, roots)
    by_process: dict[str, int] = {}
    by_file: dict[int, dict[str, Any]] = {}
    for (pid, comm, inode), folios in writer.dirtied.items():
        if not ((pid not in profiler) if own is None else (pid in own)):
            continue
        size = folios * PAGE_BYTES
        by_process[comm] = by_process.get(comm, 0) + size
        entry = by_file.setdefault(inode, {"file": left.get(inode) or mapped.get(inode) or f"inode {inode}",
                                           "left": inode in left, "bytes": 0, "by": {}})
        entry["bytes"] += size
        entry["by"][comm] = entry["by"].get(comm, 0) + size
    files = sorted(by_file.values(), key=lambda f: -f["bytes"])
    return {"traced": True, "bytes": sum(by_process.values()), "by_process": dict(sorted(by_process.items())),
            "transient_bytes": sum(f["bytes"] for f in files if not f["left"]),
            "files": files[:MAX_DIRTIED_FILES], "files_unlisted": max(0, len(files) - MAX_DIRTIED_FILES),
            "what": "pages the run's processes dirtied in files of the device under study (folios counted as pages)"}


def _device_name(major: int, minor: int) -> str:
    """The kernel's name of a file system's device (``vda``), or ``MAJ:MIN`` for an anonymous one
    (overlayfs, tmpfs)."""
    from biossd.host import devices

    try:
        return devices.resolve(f"{major}:{minor}")
    except devices.DeviceError:
        return f"{major}:{minor}"


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
        self.writer.page_cache_traced = self.instance.tracing_page_cache
        self.writer.dirtied_traced = self.instance.tracing_dirtied
        self.writer.page_cache_why = "this kernel's tracefs has no filemap:mm_filemap_add_to_page_cache event"
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
                added = parse_page_cache_line(line)
                if added is not None:
                    self.writer.page_cache_add(*added)
                    continue
                dirtied = parse_dirty_line(line)
                if dirtied is not None:
                    self.writer.dirty(*dirtied)
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
