"""What a tool does to the files of one directory while it runs, from inotify: when each file was
created, opened, read and closed (``inotify(7)``, through libc; no extra package).

The related experiments (:mod:`biossd.experiments`) time a run's phases with it: samtools sort's
split phase ends with the last temporary file it creates (DNAnexus's samtools rocksort, 2014),
an assembler's read phase lasts from the first open of its input to the last read of it
(Classmethod's Trinity-on-S3 test, 2024). inotify sees every
access made through the kernel's VFS, on a local file system and on a FUSE mount (s3fs) alike;
the events carry no pid, so a watched directory must hold only the run's files.

Times are ``time.monotonic()`` seconds, the clock the profile's ``command_started_s`` and the
block trace use.
"""

from __future__ import annotations

import ctypes
import ctypes.util
import os
import select
import struct
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path

from biossd.core.errors import BiossdError

#: inotify event bits (linux/inotify.h).
IN_ACCESS = 0x001
IN_CLOSE_WRITE = 0x008
IN_CLOSE_NOWRITE = 0x010
IN_OPEN = 0x020
IN_CREATE = 0x100
IN_DELETE = 0x200
IN_Q_OVERFLOW = 0x4000
IN_ISDIR = 0x40000000
WATCHED = IN_ACCESS | IN_CLOSE_WRITE | IN_CLOSE_NOWRITE | IN_OPEN | IN_CREATE | IN_DELETE
_EVENT = struct.Struct("iIII")
_POLL_S = 0.05
_READ_BYTES = 1 << 16


class WatchError(BiossdError, OSError):
    """inotify could not watch the directory; the message names it."""


@dataclass
class FileTimes:
    """First and last time of each kind of event on one file name (``None``: never seen)."""

    created_s: float | None = None
    first_open_s: float | None = None
    last_access_s: float | None = None
    last_close_s: float | None = None
    #: The last close of the file after writing it (IN_CLOSE_WRITE).
    last_close_write_s: float | None = None
    deleted_s: float | None = None


@dataclass
class DirectoryWatch:
    """Watch ``directory`` from :meth:`start` to :meth:`stop`, and each subdirectory created in it
    meanwhile (``sambamba sort`` puts its temporary files in one); a file is named by its path
    relative to ``directory``."""

    directory: Path
    files: dict[str, FileTimes] = field(default_factory=dict)
    #: The most files that existed at once (created and not yet deleted) during the watch.
    peak_files: int = 0
    overflowed: bool = False
    _live: int = 0
    _fd: int = -1
    _dirs: dict[int, str] = field(default_factory=dict)
    _libc: object = None
    _thread: threading.Thread | None = None
    _stop: threading.Event = field(default_factory=threading.Event)

    def start(self) -> "DirectoryWatch":
        self._libc = ctypes.CDLL(ctypes.util.find_library("c"), use_errno=True)
        fd = self._libc.inotify_init1(os.O_NONBLOCK | os.O_CLOEXEC)
        if fd < 0:
            raise WatchError(f"inotify_init1: {os.strerror(ctypes.get_errno())}")
        self._fd = fd
        try:
            self._add("")
        except WatchError:
            os.close(fd)
            self._fd = -1
            raise
        self._live = sum(1 for p in Path(self.directory).iterdir() if p.is_file())
        self._thread = threading.Thread(target=self._loop, name=f"watch {self.directory}", daemon=True)
        self._thread.start()
        return self

    def _add(self, relative: str) -> None:
        path = Path(self.directory, relative)
        wd = self._libc.inotify_add_watch(self._fd, os.fsencode(path), WATCHED)
        if wd < 0:
            raise WatchError(f"cannot watch {path} with inotify: {os.strerror(ctypes.get_errno())}")
        self._dirs[wd] = relative

    def _loop(self) -> None:
        while True:
            stopping = self._stop.is_set()
            ready, _, _ = select.select([self._fd], [], [], 0 if stopping else _POLL_S)
            if ready:
                self._drain(time.monotonic())
            elif stopping:
                return

    def _drain(self, now: float) -> None:
        try:
            data = os.read(self._fd, _READ_BYTES)
        except BlockingIOError:
            return
        offset = 0
        while offset + _EVENT.size <= len(data):
            wd, mask, _cookie, length = _EVENT.unpack_from(data, offset)
            name = data[offset + _EVENT.size: offset + _EVENT.size + length].rstrip(b"\0").decode(errors="replace")
            offset += _EVENT.size + length
            if mask & IN_Q_OVERFLOW:
                self.overflowed = True
            if not name:
                continue
            relative = os.path.join(self._dirs.get(wd, ""), name)
            if mask & IN_ISDIR:
                if mask & IN_CREATE:
                    # A file made in it before the watch is added is missed: none is, in practice,
                    # as a tool creates the directory first and its files after.
                    try:
                        self._add(relative)
                    except WatchError:
                        pass
                continue
            self._note(relative, mask, now)

    def _note(self, name: str, mask: int, now: float) -> None:
        times = self.files.setdefault(name, FileTimes())
        if mask & IN_CREATE:
            times.created_s = times.created_s or now
            self._live += 1
            self.peak_files = max(self.peak_files, self._live)
        if mask & IN_OPEN and times.first_open_s is None:
            times.first_open_s = now
        if mask & IN_ACCESS:
            times.last_access_s = now
        if mask & (IN_CLOSE_WRITE | IN_CLOSE_NOWRITE):
            times.last_close_s = now
        if mask & IN_CLOSE_WRITE:
            times.last_close_write_s = now
        if mask & IN_DELETE:
            times.deleted_s = now
            self._live = max(0, self._live - 1)

    def stop(self) -> "DirectoryWatch":
        self._stop.set()
        if self._thread is not None:
            self._thread.join()
            self._thread = None
        if self._fd >= 0:
            os.close(self._fd)
            self._fd = -1
        return self

    def __enter__(self) -> "DirectoryWatch":
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    def created(self, prefix: str = "") -> list[float]:
        """Creation times of the files whose names start with ``prefix``, in order."""
        return sorted(t.created_s for n, t in self.files.items() if n.startswith(prefix) and t.created_s is not None)

    def last_written(self, prefix: str = "") -> float | None:
        """The last close-after-write of any file whose name starts with ``prefix``."""
        times = [t.last_close_write_s for n, t in self.files.items()
                 if n.startswith(prefix) and t.last_close_write_s is not None]
        return max(times) if times else None

    def read_span(self, names: list[str]) -> tuple[float, float] | None:
        """From the first open of any of ``names`` to the last read of any (its last close if it
        was never read): the span in which the tool read them (``None``: it never opened them)."""
        seen = [self.files[n] for n in names if n in self.files and self.files[n].first_open_s is not None]
        if not seen:
            return None
        ends = [f.last_access_s for f in seen if f.last_access_s is not None]
        ends = ends or [f.last_close_s for f in seen if f.last_close_s is not None]
        start = min(f.first_open_s for f in seen)
        return start, max(ends) if ends else start
