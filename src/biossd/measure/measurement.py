"""One measured run, from set-up to the manifest's body (Lee, Min and Yoon 2015, §5.1): swap, the
devices' check, the cache drop and the cap; the command behind its gate with the collectors
started on it; its wait, outcome, accounting and flush; the teardown. :func:`biossd.measure.profile.run`
holds the host lock and the run directory around it."""

from __future__ import annotations

import contextlib
import datetime as dt
import os
import shutil
import signal
import subprocess
import time
import uuid
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable

from biossd.core.owners import RUN_TAG_VAR, kill_tagged, start_ticks
from biossd.host import codefiles, codeholder, dockerengine, hostfacts, hostlock, pagecache
from biossd.host import devices as block_devices
from biossd.host.cgroups import MemoryCap
from biossd.host.hdd import emulate
from biossd.host.resident import ResidentWatch
from biossd.host.slurm import scheduler
from biossd.host.swap import LoopSwap
from biossd.host.swap import backing_path as swap_backing_path
from biossd.measure import accounting, collectors, counters, devicecheck, gnutime, hostload, manifest, processes
from biossd.measure.request import Interrupted, ProfileError, ProfileRequest

#: Holds the command until the collectors are ready: reads one line from stdin (a pipe from
#: the profiler), then execs the command, in the same process, with stdin from /dev/null.
GATE_SCRIPT = 'read -r _ || exit 125; exec "$@" </dev/null'

DEVICE_RECORD = "device.json"


def _class_devices(cwd: Path) -> set[int]:
    """``st_dev`` of the run's class's own file systems (its working directory's, and the
    emulated class's mount): what a run reads there is its data, never code."""
    return {os.stat(p).st_dev for p in (cwd, emulate.mount_of(cwd)) if p is not None}


def _utc_now() -> str:
    return dt.datetime.now(dt.timezone.utc).isoformat(timespec="milliseconds")


def evict_page_cache(request: ProfileRequest, cwd: Path, traced: list[str]) -> dict[str, Any]:
    """The run starts cold on its device: the page cache evicted as ``request.evict`` says
    (:mod:`biossd.host.pagecache`) — the whole of it, or only what the run reads from its class's
    device (its working directory's files and its class's own file system; the buffers of its
    traced devices but the host's root disk's), so that code read by earlier runs stays resident."""
    if request.evict != "run":
        return pagecache.drop_all()
    roots = [cwd] + [m for m in (emulate.mount_of(cwd),) if m is not None]
    try:
        root_disk = block_devices.device_of_path(Path("/"))
    except block_devices.DeviceError:
        root_disk = None
    return pagecache.evict_run(roots, [d for d in traced if d != root_disk])


@dataclass
class RunState:
    """What a run and its signal handler share: the signals received, the command's process once
    it is started, and whether SLURM's time limit ended it (a SIGTERM then is the run's timeout,
    recorded, not an interruption)."""

    gnu_time: str | None
    received: list[int] = field(default_factory=list)
    child: subprocess.Popen[bytes] | None = None
    scheduler_timeout: bool = False

    def on_signal(self, signum: int, _frame: object) -> None:
        child = self.child
        if signum == signal.SIGTERM and child is not None and not self.received and scheduler.time_limit_reached():
            self.scheduler_timeout = True
            processes.signal_command(child.pid, signal.SIGKILL, self.gnu_time)
            return
        self.received.append(signum)
        if child is not None and child.returncode is None:
            processes.signal_command(child.pid, signal.SIGTERM, self.gnu_time)

    def first_signal(self) -> int | None:
        return self.received[0] if self.received else None

    def check(self) -> None:
        """Raise :class:`Interrupted` once a signal came."""
        if self.received:
            raise Interrupted(self.received[0])


