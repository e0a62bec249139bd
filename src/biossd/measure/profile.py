"""Run one command under a memory cap and keep its raw measurements (Lee, Min and Yoon 2015, §5.1).

The paper measured each program with ``time -eUSKFW``, SAR, blktrace and VTune. This module
runs the command, applies the memory cap (:mod:`biossd.host.cgroups`), optionally gives it swap on a
loop device (:mod:`biossd.host.swap`), and writes one run directory:

``RUN_DIR/``
    ``stdout.log``, ``stderr.log``   the command's own output
    ``rusage.json``                  process accounting of the whole process tree (``time``'s job)
    ``gnu_time.txt``                 GNU time's report: the command's own peak RSS and how it ended
    ``sampler.csv``                  1 Hz system counters, like SAR (:mod:`biossd.measure.sampler`)
    ``blocktrace.tsv.gz``            one row per block request (:mod:`biossd.measure.blocktrace`)
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

import contextlib
import ctypes
import datetime as dt
import errno
import itertools
import json
import os
import resource
import shutil
import signal
import subprocess
import time
import uuid
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Sequence

from biossd.core.errors import BiossdError
from biossd.core.owners import RUN_TAG_VAR, ProcessRef, kill_tagged, start_ticks
from biossd.core.signals import signals_call
from biossd.host import devices as block_devices
from biossd.host import dockerengine, hostfacts, hostlock
from biossd.host.cgroups import RESIDENT_INTERVAL_S, MemoryCap, ResidentWatch
from biossd.host.hdd import emulate
from biossd.host.slurm import scheduler
from biossd.host.swap import LoopSwap
from biossd.host.swap import backing_path as swap_backing_path
from biossd.measure import blocktrace, counters, devicecheck, gnutime, manifest, processes, rundir
from biossd.measure.sampler import DEFAULT_INTERVAL_S, Sampler

#: ``ru_inblock``/``ru_oublock`` count 512-byte units on Linux (getrusage(2)).
RUSAGE_BLOCK_BYTES = 512
EXIT_COMMAND_NOT_FOUND = 127
EXIT_NOT_EXECUTABLE = 126
_SIGNAL_EXIT_BASE = 128
DROP_CACHES = Path("/proc/sys/vm/drop_caches")
_DROP_ALL = "3"
#: Holds the command until the collectors are ready: reads one line from stdin (a pipe from
#: the profiler), then execs the command, in the same process, with stdin from /dev/null.
GATE_SCRIPT = 'read -r _ || exit 125; exec "$@" </dev/null'
#: perf stat: ``auto`` (hardware events where the host has a PMU, else software ones), ``pmu``
#: (only where the host has a PMU: without one perf counts only what process accounting already
#: gives — CPU time, page faults, context switches — and a run that needs no more, a pipeline's
#: short task, saves perf's start), ``off``.
PERF_MODES = ("auto", "pmu", "off")
#: Why perf did not run under ``pmu`` on a host without one.
NO_PMU_WHY = ("this host has no PMU (no hardware counters): perf stat would count only software events, which the "
              "process accounting records (CPU time, page faults, context switches)")
DEVICE_RECORD = "device.json"


class ProfileError(BiossdError, RuntimeError):
    """The run could not be started; the message says what to fix."""


class Busy(ProfileError):
    """Another measured run holds the host lock and the run was told not to wait."""

    exit_status = hostlock.EXIT_BUSY


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
    #: Why the page cache was not dropped, for the record when ``drop_caches`` is false.
    kept_caches_why: str = "disabled"
    overwrite: bool = False
    #: Block devices to trace (``/dev/vda``, ``vda`` or ``254:0``); default: the one holding
    #: the current directory. A swap area made for the run is traced too.
    devices: Sequence[str] = ()
    sample_interval_s: float = DEFAULT_INTERVAL_S
    #: How often the run's resident memory is read (:class:`biossd.host.cgroups.ResidentWatch`).
    resident_interval_s: float = RESIDENT_INTERVAL_S
    #: Swap for the run: this many bytes on a loop device over a file in ``swap_dir``.
    swap_bytes: int | None = None
    swap_dir: Path | None = None
    blocktrace: str = "auto"
    perf: str = "auto"
    cachegrind: bool = False
    #: Kill the command after this many seconds (outcome ``timeout``).
    timeout_s: float | None = None
    #: Provenance recorded as given: the tool's version and its container image reference.
    tool_version: str | None = None
    image: str | None = None
    #: ``biossd device characterize`` record of the storage's device, copied into the run as
    #: ``device.json`` (Butil divides by its bandwidth).
    device_record: Path | None = None
    #: Cap memory + swap at the cap (the run may not swap; see :class:`MemoryCap`).
    no_swap: bool = False
    #: Wait for the host lock (``False``: refuse at once when another measured run holds it).
    wait_for_lock: bool = True
    #: The process this run works for (e.g. the Nextflow session): if it dies, the run stops
    #: as if interrupted, and its record names it.
    owner: ProcessRef | None = None
    #: Notes on waiting for the host lock go here (default: stderr).
    notify: Any = None
    #: A declared concurrent group's token (the shared-device experiment): the run takes no host lock of its own but
    #: runs only while the group's leader holds it (:class:`biossd.host.hostlock.GroupMember`).
    group: str | None = None
    #: A leaderless group's token: the run holds the host lock shared with the group's other
    #: members, none of which outlives the others (a pipeline's tasks in SLURM jobs on one node,
    #: :class:`biossd.host.sharedlock.SharedHold`).
    shared_group: str | None = None
    #: A run whose device others may share (a pipeline's task, beside others or in its
    #: container): its requests are attributed by its process tree — its container's included —
    #: as a lone run's are (else a group member's or a container's trace is its device's, as seed
    #: 004's members each trace a device of their own and the study's runs hold the host alone).
    attribute_in_group: bool = False
    #: The command is a ``docker run --cidfile`` of this file: the tool runs in Docker's
    #: container, outside the profiler's cgroup; Docker's cap, OOM kill and peak are recorded
    #: (:mod:`biossd.host.dockerengine`), and ``docker run``'s own failure is a harness error.
    container_id_file: Path | None = None
    #: tracefs instances made ready by a long-lived owner (a pipeline session's leader,
    #: :class:`biossd.host.tracefs.InstancePool`): the block trace claims one of them before
    #: making its own, sparing a short run the kernel's cost of making and removing one.
    trace_pool: Sequence[Path] = ()
    #: Seconds the caller spent on this run before the profiler started (e.g. ``{"stage": 0.8}``
    #: for copying the input into scratch), recorded with the profiler's own phases in the
    #: manifest's ``harness_s``.
    phases_before_s: dict[str, float] = field(default_factory=dict)


def _utc_now() -> str:
    return dt.datetime.now(dt.timezone.utc).isoformat(timespec="milliseconds")


def drop_page_cache() -> dict[str, Any]:
    """``sync`` and drop the page cache, dentries and inodes so the run starts cold."""
    os.sync()
    try:
        DROP_CACHES.write_text(_DROP_ALL)
    except OSError as err:
        return {"dropped": False, "why": f"cannot write {DROP_CACHES}: {err.strerror} (needs root)"}
    return {"dropped": True, "why": None}


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


def _outcome(status: int, oom_kills: int | None, timed_out: bool) -> tuple[str, int | None, int | None]:
    """(outcome, exit code, terminating signal) from a wait status and the cap's OOM count."""
    exit_code = os.waitstatus_to_exitcode(status)
    sig = -exit_code if exit_code < 0 else None
    code = exit_code if exit_code >= 0 else None
    if oom_kills:
        return "oom", code, sig
    if timed_out:
        return "timeout", code, sig
    return ("ok" if exit_code == 0 else "failed"), code, sig


