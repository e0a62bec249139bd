"""A Docker engine of biossd's own on this host, brought up and taken down like its SLURM cluster.

``biossd docker up`` starts Debian's ``dockerd`` with everything of its own: a private socket,
exec root and pid file under ``/run/biossd/docker``, a data root (its image store, kept between
``up``\\ s like podman's) under ``/var/lib/biossd/docker``, its own ``daemon.json`` (never
``/etc/docker``), no iptables rules, no bridge (containers run with ``--network none``), the
cgroupfs driver with every container under the ``biossd-docker`` cgroup. The storage driver is
``overlay2`` where the data root's file system takes it, else ``vfs`` (recorded). Its state —
owner (pid, start ticks), the daemon, its command line written *before* it starts — is in
``state.json``; ``down`` stops it under held signals; ``biossd cleanup`` takes down an engine
whose owner died. With ``DOCKER_HOST`` set, ``up`` uses that engine (the user's own) and never
starts, stops or changes it.

A run in Docker (:mod:`biossd.study.catalogue.containers`) is a ``docker run`` whose container is outside
the profiler's process tree: the cap is Docker's (``--memory``; ``--memory-swap -1`` so it pages
to the class's swap like a native run), recorded as ``external`` with the limit Docker enforced,
its OOM kill read from the container's state and its peak from the container's own cgroup
(:func:`finish`)."""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import signal
import subprocess
import threading
import time
from pathlib import Path
from typing import Any

from biossd.core import servicestate
from biossd.core.errors import BiossdError
from biossd.core.files import atomic_write_text, remove_tree
from biossd.core.owners import ProcessRef
from biossd.core.signals import signals_held
from biossd.host import cgroups

STATE_DIR = Path("/run/biossd/docker")
DATA_ROOT = Path("/var/lib/biossd/docker")
SOCKET_NAME = "docker.sock"
#: The cgroup (under each v1 controller, or the unified root) that holds biossd's containers.
CGROUP_PARENT = "biossd-docker"
#: Tried in this order; the first the data root's file system takes is used.
STORAGE_DRIVERS = ("overlay2", "vfs")
START_TIMEOUT_S = 60.0
STOP_TIMEOUT_S = 30.0
_POLL_S = 0.2
CGROUP_ROOT = Path("/sys/fs/cgroup")
#: A memory cgroup's peak: v1's, v2's.
PEAK_FILES = ("memory.max_usage_in_bytes", "memory.peak")
#: How often the watch looks for the container until it is seen running (its id, then its process).
FIND_INTERVAL_S = 0.01
#: How often a running container's cgroup peak and accounting are read.
WATCH_INTERVAL_S = 0.1
#: CPU time and page faults of a cgroup, v1 (``cpuacct.stat`` in clock ticks, ``memory.stat``'s
#: hierarchical counters) and v2 (``cpu.stat`` in microseconds, ``memory.stat``).
_CPU_V1, _CPU_V2, _MEMORY_STAT = "cpuacct.stat", "cpu.stat", "memory.stat"
_US_PER_S = 1e6
#: ``docker run``'s own failures (the daemon's, the mount's), never a tool's exit status.
DOCKER_RUN_ERROR_EXIT = 125


class DockerError(BiossdError, RuntimeError):
    """The engine could not be brought up, reached or taken down; the message says why."""


def missing_features() -> list[str]:
    """What this host lacks for an engine of biossd's own (empty: nothing)."""
    missing = [f"{c} (Debian's docker.io: `install/bootstrap.sh docker`)" for c in ("dockerd", "docker")
               if shutil.which(c) is None]
    if os.geteuid() != 0:
        missing.append("root (dockerd makes cgroups, mounts and namespaces)")
    return missing


def socket_path(state_dir: Path = STATE_DIR) -> Path:
    return Path(state_dir) / SOCKET_NAME


def _save(state: dict[str, Any]) -> None:
    servicestate.save(state)


def load(state_dir: Path = STATE_DIR) -> dict[str, Any] | None:
    return servicestate.load(state_dir)


