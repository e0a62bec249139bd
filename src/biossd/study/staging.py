"""Staging one tool run: its input files into the run's scratch directory (on the device under
study), the entry's unprofiled preparation steps (indexes, format conversions), and the argv of
the profiled command.

A runnable catalogue entry's ``stage`` block says which file of its input kind (or of a
preparation step) each command value is (``files``, relative to scratch), the literal values
(``values``), and the ``prepare`` commands (run in scratch, natively, before profiling; they are
setup, not the measured program). In a container the command sees scratch at ``/mnt/0``.

A study prepares each input once per tool (:func:`prepare`, Nextflow's cached PREPARE task) and
every run of it stages the prepared directory: a copy of the input and of what the preparation
made, with no preparation repeated per run (the copy is still a real one, so the tool's reads hit
the device under study). On a storage class of biossd's own (a loop device it brought up, removed
with it) the copy is made once per prepared input and class (:func:`shared_copy`) and each run's
scratch holds hard links to it: the same blocks on the same device, read cold after the page
cache is dropped, laid out alike for every repeat, and not written again for each.
"""

from __future__ import annotations

import errno
import hashlib
import json
import os
import shutil
import subprocess
from pathlib import Path
from typing import Any

from biossd.core import partial as partial_dir
from biossd.core.errors import BiossdError
from biossd.core.files import remove_tree
from biossd.core.partial import atomic_dir
from biossd.study.catalogue import Entry

SYNTH_RECORD = "synth.json"
#: Where a class's shared copies live, under its mount: ``<mount>/SHARED_DIR/<key>/``.
SHARED_DIR = "biossd-inputs"
#: A shared copy's record (written last, so a copy without it is incomplete): the prepared
#: directory it copies and each file's size and modification time, checked before every link.
SHARED_RECORD = ".biossd-shared-copy.json"
#: Shared copies never leave their class's disk less than this share free: the runs' outputs,
#: temporaries and swap files need the room more (copies are evicted first, then made).
SHARED_MIN_FREE_FRACTION = 0.5
#: The record :func:`prepare` leaves in a prepared directory: which tool it was prepared for, the
#: input's bytes, the preparation commands.
PREPARED_RECORD = "prepared.json"
PREPARE_TIMEOUT_S = 3600
#: The tool's temporary directory, inside its scratch: what it writes "to /tmp" (GNU sort's
#: spills, a JVM's extracted native libraries and htsjdk's temporaries, OpenMPI's session
#: directory) lands on the device under study — the paper's machines differed only in their
#: secondary storage (Lee, Min and Yoon 2015, section 5.1), so their tools' temporary files were on
#: the device compared — and is removed with the scratch however the run ends.
TOOL_TMP_NAME = "biossd-tmp"


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
          create_scratch: bool = True, shared_root: Path | None = None,
          cidfile: Path | None = None) -> list[str]:
    """Copy ``input_dir`` into ``scratch``, run the preparation, and return the tool's argv, its
    memory settings ``settings`` (:meth:`biossd.study.catalogue.Entry.settings`; the cap
    ``mem_bytes`` only reaches a container engine that enforces it). ``create_scratch=False``:
    the scratch must exist (:func:`existing_scratch`). A prepared input with ``shared_root`` (on
    the scratch's file system) is linked from its shared copy there (:func:`shared_copy`)."""
    block = stage_block(entry)
    if container is not None:
        check_image(entry, container)
    scratch = Path(scratch).resolve()
    if create_scratch:
        scratch.mkdir(parents=True, exist_ok=True)
    else:
        existing_scratch(scratch)
    record = prepared_record(Path(input_dir))
    if record is not None:
        if record.get("tool") != entry.id:
            raise StageError(f"{input_dir} was prepared for {record.get('tool')!r}, not {entry.id}; "
                             f"prepare the input for {entry.id} (`biossd catalogue prepare {entry.id}`)")
        if shared_root is not None:
            link_tree(shared_copy(Path(input_dir), Path(shared_root)), scratch)
        else:
            copy_prepared(Path(input_dir), scratch)
    else:
        for path in sorted(Path(input_dir).iterdir()):
            if path.is_file() and path.name != SYNTH_RECORD:
                shutil.copyfile(path, scratch / path.name)  # a real copy: the tool's reads hit this device
        run_prepare(block.get("prepare", []), scratch, entry.id)
    values = {name: str(scratch / rel) for name, rel in block.get("files", {}).items()}
    values.update({name: str(v) for name, v in block.get("values", {}).items()})
    return command_argv(entry, values, scratch, mem_bytes, container, settings, cidfile)


def stage_block(entry: Entry) -> dict[str, Any]:
    """The entry's ``stage`` block; a recipe-only entry has none and cannot be staged."""
    block = entry.data.get("stage")
    if not block:
        raise StageError(f"{entry.source}: the entry has no stage block (is it recipe-only?)")
    return block