class Measurement:
    """One measured run in its partial run directory ``out_dir``: set up (swap, device check,
    cache drop, cap), launched behind the gate with its collectors, waited for and judged, torn
    down, and described (the manifest's body). ``record_intent(swap_file=...)`` adds to the host
    lock's record what is about to be made outside the run directory, for ``biossd cleanup``
    after a SIGKILL."""

    def __init__(self, request: ProfileRequest, state: RunState, cwd: Path, out_dir: Path, traced: list[str],
                 record_intent: Callable[..., None] = lambda **_: None, no_gnu_time: str = "not asked for") -> None:
        self.request, self.state, self.cwd, self.out_dir, self.traced = request, state, cwd, out_dir, traced
        self.record_intent, self.no_gnu_time = record_intent, no_gnu_time
        self.phases = _Phases()
        self.collectors: dict[str, Any] = {}
        #: The run's tag (:data:`biossd.core.owners.RUN_TAG_VAR`) and what still carried it at the end.
        self.tag = f"{os.getpid()}-{uuid.uuid4().hex[:12]}"
        self.left_running: list[dict[str, Any]] = []
        self.container: dict[str, Any] | None = None
        self.oom_kills: int | None = None
        self.command_pid: int | None = None
        self.flush_s: float | None = None
        #: When that flush ended, on the run's clock: where its traced window ends (manifest.window_s).
        self.flush_ended_s: float | None = None
        self.timed_out = False
        self.t_command_s: float | None = None
        self.accounting: dict[str, Any] | None = None
        self.load: hostload.HostLoad | None = None
        self.host_load: dict[str, Any] = {"measured": False, "why": "the command did not start"}
        self.code: codefiles.CodeFiles | None = None
        self.code_read: dict[str, Any] = codefiles.not_asked()

    def measure(self, devices_note: str | None, launch_problem: tuple[int, str] | None) -> dict[str, Any]:
        """Set up, run the command (unless ``launch_problem`` says it cannot start), tear
        everything down; the manifest's body (not yet written). Raises :class:`Interrupted`."""
        request = self.request
        if request.device_record is not None:
            shutil.copyfile(request.device_record, self.out_dir / DEVICE_RECORD)
        command = list(request.argv)
        if request.cachegrind and launch_problem is None:
            command = counters.cachegrind_argv(self.out_dir, command)
        with contextlib.ExitStack() as stack:
            self._prepare(stack, command)
            if launch_problem is None:
                self._launch(stack)
                self._wait_and_judge()
            else:
                self.err.write((launch_problem[1] + "\n").encode())
                self.outcome, self.exit_code, self.term_signal = "failed", launch_problem[0], None
                self.wall_s = 0.0
                for name in ("rusage", "sampler", "blocktrace", "perf"):
                    self.collectors[name] = collectors.not_run("the command did not start")
            self.ended_at = _utc_now()
            self.cap_record = {**self.cap.record(), "resident": self.resident.stop()}
            if self.container is not None:
                # Docker enforced the cap on its container: its limit, OOM kill and peak, not the
                # profiler's cgroup's.
                self.cap_record.update({
                    "enforced_by": "docker", "enforced_limit_bytes": self.container.get("memory_bytes"),
                    "oom_kills": self.oom_kills, "oom_source": "docker inspect State.OOMKilled",
                    "peak_usage_bytes": self.container.get("peak_usage_bytes"), "container": self.container})
            self.swap_record = self.swap.record() if self.swap is not None else None
            self.phases.mark("stop_collectors")
            self.code_read = self._read_code(launch_problem is None)
        self.phases.mark("tear_down")
        collectors.record_after(request, self.out_dir, self.accounting, launch_problem is None, self.collectors)
        files = [manifest.file_record(self.out_dir, p) for p in sorted(self.out_dir.iterdir()) if p.is_file()]
        self.phases.mark("record")
        return self._manifest_body(devices_note, launch_problem, files)

    def _prepare(self, stack: contextlib.ExitStack, command: list[str]) -> None:
        """Swap (traced too), where the run happens and its devices' check, the cache drop, the
        cap, the command as it will be executed and its two logs."""
        request, traced = self.request, self.traced
        self.swap = None
        if request.swap_bytes:
            swap_dir = Path(request.swap_dir or self.cwd)
            planned = swap_backing_path(swap_dir)
            self.record_intent(swap_file=str(planned))
            self.swap = stack.enter_context(LoopSwap(request.swap_bytes, swap_dir, planned))
            if self.swap.device_name not in traced:
                traced.append(self.swap.device_name)
        self.state.check()
        swap = self.swap
        self.where = _where(request, self.cwd, self.out_dir, traced, swap)
        self.where["device_check"] = devicecheck.check(traced, devicecheck.expected_policies(
            self.where["emulated_storage"]["cwd"], swap.device_name if swap else None, swap.queue if swap else None))
        if not self.where["device_check"]["ok"]:
            raise ProfileError(devicecheck.problem_text(self.where["device_check"]))
        self.phases.mark("set_up")
        self.caches = (evict_page_cache(request, self.cwd, traced) if request.drop_caches
                       else {"dropped": False, "why": request.kept_caches_why})
        self.phases.mark("drop_caches")
        self.cap = stack.enter_context(MemoryCap(request.mem_bytes, request.cap_backend, no_swap=request.no_swap,
                                                 account=True))
        self.code = codefiles.CodeFiles(_class_devices(self.cwd)) if request.read_code else None
        if self.code is not None:
            stack.callback(self.code.close)
        self.resident = ResidentWatch(self.cap, request.resident_interval_s, names_under=self.cwd, code=self.code)
        self.report_file = self.out_dir / gnutime.REPORT_FILE
        timer = self.state.gnu_time
        self.executed = self.cap.wrap(gnutime.wrap(timer, self.report_file, command) if timer else command)
        self.out = stack.enter_context(open(self.out_dir / "stdout.log", "wb"))
        self.err = stack.enter_context(open(self.out_dir / "stderr.log", "wb"))
        self.started_at = _utc_now()
        self.t0 = time.monotonic()

    def _launch(self, stack: contextlib.ExitStack) -> None:
        """The gate started in the run's directory and cap, the collectors started on it, then
        the gate released: the command's first instruction runs with everything in place."""
        request, state, tag = self.request, self.state, self.tag
        if state.gnu_time:
            stack.enter_context(processes.reaping_orphans())
        gate_r, gate_w = os.pipe()
        stack.callback(_close_quietly, gate_w)
        # Every process of the command carries the run's tag: recorded before it starts (a
        # SIGKILL now leaves it to the next holder's reap), and whatever still carries it when
        # the command has ended is killed — after the session and the cap (LIFO), so this
        # finds what left both, a detached grandchild of a run without a cgroup.
        self.record_intent(**{hostlock.COMMAND_KEY: {"tag": tag}})
        stack.callback(lambda: self.left_running.extend(kill_tagged(tag)))
        try:
            child = subprocess.Popen(
                ["sh", "-c", GATE_SCRIPT, "biossd-gate", *self.executed], stdout=self.out, stderr=self.err,
                stdin=gate_r, start_new_session=True, env={**os.environ, RUN_TAG_VAR: tag}, cwd=self.cwd,
            )
        finally:
            os.close(gate_r)
        state.child = child
        if request.container_id_file is not None:  # runs after the client is killed (LIFO)
            stack.callback(dockerengine.remove, request.container_id_file)
        stack.callback(processes.kill_group, child)
        # Into the cap while the gate waits, before it starts the command (no preexec_fn: the
        # profiler's process is not copied for the gate, which a task's start pays for).
        self.cap.join(child.pid)
        # Named in the host lock's record: if this profiler is SIGKILLed, the next holder
        # kills the command's session before it measures (biossd.host.hostlock.reap).
        self.record_intent(**{hostlock.COMMAND_KEY: {"pid": child.pid, "start_ticks": start_ticks(child.pid), "tag": tag}})
        if request.container_id_file is not None:
            self.record_intent(**{hostlock.CONTAINER_KEY: {
                "cidfile": str(Path(request.container_id_file).absolute()), "docker_host": os.environ.get("DOCKER_HOST")}})
        self.command_pid = child.pid
        self.running = collectors.start(request, self.out_dir, self.traced, self.t0, child.pid, self.cap, stack,
                                        self.collectors)
        state.check()
        self.watch = (dockerengine.ContainerWatch(request.container_id_file).start()
                      if request.container_id_file is not None else None)
        self.resident.start()
        stack.callback(self.resident.stop)
        self.phases.mark("start_collectors")
        self.load = hostload.HostLoad(child.pid, emulate.server_pids, self.cap.processes).start()
        self.t_command = time.monotonic()
        os.write(gate_w, b"go\n")
        _close_quietly(gate_w)

    def _wait_and_judge(self) -> None:
        """Wait for the command; its outcome, accounting and flush; the collectors stopped."""
        request, state, child, watch = self.request, self.state, self.state.child, self.watch
        status, usages, timed_out = processes.wait(child, request.timeout_s, state.received, request.owner,
                                                   state.gnu_time,
                                                   reported=lambda: gnutime.read(self.report_file) is not None)
        self.timed_out = timed_out or state.scheduler_timeout
        self.wall_s = time.monotonic() - self.t_command
        self.load.stop()
        self.t_command_s = self.t_command - self.t0
        self.phases.skip()  # the tool's own wall time is not the harness
        if watch is not None:  # after the wall time: inspecting and removing it is not the tool's time
            peak = watch.stop()
            self.container = {**dockerengine.finish(request.container_id_file), "peak_usage_bytes": peak}
        state.check()
        report = gnutime.read(self.report_file) if state.gnu_time else None
        if report is not None:
            status = report.wait_status  # the command's own, not GNU time's 128+signal
        container = self.container
        self.oom_kills = (self.cap.stats()["oom_kills"] if container is None
                          else int(bool(container.get("oom_killed"))))
        self.outcome, self.exit_code, self.term_signal = accounting.outcome_of(status, self.oom_kills, self.timed_out)
        stderr_log = self.out_dir / "stderr.log"
        if container is not None and self.exit_code == dockerengine.DOCKER_RUN_ERROR_EXIT:
            raise ProfileError("docker run could not run the tool (exit 125: the engine's or the mount's "
                               f"failure, not the tool's): {accounting.last_line(stderr_log)}")
        if self.outcome == "failed":
            full = accounting.scratch_full(self.cwd, stderr_log)
            if full:
                raise ProfileError(full)
        self.accounting = accounting.rusage_record(usages, self.wall_s, report, self.no_gnu_time)
        if watch is not None:
            self.accounting = accounting.container_accounting(self.accounting, watch.accounting)
        self.host_load = self.load.record(self.accounting["user_s"] + self.accounting["sys_s"])
        self.phases.mark("inspect")
        self.flush_s = accounting.flush_filesystem(self.cwd)
        self.flush_ended_s = time.monotonic() - self.t0
        self.phases.mark("flush")
        for where in {self.cwd, Path(request.swap_dir or self.cwd)}:  # after the flush: it stays in the window
            gone = emulate.server_gone(where)
            if gone:
                raise ProfileError(gone)
        roots = [watch.pid] if watch is not None and watch.pid else []
        collectors.stop(self.running, self.collectors, session=child.pid,
                        attribute=collectors.attribution(request, roots), roots=roots, left=_names_under(self.cwd),
                        mapped=self.resident.mapped_names())

    def _read_code(self, ran: bool) -> dict[str, Any]:
        """A warm-up's code read whole into its cgroup once the command has ended
        (:mod:`biossd.host.codefiles`); the record, its time the harness's ``read_code`` phase."""
        if self.code is None:
            return codefiles.not_asked()
        if not ran or self.cap.path is None:
            self.code.close()
            why = "the command did not start" if not ran else "no cgroup of the run's own to charge it to"
            return {"asked": True, "files": 0, "bytes": 0, "why": why}
        request = self.request
        record = self.code.read_into(self.cap.join, lambda files: codeholder.hold(
            files, request.owner, request.labels.get("tool")))
        self.phases.mark("read_code")
        return record

    def _manifest_body(self, devices_note: str | None, launch_problem: tuple[int, str] | None,
                       files: list[dict[str, Any]]) -> dict[str, Any]:
        request = self.request
        return {
            "labels": dict(request.labels),
            "argv": list(request.argv),
            "executed_argv": self.executed,
            #: The process the profiler started: GNU time, whose child is the command (without GNU
            #: time, the command itself).
            "pid": self.command_pid,
            "cwd": str(self.cwd),
            "outcome": self.outcome,
            "exit_code": self.exit_code,
            "signal": self.term_signal,
            "error": launch_problem[1] if launch_problem else None,
            "started_at": self.started_at,
            "ended_at": self.ended_at,
            "wall_s": self.wall_s,
            "flush_s": self.flush_s,
            "flush_ended_s": None if self.flush_ended_s is None else round(self.flush_ended_s, 6),
            "command_started_s": self.t_command_s,
            #: time.monotonic() at the run's time origin: the trace's and the sampler's times, and
            #: command_started_s, count from it (an outside observer's monotonic times convert).
            "monotonic_origin_s": self.t0,
            "timeout_s": request.timeout_s,
            "timeout_source": (None if self.outcome != "timeout" else "the SLURM job's time limit"
                               if self.state.scheduler_timeout else "biossd profile --timeout"),
            "tool_version": request.tool_version,
            "container_image": request.image,
            "devices": self.traced,
            "devices_note": devices_note,
            **self.where,
            "memory_cap": self.cap_record,
            "host_load": self.host_load,
            "swap": self.swap_record,
            "page_cache": self.caches,
            "code_read": self.code_read,
            "owner": request.owner.record() if request.owner else None,
            # What the command left running once it had ended, found by the tag in its environment
            # after its session was killed and its cgroup removed (none: both held everything).
            "left_running": {"tag_variable": RUN_TAG_VAR, "tag": self.tag, "killed": self.left_running},
            "collectors": self.collectors,
            "files": files,
            "harness_s": self.phases.seconds,
        }