def _launch_problem(argv: Sequence[str]) -> tuple[int, str] | None:
    """Exit code and message if the command cannot be executed (checked before the gate, so
    the error names the command rather than the gate's shell); under ``env NAME=VALUE ...``, the
    command env runs."""
    if os.path.basename(argv[0]) == "env":
        rest = list(itertools.dropwhile(lambda a: "=" in a and not a.startswith("-"), argv[1:]))
        if rest and not rest[0].startswith("-"):
            argv = rest
    name = argv[0]
    path = name if "/" in name else shutil.which(name)
    if path is None or not os.path.exists(path):
        return EXIT_COMMAND_NOT_FOUND, f"command not found: {name}"
    if os.path.isdir(path) or not os.access(path, os.X_OK):
        return EXIT_NOT_EXECUTABLE, f"command not executable: {name}"
    return None


def _not_run(why: str) -> dict[str, Any]:
    return {"ran": False, "why": why, "files": []}


def _traced_devices(names: Sequence[str]) -> dict[tuple[int, int], str]:
    out = {}
    for name in names:
        major, minor = (int(x) for x in Path(f"/sys/class/block/{name}/dev").read_text().split(":"))
        out[(major, minor)] = name
    return out


def run(request: ProfileRequest) -> dict[str, Any]:
    """Profile one command; returns the manifest written to ``RUN_DIR/run.json``.

    On SIGINT/SIGTERM the command's process group is terminated, every collector and the cap
    and swap are removed, no manifest is written, and :class:`Interrupted` is raised.
    """
    if not request.argv:
        raise ProfileError("no command given: put it after `--`")
    if request.perf not in PERF_MODES:
        raise ProfileError(f"unknown perf mode {request.perf!r}; choose one of {PERF_MODES}")
    if request.blocktrace not in blocktrace.MODES:
        raise ProfileError(f"unknown block-trace mode {request.blocktrace!r}; choose one of {blocktrace.MODES}")
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
    if request.swap_bytes and request.swap_dir is not None and not Path(request.swap_dir).is_dir():
        raise ProfileError(f"--swap-dir {request.swap_dir} is not a directory; nothing was run")
    if request.device_record is not None:
        try:
            device_body = json.loads(Path(request.device_record).read_text())
        except FileNotFoundError:
            raise ProfileError(f"--device-record {request.device_record}: no such file; nothing was run") from None
        except (OSError, ValueError) as err:
            raise ProfileError(f"--device-record {request.device_record}: not a JSON record ({err}); give the file "
                               "`biossd device characterize` wrote; nothing was run") from None
        if not isinstance(device_body, dict):
            raise ProfileError(f"--device-record {request.device_record}: not a device record (a JSON "
                               f"{type(device_body).__name__}); nothing was run")
    try:
        target = rundir.check_target(Path(request.out_dir), request.overwrite)
    except rundir.RunDirError as err:
        raise ProfileError(f"{err}; nothing was run") from None
    launch_problem = _launch_problem(request.argv)

    received: list[int] = []
    child: list[subprocess.Popen[bytes]] = []
    #: SLURM's time limit arrived as SIGTERM: the run's timeout, recorded, not an interruption.
    scheduler_timeout: list[int] = []

    gnu_time, no_gnu_time = gnutime.find()

    def on_signal(signum: int, _frame: object) -> None:
        if signum == signal.SIGTERM and child and not received and scheduler.time_limit_reached():
            scheduler_timeout.append(signum)
            processes.signal_command(child[0].pid, signal.SIGKILL, gnu_time)
            return
        received.append(signum)
        if child and child[0].returncode is None:
            processes.signal_command(child[0].pid, signal.SIGTERM, gnu_time)

    with signals_call(on_signal):
        partial: Path | None = None
        try:
            lock_cm = _host_lock(request, target, interrupted=lambda: received[0] if received else None)
            with lock_cm as lock:
                try:
                    named = rundir.partial_path(target)
                    lock.update(partial=str(named))  # recorded first: a SIGKILL after this is cleaned up
                    partial = rundir.make_partial(target, named)
                    body = _measure(request, partial, traced, devices_note, launch_problem, received, child,
                                    scheduler_timeout, record_intent=lock.update, gnu_time=(gnu_time, no_gnu_time))
                    body["harness_s"] = {**request.phases_before_s, "lock_wait": round(lock.waited_s, 3),
                                         **body["harness_s"]}
                    body["host_lock"] = _lock_record(request, lock)
                    if received:
                        raise Interrupted(received[0])
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
        except hostlock.NotInGroup as err:
            raise ProfileError(f"{err}; nothing was run") from None
    return manifest.read_manifest(target)


