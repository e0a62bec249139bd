"""A real one-node SLURM cluster on this machine: ``biossd slurm up|down|status|env``.

Debian's SLURM 22.05 (``slurmctld``, ``slurmd``, ``slurm-client``) and MUNGE, with everything the
cluster needs kept in its own state directory ``/run/biossd/slurm/`` — its configuration, its
MUNGE key and socket, its spool, state and logs — so nothing under ``/etc/slurm`` or
``/etc/munge``, and no daemon the host already runs, is read, written or stopped. Clients find
the cluster through ``SLURM_CONF`` (``biossd slurm env`` prints it). The node is this host; its
partitions (``fast`` and ``slow`` by default, one per storage class of ``-profile test``) both hold
it. Memory is enforced by SLURM's cgroup plugins (``task/cgroup`` with ``ConstrainRAMSpace``) on
the host's cgroup v1 or v2; the record says which (``status``).

The cluster is owned like an emulated disk (:mod:`biossd.host.hdd.emulate`): by the process that
brought it up (``--owner-pid``) or by whoever takes it down by hand. Every step's intent is
recorded before the step (the daemons' pids and start times, the cgroup directories SLURM will
create that did not exist), and ``down`` — also after an interrupted ``up``, and ``biossd
cleanup`` once the owner is dead — cancels the cluster's jobs, stops exactly those daemons and
removes exactly those directories.
"""

from __future__ import annotations

import contextlib
import os
import re
import shutil
import signal
import socket
import subprocess
import time
from pathlib import Path
from typing import Any

from biossd.core import servicestate
from biossd.core.errors import BiossdError
from biossd.core.files import atomic_write_text, remove_tree
from biossd.core.owners import ProcessRef, start_ticks
from biossd.core.signals import signals_held, signals_ignored, signals_raise
from biossd.host import cgroups

STATE_DIR = Path("/run/biossd/slurm")
CONF_NAME = "slurm.conf"
CGROUP_CONF_NAME = "cgroup.conf"
DEFAULT_PARTITIONS = ("fast", "slow")
CLUSTER_NAME = "biossd"
#: What ``up`` needs on PATH (Debian: slurmctld, slurmd, slurm-client, munge).
COMMANDS = ("slurmctld", "slurmd", "sinfo", "sbatch", "squeue", "scancel", "scontrol", "munged")
START_TIMEOUT_S = 60.0
STOP_TIMEOUT_S = 30.0
_POLL_S = 0.2
MUNGE_KEY_BYTES = 1024
#: Kept back from the node's memory for the host itself (slurmd -C reports all of it).
RESERVED_MEMORY_MIB = 1024
#: The v1 controllers under which SLURM's cgroup plugins make their directories.
CGROUP_V1_CONTROLLERS = ("memory", "freezer", "cpuset", "devices", "cpuacct", "cpu", "pids", "blkio")
CGROUP_ROOT = Path("/sys/fs/cgroup")


class SlurmError(BiossdError, RuntimeError):
    """The cluster could not be brought up or taken down; the message says what and why."""


def missing_features() -> list[str]:
    """What this host lacks for the cluster (empty: nothing)."""
    missing = [f"{c} (install slurmctld slurmd slurm-client munge)" for c in COMMANDS if shutil.which(c) is None]
    if os.geteuid() != 0:
        missing.append("root (slurmd runs jobs as their users and makes cgroups)")
    return missing


def cgroup_version() -> str:
    """``v2`` on a unified hierarchy, ``v1`` with a v1 memory controller, else ``none``."""
    if (CGROUP_ROOT / "cgroup.controllers").is_file():
        return "v2"
    if (CGROUP_ROOT / "memory" / "memory.limit_in_bytes").is_file():
        return "v1"
    return "none"


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def node_line(hostname: str) -> str:
    """This node's definition from ``slurmd -C`` (CPUs, sockets, cores, threads, memory), with
    :data:`RESERVED_MEMORY_MIB` kept back for the host."""
    out = subprocess.run(["slurmd", "-C"], capture_output=True, text=True, check=True).stdout
    first = next(line for line in out.splitlines() if line.startswith("NodeName="))
    fields = dict(part.split("=", 1) for part in first.split() if "=" in part)
    memory = max(256, int(fields.get("RealMemory", "1024")) - RESERVED_MEMORY_MIB)
    keep = ("CPUs", "Boards", "SocketsPerBoard", "CoresPerSocket", "ThreadsPerCore")
    return f"NodeName={hostname} NodeAddr=127.0.0.1 " + " ".join(f"{k}={fields[k]}" for k in keep if k in fields) + \
        f" RealMemory={memory} State=UNKNOWN"