def env(state_dir: Path = STATE_DIR) -> dict[str, str]:
    """What a client needs to reach the engine: ``DOCKER_HOST`` (the user's own, when that is
    the one ``up`` recorded)."""
    state = load(state_dir)
    if state is not None and state.get("external"):
        return {"DOCKER_HOST": state["docker_host"]}
    return {"DOCKER_HOST": f"unix://{socket_path(state_dir)}"}


def _client(docker_host: str, *args: str, timeout: float = 60) -> subprocess.CompletedProcess[str]:
    return subprocess.run(["docker", *args], capture_output=True, text=True, timeout=timeout,
                          env={**os.environ, "DOCKER_HOST": docker_host})


def answers(docker_host: str) -> str | None:
    """The engine's version if one answers at ``docker_host``, else ``None``."""
    try:
        proc = _client(docker_host, "version", "--format", "{{.Server.Version}}", timeout=10)
    except (OSError, subprocess.TimeoutExpired):
        return None
    return proc.stdout.strip() if proc.returncode == 0 and proc.stdout.strip() else None


def daemon_argv(state: dict[str, Any], driver: str) -> list[str]:
    """``dockerd`` with every path its own, no network changes, containers under :data:`CGROUP_PARENT`."""
    d = Path(state["dir"])
    return ["dockerd", "--config-file", str(d / "daemon.json"), "--data-root", state["data_root"],
            "--exec-root", str(d / "exec"), "--pidfile", str(d / "dockerd.pid"),
            "-H", f"unix://{socket_path(d)}", "--iptables=false", "--ip6tables=false", "--bridge=none",
            "--ip-forward=false", "--ip-masq=false", "--storage-driver", driver,
            "--exec-opt", "native.cgroupdriver=cgroupfs", "--cgroup-parent", CGROUP_PARENT]


def up(owner: ProcessRef | None = None, state_dir: Path = STATE_DIR, data_root: Path = DATA_ROOT,
       drivers: tuple[str, ...] = STORAGE_DRIVERS) -> dict[str, Any]:
    """Bring the engine up for ``owner`` (or record the user's, when ``DOCKER_HOST`` names one)."""
    state_dir = Path(state_dir)
    servicestate.claim(state_dir, "Docker engine", "biossd docker down", down, DockerError)
    given = os.environ.get("DOCKER_HOST")
    if given:
        version = answers(given)
        if version is None:
            raise DockerError(f"DOCKER_HOST={given} names no Docker engine that answers; start it, or unset "
                              "DOCKER_HOST for an engine of biossd's own")
        state_dir.mkdir(parents=True, mode=0o700)
        state = {"dir": str(state_dir), "external": True, "docker_host": given, "version": version,
                 "owner": owner.record() if owner else None, "stage": "up"}
        _save(state)
        return status(state_dir)
    missing = missing_features()
    if missing:
        raise DockerError("cannot run a Docker engine here; missing: " + "; ".join(missing))
    state_dir.mkdir(parents=True, mode=0o700)
    state = {"dir": str(state_dir), "external": False, "data_root": str(Path(data_root)),
             "owner": owner.record() if owner else None, "stage": "starting", "daemon": None, "tried": {}}
    _save(state)
    try:
        with signals_held():  # a signal now would leave a daemon no record names
            Path(data_root).mkdir(parents=True, exist_ok=True, mode=0o700)
            atomic_write_text(state_dir / "daemon.json", "{}\n")
        for driver in drivers:
            why = _start(state, driver)
            if why is None:
                break
            state["tried"][driver] = why
            _save(state)
        else:
            raise DockerError("dockerd did not start with any storage driver: "
                              + "; ".join(f"{d}: {w}" for d, w in state["tried"].items()))
    except BaseException:
        with contextlib.suppress(Exception):
            down(state_dir)
        raise
    return status(state_dir)


