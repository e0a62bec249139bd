"""A tool's code read whole into its warm-up's cgroup (docs/study.md, "Code is not data", amended
2026-11-28; Lee, Min and Yoon 2015, §5.1: the paper's RAM held a program's code once, for hours).

A warm-up on 1/64 of a tool's input touches only the code that small an input needs; a run on the
full input needs more (a JVM loads more classes from its jars, the JDK more of ``lib/modules``), and
the first capped run to read a page of it is charged for it and reclaims it again under its cap.
So a warm-up asked to (``--read-code``) notes every regular file its processes map or hold open
for reading outside its class's own file systems (:class:`CodeFiles`, fed by the resident
memory's reader), each held open once, and when the command has ended reads each whole from a
process in the warm-up's own cgroup (:meth:`CodeFiles.read_into`): every page of the tool's code is
then charged there, before any capped run of it.

Files are held open, not named: a container's processes name files inside their own mount
namespace, which is gone when they are; ``/proc/PID/map_files`` and ``/proc/PID/fd`` open the files
themselves (root only).
"""

from __future__ import annotations

import os
import resource
import stat
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Any, Callable, Iterable

#: At most this share of the process's open-file limit is held open for the pre-read (the rest
#: of the files are counted as not read).
OPEN_LIMIT_SHARE = 0.5
#: The files read whole that the record names, the largest first.
NAMED_FILES = 10
#: What a process of the run reads from (never code): the kernel's own file systems.
KERNEL_TREES = ("/proc/", "/sys/", "/dev/")
#: ``O_ACCMODE`` of a descriptor's ``flags`` in ``/proc/PID/fdinfo/N`` (octal): opened read-only.
_ACCESS_MODE, _READ_ONLY = 0o3, 0o0
#: The reader, started in the cgroup: it waits for a line on stdin (it is moved into the cgroup
#: first), then reads each descriptor it was given from its start to its end and prints the bytes.
_READER = ("import os,sys\nsys.stdin.readline()\nn=0\nfor fd in map(int,sys.argv[1:]):\n off=0\n while True:\n"
           "  b=os.pread(fd,1<<20,off)\n  if not b: break\n  off+=len(b)\n n+=off\nprint(n)\n")


def mapped_files(pid: int) -> Iterable[tuple[str, int, str]]:
    """``(address range, inode, path)`` of each file a process maps (``/proc/PID/maps``); none
    once it is gone."""
    try:
        lines = Path(f"/proc/{pid}/maps").read_text().splitlines()
    except OSError:
        return
    for line in lines:
        fields = line.split(None, 5)
        if len(fields) == 6 and fields[4] != "0":
            yield fields[0], int(fields[4]), fields[5]


def _read_only_fds(pid: int, seen: Callable[[str], bool]) -> Iterable[tuple[str, str]]:
    """``(fd, path)`` of each descriptor a process holds open for reading only, but those whose
    path ``seen`` already (their flags are not read again)."""
    try:
        fds = os.listdir(f"/proc/{pid}/fd")
    except OSError:
        return
    for fd in fds:
        try:
            path = os.readlink(f"/proc/{pid}/fd/{fd}")
            if not path.startswith("/") or seen(path):
                continue
            flags = next(line for line in Path(f"/proc/{pid}/fdinfo/{fd}").read_text().splitlines()
                         if line.startswith("flags:"))
        except (OSError, StopIteration):
            continue
        if int(flags.split()[1], 8) & _ACCESS_MODE == _READ_ONLY:
            yield fd, path


