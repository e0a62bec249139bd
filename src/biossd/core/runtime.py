"""biossd's runtime directory: where the host lock, its records and a pipeline session's leader
socket live (:mod:`biossd.host.hostlock`, :mod:`biossd.measure.own_pipeline.handoff`). Standard library only,
and light: a pipeline task reads it before anything else is imported."""

from __future__ import annotations

import os
from pathlib import Path

from biossd.core.errors import BiossdError

RUN_ROOT = Path("/run/biossd")


def runtime_dir() -> Path:
    """``/run/biossd`` for root; a per-user directory otherwise (which serializes only that
    user's runs: without root there are no caps, swap or block traces to collide)."""
    if os.geteuid() == 0:
        return RUN_ROOT
    import tempfile

    base = os.environ.get("XDG_RUNTIME_DIR") or tempfile.gettempdir()
    return Path(base) / f"biossd-{os.getuid()}"


class UnsafeRuntimeDir(BiossdError, RuntimeError):
    """A non-root user's runtime directory that another user could write into or redirect."""


def checked_runtime_dir() -> Path:
    """:func:`runtime_dir`, refused (:class:`UnsafeRuntimeDir`) unless it is a real directory (not
    a symlink) of this user (root's for root) that no other user can write into — every read and
    removal of the lock's records goes through here, since those records decide what biossd kills
    and removes. A directory that does not exist yet is fine (there is nothing to read)."""
    import stat

    directory = runtime_dir()
    try:
        st = os.lstat(directory)
    except FileNotFoundError:
        return directory
    others = 0o022 if os.geteuid() == 0 else 0o077
    problem = ("is a symlink" if stat.S_ISLNK(st.st_mode) else "is not a directory" if not stat.S_ISDIR(st.st_mode)
               else f"is owned by uid {st.st_uid}, not {os.geteuid()}" if st.st_uid != os.geteuid()
               else f"has mode {stat.S_IMODE(st.st_mode):04o}: others may write into it" if stat.S_IMODE(st.st_mode) & others
               else None)
    if problem:
        raise UnsafeRuntimeDir(f"biossd's runtime directory {directory} {problem}; nothing in it was read or acted "
                               "on: remove it (or set XDG_RUNTIME_DIR to a directory of your own) and run again")
    return directory


def ensure_runtime_dir() -> Path:
    """:func:`runtime_dir`, made if missing (0755 for root's ``/run/biossd``, 0700 for a user's)
    and checked (:func:`checked_runtime_dir`)."""
    directory = runtime_dir()
    directory.mkdir(parents=True, exist_ok=True, mode=0o755 if os.geteuid() == 0 else 0o700)
    return checked_runtime_dir()
