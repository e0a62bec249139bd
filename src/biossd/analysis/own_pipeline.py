"""Your own pipeline's answer: per process, its storage features, its nearest I/O pattern, and
its predicted runtime and speedup — and the whole pipeline's — on the devices you could buy or
rent (``biossd pipeline report``).

The runs are those ``nextflow/conf/profile_pipeline.config`` kept (:mod:`biossd.measure.own_pipeline.task`),
one per task attempt; Nextflow's own record of the run (``nextflow log``, read in the launch
directory the runs name, :func:`load_trace`) says which attempt counted. A task counts once: its
last attempt that completed (a failed attempt is listed as failed, never summed), or, for a task
Nextflow took from its cache (``-resume``), the run of the session that ran it. Runs written by
another biossd version (another manifest schema) are named and skipped.

- **Per process**: tasks, failed attempts, cached tasks, the tasks' measured runtime (sum and
  median), CPU share (CPU time over runtime), peak RSS, and the eight storage features of
  Lee, Min and Yoon (2015, Table 2) as the median over its tasks.
- **Pattern**: with a study result set (``--study``), the nearest of its patterns P1–P5 — the
  process's features normalized by the study's own rules, the Euclidean distance to each
  pattern's centroid (:func:`nearest_patterns`). Without one there is none to be near: the paper
  gives only P1 in numbers (normalized Rsize 0.01, Wsize 0.81, CAR 0.72, §3.2), normalized over
  its own 23 tools, a scale no other run can be put on; the report says so.
- **Prediction**: each counted run's request stream replayed on each target
  (:mod:`biossd.analysis.predict`: its model, interval and blind spots), summed per process; the
  pipeline's wall time follows the trace (:func:`critical_path`), not a sum of tasks.
- **Cost**: on each cloud volume, what one run costs from its dated published price
  (:mod:`biossd.analysis.cost`).
"""

from __future__ import annotations

import io
import shutil
import subprocess
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import Sequence

import numpy as np
import pandas as pd

from biossd.analysis import cost, predict
from biossd.core.files import atomic_write_text
from biossd.features import extract as features
from biossd.host.models import cloudmodel, devicemodels
from biossd.measure import manifest
from biossd.measure.own_pipeline import task as pipeline_task

#: The trace file an older profiling config had Nextflow write (read where it is there).
LEGACY_TRACE_FILE = Path("pipeline_info") / "biossd-trace.txt"
#: What the report takes of each task attempt from ``nextflow log <run> -f`` (its columns, in order).
LOG_FIELDS = ("task_id", "hash", "native_id", "process", "tag", "name", "status", "exit", "attempt", "submit",
              "start", "complete", "workdir")
#: A finished run's task list, as ``nextflow log`` gave it (kept: a finished run's list is final).
TASKS_FILE = "pipeline_info/biossd-tasks-{run_name}.tsv"
#: Nextflow's list of the runs launched in a directory (its ``nextflow log`` table without header).
HISTORY_FILE = Path(".nextflow") / "history"
#: A run's status in that list while it is still running (``OK`` or ``ERR`` once it ended).
RUNNING_STATUS = "-"
REPORT_DIR = "report"
#: The devices every report predicts on: the paper's fastest SSD and its 7200 rpm HDD, and an
#: NVMe drive (study/reference/drives.csv); the cloud storage follows (:func:`default_targets`).
DEVICE_TARGETS = ("paper:Samsung 840 Pro", "paper:Seagate Barracuda", "drive:nvme-pcie4")
#: Why a report without a study names no pattern.
NO_STUDY = ("no study given (--study RESULTS): the paper gives only its P1 in numbers (§3.2), normalized over its "
            "own tools, a scale no other run can be put on")
STATUS_COUNTED = ("COMPLETED", "CACHED")


class PipelineReportError(ValueError):
    pass


