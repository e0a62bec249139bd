"""Memory caps for profiled runs: cgroup v1, cgroup v2, an external cap, or none.

The paper ran each program on a machine with 1 GB (4 GB for GATK) of RAM (Lee, Min and Yoon 2015, §5.1).
biossd reproduces that with a cgroup memory limit on *RAM only*: swap stays allowed, so an
over-sized program pages as it would on a small machine instead of being killed at the cap.

Backends
--------
``cgroup-v1``  writes ``memory.limit_in_bytes`` in a child of the caller's v1 memory cgroup
               (``memory.memsw.*`` untouched, so swap is not capped).
``cgroup-v2``  writes ``memory.max`` (and ``memory.swap.max = max``) in a cgroup below the
               unified root; needs root. Built for users' hosts — not testable on this VM, whose
               memory controller is bound to the v1 hierarchy.
``systemd``    cgroup v2 without root: the command runs under ``systemd-run --user --scope
               -p MemoryMax=<cap> -p MemorySwapMax=infinity`` (systemd makes and removes the
               scope). OOM kills are read from the enclosing slice's ``memory.events``, before
               and after, so a kill elsewhere in that slice during the run is counted too (the
               manifest says so). Not testable on this VM (no systemd user manager).
``external``   the cap is already enforced by SLURM or a container engine: it is recorded, no
               second cap is added. What was enforced is read from the cgroups enclosing the
               profiler (SLURM's job and step), each from the caller's up to the root: the
               smallest limit among them (``enforced_limit_bytes``) and the OOM kills counted in
               any of them during the run — so a job step SLURM's cgroup killed for memory is
               ``oom``, not ``failed``.
``none``       no cap (``--mem none``). As root, the run still gets a cgroup of its own with no
               limit (``account``), so that its resident memory is measured as a capped run's.

**Resident memory** (:meth:`MemoryCap.resident_parts`): what a program holds in RAM is every one
of its processes' (wrappers, MPI daemons, ``time`` itself), so it is read from the run's cgroup,
not from one process's ``ru_maxrss``: the cgroup's anonymous, mapped-file and shared-memory pages
(:data:`RESIDENT_KEYS`) — not the page cache of the files it only reads; its peak over a run is
:class:`biossd.host.resident.ResidentWatch`'s. The sizing rule's floor F is its peak on an
uncapped run (:mod:`biossd.study.sizing.rule`).

Every cgroup made here is removed on exit from the context manager, whatever happened; leftovers
of killed runs are named ``biossd-*`` and found by :func:`find_leftovers`.
"""

from __future__ import annotations

import contextlib
import errno
import os
import shutil
import signal
import time
from dataclasses import dataclass, field
from pathlib import Path

from biossd.core.errors import BiossdError
from biossd.core.owners import is_owned_name, owned_name, owner_alive

CGROUP_ROOT = Path("/sys/fs/cgroup")
V1_MEMORY_ROOT = CGROUP_ROOT / "memory"
CGROUP_PREFIX = "biossd-"
BACKENDS = ("auto", "cgroup-v1", "cgroup-v2", "systemd", "external", "none")
#: The smallest cap any run may have: below it not even the shell and GNU time around a tool
#: start. Each tool's own floor is measured (the sizing rule, biossd.study.sizing.rule), and a
#: catalogue entry may ask for more with ``min_mem`` (a JVM).
MIN_CAP_BYTES = 2 << 20
#: A cap no host has (1 PiB): one above it cannot be meant, and would be no cap at all.
MAX_CAP_BYTES = 1 << 50
SYSTEMD_SLICE = "app.slice"
_EMPTY_WAIT_S = 5.0
_POLL_S = 0.05
#: The memory.stat fields whose sum is a cgroup's resident memory, by hierarchy: cgroup v1's
#: hierarchical totals (``total_rss`` is anonymous memory), v2's own (:mod:`biossd.host.resident`
#: reads them over a run).
RESIDENT_KEYS = {"cgroup-v1": ("total_rss", "total_mapped_file", "total_shmem"),
                 "cgroup-v2": ("anon", "file_mapped", "shmem")}