def _measure(request: ProfileRequest, out_dir: Path, traced: list[str], devices_note: str | None,
             launch_problem: tuple[int, str] | None, received: list[int],
             child_box: list[subprocess.Popen[bytes]],
             scheduler_timeout: list[int] | None = None,
             record_intent: Callable[..., None] = lambda **_: None,
             gnu_time: tuple[str | None, str] = (None, "not asked for")) -> dict[str, Any]:
    """Set up the cap, swap and collectors, run the command, tear everything down; returns
    the manifest's body (not yet written). Raises :class:`Interrupted` on a signal.
    ``record_intent(swap_file=...)`` adds to the host lock's record what is about to be made
    outside the run directory, for ``biossd cleanup`` after a SIGKILL; ``gnu_time`` is
    :func:`biossd.measure.gnutime.find`'s answer (the command then runs under it)."""
    phases = _Phases()
    if request.device_record is not None:
        shutil.copyfile(request.device_record, out_dir / DEVICE_RECORD)
    container = None
    command = list(request.argv)
    if request.cachegrind and launch_problem is None:
        command = counters.cachegrind_argv(out_dir, command)
    collectors: dict[str, Any] = {}
    #: The run's tag (:data:`biossd.core.owners.RUN_TAG_VAR`) and what still carried it at the end.
    tag = f"{os.getpid()}-{uuid.uuid4().hex[:12]}"
    left_running: list[dict[str, Any]] = []
    with contextlib.ExitStack() as stack:
        swap = None
        if request.swap_bytes:
            swap_dir = Path(request.swap_dir or Path.cwd())
            planned = swap_backing_path(swap_dir)
            record_intent(swap_file=str(planned))
            swap = stack.enter_context(LoopSwap(request.swap_bytes, swap_dir, planned))
            if swap.device_name not in traced:
                traced.append(swap.device_name)
        if received:
            raise Interrupted(received[0])
        where = _where(request, out_dir, traced, swap)
        where["device_check"] = devicecheck.check(traced, devicecheck.expected_policies(
            where["emulated_storage"]["cwd"], swap.device_name if swap else None, swap.queue if swap else None))
        if not where["device_check"]["ok"]:
            raise ProfileError(devicecheck.problem_text(where["device_check"]))
        phases.mark("set_up")
        caches = drop_page_cache() if request.drop_caches else {"dropped": False, "why": request.kept_caches_why}
        phases.mark("drop_caches")
        cap = stack.enter_context(MemoryCap(request.mem_bytes, request.cap_backend, no_swap=request.no_swap,
                                            account=True))
        resident = ResidentWatch(cap, request.resident_interval_s)
        timer, no_timer = gnu_time
        report_file = out_dir / gnutime.REPORT_FILE
        executed = cap.wrap(gnutime.wrap(timer, report_file, command) if timer else command)
        out = stack.enter_context(open(out_dir / "stdout.log", "wb"))
        err = stack.enter_context(open(out_dir / "stderr.log", "wb"))
        started_at = _utc_now()
        t0 = time.monotonic()
        timed_out = False
        command_pid = None
        flush_s = None
        if launch_problem is not None:
            err.write((launch_problem[1] + "\n").encode())
            outcome, exit_code, term_signal = "failed", launch_problem[0], None
            wall_s, t_command_s, accounting = 0.0, None, None
            for name in ("rusage", "sampler", "blocktrace", "perf"):
                collectors[name] = _not_run("the command did not start")
        else:
            if timer:
                stack.enter_context(processes.reaping_orphans())
            gate_r, gate_w = os.pipe()
            stack.callback(_close_quietly, gate_w)
            # Every process of the command carries the run's tag: recorded before it starts (a
            # SIGKILL now leaves it to the next holder's reap), and whatever still carries it when
            # the command has ended is killed — after the session and the cap (LIFO), so this
            # finds what left both, a detached grandchild of a run without a cgroup.
            record_intent(**{hostlock.COMMAND_KEY: {"tag": tag}})
            stack.callback(lambda: left_running.extend(kill_tagged(tag)))
            try:
                child = subprocess.Popen(
                    ["sh", "-c", GATE_SCRIPT, "biossd-gate", *executed], stdout=out, stderr=err,
                    stdin=gate_r, start_new_session=True, env={**os.environ, RUN_TAG_VAR: tag},
                )
            finally:
                os.close(gate_r)
            child_box.append(child)
            if request.container_id_file is not None:  # runs after the client is killed (LIFO)
                stack.callback(dockerengine.remove, request.container_id_file)
            stack.callback(processes.kill_group, child)
            # Into the cap while the gate waits, before it starts the command (no preexec_fn: the
            # profiler's process is not copied for the gate, which a task's start pays for).
            cap.join(child.pid)
            # Named in the host lock's record: if this profiler is SIGKILLed, the next holder
            # kills the command's session before it measures (biossd.host.hostlock.reap).
            record_intent(**{hostlock.COMMAND_KEY: {"pid": child.pid, "start_ticks": start_ticks(child.pid), "tag": tag}})
            if request.container_id_file is not None:
                record_intent(**{hostlock.CONTAINER_KEY: {"cidfile": str(Path(request.container_id_file).absolute()),
                                                          "docker_host": os.environ.get("DOCKER_HOST")}})
            command_pid = child.pid
            running = _start_collectors(request, out_dir, traced, t0, child.pid, cap, stack, collectors)
            if received:
                raise Interrupted(received[0])
            watch = (dockerengine.ContainerWatch(request.container_id_file).start()
                     if request.container_id_file is not None else None)
            resident.start()
            stack.callback(resident.stop)
            phases.mark("start_collectors")
            t_command = time.monotonic()
            os.write(gate_w, b"go\n")
            _close_quietly(gate_w)
            status, usages, timed_out = processes.wait(child, request.timeout_s, received, request.owner, timer,
                                                     reported=lambda: gnutime.read(report_file) is not None)
            timed_out = timed_out or bool(scheduler_timeout)
            wall_s = time.monotonic() - t_command
            t_command_s = t_command - t0
            phases.skip()  # the tool's own wall time is not the harness
            if watch is not None:  # after the wall time: inspecting and removing it is not the tool's time
                peak = watch.stop()
                container = {**dockerengine.finish(request.container_id_file), "peak_usage_bytes": peak}
            if received:
                raise Interrupted(received[0])
            report = gnutime.read(report_file) if timer else None
            if report is not None:
                status = report.wait_status  # the command's own, not GNU time's 128+signal
            oom_kills = cap.stats()["oom_kills"] if container is None else int(bool(container.get("oom_killed")))
            outcome, exit_code, term_signal = _outcome(status, oom_kills, timed_out)
            if container is not None and exit_code == dockerengine.DOCKER_RUN_ERROR_EXIT:
                raise ProfileError("docker run could not run the tool (exit 125: the engine's or the mount's "
                                   f"failure, not the tool's): {_last_line(out_dir / 'stderr.log')}")
            if outcome == "failed":
                full = _scratch_full(Path.cwd(), out_dir / "stderr.log")
                if full:
                    raise ProfileError(full)
            accounting = rusage_record(usages, wall_s, report, no_timer)
            if watch is not None:
                accounting = container_accounting(accounting, watch.accounting)
            phases.mark("inspect")
            flush_s = flush_filesystem(Path.cwd())
            phases.mark("flush")
            roots = [watch.pid] if watch is not None and watch.pid else []
            _stop_collectors(running, collectors, session=child.pid, attribute=_attribution(request, roots),
                             roots=roots)
        ended_at = _utc_now()
        cap_record = {**cap.record(), "resident": resident.stop()}
        if launch_problem is None and container is not None:
            # Docker enforced the cap on its container: its limit, OOM kill and peak, not the
            # profiler's cgroup's.
            cap_record.update({"enforced_by": "docker", "enforced_limit_bytes": container.get("memory_bytes"),
                               "oom_kills": oom_kills, "oom_source": "docker inspect State.OOMKilled",
                               "peak_usage_bytes": container.get("peak_usage_bytes"), "container": container})
        swap_record = swap.record() if swap is not None else None
        phases.mark("stop_collectors")
    phases.mark("tear_down")

    _record_after(request, out_dir, accounting, launch_problem is None, collectors)
    files = [manifest.file_record(out_dir, p) for p in sorted(out_dir.iterdir()) if p.is_file()]
    phases.mark("record")
    return {
        "labels": dict(request.labels),
        "argv": list(request.argv),
        "executed_argv": executed,
        #: The process the profiler started: GNU time, whose child is the command (without GNU
        #: time, the command itself).
        "pid": command_pid,
        "cwd": os.getcwd(),
        "outcome": outcome,
        "exit_code": exit_code,
        "signal": term_signal,
        "error": launch_problem[1] if launch_problem else None,
        "started_at": started_at,
        "ended_at": ended_at,
        "wall_s": wall_s,
        "flush_s": flush_s,
        "command_started_s": t_command_s,
        #: time.monotonic() at the run's time origin: the trace's and the sampler's times, and
        #: command_started_s, count from it (an outside observer's monotonic times convert).
        "monotonic_origin_s": t0,
        "timeout_s": request.timeout_s,
        "timeout_source": (None if outcome != "timeout" else "the SLURM job's time limit" if scheduler_timeout
                           else "biossd profile --timeout"),
        "tool_version": request.tool_version,
        "container_image": request.image,
        "devices": traced,
        "devices_note": devices_note,
        **where,
        "memory_cap": cap_record,
        "swap": swap_record,
        "page_cache": caches,
        "owner": request.owner.record() if request.owner else None,
        # What the command left running once it had ended, found by the tag in its environment
        # after its session was killed and its cgroup removed (none: both held everything).
        "left_running": {"tag_variable": RUN_TAG_VAR, "tag": tag, "killed": left_running},
        "collectors": collectors,
        "files": files,
        "harness_s": phases.seconds,
    }


