"""Run one command under a memory cap and keep its raw measurements (seed 000, §5.1).

The paper measured each program with ``time -eUSKFW``, SAR, blktrace and VTune. This module
runs the command, applies the memory cap (:mod:`biossd.cgroups`), and writes one run directory:

``RUN_DIR/``
    ``stdout.log``, ``stderr.log``   the command's own output
    ``rusage.json``                  process accounting of the whole process tree (``time``'s job)
    ``sampler.csv``                  1 Hz system counters, like SAR (:mod:`biossd.sampler`)
    ``run.json``                     the manifest, written last (see :mod:`biossd.manifest`)

Each collector records whether it ran and, if not, why; collectors this version does not have
yet are listed as not run with that reason, so a reader never mistakes absence for zero.
"""

from __future__ import annotations

import datetime as dt
import json
import os
import resource
import shutil
import signal
import subprocess
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Sequence

from biossd import devices as block_devices
from biossd import hostfacts, manifest
from biossd.cgroups import MemoryCap
from biossd.sampler import DEFAULT_INTERVAL_S, Sampler

#: ``ru_inblock``/``ru_oublock`` count 512-byte units on Linux (getrusage(2)).
RUSAGE_BLOCK_BYTES = 512
EXIT_COMMAND_NOT_FOUND = 127
EXIT_NOT_EXECUTABLE = 126
_SIGNAL_EXIT_BASE = 128
DROP_CACHES = Path("/proc/sys/vm/drop_caches")
_DROP_ALL = "3"

#: Collectors planned for the profiler that this version does not run yet (issue 3).
NOT_YET_COLLECTED = {
    "blocktrace": "block-request tracing is not implemented in this biossd version",
    "cpu_counters": "perf/cachegrind counters are not implemented in this biossd version",
}


class ProfileError(RuntimeError):
    """The run could not be started; the message says what to fix."""


class Interrupted(Exception):
    def __init__(self, signum: int) -> None:
        super().__init__(f"interrupted by signal {signum}")
        self.signum = signum


@dataclass
class ProfileRequest:
    argv: Sequence[str]
    out_dir: Path
    mem_bytes: int | None
    labels: dict[str, str] = field(default_factory=dict)
    cap_backend: str = "auto"
    drop_caches: bool = True
    overwrite: bool = False
    #: Block devices to trace (``/dev/vda``, ``vda`` or ``254:0``); default: the one holding
    #: the current directory.
    devices: Sequence[str] = ()
    sample_interval_s: float = DEFAULT_INTERVAL_S


def _utc_now() -> str:
    return dt.datetime.now(dt.timezone.utc).isoformat(timespec="milliseconds")


def prepare_run_dir(out_dir: Path, overwrite: bool) -> None:
    """Refuse to overwrite a complete run unless told; clear an incomplete one."""
    if manifest.is_complete(out_dir) and not overwrite:
        raise ProfileError(
            f"{out_dir} already holds a complete run ({manifest.MANIFEST_NAME}); pass --overwrite "
            "to replace it"
        )
    if out_dir.exists():
        shutil.rmtree(out_dir)
    out_dir.mkdir(parents=True)


def drop_page_cache() -> dict[str, Any]:
    """``sync`` and drop the page cache, dentries and inodes so the run starts cold."""
    os.sync()
    try:
        DROP_CACHES.write_text(_DROP_ALL)
    except OSError as err:
        return {"dropped": False, "why": f"cannot write {DROP_CACHES}: {err.strerror} (needs root)"}
    return {"dropped": True, "why": None}


def rusage_record(ru: resource.struct_rusage, wall_s: float) -> dict[str, float | int]:
    """Process accounting in the fields of GNU ``time -eUSKFW`` (wall, user, sys, RSS, faults,
    file-system I/O, context switches), with units in the names."""
    return {
        "wall_s": wall_s,
        "user_s": ru.ru_utime,
        "sys_s": ru.ru_stime,
        "max_rss_kib": ru.ru_maxrss,
        "major_faults": ru.ru_majflt,
        "minor_faults": ru.ru_minflt,
        "fs_input_blocks": ru.ru_inblock,
        "fs_output_blocks": ru.ru_oublock,
        "read_bytes": ru.ru_inblock * RUSAGE_BLOCK_BYTES,
        "write_bytes": ru.ru_oublock * RUSAGE_BLOCK_BYTES,
        "voluntary_ctx_switches": ru.ru_nvcsw,
        "involuntary_ctx_switches": ru.ru_nivcsw,
    }


def _outcome(status: int, oom_kills: int | None) -> tuple[str, int | None, int | None]:
    """(outcome, exit code, terminating signal) from a wait status and the cap's OOM count."""
    exit_code = os.waitstatus_to_exitcode(status)
    sig = -exit_code if exit_code < 0 else None
    code = exit_code if exit_code >= 0 else None
    if oom_kills:
        return "oom", code, sig
    return ("ok" if exit_code == 0 else "failed"), code, sig


