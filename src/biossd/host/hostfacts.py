"""Facts about the host a run happened on, recorded in every run manifest (Lee, Min and Yoon 2015, §5.1
reports CPU, RAM and OS; biossd records them for every run so hosts can be compared)."""

from __future__ import annotations

import os
import platform
import socket
from pathlib import Path

from biossd import __version__

_KIB = 1024

#: DAMON's sysfs interface: the kdamonds a host runs and the schemes each applies.
DAMON_ADMIN = Path("/sys/kernel/mm/damon/admin")
#: DAMON scheme actions that take pages out of memory (or push them to the inactive list first).
EVICTING_ACTIONS = ("pageout", "lru_deprio")


def meminfo_bytes(key: str) -> int | None:
    """A ``/proc/meminfo`` field (``MemTotal``, ``MemAvailable``, ...) in bytes; ``None`` if absent."""
    try:
        for line in Path("/proc/meminfo").read_text().splitlines():
            name, _, rest = line.partition(":")
            if name == key:
                return int(rest.split()[0]) * _KIB
    except OSError:
        pass
    return None


def _cpu_model() -> str | None:
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or None


def _os_release() -> str | None:
    try:
        for line in Path("/etc/os-release").read_text().splitlines():
            if line.startswith("PRETTY_NAME="):
                return line.split("=", 1)[1].strip().strip('"')
    except OSError:
        pass
    return None


def _read(path: Path) -> str | None:
    try:
        return path.read_text().strip()
    except OSError:
        return None


def proactive_reclaim(admin: Path = DAMON_ADMIN) -> list[dict[str, object]]:
    """The host's own reclaim of idle memory: every running DAMON scheme that pages out (or
    deprioritises) the regions left idle long enough, with that idle time in seconds (its minimum
    age times the aggregation interval), the accesses a region may have and still count as idle,
    and its quota. Such a host evicts a tool's cached code between its warm-up and its capped runs,
    and a run's cold pages to its swap, whatever the cgroups say (docs/study.md, "Code is not
    data"). Empty without DAMON, or when no kdamond runs."""
    out: list[dict[str, object]] = []
    for kdamond in sorted(admin.glob("kdamonds/[0-9]*")):
        if _read(kdamond / "state") != "on":
            continue
        for context in sorted(kdamond.glob("contexts/[0-9]*")):
            aggr_us = _read(context / "monitoring_attrs" / "intervals" / "aggr_us")
            for scheme in sorted(context.glob("schemes/[0-9]*")):
                action = _read(scheme / "action")
                if action not in EVICTING_ACTIONS:
                    continue
                pattern = scheme / "access_pattern"
                age = _read(pattern / "age" / "min")
                idle_s = int(age) * int(aggr_us) / 1e6 if age and aggr_us and age.isdigit() and aggr_us.isdigit() else None
                quota = _read(scheme / "quotas" / "bytes")
                out.append({"kdamond": kdamond.name, "operations": _read(context / "operations"), "action": action,
                            "idle_s": idle_s, "max_accesses": _read(pattern / "nr_accesses" / "max"),
                            "quota_bytes": int(quota) if quota and quota.isdigit() else None,
                            "quota_reset_ms": _read(scheme / "quotas" / "reset_interval_ms")})
    return out


def host_facts() -> dict[str, object]:
    """Kernel, OS, CPU, memory and swap of this host, its own reclaim of idle memory
    (:func:`proactive_reclaim`), and the biossd version."""
    return {
        "hostname": socket.gethostname(),
        "kernel": platform.release(),
        "os": _os_release(),
        "machine": platform.machine(),
        "cpu_model": _cpu_model(),
        "cpu_count": os.cpu_count(),
        "mem_total_bytes": meminfo_bytes("MemTotal"),
        "swap_total_bytes": meminfo_bytes("SwapTotal"),
        "proactive_reclaim": proactive_reclaim(),
        "biossd_version": __version__,
    }