#: The names of a resident peak's parts (anonymous, file-mapped, shared), in the order of
#: :data:`RESIDENT_KEYS`.
RESIDENT_PARTS = ("anon_bytes", "file_mapped_bytes", "shmem_bytes")


class CapError(BiossdError, RuntimeError):
    """A memory cap that cannot be set up; the message names what is missing."""


def _v1_self_path() -> Path | None:
    """The caller's cgroup in the v1 memory hierarchy, or ``None`` if there is none."""
    try:
        lines = Path("/proc/self/cgroup").read_text().splitlines()
    except OSError:
        return None
    for line in lines:
        _, controllers, rel = line.split(":", 2)
        if "memory" in controllers.split(","):
            return V1_MEMORY_ROOT / rel.lstrip("/")
    return None


def _v2_root() -> Path | None:
    """The unified hierarchy if it has the memory controller (pure v2 hosts), else ``None``."""
    controllers = CGROUP_ROOT / "cgroup.controllers"
    if controllers.is_file() and "memory" in controllers.read_text().split():
        return CGROUP_ROOT
    return None


def detect_backend() -> str:
    """The backend ``auto`` resolves to on this host."""
    if _v2_root() is not None:
        if os.geteuid() == 0:
            return "cgroup-v2"
        if shutil.which("systemd-run"):
            return "systemd"
        raise CapError(
            "cgroup v2 caps without root need systemd-run (a systemd user manager with the memory "
            "controller delegated); run as root, with --mem none, or --cap-backend external"
        )
    v1 = _v1_self_path()
    if v1 is not None and (v1 / "memory.limit_in_bytes").exists():
        return "cgroup-v1"
    raise CapError(
        "no usable memory cgroup: neither a cgroup v2 hierarchy with the memory controller at "
        f"{CGROUP_ROOT} nor a cgroup v1 memory hierarchy at {V1_MEMORY_ROOT}; run with --mem none "
        "or --cap-backend external if a scheduler already caps memory"
    )


