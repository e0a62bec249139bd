"""The related experiments of seeds 001–004, run the way the study runs seed 000.

Each experiment is *what* in ``study/experiments/<id>.yaml`` (its question, the seed's finding,
its tools and substitutes, and its sweep at three sizes: ``tiny`` for the test suite, ``test``
for this machine, ``full`` for a real host pair) and *how* in ``biossd.experiments.<id>``: the
sweep's points, how one point is run (every run a profiled run, :mod:`biossd.measure.profile`,
with its raw traces), and the rows of its table. This module is the part they share:

* :func:`plan`: the tasks of ``--experiment NAME[,NAME]`` at ``--experiment_size``: one per
  (point, storage class, repeat), the classes side by side, each with its layout path
  ``<host>-<storage>/experiments/<id>/<point>/<rep>/`` (:func:`biossd.study.layout.experiment_relpath`);
* :func:`run_task`: one task, in the class's scratch, written to a partial directory renamed
  into place when complete (``point.json`` last), nothing left behind on failure or a signal;
* :func:`table`: the experiment's table (``<outdir>/experiments/<id>.csv``): the run table's
  columns (:func:`biossd.features.extract.run_features`) for every run, with the point's values
  and what the experiment observed beside the profiler (phases, file counts, ...).
"""

from __future__ import annotations

import contextlib
import datetime as dt
import importlib
import json
import os
import shutil
import uuid
from dataclasses import dataclass, field
from pathlib import Path
from types import ModuleType
from typing import Any, Iterable, Iterator, Mapping, Sequence

import pandas as pd

from biossd.core import made, paths, yamlfile
from biossd.core.errors import BiossdError
from biossd.core.files import atomic_write_text, remove_tree
from biossd.core.owners import ProcessRef
from biossd.core.signals import signals_ignored, signals_raise
from biossd.core.units import parse_duration_s, parse_size
from biossd.features import extract
from biossd.measure import manifest, profile, rundir
from biossd.study import catalogue, data, layout

EXPERIMENTS_DIR = paths.EXPERIMENTS_DIR


def _discover(directory: Path) -> tuple[str, ...]:
    """The experiments defined in ``directory`` (one ``<id>.yaml`` each), in their seeds' order:
    adding a definition adds the experiment everywhere its name is listed."""
    found = []
    for path in sorted(Path(directory).glob("*.yaml")):
        spec = yamlfile.read_mapping(path, "experiment definition", ExperimentError)
        found.append((str(spec.get("seed", "")), path.stem))
    return tuple(name for _seed, name in sorted(found))


SIZES = ("tiny", "test", "full")
POINT_RECORD = "point.json"
#: Marks a task's partial directory as this code's (only such a directory is ever removed).
PARTIAL_MARKER = rundir.EXPERIMENT_MARKER
#: The input a task synthesizes into its scratch (on the class's device), unprofiled.
INPUT_DIR = "input"
#: The seed of the synthetic inputs (the study's default, nextflow.config's params.seed).
DEFAULT_SEED = 1
#: Keys every size of every experiment has.
SIZE_KEYS = ("input_size", "cap", "repeats", "timeout")
#: The columns every experiment table has before its own.
TASK_COLUMNS = ("experiment", "point", "size", "input_size", "cap", "host", "storage", "rep", "run",
                "substitute_of", "failure")
#: What makes two runs of a point comparable: the experiment's size, its input and the run's memory
#: cap. A summary never averages rows that differ in these (:func:`scale_keys`).
SCALE_COLUMNS = ("size", "input_size", "cap")


class ExperimentError(BiossdError, ValueError):
    """An experiment's definition, plan or task is wrong; the message names the file or field."""


#: The experiments, in the seeds' order (``study/experiments/<id>.yaml``).
NAMES = _discover(EXPERIMENTS_DIR)


def names_of(value: str | Sequence[str]) -> list[str]:
    """``sort_memory,kmer_io`` or ``all`` as the list of experiment ids (checked)."""
    given = [v.strip() for v in (value.split(",") if isinstance(value, str) else value) if v.strip()]
    if given == ["all"]:
        return list(NAMES)
    unknown = [n for n in given if n not in NAMES]
    if unknown or not given:
        raise ExperimentError(f"--experiment {','.join(given) or '(empty)'}: unknown {unknown or 'nothing given'}; "
                              f"choose from {', '.join(NAMES)} or all")
    return given


