"""The state directory of a service biossd runs on the host (its one-node SLURM cluster, its Docker
engine): ``<dir>/state.json`` names the service's owner (pid and start ticks) and its daemons, is
written atomically at every step, and decides who may bring the service up, and when it is a
leftover for ``biossd cleanup``."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any, Callable

from biossd.core.files import atomic_write_text
from biossd.core.owners import ProcessRef

STATE_FILE = "state.json"


def save(state: dict[str, Any]) -> None:
    """Write ``state`` (its ``dir`` names the directory) atomically."""
    atomic_write_text(Path(state["dir"]) / STATE_FILE, json.dumps(state, indent=2) + "\n")


def load(state_dir: Path) -> dict[str, Any] | None:
    try:
        return json.loads((Path(state_dir) / STATE_FILE).read_text())
    except (OSError, ValueError):
        return None


def leftover(state_dir: Path) -> dict[str, Any] | None:
    """The record if its owner is dead (``biossd cleanup`` takes the service down)."""
    state = load(state_dir)
    if state is None:
        return None
    owner = ProcessRef.from_record(state.get("owner"))
    return state if owner is not None and not owner.alive() else None


def claim(state_dir: Path, what: str, down_command: str, down: Callable[[Path], object],
          error: type[Exception]) -> None:
    """Before ``what`` is brought up in ``state_dir``: refuse one that is up and owned (or brought
    up by hand), take down one whose owner died, refuse a directory that holds no record."""
    state_dir = Path(state_dir)
    old = load(state_dir)
    if old is not None:
        theirs = ProcessRef.from_record(old.get("owner"))
        if theirs is None or theirs.alive():
            raise error(f"a biossd {what} is already up ({state_dir}), "
                        + (f"owned by {theirs.describe()}" if theirs else "brought up by hand")
                        + f"; `{down_command}` takes it down")
        down(state_dir)
    elif state_dir.exists():
        raise error(f"{state_dir} exists and holds no {what} record; move it away")