def input_bytes(input_dir: Path) -> int:
    """The bytes of the input's files (its ``synth.json`` record not counted)."""
    return sum(p.stat().st_size for p in Path(input_dir).iterdir() if p.is_file() and p.name != SYNTH_RECORD)


def prepare(entry: Entry, input_dir: Path, out: Path) -> dict[str, Any]:
    """Prepare ``input_dir`` for ``entry`` once, into the new directory ``out``: a link to each
    input file, the entry's preparation commands run beside them (indexes, dictionaries), and
    :data:`PREPARED_RECORD`. Every run of the input then stages ``out`` (:func:`stage`). Written
    under a temporary name and renamed when complete; an existing ``out`` is refused."""
    block = stage_block(entry)
    input_dir, out = Path(input_dir).resolve(), Path(out)
    if not input_dir.is_dir():
        raise StageError(f"--input {input_dir}: no such directory (an input from `biossd data synth`)")
    if out.exists() or out.is_symlink():
        raise StageError(f"{out} exists; `biossd catalogue prepare` writes a new directory and replaces nothing")
    check_input(input_dir)
    with atomic_dir(out) as partial:
        for path in sorted(input_dir.iterdir()):
            if path.is_file() and path.name != SYNTH_RECORD:
                (partial / path.name).symlink_to(path.resolve())
        run_prepare(block.get("prepare", []), partial, entry.id)
        record = {"tool": entry.id, "input": str(input_dir), "input_bytes": input_bytes(input_dir),
                  "prepare": block.get("prepare", [])}
        (partial / PREPARED_RECORD).write_text(json.dumps(record, indent=1) + "\n")
    return record


def check_input(input_dir: Path) -> None:
    """The input's files are those its ``synth.json`` records, byte for byte (size and sha256):
    an input changed or damaged since it was made is refused, naming the file, before any run
    reads it. An input without a record (a user's own files) is taken as it is."""
    from biossd.core.files import sha256_file

    record_path = Path(input_dir) / SYNTH_RECORD
    if not record_path.is_file():
        return
    try:
        files = json.loads(record_path.read_text())["files"]
    except (ValueError, KeyError, TypeError) as err:
        raise StageError(f"{record_path}: not a synth record ({err}); make the input again") from None
    for name, want in sorted(files.items()):
        path = Path(input_dir) / name
        if not path.is_file():
            raise StageError(f"{path}: recorded in {record_path} but missing; make the input again")
        if path.stat().st_size != want.get("size_bytes") or sha256_file(path) != want.get("sha256"):
            raise StageError(f"{path} is not the file {record_path} records (size or sha256 differs); "
                             "make the input again (biossd data synth)")


def prepared_record(input_dir: Path) -> dict[str, Any] | None:
    """The :data:`PREPARED_RECORD` of a prepared directory, or None for a plain input."""
    path = Path(input_dir) / PREPARED_RECORD
    if not path.is_file():
        return None
    try:
        return json.loads(path.read_text())
    except ValueError as err:
        raise StageError(f"{path}: not a prepared directory's record ({err}); prepare the input again") from None


def copy_prepared(prepared: Path, scratch: Path) -> None:
    """Copy a prepared directory into ``scratch``: real copies of the input's files (followed
    links) and of the preparation's, modification times kept (an index stays newer than its file,
    as GATK's Tribble indexes check)."""
    for path in sorted(Path(prepared).iterdir()):
        if path.name in (PREPARED_RECORD, SYNTH_RECORD):
            continue
        if path.is_dir():
            shutil.copytree(path, scratch / path.name, copy_function=shutil.copy2)
        else:
            shutil.copy2(path, scratch / path.name)


def _file_stats(root: Path) -> dict[str, list[int]]:
    """Each file under ``root`` (but the shared record, and a partial directory's mark) by relative
    path: size and mtime (ns)."""
    out = {}
    for path in sorted(Path(root).rglob("*")):
        if path.is_file() and path.name not in (SHARED_RECORD, partial_dir.MARKER):
            st = path.stat()
            out[str(path.relative_to(root))] = [st.st_size, st.st_mtime_ns]
    return out


def shared_copy(prepared: Path, shared_root: Path) -> Path:
    """The one copy of ``prepared`` under ``shared_root`` (made now if missing, incomplete or
    changed since it was made): a real copy written once per input and class, for every run's
    scratch to link. A copy whose files no longer match its record (a tool wrote into its
    input) is made again, never linked."""
    key = hashlib.sha256(str(Path(prepared).resolve()).encode()).hexdigest()[:16]
    shared = Path(shared_root) / SHARED_DIR / key
    record_path = shared / SHARED_RECORD
    try:
        record = json.loads(record_path.read_text())
        if record.get("files") == _file_stats(shared):
            os.utime(record_path)  # used now: the last to be evicted
            return shared
    except (OSError, ValueError):
        pass
    if shared.exists():
        if not record_path.is_file():  # every copy is renamed into place with its record
            raise StageError(f"{shared} is not a shared copy biossd made (no {SHARED_RECORD}); not touching it")
        remove_tree(shared)
    shared.parent.mkdir(parents=True, exist_ok=True)
    _evict_shared(shared.parent, _tree_bytes(Path(prepared)))
    try:
        _make_shared(Path(prepared), shared)
    except OSError as err:
        if err.errno != errno.ENOSPC:
            raise
        _evict_shared(shared.parent, None)
        _make_shared(Path(prepared), shared)
    return shared