@dataclass
class Report:
    runs: pd.DataFrame
    tasks: pd.DataFrame
    processes: pd.DataFrame
    predictions: pd.DataFrame
    pipeline: pd.DataFrame
    skipped: list[tuple[str, str]] = field(default_factory=list)
    #: Per process, the evidence the findings' rules read, and the findings that fired
    #: (:mod:`biossd.analysis.findings`).
    evidence: pd.DataFrame = field(default_factory=pd.DataFrame)
    findings: pd.DataFrame = field(default_factory=pd.DataFrame)
    #: How the reported Nextflow run ended (its ``nextflow log`` status: OK, ERR, ``-`` when it was
    #: killed or still runs); empty for an older profiling config's runs.
    status: str = ""
    #: Processes with runs but no completed task (killed, failed or OOM-killed on every attempt):
    #: process, attempts and their outcomes.
    never_completed: pd.DataFrame = field(default_factory=pd.DataFrame)
    #: Per process and for the pipeline, the cloud storage to rent (:func:`choices`), and the
    #: instance the cloud volumes were put behind (``None``: each volume alone).
    choices: pd.DataFrame = field(default_factory=pd.DataFrame)
    instance: str | None = None

    @property
    def finished(self) -> bool:
        return self.status in ("", "OK")


def last_run(runs: pd.DataFrame) -> tuple[Path, str, str]:
    """The launch directory, name and status of the latest Nextflow run of the session(s) that
    ``runs`` were profiled in (their labels name the launch directory and session id): a run
    resumed from them keeps their session id, so a resumed run whose tasks all came from the
    cache is found too. Read from each launch directory's :data:`HISTORY_FILE`."""
    sessions = {}
    for launch, session in runs[["launch_dir", "session_id"]].dropna().drop_duplicates().itertuples(index=False):
        sessions.setdefault(Path(launch), set()).add(str(session))
    found = []
    for launch, ids in sessions.items():
        history = launch / HISTORY_FILE
        try:
            lines = history.read_text().splitlines()
        except OSError as err:
            raise PipelineReportError(f"{history}: cannot read Nextflow's list of runs ({err.strerror}); the runs "
                                      "name that launch directory: report where it is kept") from None
        for line in lines:
            cols = line.split("\t")
            if len(cols) >= 6 and cols[5].strip() in ids:
                found.append((cols[0].strip(), launch, cols[2].strip(), cols[3].strip()))
    if not found:
        raise PipelineReportError("no Nextflow run of the profiled session(s) "
                                  f"{', '.join(sorted(set().union(*sessions.values())))} is in "
                                  f"{', '.join(str(d / HISTORY_FILE) for d in sessions)}")
    _, launch, name, status = max(found, key=lambda f: f[0])
    return launch, name, status


def nextflow_log(launch_dir: Path, run_name: str) -> str:
    """``nextflow log <run_name> -f`` :data:`LOG_FIELDS`, run in ``launch_dir``: one
    tab-separated line per task attempt."""
    # On PATH, else beside this Python (make install puts it in the project's .venv/bin).
    exe = shutil.which("nextflow") or shutil.which("nextflow", path=str(Path(sys.executable).parent))
    if exe is None:
        raise PipelineReportError("`nextflow` is not on PATH: the report reads the run's tasks with `nextflow log` "
                                  "(make install puts it in the project's .venv/bin)")
    proc = subprocess.run([exe, "log", run_name, "-f", ",".join(LOG_FIELDS)], cwd=launch_dir,
                          capture_output=True, text=True)
    if proc.returncode != 0:
        raise PipelineReportError(f"`nextflow log {run_name}` in {launch_dir} failed ({proc.returncode}): "
                                  f"{(proc.stderr or proc.stdout).strip()[-500:]}")
    return proc.stdout


