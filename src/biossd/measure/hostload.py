"""How busy the host was outside a run, over its command's window (docs/study.md, "A quiet host,
checked"): a run is timed on a shared machine, and a second program busy beside it slows it on
both classes alike but by chance — Lee, Min and Yoon 2015 (§5.1) ran each profiler apart "to
avoid interference between tools".

The host's busy CPU time (``/proc/stat``: user, nice, system, irq and softirq) over the window,
less what is the run's own or its harness's: the run's processes (their accounting,
:mod:`biossd.measure.accounting`), the profiler and the collectors it started, every emulated
disk's server (part of the device under study) and the kernel's threads (which do the run's I/O:
loop workers, write-back, reclaim). What is left — another program, another task — is the load
outside the run, in cores. A study run over :data:`HOST_LOAD_LIMIT_CORES` is redone once
(:mod:`biossd.measure.toolrun`).

Steal (time the hypervisor ran something else while this machine's CPUs wanted to run) is
recorded beside it, not counted in it (docs/study.md, the amendment to "A quiet host, checked"):
on a virtual machine whose block devices the hypervisor emulates, it follows the run's own I/O —
measured here, 0.18–0.28 cores of steal under a paging samtools sort with nothing else running,
none under a CPU-bound ABySS — so a redo would not remove it.
"""

from __future__ import annotations

import os
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable, Iterable

#: docs/study.md, "A quiet host, checked": a run whose host was busier than this outside it (an
#: eighth of this study's 2-core machine), averaged over its command's window, is redone once.
HOST_LOAD_LIMIT_CORES = 0.25
#: ``/proc/stat``'s busy fields (of ``user nice system idle iowait irq softirq steal``) counted in
#: the host's load; steal is recorded apart.
BUSY_FIELDS = ("user", "nice", "system", "irq", "softirq")
_STAT_FIELDS = ("user", "nice", "system", "idle", "iowait", "irq", "softirq", "steal")
#: A window shorter than this is not judged: ``/proc/stat`` counts in ticks of 10 ms, and a
#: few ticks either way over a shorter one would look like a busy host (docs/study.md).
MIN_WINDOW_S = 0.5
#: ``/proc/PID/stat``'s flags bit of a kernel thread (``PF_KTHREAD``).
PF_KTHREAD = 0x00200000
TICKS_PER_S = os.sysconf("SC_CLK_TCK")


def host_ticks(path: Path = Path("/proc/stat")) -> dict[str, int]:
    """The host's CPU time so far, in ticks, by ``/proc/stat`` field."""
    values = path.read_text().split("\n", 1)[0].split()[1:]
    return {name: int(v) for name, v in zip(_STAT_FIELDS, values)}


def process_stat(pid: int) -> tuple[int, int, bool] | None:
    """A process's parent, its CPU time so far (utime + stime, ticks; its threads', the exited ones
    too) and whether it is a kernel thread; ``None`` once it is gone."""
    try:
        text = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return None
    fields = text[text.rindex(")") + 2:].split()
    # After the name: state ppid pgrp session tty tpgid flags minflt cminflt majflt cmajflt utime stime
    return int(fields[1]), int(fields[11]) + int(fields[12]), bool(int(fields[6]) & PF_KTHREAD)


def _processes() -> dict[int, tuple[int, int, bool]]:
    out = {}
    for entry in os.scandir("/proc"):
        if entry.name.isdigit():
            found = process_stat(int(entry.name))
            if found is not None:
                out[int(entry.name)] = found
    return out


@dataclass
class _Snapshot:
    t_s: float
    host: dict[str, int]
    procs: dict[int, tuple[int, int, bool]]


