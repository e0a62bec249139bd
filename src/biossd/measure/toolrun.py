"""One study run of a catalogue tool, in one home (Lee, Min and Yoon 2015, §5.1): a marked scratch
made on the device under study, the prepared input staged into it, the tool profiled there (the
scratch is its working directory: :attr:`biossd.measure.request.ProfileRequest.cwd`), its output
scored against the input's truth, and the scratch removed however the run ends. ``biossd catalogue
run`` calls :func:`run`; a chained pipeline's steps (:mod:`biossd.measure.chainrun`) share its
:func:`staged_and_profiled`; ``biossd profile`` and a pipeline's task, :func:`profiled`; an
experiment's runs (:class:`biossd.experiments.Task`), :func:`measured`."""

from __future__ import annotations

import contextlib
import dataclasses
import json
import os
import sys
import time
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, Callable, ContextManager

from biossd.core.files import remove_tree
from biossd.measure import manifest, profile
from biossd.measure.request import ProfileRequest

if TYPE_CHECKING:
    from biossd.study.catalogue import Entry


@dataclass
class ToolRun:
    """What one run left: its run directory, the signal that stopped it (``None``: it ended and
    was recorded), and what scoring its output did (a line)."""

    out_dir: Path
    signum: int | None
    quality: str | None


def measured(request: ProfileRequest) -> dict[str, Any]:
    """Profile ``request`` in its working directory: its manifest, or :class:`biossd.measure.profile.
    Interrupted` raised when a signal stopped it (nothing of it kept). A signal in the instant after
    the run was published leaves a complete run, and that is a result: its manifest."""
    try:
        return profile.run(request)
    except KeyboardInterrupt:
        if not manifest.is_complete(request.out_dir):
            raise
        return manifest.read_manifest(request.out_dir)


def profiled(request: ProfileRequest, name: str) -> tuple[dict[str, Any] | None, int | None]:
    """:func:`measured`, said on stderr under ``name`` (the command's): ``(manifest, None)``, or
    ``(None, signal)`` when a signal stopped the run."""
    try:
        body = measured(request)
    except profile.Interrupted as intr:
        owner = request.owner
        why = f"its owner {owner.describe()} is gone" if owner is not None and not owner.alive() else intr
        print(f"{name}: {why}; the run was stopped and nothing of it was kept", file=sys.stderr)
        return None, intr.signum
    print(f"{name}: outcome {body['outcome']} (exit {body['exit_code']}) in "
          f"{body['wall_s']:.2f} s; manifest {request.out_dir / 'run.json'}", file=sys.stderr)
    return body, None


def staged_and_profiled(where: Path, stage: Callable[[Path | None], list[str]], base: ProfileRequest, *, what: str,
                        name: str, container: str | None, cidfile_name: str,
                        staging_lock: Callable[[str], ContextManager[Any]], **fields: Any
                        ) -> tuple[ProfileRequest, dict[str, Any] | None, int | None]:
    """One run in the scratch ``where``: its input staged by ``stage`` (given the container id
    file, in Docker, which the profiler inspects — cap, OOM kill, peak — and removes; it returns
    the command) under ``staging_lock`` (saying ``what`` is copied), the staging's time recorded
    as the harness's ``stage`` phase, then the command profiled with ``where`` as its working
    directory (its relative writes land on the device under study) and ``base``'s options, with
    ``fields`` replaced. The request, and :func:`profiled`'s answer."""
    cidfile = where / cidfile_name if container == "docker" else None
    staged_at = time.monotonic()
    with staging_lock(what):
        argv = stage(cidfile)
    phases = {**base.phases_before_s, **fields.pop("phases_before_s", {}),
              "stage": round(time.monotonic() - staged_at, 4)}
    request = dataclasses.replace(base, argv=argv, cwd=where, container_id_file=cidfile, phases_before_s=phases,
                                  **fields)
    return (request, *profiled(request, name))


#: A busy attempt's manifest, kept in the repeat that redid it (docs/study.md, "A quiet host, checked").
BUSY_ATTEMPT_FILE = "busy-attempt.json"


