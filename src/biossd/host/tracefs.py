"""A private tracefs instance with block tracepoints enabled for a set of devices.

The paper traced block requests with blktrace (Lee, Min and Yoon 2015, §5.1). Where blktrace's relay files are
refused (this VM), the same requests are seen by the kernel's ``block_rq_issue`` and
``block_rq_complete`` tracepoints. This module owns the kernel state that needs:

* a tracefs mount — the one at ``/sys/kernel/tracing`` if it exists, otherwise a private mount
  at ``/tmp/biossd-tracefs-<pid>-<hex>`` made here and unmounted on exit (the host's own
  mounts are never touched);
* an instance ``instances/biossd-<pid>-<hex>`` with its own ring buffer, so the host's global
  tracer and other users of tracefs are not disturbed; the instance uses the ``mono`` clock
  (the same as :func:`time.monotonic`), a per-CPU buffer of :data:`BUFFER_KIB_PER_CPU`, and
  each event filtered to the traced devices' ``dev_t``;
* or, for the short runs of a long-lived owner (a pipeline session), an :class:`InstancePool` of
  instances made ready beforehand, which a run claims (an exclusive ``flock``), points at its
  devices, and lets go, leaving its removal to the pool.

Everything is undone on exit from the context manager; :func:`find_leftovers` finds what a
killed process left behind, and :func:`remove_leftover` removes it.
"""

from __future__ import annotations

import contextlib
import errno
import os
import subprocess
import tempfile
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable, Sequence

from biossd.core.errors import BiossdError
from biossd.core.owners import HostObject, is_owned_name, owned_name, owner_alive, start_ticks

HOST_TRACEFS = Path("/sys/kernel/tracing")
PREFIX = "biossd-"
MOUNT_PREFIX = "biossd-tracefs-"
#: The tracepoints a block trace enables: issue and completion of each request, and requeue
#: (a request the driver handed back, to be issued again).
BLOCK_EVENTS = ("block_rq_issue", "block_rq_complete", "block_rq_requeue")
#: Recorded where the kernel has them: the task that submitted a request (which allocated it,
#: queued it, or moved its start by a front merge), when a block-layer worker issues it.
OPTIONAL_BLOCK_EVENTS = ("block_rq_insert", "block_getrq", "block_bio_frontmerge")
FORK_EVENT = "sched_process_fork"
#: Recorded where the kernel has it: each pause the kernel imposes on a task that dirties pages
#: faster than its device writes them back (``balance_dirty_pages``, write-back throttling).
THROTTLE_EVENT = "balance_dirty_pages"
#: Recorded where the kernel has them: each task's entry into and return from ``fsync`` or
#: ``fdatasync`` on an ext4 file system of the traced devices (biossd makes each class's scratch
#: ext4). The journal's commit and the device's cache flush that such a call waits for are
#: issued by kernel threads, so the block requests alone cannot say that the task waited.
SYNC_SYSTEM = "ext4"
SYNC_EVENTS = ("ext4_sync_file_enter", "ext4_sync_file_exit")
#: Recorded where the kernel has it: each page (folio) a task brings into the page cache, with the
#: file system's device, on every file system but the traced devices' — what a run reads from
#: elsewhere than the device under study: its code (docs/study.md, "Code is not data").
PAGE_CACHE_SYSTEM, PAGE_CACHE_EVENT = "filemap", "mm_filemap_add_to_page_cache"
#: Recorded where the kernel has it: each page (folio) a task dirties in a file of the traced
#: devices' file systems, in the dirtier's own context, with the file's inode — what a run wrote
#: and which of its processes wrote it, whoever writes it back later (a kernel thread).
DIRTY_EVENT = "writeback_dirty_folio"
#: Ring buffer per CPU; large enough that a reader woken every poll interval never overruns
#: at tens of thousands of requests per second.
BUFFER_KIB_PER_CPU = 8192
TRACE_CLOCK = "mono"
#: The kernel's internal ``dev_t`` packs the minor number into the low 20 bits (``MINORBITS``).
KERNEL_MINOR_BITS = 20


