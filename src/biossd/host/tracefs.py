"""A private tracefs instance with block tracepoints enabled for a set of devices.

The paper traced block requests with blktrace (seed 000, §5.1). Where blktrace's relay files are
refused (this VM), the same requests are seen by the kernel's ``block_rq_issue`` and
``block_rq_complete`` tracepoints. This module owns the kernel state that needs:

* a tracefs mount — the one at ``/sys/kernel/tracing`` if it exists, otherwise a private mount
  at ``/tmp/biossd-tracefs-<pid>-<hex>`` made here and unmounted on exit (the host's own
  mounts are never touched);
* an instance ``instances/biossd-<pid>-<hex>`` with its own ring buffer, so the host's global
  tracer and other users of tracefs are not disturbed; the instance uses the ``mono`` clock
  (the same as :func:`time.monotonic`), a per-CPU buffer of :data:`BUFFER_KIB_PER_CPU`, and
  each event filtered to the traced devices' ``dev_t``.

Everything is undone on exit from the context manager; :func:`find_leftovers` finds what a
killed process left behind, and :func:`remove_leftover` removes it.
"""

from __future__ import annotations

import errno
import os
import subprocess
import tempfile
from dataclasses import dataclass, field
from pathlib import Path
from typing import Sequence

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


def split_kernel_dev_t(dev: int) -> tuple[int, int]:
    return dev >> KERNEL_MINOR_BITS, dev & ((1 << KERNEL_MINOR_BITS) - 1)


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


@dataclass
class BlockTraceInstance(HostObject):
    """Block tracepoints for ``devices`` (``(major, minor)`` pairs) in a private instance."""

    devices: Sequence[tuple[int, int]]
    events: Sequence[str] = BLOCK_EVENTS
    buffer_kib_per_cpu: int = BUFFER_KIB_PER_CPU
    #: Also record ``sched:sched_process_fork`` (the run's process tree, for attribution).
    forks: bool = True
    tracing_forks: bool = field(default=False, init=False)
    path: Path | None = field(default=None, init=False)
    mount_point: Path | None = field(default=None, init=False)
    own_mount: bool = field(default=False, init=False)

    def _setup(self) -> None:
        if os.geteuid() != 0:
            raise TracefsError("tracefs block tracepoints need root")
        if (HOST_TRACEFS / "instances").is_dir():
            self.mount_point = HOST_TRACEFS
        else:
            self.mount_point = Path(tempfile.mkdtemp(prefix=f"{MOUNT_PREFIX}{os.getpid()}-{start_ticks(os.getpid())}-"))
            self.own_mount = True
            proc = subprocess.run(["mount", "-t", "tracefs", "nodev", str(self.mount_point)],
                                  capture_output=True, text=True, start_new_session=True)
            if proc.returncode != 0:
                raise TracefsError(f"cannot mount tracefs: {proc.stderr.strip()}")
        for event in self.events:
            if not (self.mount_point / "events" / "block" / event).is_dir():
                raise TracefsError(f"this kernel has no block:{event} tracepoint")
        self.path = self.mount_point / "instances" / owned_name(PREFIX)
        try:
            self.path.mkdir()
        except OSError as err:
            self.path = None
            raise TracefsError(f"cannot create a tracefs instance: {err.strerror}") from None
        _write(self.path / "tracing_on", "0")
        _write(self.path / "trace_clock", TRACE_CLOCK)
        _write(self.path / "buffer_size_kb", str(self.buffer_kib_per_cpu))
        condition = " || ".join(f"dev == {kernel_dev_t(ma, mi)}" for ma, mi in self.devices)
        optional = [e for e in OPTIONAL_BLOCK_EVENTS if (self.mount_point / "events" / "block" / e).is_dir()]
        for event in (*self.events, *optional):
            event_dir = self.path / "events" / "block" / event
            _write(event_dir / "filter", condition or "0")
            _write(event_dir / "enable", "1")
        # Every fork on the host (few beside the block requests): which task is the run's.
        fork_dir = self.path / "events" / "sched" / FORK_EVENT
        if self.forks and fork_dir.is_dir():
            _write(fork_dir / "enable", "1")
            self.tracing_forks = True

    def start(self) -> None:
        assert self.path is not None
        _write(self.path / "tracing_on", "1")

    def stop(self) -> None:
        """Stop recording; what is buffered can still be read."""
        if self.path is not None:
            _write(self.path / "tracing_on", "0")

    @property
    def pipe(self) -> Path:
        assert self.path is not None
        return self.path / "trace_pipe"

    def lost_events(self) -> dict[str, int]:
        """Events the ring buffer lost: ``overrun`` (overwritten before being read) and
        ``dropped`` (refused when full), summed over CPUs."""
        assert self.path is not None
        totals = {"overrun": 0, "commit_overrun": 0, "dropped": 0}
        keys = {"overrun": "overrun", "commit overrun": "commit_overrun", "dropped events": "dropped"}
        for stats in sorted((self.path / "per_cpu").glob("cpu*/stats")):
            for line in stats.read_text().splitlines():
                key, _, value = line.partition(":")
                if key.strip() in keys:
                    totals[keys[key.strip()]] += int(value.strip())
        return totals

    def close(self) -> None:
        if self.path is not None:
            _remove_instance(self.path)
            self.path = None
        if self.own_mount and self.mount_point is not None:
            _unmount(self.mount_point)
            self.own_mount = False


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