def run(entry: Entry, input_dir: Path, scratch: Path, base: ProfileRequest, *, mem_bytes: int,
        settings: dict[str, str], container: str | None = None, capped: bool = True,
        staging_lock: Callable[[str], ContextManager[Any]] = lambda what: contextlib.nullcontext(),
        record_start: bool = False, name: str = "biossd catalogue run", redo_if_busy: bool = False) -> ToolRun:
    """Run ``entry`` once on its prepared input ``input_dir``, in a scratch made at ``scratch`` (its
    name made unique), with ``base``'s options into ``base.out_dir``. ``mem_bytes`` is the run's
    memory: the tool's ``settings`` follow it, and it is the cap unless ``capped`` is false (a
    probe under valgrind). The input is staged under ``staging_lock`` (the host lock, where the
    device is shared). ``record_start``: the run is its process's whole work (``biossd catalogue
    run``), and the process's age once the scratch is made — Python's start, the imports, the
    catalogue, the scratch — is recorded as the harness's ``start``. ``redo_if_busy``: a run whose
    host was busy outside it (:data:`biossd.measure.hostload.HOST_LOAD_LIMIT_CORES`) is run again
    once, in a new scratch, and the busy attempt's manifest is kept in the new one
    (:data:`BUSY_ATTEMPT_FILE`, its ``redone`` record)."""
    done = _attempt(entry, input_dir, scratch, base, mem_bytes, settings, container, capped, staging_lock,
                    record_start, name)
    if not redo_if_busy or done.signum is not None:
        return done
    first = manifest.read_manifest(done.out_dir)
    if not (first.get("host_load") or {}).get("busy"):
        return done
    aside = done.out_dir.with_name(f"{done.out_dir.name}.busy-{os.getpid()}")
    os.replace(done.out_dir, aside)
    print(f"{name}: the host was busy outside the run ({first['host_load']['outside_cores']:.2f} cores over "
          f"{first['host_load']['limit_cores']:g}); running it again once", file=sys.stderr)
    try:
        again = _attempt(entry, input_dir, scratch, base, mem_bytes, settings, container, capped, staging_lock,
                         False, name)
        if again.signum is None:
            _keep_busy_attempt(again.out_dir, aside)
        return again
    finally:
        remove_tree(aside, ignore_errors=True)


def _keep_busy_attempt(out_dir: Path, aside: Path) -> None:
    """The busy attempt's manifest kept in ``out_dir`` (:data:`BUSY_ATTEMPT_FILE`), and the run's
    manifest amended with its ``redone`` record and the file (written whole, as the manifest is)."""
    first = manifest.read_manifest(aside)
    kept = out_dir / BUSY_ATTEMPT_FILE
    manifest.atomic_write_text(kept, json.dumps(first, indent=2, sort_keys=True) + "\n")
    body = manifest.read_manifest(out_dir)
    body["redone"] = {"why": "the host was busy outside the first attempt", "first_attempt": BUSY_ATTEMPT_FILE,
                      "first_outcome": first.get("outcome"), "first_wall_s": first.get("wall_s"),
                      "first_outside_cores": (first.get("host_load") or {}).get("outside_cores"),
                      "still_busy": bool((body.get("host_load") or {}).get("busy"))}
    body["files"] = [*body.get("files", []), manifest.file_record(out_dir, kept)]
    body.pop("schema", None)
    body.pop("schema_version", None)
    manifest.write_manifest(out_dir, body)


def _attempt(entry: Entry, input_dir: Path, scratch: Path, base: ProfileRequest, mem_bytes: int,
             settings: dict[str, str], container: str | None, capped: bool,
             staging_lock: Callable[[str], ContextManager[Any]], record_start: bool, name: str) -> ToolRun:
    """One attempt of :func:`run`."""
    # Here, not at the top: `biossd profile` and a pipeline's task share :func:`profiled` and
    # load none of the staging.
    from biossd.core import owners
    from biossd.host.hdd import emulate
    from biossd.measure import rundir
    from biossd.study import staging
    from biossd.study.catalogue import containers

    with rundir.scratch(Path(scratch), unique=True) as where:
        started = {"start": round(owners.age_s() or 0.0, 4)} if record_start else {}
        # On a class of biossd's own loop device, one copy of the prepared input for every run.
        shared_root = emulate.mount_of(where)
        request, _, signum = staged_and_profiled(
            where, lambda cidfile: staging.stage(entry, Path(input_dir), where, mem_bytes, container, settings,
                                                 create_scratch=False, shared_root=shared_root, cidfile=cidfile),
            base, what=f"{name} {entry.id} (copying its input into {where})", name=name, container=container,
            cidfile_name=containers.CIDFILE_NAME, staging_lock=staging_lock, phases_before_s=started,
            mem_bytes=mem_bytes if capped else None,
            labels={**base.labels, "scratch": base.labels.get("scratch", str(where))})
        said = None if signum is not None else score(entry, where, request.out_dir)
    return ToolRun(request.out_dir, signum, said)


def score(entry: Entry, scratch: Path, run_dir: Path) -> str:
    """Score a run's output in ``scratch`` against its input's truth (Fig. 1(b)) and write
    ``quality.json`` beside its other records; what was done, in a line. A scoring failure is
    recorded, not raised: the run itself is a result."""
    if not entry.data.get("quality"):  # most tools: decided before pandas is imported (a second per run)
        return f"{entry.id} has no quality check; nothing written"
    from biossd.measure import quality

    outcome = manifest.read_manifest(run_dir).get("outcome")
    if outcome != "ok":
        return f"the run ended {outcome}; not scored"
    try:
        result = quality.evaluate(entry, scratch)
    except quality.QualityError as err:
        result = {"tool": entry.id, "error": str(err)}
        print(f"biossd quality: {err}", file=sys.stderr)
    path = quality.write(run_dir, result)
    return f"{path}: " + ", ".join(f"{c} {result.get(c, float('nan')):.4f}" for c in quality.QUALITY_COLUMNS)