class TracefsError(BiossdError, RuntimeError):
    """tracefs cannot be used; the message says why."""


def kernel_dev_t(major: int, minor: int) -> int:
    """The ``dev`` field of block tracepoints for a device ``major:minor``."""
    return (major << KERNEL_MINOR_BITS) | minor


def _mountinfo() -> list[tuple[Path, str]]:
    """(mount point, filesystem type) of every mount this process sees."""
    from biossd.core.files import mount_table

    return [(Path(m.point), m.fstype) for m in mount_table()]


def tracefs_mounts() -> list[Path]:
    return [point for point, fstype in _mountinfo() if fstype == "tracefs"]


def _write(path: Path, value: str) -> None:
    try:
        path.write_text(value)
    except OSError as err:
        raise TracefsError(f"cannot write {value!r} to {path}: {err.strerror}") from None


def _mount() -> tuple[Path, bool]:
    """The tracefs mount to use: the host's, else a private one made here (``True``: ours to
    unmount)."""
    if (HOST_TRACEFS / "instances").is_dir():
        return HOST_TRACEFS, False
    point = Path(tempfile.mkdtemp(prefix=f"{MOUNT_PREFIX}{os.getpid()}-{start_ticks(os.getpid())}-"))
    proc = subprocess.run(["mount", "-t", "tracefs", "nodev", str(point)],
                          capture_output=True, text=True, start_new_session=True)
    if proc.returncode != 0:
        point.rmdir()
        raise TracefsError(f"cannot mount tracefs: {proc.stderr.strip()}")
    return point, True


def _make_instance(mount_point: Path, events: Sequence[str], buffer_kib_per_cpu: int) -> Path:
    """A new instance of this process's (:func:`owned_name`), not recording, on the ``mono`` clock
    with its buffer sized; the caller removes it (:func:`_remove_instance`)."""
    for event in events:
        if not (mount_point / "events" / "block" / event).is_dir():
            raise TracefsError(f"this kernel has no block:{event} tracepoint")
    path = mount_point / "instances" / owned_name(PREFIX)
    try:
        path.mkdir()
    except OSError as err:
        raise TracefsError(f"cannot create a tracefs instance: {err.strerror}") from None
    try:
        _write(path / "tracing_on", "0")
        _write(path / "trace_clock", TRACE_CLOCK)
        _write(path / "buffer_size_kb", str(buffer_kib_per_cpu))
    except TracefsError:
        _remove_instance(path)
        raise
    return path


def _point(path: Path, mount_point: Path, events: Sequence[str], devices: Sequence[tuple[int, int]] | None,
           forks: bool) -> dict[str, bool]:
    """Enable ``events`` (and those of :data:`OPTIONAL_BLOCK_EVENTS` the kernel has) in the
    instance ``path``, filtered to ``devices`` (``None``: to none, as a pooled instance waits),
    every write-back throttling pause (:data:`THROTTLE_EVENT`, any device's: the run's are told by
    its processes), the ``fsync`` calls on those devices' file systems (:data:`SYNC_EVENTS`), the
    pages brought into the page cache on every other file system (:data:`PAGE_CACHE_EVENT`), the
    pages dirtied on those devices' (:data:`DIRTY_EVENT`) and, with ``forks``, every fork; returns
    which of ``forks``, ``throttle``, ``syncs``, ``page_cache`` and ``dirtied`` are recorded."""
    condition = " || ".join(f"dev == {kernel_dev_t(ma, mi)}" for ma, mi in devices or ())
    optional = [e for e in OPTIONAL_BLOCK_EVENTS if (mount_point / "events" / "block" / e).is_dir()]
    for event in (*events, *optional):
        event_dir = path / "events" / "block" / event
        _write(event_dir / "filter", condition or "0")
        _write(event_dir / "enable", "1")
    throttle_dir = path / "events" / "writeback" / THROTTLE_EVENT
    if throttle_dir.is_dir():
        _write(throttle_dir / "enable", "1")
    sync_dirs = [path / "events" / SYNC_SYSTEM / event for event in SYNC_EVENTS]
    syncs = all(d.is_dir() for d in sync_dirs)
    for event_dir in sync_dirs if syncs else ():
        _write(event_dir / "filter", condition or "0")
        _write(event_dir / "enable", "1")
    # Every fork on the host (few beside the block requests): which task is the run's.
    fork_dir = path / "events" / "sched" / FORK_EVENT
    if forks and fork_dir.is_dir():
        _write(fork_dir / "enable", "1")
    cache_dir = path / "events" / PAGE_CACHE_SYSTEM / PAGE_CACHE_EVENT
    if cache_dir.is_dir():
        others = " && ".join(f"s_dev != {kernel_dev_t(ma, mi)}" for ma, mi in devices or ())
        _write(cache_dir / "filter", (others or "1") if devices is not None else "0")
        _write(cache_dir / "enable", "1")
    dirty_dir = path / "events" / "writeback" / DIRTY_EVENT
    if dirty_dir.is_dir():
        # A block device's write-back (bdi) is named MAJ:MIN.
        named = " || ".join(f'name == "{ma}:{mi}"' for ma, mi in devices or ())
        _write(dirty_dir / "filter", named or "0")
        _write(dirty_dir / "enable", "1")
    return {"forks": forks and fork_dir.is_dir(), "throttle": throttle_dir.is_dir(), "syncs": syncs,
            "page_cache": cache_dir.is_dir(), "dirtied": dirty_dir.is_dir()}


