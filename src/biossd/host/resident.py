"""A run's resident memory over its run (Lee, Min and Yoon 2015, §5.1: the paper's RAM held every
process of a program): the peak of its cgroup's anonymous, mapped-file and shared pages
(:meth:`biossd.host.cgroups.MemoryCap.resident_parts`), read every :data:`RESIDENT_INTERVAL_S`,
with its parts at the peak and, every :data:`PROCESS_EVERY` reads, each of its programs' resident
sets — the sizing rule's floor F is its peak on an uncapped run (:mod:`biossd.study.sizing.rule`)."""

from __future__ import annotations

import threading
from pathlib import Path

from biossd.host.cgroups import RESIDENT_KEYS, MemoryCap
from biossd.host.codefiles import CodeFiles, mapped_files

#: How often the resident memory is read: a peak shorter than this may be missed.
RESIDENT_INTERVAL_S = 0.002
#: Every this many reads of the cgroup, its processes are read too (``/proc/PID/status``: their
#: anonymous, file-backed and shared resident sets, by process name): about every 50 ms.
PROCESS_EVERY = 25
#: A warm-up's processes' files of code (:mod:`biossd.host.codefiles`) are looked for every this
#: many reads (about every 10 ms): a warm-up on a small input may end within 50 ms.
CODE_EVERY = 5
#: ``/proc/PID/status`` fields of a process's resident set, in kB, by part.
PROCESS_STATUS_PARTS = {"RssAnon": "anon_bytes", "RssFile": "file_bytes", "RssShmem": "shmem_bytes"}


def process_parts(pid: int) -> tuple[str, dict[str, int]] | None:
    """A process's name and resident set by part (:data:`PROCESS_STATUS_PARTS`, bytes), from
    ``/proc/PID/status``; ``None`` once it is gone (or a kernel thread)."""
    try:
        lines = Path(f"/proc/{pid}/status").read_text().splitlines()
    except OSError:
        return None
    name, parts = "", {}
    for line in lines:
        key, _, value = line.partition(":")
        if key == "Name":
            name = value.strip()
        elif key in PROCESS_STATUS_PARTS:
            parts[PROCESS_STATUS_PARTS[key]] = int(value.split()[0]) * 1024
    return (name, parts) if parts else None


class ResidentWatch:
    """The peak of a cgroup's resident memory (:meth:`MemoryCap.resident_bytes`) over a run, read
    every ``interval_s`` on a thread from :meth:`start` to :meth:`stop`, with its parts at the peak
    (anonymous, file-mapped, shared) and, every :data:`PROCESS_EVERY` reads, its processes': per
    process name, the largest sum over that name's processes of each part of their resident sets
    (what each program of the run — a wrapper, an MPI daemon, the tool — held)."""

    def __init__(self, cap: MemoryCap, interval_s: float = RESIDENT_INTERVAL_S, names_under: Path | None = None,
                 code: CodeFiles | None = None) -> None:
        self.cap, self.interval_s = cap, interval_s
        #: Where the files of the code its processes map or read are noted (a warm-up asked to
        #: read its code whole: :mod:`biossd.host.codefiles`), or ``None``.
        self.code = code
        self.peak_bytes: int | None = None
        self.peak_parts: dict[str, int] | None = None
        self.by_process: dict[str, dict[str, int]] = {}
        #: The files under ``names_under`` (the run's working directory) its processes mapped, by
        #: inode: the names of files a run may remove before it ends (an MPI launcher's segments).
        self.names_under = Path(names_under) if names_under is not None else None
        self._mapped: dict[int, str] = {}
        self._lock = threading.Lock()
        self.samples = 0
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None

    def mapped_names(self) -> dict[int, str]:
        """The files under ``names_under`` the run's processes were seen to map: inode -> path
        relative to it."""
        with self._lock:
            return dict(self._mapped)

    def _read(self) -> None:
        parts = self.cap.resident_parts()
        if parts is not None:
            value = sum(parts.values())
            if self.peak_bytes is None or value > self.peak_bytes:
                self.peak_bytes, self.peak_parts = value, parts
            if self.samples % PROCESS_EVERY == 0:
                self._read_processes()
            elif self.code is not None and self.samples % CODE_EVERY == 0:
                for pid in self.cap.processes():
                    self.code.see(pid)
            self.samples += 1

    def _read_processes(self) -> None:
        summed: dict[str, dict[str, int]] = {}
        for pid in self.cap.processes():
            found = process_parts(pid)
            if found is None:
                continue
            if self.names_under is not None:
                self._read_maps(pid)
            if self.code is not None:
                self.code.see(pid)
            name, parts = found
            into = summed.setdefault(name, {})
            for part, value in parts.items():
                into[part] = into.get(part, 0) + value
        for name, parts in summed.items():
            best = self.by_process.setdefault(name, {})
            for part, value in parts.items():
                best[part] = max(best.get(part, 0), value)

    def _read_maps(self, pid: int) -> None:
        prefix = str(self.names_under).rstrip("/") + "/"
        found = {inode: path[len(prefix):].removesuffix(" (deleted)")
                 for _span, inode, path in mapped_files(pid) if path.startswith(prefix)}
        if found:
            with self._lock:
                self._mapped.update(found)

    def _loop(self) -> None:
        while not self._stop.wait(self.interval_s):
            self._read()

    def start(self) -> "ResidentWatch":
        if self.cap.path is not None:
            self._read()
            self._thread = threading.Thread(target=self._loop, name="biossd-resident", daemon=True)
            self._thread.start()
        return self

    def stop(self) -> dict[str, object]:
        """The record: the peak (bytes; ``None`` without a cgroup), how it was read, and why not."""
        if self._thread is not None:
            self._stop.set()
            self._thread.join()
            self._read()
            self._thread = None
        if self.cap.path is None or self.cap.hierarchy is None:
            return {"peak_bytes": None, "why": "no cgroup of the run's own (not root, or no memory controller)"}
        return {"peak_bytes": self.peak_bytes, "samples": self.samples, "interval_s": self.interval_s,
                "fields": list(RESIDENT_KEYS[self.cap.hierarchy]), "peak_parts": self.peak_parts,
                "by_process": {name: self.by_process[name] for name in sorted(self.by_process)},
                "by_process_every_s": round(self.interval_s * PROCESS_EVERY, 4),
                "cgroup": str(self.cap.path), "why": None}
