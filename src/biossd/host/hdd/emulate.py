"""Emulate a hard disk on a machine that has none: ``biossd device emulate-hdd up|down|status``.

Mechanism (chosen by measurement, see ``benchmarks/emulated_hdd.py``)::

    DIR (ext4)  ──>  /dev/loopN  ──>  FUSE file disk.img  ──>  biossd.host.hdd.server  ──>  backing file
                                                               (DiskModel timing)     (native disk)

The loop device is a real block device, so everything that uses DIR pays the model's service
times: direct and buffered I/O, page-cache writeback, and swap (a swap file on DIR maps straight
onto the loop device's blocks). This applies to any process, not only to those biossd starts, and
the block trace sees the requests on ``loopN``. The server runs outside any memory cap.

The profile ``native`` (:data:`NATIVE_PROFILE`) makes the same stack without the server: the
native disk itself, unthrottled, on a loop device of its own over a preallocated file. A
one-machine study uses it for its "ssd" class, so that class's block trace, like the emulated
HDD's, holds only the run's requests and not every other process's on the root disk, and its
swap lives on that device.

The two classes differ only in the device (:func:`biossd.host.devices.queue_policy`): both loop
devices do direct I/O to what is below them (no page cache holds the disk a second time), both
get the same queue settings, and the rotational flag tells the truth of the class. And neither
has a host write-back cache the other lacks: the emulated HDD's only cache is the modelled
drive's buffer, and the native class's loop device writes *through* to the host
(``O_DIRECT | O_DSYNC`` on its backing file, :data:`WRITE_THROUGH_FLAGS`), where a virtual
machine's host would otherwise absorb its writes in its own cache (measured on this VM: 1.7 GB/s
of direct sequential writes before, 0.8 GB/s through, against 0.95 GB/s of reads).

State lives in ``/run/biossd/emulated-hdd/<id>/state.json``. It is crash-consistent: each
step's *intent* is recorded before the step (the backing file's name before it is created, the
server's start before it is launched, ...), and ``down``, an interrupted ``up`` and
``biossd cleanup`` reconcile against what the host really has — mounts, loop devices found by
their backing file, disk servers found by their command line, active swap — rather than trusting
recorded flags. Signals are held off while that runs, so a second Ctrl-C cannot stop a rollback
half way; a teardown that still fails keeps the state for the next attempt.

Each emulation has an *owner*: the process (pid and start time, :mod:`biossd.core.owners`) that
brought it up for its use — a Nextflow session — or none for one brought up by hand, which
stays until ``down``. Only the owner takes it down; ``cleanup`` removes it only once its owner
is dead (or, without an owner, once it is broken), and a new ``up`` at the same mount reclaims
such a stale one first. The disk image is readable by root only (mode 0600, FUSE mount without
``allow_other``).
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import re
import shutil
import signal
import subprocess
import sys
import time
import uuid
from pathlib import Path
from typing import Any

from biossd.core.files import atomic_write_text, is_mount_point, remove_tree
from biossd.core.owners import ProcessRef
from biossd.core.signals import signals_held, signals_ignored, signals_raise
from biossd.host import swap as swaps
from biossd.host.hdd import blockdev
from biossd.host.hdd.blockdev import EmulateError

STATE_ROOT = Path("/run/biossd/emulated-hdd")
#: The disk server's module, as its command line names it; and its name before (an older biossd's disk).
SERVER_MODULE = "biossd.host.hdd.server"
_SERVER_MODULES_BEFORE = ("biossd.host.hdd.hddserver",)
#: The files of the disk server's FUSE mount (biossd.host.hdd.server): the disk image, the switch of
#: the service-time model, and request counts. Here, not there, so that importing this module
#: (every profiled run does) does not need libfuse.
DISK_FILE = "disk.img"
CONTROL_FILE = "control"
STATS_FILE = "stats"
SERVER_START_TIMEOUT_S = 15.0
SWAP_FILE = ".biossd-swap"
FS_LABEL = "biossd-hdd"
#: nodiscard: mkfs would otherwise discard the whole device, punching holes in the native class's
#: preallocated backing file.
MKFS = ["mkfs.ext4", "-q", "-F", "-L", FS_LABEL, "-E", "lazy_itable_init=0,lazy_journal_init=0,nodiscard"]
MIN_SIZE_BYTES = 64 << 20
#: Below a profiled run's own swap (biossd.host.swap.SWAP_PRIORITY), so a run that brings its own swap
#: area uses that one; above the kernel's default (negative) priorities of host swap.
SWAP_PRIORITY = 100
#: The profile name of the native disk on a loop device of its own (no service-time model).
NATIVE_PROFILE = "native"
NATIVE_NAME = "native disk (loop device, direct I/O)"
#: The backing file of an emulated disk: ``biossd-hdd-<mount key>-<hex>.img`` (a new name each
#: ``up``, so a file a crash left behind never blocks the next one).
BACKING_PREFIX = "biossd-hdd-"
#: Exactly the names ``up`` gives a backing file (a 12-hex mount key, an 8-hex suffix): a user's
#: ``biossd-hdd-mine.img`` in the backing directory is never taken for one.
BACKING_NAME_RE = re.compile(re.escape(BACKING_PREFIX) + r"[0-9a-f]{12}-[0-9a-f]{8}\.img")
#: How long ``down`` retries an unmount that is busy (a profiled run still ending after an
#: interrupt) before it reports who holds the mount.
UMOUNT_GRACE_S = 30.0
SERVER_STOP_S = 5.0


def _state_dir(mount: Path) -> Path:
    return STATE_ROOT / _mount_key(mount)


def _mount_key(mount: Path) -> str:
    return hashlib.sha256(str(Path(mount).resolve()).encode()).hexdigest()[:12]


def _save(state_dir: Path, state: dict[str, Any]) -> None:
    atomic_write_text(state_dir / "state.json", json.dumps(state, indent=2) + "\n")


def _load(state_dir: Path) -> dict[str, Any]:
    """The recorded state; an unreadable one (a crash while writing it) is empty, and the
    reconciliation then finds what exists from the state directory's own paths."""
    try:
        return json.loads((state_dir / "state.json").read_text())
    except (OSError, ValueError):
        return {}


