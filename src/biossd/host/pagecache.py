"""The page cache before a run: what a run reads from its class's device is evicted, and nothing
else (docs/study.md, "Code is not data"; Lee, Min and Yoon 2015, §5.1).

A tool's code — executables, libraries, the JDK, jars, scripts, a container's image — lives on the
host's own disk. The kernel charges a page of the page cache to the memory cgroup that first reads
it, and a capped cgroup reclaims only the pages charged to it: code read by an earlier run (a
tool's warm-up) is charged there and can be neither charged to nor evicted by a later run's cap.
Dropping the whole page cache before every run (``drop_caches``) would make each run read its code
again, into its own cap, where the kernel may evict code instead of paging data — at a cost that
does not scale with the study's memory divisor and is paid on whichever disk holds the code.

So the policy ``run`` (:func:`evict_run`) evicts exactly what the run reads from the device
under study: every regular file under the run's working directory and under its class's own file
system (biossd's loop device: the shared input copies live there), written back and dropped with
``POSIX_FADV_DONTNEED``; and the buffer cache (file-system metadata) of the class's block devices
(``BLKFLSBUF``). The policy ``all`` is the kernel's whole drop (:func:`drop_all`), for a command
that is not a catalogue tool (``biossd profile``, a pipeline's task). Either way the record says
what was done and how much of the evicted files stayed resident (:func:`resident_bytes`, by
``mincore``).
"""

from __future__ import annotations

import contextlib
import ctypes
import ctypes.util
import errno
import fcntl
import mmap
import os
from pathlib import Path
from typing import Any, Iterable, Iterator

DROP_CACHES = Path("/proc/sys/vm/drop_caches")
#: ``drop_caches``: free the page cache, dentries and inodes.
_DROP_ALL = "3"
#: ``ioctl(BLKFLSBUF)`` (linux/fs.h: ``_IO(0x12, 97)``): write back and drop a block device's buffers.
BLKFLSBUF = 0x1261
#: What the run's pages may be (``--evict``): its class's files (``run``), the whole page cache
#: (``all``), or nothing (``none``).
POLICIES = ("run", "all", "none")
PAGE_BYTES = mmap.PAGESIZE

_libc = ctypes.CDLL(ctypes.util.find_library("c") or "libc.so.6", use_errno=True)
_libc.mincore.argtypes = [ctypes.c_void_p, ctypes.c_size_t, ctypes.POINTER(ctypes.c_ubyte)]
_libc.mmap.restype = ctypes.c_void_p
_libc.mmap.argtypes = [ctypes.c_void_p, ctypes.c_size_t, ctypes.c_int, ctypes.c_int, ctypes.c_int, ctypes.c_long]
_libc.munmap.argtypes = [ctypes.c_void_p, ctypes.c_size_t]
_MAP_FAILED = ctypes.c_void_p(-1).value


def drop_all() -> dict[str, Any]:
    """``sync`` and drop the whole page cache, dentries and inodes (the policy ``all``)."""
    os.sync()
    try:
        DROP_CACHES.write_text(_DROP_ALL)
    except OSError as err:
        return {"dropped": False, "policy": "all", "why": f"cannot write {DROP_CACHES}: {err.strerror} (needs root)"}
    return {"dropped": True, "policy": "all", "why": None}


def files_under(roots: Iterable[Path]) -> Iterator[Path]:
    """Every regular file under ``roots`` (symbolic links to files followed, to directories not),
    each once."""
    seen: set[tuple[int, int]] = set()
    for root in roots:
        for dirpath, _dirs, names in os.walk(root):
            for name in names:
                path = Path(dirpath) / name
                try:
                    st = path.stat()
                except OSError:
                    continue
                if not (st.st_mode & 0o170000 == 0o100000) or (st.st_dev, st.st_ino) in seen:
                    continue
                seen.add((st.st_dev, st.st_ino))
                yield path


def evict_file(path: Path) -> int:
    """Write back ``path``'s dirty pages and drop its cached ones; its size in bytes (0 when it
    cannot be opened: it went away)."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NOATIME)
    except PermissionError:
        fd = os.open(path, os.O_RDONLY)
    except OSError:
        return 0
    try:
        size = os.fstat(fd).st_size
        with contextlib.suppress(OSError):
            os.fdatasync(fd)
        os.posix_fadvise(fd, 0, 0, os.POSIX_FADV_DONTNEED)
        return size
    finally:
        os.close(fd)


def resident_bytes(path: Path) -> int:
    """The bytes of ``path`` in the page cache now (``mincore`` over a mapping of it)."""
    try:
        fd = os.open(path, os.O_RDONLY)
    except OSError:
        return 0
    try:
        size = os.fstat(fd).st_size
        if size == 0:
            return 0
        addr = _libc.mmap(None, size, mmap.PROT_READ, mmap.MAP_SHARED, fd, 0)
        if addr in (None, _MAP_FAILED):
            return 0
        try:
            pages = (size + PAGE_BYTES - 1) // PAGE_BYTES
            vec = (ctypes.c_ubyte * pages)()
            if _libc.mincore(addr, size, vec) != 0:
                return 0
            return sum(1 for b in vec if b & 1) * PAGE_BYTES
        finally:
            _libc.munmap(addr, size)
    finally:
        os.close(fd)


def flush_buffers(device: str) -> str | None:
    """``BLKFLSBUF`` on ``/dev/<device>``: its buffer cache written back and dropped; ``None``, or
    why not."""
    try:
        fd = os.open(f"/dev/{device}", os.O_RDONLY | os.O_NONBLOCK)
    except OSError as err:
        return f"/dev/{device}: {err.strerror}"
    try:
        fcntl.ioctl(fd, BLKFLSBUF)
    except OSError as err:
        return f"BLKFLSBUF /dev/{device}: {errno.errorcode.get(err.errno, err.errno)}"
    finally:
        os.close(fd)
    return None


def evict_run(roots: Iterable[Path], devices: Iterable[str]) -> dict[str, Any]:
    """The policy ``run``: every file under ``roots`` (the run's working directory and its class's
    own file system) written back and dropped, then the buffer cache of ``devices`` (the class's
    block devices, its swap's included); the record: how many files and bytes, how many bytes of
    them stayed resident, the devices flushed and any that could not be."""
    roots = [Path(r) for r in dict.fromkeys(str(r) for r in roots)]
    files, total, resident = 0, 0, 0
    os.sync()
    evicted = []
    for path in files_under(roots):
        total += evict_file(path)
        files += 1
        evicted.append(path)
    problems = [p for p in (flush_buffers(d) for d in dict.fromkeys(devices)) if p]
    for path in evicted:
        resident += resident_bytes(path)
    return {"dropped": True, "policy": "run", "roots": [str(r) for r in roots], "files": files, "bytes": total,
            "resident_after_bytes": resident, "devices_flushed": list(dict.fromkeys(devices)),
            "problems": problems, "why": None,
            "kept": "the rest of the page cache, dentries and inodes: code read by earlier runs stays resident, "
                    "charged to the cgroup that read it"}
