"""Storage classes of a study run (issue 4 §3): a name (``ssd``, ``hdd``, ``nvme``, ...), a
scratch directory on the class's device (where a tool's input, temporaries and output live, and
where each run's swap file goes), and the devices traced (the one holding scratch, found by the
profiler, plus the run's swap device).

A class is *real* (its scratch directory is on a real device the user names, or the task
directory) or *emulated* (an emulated HDD is brought up for it under the storage root, see
:mod:`biossd.emulate`). ``biossd storage up`` resolves the classes into ``storage.json`` for the
pipeline; ``biossd storage down`` removes the emulations it made. Each run's manifest records
whether its storage was emulated, with which profile and mechanism (``emulated_storage``).
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

from biossd import emulate
from biossd.manifest import atomic_write_text

_CLASS_RE = re.compile(r"^[a-z][a-z0-9_-]*$")


class StorageError(ValueError):
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


def up(classes: list[str], root: Path, emulated: dict[str, str], size_bytes: int,
       scratch_dir: Path | None = None) -> dict[str, Any]:
    """Resolve each class to its scratch directory, bringing emulations up; on failure, those
    already up are taken down again."""
    bad = [c for c in classes if not _CLASS_RE.match(c)]
    if bad:
        raise StorageError(f"storage class names are lower-case words; got {bad}")
    unknown = sorted(set(emulated) - set(classes))
    if unknown:
        raise StorageError(f"--emulate names classes not in --classes: {unknown}")
    root = Path(root).resolve()
    root.mkdir(parents=True, exist_ok=True)
    resolved: dict[str, Any] = {}
    try:
        for name in classes:
            if name in emulated:
                mount = root / name
                state = emulate.up(mount, emulated[name], size_bytes, backing_dir=root)
                resolved[name] = {"scratch": str(mount), "emulated": True, "profile": emulated[name],
                                  "mechanism": state["mechanism"], "device": state["loop_device"]}
            else:
                resolved[name] = {"scratch": str(scratch_dir) if scratch_dir else None, "emulated": False}
    except BaseException:
        down(root)
        raise
    return resolved


def down(root: Path) -> list[str]:
    """Take down every emulation under ``root``; returns what was done."""
    root = Path(root).resolve()
    done = []
    for state_dir in emulate.all_states():
        mount = Path(emulate.status_of(state_dir)["mount"])
        if mount == root or root in mount.parents:
            done += emulate.down_state(state_dir)
    return done


def characterize_all(resolved: dict[str, Any], budget_s: float, out_dir: Path,
                     default_scratch: Path) -> dict[str, Path]:
    """Characterize each class's device, one class after another (never two at once: they
    would disturb each other). A class without a scratch directory is measured in
    ``default_scratch/<class>``. Writes ``out_dir/<class>.json``."""
    from biossd import characterize

    out_dir.mkdir(parents=True, exist_ok=True)
    written = {}
    for name, info in resolved.items():
        where = Path(info["scratch"]) if info.get("scratch") else default_scratch / name
        where.mkdir(parents=True, exist_ok=True)
        record = characterize.characterize(where, budget_s)
        record["storage_class"] = name
        written[name] = out_dir / f"{name}.json"
        atomic_write_text(written[name], json.dumps(record, indent=2) + "\n")
    return written


def write(resolved: dict[str, Any], path: Path) -> None:
    atomic_write_text(Path(path), json.dumps(resolved, indent=2) + "\n")