def config_text(state: dict[str, Any]) -> str:
    d = Path(state["dir"])
    v = state["cgroup"]
    enforce = v in ("v1", "v2")
    lines = [
        "# A one-node SLURM cluster made by biossd (src/biossd/host/slurm/cluster.py); removed by `biossd slurm down`.",
        f"ClusterName={CLUSTER_NAME}",
        f"SlurmctldHost={state['host']}(127.0.0.1)",
        f"SlurmctldPort={state['ctld_port']}",
        f"SlurmdPort={state['slurmd_port']}",
        "SlurmUser=root",
        "SlurmdUser=root",
        "AuthType=auth/munge",
        "CredType=cred/munge",
        f"AuthInfo=socket={d / 'munge.socket'}",
        f"StateSaveLocation={d / 'state'}",
        f"SlurmdSpoolDir={d / 'spool'}",
        f"SlurmctldPidFile={d / 'slurmctld.pid'}",
        f"SlurmdPidFile={d / 'slurmd.pid'}",
        f"SlurmctldLogFile={d / 'slurmctld.log'}",
        f"SlurmdLogFile={d / 'slurmd.log'}",
        "MpiDefault=none",
        "SwitchType=switch/none",
        "ReturnToService=2",
        "SchedulerType=sched/backfill",
        "SelectType=select/cons_tres",
        "SelectTypeParameters=CR_Core_Memory",
        f"ProctrackType={'proctrack/cgroup' if enforce else 'proctrack/linuxproc'}",
        f"TaskPlugin={'task/cgroup' if enforce else 'task/none'}",
        f"JobAcctGatherType={'jobacct_gather/cgroup' if enforce else 'jobacct_gather/linux'}",
        "AccountingStorageType=accounting_storage/none",
        # The completion record of every job (its state: COMPLETED, FAILED, OUT_OF_MEMORY, TIMEOUT...).
        "JobCompType=jobcomp/filetxt",
        f"JobCompLoc={d / 'jobcomp.log'}",
        "MinJobAge=600",
        "KillWait=10",
        "InactiveLimit=0",
        "SlurmdTimeout=60",
        "PrologFlags=Contain" if enforce else "",
        state["node"],
    ]
    for name in state["partitions"]:
        lines.append(f"PartitionName={name} Nodes={state['host']} MaxTime=INFINITE State=UP")
    return "\n".join(line for line in lines if line) + "\n"


def cgroup_conf_text(state: dict[str, Any]) -> str:
    plugin = {"v1": "cgroup/v1", "v2": "cgroup/v2"}.get(state["cgroup"], "autodetect")
    return (f"CgroupPlugin={plugin}\nConstrainRAMSpace=yes\nConstrainSwapSpace=yes\nAllowedSwapSpace=0\n"
            "ConstrainCores=no\nConstrainDevices=no\n")


def _save(state: dict[str, Any]) -> None:
    servicestate.save(state)


def load(state_dir: Path = STATE_DIR) -> dict[str, Any] | None:
    return servicestate.load(state_dir)


def env(state_dir: Path = STATE_DIR) -> dict[str, str]:
    """What a client needs to reach the cluster (``SLURM_CONF``)."""
    return {"SLURM_CONF": str(Path(state_dir) / CONF_NAME)}


def _client_env(state: dict[str, Any]) -> dict[str, str]:
    return {**os.environ, **env(Path(state["dir"]))}