def _where(request: ProfileRequest, out_dir: Path, traced: list[str], swap: LoopSwap | None) -> dict[str, Any]:
    """Where the run happens: the host, the traced devices, the mounts of its working directory
    and run directory, and whether its storage (and swap) is real or emulated
    (:mod:`biossd.host.hdd.emulate`)."""
    return {
        "host": hostfacts.host_facts(),
        "device_facts": [block_devices.device_facts(name) for name in traced],
        "mounts": {"cwd": block_devices.mount_facts(Path.cwd()), "out": block_devices.mount_facts(out_dir)},
        "emulated_storage": {"cwd": emulate.run_record(Path.cwd()),
                             "swap": emulate.run_record(Path(request.swap_dir or Path.cwd())) if swap else None},
    }


@dataclass
class _Collectors:
    """The collectors running beside the command (``None``: not running, why in the record)."""

    perf: counters.PerfStat | None
    tracer: Any
    trace_notes: Sequence[str]
    sampler: Sampler | None


def _start_collectors(request: ProfileRequest, out_dir: Path, traced: list[str], t0: float, pid: int,
                      cap: MemoryCap, stack: contextlib.ExitStack, collectors: dict[str, Any]) -> _Collectors:
    """perf on the gate process ``pid``, the block trace of the ``traced`` devices and the
    sampler, each aborted by ``stack`` if the run ends early; one that cannot start is recorded
    as not run. perf starts first and is waited for last: its start overlaps the others'."""
    perf = _start_perf(request, out_dir, pid, collectors)
    if perf is not None:
        stack.callback(perf.abort)
    tracer, trace_notes = _start_blocktrace(request, out_dir, traced, t0, collectors)
    if tracer is not None:
        stack.callback(tracer.abort)
    sampler: Sampler | None = Sampler(out_dir / "sampler.csv", traced, cap.usage_bytes, request.sample_interval_s)
    try:
        sampler.start(t0)
        stack.callback(sampler.stop)
    except OSError as exc:
        collectors["sampler"] = _not_run(f"could not start: {exc}")
        sampler = None
    return _Collectors(_perf_counting(perf, collectors), tracer, trace_notes, sampler)