@dataclass
class MemoryCap:
    """A memory cap around one profiled run; use as a context manager.

    ``limit_bytes`` is ``None`` for no cap. After the run, :meth:`stats` reads the OOM-kill
    count and peak usage that the backend saw.
    """

    limit_bytes: int | None
    backend: str = "auto"
    #: Forbid swap too (memory + swap capped at ``limit_bytes``): an over-sized program is
    #: killed at the cap even on a host that has swap. Default: swap allowed, as the paper's
    #: machines paged.
    no_swap: bool = False
    #: Without a cap, still run in a cgroup of its own with no limit (root only; else none), so
    #: that the run's resident memory can be read (:class:`ResidentWatch`).
    account: bool = False
    #: The hierarchy of the cgroup made (``cgroup-v1``/``cgroup-v2``), capped or only accounted.
    hierarchy: str | None = field(default=None, init=False)
    path: Path | None = field(default=None, init=False)
    unit: str | None = field(default=None, init=False)
    _slice_ooms_before: int | None = field(default=None, init=False)
    _outside_ooms_before: dict[Path, int] = field(default_factory=dict, init=False)

    def __post_init__(self) -> None:
        if self.backend not in BACKENDS:
            raise CapError(f"unknown cap backend {self.backend!r}; choose one of {BACKENDS}")
        if self.limit_bytes is None:
            self.backend = "none"
        elif self.backend == "auto":
            self.backend = detect_backend()

    # -- lifecycle ---------------------------------------------------------------------------
    def __enter__(self) -> "MemoryCap":
        name = owned_name(CGROUP_PREFIX)
        if self.backend == "none":
            if self.account:
                self._account_only(name)
            return self
        if self.backend == "cgroup-v1":
            parent = _v1_self_path()
            if parent is None:
                raise CapError(f"no cgroup v1 memory hierarchy at {V1_MEMORY_ROOT}")
            self.path = parent / name
            self._mkdir()
            self.hierarchy = "cgroup-v1"
            try:
                (self.path / "memory.limit_in_bytes").write_text(str(self.limit_bytes))
                if self.no_swap:
                    memsw = self.path / "memory.memsw.limit_in_bytes"
                    if not memsw.exists():
                        raise CapError("--no-swap needs swap accounting in the v1 memory cgroup "
                                       "(memory.memsw.*; boot with swapaccount=1)")
                    memsw.write_text(str(self.limit_bytes))
            except BaseException:
                self._remove()
                raise
        elif self.backend == "external":
            self._outside_ooms_before = {p: _oom_kills(p) for p in enclosing_cgroups()}
        elif self.backend == "systemd":
            if shutil.which("systemd-run") is None:
                raise CapError("the systemd backend needs systemd-run, which is not installed")
            self.unit = f"{name}.scope"
            self._slice_ooms_before = _keyed(self._slice_events()).get("oom_kill")
        elif self.backend == "cgroup-v2":
            root = _v2_root()
            if root is None:
                raise CapError(f"no cgroup v2 memory controller at {CGROUP_ROOT}")
            if os.geteuid() != 0:
                raise CapError(
                    "cgroup v2 caps need root (or run under `systemd-run --scope -p MemoryMax=` "
                    "and pass --cap-backend external)"
                )
            self.path = root / name
            self._mkdir()
            self.hierarchy = "cgroup-v2"
            try:
                (self.path / "memory.max").write_text(str(self.limit_bytes))
                swap_max = self.path / "memory.swap.max"
                if swap_max.exists():
                    swap_max.write_text("0" if self.no_swap else "max")
                elif self.no_swap:
                    raise CapError(f"--no-swap needs memory.swap.max in {self.path} (swap accounting)")
            except BaseException:
                self._remove()
                raise
        return self

    def __exit__(self, *exc: object) -> None:
        self._remove()

    def _account_only(self, name: str) -> None:
        """A cgroup with no limit for an uncapped run, where this host allows one without asking."""
        if os.geteuid() != 0:
            return
        v1, v2 = _v1_self_path(), _v2_root()
        parent = v2 if v2 is not None else v1 if v1 is not None and (v1 / "memory.limit_in_bytes").exists() else None
        if parent is None:
            return
        self.path = parent / name
        try:
            self.path.mkdir()
        except OSError:
            self.path = None
            return
        self.hierarchy = "cgroup-v2" if v2 is not None else "cgroup-v1"

    def _mkdir(self) -> None:
        assert self.path is not None
        try:
            self.path.mkdir()
        except PermissionError:
            raise CapError(
                f"cannot create cgroup {self.path}: permission denied — run as root, or use "
                "--mem none"
            ) from None

    def _remove(self) -> None:
        if self.path is not None:
            remove_cgroup(self.path)

    # -- use -----------------------------------------------------------------------------------
    def wrap(self, argv: list[str]) -> list[str]:
        """The command line that runs ``argv`` under this cap (changed only by ``systemd``)."""
        if self.backend != "systemd":
            return list(argv)
        assert self.unit is not None and self.limit_bytes is not None
        return systemd_run_argv(self.limit_bytes, self.unit, user=os.geteuid() != 0) + list(argv)

    def _slice_events(self) -> Path:
        user = "" if os.geteuid() == 0 else f"user.slice/user-{os.getuid()}.slice/user@{os.getuid()}.service/"
        return CGROUP_ROOT / f"{user}{SYSTEMD_SLICE}" / "memory.events"

    def join(self, pid: int | None = None) -> None:
        """Move process ``pid`` (default: the calling one) into the cap: a command's first process,
        before it starts what it runs (its children are born in the cap)."""
        if self.path is not None:
            (self.path / "cgroup.procs").write_text(str(os.getpid() if pid is None else pid))

    def usage_bytes(self) -> int | None:
        """Current memory usage of the cgroup (``None`` when there is no cgroup)."""
        if self.path is None:
            return None
        name = "memory.usage_in_bytes" if self.hierarchy == "cgroup-v1" else "memory.current"
        return _read_int(self.path / name)

    def resident_bytes(self) -> int | None:
        """The cgroup's resident memory now (:data:`RESIDENT_KEYS`; ``None`` without a cgroup)."""
        parts = self.resident_parts()
        return sum(parts.values()) if parts else None

    def resident_parts(self) -> dict[str, int] | None:
        """The cgroup's resident memory now by part (:data:`RESIDENT_PARTS`; ``None`` without a cgroup)."""
        if self.path is None or self.hierarchy is None:
            return None
        stat = _keyed(self.path / "memory.stat")
        if not stat:
            return None
        return {part: stat.get(k, 0) for part, k in zip(RESIDENT_PARTS, RESIDENT_KEYS[self.hierarchy])}

    def processes(self) -> list[int]:
        """The processes in the cgroup now (none without one)."""
        return _cgroup_pids(self.path) if self.path is not None else []

    def stats(self) -> dict[str, int | None]:
        """OOM kills and peak memory usage seen by the cgroup (``None`` when not known)."""
        if self.backend == "systemd":
            after = _keyed(self._slice_events()).get("oom_kill")
            before = self._slice_ooms_before
            kills = None if after is None or before is None else after - before
            return {"oom_kills": kills, "peak_usage_bytes": None}
        if self.backend == "external":
            chain = enclosing_cgroups()
            if not chain:
                return {"oom_kills": None, "peak_usage_bytes": None}
            kills = sum(max(0, _oom_kills(p) - self._outside_ooms_before.get(p, 0)) for p in chain)
            return {"oom_kills": kills, "peak_usage_bytes": _peak(chain[0])}
        if self.path is None or self.backend == "none":
            return {"oom_kills": None, "peak_usage_bytes": None}
        if self.backend == "cgroup-v1":
            control = _keyed(self.path / "memory.oom_control")
            peak = _read_int(self.path / "memory.max_usage_in_bytes")
            return {"oom_kills": control.get("oom_kill"), "peak_usage_bytes": peak}
        events = _keyed(self.path / "memory.events")
        return {"oom_kills": events.get("oom_kill"), "peak_usage_bytes": _read_int(self.path / "memory.peak")}

    def record(self) -> dict[str, object]:
        """What the run's manifest says about its cap."""
        return {
            "backend": self.backend,
            "limit_bytes": self.limit_bytes,
            "cgroup": str(self.path) if self.path else None,
            "systemd_unit": self.unit,
            "accounted_in": str(self.path) if self.path and self.backend == "none" else None,
            "oom_source": f"{self._slice_events()} (whole slice)" if self.backend == "systemd" else None,
            "swap_capped": self.no_swap,
            **self.stats(),
            **(self._outside_record() if self.backend == "external" else {}),
        }

    def _outside_record(self) -> dict[str, object]:
        """The enclosing cgroups and the limit they enforce (``None``: none is limited)."""
        chain = enclosing_cgroups()
        limits = [x for x in (_limit(p) for p in chain) if x is not None]
        return {"enclosing_cgroups": [str(p) for p in chain], "enforced_limit_bytes": min(limits) if limits else None}


