"""The run manifest ``RUN_DIR/run.json``: schema, atomic writing, and completeness.

A run directory is complete only when its manifest exists; the manifest is written last,
through a temporary name and ``os.replace``, so a reader never sees half a manifest and every
reader ignores a directory without one.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from biossd.core.errors import BiossdError
from biossd.core.files import atomic_write_text, sha256_file  # noqa: F401 (part of this module's API)

MANIFEST_NAME = "run.json"
SCHEMA = "biossd.run"
SCHEMA_VERSION = 1
OUTCOMES = ("ok", "failed", "oom", "timeout", "interrupted")


class ManifestError(BiossdError, ValueError):
    """A manifest that is missing, unreadable or of an unknown schema."""


def file_record(run_dir: Path, path: Path) -> dict[str, Any]:
    """Size and sha256 of one file of a run, with its path relative to the run directory."""
    return {
        "path": str(Path(path).relative_to(run_dir)),
        "size_bytes": Path(path).stat().st_size,
        "sha256": sha256_file(path),
    }


def write_manifest(run_dir: Path, manifest: dict[str, Any]) -> Path:
    """Stamp schema fields and write ``run.json`` atomically; returns its path."""
    if manifest.get("outcome") not in OUTCOMES:
        raise ManifestError(f"outcome must be one of {OUTCOMES}, got {manifest.get('outcome')!r}")
    body = {"schema": SCHEMA, "schema_version": SCHEMA_VERSION, **manifest}
    path = Path(run_dir) / MANIFEST_NAME
    atomic_write_text(path, json.dumps(body, indent=2, sort_keys=True) + "\n")
    return path


def is_complete(run_dir: Path) -> bool:
    return (Path(run_dir) / MANIFEST_NAME).is_file()


def read_manifest(run_dir: Path) -> dict[str, Any]:
    """Read and check a run's manifest; raises :class:`ManifestError` naming the file."""
    path = Path(run_dir) / MANIFEST_NAME
    try:
        body = json.loads(path.read_text())
    except FileNotFoundError:
        raise ManifestError(f"{path}: no manifest — the run is incomplete") from None
    except json.JSONDecodeError as err:
        raise ManifestError(f"{path}: not valid JSON ({err})") from None
    if not isinstance(body, dict):
        raise ManifestError(f"{path}: a JSON {type(body).__name__}, not a run's manifest (an object)")
    if body.get("schema") != SCHEMA:
        raise ManifestError(f"{path}: field 'schema' is {body.get('schema')!r}, expected {SCHEMA!r}")
    if body.get("schema_version") != SCHEMA_VERSION:
        raise ManifestError(
            f"{path}: field 'schema_version' is {body.get('schema_version')!r}; this biossd reads "
            f"version {SCHEMA_VERSION}"
        )
    return body


def verify(run_dir: Path, body: dict[str, Any] | None = None) -> list[str]:
    """What no longer matches the manifest's record of the run's files (missing, another size,
    another sha256), each naming the file; empty when the run is intact."""
    run_dir = Path(run_dir)
    body = read_manifest(run_dir) if body is None else body
    problems = []
    for entry in body.get("files", []):
        path = run_dir / entry["path"]
        if not path.is_file():
            problems.append(f"{path}: missing (the manifest lists it)")
        elif path.stat().st_size != entry["size_bytes"]:
            problems.append(f"{path}: {path.stat().st_size} bytes, the manifest says {entry['size_bytes']}")
        elif sha256_file(path) != entry["sha256"]:
            problems.append(f"{path}: sha256 differs from the manifest's")
    return problems


def window_s(body: dict[str, Any]) -> float:
    """How long after a run's command started its traced window ends: when the flush of its
    scratch after it ended (``flush_ended_s``, on the run's clock), so that the dirty data the
    command left is the run's I/O. A record without it (older runs) ends the window at the
    command's wall time plus the flush's own time, which leaves out the time between the two."""
    ended, started = body.get("flush_ended_s"), body.get("command_started_s")
    if ended is not None and started is not None:
        return float(ended) - float(started)
    return float(body.get("wall_s") or 0.0) + float(body.get("flush_s") or 0.0)
