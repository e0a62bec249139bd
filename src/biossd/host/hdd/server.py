"""The emulated hard disk's server: a FUSE filesystem with one file, ``disk.img``, whose reads
and writes are answered after the time :class:`biossd.host.hdd.diskmodel.DiskModel` says the real disk
would take. A loop device over that file is the emulated disk (see :mod:`biossd.host.hdd.emulate`).

Run as ``python -m biossd.host.hdd.server --profile NAME --size BYTES --backing FILE --mount DIR
[--scale D]``.
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
credit, :mod:`biossd.host.hdd.diskmodel`). The backing file's own read or write is done inside the
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
import threading
import time
from pathlib import Path

import mfusepy as fuse

from biossd.host.hdd.diskmodel import FLUSH, READ, WRITE, DiskModel, load_profile
from biossd.host.hdd.emulate import CONTROL_FILE, DISK_FILE, STATS_FILE

IDLE_SLACK_MS = 1.0
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


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(prog="python -m biossd.host.hdd.server", description=__doc__)
    ap.add_argument("--profile", required=True)
    ap.add_argument("--size", type=int, required=True, help="bytes")
    ap.add_argument("--backing", required=True)
    ap.add_argument("--mount", required=True)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--scale", type=float, default=1.0, help="the study's memory divisor D (diskmodel)")
    args = ap.parse_args(argv)
    model = DiskModel(load_profile(args.profile), seed=args.seed, scale=args.scale)
    fs = HddFilesystem(model, Path(args.backing), args.size)
    # Root-only: no allow_other (only the mounting user, root, may enter the mount), and the
    # kernel checks the files' modes (the image is 0600).
    # One thread: requests are taken in the order the kernel queued them (a loop device with direct
    # I/O sends a request's pieces at once), as one actuator without command queueing serves them,
    # and a flush is served after the writes queued before it.
    fuse.FUSE(fs, args.mount, foreground=True, raw_fi=True, default_permissions=True, fsname="biossd-hdd",
              direct_io=True, nothreads=True)


if __name__ == "__main__":
    main()