def load_spec(name: str, directory: Path = EXPERIMENTS_DIR) -> dict[str, Any]:
    """``study/experiments/<name>.yaml``, checked: every size has the shared keys."""
    path = Path(directory) / f"{name}.yaml"
    if not path.is_file():
        raise ExperimentError(f"{path}: no such experiment definition; the experiments are {', '.join(NAMES)}")
    spec = yamlfile.read_mapping(path, "experiment definition", ExperimentError)
    for key in ("id", "seed", "source", "title", "question", "seed_finding", "tools", "input", "sizes"):
        if key not in spec:
            raise ExperimentError(f"{path}: field {key!r} is missing")
    if spec["id"] != name:
        raise ExperimentError(f"{path}: field 'id' is {spec['id']!r}, not the file's name {name!r}")
    for size in SIZES:
        settings = spec["sizes"].get(size)
        if not isinstance(settings, dict):
            raise ExperimentError(f"{path}: sizes.{size} is missing")
        missing = [k for k in SIZE_KEYS if k not in settings]
        if missing:
            raise ExperimentError(f"{path}: sizes.{size} lacks {missing}")
    return spec


def module(name: str) -> ModuleType:
    """The experiment's logic, ``biossd.experiments.<name>``."""
    return importlib.import_module(f"biossd.experiments.{name}")


def substitutes(spec: Mapping[str, Any]) -> dict[str, str]:
    """Each tool of the experiment that stands in for another: ``{tool: what it substitutes}``."""
    return {tool: info["substitute_of"] for tool, info in spec["tools"].items() if info.get("substitute_of")}


def tool_version(spec: Mapping[str, Any], tool: str) -> str | None:
    """The installed version of one of the experiment's tools (a catalogue entry's, or from its
    own ``version_command``); ``None`` when it is not installed."""
    info = spec["tools"][tool]
    if info.get("catalogue"):
        return catalogue.get(info["catalogue"]).installed_version()
    if not info.get("version_command"):
        return info.get("version")
    entry = catalogue.Entry(tool, EXPERIMENTS_DIR / f"{spec['id']}.yaml",
                            {"version_command": info["version_command"], "version_regex": info["version_regex"]})
    return entry.installed_version()


# --- the plan -------------------------------------------------------------------------------------

def plan(experiments: str | Sequence[str], size: str, classes: Sequence[str], host: str,
         seed: int = DEFAULT_SEED) -> dict[str, Any]:
    """Every task of the experiments at ``size`` on ``classes``, in run order: for each point and
    repeat, the classes side by side (a drift of the host's load falls on both alike)."""
    if size not in SIZES:
        raise ExperimentError(f"--experiment_size {size!r}: choose one of {', '.join(SIZES)}")
    tasks: list[dict[str, Any]] = []
    for name in names_of(experiments):
        spec = load_spec(name)
        settings = spec["sizes"][size]
        for point in module(name).points(settings):
            for rep in range(1, int(settings["repeats"]) + 1):
                for storage in classes:
                    kind, input_size = spec["input"]["kind"], str(settings["input_size"])
                    task = {"experiment": name, "point": point["id"], "values": point["values"], "size": size,
                            "host": host, "storage": storage, "rep": str(rep), "seed": seed,
                            "input": {"kind": kind, "size": input_size, "id": input_id(kind, input_size)},
                            "order": len(tasks)}
                    task["publish"] = str(layout.experiment_relpath(task))
                    tasks.append(task)
    inputs = {t["input"]["id"]: {**t["input"], "scale": 1} for t in tasks}
    return {"experiments": names_of(experiments), "size": size, "classes": list(classes), "tasks": tasks,
            "n_tasks": len(tasks), "inputs": list(inputs.values()), "seed": seed}


def input_id(kind: str, size: str) -> str:
    """The id of an experiment's synthetic input, shared by every task that reads it."""
    return f"experiment_{kind}_{size}"