def systemd_run_argv(limit_bytes: int, unit: str, user: bool) -> list[str]:
    """``systemd-run`` arguments that run a command in a transient scope capped at
    ``limit_bytes`` of RAM with swap uncapped; the command follows."""
    return [
        "systemd-run", *(["--user"] if user else []), "--scope", "--quiet", "--collect",
        f"--unit={unit}", f"--slice={SYSTEMD_SLICE}", f"--property=MemoryMax={limit_bytes}",
        "--property=MemorySwapMax=infinity", "--",
    ]


#: A v1 memory limit at or above this is "no limit" (the kernel's page-rounded LONG_MAX).
_V1_UNLIMITED = 1 << 62


def enclosing_cgroups() -> list[Path]:
    """The memory cgroups enclosing this process, its own first, up to (not including) the root:
    the v1 memory hierarchy's, else the unified hierarchy's."""
    own: Path | None = _v1_self_path()
    root = V1_MEMORY_ROOT
    if own is None and _v2_root() is not None:
        try:
            rel = next(line.split(":", 2)[2] for line in Path("/proc/self/cgroup").read_text().splitlines()
                       if line.startswith("0::"))
        except (OSError, StopIteration):
            return []
        own, root = CGROUP_ROOT / rel.lstrip("/"), CGROUP_ROOT
    chain = []
    while own is not None and own != root and root in own.parents:
        chain.append(own)
        own = own.parent
    return chain