def up(partitions: tuple[str, ...] = DEFAULT_PARTITIONS, owner: ProcessRef | None = None,
       state_dir: Path = STATE_DIR) -> dict[str, Any]:
    """Bring the cluster up (refused if one is up and in use; a stale one is reclaimed first)."""
    missing = missing_features()
    if missing:
        raise SlurmError("cannot run a SLURM cluster here; missing: " + "; ".join(missing))
    bad = [p for p in partitions if not re.fullmatch(r"[a-z][a-z0-9_]*", p)]
    if bad or not partitions:
        raise SlurmError(f"partition names are lower-case words; got {list(partitions) or 'none'}")
    state_dir = Path(state_dir)
    servicestate.claim(state_dir, "SLURM cluster", "biossd slurm down", down, SlurmError)
    foreign = foreign_daemons()
    if foreign:
        raise SlurmError("another SLURM runs on this host (" + ", ".join(f"{n} pid {pid}" for n, pid in foreign)
                         + "); biossd's one-node cluster would share its ports, cgroups and jobs: stop it, or use "
                         "that cluster with -profile slurm")
    host = socket.gethostname().split(".")[0]
    state: dict[str, Any] = {
        "dir": str(state_dir), "host": host, "partitions": list(partitions), "owner": owner.record() if owner else None,
        "cgroup": cgroup_version(), "ctld_port": _free_port(), "slurmd_port": _free_port(), "stage": "starting",
        "daemons": {}, "made_cgroups": [],
        # Said in every record: SLURM 22.05 cannot bind its daemons to 127.0.0.1 (docs/hosts.md).
        "listens_on": "all interfaces (SLURM has no bind address); MUNGE with this cluster's fresh key authenticates",
    }
    state_dir.mkdir(parents=True, mode=0o700)
    with signals_raise(KeyboardInterrupt):
        try:
            _save(state)
            _bring_up(state)
        except BaseException:
            with signals_ignored(), contextlib.suppress(Exception):  # a second signal must not stop the rollback
                _roll_back(state_dir, state)
            raise
    return status(state_dir)


def _roll_back(state_dir: Path, state: dict[str, Any]) -> None:
    """Undo a bring-up cut short: what the record on disk names (``down``), then every daemon
    still running from this state directory (found by its command line, which names the
    directory: one started but not yet recorded), then the directory this ``up`` made."""
    with contextlib.suppress(OSError):
        _save(state)  # the daemons recorded in memory since the last save
    down(state_dir)
    for _name, pid in _daemons_of(state_dir):
        with contextlib.suppress(ProcessLookupError):
            os.kill(pid, signal.SIGKILL)
    remove_tree(state_dir, ignore_errors=True)


def _bring_up(state: dict[str, Any]) -> None:
    d = Path(state["dir"])
    for sub in ("state", "spool"):
        (d / sub).mkdir(mode=0o700)
    key = d / "munge.key"
    fd = os.open(key, os.O_CREAT | os.O_EXCL | os.O_WRONLY, 0o400)
    with os.fdopen(fd, "wb") as handle:
        handle.write(os.urandom(MUNGE_KEY_BYTES))
    state["node"] = node_line(state["host"])
    if state["cgroup"] == "v1":
        # SLURM makes <controller>/slurm under each v1 controller; only what is not there yet is
        # ours to remove.
        # (slurm_<node> on a host whose cgroup namespace SLURM shares with others, else slurm)
        state["made_cgroups"] = [str(CGROUP_ROOT / c / name) for c in CGROUP_V1_CONTROLLERS
                                 for name in ("slurm", f"slurm_{state['host']}")
                                 if (CGROUP_ROOT / c).is_dir() and not (CGROUP_ROOT / c / name).exists()]
    atomic_write_text(d / CONF_NAME, config_text(state))
    atomic_write_text(d / CGROUP_CONF_NAME, cgroup_conf_text(state))
    _save(state)
    _start(state, "munged", ["munged", "--foreground", "--force", f"--key-file={key}", f"--socket={d / 'munge.socket'}",
                             f"--pid-file={d / 'munged.pid'}", f"--log-file={d / 'munged.log'}",
                             f"--seed-file={d / 'munged.seed'}"], ready=lambda: (d / "munge.socket").exists())
    conf = str(d / CONF_NAME)
    _start(state, "slurmctld", ["slurmctld", "-D", "-i", "-f", conf], ready=lambda: _answers(state))
    _start(state, "slurmd", ["slurmd", "-D", "-f", conf, "-N", state["host"]], ready=lambda: _node_idle(state))
    state["stage"] = "up"
    _save(state)


def _start(state: dict[str, Any], name: str, argv: list[str], ready) -> None:
    """Start one daemon and record it in one step a signal cannot split (a signal meanwhile is
    raised after the record is saved); its command line names the state directory, so a rollback
    finds it even unrecorded (:func:`_daemons_of`)."""
    d = Path(state["dir"])
    with signals_held():
        with open(d / f"{name}.out", "wb") as out:
            proc = subprocess.Popen(argv, stdout=out, stderr=out, stdin=subprocess.DEVNULL, start_new_session=True,
                                    env={**os.environ, "SLURM_CONF": str(d / CONF_NAME)})
        state["daemons"][name] = ProcessRef.of(proc.pid, f"biossd slurm {name}").record()
        _save(state)
    deadline = time.monotonic() + START_TIMEOUT_S
    while not ready():
        if proc.poll() is not None or time.monotonic() > deadline:
            log = d / f"{name}.log"
            text = (log.read_text(errors="replace") if log.is_file() else "") + \
                (d / f"{name}.out").read_text(errors="replace")
            raise SlurmError(f"{name} did not start: {text.strip()[-800:] or 'no output'}")
        time.sleep(_POLL_S)


