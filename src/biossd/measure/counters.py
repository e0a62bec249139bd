"""CPU and memory counters of the profiled process tree (Lee, Min and Yoon 2015, §5.1: the paper used VTune).

``perf stat`` counts hardware events (cycles, instructions, cache and TLB misses) where the CPU
exposes a PMU, and software events where it does not (VMs such as this project's CI). perf is
attached to the command's process *before* it execs (the profiler holds it at a gate, see
:mod:`biossd.measure.profile`), with inheritance, so every thread and child is counted, and the
command keeps its own exit status (``perf stat -- CMD`` would report a signal death as 0).

``valgrind --tool=cachegrind`` is the opt-in alternative on machines without a PMU: it
simulates the caches and gives miss ratios, at a 20–100× slowdown, for small inputs only.
"""

from __future__ import annotations

import csv
import io
import os
import re
import select
import shutil
import signal
import subprocess
from pathlib import Path
from typing import Any, Sequence

from biossd.core.errors import BiossdError
from biossd.core.owners import dies_with_parent

PERF_FILE = "perf_stat.csv"
PERF_LOG = "perf_stat.log"
PMU_DIR = Path("/sys/bus/event_source/devices/cpu")
HARDWARE_EVENTS = (
    "cycles", "instructions", "cache-references", "cache-misses", "LLC-loads", "LLC-load-misses",
    "dTLB-loads", "dTLB-load-misses",
)
SOFTWARE_EVENTS = (
    "task-clock", "context-switches", "cpu-migrations", "page-faults", "major-faults", "minor-faults",
)
#: How long to wait for perf to acknowledge that its counters are open and enabled.
PERF_ACK_TIMEOUT_S = 10.0
PERF_STOP_TIMEOUT_S = 30.0
CACHEGRIND_PREFIX = "cachegrind"


class CounterError(BiossdError, RuntimeError):
    pass


def has_pmu() -> bool:
    """Whether the kernel exposes a hardware performance-monitoring unit for the CPU."""
    return PMU_DIR.is_dir()


def default_events() -> tuple[str, ...]:
    return (HARDWARE_EVENTS + SOFTWARE_EVENTS) if has_pmu() else SOFTWARE_EVENTS


class PerfStat:
    """``perf stat -p PID`` with inheritance, started disabled and enabled over a control pipe;
    :meth:`attach` returns once perf has acknowledged that counting is on."""

    def __init__(self, out_dir: Path, events: Sequence[str] | None = None) -> None:
        self.out_dir = out_dir
        self.events = tuple(events or default_events())
        self.proc: subprocess.Popen[bytes] | None = None
        self._ack_r: int | None = None

    def attach(self, pid: int) -> None:
        self.start(pid)
        self.wait_counting()

    def start(self, pid: int) -> None:
        """Start perf on ``pid`` and ask it to count; :meth:`wait_counting` waits for its answer
        (the profiler sets up its other collectors meanwhile)."""
        perf = shutil.which("perf")
        if perf is None:
            raise CounterError("perf is not installed (Debian: linux-perf)")
        ctl_r, ctl_w = os.pipe()
        ack_r, ack_w = os.pipe()
        argv = [perf, "stat", "-x", ",", "-o", str(self.out_dir / PERF_FILE), "-e", ",".join(self.events),
                "-D", "-1", "--control", f"fd:{ctl_r},{ack_w}", "-p", str(pid)]
        with open(self.out_dir / PERF_LOG, "wb") as log:
            self.proc = subprocess.Popen(argv, stdout=log, stderr=log, pass_fds=(ctl_r, ack_w),
                                         start_new_session=True, preexec_fn=dies_with_parent())
        os.close(ctl_r)
        os.close(ack_w)
        self._ack_r = ack_r
        try:
            os.write(ctl_w, b"enable\n")
        finally:
            os.close(ctl_w)

    def wait_counting(self) -> None:
        """Return once perf has acknowledged that counting is on; else stop it and raise."""
        ack_r, self._ack_r = self._ack_r, None
        try:
            ready, _, _ = select.select([ack_r], [], [], PERF_ACK_TIMEOUT_S)
            ack = os.read(ack_r, 16) if ready else b""
        finally:
            os.close(ack_r)
        if not ack.startswith(b"ack"):
            self.abort()
            log_text = (self.out_dir / PERF_LOG).read_text(errors="replace").strip()
            raise CounterError(f"perf stat did not start counting: {log_text or 'no acknowledgement'}")

    def stop(self) -> dict[str, Any]:
        """Stop perf after the command exited and read its counts."""
        assert self.proc is not None
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGINT)
        try:
            self.proc.wait(timeout=PERF_STOP_TIMEOUT_S)
        except subprocess.TimeoutExpired:
            self.abort()
            raise CounterError("perf stat did not stop") from None
        counts = parse_perf_csv((self.out_dir / PERF_FILE).read_text())
        supported = [name for name, c in counts.items() if c["value"] is not None]
        return {
            "ran": True, "why": None, "tool": "perf stat", "files": [PERF_FILE, PERF_LOG],
            "pmu": has_pmu(), "events": list(self.events),
            "unsupported_events": [name for name in counts if name not in supported],
        }

    def abort(self) -> None:
        if self._ack_r is not None:
            _close_quietly(self._ack_r)
            self._ack_r = None
        if self.proc is not None and self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait()