def _host_lock(request: ProfileRequest, target: Path, interrupted: Callable[[], int | None]) -> Any:
    """How the run holds the host lock: a member of a group whose leader holds it, a member of a
    leaderless group that holds it shared, or alone."""
    if request.group:
        return hostlock.GroupMember(request.group)
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


def _attribution(request: ProfileRequest, roots: list[int] = ()) -> str | None:
    """Why a run's block requests are not attributed to processes (``None``: they are). A tool in
    Docker's container is attributed when its container was seen running (``roots``: its first
    process, whose tree is the tool's) and the run is one whose device others may share (a
    pipeline's task); else its trace is its device's."""
    if request.group and not request.attribute_in_group:
        return "a concurrent group's members share the device by design"
    if request.container_id_file is not None and not (roots and request.attribute_in_group):
        return ("the tool runs in Docker's container, outside the profiler's process tree"
                + ("" if roots else " (its first process was not seen running)"))
    return None


def _stop_collectors(running: _Collectors, collectors: dict[str, Any], session: int,
                     attribute: str | None = None, roots: list[int] = ()) -> None:
    """Each running collector stopped (after the flush: the trace holds the tool's writeback)
    and its record kept; the block trace's record names the requests of processes other than
    the command's (:func:`biossd.measure.blocktrace.foreign_issuers`, its ``session`` leader's
    tree), asked before the session is killed — unless ``attribute`` says why not."""
    if running.perf is not None:
        collectors["perf"] = _collect(running.perf.stop)
    if running.sampler is not None:
        running.sampler.stop()
        collectors["sampler"] = running.sampler.record()
    if running.tracer is not None:
        collectors["blocktrace"] = _collect(running.tracer.stop, notes=running.trace_notes)
        if collectors["blocktrace"].get("ran"):
            collectors["blocktrace"]["foreign"] = (
                blocktrace.foreign_issuers(running.tracer.writer, session, roots) if attribute is None else
                {"pids": {}, "requests": 0, "attributed_by": None, "why": f"not attributed: {attribute}"})
            collectors["blocktrace"]["throttle"] = blocktrace.throttled(
                running.tracer.writer, session if attribute is None else None, roots)
            collectors["blocktrace"]["sync"] = blocktrace.sync_waits(
                running.tracer.writer, time.monotonic() - running.tracer.writer.t0_s,
                session if attribute is None else None, roots)


