"""Which plan a result folder holds: a study writes the parameters that decide its runs into
``OUTDIR/pipeline_info/plan.json``, and a later study into the same folder with other such
parameters is refused (naming them) unless it is told to replace it — so a result set never mixes
the runs of two plans without being asked. Resuming (Nextflow's ``-resume``) is no leave to change
the plan: the runs the earlier session published stay in the folder beside the new plan's, and
every reader of the folder would read both.
"""

from __future__ import annotations

import contextlib
import datetime
import json
from pathlib import Path
from typing import Any, Mapping

from biossd.core.files import atomic_write_text

PLAN_RECORD = Path("pipeline_info") / "plan.json"
#: The parameters that decide what a result set's runs are (study/nextflow.config): two studies
#: that differ in one of them measure different things (a related experiment, ``--experiment``, and
#: its sweep's size are a plan of their own). Where results go, how the report is made,
#: and where the devices' records come from do not.
PLAN_PARAMS = ("tools", "mem_caps", "tool_caps", "tool_data_memory", "scales", "tool_scales", "repeats",
               "scaling_repeats", "input_size", "input_sizes", "tool_input_sizes", "inputs", "data_memory", "java_heaps",
               "time_limit", "chains", "chain_repeats", "cachegrind_divisor", "seed", "storage_classes", "emulate",
               "emulate_size", "cap_backend", "drop_caches", "swap", "container_engine", "host", "experiment",
               "experiment_size")


def record(params: Mapping[str, Any]) -> dict[str, str | None]:
    """The plan's parameters as the record keeps them (text, or None when unset)."""
    return {k: None if params.get(k) in (None, "") else str(params.get(k)) for k in PLAN_PARAMS}


def differences(old: Mapping[str, Any], new: Mapping[str, Any]) -> list[str]:
    """The plan parameters whose values differ, each as ``--name old -> new``."""
    return [f"--{k} {old.get(k)} -> {new.get(k)}" for k in PLAN_PARAMS if old.get(k) != new.get(k)]


def problem(outdir: Path | str, params: Mapping[str, Any], resumed: bool = False, replace: bool = False) -> str | None:
    """Why a study with ``params`` may not write into ``outdir``, or None: the folder holds the
    runs of another plan and the study does not replace it (--replace_results); ``resumed``
    (-resume) only changes what the refusal advises."""
    path = Path(outdir) / PLAN_RECORD
    if replace or not path.is_file():
        return None
    try:
        old = json.loads(path.read_text())
    except (OSError, ValueError) as err:
        return f"{path} cannot be read ({err}); give another --outdir, or --replace_results true"
    if not isinstance(old, dict):
        return f"{path} is not a plan record (a JSON {type(old).__name__}); give another --outdir, or --replace_results true"
    changed = differences(old, record(params))
    if not changed:
        return None
    if resumed:
        return (f"--outdir {outdir} holds the results of another plan ({'; '.join(changed)}) and -resume keeps them "
                "beside this one's: resume with that study's own parameters, give another --outdir, or replace "
                "its results (--replace_results true)")
    return (f"--outdir {outdir} holds the results of another plan ({'; '.join(changed)}): give another --outdir, "
            "resume that study (-resume) with its own parameters, or replace its results (--replace_results true)")


class OutdirError(ValueError):
    pass


#: The folder a replaced plan's results are moved to, beside the result folder:
#: ``<outdir>.replaced-<UTC time>``.
SET_ASIDE_SUFFIX = ".replaced-"
#: Where a set-aside names the folder it moves into (in the plan record's folder, which moves last),
#: so that one cut short is finished into the same folder, not split over two.
SET_ASIDE_MARK = ".set-aside-to"
#: What stays in a result folder whose results are set aside: its description (a checkout's
#: ``results/README.md``), which no reader takes for a result.
STAYS = frozenset({"README.md"})