def missing_features(fuse: bool = True) -> list[str]:
    """What this host lacks for the FUSE + loop mechanism (``fuse=False``: for the loop alone)."""
    missing = []
    if os.geteuid() != 0:
        missing.append("root (mounts, loop devices and swap need it)")
    if fuse and not Path("/dev/fuse").exists():
        missing.append("/dev/fuse (the fuse kernel module)")
    for tool in ("losetup", "mkfs.ext4", "mount", "umount", "swapon", "mkswap"):
        if shutil.which(tool) is None:
            missing.append(f"the {tool} command")
    if fuse:
        try:
            import mfusepy  # noqa: F401 (imported to see that it loads)
        except (ImportError, OSError) as err:
            missing.append(f"libfuse3 and mfusepy ({err})")
    return missing


def owner_of(state: dict[str, Any]) -> ProcessRef | None:
    return ProcessRef.from_record(state.get("owner"))


def in_use(state_dir: Path) -> bool:
    """Whether the emulation is someone's: the ``up`` that makes it still runs (its maker, while
    the stage is ``starting``), its owner runs, or (brought up by hand, no owner) it is healthy.
    Anything else is a leftover."""
    status = status_of(state_dir)
    maker = ProcessRef.from_record(status.get("maker"))
    if status.get("stage") == "starting" and maker is not None and maker.alive():
        return True
    owner = owner_of(status)
    return owner.alive() if owner is not None else status["healthy"]