def _record_after(request: ProfileRequest, out_dir: Path, accounting: dict[str, Any] | None, started: bool,
                  collectors: dict[str, Any]) -> None:
    """What is recorded once everything is torn down: the process accounting, and the cachegrind
    probe's record (or why there is none)."""
    if accounting is not None:
        manifest.atomic_write_text(out_dir / "rusage.json", json.dumps(accounting, indent=2) + "\n")
        collectors["rusage"] = {"ran": True, "why": None, "files": ["rusage.json"]}
    if request.cachegrind:
        collectors["cachegrind"] = (counters.cachegrind_record(out_dir) if started
                                    else _not_run("the command did not start"))
    else:
        collectors["cachegrind"] = _not_run("opt-in: pass --cachegrind (slow; small inputs)")


class _Phases:
    """The profiler's own time around the command, phase by phase (seconds, in the manifest's
    ``harness_s``): :meth:`mark` closes the phase that ran since the last mark under a name."""

    def __init__(self) -> None:
        self.seconds: dict[str, float] = {}
        self._last = time.monotonic()

    def mark(self, name: str) -> None:
        now = time.monotonic()
        self.seconds[name] = round(self.seconds.get(name, 0.0) + now - self._last, 4)
        self._last = now

    def skip(self) -> None:
        """What ran since the last mark is not the harness's (the command itself)."""
        self._last = time.monotonic()


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