def load_trace(outdir: Path, runs: pd.DataFrame | None = None) -> pd.DataFrame:
    """Nextflow's record of the profiled run's tasks: one row per task attempt, with its start and
    end in seconds since the first start. Taken from ``nextflow log`` of the latest run of the
    runs' session (:func:`last_run`), kept under :data:`TASKS_FILE` once that run has ended; an
    older profiling config's trace file (:data:`LEGACY_TRACE_FILE`) is read for runs that name no
    session (that config's)."""
    outdir = Path(outdir)
    legacy = outdir / LEGACY_TRACE_FILE
    runs = load_runs(outdir)[0] if runs is None else runs
    named = not runs.empty and "session_id" in runs and runs["session_id"].notna().any()
    if not named and legacy.is_file():
        trace = pd.read_csv(legacy, sep="\t", dtype=str)
    else:
        if not named:
            raise PipelineReportError(f"{outdir / pipeline_task.RUNS_DIR}: no profiled run names its Nextflow session; "
                                      f"was the pipeline run with -c nextflow/conf/profile_pipeline.config "
                                      f"--biossd_outdir {outdir}?")
        launch, name, status = last_run(runs)
        kept = outdir / TASKS_FILE.format(run_name=pipeline_task.component(name))
        if kept.is_file():
            text = kept.read_text()
        else:
            text = nextflow_log(launch, name)
            if status != RUNNING_STATUS:
                kept.parent.mkdir(parents=True, exist_ok=True)
                atomic_write_text(kept, text)
        trace = pd.read_csv(io.StringIO(text), sep="\t", header=None, names=list(LOG_FIELDS), dtype=str,
                            keep_default_na=False, na_values=["", "-"])
    trace["hash_key"] = trace["hash"].str.replace("/", "", regex=False)
    for col in ("start", "complete"):
        trace[col + "_t"] = pd.to_datetime(trace[col], errors="coerce")
    t0 = trace["start_t"].min()
    trace["start_s"] = (trace["start_t"] - t0).dt.total_seconds()
    trace["complete_s"] = (trace["complete_t"] - t0).dt.total_seconds()
    return trace


def load_runs(outdir: Path) -> tuple[pd.DataFrame, list[tuple[str, str]]]:
    """Every kept run with its task labels and features; runs that cannot be read (another biossd
    version's, damaged) are returned apart with the reason."""
    rows, skipped = [], []
    for run_dir in features.find_run_dirs([Path(outdir) / pipeline_task.RUNS_DIR]):
        try:
            body = manifest.read_manifest(run_dir)
            row = features.run_features(run_dir)
        except (manifest.ManifestError, features.FeatureError, OSError, ValueError, KeyError) as err:
            skipped.append((str(run_dir), str(err)))
            continue
        labels = body.get("labels") or {}
        row.update({k: labels.get(k) for k in pipeline_task.LABELS})
        row["run_path"] = str(run_dir)
        row["attempt"] = int(labels.get("attempt") or 1)
        cap = body.get("memory_cap") or {}
        # A container's cap is its engine's (the task's memory directive, enforced by Docker).
        row["memory_limit_bytes"] = float(cap.get("enforced_limit_bytes") or cap.get("limit_bytes") or np.nan)
        row["container_peak_bytes"] = float(cap.get("peak_usage_bytes") or np.nan) if cap.get("enforced_by") else np.nan
        # The command's window on the host's clock (epoch seconds), its post-exit flush of dirty
        # data included (a flush writes what every task beside it left dirty too): which tasks overlapped.
        started = (pd.Timestamp(body["started_at"]).timestamp() if body.get("started_at") else np.nan) \
            + float(body.get("command_started_s") or 0.0)
        row["command_start_epoch_s"] = started
        row["command_end_epoch_s"] = started + manifest.window_s(body)
        row["side_by_side"] = (body.get("host_lock") or {}).get("mode") == "group-member"
        # Write-back throttling while it ran (NaN where the tracer did not record it).
        throttle = ((body.get("collectors") or {}).get("blocktrace") or {}).get("throttle") or {}
        row["throttled_s"] = float(throttle["paused_s"]) if throttle.get("traced") else np.nan
        row["throttle_pauses"] = float(throttle["pauses"]) if throttle.get("traced") else np.nan
        rows.append(row)
    return pd.DataFrame(rows), skipped