def _start(state: dict[str, Any], driver: str) -> str | None:
    """Start dockerd with ``driver``; ``None`` once it answers, else why it did not."""
    d = Path(state["dir"])
    argv = daemon_argv(state, driver)
    with signals_held():
        state.update({"driver": driver, "argv": argv, "daemon": None})
        _save(state)  # named before it starts: found by its command line if killed right after
        with open(d / "dockerd.log", "ab") as log:
            proc = subprocess.Popen(argv, stdout=log, stderr=log, stdin=subprocess.DEVNULL, start_new_session=True)
        state["daemon"] = ProcessRef.of(proc.pid, "biossd dockerd").record()
        _save(state)
    host = f"unix://{socket_path(d)}"
    deadline = time.monotonic() + START_TIMEOUT_S
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            tail = (d / "dockerd.log").read_text(errors="replace").strip().splitlines()[-3:]
            state["daemon"] = None
            _save(state)
            return f"exited {proc.returncode}: " + " | ".join(tail)
        version = answers(host)
        if version is not None:
            # Its containers' cgroups go under <dockerd's own cgroup>/biossd-docker: those not
            # there before are the engine's to remove.
            made = [str(d / CGROUP_PARENT) for d in cgroup_dirs(proc.pid) if not (d / CGROUP_PARENT).exists()]
            state.update({"version": version, "docker_host": host, "stage": "up", "cgroups": made})
            _save(state)
            return None
        time.sleep(_POLL_S)
    _stop_daemon(state)
    return f"no answer within {START_TIMEOUT_S:.0f} s"


def _pids_with_argv(argv: list[str]) -> list[int]:
    want = "\0".join(argv).encode()
    found = []
    for proc in Path("/proc").iterdir():
        if proc.name.isdigit():
            with contextlib.suppress(OSError):
                if (proc / "cmdline").read_bytes().rstrip(b"\0") == want:
                    found.append(int(proc.name))
    return found


def _stop_daemon(state: dict[str, Any]) -> list[str]:
    """SIGTERM to the recorded dockerd (it stops its containers and its containerd), SIGKILL to
    its process group after :data:`STOP_TIMEOUT_S`; one killed before its pid was recorded is
    found by its command line."""
    done = []
    ref = ProcessRef.from_record(state.get("daemon"))
    pids = [ref.pid] if ref is not None and ref.alive() else _pids_with_argv(state.get("argv") or [])
    for pid in pids:
        with contextlib.suppress(ProcessLookupError):
            os.kill(pid, signal.SIGTERM)
        deadline = time.monotonic() + STOP_TIMEOUT_S
        while Path(f"/proc/{pid}").exists() and time.monotonic() < deadline:
            with contextlib.suppress(ChildProcessError):
                if os.waitpid(pid, os.WNOHANG)[0] == pid:
                    break
            time.sleep(_POLL_S)
        with contextlib.suppress(ProcessLookupError):
            os.killpg(pid, signal.SIGKILL)
        done.append(f"stopped dockerd (pid {pid})")
    return done


def _unmount_under(root: Path) -> list[str]:
    """Unmount what the engine left mounted under ``root`` (deepest first): its exec root's
    namespaces and its data root's layers."""
    from biossd.core.files import mounts_under

    ours = sorted(mounts_under(root), key=len, reverse=True)
    for mount in ours:
        subprocess.run(["umount", "-l", mount], capture_output=True)
    return [f"unmounted {m}" for m in ours]


def down(state_dir: Path = STATE_DIR) -> list[str]:
    """Stop the engine biossd started (only that one; the user's own is only forgotten), unmount
    what it left, remove its containers' cgroup and its state; its image store is kept."""
    state_dir = Path(state_dir)
    state = load(state_dir)
    if state is None:
        return []
    done = []
    with signals_held():
        if not state.get("external"):
            done += _stop_daemon(state)
            done += _unmount_under(state_dir)
            if state.get("data_root"):
                done += _unmount_under(Path(state["data_root"]))
            done += _remove_cgroups([Path(p) for p in state.get("cgroups", [])])
        else:
            done.append(f"left the user's Docker engine at {state['docker_host']} as it was")
        remove_tree(state_dir, ignore_errors=True)
        done.append(f"removed {state_dir}")
    return done


def _remove_cgroups(parents: list[Path]) -> list[str]:
    """Remove the engine's container cgroups (``parents``, recorded at ``up``)."""
    return [f"removed {p}" for p in parents if cgroups.remove_tree(p)]


