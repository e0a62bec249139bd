"""The block device and mount under an emulated disk: a loop device attached write-through (the
native class), the host's loop devices and what they are over, and an unmount that waits for the
mount's users and names them when it gives up."""

from __future__ import annotations

import contextlib
import errno
import json
import os
import time
from pathlib import Path
from typing import Any

from biossd.core.commands import run_checked
from biossd.core.errors import BiossdError
from biossd.core.files import is_mount_point
from biossd.core.owners import open_targets

#: The native class's backing file is opened so: direct I/O, and each write durable on the host's
#: device before it completes (the loop device keeps the file's flags).
WRITE_THROUGH_FLAGS = os.O_RDWR | os.O_DIRECT | os.O_DSYNC

#: The loop ioctls (linux/loop.h) used to attach a file opened with those flags.
LOOP_CTL_GET_FREE = 0x4C82

LOOP_CONFIGURE = 0x4C0A

LOOP_SET_FD = 0x4C00

LOOP_SET_DIRECT_IO = 0x4C08

LO_FLAGS_DIRECT_IO = 16

#: How often an attach that lost a free loop device to another process is retried.
LOOP_ATTACH_TRIES = 10

POLL_S = 0.1


class EmulateError(BiossdError, RuntimeError):
    """The emulation cannot be set up or removed; the message says what and why."""


def run(argv: list[str], what: str) -> str:
    return run_checked(argv, EmulateError, what)


def attach_write_through(backing: Path) -> str:
    """A loop device over ``backing`` opened with :data:`WRITE_THROUGH_FLAGS` (``losetup`` cannot
    give it ``O_DSYNC``); returns its node (``/dev/loopN``)."""
    import fcntl
    import struct

    fd = os.open(backing, WRITE_THROUGH_FLAGS)
    try:
        name = os.fsencode(str(backing))[:63]
        # struct loop_config: fd, block_size, struct loop_info64 (lo_flags at byte 52, the
        # file name's 64 bytes at 56; 232 bytes in all), 8 reserved u64.
        info = bytearray(232)
        struct.pack_into("<I", info, 52, LO_FLAGS_DIRECT_IO)
        info[56:56 + len(name)] = name
        config = struct.pack("<II", fd, 0) + bytes(info) + bytes(64)
        ctl = os.open("/dev/loop-control", os.O_RDWR)
        try:
            for _ in range(LOOP_ATTACH_TRIES):
                number = fcntl.ioctl(ctl, LOOP_CTL_GET_FREE)
                loop_fd = os.open(f"/dev/loop{number}", os.O_RDWR)
                try:
                    try:
                        fcntl.ioctl(loop_fd, LOOP_CONFIGURE, config)
                    except OSError as err:
                        if err.errno not in (errno.EINVAL, errno.ENOTTY):
                            raise
                        # A kernel before 5.8: attach the file, then ask for direct I/O.
                        fcntl.ioctl(loop_fd, LOOP_SET_FD, fd)
                        fcntl.ioctl(loop_fd, LOOP_SET_DIRECT_IO, 1)
                    return f"/dev/loop{number}"
                except OSError as err:
                    if err.errno != errno.EBUSY:  # another process took it first: try the next free one
                        raise EmulateError(f"cannot attach a loop device to {backing}: {err.strerror}") from None
                finally:
                    os.close(loop_fd)
        finally:
            os.close(ctl)
    finally:
        os.close(fd)
    raise EmulateError(f"cannot attach a loop device to {backing}: every free one was taken by another process")


def loops_over(files: list[str], recorded: str | None = None, disk_file: str = "disk.img") -> list[str]:
    """Loop devices whose backing file is one of ``files`` (found on the host, not recorded),
    and the ``recorded`` one if its backing file is a disk image seen through a mount that is
    gone (a FUSE disk unmounted under it: the kernel then names the file from that mount's
    root, ``/disk.img``)."""
    found = []
    for loop in loop_devices():
        back = (loop.get("back-file") or "").replace(" (deleted)", "")
        if back in files or (recorded and loop["name"] == recorded and back == "/" + disk_file):
            found.append(loop["name"])
    return found


def loop_devices() -> list[dict[str, Any]]:
    """The host's loop devices as ``losetup`` lists them (``name``, ``back-file``, ``autoclear``);
    empty when it cannot list them."""
    try:
        out = run(["losetup", "--list", "--json", "--output", "NAME,BACK-FILE,AUTOCLEAR"], "list loop devices")
        return json.loads(out or '{"loopdevices": []}').get("loopdevices", [])
    except (EmulateError, ValueError):
        return []


def users_of(mount: str) -> list[str]:
    """What keeps ``mount`` busy (for the message): processes whose working directory or open
    files are under it, and the kernel's holders no process shows — a mount below it, a loop
    device whose backing file is on it (a detached one stays until its last opener closes)."""
    users = []
    prefix = mount.rstrip("/") + "/"
    from biossd.core.files import mount_table

    users += [f"the mount {m.point}" for m in mount_table() if m.point.startswith(prefix)]
    for loop in loop_devices():
        if (loop.get("back-file") or "").startswith(prefix):
            users.append(f"the loop device {loop['name']} over {loop['back-file']}"
                         + (" (detached, waiting for its last opener)" if loop.get("autoclear") else ""))
    for proc in Path("/proc").iterdir():
        if not proc.name.isdigit():
            continue
        with contextlib.suppress(OSError):
            links = [os.readlink(proc / "cwd")] + open_targets(int(proc.name))
            if any(link == mount or link.startswith(prefix) for link in links):
                users.append(f"{proc.name} ({(proc / 'comm').read_text().strip()})")
    return users


def umount(path: str, grace_s: float) -> None:
    deadline = time.monotonic() + grace_s
    while True:
        try:
            run(["umount", path], f"unmount {path}")
            return
        except EmulateError:
            if not is_mount_point(path):
                return
            if time.monotonic() > deadline:
                raise EmulateError(f"cannot unmount {path}: still in use by "
                                   f"{', '.join(users_of(path)) or 'an unknown process'}") from None
            time.sleep(POLL_S)