def counted_tasks(runs: pd.DataFrame, trace: pd.DataFrame) -> pd.DataFrame:
    """One row per task that counts (the trace's COMPLETED or CACHED entry), with its run: the
    run whose hash and attempt match, or for a cached task the last ok run of its hash."""
    if runs.empty:
        return pd.DataFrame()
    counted = trace[trace["status"].isin(STATUS_COUNTED)].copy()
    rows = []
    for t in counted.itertuples():
        mine = runs[runs["task_hash"].str.startswith(t.hash_key)]
        if t.status == "COMPLETED":
            mine = mine[mine["attempt"] == int(t.attempt)]
        mine = mine[mine["outcome"] == "ok"].sort_values("attempt")
        if mine.empty:
            continue
        run = mine.iloc[-1]
        rows.append({**run.to_dict(), "status": t.status, "start_s": t.start_s, "complete_s": t.complete_s,
                     "realtime_s": t.complete_s - t.start_s})
    return pd.DataFrame(rows)


def never_completed(runs: pd.DataFrame, tasks: pd.DataFrame) -> pd.DataFrame:
    """The processes of ``runs`` (the reported session's) that have no counted task: every attempt
    killed, failed or OOM-killed. One row each: its attempts and their outcomes (``oom 1, failed 2``)."""
    done = set(tasks["process"]) if len(tasks) else set()
    rows = []
    for process, mine in runs[~runs["process"].isin(done)].groupby("process"):
        outcomes = mine["outcome"].value_counts()
        rows.append({"process": process, "attempts": len(mine),
                     "outcomes": ", ".join(f"{o} {n}" for o, n in outcomes.items())})
    return pd.DataFrame(rows, columns=["process", "attempts", "outcomes"])


def reported_runs(runs: pd.DataFrame, tasks: pd.DataFrame) -> pd.DataFrame:
    """The runs of the Nextflow session the report is of (the session of its counted tasks; a
    resumed run keeps its session's id): an outdir that also holds another session's runs (a run
    killed before, a second pipeline) lends that session's failed attempts to no count. Runs that
    name no session (an older profiling config's) are all the report's."""
    if "session_id" not in runs or "session_id" not in tasks or tasks["session_id"].isna().all():
        return runs
    return runs[runs["session_id"].isin(set(tasks["session_id"].dropna()))]


def nearest_patterns(features_table: pd.DataFrame, study_dirs: Sequence[Path] | None) -> pd.DataFrame:
    """Per row (a process's median features): its nearest pattern and the distance to it."""
    if study_dirs:
        from biossd.analysis import Analysis, resultset

        clustering = Analysis(resultset.load(study_dirs)).clustering
        if clustering is None:
            raise PipelineReportError(f"the study result set {', '.join(map(str, study_dirs))} has no patterns")
        cols = list(clustering.matrix.columns)
        normed = _apply_rules(features_table[cols], clustering.rules)
        centroids = clustering.matrix.assign(pattern=clustering.pattern).groupby("pattern")[cols].mean()
        out = []
        for name, vec in normed.iterrows():
            ok = ~vec.isna()
            dist = np.sqrt(((centroids.loc[:, ok] - vec[ok]) ** 2).sum(axis=1))
            out.append({"process": name, "pattern": dist.idxmin(), "pattern_distance": float(dist.min()),
                        "pattern_source": "the study's patterns (nearest centroid)"})
        return pd.DataFrame(out).set_index("process")
    return pd.DataFrame({"pattern": "unknown", "pattern_distance": np.nan, "pattern_source": NO_STUDY},
                        index=features_table.index.rename("process"))


