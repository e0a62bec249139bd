"""A tool's code held resident for as long as its study lasts (docs/study.md, "Code is not data",
amended 2026-11-29; Lee, Min and Yoon 2015, §5.1: the paper's RAM held a program's code once, for
hours of runs).

A warm-up reads the tool's code whole into its own cgroup (:mod:`biossd.host.codefiles`), so that
no capped run is charged for it. A host that pages out memory it finds idle (DAMON's ``pageout``,
``host.proactive_reclaim`` in every run) takes those pages back within seconds whatever cgroup
holds them (``benchmarks/code-eviction-2026-11-29.json``), and the tool's next capped run reads
them again from the host's disk. So the warm-up hands its files to a *holder*: a process outside
every run's cgroup that maps each file shared and read-only and locks it (``mlock``): the pages
stay where they were charged, and neither a cap nor the host's reclaim can take them.

A holder lives exactly as long as its owner (the Nextflow session, or ``biossd study size``): it
waits on the owner's pidfd and exits when the owner does, even by SIGKILL; its state file (this
module's ``STATE_DIR``) names it, its owner and what it holds. A newer warm-up of the same tool for
the same owner replaces it. Without an owner that outlives the run nothing is held (a process
nobody ends would pin memory for ever), nor in a SLURM job (its processes end with the job), nor
beyond :data:`MAX_HELD_SHARE` of the host's memory; each run's record says why.
"""

from __future__ import annotations

import argparse
import contextlib
import ctypes
import json
import mmap
import os
import select
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

from biossd.core import signals
from biossd.core.files import atomic_write_text
from biossd.core.owners import RUN_TAG_VAR, ProcessRef
from biossd.core.runtime import RUN_ROOT

STATE_DIR = RUN_ROOT / "code-holders"
#: At most this share of the host's memory (``MemTotal``) is held for code, all holders together
#: (a file two holders lock counted once): a tool whose code would go beyond it is not held (its
#: record says so).
MAX_HELD_SHARE = 0.25
#: How long a new holder may take to map and lock its files before it is given up.
READY_TIMEOUT_S = 120.0
#: How long a holder whose owner has ended may take to exit on its own before it is a leftover.
EXIT_GRACE_S = 2.0
#: How often a holder tries to write its state file while other holders remove the empty directory.
STATE_WRITE_TRIES = 3
#: The environment variable of a process inside a SLURM job (which SLURM ends with the job).
SLURM_JOB_VAR = "SLURM_JOB_ID"


def _mem_total_bytes() -> int:
    for line in Path("/proc/meminfo").read_text().splitlines():
        if line.startswith("MemTotal:"):
            return int(line.split()[1]) << 10
    raise OSError("/proc/meminfo has no MemTotal")


def _state_name(ref: ProcessRef) -> str:
    return f"{ref.pid}-{ref.start_ticks}.json"


def holders() -> list[dict[str, Any]]:
    """Every holder's state record (``path`` added), live or not."""
    found = []
    for path in sorted(STATE_DIR.glob("*.json")) if STATE_DIR.is_dir() else []:
        try:
            record = json.loads(path.read_text())
        except (OSError, ValueError):
            record = {}
        found.append({**record, "path": str(path)})
    return found


def _alive(record: dict[str, Any], key: str) -> bool:
    ref = ProcessRef.from_record(record.get(key))
    return bool(ref and ref.alive())


def live() -> list[dict[str, Any]]:
    """The holders that hold code for an owner that still runs."""
    return [r for r in holders() if _alive(r, "holder") and _alive(r, "owner")]


def leftovers() -> list[dict[str, Any]]:
    """State records whose holder is gone, and holders still running :data:`EXIT_GRACE_S` after
    their owner ended (a holder exits with its owner on its own: one that did not is a leftover)."""
    found = [r for r in holders() if not (_alive(r, "holder") and _alive(r, "owner"))]
    if any(_alive(r, "holder") for r in found):
        time.sleep(EXIT_GRACE_S)
        found = [r for r in holders() if not (_alive(r, "holder") and _alive(r, "owner"))]
    return found


def remove_leftover(record: dict[str, Any]) -> None:
    """End a leftover holder (SIGKILL, after checking it is still that process) and remove its
    state file."""
    ref = ProcessRef.from_record(record.get("holder"))
    if ref is not None and ref.alive():
        with contextlib.suppress(ProcessLookupError):
            os.kill(ref.pid, signal.SIGKILL)
    _remove_state(Path(record["path"]))