def run(request: ProfileRequest) -> dict[str, Any]:
    """Profile one command; returns the manifest written to ``RUN_DIR/run.json``.

    On SIGINT/SIGTERM the command's process group is terminated, the cap removed, no manifest
    is written, and :class:`Interrupted` is raised.
    """
    if not request.argv:
        raise ProfileError("no command given: put it after `--`")
    try:
        traced = [block_devices.resolve(d) for d in request.devices]
    except block_devices.DeviceError as err:
        raise ProfileError(f"{err}; nothing was run") from None
    devices_note = None
    if not traced:
        try:
            traced = [block_devices.device_of_path(Path.cwd())]
        except block_devices.DeviceError as err:
            # tmpfs, overlayfs and the like: run anyway, with no device counters, and say why.
            devices_note = f"no device traced: the current directory is on no block device ({err})"
    out_dir = Path(request.out_dir).resolve()
    prepare_run_dir(out_dir, request.overwrite)
    facts = hostfacts.host_facts()
    caches = drop_page_cache() if request.drop_caches else {"dropped": False, "why": "disabled"}

    stdout_path, stderr_path = out_dir / "stdout.log", out_dir / "stderr.log"
    received: list[int] = []
    child: subprocess.Popen[bytes] | None = None

    def on_signal(signum: int, _frame: object) -> None:
        received.append(signum)
        if child is not None:
            try:
                os.killpg(child.pid, signal.SIGTERM)
            except ProcessLookupError:
                pass

    previous = {s: signal.signal(s, on_signal) for s in (signal.SIGINT, signal.SIGTERM)}
    try:
        with MemoryCap(request.mem_bytes, request.cap_backend) as cap, open(
            stdout_path, "wb"
        ) as out, open(stderr_path, "wb") as err:
            started_at = _utc_now()
            t0 = time.monotonic()
            launch_error = None
            try:
                child = subprocess.Popen(
                    list(request.argv), stdout=out, stderr=err, stdin=subprocess.DEVNULL,
                    preexec_fn=cap.join, start_new_session=True,
                )
            except FileNotFoundError as exc:
                launch_error = (EXIT_COMMAND_NOT_FOUND, f"command not found: {exc.filename}")
            except PermissionError as exc:
                launch_error = (EXIT_NOT_EXECUTABLE, f"command not executable: {exc.filename}")
            sampler_record: dict[str, Any] = {"ran": False, "why": "the command did not start", "files": []}
            if child is not None:
                sampler = Sampler(out_dir / "sampler.csv", traced, cap.usage_bytes, request.sample_interval_s)
                try:
                    sampler.start()
                except OSError as exc:
                    sampler_record["why"] = f"could not start: {exc}"
                    sampler = None
                try:
                    _, status, ru = os.wait4(child.pid, 0)
                finally:
                    if sampler is not None:
                        sampler.stop()
                        sampler_record = {"ran": True, "why": None, "files": ["sampler.csv"],
                                          "samples": sampler.samples, "interval_s": request.sample_interval_s}
                wall_s = time.monotonic() - t0
                outcome, exit_code, term_signal = _outcome(status, cap.stats()["oom_kills"])
                accounting = rusage_record(ru, wall_s)
            else:
                assert launch_error is not None
                wall_s = time.monotonic() - t0
                outcome, exit_code, term_signal = "failed", launch_error[0], None
                err.write((launch_error[1] + "\n").encode())
                accounting = None
            ended_at = _utc_now()
            cap_record = cap.record()
        if received:
            raise Interrupted(received[0])
    finally:
        for s, handler in previous.items():
            signal.signal(s, handler)

    collectors: dict[str, Any] = {}
    if accounting is not None:
        manifest.atomic_write_text(out_dir / "rusage.json", json.dumps(accounting, indent=2) + "\n")
        collectors["rusage"] = {"ran": True, "why": None, "files": ["rusage.json"]}
    else:
        collectors["rusage"] = {"ran": False, "why": "the command did not start", "files": []}
    collectors["sampler"] = sampler_record
    for name, why in NOT_YET_COLLECTED.items():
        collectors[name] = {"ran": False, "why": why, "files": []}

    files = [manifest.file_record(out_dir, p) for p in sorted(out_dir.iterdir()) if p.is_file()]
    body = {
        "labels": dict(request.labels),
        "argv": list(request.argv),
        "cwd": os.getcwd(),
        "outcome": outcome,
        "exit_code": exit_code,
        "signal": term_signal,
        "error": launch_error[1] if launch_error else None,
        "started_at": started_at,
        "ended_at": ended_at,
        "wall_s": wall_s,
        "devices": traced,
        "devices_note": devices_note,
        "memory_cap": cap_record,
        "page_cache": caches,
        "host": facts,
        "collectors": collectors,
        "files": files,
    }
    manifest.write_manifest(out_dir, body)
    return manifest.read_manifest(out_dir)


def signal_exit_code(signum: int) -> int:
    return _SIGNAL_EXIT_BASE + signum