def _apply_rules(values: pd.DataFrame, rules: pd.DataFrame) -> pd.DataFrame:
    """Features normalized by a study's rules (:func:`biossd.features.normalize.normalize`),
    clipped to [0, 1] (a process beyond the study's range sits at its edge)."""
    out = values.astype(float).copy()
    for rule in rules.itertuples():
        col = out[rule.column]
        col = np.log10(col + rule.shift) if rule.log10 else col
        span = rule.max - rule.min
        out[rule.column] = ((col - rule.min) / span if span > 0 else col * 0.0).clip(0.0, 1.0)
    return out


def overlaps(tasks: pd.DataFrame) -> pd.DataFrame:
    """Which counted tasks ran side by side: per task, its overlap group (tasks linked by
    overlapping command windows, one number per group), the other tasks it overlapped
    (``process (tag)``, ``;``-joined), the seconds another task ran beside it, and its kept
    kernel-thread requests (write-back, the journal) — and how many of those were issued while
    another task ran: requests no run can tell apart, kept in each run that overlapped them and
    shown here as unattributed (:func:`biossd.measure.trace.tracereader.kernel_thread_issue_s`)."""
    from biossd.measure.trace import tracereader

    start, end = tasks["command_start_epoch_s"].to_numpy(float), tasks["command_end_epoch_s"].to_numpy(float)
    order = np.argsort(start, kind="stable")
    group = np.zeros(len(tasks), int)
    current, reach = -1, -np.inf
    for i in order:
        if start[i] >= reach:
            current += 1
        group[i] = current
        reach = max(reach, end[i])
    names = (tasks["process"].astype(str) + " (" + tasks["tag"].fillna("").astype(str) + ")").to_numpy()
    rows = []
    for i in range(len(tasks)):
        others = [j for j in range(len(tasks)) if j != i and start[j] < end[i] and end[j] > start[i]]
        windows = sorted((max(start[i], start[j]), min(end[i], end[j])) for j in others)
        merged: list[list[float]] = []
        for a, b in windows:
            if merged and a <= merged[-1][1]:
                merged[-1][1] = max(merged[-1][1], b)
            else:
                merged.append([a, b])
        run_dir = Path(tasks.iloc[i]["run_path"])
        try:
            body = manifest.read_manifest(run_dir)
            t0 = pd.Timestamp(body["started_at"]).timestamp()
            kernel = t0 + tracereader.kernel_thread_issue_s(run_dir, body)
        except (manifest.ManifestError, OSError, KeyError, ValueError):
            kernel = np.array([])
        shared = sum(int(np.sum((kernel >= a) & (kernel <= b))) for a, b in merged)
        rows.append({"overlap_group": int(group[i]), "overlapped_with": "; ".join(names[j] for j in others),
                     "overlap_s": float(sum(b - a for a, b in merged)), "kernel_requests": int(kernel.size),
                     "kernel_requests_unattributed": shared})
    return pd.DataFrame(rows, index=tasks.index)


def interleave(tasks: pd.DataFrame, preds: pd.DataFrame, targets: Sequence) -> pd.DataFrame:
    """``preds`` (per task and target, each run served alone) with every overlap group of more
    than one task predicted together: their requests interleaved on the target they share
    (:func:`biossd.analysis.predict.predict_overlapping`)."""
    preds = preds.copy()
    for _, members in tasks.groupby("overlap_group"):
        if len(members) < 2:
            continue
        streams = {}
        for idx in members.index:
            try:
                streams[idx] = predict.run_stream(Path(tasks.loc[idx, "run_path"]))
            except (predict.NoTrace, OSError, ValueError):
                pass
        if len(streams) < 2:
            continue
        for target in targets:
            results = predict.predict_overlapping(list(streams.values()), target)
            for idx, result in zip(streams, results):
                at = preds.index[(preds["task"] == idx) & (preds["target"] == target.name)]
                for key, value in result.items():
                    if key in preds.columns and key not in ("why", "note"):
                        preds.loc[at, key] = value
                preds.loc[at, "note"] = "served interleaved with the tasks beside it"
    return preds