def plan_from_params(params: Mapping[str, Any]) -> dict[str, Any]:
    """The plan of ``--experiment`` from the workflow's ``params`` (as ``biossd study plan``
    takes them): the study's checks of the parameters (schema, classes, emulations, devices,
    host) and the experiments' own, every problem listed (``problems``), nothing run."""
    from biossd.study import matrix

    study = matrix.plan(params)
    problems = list(study.problems)
    try:
        out = plan(str(params.get("experiment") or ""), str(params.get("experiment_size") or "test"), study.classes,
                   study.host or "localhost", int(params.get("seed") or DEFAULT_SEED))
    except (ExperimentError, ValueError) as err:
        out = {"experiments": [], "size": params.get("experiment_size"), "classes": study.classes, "tasks": [],
               "n_tasks": 0}
        problems.append(str(err))
    out["problems"] = problems
    return out


# --- one task ------------------------------------------------------------------------------------

#: A signal ended the task: the profiler's own exception, so a signal inside a profiled run and
#: one between runs end the task alike (the CLI reports both with the signal's exit status).
Interrupted = profile.Interrupted


@dataclass
class Task:
    """One task being run: its plan entry, the experiment's definition and settings at its size,
    where it works (``scratch``, on the class's device) and writes (``out``, a partial directory),
    and what it runs for (``owner``)."""

    task: dict[str, Any]
    spec: dict[str, Any]
    scratch: Path
    out: Path
    device_record: Path | None = None
    storage: dict[str, Any] = field(default_factory=dict)
    owner: ProcessRef | None = None
    runs: list[str] = field(default_factory=list)

    @property
    def settings(self) -> dict[str, Any]:
        return self.spec["sizes"][self.task["size"]]

    @property
    def values(self) -> dict[str, Any]:
        return self.task["values"]

    @property
    def cap(self) -> str:
        """The point's memory cap: its own (a tool that needs more to start at all) or the size's."""
        return str(self.values.get("cap") or self.settings["cap"])

    @property
    def cap_bytes(self) -> int:
        return parse_size(self.cap)

    @property
    def timeout_s(self) -> float:
        return parse_duration_s(str(self.settings["timeout"]))

    @property
    def input_dir(self) -> Path:
        return self.scratch / INPUT_DIR

    def labels(self, tool: str, **extra: Any) -> dict[str, str]:
        """A run's labels: the study's (host, storage, tool, mem, scale, rep) and the experiment's."""
        base = {"host": self.task["host"], "storage": self.task["storage"], "tool": tool,
                "mem": self.cap, "scale": "1", "rep": self.task["rep"],
                "experiment": self.task["experiment"], "point": self.task["point"]}
        base.update({k: str(v) for k, v in self.values.items()})
        base.update({k: str(v) for k, v in extra.items()})
        return base

    def request(self, argv: Sequence[str], name: str, tool: str, **options: Any) -> profile.ProfileRequest:
        """The profile request of one run of this task, written to ``out/<name>``."""
        labels = self.labels(tool, **options.pop("labels", {}))
        return profile.ProfileRequest(
            argv=list(argv), out_dir=self.out / name, mem_bytes=options.pop("mem_bytes", self.cap_bytes),
            labels=labels, timeout_s=options.pop("timeout_s", self.timeout_s),
            tool_version=tool_version(self.spec, tool), device_record=self.device_record, owner=self.owner,
            **options)

    def profile(self, argv: Sequence[str], name: str, tool: str, cwd: Path, **options: Any) -> dict[str, Any]:
        """Run one profiled command in ``cwd`` (whose device is the one traced); its manifest."""
        with _cwd(cwd):
            record = profile.run(self.request(argv, name, tool, **options))
        self.runs.append(name)
        return record


@contextlib.contextmanager
def _cwd(path: Path) -> Iterator[None]:
    before = os.getcwd()
    os.chdir(path)
    try:
        yield
    finally:
        os.chdir(before)


class Teardown(contextlib.ExitStack):
    """An :class:`contextlib.ExitStack` whose callbacks run with signals held: what a task brings
    up (servers, mounts, devices) is registered here right after it exists."""

    def __exit__(self, *exc: Any) -> bool:
        with signals_ignored():
            return super().__exit__(*exc)