def _answers(state: dict[str, Any]) -> bool:
    proc = subprocess.run(["scontrol", "ping"], capture_output=True, text=True, env=_client_env(state))
    return proc.returncode == 0 and "UP" in proc.stdout


def _node_idle(state: dict[str, Any]) -> bool:
    proc = subprocess.run(["sinfo", "-h", "-N", "-o", "%T"], capture_output=True, text=True, env=_client_env(state))
    return proc.returncode == 0 and any(s.strip().rstrip("*") == "idle" for s in proc.stdout.splitlines())


def status(state_dir: Path = STATE_DIR) -> dict[str, Any]:
    """The cluster's record with what is alive now; ``{"up": False}`` when there is none."""
    state = load(state_dir)
    if state is None:
        return {"up": False}
    alive = {name: bool(ProcessRef.from_record(rec) and ProcessRef.from_record(rec).alive())
             for name, rec in state["daemons"].items()}
    healthy = state.get("stage") == "up" and all(alive.values()) and _node_idle_or_busy(state)
    return {**state, "up": True, "alive": alive, "healthy": healthy,
            "memory_enforced_by": f"SLURM task/cgroup ({state['cgroup']})" if state["cgroup"] in ("v1", "v2")
            else "nothing: no cgroup memory controller"}


def _node_idle_or_busy(state: dict[str, Any]) -> bool:
    proc = subprocess.run(["sinfo", "-h", "-N", "-o", "%T"], capture_output=True, text=True, env=_client_env(state))
    return proc.returncode == 0 and any(s.strip().rstrip("*") in ("idle", "mixed", "allocated", "completing")
                                        for s in proc.stdout.splitlines())


def down(state_dir: Path = STATE_DIR) -> list[str]:
    """Cancel the cluster's jobs, stop its daemons (only those it recorded), remove the cgroup
    directories it made and its state directory. Returns what was done."""
    state_dir = Path(state_dir)
    state = load(state_dir)
    if state is None:
        return []
    done = []
    with signals_held():
        daemons = {n: ProcessRef.from_record(r) for n, r in state.get("daemons", {}).items()}
        if daemons.get("slurmctld") and daemons["slurmctld"].alive():
            cancel = subprocess.run(["scancel", "--full", "-p", ",".join(state["partitions"])], capture_output=True,
                                    text=True, env=_client_env(state))
            if cancel.returncode == 0:
                deadline = time.monotonic() + STOP_TIMEOUT_S
                while time.monotonic() < deadline and _jobs(state):
                    time.sleep(_POLL_S)
                done.append("cancelled the cluster's jobs")
            else:  # nothing to wait for: what still runs is killed through the cgroups below
                done.append(f"scancel failed ({(cancel.stderr or cancel.stdout).strip()[-200:]}); "
                            "the jobs are stopped through the cluster's cgroups")
        for name in ("slurmd", "slurmctld", "munged"):
            ref = daemons.get(name)
            if ref is not None and ref.alive():
                _stop(ref)
                done.append(f"stopped {name} (pid {ref.pid})")
        for name, pid in _daemons_of(state_dir):  # started from this directory but not recorded
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGKILL)
                done.append(f"killed {name} (pid {pid}), started from {state_dir} but not recorded")
        # A job's slurmstepd outlives slurmd, and its tasks outlive a failed scancel: whatever
        # still runs in this cluster's cgroups (and its step daemons) is killed.
        for pid in sorted(set(_stepds(state)) | set(_cgroup_pids(state))):
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGKILL)
                done.append(f"killed pid {pid}, left in the cluster's cgroups")
        deadline = time.monotonic() + STOP_TIMEOUT_S  # a killed process leaves its cgroup when it is gone
        while _cgroup_pids(state) and time.monotonic() < deadline:
            time.sleep(_POLL_S)
        for path in state.get("made_cgroups", []):
            if cgroups.remove_tree(Path(path)):
                done.append(f"removed {path}")
        remove_tree(state_dir, ignore_errors=True)
        done.append(f"removed {state_dir}")
    return done


def _jobs(state: dict[str, Any]) -> list[str]:
    proc = subprocess.run(["squeue", "-h", "-o", "%i"], capture_output=True, text=True, env=_client_env(state))
    return proc.stdout.split() if proc.returncode == 0 else []