def _buffered_entries(path: Path) -> int:
    """Events held in the instance's ring buffer, not yet read, over all CPUs."""
    total = 0
    for stats in (path / "per_cpu").glob("cpu*/stats"):
        for line in stats.read_text().splitlines():
            key, _, value = line.partition(":")
            if key.strip() == "entries":
                total += int(value.strip())
    return total


def _claim(path: Path) -> int | None:
    """An open descriptor of the pooled instance ``path`` holding its claim (an exclusive
    ``flock``, let go when the descriptor closes, or the claimer dies), or ``None`` if another run
    holds it or it is gone."""
    import fcntl

    try:
        fd = os.open(path, os.O_RDONLY | os.O_DIRECTORY)
    except OSError:
        return None
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        # Still the listed instance: one taken down (its claim held) after this opened it is gone.
        if os.fstat(fd).st_ino != os.stat(path).st_ino:
            raise FileNotFoundError(path)
    except OSError:
        os.close(fd)
        return None
    return fd


def is_pooled_instance(path: Path) -> bool:
    """Whether ``path`` is what a pool lists: a folder (not a link) ``<tracefs mount>/instances/<a
    biossd instance's name>`` — never any other path a listed file might name, which a root task
    would write its settings into."""
    path = Path(path)
    return (not path.is_symlink() and path.is_dir() and path.parent.name == "instances"
            and is_owned_name(path.name, PREFIX) and path.parent.parent in tracefs_mounts())


