"""A run's process accounting and its outcome, in the fields of GNU ``time -eUSKFW`` (Lee, Min and
Yoon 2015, §5.1): ``wait4``'s for the process tree, a container's cgroup's for a tool in Docker,
how the command ended, and whether the scratch ran out of space (the harness's fault)."""

from __future__ import annotations

import contextlib
import ctypes
import errno
import os
import resource
import time
from pathlib import Path
from typing import Any, Sequence

from biossd.host import devices as block_devices
from biossd.measure import gnutime

#: ``ru_inblock``/``ru_oublock`` count 512-byte units on Linux (getrusage(2)).
RUSAGE_BLOCK_BYTES = 512


def rusage_record(usages: Sequence[resource.struct_rusage], wall_s: float, report: gnutime.Report | None = None,
                  no_report_why: str = "") -> dict[str, float | int | str]:
    """Process accounting in the fields of GNU ``time -eUSKFW`` (wall, user, sys, RSS, faults,
    file-system I/O, context switches), with units in the names: ``wait4``'s for the process
    tree (``usages``: the gate's, then any orphaned command's, see
    :func:`biossd.measure.processes.wait`), except the peak RSS, which is the command's own from
    GNU time's ``report`` where there is one (:mod:`biossd.measure.gnutime` says why)."""
    leader, orphans = usages[0], usages[1:]
    if report is not None:
        max_rss_kib, source = report.max_rss_kib, gnutime.SOURCE_GNU_TIME
    elif orphans:
        max_rss_kib, source = max(ru.ru_maxrss for ru in orphans), gnutime.SOURCE_ORPHAN
    else:
        max_rss_kib = leader.ru_maxrss
        source = gnutime.SOURCE_WAIT4.format(why=no_report_why or "GNU time was killed before it reported")

    def total(field: str) -> float:
        return sum(getattr(ru, field) for ru in usages)

    return {
        "wall_s": wall_s,
        "user_s": total("ru_utime"),
        "sys_s": total("ru_stime"),
        "max_rss_kib": max_rss_kib,
        "max_rss_source": source,
        "major_faults": total("ru_majflt"),
        "minor_faults": total("ru_minflt"),
        "fs_input_blocks": total("ru_inblock"),
        "fs_output_blocks": total("ru_oublock"),
        "read_bytes": total("ru_inblock") * RUSAGE_BLOCK_BYTES,
        "write_bytes": total("ru_oublock") * RUSAGE_BLOCK_BYTES,
        "voluntary_ctx_switches": total("ru_nvcsw"),
        "involuntary_ctx_switches": total("ru_nivcsw"),
    }


#: The fields of a run's accounting that a container's cgroup gives for the tool itself.
CONTAINER_ACCOUNTING_FIELDS = ("user_s", "sys_s", "major_faults", "minor_faults")


def container_accounting(accounting: dict[str, Any], container: dict[str, float] | None) -> dict[str, Any]:
    """A Docker run's accounting: ``wait4`` saw the ``docker`` client, not the tool, so its CPU
    time and page faults are the container cgroup's (:class:`biossd.host.dockerengine.ContainerWatch`,
    read until it ended), the client's kept as ``client_*``; without a reading, the client's stay
    and ``accounting_source`` says so."""
    out = dict(accounting)
    if not container:
        out["accounting_source"] = "the docker client (the container's cgroup could not be read)"
        return out
    for field in CONTAINER_ACCOUNTING_FIELDS:
        if field in container:
            out[f"client_{field}"] = out.get(field)
            out[field] = container[field]
    out["accounting_source"] = ("the container's cgroup, read every "
                                f"{container.get('read_interval_s')} s until it ended")
    return out


def outcome_of(status: int, oom_kills: int | None, timed_out: bool) -> tuple[str, int | None, int | None]:
    """(outcome, exit code, terminating signal) from a wait status and the cap's OOM count."""
    exit_code = os.waitstatus_to_exitcode(status)
    sig = -exit_code if exit_code < 0 else None
    code = exit_code if exit_code >= 0 else None
    if oom_kills:
        return "oom", code, sig
    if timed_out:
        return "timeout", code, sig
    return ("ok" if exit_code == 0 else "failed"), code, sig


def flush_filesystem(path: Path) -> float | None:
    """``syncfs`` the file system holding ``path`` (the run's scratch) and return how long it
    took: the tool's dirty data reaches the device inside the traced window (the block trace
    stops after this), but not inside ``wall_s``. Without it, a tool whose writes sit in the page
    cache when it exits would show no writes at all (Lee, Min and Yoon 2015, §5.2's Wiops, Wsize). ``None``
    when the call is not available."""
    libc = ctypes.CDLL(None, use_errno=True)
    if not hasattr(libc, "syncfs"):
        return None
    fd = os.open(path, os.O_RDONLY | os.O_DIRECTORY)
    try:
        t0 = time.monotonic()
        libc.syncfs(fd)
        return time.monotonic() - t0
    finally:
        os.close(fd)


#: A failed run whose working directory's file system has less than this left (or whose
#: stderr says ENOSPC) ran out of scratch: a fault of the harness, not a result of the tool.
FULL_DISK_BYTES = 4 << 20


def last_line(log: Path) -> str:
    """The last non-empty line a command wrote to ``log`` (or a note that it wrote none)."""
    try:
        lines = [line for line in log.read_text(errors="replace").splitlines() if line.strip()]
    except OSError:
        lines = []
    return lines[-1] if lines else "it wrote nothing on stderr"


def scratch_full(cwd: Path, stderr_log: Path) -> str | None:
    """Why the run's scratch counts as full, or ``None``."""
    st = os.statvfs(cwd)
    free = (st.f_bfree if os.geteuid() == 0 else st.f_bavail) * st.f_frsize
    with contextlib.suppress(OSError):
        said = os.strerror(errno.ENOSPC) in stderr_log.read_text(errors="replace")
    if free >= FULL_DISK_BYTES and not said:
        return None
    where = block_devices.mount_facts(cwd)
    return (f"the scratch disk ran out of space during the run: {cwd} (on {where.get('source', '?')}, "
            f"{where.get('mount_point', '?')}) has {free >> 20} MiB free now"
            + (" and the tool reported ENOSPC" if said else "")
            + "; this is a fault of the harness, not a result of the tool, and no run was recorded: "
            "give the scratch (--scratch_dir, or --emulate_size for an emulated disk) more space")