def parse_perf_csv(text: str) -> dict[str, dict[str, Any]]:
    """``perf stat -x ,`` output as ``{event: {"value", "unit", "enabled_pct"}}``; an event
    perf could not count (``<not supported>``, ``<not counted>``) has value ``None``."""
    out: dict[str, dict[str, Any]] = {}
    for row in csv.reader(io.StringIO(text)):
        if not row or row[0].startswith("#") or len(row) < 3:
            continue
        raw, unit, event = row[0], row[1], row[2]
        try:
            value: float | None = float(raw)
        except ValueError:
            value = None
        pct = float(row[4]) if len(row) > 4 and row[4] else None
        out[event] = {"value": value, "unit": unit or None, "enabled_pct": pct}
    return out


def cachegrind_argv(out_dir: Path, argv: Sequence[str]) -> list[str]:
    """``argv`` under cachegrind with cache simulation, following children; one output and log
    file per process (``cachegrind.out.<pid>``, ``cachegrind.log.<pid>``)."""
    valgrind = shutil.which("valgrind")
    if valgrind is None:
        raise CounterError("valgrind is not installed (Debian: valgrind)")
    return [
        valgrind, "--tool=cachegrind", "--cache-sim=yes", "--trace-children=yes",
        "--vgdb=no",  # else each process leaves its gdbserver FIFOs in /tmp
        f"--cachegrind-out-file={out_dir / CACHEGRIND_PREFIX}.out.%p",
        f"--log-file={out_dir / CACHEGRIND_PREFIX}.log.%p", "--", *argv,
    ]


#: cachegrind's summary lines, e.g. ``==123== D1  misses:  1,234  (  1,000 rd  +  234 wr)``.
_CG_LINE = re.compile(r"^==\d+== (?P<key>I1|LLi|D1|LLd|LL|I|D)\s+(?P<what>refs|misses):\s+(?P<n>[\d,]+)")


def parse_cachegrind_logs(out_dir: Path) -> dict[str, int]:
    """Totals over every process's cachegrind log: ``<cache>_<refs|misses>`` event counts."""
    totals: dict[str, int] = {}
    for log in sorted(out_dir.glob(f"{CACHEGRIND_PREFIX}.log.*")):
        for line in log.read_text(errors="replace").splitlines():
            m = _CG_LINE.match(line)
            if m:
                key = f"{m['key']}_{m['what']}"
                totals[key] = totals.get(key, 0) + int(m["n"].replace(",", ""))
    return totals


def cachegrind_record(out_dir: Path) -> dict[str, Any]:
    totals = parse_cachegrind_logs(out_dir)
    files = sorted(p.name for p in out_dir.glob(f"{CACHEGRIND_PREFIX}.*"))
    ratios = {}
    for cache, refs in (("D1", "D_refs"), ("LLd", "D_refs"), ("I1", "I_refs"), ("LL", "LL_refs")):
        if totals.get(refs):
            ratios[f"{cache}_miss_ratio"] = totals.get(f"{cache}_misses", 0) / totals[refs]
    return {"ran": bool(totals), "why": None if totals else "cachegrind wrote no summary",
            "tool": "valgrind --tool=cachegrind", "files": files, "totals": totals, **ratios}


def _close_quietly(fd: int) -> None:
    try:
        os.close(fd)
    except OSError:
        pass