@dataclass
class BlockTraceInstance(HostObject):
    """Block tracepoints for ``devices`` (``(major, minor)`` pairs) in a private instance: one of
    ``pooled`` (an :class:`InstancePool`'s, made ready beforehand) that no other run holds, else
    one made here."""

    devices: Sequence[tuple[int, int]]
    events: Sequence[str] = BLOCK_EVENTS
    buffer_kib_per_cpu: int = BUFFER_KIB_PER_CPU
    #: Also record ``sched:sched_process_fork`` (the run's process tree, for attribution).
    forks: bool = True
    #: Prepared instances to claim first (:class:`InstancePool`); released, not removed, on close.
    pooled: Sequence[Path] = ()
    tracing_forks: bool = field(default=False, init=False)
    tracing_throttle: bool = field(default=False, init=False)
    tracing_syncs: bool = field(default=False, init=False)
    tracing_page_cache: bool = field(default=False, init=False)
    tracing_dirtied: bool = field(default=False, init=False)
    path: Path | None = field(default=None, init=False)
    mount_point: Path | None = field(default=None, init=False)
    own_mount: bool = field(default=False, init=False)
    #: The claim on a pooled instance (its descriptor), ``None`` for an instance made here.
    claim_fd: int | None = field(default=None, init=False)
    _lost_before: dict[str, int] = field(default_factory=dict, init=False)

    def _setup(self) -> None:
        if os.geteuid() != 0:
            raise TracefsError("tracefs block tracepoints need root")
        for candidate in self.pooled:
            if not is_pooled_instance(Path(candidate)):
                continue
            fd = _claim(Path(candidate))
            if fd is None:
                continue
            self.claim_fd, self.path = fd, Path(candidate)
            self.mount_point = self.path.parent.parent
            _write(self.path / "tracing_on", "0")
            if _buffered_entries(self.path):  # a run that died before it read all: start empty
                _write(self.path / "trace", "")
            self._traced(_point(self.path, self.mount_point, self.events, self.devices, self.forks))
            return
        self.mount_point, self.own_mount = _mount()
        self.path = _make_instance(self.mount_point, self.events, self.buffer_kib_per_cpu)
        self._traced(_point(self.path, self.mount_point, self.events, self.devices, self.forks))

    def _traced(self, flags: dict[str, bool]) -> None:
        self.tracing_forks, self.tracing_throttle, self.tracing_syncs = flags["forks"], flags["throttle"], flags["syncs"]
        self.tracing_page_cache, self.tracing_dirtied = flags["page_cache"], flags["dirtied"]

    def start(self) -> None:
        assert self.path is not None
        self._lost_before = self._lost_counts()
        _write(self.path / "tracing_on", "1")

    def stop(self) -> None:
        """Stop recording; what is buffered can still be read."""
        if self.path is not None:
            _write(self.path / "tracing_on", "0")

    @property
    def pipe(self) -> Path:
        assert self.path is not None
        return self.path / "trace_pipe"

    def _lost_counts(self) -> dict[str, int]:
        assert self.path is not None
        totals = {"overrun": 0, "commit_overrun": 0, "dropped": 0}
        keys = {"overrun": "overrun", "commit overrun": "commit_overrun", "dropped events": "dropped"}
        for stats in sorted((self.path / "per_cpu").glob("cpu*/stats")):
            for line in stats.read_text().splitlines():
                key, _, value = line.partition(":")
                if key.strip() in keys:
                    totals[keys[key.strip()]] += int(value.strip())
        return totals

    def lost_events(self) -> dict[str, int]:
        """Events the ring buffer lost since :meth:`start`: ``overrun`` (overwritten before being
        read) and ``dropped`` (refused when full), summed over CPUs (a pooled instance's counts
        go on from earlier runs: those are taken off)."""
        now = self._lost_counts()
        return {k: v - self._lost_before.get(k, 0) for k, v in now.items()}

    def close(self) -> None:
        if self.claim_fd is not None:  # a pooled instance: stopped and let go, its pool removes it
            try:
                if self.path is not None:
                    with contextlib.suppress(OSError):
                        (self.path / "tracing_on").write_text("0")
            finally:
                os.close(self.claim_fd)
                self.claim_fd, self.path = None, None
            return
        if self.path is not None:
            _remove_instance(self.path)
            self.path = None
        if self.own_mount and self.mount_point is not None:
            _unmount(self.mount_point)
            self.own_mount = False


#: Prepared instances a pipeline session keeps ready, at most: each holds
#: :data:`BUFFER_KIB_PER_CPU` per CPU; a run that finds none free makes its own.
POOL_MAX = 4


