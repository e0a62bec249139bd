"""Staging one tool run: its input files into the run's scratch directory (on the device under
study), the entry's unprofiled preparation steps (indexes, format conversions), and the argv of
the profiled command (issue 8).

A runnable catalogue entry's ``stage`` block says which file of its input kind (or of a
preparation step) each command value is (``files``, relative to scratch), the literal values
(``values``), and the ``prepare`` commands (run in scratch, natively, before profiling; they are
setup, not the measured program). In a container the command sees scratch at ``/mnt/0``.
"""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

from biossd.core.errors import BiossdError
from biossd.study.catalogue import Entry

SYNTH_RECORD = "synth.json"
PREPARE_TIMEOUT_S = 3600


class StageError(BiossdError, RuntimeError):
    pass


def run_prepare(argvs: list[list[str]], scratch: Path, what: str) -> None:
    """Run preparation commands (unprofiled setup: indexes, conversions) in ``scratch``; a
    missing program or a failure raises :class:`StageError` naming ``what`` and the command."""
    for argv in argvs:
        try:
            proc = subprocess.run(argv, cwd=scratch, capture_output=True, text=True, errors="replace",
                                  timeout=PREPARE_TIMEOUT_S)
        except FileNotFoundError:
            raise StageError(f"{what}: preparation step `{' '.join(argv)}`: {argv[0]} is not installed") from None
        if proc.returncode != 0:
            raise StageError(f"{what}: preparation step `{' '.join(argv)}` failed: "
                             f"{(proc.stderr or proc.stdout).strip()[-400:]}")


def stage(entry: Entry, input_dir: Path, scratch: Path, mem_bytes: int | None,
          container: str | None = None, settings: dict[str, str] | None = None,
          create_scratch: bool = True) -> list[str]:
    """Copy ``input_dir`` into ``scratch``, run the preparation, and return the tool's argv, its
    memory settings ``settings`` (:meth:`biossd.study.catalogue.Entry.settings`; the cap
    ``mem_bytes`` only reaches a container engine that enforces it). ``create_scratch=False``:
    the scratch must exist (:func:`existing_scratch`)."""
    block = entry.data.get("stage")
    if not block:
        raise StageError(f"{entry.source}: the entry has no stage block (is it recipe-only?)")
    if container is not None:
        check_image(entry, container)
    scratch = Path(scratch).resolve()
    if create_scratch:
        scratch.mkdir(parents=True, exist_ok=True)
    else:
        existing_scratch(scratch)
    for path in sorted(Path(input_dir).iterdir()):
        if path.is_file() and path.name != SYNTH_RECORD:
            shutil.copyfile(path, scratch / path.name)  # a real copy: the tool's reads hit this device
    run_prepare(block.get("prepare", []), scratch, entry.id)
    values = {name: str(scratch / rel) for name, rel in block.get("files", {}).items()}
    values.update({name: str(v) for name, v in block.get("values", {}).items()})
    return command_argv(entry, values, scratch, mem_bytes, container, settings)


def existing_scratch(scratch: Path) -> Path:
    """``scratch`` as a workflow made it (and marked it) for a run; staging never makes it. An
    emulated disk taken down under a run that is still staging (a study interrupted) leaves only
    its bare mount point, where a copy must fail rather than recreate the scratch unmarked."""
    if not Path(scratch).is_dir():
        raise StageError(f"the scratch {scratch} does not exist (its storage went away?): make it on the device "
                         "under study first; nothing was staged")
    return Path(scratch)


def check_image(entry: Entry, container: str) -> None:
    """Refuse a container engine that cannot run here, or an image not built."""
    from biossd.study import containers

    try:
        containers.check_engine(container)
    except containers.ContainerError as err:
        raise StageError(str(err)) from None
    if not containers.built(entry, container):
        raise StageError(f"{entry.id}'s {container} image is not built here; run "
                         f"`biossd catalogue build --engine {container} {entry.id}`")


def command_argv(entry: Entry, values: dict[str, str], scratch: Path, mem_bytes: int | None,
                 container: str | None = None, settings: dict[str, str] | None = None) -> list[str]:
    """The tool's argv for command ``values`` whose files are under ``scratch``: native, or in its
    ``container`` with ``scratch`` bound inside (the paths rewritten to match)."""
    if container is None:
        return entry.render(values, settings)
    from biossd.study import containers

    check_image(entry, container)
    inside = containers.inside_paths(values, Path(scratch))
    return containers.wrap_argv(container, entry, Path(scratch), entry.render(inside, settings), mem_bytes)