def up(mount: Path, profile: str, size_bytes: int, swap_bytes: int | None = None,
       backing_dir: Path = Path("/var/tmp"), owner: ProcessRef | None = None, scale: float = 1.0,
       rotational: bool | None = None) -> dict[str, Any]:
    """Make ``mount`` an emulated HDD (or ``cloud:<volume>[@<instance>]``, a cloud volume) of
    ``size_bytes``, optionally with swap, owned by ``owner`` (``None``: whoever takes it down).
    ``scale``: the study's divisor D (the disk's buffer and distances, a volume's burst credits).
    ``rotational``: the class's queue (default: an HDD is rotational; native and cloud are flash)."""
    # Here, not at the top: the models need NumPy, which every profiled run (that imports this
    # module to find its class's mount) would otherwise read from disk after a cache drop.
    from biossd.host.models import CLOUD_PREFIX, diskmodel

    mount = Path(mount).resolve()
    native, cloud = profile == NATIVE_PROFILE, profile.startswith(CLOUD_PREFIX)
    missing = missing_features(fuse=not native)
    if missing:
        raise EmulateError(f"cannot {'put the native disk on a loop device' if native else 'emulate an HDD'} "
                           "here; missing: " + "; ".join(missing) + " (mechanism tried: "
                           + ("a loop device over a file" if native else "FUSE-served disk image behind a loop device")
                           + ")")
    # A cloud volume's name is checked by its server (biossd.host.models.cloudmodel needs NumPy; see above).
    profile_name = NATIVE_NAME if native else profile if cloud else diskmodel.load_profile(profile).name
    if size_bytes < MIN_SIZE_BYTES:
        raise EmulateError(f"--size must be at least {MIN_SIZE_BYTES >> 20} MiB")
    if swap_bytes and swap_bytes >= size_bytes // 2:
        raise EmulateError("--swap must be less than half of --size")
    if scale < 1:
        raise EmulateError(f"the disk's scale is the study's memory divisor D >= 1, got {scale}")
    from biossd.host.devices import queue_policy

    policy = queue_policy(not (native or cloud) if rotational is None else rotational)  # a volume is flash
    state_dir = _state_dir(mount)
    if state_dir.exists():
        if in_use(state_dir):
            holder = owner_of(_load(state_dir))
            raise EmulateError(f"an emulated HDD is already up at {mount}, "
                               + (f"in use by {holder.describe()}" if holder else "brought up by hand")
                               + f" (state in {state_dir}); wait for it, `biossd device emulate-hdd down "
                               "--mount` it, or choose another mount (--storage_root)")
        down_state(state_dir)  # a stale one (its owner is gone, or it broke): reclaimed
    if mount.exists() and (not mount.is_dir() or any(mount.iterdir())):
        raise EmulateError(f"{mount} must be an empty directory or not exist")
    if is_mount_point(mount):
        raise EmulateError(f"{mount} is already a mount point")
    backing_dir = Path(backing_dir).resolve()
    remove_stale_backing([backing_dir])
    free = shutil.disk_usage(backing_dir).free
    if free < size_bytes:
        raise EmulateError(f"{backing_dir} has {free >> 20} MiB free, the emulated disk needs "
                           f"{size_bytes >> 20} MiB; choose --backing-dir elsewhere or a smaller --size")
    state: dict[str, Any] = {"mount": str(mount), "profile": profile, "profile_name": profile_name,
                             "size_bytes": size_bytes, "swap_bytes": swap_bytes, "stage": "starting",
                             "mechanism": "loop-direct" if native else "fuse-loop", "created_mount_dir": not mount.exists(),
                             "scale": float(scale), "queue": policy, "write_through": native,
                             "owner": owner.record() if owner else None,
                             # until it is up, the emulation is the process bringing it up
                             "maker": ProcessRef.current().record(),
                             "backing_file": str(backing_dir / f"{BACKING_PREFIX}{state_dir.name}-{uuid.uuid4().hex[:8]}.img"),
                             "fuse_dir": str(state_dir / "fuse")}

    made = False
    with signals_raise(KeyboardInterrupt):
        try:
            # The state directory is made and known to be ours in one step that a signal cannot
            # split (one arriving meanwhile is raised at the block's end, inside this try): an
            # interrupt right after the mkdir must not leave it, nor one that fails it remove
            # another ``up``'s.
            with signals_held():
                state_dir.mkdir(parents=True)
                made = True
                _save(state_dir, state)
            _bring_up(state_dir, state, mount, swap_bytes)
        except BaseException:
            with signals_ignored():  # a second signal must not stop the rollback
                if made:
                    try:
                        down_state(state_dir)
                    except Exception as err:  # its state is kept (down-failed): said, and the interrupt goes on
                        print(f"biossd: {err}", file=sys.stderr, flush=True)
            raise
    return status_of(state_dir)


