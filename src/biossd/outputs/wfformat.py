"""A result set as a WfFormat 1.5 instance (``biossd export wfformat RESULTS``): the workflow
instance format of WfCommons, which its simulators read (WRENCH's WfCommons-based simulators
replay an instance on another platform: other disks, other cores, another cluster).

Two kinds of result set:

* **a study session** (``--outdir`` of ``nextflow run study``): each profiled run (and each step
  of a chained pipeline, Fig. 3) is a task; a chained step's parent is the step before it; every
  other run stands alone. Each side of the study (``<host>-<storage>``) is a machine, since the
  two sides differ in their storage, which is what the study varies. A run's input is a file
  (``input/<tool>/x<scale>``, its size from the run's ``input_bytes``).
* **a profiled pipeline** (``--outdir`` of a pipeline run with ``-c
  nextflow/conf/profile_pipeline.config``): each kept task attempt that ended ok is a task; its
  parents are the tasks whose work directories its staged inputs link into (Nextflow stages a
  task's inputs as links to the files of the tasks that made them), its input and output files
  those links and the files its work directory made; the host is the machine. Where the work
  directories are gone (``nextflow clean``), the tasks have no files and no parents, which
  :func:`instance` says in the instance's ``description``.

Per task: runtime (the run's wall time), start, the command, cores (the CPU time over the wall
time, in WfFormat's ``avgCPU`` percent; ``coreCount`` the CPUs the host offered), bytes read and
written (the run's block-device totals from its I/O accounting) and peak resident memory. The
instance's ``schemaVersion`` is 1.5 (WfCommons 1.6 writes 1.6, which the 1.5 schema refuses).
"""

from __future__ import annotations

import datetime
import json
import math
import os
import re
from pathlib import Path
from typing import Any, Iterable

from biossd import __version__
from biossd.core.errors import BiossdError
from biossd.features import extract as features
from biossd.measure import manifest
from biossd.measure.own_pipeline import task as pipeline_task
from biossd.study import layout

SCHEMA_VERSION = "1.5"
RUNTIME_SYSTEM = {"name": "biossd", "version": __version__, "url": "https://github.com/biossd/biossd"}
#: A file id's characters in WfFormat 1.5 (``files[].id``); others become ``_``.
_FILE_ID_UNSAFE = re.compile(r"[^0-9a-zA-Z\-_./:]")
#: A task id's characters, as its parents and children spell them (``tasks[].parents``).
_TASK_ID_UNSAFE = re.compile(r"[^0-9a-zA-Z\-_.]")
#: Files of a Nextflow work directory that are Nextflow's, not the task's.
_NEXTFLOW_FILES = re.compile(r"^\.command\.|^\.exitcode$")


class WfFormatError(BiossdError, ValueError):
    pass


def file_id(text: str) -> str:
    return _FILE_ID_UNSAFE.sub("_", text)


def task_id(relpath: str) -> str:
    """A run's folder (relative to the result set) as a WfFormat task id, which a task's
    ``parents`` and ``children`` must spell without ``/`` or ``:``: ``a/b/c`` as ``a.b.c``."""
    return _TASK_ID_UNSAFE.sub("_", relpath.replace("/", "."))


def instance(results: Path) -> dict[str, Any]:
    """The WfFormat 1.5 instance of a study session's or a profiled pipeline's result folder."""
    root = Path(results)
    if (root / pipeline_task.RUNS_DIR).is_dir():
        kind, tasks, note = "profiled pipeline", *_pipeline_tasks(root)
    elif (root / layout.FEATURES_FILE).is_file() or any(root.glob(f"*/{layout.CHAINS_DIR}")) or features.find_run_dirs([root]):
        kind, tasks, note = "study session", _study_tasks(root), ""
    else:
        raise WfFormatError(f"{root}: neither a study's result folder (no run records under <host>-<storage>/) nor a "
                            f"profiled pipeline's (no {pipeline_task.RUNS_DIR}/): give the --outdir of either")
    if not tasks:
        raise WfFormatError(f"{root}: no run that ended ok with its start time (run.json's outcome and started_at) "
                            "to export; a synthetic result set has none")
    starts = [t["start_s"] for t in tasks]
    ends = [t["start_s"] + t["runtime_s"] for t in tasks]
    files: dict[str, int] = {}
    for t in tasks:
        files.update(t["inputs"])
        files.update(t["outputs"])
    children: dict[str, list[str]] = {t["id"]: [] for t in tasks}
    for t in tasks:
        for parent in t["parents"]:
            children[parent].append(t["id"])
    machines = {t["machine"]["nodeName"]: t["machine"] for t in tasks}
    return {
        "name": f"biossd {kind} {root.resolve().name}",
        "description": (f"The {kind} of {root.resolve()} as biossd profiled it: each task a profiled run, with its "
                        "runtime, cores, bytes read and written on block devices and peak resident memory. "
                        "Made for Lee, Min and Yoon (2015)'s question, will SSDs accelerate your bioinformatics."
                        + (f" {note}" if note else "")),
        "createdAt": datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"),
        "schemaVersion": SCHEMA_VERSION,
        "runtimeSystem": RUNTIME_SYSTEM,
        "workflow": {
            "specification": {
                "tasks": [{"name": t["name"], "id": t["id"], "parents": t["parents"], "children": children[t["id"]],
                           "inputFiles": sorted(t["inputs"]), "outputFiles": sorted(t["outputs"])} for t in tasks],
                "files": [{"id": k, "sizeInBytes": int(v)} for k, v in sorted(files.items())],
            },
            "execution": {
                "makespanInSeconds": max(ends) - min(starts),
                "executedAt": _iso(min(starts)),
                "tasks": [_executed(t) for t in tasks],
                "machines": list(machines.values()),
            },
        },
    }


