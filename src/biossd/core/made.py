"""What biossd makes on disk that outlives a reboot, recorded while it exists.

The records of live work are kept in ``/run`` (the host lock's, the emulations'), which a reboot
empties; but a run's swap file and its partial run directory (or an experiment task's) sit on the
device under study and stay. Each of these is recorded here, in a directory that persists
(``/var/lib/biossd/made`` for root, ``$XDG_STATE_HOME/biossd/made`` otherwise), from just before
it is made until it is removed: its path, its kind and its maker (pid, start ticks and boot).
``biossd cleanup`` finds, through these records, each one whose maker is gone — another boot, or
a dead process — and removes it only if it still carries biossd's mark
(:func:`biossd.measure.leftovers.find_all`). The directory is removed again when it holds no record.
"""

from __future__ import annotations

import hashlib
import json
import os
from pathlib import Path

from biossd.core.files import atomic_write_text
from biossd.core.owners import ProcessRef, boot_id

#: Root's record directory; another user's is under their XDG state directory.
ROOT_DIR = Path("/var/lib/biossd/made")
KINDS = ("swap file", "partial run", "scratch", "replaced run", "partial directory")
#: How often a record is written before giving up, each time after making the directory again that
#: another process's :func:`forget` removed as empty in between.
WRITE_ATTEMPTS = 3


def records_dir() -> Path:
    if os.geteuid() == 0:
        return ROOT_DIR
    state = os.environ.get("XDG_STATE_HOME") or str(Path.home() / ".local" / "state")
    return Path(state) / "biossd" / "made"


def _record_path(path: Path) -> Path:
    return records_dir() / (hashlib.sha256(str(Path(path).absolute()).encode()).hexdigest()[:24] + ".json")


def remember(path: Path, kind: str) -> None:
    """Record that this process is about to make ``path`` (a :data:`KINDS` thing)."""
    if kind not in KINDS:
        raise ValueError(f"unknown kind {kind!r}; one of {KINDS}")
    record = {"path": str(Path(path).absolute()), "kind": kind, "boot_id": boot_id(), **ProcessRef.current().record()}
    target = _record_path(path)
    for attempt in range(1, WRITE_ATTEMPTS + 1):
        target.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
        try:
            atomic_write_text(target, json.dumps(record) + "\n")
            return
        except FileNotFoundError:
            # Another biossd process forgot its last record and removed the then empty directory
            # between the mkdir and the write: make it again.
            if target.parent.is_dir() or attempt == WRITE_ATTEMPTS:
                raise


def forget(path: Path) -> None:
    """``path`` is gone (removed, or renamed into a complete run): its record goes, and the record
    directory with the last one."""
    _record_path(path).unlink(missing_ok=True)
    _prune()


def _prune() -> None:
    here = records_dir()
    for directory in (here, here.parent):
        try:
            directory.rmdir()  # only when empty
        except OSError:
            return


def _maker_gone(record: dict) -> bool:
    if record.get("boot_id") != boot_id():
        return True
    maker = ProcessRef.from_record(record)
    return maker is None or not maker.alive()


def gone_makers() -> list[dict]:
    """The records whose maker is gone (another boot, or a dead process), each with its
    ``record_file``: what ``biossd cleanup`` looks at (:mod:`biossd.measure.leftovers` checks
    each thing's mark before it removes anything)."""
    here = records_dir()
    out = []
    for record_file in sorted(here.glob("*.json")) if here.is_dir() else []:
        try:
            record = json.loads(record_file.read_text())
            record["path"], record["kind"]
        except (OSError, ValueError, KeyError, TypeError):
            continue
        if _maker_gone(record):
            out.append({**record, "record_file": str(record_file)})
    return out