def _bring_up(state_dir: Path, state: dict[str, Any], mount: Path, swap_bytes: int | None) -> None:
    """Each step after its intent is recorded (``state`` already names the backing file and
    the FUSE directory); what a kill between two steps leaves is found by reconciliation."""
    backing = Path(state["backing_file"])
    native = state["profile"] == NATIVE_PROFILE
    fd = os.open(backing, os.O_CREAT | os.O_EXCL | os.O_WRONLY, 0o600)
    try:
        # The native disk's file is allocated up front (the runs' writes then pay no block
        # allocation of the host's file system); the server's backing file may stay sparse.
        if native:
            os.posix_fallocate(fd, 0, state["size_bytes"])
        else:
            os.ftruncate(fd, state["size_bytes"])
    finally:
        os.close(fd)
    if native:
        with signals_held():  # attached and recorded in one step a signal cannot split
            state["loop_device"] = blockdev.attach_write_through(backing)
            _save(state_dir, state)
        _make_fs(state_dir, state, mount, swap_bytes)
        _set_queue(state)
        state["stage"] = "up"
        _save(state_dir, state)
        return
    fuse_dir = Path(state["fuse_dir"])
    fuse_dir.mkdir(mode=0o700)
    with signals_held(), open(state_dir / "server.log", "wb") as log:  # started and recorded in one step
        server = subprocess.Popen(
            [sys.executable, "-m", SERVER_MODULE, "--profile", state["profile"], "--size",
             str(state["size_bytes"]), "--backing", str(backing), "--mount", str(fuse_dir),
             "--scale", repr(state["scale"])],
            stdout=log, stderr=log, stdin=subprocess.DEVNULL, start_new_session=True,
        )
        state["server"] = ProcessRef.of(server.pid, SERVER_MODULE).record()
        _save(state_dir, state)
    deadline = time.monotonic() + SERVER_START_TIMEOUT_S
    while not (fuse_dir / DISK_FILE).exists():
        if server.poll() is not None or time.monotonic() > deadline:
            text = (state_dir / "server.log").read_text(errors="replace").strip()
            raise EmulateError(f"the disk server did not start: {text[-500:] or 'no output'}")
        time.sleep(0.05)

    with signals_held():  # attached and recorded in one step a signal cannot split
        state["loop_device"] = blockdev.run(["losetup", "--find", "--show", "--direct-io=on", str(fuse_dir / DISK_FILE)],
                                    "attach loop device").strip()
        _save(state_dir, state)
    _make_fs(state_dir, state, mount, swap_bytes)
    _set_queue(state)  # after the mount: setting up the device resets its read-ahead
    (fuse_dir / CONTROL_FILE).write_text("on\n")
    state["stage"] = "up"
    _save(state_dir, state)


def _set_queue(state: dict[str, Any]) -> None:
    """The class's queue policy on its loop device, and its direct I/O checked."""
    from biossd.host import devices

    loop = Path(state["loop_device"]).name
    try:
        devices.apply_queue_policy(loop, state["queue"])
    except devices.DeviceError as err:
        raise EmulateError(str(err)) from None
    if (Path("/sys/block") / loop / "loop" / "dio").read_text().strip() != "1":
        raise EmulateError(f"{state['loop_device']} does not do direct I/O to {state['backing_file']}; "
                           "its file system may not support it (choose another --backing-dir)")


def _make_fs(state_dir: Path, state: dict[str, Any], mount: Path, swap_bytes: int | None) -> None:
    """The file system on the loop device, mounted, and the swap area on it if asked for."""
    blockdev.run([*MKFS, state["loop_device"]], "make the file system")
    mount.mkdir(parents=True, exist_ok=True)
    blockdev.run(["mount", "-o", "noatime", state["loop_device"], str(mount)], "mount")
    if swap_bytes:
        swap_file = mount / SWAP_FILE
        state["swap_file"] = str(swap_file)
        _save(state_dir, state)
        fd = os.open(swap_file, os.O_CREAT | os.O_EXCL | os.O_WRONLY, 0o600)
        try:
            os.posix_fallocate(fd, 0, swap_bytes)
        finally:
            os.close(fd)
        blockdev.run(["mkswap", str(swap_file)], "make swap")
        blockdev.run(["swapon", "--priority", str(SWAP_PRIORITY), str(swap_file)], "enable swap")


