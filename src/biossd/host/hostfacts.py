"""Facts about the host a run happened on, recorded in every run manifest (Lee, Min and Yoon 2015, §5.1
reports CPU, RAM and OS; biossd records them for every run so hosts can be compared)."""

from __future__ import annotations

import os
import platform
import socket
from pathlib import Path

from biossd import __version__

_KIB = 1024


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


def host_facts() -> dict[str, object]:
    """Kernel, OS, CPU, memory and swap of this host, and the biossd version."""
    return {
        "hostname": socket.gethostname(),
        "kernel": platform.release(),
        "os": _os_release(),
        "machine": platform.machine(),
        "cpu_model": _cpu_model(),
        "cpu_count": os.cpu_count(),
        "mem_total_bytes": meminfo_bytes("MemTotal"),
        "swap_total_bytes": meminfo_bytes("SwapTotal"),
        "biossd_version": __version__,
    }