def _where(request: ProfileRequest, cwd: Path, out_dir: Path, traced: list[str],
           swap: LoopSwap | None) -> dict[str, Any]:
    """Where the run happens: the host, the traced devices, the mounts of its working directory
    ``cwd`` and run directory, and whether its storage (and swap) is real or emulated
    (:mod:`biossd.host.hdd.emulate`)."""
    return {
        "host": hostfacts.host_facts(),
        "device_facts": [block_devices.device_facts(name) for name in traced],
        "mounts": {"cwd": block_devices.mount_facts(cwd), "out": block_devices.mount_facts(out_dir)},
        "emulated_storage": {"cwd": emulate.run_record(cwd),
                             "swap": emulate.run_record(Path(request.swap_dir or cwd)) if swap else None},
    }


#: The files a run left in its working directory named by inode, at most this many (a tool that
#: writes thousands of temporary files keeps the walk short).
MAX_NAMED_FILES = 10_000


def _names_under(cwd: Path) -> dict[int, str]:
    """The files left under the run's working directory, by inode (path relative to it), for the
    record of what the run dirtied (:func:`biossd.measure.trace.blocktrace.dirtied`)."""
    names: dict[int, str] = {}
    for dirpath, _dirs, files in os.walk(cwd):
        for name in files:
            path = Path(dirpath) / name
            try:
                names.setdefault(path.lstat().st_ino, str(path.relative_to(cwd)))
            except OSError:
                continue
            if len(names) >= MAX_NAMED_FILES:
                return names
    return names


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


def _close_quietly(fd: int) -> None:
    with contextlib.suppress(OSError):
        os.close(fd)