def status(state_dir: Path = STATE_DIR) -> dict[str, Any]:
    """The engine's record with what answers now; ``{"up": False}`` when there is none."""
    state = load(state_dir)
    if state is None:
        return {"up": False}
    version = answers(state.get("docker_host") or env(state_dir)["DOCKER_HOST"])
    return {**state, "up": True, "answers": version is not None, "healthy": version is not None}


def leftover(state_dir: Path = STATE_DIR) -> dict[str, Any] | None:
    """The engine's record if its owner is dead (``biossd cleanup`` takes it down)."""
    return servicestate.leftover(state_dir)


# --- one run in a container ------------------------------------------------------------------------

class ContainerWatch:
    """While a ``docker run --cidfile`` runs: its container's id (once Docker wrote it) and its
    cgroup's peak memory, read every :data:`WATCH_INTERVAL_S` (the cgroup goes when the
    container ends, before anyone could read it afterwards)."""

    def __init__(self, cidfile: Path) -> None:
        self.cidfile = Path(cidfile)
        self.peak_usage_bytes: int | None = None
        #: The tool's own accounting, from its container's cgroup as last read (the ``docker``
        #: client the profiler waits for is not the tool): :func:`cgroup_accounting`'s fields.
        self.accounting: dict[str, float] | None = None
        #: The container's first process on the host (``None``: not seen running), whose tree
        #: is the tool's: its block requests are the run's.
        self.pid: int | None = None
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._loop, name="biossd-container-watch", daemon=True)

    def start(self) -> "ContainerWatch":
        self._thread.start()
        return self

    def _loop(self) -> None:
        cid, peak_file, dirs = "", None, []
        # Until the container is found running, look often: a short tool's container may be gone
        # within a few of the reading intervals.
        while not self._stop.wait(WATCH_INTERVAL_S if peak_file is not None else FIND_INTERVAL_S):
            if not cid:
                with contextlib.suppress(OSError):
                    cid = self.cidfile.read_text().strip()
                if not cid:
                    continue
            if peak_file is None:
                self.pid, dirs = _container_cgroup_dirs(cid)
                peak_file = next((d / name for d in dirs for name in PEAK_FILES if (d / name).is_file()), None)
                if peak_file is None:
                    continue
            with contextlib.suppress(OSError, ValueError):
                self.peak_usage_bytes = max(int(peak_file.read_text()), self.peak_usage_bytes or 0)
            read = cgroup_accounting(dirs)
            if read:
                self.accounting = {**read, "read_interval_s": WATCH_INTERVAL_S}

    def stop(self) -> int | None:
        self._stop.set()
        self._thread.join(timeout=5)
        return self.peak_usage_bytes


def finish(cidfile: Path, docker_host: str | None = None) -> dict[str, Any]:
    """After a ``docker run --cidfile`` ended: what Docker enforced and saw (the limit, the swap
    limit, whether its OOM killer ended the container), then the container removed. ``{}`` when
    no container was made (the run failed before)."""
    try:
        cid = Path(cidfile).read_text().strip()
    except OSError:
        return {}
    if not cid:
        return {}
    host = docker_host or os.environ.get("DOCKER_HOST") or ""
    call = (lambda *a: _client(host, *a)) if host else (lambda *a: subprocess.run(
        ["docker", *a], capture_output=True, text=True, timeout=60))
    inspected = call("inspect", cid)
    record: dict[str, Any] = {"container_id": cid}
    if inspected.returncode == 0:
        body = json.loads(inspected.stdout)[0]
        host_config, state = body.get("HostConfig", {}), body.get("State", {})
        record.update({"memory_bytes": host_config.get("Memory") or None,
                       "memory_swap_bytes": host_config.get("MemorySwap"),
                       "oom_killed": bool(state.get("OOMKilled")), "exit_code": state.get("ExitCode"),
                       "image_id": body.get("Image"), "cgroup_parent": host_config.get("CgroupParent")})
    else:
        record["inspect_error"] = inspected.stderr.strip()[-300:]
    version = call("version", "--format", "{{.Server.Version}}")
    record["engine_version"] = version.stdout.strip() if version.returncode == 0 else None
    call("rm", "-f", cid)
    return record


