"""A block device made slower for the processes of one cgroup: the kernel's I/O throttle
(cgroup v1 ``blkio.throttle.*``, cgroup v2 ``io.max``), for a *third* device that the
prediction was not built with (``benchmarks/predict_third_device.py``).

:class:`IoThrottle` makes a cgroup of its own (``biossd-<pid>-<start ticks>-<hex>``), limits the
device's read and/or write bytes/s and IOPS in it, and moves the calling process into it, so
every process it starts afterwards inherits the limits; on leaving (also on an exception or an
interrupt) it moves the process back where it was and removes the cgroup. Nothing it did not
make is touched; one left by a killed process is a leftover for ``biossd doctor``/``cleanup``
(:func:`biossd.host.cgroups.find_leftovers`).

What it cannot do, said plainly: under cgroup v1 the kernel throttles only I/O that a task of
the cgroup submits itself (reads, page-fault reads, direct I/O); buffered writes reach the
device from the kernel's flusher threads, outside the cgroup, and are not throttled. So throttle
reads only under v1 (the class of device this makes is "slow to read"), and measure it with
``biossd device characterize`` from inside the cgroup, which then records what the runs see.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from pathlib import Path

from biossd.core.errors import BiossdError
from biossd.core.owners import owned_name
from biossd.host import cgroups, devices

V1_ROOT = Path("/sys/fs/cgroup/blkio")
V2_ROOT = Path("/sys/fs/cgroup")
#: The cgroup is named as the memory caps' are (:func:`biossd.core.owners.owned_name` with
#: :data:`biossd.host.cgroups.CGROUP_PREFIX`), so ``biossd doctor`` finds one whose process died.
NAME_PREFIX = cgroups.CGROUP_PREFIX


class ThrottleError(BiossdError, RuntimeError):
    pass


def backend() -> str:
    """``v1`` (a blkio hierarchy with throttling), ``v2`` (a unified hierarchy with the io
    controller) or ``none``."""
    if (V1_ROOT / "blkio.throttle.read_bps_device").exists():
        return "v1"
    controllers = V2_ROOT / "cgroup.controllers"
    if controllers.is_file() and "io" in controllers.read_text().split():
        return "v2"
    return "none"


@dataclass
class IoThrottle:
    """Limits on one block device (``/dev/loopN`` or its ``MAJ:MIN``); a limit of ``None`` is
    none. Use as a context manager."""

    device: str
    read_bps: int | None = None
    read_iops: int | None = None
    write_bps: int | None = None
    write_iops: int | None = None
    path: Path | None = field(default=None, init=False)
    _previous: Path | None = field(default=None, init=False)
    _backend: str = field(default="", init=False)

    def majmin(self) -> str:
        """The device's ``MAJ:MIN`` (as the throttle files take it)."""
        name = devices.resolve(self.device)
        return (devices.SYS_BLOCK.parent / "class" / "block" / name / "dev").read_text().strip()

    def record(self) -> dict[str, object]:
        """For a run's or a benchmark's record: the mechanism and the limits."""
        return {"mechanism": f"cgroup-{self._backend or backend()}-io-throttle", "device": self.device,
                "read_bps": self.read_bps, "read_iops": self.read_iops, "write_bps": self.write_bps,
                "write_iops": self.write_iops}

    def __enter__(self) -> "IoThrottle":
        self._backend = backend()
        if self._backend == "none":
            raise ThrottleError("no cgroup I/O throttle on this host (neither blkio.throttle nor the v2 io "
                                "controller is available)")
        majmin = self.majmin()
        root = V1_ROOT if self._backend == "v1" else V2_ROOT / _own_v2_cgroup().relative_to("/")
        path = root / owned_name(NAME_PREFIX)
        path.mkdir()
        self.path = path
        try:
            if self._backend == "v1":
                for name, value in (("read_bps_device", self.read_bps), ("read_iops_device", self.read_iops),
                                    ("write_bps_device", self.write_bps), ("write_iops_device", self.write_iops)):
                    if value is not None:
                        (path / f"blkio.throttle.{name}").write_text(f"{majmin} {int(value)}\n")
                self._previous = V1_ROOT / _own_v1_cgroup().relative_to("/")
            else:
                limits = " ".join(f"{key}={int(value)}" for key, value in (
                    ("rbps", self.read_bps), ("riops", self.read_iops), ("wbps", self.write_bps),
                    ("wiops", self.write_iops)) if value is not None)
                (path / "io.max").write_text(f"{majmin} {limits}\n")
                self._previous = path.parent
            (path / "cgroup.procs").write_text(f"{os.getpid()}\n")
        except BaseException:
            self._remove()
            raise
        return self

    def __exit__(self, *exc: object) -> None:
        self._remove()

    def _remove(self) -> None:
        if self.path is None:
            return
        if self._previous is not None:
            (self._previous / "cgroup.procs").write_text(f"{os.getpid()}\n")
        try:
            self.path.rmdir()
        except OSError as err:
            raise ThrottleError(f"{self.path}: could not be removed ({err}); a process started in it still runs? "
                                "`biossd doctor` lists it") from None
        self.path = None


def _own_cgroup(controller_test) -> Path:
    for line in Path("/proc/self/cgroup").read_text().splitlines():
        _, controllers, path = line.split(":", 2)
        if controller_test(controllers):
            return Path(path)
    return Path("/")


def _own_v1_cgroup() -> Path:
    return _own_cgroup(lambda c: "blkio" in c.split(","))


def _own_v2_cgroup() -> Path:
    return _own_cgroup(lambda c: c == "")
