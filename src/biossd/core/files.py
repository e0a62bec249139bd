"""Files written whole or not at all, and their checksums: shared by every stage that writes a
file a later stage (or the user) reads."""

from __future__ import annotations

import hashlib
import os
import tempfile
from pathlib import Path

_HASH_CHUNK_BYTES = 1 << 20
_FILE_MODE = 0o666


def _current_umask() -> int:
    mask = os.umask(0)
    os.umask(mask)
    return mask


def sha256_file(path: Path) -> str:
    """The hex SHA-256 of a file, read in chunks."""
    digest = hashlib.sha256()
    with open(path, "rb") as handle:
        for chunk in iter(lambda: handle.read(_HASH_CHUNK_BYTES), b""):
            digest.update(chunk)
    return digest.hexdigest()


def atomic_write_text(path: Path, text: str) -> None:
    """Write ``text`` to ``path`` via a temporary file in the same directory and a rename."""
    path = Path(path)
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    try:
        os.fchmod(fd, _FILE_MODE & ~_current_umask())
        with os.fdopen(fd, "w") as handle:
            handle.write(text)
            handle.flush()
            os.fsync(handle.fileno())
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise
