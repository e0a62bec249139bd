"""A directory made whole or not at all: the one home of "write under a partial name, rename when
complete" for directories (a prepared input, a shared copy, a synthetic input's files, an unpacked
image, an installed tool). Each partial carries biossd's mark and is recorded with
:mod:`biossd.core.made` while it exists, so ``biossd cleanup`` removes one whose maker was killed."""

from __future__ import annotations

import contextlib
import json
import os
import uuid
from pathlib import Path
from typing import Iterator

from biossd.core import made
from biossd.core.files import MARK_PREFIX, remove_tree
from biossd.core.owners import ProcessRef
from biossd.core.signals import signals_ignored

#: Every partial directory's name holds this, after ``.<final name>``.
INFIX = ".biossd-partial-dir-"
#: The mark inside a partial directory (removed just before the rename, so the final directory
#: holds only what its maker wrote): JSON naming its maker (pid and start ticks).
MARKER = MARK_PREFIX + "partial-dir"
#: The kind of its record in :mod:`biossd.core.made`.
KIND = "partial directory"


def partial_path(final: Path) -> Path:
    """A fresh partial name beside ``final``: the maker's pid and a random part."""
    final = Path(final)
    return final.with_name(f".{final.name}{INFIX}{os.getpid()}-{uuid.uuid4().hex[:8]}")


def _mark(path: Path) -> None:
    (path / MARKER).write_text(json.dumps(ProcessRef.current().record()) + "\n")


def made_by(path: Path, pid: object, start_ticks: object = None) -> bool:
    """Whether ``path`` is a partial directory made by the process ``pid`` (with ``start_ticks``
    when known): what a dead maker's host-lock record may have removed."""
    if not is_marked(path):
        return False
    try:
        maker = json.loads((Path(path) / MARKER).read_text())
    except (OSError, ValueError):
        return False
    return (isinstance(maker, dict) and maker.get("pid") == pid
            and (start_ticks is None or maker.get("start_ticks") in (None, start_ticks)))


def is_marked(path: Path) -> bool:
    """Whether ``path`` is a partial directory biossd made (its name and its mark)."""
    path = Path(path)
    return path.is_dir() and not path.is_symlink() and INFIX in path.name and (path / MARKER).is_file()


@contextlib.contextmanager
def atomic_dir(final: Path, *, publish: bool = True, replace: bool = False) -> Iterator[Path]:
    """Yield a new, marked, recorded partial directory beside ``final``.

    When the block ends normally and ``publish`` is true, the partial is renamed to ``final``
    (which must not exist then: :class:`FileExistsError`, the partial removed — unless
    ``replace``: the caller has checked that an existing ``final`` is biossd's, and it is swapped
    out, marked, and removed after the rename, so an interruption leaves the old or the new one
    whole); with ``publish``
    false, the block has moved what it needs out of it, and it is removed. On any exception, a
    signal's included, the partial is removed with the signals ignored (a second Ctrl-C does not
    cut the rollback short), and the exception goes on."""
    final = Path(final)
    partial = partial_path(final)
    final.parent.mkdir(parents=True, exist_ok=True)
    made.remember(partial, KIND)
    try:
        partial.mkdir()
        _mark(partial)
        yield partial
        if publish:
            old = _swap_out(final) if replace else None
            (partial / MARKER).unlink()
            if final.exists() or final.is_symlink():
                raise FileExistsError(f"{final} appeared while it was being made; the new copy was not put in its place")
            os.rename(partial, final)
            made.forget(partial)
            if old is not None:
                with signals_ignored():
                    _remove(old)
    except BaseException:
        with signals_ignored():
            _remove(partial)
        raise
    else:
        if not publish:
            with signals_ignored():
                _remove(partial)


def _swap_out(final: Path) -> Path | None:
    """Move an existing ``final`` aside under a marked, recorded partial name; ``None`` if none."""
    if not final.is_dir() or final.is_symlink():
        return None
    old = partial_path(final)
    made.remember(old, KIND)
    _mark(final)
    os.rename(final, old)
    return old


def _remove(partial: Path) -> None:
    with contextlib.suppress(FileNotFoundError):
        remove_tree(partial)
    made.forget(partial)