def _server_pids(fuse_dir: str | None) -> list[int]:
    """Disk servers serving ``fuse_dir`` (``None``: every one on the host), found by their
    command line."""
    found = []
    for proc in Path("/proc").iterdir():
        if not proc.name.isdigit():
            continue
        try:
            argv = (proc / "cmdline").read_bytes().split(b"\0")
        except OSError:
            continue
        if {m.encode() for m in (SERVER_MODULE, *_SERVER_MODULES_BEFORE)} & set(argv) and (
                fuse_dir is None or fuse_dir.encode() in argv):
            found.append(int(proc.name))
    return found


def server_pids() -> list[int]:
    """Every emulated disk's server on the host: part of its devices, not a load beside a run."""
    return _server_pids(None)


def down_state(state_dir: Path, grace_s: float = UMOUNT_GRACE_S) -> list[str]:
    """Take the emulation of ``state_dir`` down, reconciling with what the host really has;
    returns what was done. Signals wait until it ends. If a step fails, the others still run,
    the state is kept (stage ``down-failed``) and :class:`EmulateError` lists what remains."""
    with signals_held():
        return _down(state_dir, grace_s)


def _down(state_dir: Path, grace_s: float) -> list[str]:
    state = _load(state_dir)
    done: list[str] = []
    errors: list[str] = []

    def step(what: str, action) -> None:
        try:
            action()
            done.append(what)
        except (EmulateError, OSError) as err:
            errors.append(f"{what}: {err}")

    fuse_dir = state.get("fuse_dir") or str(state_dir / "fuse")
    # The loop device is over the FUSE disk (an emulated HDD) or the backing file (native).
    backed = [str(Path(fuse_dir) / DISK_FILE)] + ([state["backing_file"]] if state.get("backing_file") else [])
    swap_file = state.get("swap_file")
    if swap_file and swap_file in swaps.active_swaps():
        step(f"swapoff {swap_file}", lambda: blockdev.run(["swapoff", swap_file], "disable swap"))
    mount = state.get("mount")
    recorded_loop = state.get("loop_device")
    loops = sorted(set(blockdev.loops_over(backed, recorded_loop, DISK_FILE)) | ({recorded_loop} if recorded_loop else set()))
    if mount and is_mount_point(mount):
        from biossd.host.devices import mount_facts

        if mount_facts(Path(mount)).get("source") in loops:
            step(f"umount {mount}", lambda: blockdev.umount(mount, grace_s))
    if mount and state.get("created_mount_dir") and not is_mount_point(mount):
        with contextlib.suppress(OSError):
            Path(mount).rmdir()
    for loop in blockdev.loops_over(backed, recorded_loop, DISK_FILE):
        step(f"losetup -d {loop}", lambda loop=loop: blockdev.run(["losetup", "--detach", loop], "detach loop device"))
    if is_mount_point(fuse_dir):
        step(f"umount {fuse_dir}", lambda: blockdev.umount(fuse_dir, grace_s))
    servers = set(_server_pids(fuse_dir))
    recorded = ProcessRef.from_record(state.get("server"))
    if recorded is not None and recorded.alive():
        servers.add(recorded.pid)
    for pid in sorted(servers):
        step(f"stopped disk server {pid}", lambda pid=pid: _stop(pid))
    backing = state.get("backing_file")
    if backing and BACKING_NAME_RE.fullmatch(Path(backing).name):
        Path(backing).unlink(missing_ok=True)
    if errors:
        state["stage"] = "down-failed"
        state["errors"] = errors
        with contextlib.suppress(OSError):
            _save(state_dir, state)
        raise EmulateError(f"the emulated HDD at {mount} is not fully down: " + "; ".join(errors)
                           + " — end what still uses it, then run `biossd cleanup`")
    remove_tree(state_dir, ignore_errors=True)
    return done