def run_task(task: Mapping[str, Any], scratch: Path, out: Path, device_record: Path | None = None,
             storage: Mapping[str, Any] | None = None, owner: ProcessRef | None = None,
             input_dir: Path | None = None) -> dict[str, Any]:
    """Run one planned task; returns its ``point.json`` record. ``out`` must not exist: the task
    is written to a marked partial directory beside it and renamed when complete; on failure or a
    signal the partial directory and the task's scratch contents are removed. ``input_dir``: the
    task's synthetic input made beforehand (``biossd data synth``, the workflow's SYNTH_INPUT),
    copied into scratch; without it, the input is synthesized there."""
    task = dict(task)
    out = Path(out).absolute()  # the runs change into scratch: every path is made absolute first
    device_record = Path(device_record).absolute() if device_record else None
    if out.exists():
        raise ExperimentError(f"{out} exists; an experiment task never overwrites: choose another --out")
    scratch = Path(scratch).absolute()
    if scratch.exists() and any(scratch.iterdir()):
        raise ExperimentError(f"--scratch {scratch} is not empty; a task works in an empty directory of its own")
    spec = load_spec(task["experiment"])
    partial = out.with_name(f".{out.name}.partial-{uuid.uuid4().hex[:8]}")
    made.remember(partial, "experiment partial")  # found after a reboot too, if never finished
    partial.mkdir(parents=True)
    # The marker names its maker: `biossd cleanup` removes it after a SIGKILL only for that maker.
    (partial / PARTIAL_MARKER).write_text(json.dumps({"made_by": "biossd experiment run",
                                                      **ProcessRef.current().record()}) + "\n")
    made_scratch = not scratch.exists()
    if made_scratch:  # marked and recorded: a SIGKILL leaves it to `biossd cleanup`
        made.remember(scratch, "scratch")
    scratch.mkdir(parents=True, exist_ok=True)
    if made_scratch:
        (scratch / rundir.SCRATCH_MARKER).touch()
    done = False
    try:
        with signals_raise(Interrupted):  # a profiled run inside raises the same way
            ctx = Task(task, spec, scratch, partial, Path(device_record) if device_record else None,
                       dict(storage or {}), owner)
            started = _utc_now()
            _stage_input(task, ctx.input_dir, Path(input_dir) if input_dir else None)
            observed = module(task["experiment"]).run(ctx)
            record = {"task": task, "runs": ctx.runs, "observed": observed, "started_at": started,
                      "ended_at": _utc_now(), "substitutes": substitutes(spec),
                      "storage": dict(storage or {})}
            atomic_write_text(partial / POINT_RECORD, json.dumps(record, indent=2, sort_keys=True, default=str) + "\n")
            (partial / PARTIAL_MARKER).unlink()
            partial.rename(out)
            made.forget(partial)
            done = True
            return record
    finally:
        with signals_ignored():
            if not done and (partial / PARTIAL_MARKER).is_file():
                with contextlib.suppress(OSError):
                    remove_tree(partial)
                made.forget(partial)
            _empty_scratch(scratch, made_scratch)


def _stage_input(task: Mapping[str, Any], dest: Path, made: Path | None) -> None:
    """The task's input in its scratch, on the class's device (unprofiled): a copy of ``made``
    (checked to be this task's kind, size and seed by its ``synth.json``), else synthesized."""
    want = task["input"]
    if made is None:
        data.synth(want["kind"], dest, parse_size(str(want["size"])), int(task["seed"]))
        return
    record = json.loads((made / "synth.json").read_text())
    given = (record["kind"], record["requested_size_bytes"], record["seed"])
    if given != (want["kind"], parse_size(str(want["size"])), int(task["seed"])):
        raise ExperimentError(f"--input {made}: it is {given} (kind, bytes, seed), the task needs "
                              f"{(want['kind'], parse_size(str(want['size'])), int(task['seed']))}")
    shutil.copytree(made, dest, symlinks=False)


def _empty_scratch(scratch: Path, remove_dir: bool) -> None:
    """The task's scratch emptied (it was empty or absent before the task)."""
    if not scratch.exists():
        return
    for child in scratch.iterdir():
        if child.is_dir() and not child.is_symlink():
            with contextlib.suppress(OSError):  # never into a disk still mounted there
                remove_tree(child)
        else:
            child.unlink(missing_ok=True)
    if remove_dir:
        with contextlib.suppress(OSError):
            scratch.rmdir()
        made.forget(scratch)


def _utc_now() -> str:
    return dt.datetime.now(dt.timezone.utc).isoformat(timespec="milliseconds")


# --- the table -----------------------------------------------------------------------------------