def write(results: Path, out: Path | None = None) -> Path:
    """Write the instance (default ``RESULTS/pipeline_info/wfformat.json``) whole; returns its path."""
    body = instance(results)
    target = Path(out) if out else Path(results) / "pipeline_info" / "wfformat.json"
    target.parent.mkdir(parents=True, exist_ok=True)
    manifest.atomic_write_text(target, json.dumps(body, indent=2) + "\n")
    return target


def _executed(t: dict[str, Any]) -> dict[str, Any]:
    out: dict[str, Any] = {"id": t["id"], "runtimeInSeconds": t["runtime_s"], "executedAt": _iso(t["start_s"]),
                           "command": {"program": t["argv"][0] if t["argv"] else "", "arguments": t["argv"][1:]},
                           "coreCount": t["machine"]["cpu"]["coreCount"], "machines": [t["machine"]["nodeName"]]}
    for key, value in (("avgCPU", t["cores_used"] * 100), ("readBytes", t["read_bytes"]),
                       ("writtenBytes", t["write_bytes"]), ("memoryInBytes", t["memory_bytes"])):
        if value is not None and math.isfinite(value):
            out[key] = value if key == "avgCPU" else int(value)
    return out


def _iso(epoch_s: float) -> str:
    return datetime.datetime.fromtimestamp(epoch_s, datetime.timezone.utc).isoformat(timespec="milliseconds")


def _machine(name: str, host: dict[str, Any]) -> dict[str, Any]:
    machine: dict[str, Any] = {"nodeName": name, "system": "linux",
                               "cpu": {"coreCount": int(host.get("cpu_count") or 1), "vendor": str(host.get("cpu_model") or "")}}
    for key, value in (("architecture", host.get("machine")), ("release", host.get("kernel")),
                       ("memoryInBytes", host.get("mem_total_bytes"))):
        if value:
            machine[key] = int(value) if key == "memoryInBytes" else str(value)
    return machine


def _number(row: dict[str, Any], key: str) -> float | None:
    value = row.get(key)
    try:
        value = float(value)
    except (TypeError, ValueError):
        return None
    return value if math.isfinite(value) else None


def _task(run_dir: Path, body: dict[str, Any], ident: str, name: str, machine: dict[str, Any],
          row: dict[str, Any] | None = None) -> dict[str, Any] | None:
    """A run as a task (without its files and parents), from its features (``row``: its line of the
    features table, else extracted now); None for a run that did not end ok."""
    if body.get("outcome") != "ok" or not body.get("started_at"):
        return None
    row = features.run_features(run_dir) if row is None else row
    peak = _number(row, "resident_peak_kib") or _number(row, "max_rss_kib")
    return {"id": ident, "name": name, "machine": machine, "argv": [str(a) for a in body.get("argv") or []],
            "start_s": datetime.datetime.fromisoformat(body["started_at"]).timestamp()
            + float(body.get("command_started_s") or 0.0),
            "runtime_s": float(body["wall_s"]), "cores_used": _number(row, "cpu_cores_used"),
            "read_bytes": _number(row, "read_bytes"), "write_bytes": _number(row, "write_bytes"),
            "memory_bytes": peak * 1024 if peak is not None else None,
            "inputs": {}, "outputs": {}, "parents": []}


