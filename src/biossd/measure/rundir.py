"""Run directories: made, filled and published so that nothing of the user's is ever deleted
and an interrupted run leaves nothing.

* A run is written into a *partial* directory beside its target,
  ``PARENT/.NAME.biossd-partial-<pid>-<hex>``, whose first file is the marker :data:`MARKER`;
  only a complete run (its manifest written) is renamed onto the target. An interrupted or
  failed run's partial directory is removed — it carries the marker, so it is biossd's.
* A run's *scratch* (where the tool reads its staged input and writes its outputs, on the
  device under study) is made with the mark :data:`SCRATCH_MARKER` and removed when the run
  ends, however it ends (:func:`scratch`).
* biossd deletes a directory only when it carries its mark (the marker), and a complete run only
  when it holds nothing but the files its manifest lists. ``--out`` naming an existing directory
  without that mark is refused, and so are ``/``, the home directory, the current directory and any
  directory holding the current one, whatever they contain.
"""

from __future__ import annotations

import contextlib
import json
import os
import uuid
from collections.abc import Iterator
from pathlib import Path

from biossd.core import made
from biossd.core.errors import BiossdError
from biossd.core.files import remove_tree
from biossd.core.owners import ProcessRef
from biossd.core.partial import atomic_dir
from biossd.measure import manifest

MARKER = ".biossd-run"
PARTIAL_INFIX = ".biossd-partial-"
OLD_INFIX = ".biossd-replaced-"
#: What biossd writes into a complete run afterwards, besides the files its manifest lists: the
#: tool's answer scored against the input's truth (``biossd quality``).
QUALITY_FILE = "quality.json"
AFTER_RUN_FILES = (QUALITY_FILE,)
#: The mark of a run's scratch directory (an empty file), written before anything else in it.
SCRATCH_MARKER = ".biossd-scratch"


class RunDirError(BiossdError, ValueError):
    """The run directory cannot be used; the message names the path and what to do."""


def is_ours(path: Path) -> bool:
    """Whether ``path`` is a run directory biossd made: its marker :data:`MARKER`, a regular file,
    written first into every run (a ``run.json`` alone is not enough: anyone can write one)."""
    marker = Path(path) / MARKER
    return marker.is_file() and not marker.is_symlink()


def foreign_files(path: Path) -> list[str]:
    """The files under a complete run directory that its manifest does not list (a user's notes
    put there since): a run holding any is never replaced or deleted."""
    path = Path(path)
    try:
        listed = {entry["path"] for entry in manifest.read_manifest(path).get("files", [])}
    except (manifest.ManifestError, KeyError, TypeError, AttributeError):
        return []
    listed |= {manifest.MANIFEST_NAME, MARKER, *AFTER_RUN_FILES}
    return sorted(str(p.relative_to(path)) for p in path.rglob("*")
                  if (p.is_file() or p.is_symlink()) and str(p.relative_to(path)) not in listed)


def _protected(path: Path) -> str | None:
    """Why ``path`` may never be a run directory, or ``None``."""
    cwd = Path.cwd().resolve()
    if path == Path(path.anchor):
        return "it is the root directory"
    if path == Path.home().resolve():
        return "it is the home directory"
    if path == cwd:
        return "it is the current directory"
    if path in cwd.parents:
        return "it holds the current directory"
    return None


def check_target(out_dir: Path, overwrite: bool) -> Path:
    """The resolved target, after refusing what must not be written or replaced."""
    if any(ord(c) < 0x20 or ord(c) == 0x7f for c in str(out_dir)):
        raise RunDirError(f"--out {str(out_dir)!r} holds a control character (a newline or a tab); give a plain path")
    out_dir = Path(os.path.abspath(out_dir))
    if out_dir.is_symlink():
        raise RunDirError(f"--out {out_dir} is a symbolic link; give the directory itself")
    out_dir = out_dir.resolve()
    why = _protected(out_dir)
    if why:
        raise RunDirError(f"--out {out_dir} cannot be a run directory: {why}; give a new directory "
                          "(e.g. runs/NAME)")
    if out_dir.exists() and not out_dir.is_dir():
        raise RunDirError(f"--out {out_dir} exists and is not a directory; give a new path")
    if out_dir.is_dir():
        if not is_ours(out_dir):
            raise RunDirError(f"--out {out_dir} exists and is not a biossd run directory (no {MARKER} "
                              "marker); biossd never replaces what it did not make: give a "
                              "new path, or move that directory away yourself")
        if manifest.is_complete(out_dir) and not overwrite:
            raise RunDirError(f"{out_dir} already holds a complete run ({manifest.MANIFEST_NAME}); pass "
                              "--overwrite to replace it")
        _refuse_foreign(out_dir)
    return out_dir


def _refuse_foreign(run_dir: Path) -> None:
    others = foreign_files(run_dir)
    if others:
        raise RunDirError(f"{run_dir} holds files its run did not write ({', '.join(others[:5])}); biossd never "
                          "deletes them: move them away, or give another --out")


def partial_path(out_dir: Path) -> Path:
    """A fresh name for ``out_dir``'s partial directory (named before it is made, so a record
    of it can exist first)."""
    return out_dir.parent / f".{out_dir.name}{PARTIAL_INFIX}{os.getpid()}-{uuid.uuid4().hex[:8]}"