class HostLoad:
    """The host's load outside one run: :meth:`start` as its command starts, :meth:`stop` as it
    ends; ``command_pid`` is the command's first process (its tree is the run's and is counted by
    its accounting, not here); ``servers`` lists the emulated disks' servers."""

    def __init__(self, command_pid: int | None, servers: Callable[[], Iterable[int]] = lambda: (),
                 run_pids: Callable[[], Iterable[int]] = lambda: ()) -> None:
        self.command_pid = command_pid
        self.servers = servers
        #: The run's processes now (its cgroup's): an orphan of the run that the profiler reaps
        #: is the run's, not the harness's.
        self.run_pids = run_pids
        self._run: set[int] = set()
        self.profiler = os.getpid()
        self._start: _Snapshot | None = None
        self._end: _Snapshot | None = None
        self._server_pids: set[int] = set()

    def _snapshot(self) -> _Snapshot:
        return _Snapshot(time.monotonic(), host_ticks(), _processes())

    def start(self) -> "HostLoad":
        self._server_pids = set(self.servers())
        self._start = self._snapshot()
        return self

    def stop(self) -> None:
        self._run = set(self.run_pids())
        self._end = self._snapshot()

    def _harness_pids(self, procs: dict[int, tuple[int, int, bool]]) -> set[int]:
        """The profiler and every process it started but the command, with their descendants."""
        harness = {self.profiler}
        changed = True
        while changed:
            changed = False
            for pid, (ppid, _, _) in procs.items():
                if ppid in harness and pid not in harness and pid != self.command_pid and pid not in self._run:
                    harness.add(pid)
                    changed = True
        return harness

    def record(self, run_cpu_s: float | None) -> dict[str, Any]:
        """The record: the window, the host's busy cores, and what of them was the run's
        (``run_cpu_s``: its accounting's user + system seconds), the harness's, the device
        servers', the kernel's and the steal; ``outside_cores`` is what is left."""
        if self._start is None or self._end is None:
            return {"measured": False, "why": "the command did not run"}
        a, b = self._start, self._end
        window_s = b.t_s - a.t_s
        if window_s <= 0:
            return {"measured": False, "why": "an empty window"}

        def cpu_s(ticks: float) -> float:
            return ticks / TICKS_PER_S

        busy_s = cpu_s(sum(b.host[f] - a.host[f] for f in BUSY_FIELDS))
        steal_s = cpu_s(b.host["steal"] - a.host["steal"])
        harness = self._harness_pids(b.procs) | self._harness_pids(a.procs)
        spent: dict[str, float] = {"harness": 0.0, "servers": 0.0, "kernel": 0.0, "run_lingering": 0.0}
        for pid, (_, ticks, kernel) in b.procs.items():
            before = a.procs.get(pid)
            delta = ticks - (before[1] if before is not None else 0)
            # A process of the run still in its cgroup as it ends (a daemon it started, an MPI
            # launcher's orted) was waited for by no one: its time is not in the run's accounting.
            kind = ("run_lingering" if pid in self._run else "harness" if pid in harness
                    else "servers" if pid in self._server_pids else "kernel" if kernel else None)
            if kind is not None:
                spent[kind] += cpu_s(delta)
        run_s = float(run_cpu_s or 0.0)
        outside_s = busy_s - run_s - sum(spent.values())
        cores = {k: round(v / window_s, 4) for k, v in {"host_busy": busy_s, "run": run_s, **spent,
                                                         "steal": steal_s}.items()}
        judged = window_s >= MIN_WINDOW_S
        return {"measured": True, "window_s": round(window_s, 4), "outside_cores": round(max(outside_s, 0.0) / window_s, 4),
                **{f"{k}_cores": v for k, v in cores.items()}, "limit_cores": HOST_LOAD_LIMIT_CORES,
                "busy": judged and outside_s / window_s > HOST_LOAD_LIMIT_CORES,
                "judged": judged, "why": None if judged else f"a window under {MIN_WINDOW_S:g} s is not judged (10 ms ticks)",
                "tick_s": round(1 / TICKS_PER_S, 4),
                "what": "the host's busy CPU outside the run, its harness, the emulated disks' servers and the kernel's "
                        "threads, over the command's window; steal beside it, not in it"}
