"""The command's own peak resident set, from GNU ``time`` (Lee, Min and Yoon 2015, §5.1: the paper ran each
program under ``time -eUSKFW``; its ``M`` is the peak RSS).

Why not ``wait4``'s ``ru_maxrss``: Linux keeps a process's peak RSS across ``exec`` — the new
program starts with the peak of the memory image it replaced. The profiler forks its gate from
a Python process of some 30 to 60 MiB, so every command it ``exec``\\s would be reported at
that size at least, and a small tool's peak RSS (a k-mer counter's tiny table, ``samtools
sort -m`` at its smallest) would be the profiler's, not its own. GNU time, ``exec``-ed by the
gate, *forks* the command from its own small image and reports that child's peak, which is
the command's own (floor: GNU time's own image, about 1 MiB).

It also reports how the command ended (its exit status, or the signal that killed it), which
the profiler then takes as the command's: GNU time itself exits with 128+N for a command
killed by signal N. Where GNU time is missing (it is Debian's ``time`` package) the profiler
falls back to ``wait4``; where GNU time was killed before its command ended, the profiler reaps
the command itself (:mod:`biossd.measure.processes`). ``rusage.json``'s ``max_rss_source`` says
which.
"""

from __future__ import annotations

import re
import shutil
import subprocess
from dataclasses import dataclass
from pathlib import Path

#: GNU time's report in the run directory.
REPORT_FILE = "gnu_time.txt"
#: ``%M``: the command's peak resident set in KiB; ``%x``: its exit status.
FORMAT = "%M %x"
#: Where ``max_rss_kib`` came from (``rusage.json``'s ``max_rss_source``).
SOURCE_GNU_TIME = "GNU time %M: the command's own peak resident set"
SOURCE_ORPHAN = ("wait4 ru_maxrss of the command itself, reaped by the profiler after GNU time was killed "
                 "(the command's own peak)")
SOURCE_WAIT4 = ("wait4 ru_maxrss of the profiler's child: at least the profiler's own resident set "
                "at fork (Linux keeps the peak across exec); {why}")
_SIGNALED = re.compile(r"^Command terminated by signal (\d+)$")
_EXITED = re.compile(r"^Command exited with non-zero status (\d+)$")
_REPORT = re.compile(r"^(\d+) (\d+)$")


@dataclass(frozen=True)
class Report:
    """What GNU time said of the command."""

    max_rss_kib: int
    #: A wait status as ``os.wait4`` returns it (exit code << 8, or the signal number).
    wait_status: int


def find() -> tuple[str | None, str]:
    """GNU time's path, or ``None`` and why not (another ``time`` is not GNU time's format)."""
    path = shutil.which("time")
    if path is None:
        return None, "GNU time is not installed (Debian: time)"
    try:
        said = subprocess.run([path, "--version"], capture_output=True, text=True, timeout=10)
    except (OSError, subprocess.TimeoutExpired) as err:
        return None, f"{path} --version failed: {err}"
    if "GNU" not in said.stdout + said.stderr:
        return None, f"{path} is not GNU time"
    return path, ""


def wrap(gnu_time: str, report: Path, argv: list[str]) -> list[str]:
    """``argv`` run by GNU time, its report written to ``report``."""
    return [gnu_time, "--output", str(report), "--format", FORMAT, *argv]


def read(report: Path) -> Report | None:
    """The report, or ``None`` if GNU time did not finish it (it was killed)."""
    try:
        lines = [line.strip() for line in report.read_text().splitlines() if line.strip()]
    except OSError:
        return None
    if not lines or not (last := _REPORT.match(lines[-1])):
        return None
    status = int(last.group(2)) << 8
    for line in lines[:-1]:
        if signaled := _SIGNALED.match(line):
            status = int(signaled.group(1))
        elif exited := _EXITED.match(line):
            status = int(exited.group(1)) << 8
    return Report(max_rss_kib=int(last.group(1)), wait_status=status)