def make_partial(out_dir: Path, partial: Path | None = None) -> Path:
    """Create the partial directory for ``out_dir`` (``partial``, or a fresh name) with its
    marker written first."""
    out_dir.parent.mkdir(parents=True, exist_ok=True)
    me = ProcessRef.current()
    partial = partial or partial_path(out_dir)
    made.remember(partial, "partial run")  # found after a reboot too, if it is never finished
    partial.mkdir()
    marker = {"made_by": "biossd profile", **me.record(), "target": str(out_dir)}
    (partial / MARKER).write_text(json.dumps(marker) + "\n")
    return partial


def made_by(marker: Path, pid: object, start_ticks: object = None) -> bool:
    """Whether ``marker`` (JSON naming its maker's pid and start ticks) names the process ``pid``
    (with ``start_ticks`` when known): what a dead holder's record may delete."""
    try:
        made = json.loads(Path(marker).read_text())
    except (OSError, ValueError):
        return False
    return (isinstance(made, dict) and made.get("pid") == pid
            and (start_ticks is None or made.get("start_ticks") in (None, start_ticks)))


def partial_of(path: Path, pid: int, start_ticks: int | None) -> bool:
    """Whether ``path`` is a partial run directory made by the process ``pid`` (its marker)."""
    return PARTIAL_INFIX in Path(path).name and made_by(Path(path) / MARKER, pid, start_ticks)


def remove(path: Path) -> None:
    """Delete a run directory biossd made; anything else is refused (never deleted)."""
    path = Path(path)
    if not path.exists():
        return
    if not is_ours(path) or _protected(path.resolve()):
        raise RunDirError(f"{path} does not carry biossd's mark ({MARKER}); not deleting it")
    _refuse_foreign(path)
    remove_tree(path)
    made.forget(path)


@contextlib.contextmanager
def scratch(path: Path, unique: bool = False) -> Iterator[Path]:
    """A run's scratch directory, made and marked, and removed with what it holds when the block
    ends (success, error or signal). One an earlier attempt left (carrying the mark) is removed
    first; an existing directory without the mark is refused and never touched. ``unique``: the
    name gets this process's pid, so two studies whose tasks hash alike (the same task, one
    scratch root) never share a scratch; it is recorded (:mod:`biossd.core.made`) for cleanup."""
    path = Path(path).absolute()
    if unique:
        path = path.with_name(f"{path.name}-{os.getpid()}")
    if path.exists() or path.is_symlink():
        if not (path / SCRATCH_MARKER).is_file() or _protected(path.resolve()):
            raise RunDirError(f"{path} exists and is not a biossd scratch directory (no {SCRATCH_MARKER}); "
                              "not touching it: name another scratch or remove it yourself")
    if unique:  # recorded before it is made (a SIGKILL leaves it to cleanup); refused: no record
        made.remember(path, "scratch")
    try:
        remove_tree(path)  # an earlier attempt's, carrying the mark
        path.mkdir(parents=True)
        (path / SCRATCH_MARKER).touch()
    except BaseException:
        if unique and not path.exists():
            made.forget(path)
        raise
    try:
        yield path
    finally:
        if (path / SCRATCH_MARKER).is_file():
            with contextlib.suppress(OSError):  # a mount still in it is kept, for `biossd cleanup`
                remove_tree(path)
        if unique:
            made.forget(path)


@contextlib.contextmanager
def task_partial(out: Path) -> Iterator[Path]:
    """An experiment task's directory, made whole or not at all (:func:`biossd.core.partial.atomic_dir`:
    a marked partial directory beside ``out`` naming its maker, renamed to ``out`` when the block
    ends, removed when it raises). ``out`` must not exist: a task never overwrites."""
    out = Path(out).absolute()
    if out.exists():
        raise RunDirError(f"{out} exists; an experiment task never overwrites: choose another --out")
    with atomic_dir(out) as made_here:
        yield made_here


class RunAppeared(RunDirError):
    """A complete run appeared at the target while this one measured; it is kept."""


def publish(partial: Path, out_dir: Path, overwrite: bool = False) -> None:
    """Put the complete run at ``out_dir``: a rename; a run it replaces (checked to be biossd's
    again) is first renamed aside, then removed, so no moment lacks a complete run. Checked again
    here, after the wait for the host lock and the run: a complete run that appeared at
    ``out_dir`` meanwhile is kept, and this one refused (:class:`RunAppeared`), unless ``overwrite``."""
    old = None
    if out_dir.exists():
        if not is_ours(out_dir):
            raise RunDirError(f"{out_dir} appeared during the run and is not a biossd run directory; "
                              f"the new run is kept at {partial}")
        if manifest.is_complete(out_dir) and not overwrite:
            raise RunAppeared(f"{out_dir}: a complete run appeared there while this one ran; it is kept and this "
                              "run is not (pass --overwrite to replace it)")
        try:
            _refuse_foreign(out_dir)
        except RunDirError as err:
            raise RunDirError(f"{err}; the new run is kept at {partial}") from None
        old = out_dir.parent / f".{out_dir.name}{OLD_INFIX}{os.getpid()}-{uuid.uuid4().hex[:8]}"
        made.remember(old, "replaced run")  # a SIGKILL while it is removed leaves it to `biossd cleanup`
        os.rename(out_dir, old)
    os.rename(partial, out_dir)
    made.forget(partial)
    if old is not None:
        remove(old)
