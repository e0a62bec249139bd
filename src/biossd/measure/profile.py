"""Run one command under a memory cap and keep its raw measurements (Lee, Min and Yoon 2015, §5.1).

The paper measured each program with ``time -eUSKFW``, SAR, blktrace and VTune. This module
runs the command, applies the memory cap (:mod:`biossd.host.cgroups`), optionally gives it swap on a
loop device (:mod:`biossd.host.swap`), and writes one run directory:

``RUN_DIR/``
    ``stdout.log``, ``stderr.log``   the command's own output
    ``rusage.json``                  process accounting of the whole process tree (``time``'s job)
    ``gnu_time.txt``                 GNU time's report: the command's own peak RSS and how it ended
    ``sampler.csv``                  1 Hz system counters, like SAR (:mod:`biossd.measure.sampler`)
    ``blocktrace.tsv.gz``            one row per block request (:mod:`biossd.measure.trace.blocktrace`)
    ``perf_stat.csv``                CPU/memory counters (:mod:`biossd.measure.counters`)
    ``cachegrind.*``                 simulated cache misses, opt-in (:mod:`biossd.measure.counters`)
    ``run.json``                     the manifest, written last (see :mod:`biossd.measure.manifest`)

The command is started behind a *gate* — ``sh`` waiting on a pipe, then ``exec``-ing GNU time
(which forks the command; :mod:`biossd.measure.gnutime` says why) in the same process — so the
cap, the block trace, the sampler and perf are all in place before the command's first
instruction, and ``wall_s`` counts from the gate's release.
Each collector records whether it ran and, if not, why; one that fails does not stop the others
or the run.
"""

from __future__ import annotations

import itertools
import json
import os
import shutil
from pathlib import Path
from typing import Any, Callable, Sequence

from biossd.core.signals import signals_call
from biossd.host import devices as block_devices
from biossd.host import grouplock, hostlock
from biossd.measure import collectors, gnutime, manifest, measurement, rundir
from biossd.measure.request import Busy, Interrupted, ProfileError, ProfileRequest
from biossd.measure.trace import blocktrace

EXIT_COMMAND_NOT_FOUND = 127
EXIT_NOT_EXECUTABLE = 126
_SIGNAL_EXIT_BASE = 128


def _launch_problem(argv: Sequence[str], cwd: Path) -> tuple[int, str] | None:
    """Exit code and message if the command cannot be executed (checked before the gate, so
    the error names the command rather than the gate's shell); under ``env NAME=VALUE ...``, the
    command env runs. A relative path is the working directory's (``cwd``)."""
    if os.path.basename(argv[0]) == "env":
        rest = list(itertools.dropwhile(lambda a: "=" in a and not a.startswith("-"), argv[1:]))
        if rest and not rest[0].startswith("-"):
            argv = rest
    name = argv[0]
    path = os.path.join(cwd, name) if "/" in name else shutil.which(name)
    if path is None or not os.path.exists(path):
        return EXIT_COMMAND_NOT_FOUND, f"command not found: {name}"
    if os.path.isdir(path) or not os.access(path, os.X_OK):
        return EXIT_NOT_EXECUTABLE, f"command not executable: {name}"
    return None


def _checked(request: ProfileRequest) -> tuple[Path, list[str], str | None, Path]:
    """The request checked before anything is made: the working directory, the traced devices
    (and why none, on a file system without a block device), the run directory's final path."""
    if not request.argv:
        raise ProfileError("no command given: put it after `--`")
    if request.perf not in collectors.PERF_MODES:
        raise ProfileError(f"unknown perf mode {request.perf!r}; choose one of {collectors.PERF_MODES}")
    if request.blocktrace not in blocktrace.MODES:
        raise ProfileError(f"unknown block-trace mode {request.blocktrace!r}; choose one of {blocktrace.MODES}")
    cwd = Path(request.cwd).absolute() if request.cwd is not None else Path.cwd()
    if not cwd.is_dir():
        raise ProfileError(f"the working directory {cwd} is not a directory; nothing was run")
    try:
        traced = [block_devices.resolve(d) for d in request.devices]
    except block_devices.DeviceError as err:
        raise ProfileError(f"{err}; nothing was run") from None
    devices_note = None
    if not traced:
        try:
            traced = [block_devices.device_of_path(cwd)]
        except block_devices.DeviceError as err:
            # tmpfs, overlayfs and the like: run anyway, with no device counters, and say why.
            devices_note = f"no device traced: the working directory is on no block device ({err})"
    if request.swap_bytes and request.swap_dir is not None and not Path(request.swap_dir).is_dir():
        raise ProfileError(f"--swap-dir {request.swap_dir} is not a directory; nothing was run")
    if request.device_record is not None:
        _check_device_record(Path(request.device_record))
    try:
        target = rundir.check_target(Path(request.out_dir), request.overwrite)
    except rundir.RunDirError as err:
        raise ProfileError(f"{err}; nothing was run") from None
    return cwd, traced, devices_note, target