def _stop(pid: int) -> None:
    ref = ProcessRef.of(pid)
    with contextlib.suppress(ProcessLookupError):
        os.kill(pid, signal.SIGTERM)
    deadline = time.monotonic() + SERVER_STOP_S
    while ref.alive() and time.monotonic() < deadline:
        with contextlib.suppress(ChildProcessError):
            os.waitpid(pid, os.WNOHANG)
        time.sleep(0.05)
    if ref.alive():
        with contextlib.suppress(ProcessLookupError):
            os.kill(pid, signal.SIGKILL)


def down(mount: Path) -> list[str] | None:
    """Tear down the emulation at ``mount``; ``None`` when there is none."""
    state_dir = _state_dir(Path(mount).resolve())
    if not state_dir.exists():
        return None
    return down_state(state_dir)


def status_of(state_dir: Path) -> dict[str, Any]:
    state = _load(state_dir)
    fuse_dir = Path(state.get("fuse_dir", state_dir / "fuse"))
    stats = None
    with contextlib.suppress(OSError, ValueError):
        stats = json.loads((fuse_dir / STATS_FILE).read_text())
    server = ProcessRef.from_record(state.get("server"))
    server_alive = server is not None and server.alive()
    mount = state.get("mount")
    serving = server_alive or state.get("profile") == NATIVE_PROFILE
    healthy = state.get("stage") == "up" and serving and bool(mount) and is_mount_point(mount)
    owner = owner_of(state)
    return {**state, "mount": mount or f"(unknown: {state_dir})", "state_dir": str(state_dir),
            "server_alive": server_alive, "healthy": healthy, "requests": stats,
            "owner_alive": owner.alive() if owner else None}


def all_states() -> list[Path]:
    return sorted(p for p in STATE_ROOT.iterdir() if p.is_dir()) if STATE_ROOT.is_dir() else []


def remove_stale_backing(dirs: list[Path]) -> list[Path]:
    """Backing files in ``dirs`` that no emulation's state names (a crash or a reboot — which
    empties /run — left them); removed, and returned."""
    named = {_load(d).get("backing_file") for d in all_states()}
    removed = []
    for directory in dirs:
        for path in Path(directory).glob(f"{BACKING_PREFIX}*.img"):
            if str(path) not in named and BACKING_NAME_RE.fullmatch(path.name) and path.is_file() and not path.is_symlink():
                path.unlink(missing_ok=True)
                removed.append(path)
    return removed


def _state_holding(path: Path) -> dict[str, Any] | None:
    """The state of the innermost emulation holding ``path`` (one may be mounted inside
    another's file system), if any."""
    target = os.path.realpath(path)
    states = sorted((_load(d) for d in all_states()), key=lambda s: len(s.get("mount") or ""), reverse=True)
    for state in states:
        mount = state.get("mount")
        if mount and (target == mount or target.startswith(mount.rstrip("/") + "/")):
            return state
    return None


def mount_of(path: Path) -> Path | None:
    """The mount point of the emulation (biossd's own loop device) ``path`` lives on, if any."""
    return Path(state["mount"]) if (state := _state_holding(path)) is not None else None


def server_gone(path: Path) -> str | None:
    """Why the emulated disk ``path`` is on stopped serving mid-run (its server is gone: the run
    measured no disk), or None (it serves, or ``path`` is on no emulation or a native one)."""
    state = _state_holding(path)
    server = ProcessRef.from_record(state.get("server")) if state else None
    if state is None or state.get("profile") == NATIVE_PROFILE or (server is not None and server.alive()):
        return None
    return (f"the emulated disk at {state.get('mount')} lost its server (pid {(state.get('server') or {}).get('pid', '?')}) "
            "during the run: its device went away, so the run measured no disk and its outcome is not the tool's; "
            "`biossd cleanup` takes the emulation down, and the run must be made again on a new one")


def run_record(path: Path) -> dict[str, Any] | None:
    """For a run's manifest: the emulation ``path`` lives on, if any (real devices: ``None``)."""
    if (state := _state_holding(path)) is None:
        return None
    return {"emulated": state.get("profile") != NATIVE_PROFILE, "mechanism": state["mechanism"], "profile": state["profile"],
            "profile_name": state["profile_name"], "loop_device": state.get("loop_device"),
            "scale": state.get("scale", 1.0), "queue": state.get("queue"), "write_through": state.get("write_through")}