def _oom_kills(path: Path) -> int:
    keyed = _keyed(path / "memory.oom_control") or _keyed(path / "memory.events")
    return keyed.get("oom_kill", 0)


def _peak(path: Path) -> int | None:
    return _read_int(path / "memory.max_usage_in_bytes") or _read_int(path / "memory.peak")


def _limit(path: Path) -> int | None:
    v1 = _read_int(path / "memory.limit_in_bytes")
    if v1 is not None:
        return v1 if v1 < _V1_UNLIMITED else None
    return _read_int(path / "memory.max")  # "max" does not parse: None


def _read_int(path: Path) -> int | None:
    try:
        return int(path.read_text().split()[0])
    except (OSError, ValueError, IndexError):
        return None


def _keyed(path: Path) -> dict[str, int]:
    try:
        lines = path.read_text().splitlines()
    except OSError:
        return {}
    out = {}
    for line in lines:
        parts = line.split()
        if len(parts) == 2 and parts[1].lstrip("-").isdigit():
            out[parts[0]] = int(parts[1])
    return out


def _cgroup_pids(path: Path) -> list[int]:
    try:
        return [int(p) for p in (path / "cgroup.procs").read_text().split()]
    except FileNotFoundError:
        return []


def remove_tree(path: Path) -> bool:
    """Remove an (emptied) cgroup directory and the cgroups below it, deepest first (a cgroup is
    removed by rmdir); whether it is gone."""
    path = Path(path)
    if not path.is_dir():
        return False
    for sub in sorted((p for p in path.rglob("*") if p.is_dir()), key=lambda p: len(p.parts), reverse=True):
        with contextlib.suppress(OSError):
            sub.rmdir()
    with contextlib.suppress(OSError):
        path.rmdir()
    return not path.exists()


def remove_cgroup(path: Path) -> None:
    """Kill every process still in the cgroup at ``path``, then remove it (no-op if gone)."""
    if not path.exists():
        return
    deadline = time.monotonic() + _EMPTY_WAIT_S
    while True:
        pids = _cgroup_pids(path)
        if not pids:
            break
        for pid in pids:
            try:
                os.kill(pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
        if time.monotonic() > deadline:
            break
        time.sleep(_POLL_S)
    try:
        path.rmdir()
    except OSError as err:
        if err.errno != errno.ENOENT:
            raise CapError(f"could not remove cgroup {path}: {err}") from err


def find_leftovers(include_live: bool = False) -> list[Path]:
    """Cgroups named ``biossd-*`` anywhere in the v1 memory or blkio (:mod:`biossd.host.iothrottle`)
    or the unified hierarchy whose process is gone (with ``include_live``, also those of runs
    still going)."""
    found: list[Path] = []
    for root in (V1_MEMORY_ROOT, CGROUP_ROOT / "blkio", CGROUP_ROOT / "unified", CGROUP_ROOT):
        if not root.is_dir():
            continue
        for dirpath, dirnames, _ in os.walk(root):
            for name in list(dirnames):
                if is_owned_name(name, CGROUP_PREFIX):
                    if include_live or not owner_alive(name, CGROUP_PREFIX):
                        found.append(Path(dirpath) / name)
                    dirnames.remove(name)
            if Path(dirpath) == CGROUP_ROOT:
                # Only descend into the unified tree itself, not into the v1 mounts below it.
                dirnames[:] = [d for d in dirnames if not (CGROUP_ROOT / d).is_mount()]
    return sorted(set(found))
