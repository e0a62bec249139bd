"""Block devices: resolving a path or a device node to the kernel's device name, as used by
``/proc/diskstats`` and the block tracepoints."""

from __future__ import annotations

import os
import stat
from pathlib import Path

SYS_DEV_BLOCK = Path("/sys/dev/block")


class DeviceError(ValueError):
    pass


def _name_of(major: int, minor: int) -> str:
    uevent = SYS_DEV_BLOCK / f"{major}:{minor}" / "uevent"
    try:
        for line in uevent.read_text().splitlines():
            if line.startswith("DEVNAME="):
                return line.split("=", 1)[1]
    except OSError:
        pass
    raise DeviceError(f"device {major}:{minor} is not a block device known to the kernel ({uevent})")


def device_of_path(path: Path) -> str:
    """Kernel name (``vda``, ``nvme0n1p2``, ``loop3``) of the block device holding ``path``."""
    dev = os.stat(path).st_dev
    return _name_of(os.major(dev), os.minor(dev))


def resolve(device: str) -> str:
    """Kernel name for ``/dev/vda``, ``vda`` or ``254:0``; raises :class:`DeviceError`."""
    if ":" in device and device.replace(":", "").isdigit():
        major, minor = (int(x) for x in device.split(":"))
        return _name_of(major, minor)
    node = Path(device) if device.startswith("/") else Path("/dev") / device
    try:
        st = os.stat(node)
    except FileNotFoundError:
        raise DeviceError(f"{device}: no such device") from None
    if not stat.S_ISBLK(st.st_mode):
        raise DeviceError(f"{device}: not a block device")
    return _name_of(os.major(st.st_rdev), os.minor(st.st_rdev))
