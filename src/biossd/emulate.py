"""Emulate a hard disk on a machine that has none: ``biossd device emulate-hdd up|down|status``.

Mechanism (chosen by measurement, see the issue 4 note and ``benchmarks/emulated_hdd.py``)::

    DIR (ext4)  ──>  /dev/loopN  ──>  FUSE file disk.img  ──>  biossd.hddserver  ──>  backing file
                                                               (DiskModel timing)     (native disk)

The loop device is a real block device, so everything that uses DIR pays the model's service
times: direct and buffered I/O, page-cache writeback, and swap (a swap file on DIR maps straight
onto the loop device's blocks). This applies to any process, not only to those biossd starts, and
the block trace sees the requests on ``loopN``. The server runs outside any memory cap.

State lives in ``/run/biossd/emulated-hdd/<id>/state.json`` and records each step as it is done,
so ``down``, an interrupted ``up`` and ``biossd cleanup`` undo exactly what exists.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

from biossd import swap as swaps
from biossd.commands import run_checked
from biossd.diskmodel import load_profile
from biossd.manifest import atomic_write_text

STATE_ROOT = Path("/run/biossd/emulated-hdd")
#: The files of the disk server's FUSE mount (biossd.hddserver): the disk image, the switch of
#: the service-time model, and request counts. Here, not there, so that importing this module
#: (every profiled run does) does not need libfuse.
DISK_FILE = "disk.img"
CONTROL_FILE = "control"
STATS_FILE = "stats"
SERVER_START_TIMEOUT_S = 15.0
SWAP_FILE = ".biossd-swap"
FS_LABEL = "biossd-hdd"
MKFS = ["mkfs.ext4", "-q", "-F", "-L", FS_LABEL, "-E", "lazy_itable_init=0,lazy_journal_init=0"]
MIN_SIZE_BYTES = 64 << 20
#: Below a profiled run's own swap (biossd.swap.SWAP_PRIORITY), so a run that brings its own swap
#: area uses that one; above the kernel's default (negative) priorities of host swap.
SWAP_PRIORITY = 100


class EmulateError(RuntimeError):
    """The emulation cannot be set up or removed; the message says what and why."""


def _state_dir(mount: Path) -> Path:
    key = hashlib.sha256(str(mount.resolve()).encode()).hexdigest()[:12]
    return STATE_ROOT / key


def _run(argv: list[str], what: str) -> str:
    return run_checked(argv, EmulateError, what)


def _save(state_dir: Path, state: dict[str, Any]) -> None:
    atomic_write_text(state_dir / "state.json", json.dumps(state, indent=2) + "\n")


def _load(state_dir: Path) -> dict[str, Any]:
    return json.loads((state_dir / "state.json").read_text())


def _alive(pid: int | None) -> bool:
    if not pid:
        return False
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    return True


def missing_features() -> list[str]:
    """What this host lacks for the FUSE + loop mechanism."""
    missing = []
    if os.geteuid() != 0:
        missing.append("root (mounts, loop devices and swap need it)")
    if not Path("/dev/fuse").exists():
        missing.append("/dev/fuse (the fuse kernel module)")
    for tool in ("losetup", "mkfs.ext4", "mount", "umount", "swapon", "mkswap"):
        if shutil.which(tool) is None:
            missing.append(f"the {tool} command")
    try:
        import mfusepy  # noqa: F401
    except (ImportError, OSError) as err:
        missing.append(f"libfuse3 and mfusepy ({err})")
    return missing


def up(mount: Path, profile: str, size_bytes: int, swap_bytes: int | None = None,
       backing_dir: Path = Path("/var/tmp")) -> dict[str, Any]:
    """Make ``mount`` an emulated HDD of ``size_bytes`` (and optionally a swap area on it)."""
    mount = Path(mount).resolve()
    missing = missing_features()
    if missing:
        raise EmulateError("cannot emulate an HDD here; missing: " + "; ".join(missing)
                           + " (mechanism tried: FUSE-served disk image behind a loop device)")
    disk_profile = load_profile(profile)
    if size_bytes < MIN_SIZE_BYTES:
        raise EmulateError(f"--size must be at least {MIN_SIZE_BYTES >> 20} MiB")
    if swap_bytes and swap_bytes >= size_bytes // 2:
        raise EmulateError("--swap must be less than half of --size")
    state_dir = _state_dir(mount)
    if (state_dir / "state.json").exists():
        raise EmulateError(f"an emulated HDD is already up at {mount} (state in {state_dir}); "
                           "`biossd device emulate-hdd down --mount` it first")
    if mount.exists() and (not mount.is_dir() or any(mount.iterdir())):
        raise EmulateError(f"{mount} must be an empty directory or not exist")
    if os.path.ismount(mount):
        raise EmulateError(f"{mount} is already a mount point")
    free = shutil.disk_usage(backing_dir).free
    if free < size_bytes:
        raise EmulateError(f"{backing_dir} has {free >> 20} MiB free, the emulated disk needs "
                           f"{size_bytes >> 20} MiB; choose --backing-dir elsewhere or a smaller --size")
    state_dir.mkdir(parents=True)
    state: dict[str, Any] = {"mount": str(mount), "profile": profile, "profile_name": disk_profile.name,
                             "size_bytes": size_bytes, "swap_bytes": swap_bytes, "stage": "starting",
                             "mechanism": "fuse-loop", "created_mount_dir": not mount.exists()}
    _save(state_dir, state)
    interrupted: list[int] = []

    def on_signal(signum: int, _frame: object) -> None:
        interrupted.append(signum)
        raise KeyboardInterrupt

    previous = {s: signal.signal(s, on_signal) for s in (signal.SIGINT, signal.SIGTERM)}
    try:
        _bring_up(state_dir, state, mount, backing_dir, swap_bytes)
    except BaseException:
        with contextlib.suppress(Exception):
            down_state(state_dir)
        raise
    finally:
        for s, handler in previous.items():
            signal.signal(s, handler)
    return status_of(state_dir)


def _bring_up(state_dir: Path, state: dict[str, Any], mount: Path, backing_dir: Path,
              swap_bytes: int | None) -> None:
    backing = backing_dir / f"biossd-hdd-{state_dir.name}.img"
    with open(backing, "xb") as f:
        f.truncate(state["size_bytes"])
    state["backing_file"] = str(backing)
    _save(state_dir, state)

    fuse_dir = state_dir / "fuse"
    fuse_dir.mkdir()
    state["fuse_dir"] = str(fuse_dir)
    log = open(state_dir / "server.log", "wb")
    server = subprocess.Popen(
        [sys.executable, "-m", "biossd.hddserver", "--profile", state["profile"], "--size",
         str(state["size_bytes"]), "--backing", str(backing), "--mount", str(fuse_dir)],
        stdout=log, stderr=log, stdin=subprocess.DEVNULL, start_new_session=True,
    )
    log.close()
    state["server_pid"] = server.pid
    _save(state_dir, state)
    deadline = time.monotonic() + SERVER_START_TIMEOUT_S
    while not (fuse_dir / DISK_FILE).exists():
        if server.poll() is not None or time.monotonic() > deadline:
            text = (state_dir / "server.log").read_text(errors="replace").strip()
            raise EmulateError(f"the disk server did not start: {text[-500:] or 'no output'}")
        time.sleep(0.05)

    loop = _run(["losetup", "--find", "--show", str(fuse_dir / DISK_FILE)], "attach loop device").strip()
    state["loop_device"] = loop
    _save(state_dir, state)
    _run([*MKFS, loop], "make the file system")
    mount.mkdir(parents=True, exist_ok=True)
    _run(["mount", "-o", "noatime", loop, str(mount)], "mount")
    state["mounted"] = True
    _save(state_dir, state)
    if swap_bytes:
        swap_file = mount / SWAP_FILE
        fd = os.open(swap_file, os.O_CREAT | os.O_EXCL | os.O_WRONLY, 0o600)
        try:
            os.posix_fallocate(fd, 0, swap_bytes)
        finally:
            os.close(fd)
        state["swap_file"] = str(swap_file)
        _save(state_dir, state)
        _run(["mkswap", str(swap_file)], "make swap")
        _run(["swapon", "--priority", str(SWAP_PRIORITY), str(swap_file)], "enable swap")
        state["swap_on"] = True
        _save(state_dir, state)
    (fuse_dir / CONTROL_FILE).write_text("on\n")
    state["stage"] = "up"
    _save(state_dir, state)


def down_state(state_dir: Path) -> list[str]:
    """Undo everything the state records; returns what was done."""
    state = _load(state_dir)
    done: list[str] = []
    if state.get("swap_on") or (state.get("swap_file") and state["swap_file"] in swaps.active_swaps()):
        _run(["swapoff", state["swap_file"]], "disable swap")
        done.append(f"swapoff {state['swap_file']}")
    mount = Path(state["mount"])
    if state.get("mounted") and os.path.ismount(mount):
        _run(["umount", str(mount)], f"unmount {mount} (is a process still using it?)")
        done.append(f"umount {mount}")
    if state.get("created_mount_dir"):
        with contextlib.suppress(OSError):
            mount.rmdir()
    loop = state.get("loop_device")
    if loop:
        with contextlib.suppress(EmulateError):
            _run(["losetup", "--detach", loop], "detach loop device")
            done.append(f"losetup -d {loop}")
    fuse_dir = state.get("fuse_dir")
    if fuse_dir and os.path.ismount(fuse_dir):
        _run(["umount", fuse_dir], "unmount the disk server")
        done.append(f"umount {fuse_dir}")
    pid = state.get("server_pid")
    if _alive(pid):
        os.kill(pid, signal.SIGTERM)
        deadline = time.monotonic() + 5
        while _alive(pid) and time.monotonic() < deadline:
            with contextlib.suppress(ChildProcessError):
                os.waitpid(pid, os.WNOHANG)
            time.sleep(0.05)
        if _alive(pid):
            os.kill(pid, signal.SIGKILL)
        done.append(f"stopped disk server {pid}")
    if state.get("backing_file"):
        Path(state["backing_file"]).unlink(missing_ok=True)
    shutil.rmtree(state_dir, ignore_errors=True)
    return done


def down(mount: Path) -> list[str] | None:
    """Tear down the emulation at ``mount``; ``None`` when there is none."""
    state_dir = _state_dir(Path(mount).resolve())
    if not (state_dir / "state.json").exists():
        return None
    return down_state(state_dir)


def status_of(state_dir: Path) -> dict[str, Any]:
    state = _load(state_dir)
    fuse_dir = Path(state.get("fuse_dir", state_dir / "fuse"))
    stats = None
    with contextlib.suppress(OSError, ValueError):
        stats = json.loads((fuse_dir / STATS_FILE).read_text())
    healthy = (state.get("stage") == "up" and _alive(state.get("server_pid"))
               and os.path.ismount(state["mount"]))
    return {**state, "state_dir": str(state_dir), "server_alive": _alive(state.get("server_pid")),
            "healthy": healthy, "requests": stats}


def all_states() -> list[Path]:
    return sorted(p for p in STATE_ROOT.glob("*") if (p / "state.json").exists()) if STATE_ROOT.is_dir() else []


def run_record(path: Path) -> dict[str, Any] | None:
    """For a run's manifest: the emulation ``path`` lives on, if any (real devices: ``None``)."""
    target = os.path.realpath(path)
    for state_dir in all_states():
        state = _load(state_dir)
        mount = state["mount"]
        if target == mount or target.startswith(mount.rstrip("/") + "/"):
            return {"emulated": True, "mechanism": state["mechanism"], "profile": state["profile"],
                    "profile_name": state["profile_name"], "loop_device": state.get("loop_device")}
    return None