def critical_path(tasks: pd.DataFrame, duration_s: pd.Series) -> float:
    """The pipeline's wall time when each task takes ``duration_s`` instead of its measured
    runtime: tasks keep their order and the gaps Nextflow's trace shows — each starts the same
    time after the end of the task that finished last before it started (what released it)."""
    order = tasks.sort_values("start_s")
    finish: dict[int, float] = {}
    t0 = float(order["start_s"].min())
    for idx, t in order.iterrows():
        before = order[(order["complete_s"] <= t["start_s"]) & (order.index != idx)]
        before = before[before.index.isin(list(finish))]
        if before.empty:
            start = t["start_s"] - t0
        else:
            pred = before["complete_s"].idxmax()
            start = finish[pred] + (t["start_s"] - before.loc[pred, "complete_s"])
        overhead = max(0.0, float(t["realtime_s"]) - float(t["runtime_s"]))
        finish[idx] = start + overhead + float(duration_s.loc[idx])
    return max(finish.values()) if finish else 0.0


def default_targets(instance: str | None = None) -> list[str]:
    """:data:`DEVICE_TARGETS` and the cloud storage one could rent
    (:func:`biossd.host.models.cloudmodel.storage_behind`): behind ``instance`` when given, else each
    volume alone, without an instance's limits."""

    try:
        return [*DEVICE_TARGETS, *(f"cloud:{spec}" for spec in cloudmodel.storage_behind(instance))]
    except cloudmodel.CloudModelError as err:
        raise PipelineReportError(f"--instance {instance}: {err} (docs/cloud.md says how to add one)") from None


def on_instance(targets: Sequence[str], instance: str | None) -> list[str]:
    """``targets`` with each cloud volume named without an instance put behind ``instance`` where
    that instance attaches it (:func:`biossd.host.models.cloudmodel.storage_behind`: its
    provider's volumes); another provider's volume stays alone."""
    if instance is None:
        return list(targets)
    behind = set(default_targets(instance))  # the instance checked
    out = []
    for t in map(str, targets):
        attached = f"{t}@{instance}"
        out.append(attached if t.startswith(cloudmodel.CLOUD_PREFIX) and "@" not in t and attached in behind else t)
    return out


def choices(processes: pd.DataFrame, pipeline: pd.DataFrame, instance_usd_per_hour: float | None) -> pd.DataFrame:
    """Per process and for the whole pipeline, the storage to rent among the cloud targets
    (:func:`biossd.analysis.cost.cheapest_within`): a process's cost is its tasks' predicted time
    on the volume and the machine; the pipeline's is its predicted wall time."""
    rows = []
    clouds = pipeline[pipeline["target_kind"].astype(str).str.startswith("cloud")]
    rows.append({"scope": "pipeline", **cost.cheapest_within(clouds, "predicted_wall_s")})
    kinds = pipeline.set_index("target")["target_kind"].astype(str)
    cloud_rows = processes[processes["target"].map(kinds).fillna("").str.startswith("cloud")]
    for process, rows_of in cloud_rows.groupby("process", sort=True):
        priced = cost.per_run(rows_of, instance_usd_per_hour, seconds="predicted_runtime_s")
        rows.append({"scope": process, **cost.cheapest_within(priced, "predicted_runtime_s")})
    return pd.DataFrame(rows)