def point_dirs(roots: Iterable[Path], name: str) -> list[Path]:
    """Complete task directories of experiment ``name`` under each result folder (each side's
    ``experiments/<name>/<point>/<rep>/`` holding ``point.json``)."""
    found = []
    for root in roots:
        for side in sorted(Path(root).iterdir()) if Path(root).is_dir() else []:
            base = side / layout.EXPERIMENTS_DIR / name
            if base.is_dir():
                found.extend(p.parent for p in base.glob(f"*/*/{POINT_RECORD}"))
    return sorted(found)


#: How much of a failed run's last stderr line its row keeps.
FAILURE_CHARS = 160


def last_words(stderr_log: Path) -> str | None:
    """The last non-empty line a failed tool wrote to stderr: what it said of why it failed."""
    with contextlib.suppress(OSError):
        lines = [line.strip() for line in stderr_log.read_text(errors="replace").splitlines() if line.strip()]
        return lines[-1][:FAILURE_CHARS] if lines else None
    return None


def not_ok(table: pd.DataFrame, keys: Sequence[str]) -> str:
    """A sentence on the runs that were not ok, grouped by ``keys`` and outcome, with the
    classes they ran on and what a failed tool said (empty when every run was ok)."""
    bad = table[table["outcome"] != "ok"]
    if bad.empty:
        return ""
    parts = []
    for (outcome, *values), group in bad.groupby(["outcome", *keys], sort=False):
        said = group["failure"].dropna().unique() if "failure" in group else []
        parts.append(f"{' '.join(map(str, values))} on {', '.join(dict.fromkeys(group['storage']))} "
                     f"({len(group)} run(s) {outcome}"
                     + (f": '{said[0]}'" if len(said) else "") + ")")
    return "Not ok: " + "; ".join(parts) + "."


def run_rows(point_dir: Path, record: Mapping[str, Any]) -> list[dict[str, Any]]:
    """The run-table row of each run of a task, with the task's columns and the point's values
    (an experiment's :func:`rows` adds what it observed)."""
    task = record["task"]
    subs = record.get("substitutes", {})
    rows = []
    for name in record["runs"]:
        row = extract.run_features(point_dir / name)
        row["run_dir"] = str(Path(task["publish"]) / name)
        body = manifest.read_manifest(point_dir / name)
        tool = body["labels"].get("tool")
        row.update({"experiment": task["experiment"], "point": task["point"], "size": task["size"],
                    "input_size": task["input"]["size"], "cap": body["labels"].get("mem"),
                    "host": task["host"], "storage": task["storage"], "rep": task["rep"], "run": name,
                    "substitute_of": subs.get(tool),
                    "failure": last_words(point_dir / name / "stderr.log") if body["outcome"] == "failed" else None})
        row.update(task["values"])
        rows.append(row)
    return rows


def table(name: str, roots: Iterable[Path]) -> pd.DataFrame:
    """The experiment's table over the result folders: one row per run (empty, with the shared
    columns, when there is none)."""
    rows: list[dict[str, Any]] = []
    exp = module(name)
    for point_dir in point_dirs(roots, name):
        record = json.loads((point_dir / POINT_RECORD).read_text())
        rows.extend(exp.rows(point_dir, record))
    columns = [*TASK_COLUMNS, *exp.COLUMNS]
    frame = pd.DataFrame(rows)
    if frame.empty:
        return pd.DataFrame(columns=columns)
    rest = [c for c in frame.columns if c not in columns]
    return frame[[c for c in columns if c in frame.columns] + rest].sort_values(
        ["point", "storage", "rep", "run"], kind="stable").reset_index(drop=True)


def table_path(results_dir: Path, name: str) -> Path:
    return Path(results_dir) / layout.EXPERIMENTS_DIR / f"{name}.csv"


def load_table(results_dirs: Sequence[Path | str], name: str) -> pd.DataFrame:
    """The experiment's table of these result folders: the written ``experiments/<name>.csv`` of
    each where it exists, else made from their task directories."""
    frames = []
    for d in results_dirs:
        path = table_path(Path(d), name)
        frames.append(pd.read_csv(path) if path.is_file() else table(name, [Path(d)]))
    frames = [f for f in frames if not f.empty]
    return pd.concat(frames, ignore_index=True) if frames else table(name, [])


def scale_keys(table: pd.DataFrame) -> list[str]:
    """The :data:`SCALE_COLUMNS` a table has (tables written by older versions lack them), to
    lead every summary's grouping."""
    return [c for c in SCALE_COLUMNS if c in table.columns]