def _replaced(record: dict[str, Any], owner: ProcessRef, key: str | None) -> bool:
    """Whether a holder's ``record`` is the one a new holder of ``key`` for ``owner`` replaces."""
    named = record.get("owner") or {}
    return record.get("key") == key and (named.get("pid"), named.get("start_ticks")) == (owner.pid, owner.start_ticks)


def _held_inodes(owner: ProcessRef, key: str | None) -> dict[tuple[int, int], int]:
    """Each file the live holders lock (``(st_dev, st_ino)`` to its size), but the one a new holder
    of ``key`` for ``owner`` replaces: a file two holders lock is one file's pages."""
    held: dict[tuple[int, int], int] = {}
    for record in live():
        if _replaced(record, owner, key):
            continue
        named = record.get("inodes")
        if named is None:  # a record without its files: counted whole, as nobody else's
            held[(-1, len(held))] = int(record.get("bytes", 0))
            continue
        held.update({(int(dev), int(ino)): int(size) for dev, ino, size in named})
    return held


def _refusal(owner: ProcessRef | None, key: str | None, inodes: dict[tuple[int, int], int],
             environ: dict[str, str]) -> str | None:
    if owner is None:
        return "no owner outlives the run (a Nextflow session or `biossd study size` hands one in $BIOSSD_OWNER)"
    if environ.get(SLURM_JOB_VAR):
        return "in a SLURM job, whose processes end with the job"
    if os.geteuid() != 0:
        return "locking files in memory needs root"
    budget = int(MAX_HELD_SHARE * _mem_total_bytes())
    held = _held_inodes(owner, key)
    others = sum(held.values())
    more = sum(size for identity, size in inodes.items() if identity not in held)
    if others + more > budget:
        return (f"{more >> 20} MiB beside {others >> 20} MiB already held would pass "
                f"{MAX_HELD_SHARE:g} of the host's memory ({budget >> 20} MiB)")
    return None


def hold(files: list[tuple[int, str, int]], owner: ProcessRef | None, key: str | None,
         environ: dict[str, str] | None = None) -> dict[str, Any]:
    """Hand ``files`` (``(descriptor, path, size)``, opened by the caller) to a new holder owned by
    ``owner``; the record: held or not and why, bytes and files held, the holder. A holder of the
    same ``key`` (the tool) for the same owner is replaced once the new one holds."""
    environ = dict(os.environ if environ is None else environ)
    stats = [(fd, path, size, os.fstat(fd)) for fd, path, size in files]
    linked = [(fd, path, size) for fd, path, size, st in stats if st.st_nlink > 0]
    inodes = {(st.st_dev, st.st_ino): size for _fd, _path, size, st in stats if st.st_nlink > 0}
    record: dict[str, Any] = {"held": False, "files": 0, "bytes": 0, "key": key,
                              "files_deleted": len(files) - len(linked)}
    why = ("the warm-up showed no file of code" if not files else _refusal(owner, key, inodes, environ)
           or (None if linked else "no file of it still exists"))
    if why is not None:
        return {**record, "why": why}
    assert owner is not None
    try:
        owner_fd = os.pidfd_open(owner.pid)
    except OSError as err:
        return {**record, "why": f"the owner's pidfd: {err.strerror}"}
    try:
        if not owner.alive():  # the pidfd is of a process that reused the owner's pid
            return {**record, "why": f"the owner {owner.describe()} has ended"}
        return {**record, **_start(linked, inodes, owner, owner_fd, key, environ)}
    finally:
        os.close(owner_fd)