def report(outdir: Path, targets: Sequence[str] | None = None, study: Sequence[Path] | None = None,
           instance_usd_per_hour: float | None = None, instance: str | None = None) -> Report:
    """The report of one profiled pipeline run (the module's text) on ``targets`` (default:
    :func:`default_targets` of ``instance``); each cloud target's cost per run from its published
    price and, given the machine's hourly price, its machine time, and the storage to rent per
    process and for the pipeline (:mod:`biossd.analysis.cost`)."""
    outdir = Path(outdir)
    targets = default_targets(instance) if not targets else on_instance(targets, instance)
    runs, skipped = load_runs(outdir)
    if runs.empty:
        raise PipelineReportError(f"{outdir / pipeline_task.RUNS_DIR}: no run to report"
                                  + (f" ({len(skipped)} skipped: {skipped[0][1]})" if skipped else ""))
    trace = load_trace(outdir, runs)
    named = "session_id" in runs and runs["session_id"].notna().any()
    status = last_run(runs)[2] if named else ""
    tasks = counted_tasks(runs, trace).reset_index(drop=True)
    tasks = tasks.join(overlaps(tasks))
    loaded = [devicemodels.load_target(t) for t in targets]
    preds = predict.predict_runs([Path(p) for p in tasks["run_path"]], loaded)
    preds["task"] = np.repeat(np.arange(len(tasks)), len(loaded))
    preds["process"] = preds["task"].map(tasks["process"])
    preds = interleave(tasks, preds, loaded)

    reported = reported_runs(runs, tasks)
    failed = reported[reported["outcome"] != "ok"].groupby("process").size()
    never = never_completed(reported, tasks)
    cached = tasks[tasks["status"] == "CACHED"].groupby("process").size()
    per = tasks.groupby("process").agg(
        tasks=("process", "size"), runtime_s=("runtime_s", "sum"), median_task_s=("runtime_s", "median"),
        cpu_s=("user_s", "sum"), sys_s=("sys_s", "sum"), peak_rss_kib=("max_rss_kib", "max"),
        **{f: (f, "median") for f in features.STORAGE_FEATURES})
    per["cpu_share"] = (per.pop("cpu_s") + per.pop("sys_s")) / per["runtime_s"]
    per["failed_attempts"] = failed.reindex(per.index).fillna(0).astype(int)
    per["cached_tasks"] = cached.reindex(per.index).fillna(0).astype(int)
    per = per.join(nearest_patterns(per, study))
    sums = ("predicted_runtime_s", "predicted_low_s", "predicted_high_s")
    by = (preds.astype({c: float for c in sums}).groupby(["process", "target"])[list(sums)].sum().reset_index()
          if len(preds) else pd.DataFrame({c: pd.Series(dtype=float) for c in ("process", "target", *sums)}))
    by["measured_runtime_s"] = by["process"].map(per["runtime_s"]).astype(float)
    by["speedup_vs_measured"] = by["measured_runtime_s"] / by["predicted_runtime_s"]
    whole = []
    measured_wall = critical_path(tasks, tasks["runtime_s"])
    for target in loaded:
        mine = preds[preds["target"] == target.name].set_index("task")
        wall = {w: critical_path(tasks, mine[c].reindex(tasks.index).fillna(tasks["runtime_s"]))
                for w, c in (("predicted", "predicted_runtime_s"), ("low", "predicted_low_s"), ("high", "predicted_high_s"))}
        whole.append({"target": target.name, "target_kind": target.kind, "measured_wall_s": measured_wall,
                      "predicted_wall_s": wall["predicted"], "predicted_wall_low_s": wall["low"],
                      "predicted_wall_high_s": wall["high"], "speedup_vs_measured": measured_wall / wall["predicted"],
                      "source": target.source})
    from biossd.analysis import findings

    ev = findings.evidence(tasks, runs, by, preds, lambda durations: critical_path(tasks, durations))
    pipeline = cost.per_run(pd.DataFrame(whole), instance_usd_per_hour).assign(session_status=status)
    return Report(runs=runs, tasks=tasks, processes=per.reset_index(), predictions=by, pipeline=pipeline,
                  skipped=skipped, evidence=ev.reset_index(), findings=findings.of(ev), status=status, never_completed=never,
                  choices=choices(by, pipeline, instance_usd_per_hour), instance=instance)