def _last_line(log: Path) -> str:
    """The last non-empty line a command wrote to ``log`` (or a note that it wrote none)."""
    try:
        lines = [line for line in log.read_text(errors="replace").splitlines() if line.strip()]
    except OSError:
        lines = []
    return lines[-1] if lines else "it wrote nothing on stderr"


def _scratch_full(cwd: Path, stderr_log: Path) -> str | None:
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


def _close_quietly(fd: int) -> None:
    with contextlib.suppress(OSError):
        os.close(fd)


def _start_blocktrace(request: ProfileRequest, out_dir: Path, traced: list[str], t0: float,
                      collectors: dict[str, Any]):
    tracer, notes = blocktrace.start(request.blocktrace, out_dir, _traced_devices(traced), t0, request.trace_pool)
    if tracer is None:
        collectors["blocktrace"] = _not_run("; ".join(notes) or "no tracer available")
    return tracer, notes


def _start_perf(request: ProfileRequest, out_dir: Path, pid: int, collectors: dict[str, Any]):
    if request.perf == "off":
        collectors["perf"] = _not_run("disabled (--perf off)")
        return None
    if request.perf == "pmu" and not counters.has_pmu():
        collectors["perf"] = _not_run(NO_PMU_WHY)
        return None
    perf = counters.PerfStat(out_dir)
    try:
        perf.start(pid)
    except counters.CounterError as err:
        collectors["perf"] = _not_run(str(err))
        return None
    return perf


def _perf_counting(perf: counters.PerfStat | None, collectors: dict[str, Any]) -> counters.PerfStat | None:
    """``perf`` once it counts; ``None`` (and why, in ``collectors``) when it did not start."""
    if perf is None:
        return None
    try:
        perf.wait_counting()
    except counters.CounterError as err:
        collectors["perf"] = _not_run(str(err))
        return None
    return perf


def _collect(stop, notes: Sequence[str] = ()) -> dict[str, Any]:
    """A collector's record from its ``stop``; a failure is recorded, not raised."""
    try:
        record = stop()
    except Exception as err:
        return {"ran": False, "why": f"failed during the run: {err}", "files": []}
    if notes:
        record["passed_over"] = list(notes)
    return record


def signal_exit_code(signum: int) -> int:
    return _SIGNAL_EXIT_BASE + signum