class CodeFiles:
    """The regular files the processes of a run map or hold open for reading, outside the devices
    ``excluded_devices`` (``st_dev`` of the class's own file systems, whose files are its data):
    each opened once and held (:meth:`see`) until :meth:`read_into` reads them or :meth:`close`."""

    def __init__(self, excluded_devices: Iterable[int]) -> None:
        self.excluded = set(excluded_devices)
        soft, _hard = resource.getrlimit(resource.RLIMIT_NOFILE)
        self.max_open = int(soft * OPEN_LIMIT_SHARE) if soft != resource.RLIM_INFINITY else None
        #: (st_dev, st_ino) -> (descriptor, path as the process named it, size).
        self.held: dict[tuple[int, int], tuple[int, str, int]] = {}
        self.not_held = 0
        self._seen: set[tuple[int, str]] = set()
        self._lock = threading.Lock()

    def see(self, pid: int) -> None:
        """Hold every file process ``pid`` maps or reads that is code by this rule, once."""
        def seen(path: str) -> bool:
            return (pid, path) in self._seen

        opened = [(f"/proc/{pid}/map_files/{span}", path) for span, _inode, path in mapped_files(pid)
                  if path.startswith("/")]
        opened += [(f"/proc/{pid}/fd/{fd}", path) for fd, path in _read_only_fds(pid, seen)]
        for link, path in opened:
            key = (pid, path)
            if key in self._seen or path.startswith(KERNEL_TREES):
                continue
            self._seen.add(key)
            self._hold(link, path)

    def _hold(self, link: str, path: str) -> None:
        try:  # O_NONBLOCK: a FIFO with no writer would block the reader's thread on open
            fd = os.open(link, os.O_RDONLY | os.O_CLOEXEC | os.O_NONBLOCK)
        except OSError:
            return
        st = os.fstat(fd)
        with self._lock:
            if (not stat.S_ISREG(st.st_mode) or st.st_size == 0 or st.st_dev in self.excluded
                    or (st.st_dev, st.st_ino) in self.held):
                os.close(fd)
                return
            if self.max_open is not None and len(self.held) >= self.max_open:
                os.close(fd)
                self.not_held += 1
                return
            self.held[(st.st_dev, st.st_ino)] = (fd, path, st.st_size)

    def read_into(self, join: Callable[[int], None],
                  hold: Callable[[list[tuple[int, str, int]]], dict[str, Any]] | None = None) -> dict[str, Any]:
        """Read every held file whole from a process that ``join(pid)`` moves into the warm-up's
        cgroup before it reads; the record (files, bytes, seconds, the largest files) and the
        descriptors closed. Once read, ``hold`` is given the files (``(descriptor, path, size)``)
        to keep them resident (:func:`biossd.host.codeholder.hold`); its record is ``held``."""
        with self._lock:
            held = list(self.held.values())
        fds = [fd for fd, _path, _size in held]
        started = time.monotonic()
        try:
            if not fds:
                return {**self._record(held, 0, 0.0, None), **({"held": hold(held)} if hold is not None else {})}
            reader = subprocess.Popen([sys.executable, "-I", "-S", "-c", _READER, *map(str, fds)], pass_fds=fds,
                                      stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
            try:
                join(reader.pid)
            except OSError as err:
                reader.kill()
                reader.communicate()
                return self._record(held, 0, 0.0, f"could not move the reader into the run's cgroup: {err.strerror}")
            out, err = reader.communicate("go\n")
            if reader.returncode != 0:
                return self._record(held, 0, 0.0, f"the reader failed ({reader.returncode}): {err.strip()[-300:]}")
            record = self._record(held, int(out), time.monotonic() - started, None)
            return {**record, "held": hold(held)} if hold is not None else record
        finally:
            self.close()

    def _record(self, held: list[tuple[int, str, int]], read_bytes: int, seconds: float, why: str | None) -> dict[str, Any]:
        largest = sorted(held, key=lambda h: -h[2])[:NAMED_FILES]
        return {"asked": True, "files": len(held), "bytes": read_bytes, "seconds": round(seconds, 3),
                "files_not_held": self.not_held, "largest": [{"path": p, "bytes": s} for _fd, p, s in largest],
                "why": why}

    def close(self) -> None:
        with self._lock:
            for fd, _path, _size in self.held.values():
                os.close(fd)
            self.held.clear()


def not_asked() -> dict[str, Any]:
    """The record of a run that read no code whole (not a warm-up)."""
    return {"asked": False}