def _tree_bytes(root: Path) -> int:
    """The bytes of every file under ``root``, links followed (what a copy of it writes)."""
    return sum(p.stat().st_size for p in Path(root).rglob("*") if p.is_file())


def _evict_shared(shared_dir: Path, adding_bytes: int | None) -> None:
    """Remove shared copies under ``shared_dir``, least recently used first, until a copy of
    ``adding_bytes`` leaves :data:`SHARED_MIN_FREE_FRACTION` of the disk free (``None``: every
    copy, after the disk filled). Runs made of them keep their links; later runs copy again."""
    copies = sorted((c for c in shared_dir.iterdir() if (c / SHARED_RECORD).is_file()),
                    key=lambda c: (c / SHARED_RECORD).stat().st_mtime)
    for copy in copies:
        if adding_bytes is not None:
            disk = os.statvfs(shared_dir)
            if disk.f_bavail * disk.f_frsize - adding_bytes >= SHARED_MIN_FREE_FRACTION * disk.f_blocks * disk.f_frsize:
                return
        remove_tree(copy)


def _make_shared(prepared: Path, shared: Path) -> None:
    """Copy ``prepared`` to ``shared`` through a partial directory renamed when complete."""
    with atomic_dir(shared) as partial:
        copy_prepared(prepared, partial)
        record = {"prepared": str(prepared.resolve()), "files": _file_stats(partial)}
        (partial / SHARED_RECORD).write_text(json.dumps(record, indent=1) + "\n")


def link_tree(shared: Path, scratch: Path) -> None:
    """Hard links in ``scratch`` to every file of the shared copy ``shared`` (directories made)."""
    for path in sorted(Path(shared).rglob("*")):
        rel = path.relative_to(shared)
        if path.is_dir():
            (scratch / rel).mkdir(exist_ok=True)
        elif path.name != SHARED_RECORD:
            os.link(path, scratch / rel)


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
    from biossd.study.catalogue import containers

    try:
        containers.check_engine(container)
    except containers.ContainerError as err:
        raise StageError(str(err)) from None
    if not containers.built(entry, container):
        raise StageError(f"{entry.id}'s {container} image is not built here; run "
                         f"`biossd catalogue build --engine {container} {entry.id}`")


def tool_environment(tmp_dir: str) -> list[str]:
    """``NAME=VALUE`` settings that send a tool's temporary files to ``tmp_dir``: ``TMPDIR`` (C
    and shell tools, OpenMPI) and the JVM's ``java.io.tmpdir`` (through ``JAVA_TOOL_OPTIONS``,
    quoted: the JVM splits it at spaces)."""
    if '"' in tmp_dir:
        raise StageError(f"scratch {tmp_dir!r}: a path with a double quote cannot be a JVM's temporary directory; "
                         "use another --scratch")
    return [f"TMPDIR={tmp_dir}", f'JAVA_TOOL_OPTIONS=-Djava.io.tmpdir="{tmp_dir}"']


def command_argv(entry: Entry, values: dict[str, str], scratch: Path, mem_bytes: int | None,
                 container: str | None = None, settings: dict[str, str] | None = None,
                 cidfile: Path | None = None, tmp_in_scratch: bool = True) -> list[str]:
    """The tool's argv for command ``values`` whose files are under ``scratch``: native, or in its
    ``container`` with ``scratch`` bound inside (the paths rewritten to match; ``cidfile``: see
    :func:`biossd.study.catalogue.containers.wrap_argv`). ``tmp_in_scratch``: the tool runs under
    ``env`` with its temporary directory in scratch (:data:`TOOL_TMP_NAME`, made here)."""
    def with_tmp(argv: list[str], tmp_dir: str) -> list[str]:
        return ["env", *tool_environment(tmp_dir), *argv] if tmp_in_scratch else argv

    if tmp_in_scratch:
        (Path(scratch) / TOOL_TMP_NAME).mkdir(exist_ok=True)
    if container is None:
        return with_tmp(entry.render(values, settings), str(Path(scratch).absolute() / TOOL_TMP_NAME))
    from biossd.study.catalogue import containers

    check_image(entry, container)
    inside = containers.inside_paths(values, Path(scratch))
    return containers.wrap_argv(container, entry, Path(scratch),
                                with_tmp(entry.render(inside, settings), f"{containers.BIND_POINT}/{TOOL_TMP_NAME}"),
                                mem_bytes, cidfile=cidfile)