def _start(files: list[tuple[int, str, int]], inodes: dict[tuple[int, int], int], owner: ProcessRef,
           owner_fd: int, key: str | None, environ: dict[str, str]) -> dict[str, Any]:
    fds = [fd for fd, _path, _size in files]
    environ.pop(RUN_TAG_VAR, None)  # never taken for a process of the run that started it
    about = json.dumps({"owner": owner.record(), "key": key, "paths": [p for _fd, p, _s in files],
                        "inodes": [[dev, ino, size] for (dev, ino), size in inodes.items()]})
    proc = subprocess.Popen([sys.executable, "-m", "biossd.host.codeholder", "--owner-fd", str(owner_fd),
                             *(str(fd) for fd in fds)], pass_fds=[owner_fd, *fds], env=environ,
                            stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL,
                            start_new_session=True, text=True)
    assert proc.stdin is not None and proc.stdout is not None
    proc.stdin.write(about + "\n")
    proc.stdin.close()
    ready, _, _ = select.select([proc.stdout], [], [], READY_TIMEOUT_S)
    line = proc.stdout.readline().strip() if ready else ""
    proc.stdout.close()
    if not line.startswith("{"):
        proc.kill()
        proc.wait()
        return {"why": f"the holder did not hold: {line or f'no answer within {READY_TIMEOUT_S:g} s'}"}
    said = json.loads(line)
    if said.get("why"):
        proc.wait()
        return {"why": said["why"]}
    mine = ProcessRef.of(proc.pid, "biossd code holder")
    for old in live():  # replaced: the new holder's pages are the same file pages, already locked
        if _replaced(old, owner, key) and (old.get("holder") or {}).get("pid") != mine.pid:
            remove_leftover(old)
    return {"held": True, "why": None, "files": said["files"], "bytes": said["bytes"], "holder": mine.record(),
            "owner": owner.describe(), "seconds": said["seconds"]}


def lock_files(fds: list[int]) -> tuple[int, int]:
    """Map each file shared and read-only and lock the mapping (the file's own page-cache pages);
    the files and bytes locked; each descriptor closed (the mapping keeps its file). Raises
    :class:`OSError` naming what failed."""
    libc = ctypes.CDLL(None, use_errno=True)
    libc.mmap.restype = ctypes.c_void_p
    libc.mmap.argtypes = (ctypes.c_void_p, ctypes.c_size_t, ctypes.c_int, ctypes.c_int, ctypes.c_int, ctypes.c_long)
    libc.mlock.argtypes = (ctypes.c_void_p, ctypes.c_size_t)
    locked = 0
    for fd in fds:
        size = os.fstat(fd).st_size
        address = libc.mmap(None, size, mmap.PROT_READ, mmap.MAP_SHARED, fd, 0)
        if address in (None, ctypes.c_void_p(-1).value) or libc.mlock(address, size) != 0:
            raise OSError(ctypes.get_errno(), f"{os.readlink(f'/proc/self/fd/{fd}')}: "
                                              f"{os.strerror(ctypes.get_errno())}")
        os.close(fd)  # the mapping keeps the file
        locked += size
    return len(fds), locked


def _write_state(state: Path, record: dict[str, Any]) -> None:
    """The holder's state file, in :data:`STATE_DIR` made for it (a holder that exits removes the
    directory once it is empty: one that did so meanwhile makes this try again)."""
    for _ in range(STATE_WRITE_TRIES - 1):
        STATE_DIR.mkdir(parents=True, exist_ok=True)
        with contextlib.suppress(FileNotFoundError):
            atomic_write_text(state, json.dumps(record))
            return
    STATE_DIR.mkdir(parents=True, exist_ok=True)
    atomic_write_text(state, json.dumps(record))


def _remove_state(state: Path) -> None:
    """A holder's state file removed, and :data:`STATE_DIR` with it once no holder is left."""
    state.unlink(missing_ok=True)
    with contextlib.suppress(OSError):
        STATE_DIR.rmdir()


def serve(owner_fd: int, fds: list[int]) -> int:
    """The holder: the files locked, its state file written, one JSON line to its starter, then a
    wait until the owner ends (its pidfd readable) or a signal; the state file removed on exit."""
    about = json.loads(sys.stdin.readline())
    me = ProcessRef.current("biossd code holder")
    state = STATE_DIR / _state_name(me)
    started = time.monotonic()
    with signals.signals_raise(lambda signum: SystemExit(0)):
        try:
            try:
                files, locked = lock_files(fds)
            except OSError as err:
                print(json.dumps({"why": str(err.strerror)}), flush=True)
                return 1
            _write_state(state, {**about, "holder": me.record(), "files": files, "bytes": locked})
            print(json.dumps({"files": files, "bytes": locked, "seconds": round(time.monotonic() - started, 3)}),
                  flush=True)
            os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
            poller = select.poll()
            poller.register(owner_fd, select.POLLIN)
            while not poller.poll():
                pass
            return 0
        finally:
            _remove_state(state)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m biossd.host.codeholder",
                                     description="hold files in memory until the owner's pidfd says it ended")
    parser.add_argument("--owner-fd", type=int, required=True)
    parser.add_argument("fds", type=int, nargs="+")
    args = parser.parse_args(argv)
    return serve(args.owner_fd, args.fds)


if __name__ == "__main__":
    sys.exit(main())
