"""Files written whole or not at all, and their checksums: shared by every stage that writes a
file a later stage (or the user) reads."""

from __future__ import annotations

import hashlib
import os
import stat
import tempfile
from dataclasses import dataclass
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


#: The float format of the tables biossd writes as CSV (Parquet keeps every bit): six significant
#: digits for a measured value; a whole number (a byte count, a cap) is written whole.
CSV_FLOAT_FORMAT = "%.6g"
#: Whole numbers up to this magnitude are exact in a float (2**53) and are written digit for digit.
_EXACT_WHOLE_BELOW = float(1 << 53)


def csv_float(value: float) -> str:
    """One float of a CSV table: ``1089536.0`` → ``1089536`` (a byte count stays exact),
    ``0.123456789`` → ``0.123457``."""
    if value.is_integer() and abs(value) < _EXACT_WHOLE_BELOW:
        return f"{value:.0f}"
    return CSV_FLOAT_FORMAT % value


def write_frame(table, path: Path, what: str = "the table") -> Path:
    """Write a pandas DataFrame as CSV or Parquet (by ``path``'s suffix) via a temporary file in
    the same directory and a rename; any other suffix is refused, naming ``what``."""
    path = Path(path)
    if path.suffix not in (".csv", ".parquet"):
        raise ValueError(f"{path}: {what} is written as .csv or .parquet")
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    os.close(fd)
    try:
        if path.suffix == ".parquet":
            table.to_parquet(tmp, index=False)
        else:
            table.to_csv(tmp, index=False, float_format=csv_float)
        os.chmod(tmp, _FILE_MODE & ~_current_umask())
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise
    return path


#: The kernel's table of this process's mounts (``man 5 proc``): ``ID PARENT MAJ:MIN ROOT POINT
#: OPTIONS [TAGS...] - FSTYPE SOURCE SUPER_OPTIONS``, with space, tab, newline and backslash in a
#: path written as octal escapes (``\040``, ``\011``, ``\012``, ``\134``).
_MOUNTINFO = Path("/proc/self/mountinfo")
_MOUNT_POINT_FIELD = 4
_MOUNT_OPTIONS_FIELD = 5


def unescape_octal(text: str) -> str:
    """A path as the kernel's tables write it (``/proc/self/mountinfo``, ``/proc/swaps``), with
    its octal escapes decoded: the one decoder every reader of those tables uses."""
    import re

    return re.sub(r"\\([0-7]{3})", lambda octal: chr(int(octal.group(1), 8)), text)


@dataclass(frozen=True)
class Mount:
    """One line of the kernel's mount table, paths decoded."""

    point: str
    fstype: str
    source: str
    mount_options: str
    super_options: str


def mount_table() -> list[Mount]:
    """Every mount this process sees, in the kernel's order (empty when the table is unreadable)."""
    try:
        lines = _MOUNTINFO.read_text().splitlines()
    except OSError:
        return []
    table = []
    for line in lines:
        left, _, right = line.partition(" - ")
        fields = left.split(" ")
        if len(fields) <= _MOUNT_OPTIONS_FIELD:
            continue
        fstype, source, super_options = (right.split(" ") + ["", "", ""])[:3]
        table.append(Mount(unescape_octal(fields[_MOUNT_POINT_FIELD]), fstype, unescape_octal(source),
                           fields[_MOUNT_OPTIONS_FIELD], super_options))
    return table


def mounts_under(path: Path) -> list[str]:
    """The mount points at or below ``path`` (resolved), in the kernel's order."""
    root = os.path.realpath(path)
    prefix = root.rstrip("/") + "/"
    return [m.point for m in mount_table() if m.point == root or m.point.startswith(prefix)]


def is_mount_point(path: Path | str) -> bool:
    """Whether ``path`` is a mount point, by the kernel's mount table: unlike
    :func:`os.path.ismount`, true also for a FUSE mount whose server died (``stat`` fails there
    with ENOTCONN), which is exactly the mount a cleanup must still take down."""
    return os.path.realpath(path) in mounts_under(Path(path))


#: Every mark biossd puts in a directory it makes starts so (the run's, the scratch's, the
#: partial directory's): :func:`remove_tree` deletes them last.
MARK_PREFIX = ".biossd-"


def remove_tree(path: Path, ignore_errors: bool = False) -> None:
    """Delete the directory ``path`` and what it holds, never crossing into a live mount: with a
    file system still mounted at or below it (an emulated disk, an s3fs bucket), nothing is
    deleted and :class:`OSError` (EBUSY) names the mount, to be taken down first. The directory's
    marks (:data:`MARK_PREFIX`) are deleted after everything else. ``ignore_errors``: a failure
    (that refusal included) leaves what could not be deleted, silently — for a state directory
    whose loss is not worth an error at the end of a teardown."""
    if ignore_errors:
        try:
            remove_tree(path)
        except OSError:
            pass
        return
    import errno
    import shutil

    path = Path(path)
    if not path.exists() and not path.is_symlink():
        return
    if path.is_symlink() or not path.is_dir():
        path.unlink()
        return
    live = mounts_under(path)
    if live:
        raise OSError(errno.EBUSY, f"{path} holds a mounted file system at {live[0]}: not deleting into it "
                      "(take that mount down first)")
    # The marks (.biossd-run, .biossd-scratch, ...) go last: a removal cut short leaves a directory
    # that still says whose it is, for `biossd cleanup` to finish.
    for child in sorted(path.iterdir(), key=lambda c: c.name.startswith(MARK_PREFIX)):
        if child.is_dir() and not child.is_symlink():
            shutil.rmtree(child)
        else:
            child.unlink()
    path.rmdir()


def private_folder(path: Path) -> str | None:
    """Why ``path`` is not a folder that only this process's user can write (None when it is):
    what biossd reads there as root (a session's marks and its tracefs pool list) must not come
    from another user. It must be a real folder (not a link), owned by this user, and writable by
    neither its group nor others."""
    try:
        st = os.lstat(path)
    except FileNotFoundError:
        return f"{path} does not exist"
    if stat.S_ISLNK(st.st_mode) or not stat.S_ISDIR(st.st_mode):
        return f"{path} is not a folder (a link or a file)"
    if st.st_uid != os.geteuid():
        return f"{path} belongs to uid {st.st_uid}, not to this process's user (uid {os.geteuid()})"
    if st.st_mode & (stat.S_IWGRP | stat.S_IWOTH):
        return f"{path} is writable by its group or by others (mode {stat.S_IMODE(st.st_mode):04o})"
    return None