def _check_device_record(path: Path) -> None:
    try:
        device_body = json.loads(path.read_text())
    except FileNotFoundError:
        raise ProfileError(f"--device-record {path}: no such file; nothing was run") from None
    except (OSError, ValueError) as err:
        raise ProfileError(f"--device-record {path}: not a JSON record ({err}); give the file "
                           "`biossd device characterize` wrote; nothing was run") from None
    if not isinstance(device_body, dict):
        raise ProfileError(f"--device-record {path}: not a device record (a JSON "
                           f"{type(device_body).__name__}); nothing was run")


def run(request: ProfileRequest) -> dict[str, Any]:
    """Profile one command; returns the manifest written to ``RUN_DIR/run.json``.

    On SIGINT/SIGTERM the command's process group is terminated, every collector and the cap
    and swap are removed, no manifest is written, and :class:`Interrupted` is raised.
    """
    cwd, traced, devices_note, target = _checked(request)
    launch_problem = _launch_problem(request.argv, cwd)
    gnu_time, no_gnu_time = gnutime.find()
    state = measurement.RunState(gnu_time)
    with signals_call(state.on_signal):
        partial: Path | None = None
        try:
            with _host_lock(request, target, interrupted=state.first_signal) as lock:
                try:
                    named = rundir.partial_path(target)
                    lock.update(partial=str(named))  # recorded first: a SIGKILL after this is cleaned up
                    partial = rundir.make_partial(target, named)
                    run_ = measurement.Measurement(request, state, cwd, partial, traced, record_intent=lock.update,
                                                   no_gnu_time=no_gnu_time)
                    body = run_.measure(devices_note, launch_problem)
                    body["harness_s"] = {**request.phases_before_s, "lock_wait": round(lock.waited_s, 3),
                                         **body["harness_s"]}
                    body["host_lock"] = _lock_record(request, lock)
                    state.check()
                    body["executed_argv"] = [a.replace(str(partial), str(target)) for a in body["executed_argv"]]
                    manifest.write_manifest(partial, body)
                    try:
                        rundir.publish(partial, target, request.overwrite)
                    except rundir.RunAppeared as err:
                        raise ProfileError(str(err)) from None  # the partial is removed below
                    except rundir.RunDirError as err:
                        partial = None  # the complete run stays where the message says
                        raise ProfileError(str(err)) from None
                    partial = None
                finally:
                    # An interrupted or failed run leaves nothing: its partial directory carries
                    # biossd's marker and is removed (a second signal meanwhile is only recorded),
                    # while the lock is still held, so the next run measures none of this I/O.
                    if partial is not None:
                        rundir.remove(partial)
        except hostlock.WaitInterrupted as intr:
            raise Interrupted(intr.signum) from None
        except hostlock.HostBusy as err:
            raise Busy(str(err)) from None
        except grouplock.NotInGroup as err:
            raise ProfileError(f"{err}; nothing was run") from None
    return manifest.read_manifest(target)


def _host_lock(request: ProfileRequest, target: Path, interrupted: Callable[[], int | None]) -> Any:
    """How the run holds the host lock: a member of a group whose leader holds it, a member of a
    leaderless group that holds it shared, or alone."""
    if request.group:
        return grouplock.GroupMember(request.group, also_tidy=request.group_also_tidy)
    kwargs = dict(wait=request.wait_for_lock, owner=request.owner, interrupted=interrupted, notify=request.notify,
                  out=str(target))
    if request.shared_group:
        from biossd.host import sharedlock

        return sharedlock.SharedHold(request.shared_group, "biossd profile", **kwargs)
    return hostlock.HostLock("biossd profile", **kwargs)


def _lock_record(request: ProfileRequest, lock: Any) -> dict[str, Any]:
    """The run's record of how it held the host lock (:func:`_host_lock`)."""
    if request.group:
        return {"mode": "group-member", hostlock.GROUP_KEY: request.group, "leader_pid": (lock.leader or {}).get("pid")}
    held = {"waited_s": round(lock.waited_s, 3), "reaped_stale_holder": lock.reaped}
    if request.shared_group:
        return {"mode": "shared-group", hostlock.GROUP_KEY: request.shared_group,
                "members_at_start": lock.members_at_start, **held}
    return {"mode": "exclusive", **held}


def signal_exit_code(signum: int) -> int:
    return _SIGNAL_EXIT_BASE + signum