def _study_tasks(root: Path) -> list[dict[str, Any]]:
    import pandas as pd

    table_path = root / layout.FEATURES_FILE
    table = (pd.read_csv(table_path).set_index("run_dir", drop=False) if table_path.is_file() else pd.DataFrame())
    tasks = []
    for run_dir in features.find_run_dirs([root]):
        body = manifest.read_manifest(run_dir)
        labels = body.get("labels") or {}
        side = f"{labels.get('host')}-{labels.get('storage')}"
        rel = run_dir.relative_to(root).as_posix()
        row = table.loc[rel].to_dict() if rel in table.index else None
        task = _task(run_dir, body, task_id(rel), str(labels.get("tool")), _machine(side, body.get("host") or {}), row)
        if task is None:
            continue
        size = _number(labels, "input_bytes") or _number(row or {}, "input_bytes")
        if size is not None:
            task["inputs"][file_id(f"input/{labels.get('tool')}/x{labels.get('scale')}")] = size
        tasks.append(task)
    for chain_dir in sorted(root.glob(f"*/{layout.CHAINS_DIR}/*/*")):
        before = None
        for step_dir in sorted(p for p in chain_dir.iterdir() if manifest.is_complete(p)):
            body = manifest.read_manifest(step_dir)
            labels = body.get("labels") or {}
            task = _task(step_dir, body, task_id(step_dir.relative_to(root).as_posix()), str(labels.get("tool")),
                         _machine(f"{labels.get('host')}-{labels.get('storage')}", body.get("host") or {}))
            if task is None:
                before = None
                continue
            if before is not None:
                task["parents"] = [before]
            before = task["id"]
            tasks.append(task)
    return tasks


def _pipeline_tasks(root: Path) -> tuple[list[dict[str, Any]], str]:
    tasks, workdirs = [], {}
    for run_dir in features.find_run_dirs([root / pipeline_task.RUNS_DIR]):
        body = manifest.read_manifest(run_dir)
        labels = body.get("labels") or {}
        host = body.get("host") or {}
        name = str(labels.get("process") or run_dir.parent.parent.name)
        task = _task(run_dir, body, task_id(run_dir.relative_to(root).as_posix()), name,
                     _machine(str(host.get("hostname") or "host"), host))
        if task is None:
            continue
        workdir = Path(str(labels.get("workdir") or ""))
        if labels.get("workdir") and workdir.is_dir():
            workdirs[task["id"]] = workdir.resolve()
        tasks.append(task)
    owner = {str(w): tid for tid, w in workdirs.items()}
    for task in tasks:
        workdir = workdirs.get(task["id"])
        if workdir is None:
            continue
        parents = set()
        for path, made_by in _workdir_files(workdir):
            if made_by is None:
                task["outputs"][file_id(f"{workdir.name}/{path.relative_to(workdir).as_posix()}")] = path.stat().st_size
                continue
            parent = next((owner[str(p)] for p in made_by.parents if str(p) in owner), None)
            if parent:  # another task's output, named as that task names it
                parents.add(parent)
                made_in = workdirs[parent]
                target_id = file_id(f"{made_in.name}/{made_by.relative_to(made_in).as_posix()}")
            else:  # the pipeline's own input
                target_id = file_id(str(made_by))
            task["inputs"][target_id] = _size(made_by)
        task["parents"] = sorted(parents)
    gone = len(tasks) - len(workdirs)
    note = (f"{gone} of {len(tasks)} tasks' work directories were gone: those tasks have no files and no parents."
            if gone else "")
    return tasks, note


def _size(path: Path) -> int:
    """A file's size, or a folder's: the sum of its files'."""
    if path.is_dir():
        return sum(p.stat().st_size for p in path.rglob("*") if p.is_file())
    return path.stat().st_size


def _workdir_files(workdir: Path) -> Iterable[tuple[Path, Path | None]]:
    """A work directory's files, each with the file or folder it links to (a staged input) or None
    (made here)."""
    for dirpath, dirnames, filenames in os.walk(workdir):
        for name in dirnames:  # a staged folder (an index, a database): a link os.walk does not enter
            path = Path(dirpath) / name
            if path.is_symlink() and path.resolve().is_dir():
                yield path, path.resolve()
        for name in filenames:
            path = Path(dirpath) / name
            if _NEXTFLOW_FILES.match(name) and Path(dirpath) == workdir:
                continue
            if path.is_symlink():
                target = path.resolve()
                if target.is_file():
                    yield path, target
            elif path.is_file():
                yield path, None
