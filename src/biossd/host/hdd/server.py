"""The emulated hard disk's server: a FUSE filesystem with one file, ``disk.img``, whose reads
and writes are answered after the time :class:`biossd.host.models.diskmodel.DiskModel` says the real disk
would take. A loop device over that file is the emulated disk (see :mod:`biossd.host.hdd.emulate`).

Run as ``python -m biossd.host.hdd.server --profile NAME --size BYTES --backing FILE --mount DIR
[--scale D]``. A profile ``cloud:<volume>[@<instance>]`` serves the image as a cloud volume
instead (:class:`CloudFilesystem`, :class:`biossd.host.models.cloudmodel.CloudDevice`): requests side by
side, each held for the volume's latency and its limits.
The data lives in ``--backing`` (a sparse file on the native disk). Service times are applied
only once ``on`` is written to the mount's ``control`` file, so ``mkfs`` runs at native speed
(``off`` turns them off again); reading ``stats`` gives request counts as JSON. The server opens
the file with FUSE ``direct_io``, so no page cache sits between the loop device and the model, and
it runs outside any memory cap, so swap traffic through it cannot deadlock a capped program.

Timing: requests are served one at a time, in the order they were queued (one actuator, one
thread). A request is taken to have arrived
:data:`IDLE_SLACK_MS` before it reached the server (FUSE's path from the loop device, which a
real disk does not have) and starts then or when the previous one finished, whichever is later;
how long the disk sat idle before it is passed to the model (a sequential request's look-ahead
credit, :mod:`biossd.host.models.diskmodel`). The backing file's own read or write is done inside the
modelled time, not after it. A flush of the loop device (the file system's journal commits,
``fsync``, a FUA write) reaches the server as ``fsync`` of the image and costs what destaging
the drive's write-behind data costs. Before these, FUSE's turnaround between two pieces of a loop request
(0.5–5 ms, measured at the server) and the backing file's write after the delay were lost time:
a buffered sequential write's writeback ran at 0.6 of the profile; now the disk's side of it,
and fio's sequential reads and writes with direct I/O, are within 3% (``benchmarks/emulated_hdd.py``).
"""

from __future__ import annotations

import argparse
import errno
import json
import os
import stat
import sys
import threading
import time
from pathlib import Path

from biossd.host.models import CLOUD_PREFIX

#: A cloud volume's server uses libfuse 3, whose asynchronous direct I/O lets the kernel send a
#: queue of requests at once (libfuse 2 sends one file's direct I/O one request at a time); it must
#: be chosen before mfusepy is imported, which loads the library.
if __name__ == "__main__" and any(a.startswith(CLOUD_PREFIX) for a in sys.argv):
    os.environ.setdefault("FUSE_LIBRARY_PATH", "libfuse3.so.3")

import mfusepy as fuse  # noqa: E402 (after the library is chosen, above)

from biossd.host.hdd.emulate import CONTROL_FILE, DISK_FILE, STATS_FILE  # noqa: E402 (as mfusepy)
from biossd.host.models.diskmodel import FLUSH, READ, WRITE, DiskModel, load_profile  # noqa: E402 (as mfusepy)

IDLE_SLACK_MS = 1.0
#: How many requests the kernel may have outstanding at a cloud volume's server (FUSE's
#: ``max_background``, 12 by default, which would cap a queue's overlap at 12 latencies).
CLOUD_MAX_BACKGROUND = 256
#: The request counts in ``stats``, by operation.
COUNTS = {READ: "reads", WRITE: "writes", FLUSH: "flushes"}