def set_aside(outdir: Path | str, record_now: Mapping[str, Any], keep: tuple[Path, ...] = (),
              held_by: int | None = None) -> Path | None:
    """What ``--replace_results true`` does before a study writes into ``outdir``: when the folder
    holds another plan's results (its ``plan.json`` differs from ``record_now``, or cannot be read),
    everything in it but :data:`STAYS` is moved to ``<outdir>.replaced-<UTC time>`` beside it —
    nothing is deleted or changed, and no reader of ``outdir`` meets the other plan's runs beside
    the new ones. ``pipeline_info/`` (the plan record) moves last: one interrupted midway leaves
    the folder still refused, and the next set-aside moves the rest. Returns the folder moved to,
    or None when there is nothing to set aside (no record, or the same plan: a fresh session of one
    plan replaces its runs one by one). ``keep``: folders the move must not carry away (the launch
    directory, Nextflow's work directory); a result folder holding one is refused. ``held_by``: the
    session's launcher, whose files in the folder (its trace and log, opened when it started) stay
    where they are: they are the new session's, not the replaced plan's."""
    folder = Path(outdir).resolve()
    path = folder / PLAN_RECORD
    if not path.is_file():
        return None
    try:
        old = json.loads(path.read_text())
    except (OSError, ValueError):
        old = None
    if isinstance(old, dict) and not differences(old, dict(record_now)):
        return None
    for kept in keep:
        kept = Path(kept).resolve()
        if kept == folder or folder in kept.parents:
            raise OutdirError(f"--outdir {outdir} holds another plan's results and {kept}, which setting its results "
                              "aside would carry with them: give another --outdir")
    info = PLAN_RECORD.parts[0]
    mark = folder / info / SET_ASIDE_MARK
    aside = _interrupted_aside(folder, mark)  # one cut short moved some entries there: the rest follow
    if aside is None:
        stamp = datetime.datetime.now(datetime.timezone.utc).strftime("%Y%m%dT%H%M%SZ")
        aside = folder.with_name(folder.name + SET_ASIDE_SUFFIX + stamp)
        try:
            aside.mkdir()
        except FileExistsError:
            raise OutdirError(f"{aside} exists already: wait a second and start the study again") from None
        atomic_write_text(mark, str(aside) + "\n")
    held = open_files(held_by, folder) if held_by else set()
    entries = sorted((e for e in folder.iterdir() if e.name not in STAYS), key=lambda e: e.name == info)
    try:
        _move(entries, aside, held, outdir)
    except OutdirError:
        with contextlib.suppress(OSError):
            aside.rmdir()  # only if nothing was moved: a refused set-aside leaves no empty folder
        if not aside.exists():
            mark.unlink(missing_ok=True)
        raise
    (aside / info / SET_ASIDE_MARK).unlink(missing_ok=True)  # moved with the plan record, done with
    mark.unlink(missing_ok=True)  # (where the launcher's files kept pipeline_info/ in place)
    return aside


def _interrupted_aside(folder: Path, mark: Path) -> Path | None:
    """The folder an interrupted set-aside of ``folder`` was moving into (its mark names it), if it
    is one: beside ``folder``, named as :func:`set_aside` names them, still there."""
    try:
        named = Path(mark.read_text().strip())
    except OSError:
        return None
    if (named.parent == folder.parent and named.name.startswith(folder.name + SET_ASIDE_SUFFIX)
            and named.is_dir() and not named.is_symlink()):
        return named
    return None


def _move(entries: list[Path], aside: Path, held: set[Path], outdir: Path | str) -> None:
    """Each of ``entries`` renamed into ``aside``; a folder holding a file of ``held`` is moved
    entry by entry (its plan record last), the held files left where they are."""
    for entry in entries:
        try:
            if entry in held:
                continue
            if entry.is_dir() and not entry.is_symlink() and any(entry in h.parents for h in held):
                (aside / entry.name).mkdir()
                inner = sorted(entry.iterdir(), key=lambda e: e.name == PLAN_RECORD.name)
                _move(inner, aside / entry.name, held, outdir)
                continue
            entry.rename(aside / entry.name)
        except OSError as err:
            raise OutdirError(f"cannot move {entry} to {aside} ({err.strerror}); the entries of --outdir {outdir} "
                              "were to move there: move the rest yourself, or give another --outdir") from None


def open_files(pid: int, under: Path) -> set[Path]:
    """The files under ``under`` that process ``pid`` holds open (none if it cannot be read)."""
    from biossd.core.owners import open_targets

    return {Path(t) for t in open_targets(pid) if t.startswith("/") and Path(under) in Path(t).parents}
