"""Storage classes of a study run: a name (``ssd``, ``hdd``, ``nvme``, ...), a
scratch directory on the class's device (where a tool's input, temporaries and output live, and
where each run's swap file goes), and the devices traced (the one holding scratch, found by the
profiler, plus the run's swap device).

A class is *real* (its scratch directory is on a real device the user names, or the task
directory) or on a *loop device* of its own under the storage root (:mod:`biossd.host.hdd.emulate`):
an emulated HDD, or with the profile ``native`` the native disk itself, unthrottled, so that the
class's block trace holds only its runs' requests. ``biossd storage up`` resolves the classes into ``storage.json`` for the
pipeline; ``biossd storage down`` removes the emulations it made. Each run's manifest records
whether its storage was emulated, with which profile and mechanism (``emulated_storage``).
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

from biossd.core.errors import BiossdError
from biossd.core.files import atomic_write_text
from biossd.core.owners import ProcessRef
from biossd.host import devicerecord
from biossd.host.hdd import emulate
from biossd.measure import rundir
from biossd.study import layout

_CLASS_RE = re.compile(r"^[a-z][a-z0-9_-]*$")


class StorageError(BiossdError, ValueError):
    pass


def parse_emulate(specs: list[str]) -> dict[str, str]:
    """``["hdd=seagate-barracuda-7200"]`` → ``{"hdd": "seagate-barracuda-7200"}``."""
    out = {}
    for spec in specs:
        name, sep, profile = spec.partition("=")
        if not sep or not name or not profile:
            raise StorageError(f"--emulate takes CLASS=PROFILE, got {spec!r}")
        out[name] = profile
    return out


def reconcile() -> list[str]:
    """What a study does before it brings storage up (a resumed one after a SIGKILL of
    Nextflow above all): end the orphaned measured run, if any, then remove every leftover —
    only things whose owner is dead (:mod:`biossd.measure.leftovers`). Returns what was done."""
    from biossd.host import grouplock, hostlock
    from biossd.measure import leftovers

    grouplock.await_dead_group()  # a dead leader's members end their teardown first
    done = leftovers.stop_orphans()
    done += hostlock.reap_dead_holder()  # a tool a SIGKILLed profiler left running
    for kind, what, remove in leftovers.find_all():
        try:
            remove()
        except (OSError, BiossdError) as err:  # one leftover (or a look-alike) never stops the study
            done.append(f"could not remove {kind} {what} ({err}); `biossd doctor` lists it")
            continue
        done.append(f"removed {kind} {what}")
    return done


#: A class named so is a hard disk's; the native disk, given to any other class, stands for flash.
ROTATIONAL_CLASSES = ("hdd",)


def rotational(name: str, profile: str) -> bool:
    """The truth of a class for its devices' rotational flag: an emulated HDD is rotational; the
    native disk and an emulated cloud volume (``cloud:…``, a network device: no seek to schedule
    for) are what its class says (:data:`ROTATIONAL_CLASSES`), whatever the virtual disk under it
    reports."""
    hard_disk = profile != emulate.NATIVE_PROFILE and not profile.startswith("cloud:")
    return hard_disk or name in ROTATIONAL_CLASSES


def up(classes: list[str], root: Path, emulated: dict[str, str], size_bytes: int,
       scratch_dir: Path | None = None, owner: ProcessRef | None = None, scale: float = 1.0) -> dict[str, Any]:
    """Resolve each class to its scratch directory, bringing emulations up for ``owner`` (their
    disk models scaled by the study's divisor ``scale``); on failure, those already up are taken
    down again."""
    bad = [c for c in classes if not _CLASS_RE.match(c)]
    if bad:
        raise StorageError(f"storage class names are lower-case words; got {bad}")
    unknown = sorted(set(emulated) - set(classes))
    if unknown:
        raise StorageError(f"--emulate names classes not in --classes: {unknown}")
    root = Path(root).resolve()
    root.mkdir(parents=True, exist_ok=True)
    emulate.remove_stale_backing([root])
    resolved: dict[str, Any] = {}
    try:
        for name in classes:
            if name in emulated:
                mount = root / name
                state = emulate.up(mount, emulated[name], size_bytes, backing_dir=root, owner=owner, scale=scale,
                                   rotational=rotational(name, emulated[name]))
                resolved[name] = {"scratch": str(mount), "emulated": emulated[name] != emulate.NATIVE_PROFILE,
                                  "loop": True, "profile": emulated[name],
                                  "mechanism": state["mechanism"], "device": state["loop_device"],
                                  "scale": state["scale"], "queue": state["queue"],
                                  "write_through": state["write_through"]}
            else:
                resolved[name] = {"scratch": str(scratch_dir) if scratch_dir else None, "emulated": False}
    except BaseException:
        for info in resolved.values():  # only what this call brought up
            if info.get("loop"):
                emulate.down(Path(info["scratch"]))
        raise
    return resolved


def down(root: Path, owner: ProcessRef | None = None) -> list[str]:
    """Take down the emulations under ``root`` that belong to ``owner`` (or whose owner is
    gone); one in use by another live process is left alone and said so. Returns what was done."""
    from biossd.measure import leftovers

    root = Path(root).resolve()
    # A measured run of this owner's still going (Nextflow interrupted before it ended its
    # tasks) would hold the disk busy: it is over, so it is stopped first (it cleans up).
    done = leftovers.stop_orphans(owner) if owner is not None else []
    for state_dir in emulate.all_states():
        status = emulate.status_of(state_dir)
        mount = Path(status["mount"])
        if not (mount == root or root in mount.parents):
            continue
        theirs = emulate.owner_of(status)
        if theirs is not None and theirs.alive() and (owner is None or (theirs.pid, theirs.start_ticks)
                                                      != (owner.pid, owner.start_ticks)):
            done.append(f"left {mount} up: it is in use by {theirs.describe()}")
            continue
        if theirs is None and status["healthy"] and owner is not None:
            done.append(f"left {mount} up: it was brought up by hand")
            continue
        done += emulate.down_state(state_dir)
    return done


def characterize_all(resolved: dict[str, Any], budget_s: float, out_dir: Path,
                     default_scratch: Path, owner: ProcessRef | None = None,
                     reuse_from: Path | None = None, host: str | None = None) -> dict[str, Path]:
    """Characterize each class's device, one class after another (never two at once: they
    would disturb each other). A class without a scratch directory is measured in
    ``default_scratch/<class>``. Writes ``out_dir/<class>.json``.

    With ``reuse_from`` (a result folder of an earlier run on ``host``), each class's record
    there (:func:`biossd.study.layout.device_record_relpath`) is taken instead, once checked to
    be of the device the class is on now (:func:`biossd.host.characterize.reuse`); nothing is
    measured."""
    from biossd.host import characterize

    if reuse_from is not None and not host:
        raise StorageError("reusing device records needs the host name they were published under")
    out_dir.mkdir(parents=True, exist_ok=True)
    written = {}
    for name, info in resolved.items():
        if info.get("scratch"):
            where = Path(info["scratch"])
            where.mkdir(parents=True, exist_ok=True)
            record = _measure_or_reuse(characterize, where, budget_s, owner, reuse_from, host, name)
        else:  # a marked scratch of its own, removed however the measurement ends
            with rundir.scratch(Path(default_scratch) / name, unique=True) as where:
                record = _measure_or_reuse(characterize, where, budget_s, owner, reuse_from, host, name)
        record["storage_class"] = name
        written[name] = devicerecord.write(out_dir / f"{name}.json", record)
    return written


def _measure_or_reuse(characterize: Any, where: Path, budget_s: float, owner: ProcessRef | None,
                      reuse_from: Path | None, host: str | None, name: str) -> dict[str, Any]:
    if reuse_from is not None:
        return characterize.reuse(Path(reuse_from) / layout.device_record_relpath(host, name), where)
    return characterize.characterize(where, budget_s, owner=owner)


def write(resolved: dict[str, Any], path: Path) -> None:
    atomic_write_text(Path(path), json.dumps(resolved, indent=2) + "\n")