@dataclass
class InstancePool(HostObject):
    """Instances made ready, not recording, for the short runs of a long-lived owner (a pipeline
    session's leader): making and removing an instance costs the kernel tens of milliseconds a
    run (its clock and buffer reset, the grace periods of its removal); claiming a ready one
    (:class:`BlockTraceInstance` ``pooled``) a millisecond. Each is this process's
    (:func:`owned_name`): removed on close, found as a leftover if the owner dies first."""

    size: int = field(default_factory=lambda: min(os.cpu_count() or 1, POOL_MAX))
    events: Sequence[str] = BLOCK_EVENTS
    buffer_kib_per_cpu: int = BUFFER_KIB_PER_CPU
    #: Told the ready instances each time one more is ready (so the first can be claimed while
    #: the others are made).
    on_ready: Callable[[list[Path]], None] | None = None
    paths: list[Path] = field(default_factory=list, init=False)
    mount_point: Path | None = field(default=None, init=False)
    own_mount: bool = field(default=False, init=False)

    def _setup(self) -> None:
        if os.geteuid() != 0:
            raise TracefsError("tracefs block tracepoints need root")
        self.mount_point, self.own_mount = _mount()
        for _ in range(self.size):
            path = _make_instance(self.mount_point, self.events, self.buffer_kib_per_cpu)
            self.paths.append(path)
            _point(path, self.mount_point, self.events, None, True)
            if self.on_ready is not None:
                self.on_ready(list(self.paths))

    def close(self) -> None:
        """Remove every instance (each tried, whatever another's removal raised), then the mount."""
        failed: list[TracefsError] = []
        while self.paths:
            try:
                _remove_instance(self.paths.pop())
            except TracefsError as err:
                failed.append(err)
        if self.own_mount and self.mount_point is not None and not failed:
            _unmount(self.mount_point)
            self.own_mount = False
        if failed:
            raise failed[0]


def _remove_instance(path: Path) -> None:
    try:
        (path / "tracing_on").write_text("0")
        (path / "events" / "enable").write_text("0")  # every event of the instance, at once
    except OSError:
        pass
    try:
        path.rmdir()  # tracefs removes an instance, buffers and all, by rmdir
    except OSError as err:
        if err.errno != errno.ENOENT:
            raise TracefsError(f"could not remove tracefs instance {path}: {err.strerror}") from err


def _unmount(point: Path) -> None:
    subprocess.run(["umount", str(point)], capture_output=True, start_new_session=True)
    try:
        point.rmdir()
    except OSError as err:
        if err.errno != errno.ENOENT:
            raise TracefsError(f"could not remove mount point {point}: {err.strerror}") from err


def find_leftovers(include_live: bool = False) -> list[Path]:
    """biossd tracefs instances in any tracefs mount, and biossd's private tracefs mounts, whose
    process is gone (with ``include_live``, also those of runs still going)."""
    def gone(name: str, prefix: str) -> bool:
        return is_owned_name(name, prefix) and (include_live or not owner_alive(name, prefix))

    found: list[Path] = []
    for point in tracefs_mounts():
        instances = point / "instances"
        if instances.is_dir():
            found += [p for p in instances.iterdir()
                      if p.name.startswith(PREFIX) and gone(p.name, PREFIX)]
        if point.name.startswith(MOUNT_PREFIX) and gone(point.name, MOUNT_PREFIX):
            found.append(point)
    tmp = Path(tempfile.gettempdir())
    found += [p for p in tmp.glob(f"{MOUNT_PREFIX}*")
              if _made_here(p) and not os.path.ismount(p) and gone(p.name, MOUNT_PREFIX)]
    return sorted(set(found))


def _made_here(path: Path) -> bool:
    """Whether an unmounted mount point in the shared temporary directory can be biossd's: a real
    directory (not a symlink) of this user (root's for root). Another user's directory of the
    same name is theirs, never taken for a leftover."""
    try:
        st = path.lstat()
    except OSError:
        return False
    import stat

    return stat.S_ISDIR(st.st_mode) and st.st_uid == os.geteuid()


def remove_leftover(path: Path) -> None:
    """Remove one leftover :func:`find_leftovers` found. A private mount is unmounted after the
    instances *of gone runs* in it are removed: every tracefs mount shows the same instances, so a
    live run's instance is seen through a dead run's mount too, and is never removed there."""
    if not path.exists():
        return  # taken down since it was listed (a next run's reap)
    if path.parent.name == "instances":
        _remove_instance(path)
    elif os.path.ismount(path):
        for instance in (path / "instances").glob(f"{PREFIX}*"):
            if is_owned_name(instance.name, PREFIX) and not owner_alive(instance.name, PREFIX):
                _remove_instance(instance)
        _unmount(path)
    elif _made_here(path):
        path.rmdir()  # an empty mount point only: anything in it is not biossd's to delete