def _processes_named(names: tuple[str, ...]) -> list[tuple[str, int]]:
    """Live processes (not zombies) whose name is one of ``names``."""
    found = []
    for proc in Path("/proc").iterdir():
        if proc.name.isdigit():
            with contextlib.suppress(OSError, ValueError):
                comm = (proc / "comm").read_text().strip()
                if comm in names and start_ticks(int(proc.name)) is not None:
                    found.append((comm, int(proc.name)))
    return found


#: The daemons a cluster starts; each one's command line names its state directory (munged's key
#: and socket, slurmctld's and slurmd's -f configuration).
DAEMONS = ("munged", "slurmctld", "slurmd")


def _daemons_of(state_dir: Path) -> list[tuple[str, int]]:
    """The daemons running from ``state_dir``, by their command lines (recorded or not)."""
    needle = (str(Path(state_dir)) + "/").encode()
    found = []
    for name, pid in _processes_named(DAEMONS):
        with contextlib.suppress(OSError):
            if any(needle in arg for arg in Path(f"/proc/{pid}/cmdline").read_bytes().split(b"\0")):
                found.append((name, pid))
    return found


def foreign_daemons(state_dir: Path = STATE_DIR) -> list[tuple[str, int]]:
    """SLURM daemons on this host that are not this cluster's (another installation's)."""
    state = load(state_dir) or {}
    ours = {ProcessRef.from_record(r).pid for r in state.get("daemons", {}).values() if ProcessRef.from_record(r)}
    ours |= set(_stepds(state)) if state else set()
    return [(name, pid) for name, pid in _processes_named(("slurmctld", "slurmd")) if pid not in ours]


def _stepds(state: dict[str, Any]) -> list[int]:
    """This cluster's step daemons. slurmstepd carries no spool path on its command line: it is
    found by the cgroups this cluster's slurmd made (``/proc/PID/cgroup`` under one of
    ``made_cgroups``), or, where it does carry one, by this cluster's spool."""
    spool = str(Path(state["dir"]) / "spool").encode()
    made = [Path(p) for p in state.get("made_cgroups", [])]
    # As /proc/PID/cgroup names them: the path below the controller's mount (v1: /slurm_<host>).
    roots = {"/" + p.name for p in made}
    found = []
    for name, pid in _processes_named(("slurmstepd",)):
        with contextlib.suppress(OSError):
            cmd = Path(f"/proc/{pid}/cmdline").read_bytes().split(b"\0")
            groups = [line.split(":", 2)[-1] for line in Path(f"/proc/{pid}/cgroup").read_text().splitlines()]
            if any(spool in c for c in cmd) or any(g == r or g.startswith(r + "/") for g in groups for r in roots):
                found.append(pid)
    return found


def _cgroup_pids(state: dict[str, Any]) -> list[int]:
    """Every process in the cgroup trees this cluster's slurmd made (jobs' tasks, step daemons)."""
    pids: set[int] = set()
    for root in state.get("made_cgroups", []):
        # os.walk, not rglob: a job's cgroup that SLURM removes meanwhile is skipped, not an error.
        for directory, _, names in os.walk(root):
            if "cgroup.procs" in names:
                with contextlib.suppress(OSError, ValueError):
                    pids.update(int(line) for line in (Path(directory) / "cgroup.procs").read_text().split())
    return sorted(pids - {os.getpid()})


def _stop(ref: ProcessRef) -> None:
    """SIGTERM to the daemon's process group, SIGKILL after :data:`STOP_TIMEOUT_S`; reaped when it
    is this process's child (``up`` and ``down`` in one process, as the tests do). A daemon whose
    parent has exited is its init's to reap."""
    with contextlib.suppress(ProcessLookupError):
        os.killpg(ref.pid, signal.SIGTERM)
    deadline = time.monotonic() + STOP_TIMEOUT_S
    while ref.alive() and time.monotonic() < deadline:
        time.sleep(_POLL_S)
    if ref.alive():
        with contextlib.suppress(ProcessLookupError):
            os.killpg(ref.pid, signal.SIGKILL)
    with contextlib.suppress(ChildProcessError, OSError):
        os.waitpid(ref.pid, 0)


def leftover(state_dir: Path = STATE_DIR) -> dict[str, Any] | None:
    """The cluster's record if its owner is dead (``biossd cleanup`` takes it down)."""
    return servicestate.leftover(state_dir)