class HddFilesystem(fuse.Operations):
    use_ns = True

    def __init__(self, model: DiskModel, backing: Path, size_bytes: int) -> None:
        self.model = model
        self.size_bytes = size_bytes
        self.fd = os.open(backing, os.O_RDWR)
        # No read-ahead on the backing file: reading the native disk's read-ahead window (MiBs)
        # inside one request's modelled time could overrun it.
        os.posix_fadvise(self.fd, 0, 0, os.POSIX_FADV_RANDOM)
        self._actuator = threading.Lock()
        self.enabled = False
        self.busy_until = 0.0
        self.stats = {"reads": 0, "writes": 0, "flushes": 0, "read_bytes": 0, "write_bytes": 0, "modelled_ms": 0.0}
        self.t_start = time.time_ns()

    # -- timing --------------------------------------------------------------------------------
    def _serve(self, op: str, offset: int, nbytes: int, io):
        """Do ``io()`` (the backing file's read or write) and hold the request until the modelled
        disk would have finished it; the backing file's own time is spent inside the modelled
        time, not added to it."""
        with self._actuator:
            self.stats[COUNTS[op]] += 1
            if op != FLUSH:
                self.stats[f"{op}_bytes"] += nbytes
            if not self.enabled:
                return io()
            # The request left its program about IDLE_SLACK_MS before it got here (FUSE's path):
            # the disk is idle, or busy, from then on.
            arrived = time.monotonic() - IDLE_SLACK_MS / 1000.0
            idle_s = max(0.0, arrived - self.busy_until)
            cost_s = self.model.request(op, offset, nbytes, idle_ms=idle_s * 1000.0).ms / 1000.0
            self.stats["modelled_ms"] += cost_s * 1000.0
            self.busy_until = max(self.busy_until, arrived) + cost_s
            result = io()
            delay = self.busy_until - time.monotonic()
            if delay > 0:
                time.sleep(delay)
            return result

    def stats_json(self) -> bytes:
        with self._actuator:
            return (json.dumps({**self.stats, "enabled": self.enabled}) + "\n").encode()

    # -- filesystem ------------------------------------------------------------------------------
    def getattr(self, path: str, fh: int | None = None) -> dict:
        now = self.t_start
        if path == "/":
            return {"st_mode": stat.S_IFDIR | 0o755, "st_nlink": 2, "st_mtime": now, "st_ctime": now, "st_atime": now}
        sizes = {"/" + DISK_FILE: self.size_bytes, "/" + CONTROL_FILE: 0, "/" + STATS_FILE: 0}
        if path in sizes:
            return {"st_mode": stat.S_IFREG | 0o600, "st_nlink": 1, "st_size": sizes[path],
                    "st_mtime": now, "st_ctime": now, "st_atime": now}
        raise fuse.FuseOSError(errno.ENOENT)

    def readdir(self, path: str, fh: int):
        return [".", "..", DISK_FILE, CONTROL_FILE, STATS_FILE]

    def open(self, path: str, fi) -> int:
        if path not in ("/" + DISK_FILE, "/" + CONTROL_FILE, "/" + STATS_FILE):
            raise fuse.FuseOSError(errno.ENOENT)
        fi.direct_io = 1
        fi.fh = 0
        return 0

    def read(self, path: str, size: int, offset: int, fh) -> bytes:
        if path == "/" + STATS_FILE:
            return self.stats_json()[offset : offset + size]
        if path == "/" + CONTROL_FILE:
            return b"on\n" if self.enabled else b"off\n"
        size = max(0, min(size, self.size_bytes - offset))
        return self._serve(READ, offset, size, lambda: os.pread(self.fd, size, offset))

    def write(self, path: str, data: bytes, offset: int, fh) -> int:
        if path == "/" + CONTROL_FILE:
            word = data.decode(errors="replace").strip()
            if word not in ("on", "off"):
                raise fuse.FuseOSError(errno.EINVAL)
            with self._actuator:
                self.enabled = word == "on"
                self.busy_until = 0.0
            return len(data)
        if path != "/" + DISK_FILE:
            raise fuse.FuseOSError(errno.EACCES)
        if offset + len(data) > self.size_bytes:
            raise fuse.FuseOSError(errno.ENOSPC)
        return self._serve(WRITE, offset, len(data), lambda: os.pwrite(self.fd, data, offset))

    def truncate(self, path: str, length: int, fh=None) -> int:
        if path == "/" + DISK_FILE and length != self.size_bytes:
            raise fuse.FuseOSError(errno.EPERM)
        return 0

    def flush(self, path: str, fh) -> int:
        return 0

    def fsync(self, path: str, datasync: int, fh) -> int:
        if path == "/" + DISK_FILE:  # a FLUSH: the drive destages its write-behind data
            self._serve(FLUSH, 0, 0, lambda: None)
        return 0

    def release(self, path: str, fh) -> int:
        return 0

    def statfs(self, path: str) -> dict:
        return {"f_bsize": 4096, "f_frsize": 4096, "f_blocks": self.size_bytes // 4096, "f_bfree": 0,
                "f_bavail": 0, "f_namemax": 255}