def remove(cidfile: Path, docker_host: str | None = None) -> str | None:
    """Remove the container ``cidfile`` names, if any (a run stopped by a signal: the container is
    Docker's child, not the profiler's, and would run on), through the engine at ``docker_host``
    (default: this process's ``DOCKER_HOST``). Returns the id of the container removed."""
    with contextlib.suppress(OSError, subprocess.TimeoutExpired):
        cid = Path(cidfile).read_text().strip()
        if cid:
            env = {**os.environ, "DOCKER_HOST": docker_host} if docker_host else None
            done = subprocess.run(["docker", "rm", "-f", cid], capture_output=True, timeout=60, env=env)
            return cid[:12] if done.returncode == 0 else None
    return None


def cgroup_dirs(pid: int) -> list[Path]:
    """The cgroup directories of process ``pid``: one per v1 controller hierarchy (named by its
    first controller), or the unified hierarchy's."""
    out = []
    for line in Path(f"/proc/{pid}/cgroup").read_text().splitlines():
        _, controllers, rel = line.split(":", 2)
        if not controllers:  # the unified hierarchy: alone (v2), or beside v1 (hybrid)
            base = CGROUP_ROOT / "unified" if (CGROUP_ROOT / "unified").is_dir() else CGROUP_ROOT
        else:
            first = controllers.split(",")[0]
            base = CGROUP_ROOT / first.removeprefix("name=")
        if base.is_dir():
            out.append(base / rel.lstrip("/"))
    return out


def _container_cgroup_dirs(cid: str) -> tuple[int | None, list[Path]]:
    """The running container's first process on the host and its cgroup directories, found from
    that process's ``/proc/PID/cgroup``; ``(None, [])`` until it runs."""
    proc = subprocess.run(["docker", "inspect", "--format", "{{.State.Pid}}", cid], capture_output=True, text=True)
    pid = proc.stdout.strip()
    if proc.returncode != 0 or not pid.isdigit() or pid == "0":
        return None, []
    with contextlib.suppress(OSError, ValueError):
        return int(pid), cgroup_dirs(int(pid))
    return int(pid), []


def _key_values(path: Path) -> dict[str, int]:
    out = {}
    for line in path.read_text().splitlines():
        key, _, value = line.partition(" ")
        if value.strip().lstrip("-").isdigit():
            out[key] = int(value)
    return out


def cgroup_accounting(dirs: list[Path]) -> dict[str, float]:
    """CPU time (user, system) and page faults (major, minor) of the processes of a cgroup, from
    the cgroup's own counters in ``dirs`` (its directory in each hierarchy): cgroup v1's
    ``cpuacct.stat`` (clock ticks) and ``memory.stat`` (``total_pgmajfault``: the cgroup and its
    descendants), or v2's ``cpu.stat`` and ``memory.stat``. Only what could be read is returned."""
    out: dict[str, float] = {}
    for directory in dirs:
        # v1's cpu controller has a cpu.stat too (throttling counts, no times): only v2's is read.
        with contextlib.suppress(OSError, ValueError, KeyError):
            if (directory / _CPU_V1).is_file():
                ticks = _key_values(directory / _CPU_V1)
                hz = os.sysconf("SC_CLK_TCK")
                out.update(user_s=ticks["user"] / hz, sys_s=ticks["system"] / hz)
            elif (directory / _CPU_V2).is_file() and "user_usec" in _key_values(directory / _CPU_V2):
                usec = _key_values(directory / _CPU_V2)
                out.update(user_s=usec["user_usec"] / _US_PER_S, sys_s=usec["system_usec"] / _US_PER_S)
        with contextlib.suppress(OSError, ValueError, KeyError):
            if (directory / _MEMORY_STAT).is_file():
                stat = _key_values(directory / _MEMORY_STAT)
                major = stat.get("total_pgmajfault", stat.get("pgmajfault"))
                minor = stat.get("total_pgfault", stat.get("pgfault"))
                if major is not None and minor is not None:
                    out.update(major_faults=major, minor_faults=max(minor - major, 0))
    return out
