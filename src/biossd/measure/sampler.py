"""A 1 Hz sampler of system counters, like SAR (Lee, Min and Yoon 2015, §5.1), written incrementally as CSV.

Each row is one sample; every counter is the kernel's cumulative value at that instant, so
rates are differences of consecutive rows over ``t_s``. Columns:

``t_s``                            seconds since the sampler started (monotonic clock)
``vmstat_<key>``                   ``/proc/vmstat`` pgmajfault, pswpin, pswpout, pgpgin, pgpgout
``disk_<dev>_<field>``             ``/proc/diskstats`` of each traced device: reads, reads_merged,
                                   read_sectors, read_ms, writes, writes_merged, write_sectors,
                                   write_ms, in_flight, io_ms, weighted_io_ms (sectors are 512 B)
``cgroup_mem_bytes``               the run's cgroup memory usage (empty when uncapped)
``psi_<res>_<some|full>_total_us`` ``/proc/pressure/{io,memory}`` stall time, microseconds
``cpu_<field>_ticks``              ``/proc/stat`` aggregate CPU time, USER_HZ ticks
"""

from __future__ import annotations

import csv
import threading
import time
from pathlib import Path
from typing import Callable, Sequence

VMSTAT_KEYS = ("pgmajfault", "pswpin", "pswpout", "pgpgin", "pgpgout")
DISKSTAT_FIELDS = (
    "reads", "reads_merged", "read_sectors", "read_ms", "writes", "writes_merged",
    "write_sectors", "write_ms", "in_flight", "io_ms", "weighted_io_ms",
)
CPU_FIELDS = ("user", "nice", "system", "idle", "iowait", "irq", "softirq", "steal")
PSI_RESOURCES = ("io", "memory")
DEFAULT_INTERVAL_S = 1.0
_DISKSTAT_FIRST_FIELD = 3  # major, minor, name, then the counters


def read_vmstat(path: Path = Path("/proc/vmstat")) -> dict[str, int]:
    wanted = set(VMSTAT_KEYS)
    out = {}
    for line in path.read_text().splitlines():
        key, _, value = line.partition(" ")
        if key in wanted:
            out[f"vmstat_{key}"] = int(value)
    return out


def read_diskstats(devices: Sequence[str], path: Path = Path("/proc/diskstats")) -> dict[str, int]:
    wanted = set(devices)
    out: dict[str, int] = {}
    for line in path.read_text().splitlines():
        parts = line.split()
        if len(parts) > 2 and parts[2] in wanted:
            values = parts[_DISKSTAT_FIRST_FIELD : _DISKSTAT_FIRST_FIELD + len(DISKSTAT_FIELDS)]
            out.update({f"disk_{parts[2]}_{f}": int(v) for f, v in zip(DISKSTAT_FIELDS, values)})
    return out


def read_psi(root: Path = Path("/proc/pressure")) -> dict[str, int]:
    out = {}
    for res in PSI_RESOURCES:
        try:
            lines = (root / res).read_text().splitlines()
        except OSError:
            continue
        for line in lines:
            kind, *pairs = line.split()
            total = dict(p.split("=") for p in pairs)["total"]
            out[f"psi_{res}_{kind}_total_us"] = int(total)
    return out


def read_cpu(path: Path = Path("/proc/stat")) -> dict[str, int]:
    first = path.read_text().split("\n", 1)[0].split()
    return {f"cpu_{f}_ticks": int(v) for f, v in zip(CPU_FIELDS, first[1:])}


class Sampler:
    """Samples every ``interval_s`` on a background thread into ``out_path`` (CSV, flushed per
    row), from :meth:`start` to :meth:`stop`; a final sample is taken at stop."""

    def __init__(self, out_path: Path, devices: Sequence[str],
                 cgroup_usage: Callable[[], int | None] = lambda: None,
                 interval_s: float = DEFAULT_INTERVAL_S) -> None:
        self.out_path = Path(out_path)
        self.devices = list(devices)
        self.cgroup_usage = cgroup_usage
        self.interval_s = interval_s
        self.samples = 0
        #: The error that stopped sampling early, if any (recorded in the run's manifest).
        self.error: str | None = None
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self._t0 = 0.0
        self._handle = None
        self._writer: csv.DictWriter | None = None

    def sample(self) -> dict[str, float | int | None]:
        row: dict[str, float | int | None] = {"t_s": round(time.monotonic() - self._t0, 6)}
        row.update(read_vmstat())
        row.update(read_diskstats(self.devices))
        row["cgroup_mem_bytes"] = self.cgroup_usage()
        row.update(read_psi())
        row.update(read_cpu())
        return row

    def _write(self) -> None:
        row = self.sample()
        if self._writer is None:
            self._writer = csv.DictWriter(self._handle, fieldnames=list(row), extrasaction="ignore")
            self._writer.writeheader()
        self._writer.writerow(row)
        self._handle.flush()
        self.samples += 1

    def _loop(self) -> None:
        try:
            while not self._stop.wait(self.interval_s):
                self._write()
        except Exception as err:  # recorded, not raised: the profiled run goes on
            self.error = f"{type(err).__name__}: {err}"

    def start(self, t0_s: float | None = None) -> None:
        """Start sampling; ``t_s`` counts from ``t0_s`` (monotonic clock; default: now)."""
        self._t0 = time.monotonic() if t0_s is None else t0_s
        self._handle = open(self.out_path, "w", newline="")
        self._write()
        self._thread = threading.Thread(target=self._loop, name="biossd-sampler", daemon=True)
        self._thread.start()

    def stop(self) -> None:
        if self._thread is None:
            return
        self._stop.set()
        self._thread.join()
        try:
            if self.error is None:
                self._write()
        except Exception as err:
            self.error = f"{type(err).__name__}: {err}"
        finally:
            self._handle.close()
            self._thread = None

    def record(self) -> dict[str, object]:
        """The collector's entry in the manifest; an error mid-run is stated, not hidden."""
        return {"ran": True, "why": None, "files": [self.out_path.name], "samples": self.samples,
                "interval_s": self.interval_s, "error": self.error, "complete": self.error is None}