class CloudFilesystem(HddFilesystem):
    """The same disk image served as a cloud volume (``--profile cloud:<volume>[@<instance>]``,
    :class:`biossd.host.models.cloudmodel.CloudDevice`): requests are served side by side, one thread
    each (FUSE's multithreaded loop), each held until the model says it is done, so that a queue of
    them overlaps its latencies as a network volume's does until a limit binds."""

    def __init__(self, device, backing: Path, size_bytes: int) -> None:
        super().__init__(None, backing, size_bytes)
        self.device = device

    def init_with_config(self, conn_info, config_3) -> None:
        """Let the kernel keep CLOUD_MAX_BACKGROUND requests outstanding here (FUSE's default 12
        would cap a queue's overlapping latencies at 12)."""
        conn = conn_info.contents if hasattr(conn_info, "contents") else conn_info
        if conn is not None:
            conn.max_background = CLOUD_MAX_BACKGROUND
            conn.congestion_threshold = CLOUD_MAX_BACKGROUND * 3 // 4  # the kernel's 9 of 12

    def _serve(self, op: str, offset: int, nbytes: int, io):
        with self._actuator:  # the counters only: the requests themselves are not serialised
            self.stats[COUNTS[op]] += 1
            if op != FLUSH:
                self.stats[f"{op}_bytes"] += nbytes
            enabled = self.enabled
        if not enabled or op == FLUSH:  # a volume acknowledges a flush with its writes
            return io()
        # No slack for FUSE's path here: that path is the emulator's own cost, which its
        # validation reports (benchmarks/emulated_cloud.py), not part of the volume's latency.
        arrived = time.monotonic()
        done = self.device.finish_at(op == WRITE, offset, nbytes, arrived)
        with self._actuator:
            self.stats["modelled_ms"] += (done - arrived) * 1000.0
        result = io()
        delay = done - time.monotonic()
        if delay > 0:
            time.sleep(delay)
        return result


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(prog="python -m biossd.host.hdd.server", description=__doc__)
    ap.add_argument("--profile", required=True)
    ap.add_argument("--size", type=int, required=True, help="bytes")
    ap.add_argument("--backing", required=True)
    ap.add_argument("--mount", required=True)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--scale", type=float, default=1.0, help="the study's memory divisor D (diskmodel)")
    args = ap.parse_args(argv)
    cloud = args.profile.startswith(CLOUD_PREFIX)
    if cloud:
        from biossd.host.models import cloudmodel

        device = cloudmodel.CloudDevice(cloudmodel.target(args.profile.removeprefix(CLOUD_PREFIX)).scaled(args.scale))
        fs: HddFilesystem = CloudFilesystem(device, Path(args.backing), args.size)
    else:
        fs = HddFilesystem(DiskModel(load_profile(args.profile), seed=args.seed, scale=args.scale), Path(args.backing),
                           args.size)
    # Root-only: no allow_other (only the mounting user, root, may enter the mount), and the
    # kernel checks the files' modes (the image is 0600).
    # One thread: requests are taken in the order the kernel queued them (a loop device with direct
    # I/O sends a request's pieces at once), as one actuator without command queueing serves them,
    # and a flush is served after the writes queued before it.
    # A cloud volume serves its requests side by side instead (CloudFilesystem).
    threads = {"max_threads": CLOUD_MAX_BACKGROUND} if cloud else {}  # libfuse 3's default: 10 threads
    fuse.FUSE(fs, args.mount, foreground=True, raw_fi=True, default_permissions=True,
              fsname="biossd-cloud" if cloud else "biossd-hdd", direct_io=True, nothreads=not cloud, **threads)


if __name__ == "__main__":
    main()
