"""Block devices: resolving a path or a device node to the kernel's device name, as used by
``/proc/diskstats`` and the block tracepoints."""

from __future__ import annotations

import os
import stat
from pathlib import Path

from biossd.core.errors import BiossdError
from biossd.core.units import SECTOR_BYTES

SYS_DEV_BLOCK = Path("/sys/dev/block")


class DeviceError(BiossdError, ValueError):
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


SYS_BLOCK = Path("/sys/block")
#: Queue settings recorded for each traced device (``/sys/block/<dev>/queue/<name>``).
QUEUE_FACTS = ("rotational", "scheduler", "nr_requests", "logical_block_size", "physical_block_size",
               "max_sectors_kb", "read_ahead_kb", "write_cache", "wbt_lat_usec")
#: What a study holds equal on every block device of both storage classes, file system and swap
#: alike (Lee, Min and Yoon 2015 §2.1: "drop-in replacement of HDDs by SSDs in the same computer
#: without any other modifications in hardware or software"): the read-ahead window of the
#: paper's kernel (Ubuntu 12.04's Linux 3.2: 128 KiB), no I/O scheduler (a loop device's own
#: default), and no writeback throttling (which Linux 3.2 did not have; the kernel's default
#: latency target depends on the rotational flag). ``rotational`` alone differs: it tells the
#: truth of the class, and the kernel's swap read-ahead and slot allocation follow it.
EQUAL_QUEUE_SETTINGS = {"read_ahead_kb": 128, "scheduler": "none", "wbt_lat_usec": 0}


def _read(path: Path) -> str | None:
    try:
        return path.read_text().strip()
    except OSError:
        return None


def whole_disk(name: str) -> str:
    """The disk a partition belongs to (``vda1`` → ``vda``); a whole disk is its own."""
    if (SYS_BLOCK / name).is_dir():
        return name
    for disk in SYS_BLOCK.iterdir():
        if (disk / name).is_dir():
            return disk.name
    return name


def device_facts(name: str) -> dict[str, object]:
    """What the paper's spec tables say of a disk (Lee, Min and Yoon 2015, §5.1), as the kernel reports it:
    model, rotational flag, I/O scheduler, queue depth and sizes."""
    disk = whole_disk(name)
    base = SYS_BLOCK / disk
    facts: dict[str, object] = {"name": name, "disk": disk}
    size = _read(SYS_BLOCK / disk / name / "size") if disk != name else _read(base / "size")
    facts["size_bytes"] = int(size) * SECTOR_BYTES if size and size.isdigit() else None
    model = _read(base / "device" / "model")
    vendor = _read(base / "device" / "vendor")
    facts["model"] = " ".join(x for x in (vendor, model) if x) or None
    facts["serial"] = _read(base / "serial") or _read(base / "device" / "serial")
    facts["backing_file"] = _read(base / "loop" / "backing_file")
    dio = _read(base / "loop" / "dio")
    facts["loop_direct_io"] = None if dio is None else dio == "1"
    for key in QUEUE_FACTS:
        value = _read(base / "queue" / key)
        if key == "scheduler" and value and "[" in value:
            value = value[value.index("[") + 1 : value.index("]")]
        facts[key] = int(value) if value is not None and value.isdigit() else value
    facts["rotational"] = None if facts["rotational"] is None else bool(facts["rotational"])
    facts["queue_depth"] = _read(base / "device" / "queue_depth") or _read(base / "mq" / "0" / "nr_tags")
    if isinstance(facts["queue_depth"], str) and facts["queue_depth"].isdigit():
        facts["queue_depth"] = int(facts["queue_depth"])
    return facts


def mount_facts(path: Path) -> dict[str, object]:
    """The mount holding ``path``: mount point, filesystem type, source and options."""
    from biossd.core.files import mount_table

    target = os.path.realpath(path)
    best: dict[str, object] = {}
    for m in mount_table():
        inside = target == m.point or target.startswith(m.point.rstrip("/") + "/")
        if inside and len(m.point) >= len(str(best.get("mount_point", ""))):
            best = {"mount_point": m.point, "fstype": m.fstype, "source": m.source,
                    "mount_options": m.mount_options, "super_options": m.super_options}
    return best


def queue_policy(rotational: bool) -> dict[str, object]:
    """The queue settings of a storage class's devices: :data:`EQUAL_QUEUE_SETTINGS` and the
    class's rotational flag."""
    return {"rotational": bool(rotational), **EQUAL_QUEUE_SETTINGS}


def _queue_file(name: str, key: str) -> Path:
    return SYS_BLOCK / whole_disk(name) / "queue" / key


def queue_settings(name: str) -> dict[str, object]:
    """The device's current values of the policy's keys (``rotational`` as a bool)."""
    facts = device_facts(name)
    return {key: facts.get(key) for key in ("rotational", *EQUAL_QUEUE_SETTINGS)}


def apply_queue_policy(name: str, policy: dict[str, object]) -> None:
    """Write ``policy`` into the device's queue (``/sys/block/<dev>/queue/``); a value the
    kernel refuses raises :class:`DeviceError` naming the file."""
    for key, value in policy.items():
        path = _queue_file(name, key)
        text = str(int(value)) if isinstance(value, bool) else str(value)
        try:
            path.write_text(text)
        except OSError as err:
            raise DeviceError(f"cannot set {path} to {text}: {err.strerror or err}") from None


def queue_mismatches(name: str, policy: dict[str, object]) -> list[str]:
    """Where the device's queue differs from ``policy``, one phrase each (empty: it matches)."""
    found = queue_settings(name)
    return [f"{name} {key} is {found.get(key)!r}, the class's is {want!r}" for key, want in policy.items()
            if found.get(key) != want]