def headline(name: str, table: pd.DataFrame) -> str:
    """The experiment's headline (its module's ``headline``), one per size and input when the
    table holds runs of more than one: points of different sizes are never put together."""
    head = module(name).headline
    keys = [c for c in ("size", "input_size") if c in table.columns]
    scales = table[keys].drop_duplicates() if keys and not table.empty else pd.DataFrame()
    if len(scales) <= 1:
        return head(table)
    parts = []
    for values, part in table.groupby(keys, sort=False):
        values = values if isinstance(values, tuple) else (values,)
        label = ", ".join(f"{k} {v}" for k, v in zip(keys, values))
        parts.append(f"At {label}: {head(part)}")
    return " ".join(parts)


def since_start_s(body: Mapping[str, Any], monotonic_s: float | None) -> float | None:
    """An observer's ``time.monotonic()`` time as seconds since the run's command started (the
    manifest's ``monotonic_origin_s`` and ``command_started_s``); ``None`` when either is unknown."""
    origin, started = body.get("monotonic_origin_s"), body.get("command_started_s")
    if monotonic_s is None or origin is None or started is None:
        return None
    return monotonic_s - origin - started


#: The storage classes' order in tables and text: the fast class first.
CLASS_ORDER = ("ssd", "hdd")


def by_class(frame: pd.DataFrame, *then: str) -> pd.DataFrame:
    """``frame`` sorted by its scale (:data:`SCALE_COLUMNS`, in order of first appearance), storage
    class (:data:`CLASS_ORDER`, then others by name), then by ``then``."""
    rank = frame["storage"].map(lambda c: CLASS_ORDER.index(c) if c in CLASS_ORDER else len(CLASS_ORDER))
    scale = scale_keys(frame)
    scale_rank = (frame.groupby(scale, sort=False).ngroup() if scale and not frame.empty
                  else pd.Series(0, index=frame.index))
    return (frame.assign(_scale=scale_rank, _class=rank).sort_values(["_scale", "_class", "storage", *then], kind="stable")
            .drop(columns=["_scale", "_class"]).reset_index(drop=True))


def window_features(run_dir: Path, start_s: float, end_s: float | None = None) -> dict[str, float]:
    """The block-trace features (Riops, Wiops, Rsize, Wsize, CAR, WBlen, Butil) of one run over
    the window ``[start_s, end_s]``, in seconds since the command started (``end_s`` ``None``: the
    run's end and its flush), rates per second of the window. NaN for all when the run has no
    block trace."""
    from biossd.features import blockstats
    from biossd.measure import blocktrace

    body = manifest.read_manifest(run_dir)
    if not body["collectors"].get("blocktrace", {}).get("ran") or body.get("command_started_s") is None:
        return {f: float("nan") for f in extract.BLOCK_TRACE_FEATURES}
    started = body["command_started_s"]
    start_s, end_s = started + start_s, (None if end_s is None else started + end_s)
    t_end = started + body["wall_s"] + (body.get("flush_s") or 0.0)
    end_s = t_end if end_s is None else end_s
    requests = blocktrace.request_arrays(run_dir / blocktrace.BLOCKTRACE_FILE)
    tally = blockstats.tally_requests(requests, start_s, max(start_s, end_s))
    device = extract.device_record(run_dir, body)
    return extract.block_features(tally, 1.0, device.bandwidth_bps, runtime_s=max(end_s - start_s, 0.0) or None)


def describe(spec: Mapping[str, Any]) -> str:
    """The experiment in words, as a reader of the report meets it: the study it re-runs, its
    question and that study's finding, its tools with each substitute named as such, and what is
    not available here."""
    lines = [f"{spec['title']}, after {spec['source']}.", f"Question: {' '.join(spec['question'].split())}",
             f"That study found: {' '.join(spec['seed_finding'].split())}", "Tools:"]
    for tool, info in spec["tools"].items():
        sub = f" — SUBSTITUTE for {info['substitute_of']}" if info.get("substitute_of") else ""
        version = info.get("version") or (catalogue.get(info["catalogue"]).data.get("version") if info.get("catalogue")
                                          else "")
        note = f": {' '.join(info['note'].split())}" if info.get("note") else ""
        lines.append(f"  - {info.get('name', tool)} {version}{sub}{note}")
    for what, why in (spec.get("not_available") or {}).items():
        lines.append(f"Not available here ({what}): {' '.join(why.split())}")
    return "\n".join(lines)
