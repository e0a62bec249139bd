"""Swap on a loop device backed by a file, for the length of one profiled run.

The paper's 1 GB and 4 GB machines paged when a program outgrew RAM (Lee, Min and Yoon 2015, §5.1, the
``Pfault`` feature). A cgroup cap limits RAM only, so with swap available an over-sized
program pages instead of being killed. This module makes that swap: a file
``DIR/biossd-swap-<pid>-<hex>.img`` (``DIR`` on the storage under test), attached to a loop
device so swap traffic is a block device of its own that the tracer can follow, ``mkswap``-ed
and enabled at :data:`SWAP_PRIORITY` (above any host swap, so the run uses this one).

Everything is undone on exit (swapoff, detach, delete); :func:`find_leftovers` finds what a
killed process left and :func:`remove_leftover` removes it.
"""

from __future__ import annotations

import json
import os
from dataclasses import dataclass, field
from pathlib import Path

from biossd.core import made
from biossd.core.commands import run_checked
from biossd.core.errors import BiossdError
from biossd.core.owners import HostObject, is_owned_name, owned_name, owner_alive
from biossd.core.units import format_size
from biossd.host import devices

FILE_PREFIX = "biossd-swap-"
#: Higher than the kernel's default negative priorities, so this area is used first.
SWAP_PRIORITY = 32767
PROC_SWAPS = Path("/proc/swaps")


class SwapError(BiossdError, RuntimeError):
    """Swap cannot be set up; the message names the step and what to do."""


def _run(argv: list[str]) -> str:
    return run_checked(argv, SwapError)


def active_swaps() -> list[str]:
    """Device or file names of the swap areas in use (``/proc/swaps``, its escapes decoded: a
    path with a space is named as it is)."""
    from biossd.core.files import unescape_octal

    lines = PROC_SWAPS.read_text().splitlines()[1:]
    return [unescape_octal(line.split()[0]) for line in lines if line.strip()]


def backing_path(directory: Path) -> Path:
    """A fresh name for a swap file in ``directory`` (named before it is made, so a record of
    the intent lets ``biossd cleanup`` remove what a SIGKILL right after its creation left)."""
    return Path(directory) / f"{owned_name(FILE_PREFIX)}.img"


def loops_over(path: Path) -> list[str]:
    """Loop devices whose backing file is ``path``."""
    return [loop["name"] for loop in _loops()
            if (loop.get("back-file") or "").replace(" (deleted)", "") == str(path)]


@dataclass
class LoopSwap(HostObject):
    """``size_bytes`` of swap on a loop device over a file in ``directory`` (named ``planned``,
    from :func:`backing_path`, or a fresh name)."""

    size_bytes: int
    directory: Path
    planned: Path | None = None
    backing_file: Path | None = field(default=None, init=False)
    loop_device: str | None = field(default=None, init=False)
    enabled: bool = field(default=False, init=False)
    #: The queue settings given to the swap's loop device: those of the device its file is on.
    queue: dict[str, object] | None = field(default=None, init=False)
    backing_device: str | None = field(default=None, init=False)

    def _setup(self) -> None:
        if os.geteuid() != 0:
            raise SwapError("swap on a loop device needs root")
        directory = Path(self.directory)
        if not directory.is_dir():
            raise SwapError(f"swap directory {directory} does not exist")
        name = self.planned or backing_path(directory)
        made.remember(name, "swap file")  # found after a reboot too (its loop device is not)
        fd = os.open(name, os.O_CREAT | os.O_EXCL | os.O_WRONLY, 0o600)
        self.backing_file = name
        try:
            os.posix_fallocate(fd, 0, self.size_bytes)  # no holes: swap refuses sparse files
        except OSError as err:
            raise SwapError(f"cannot allocate {format_size(self.size_bytes)} for swap (--swap) in {directory}: "
                            f"{err.strerror}; give a smaller --swap or another --swap-dir") from None
        finally:
            os.close(fd)
        self.loop_device = _run(["losetup", "--find", "--show", "--direct-io=on", str(self.backing_file)]).strip()
        _run(["mkswap", self.loop_device])
        # The swap is the class's device as much as its file system: the same rotational flag,
        # read-ahead and the rest (the kernel picks its swap read-ahead by the flag).
        try:
            self.backing_device = devices.device_of_path(directory)
        except devices.DeviceError:
            self.backing_device = None  # tmpfs and the like: no device's settings to take
        if self.backing_device is not None:
            self.queue = devices.queue_settings(self.backing_device)
            try:
                devices.apply_queue_policy(self.device_name, self.queue)
            except devices.DeviceError as err:
                raise SwapError(f"cannot give the swap's loop device its class's queue settings: {err}") from None
        _run(["swapon", "--priority", str(SWAP_PRIORITY), self.loop_device])
        self.enabled = True

    @property
    def device_name(self) -> str | None:
        return Path(self.loop_device).name if self.loop_device else None

    def record(self) -> dict[str, object]:
        return {"size_bytes": self.size_bytes, "loop_device": self.loop_device,
                "backing_file": str(self.backing_file) if self.backing_file else None,
                "priority": SWAP_PRIORITY, "queue": self.queue,
                # The device the swap file is on: its requests reach that device too, below the
                # swap's own (the features count them once, there).
                "backing_device": self.backing_device}

    def close(self) -> None:
        if self.enabled and self.loop_device:
            _run(["swapoff", self.loop_device])
            self.enabled = False
        if self.loop_device:
            _run(["losetup", "--detach", self.loop_device])
            self.loop_device = None
        if self.backing_file is not None:
            self.backing_file.unlink(missing_ok=True)
            made.forget(self.backing_file)
            self.backing_file = None


def _loops() -> list[dict[str, str]]:
    try:
        out = _run(["losetup", "--list", "--json", "--output", "NAME,BACK-FILE"])
    except SwapError:
        return []
    return json.loads(out or '{"loopdevices": []}').get("loopdevices", [])


def find_leftovers() -> list[str]:
    """Loop devices over ``biossd-swap-*`` files whose owning process is gone (by device name)."""
    found = []
    for loop in _loops():
        back = (loop.get("back-file") or "").replace(" (deleted)", "")
        name = Path(back).name
        if is_owned_name(name, FILE_PREFIX) and not owner_alive(name, FILE_PREFIX):
            found.append(f"{loop['name']} ({back})")
    return found


def remove_leftover(entry: str) -> None:
    """Take down one leftover :func:`find_leftovers` named; one already gone (the next run's reap
    took it down since it was listed) is only forgotten."""
    device, _, rest = entry.partition(" (")
    back = Path(rest.rstrip(")"))
    if device in loops_over(back):
        if device in active_swaps():
            _run(["swapoff", device])
        _run(["losetup", "--detach", device])
    if back.name.startswith(FILE_PREFIX):
        back.unlink(missing_ok=True)
    made.forget(back)
