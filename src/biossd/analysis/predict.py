"""Predict a run's runtime, and its speedup, on a device it was not measured on.

**The model.** A run's wall time ``W`` splits into the time its device had no request of the
run outstanding, ``W - B`` (computing, or waiting on anything but this device), and the
device's busy time ``B`` (the union of the recorded requests' issue-to-completion intervals
inside the run). During busy time the run may still compute: it needs ``C / p`` seconds of
compute in all (``C`` its user + system CPU time from rusage, ``p`` the cores it kept busy at
most, ``ceil(C / W)``), so the compute overlapped with I/O is ``O = clip(C / p - (W - B), 0,
B)``. On a target device the same request stream — its order, sizes, sectors, directions and the
queue depth each request met, as recorded; major faults and swap-ins are among its reads,
swap-outs and writeback among its writes — keeps the target busy for ``B' = Σ s'(request)``,
each request's service time on the target's model (:mod:`biossd.host.models.devicemodels`: the
emulator's seek/rotation/transfer model for a hard disk, a depth-aware IOPS-and-bandwidth model
for flash; a cloud volume replays the stream on its own clock instead, :mod:`biossd.analysis.replay`,
so that a burst of requests overlaps its latencies). The predicted runtime is

    ``W' = (W - B) + max(B', O)``,

the time off the device unchanged, and the busy stretches taking as long as the slower of the
target and the compute that overlapped them. ``B`` and ``B'`` count the requests the run waited
for: its reads, its synchronous writes, and the flushes of the device's write cache issued inside
its ``fsync`` calls (traced on ext4: the journal's commit and the flush are issued by kernel
threads, and without the calls' times the run's wait for them would count as time off the device;
on the emulated HDD a flush is where its write buffer drains). A write without the kernel's synchronous flag is
writeback nobody waited for (the flusher's, or one ``close`` started): the target serves it in
its place in the stream (it moves a disk's head), but it adds nothing to the runtime, as on the
device measured, where it ran beside the compute or after the run. The predicted speedup
against the measured device is ``W' / W`` (> 1: the target is slower).

**The interval** spans the model's unknowns: the overlap ``O`` for ``p = 1`` as well as for
``p`` as estimated, a hard disk's random seeks and rotations (±2 standard deviations of their
sum) and, for a flash device known only by its depth-32 IOPS, its depth-1 IOPS anywhere between
the saturated figure and a 32nd of it.

**Where it is blind.** It replays what the run asked of *its* device: a faster or slower device
changes how much the page cache absorbs and when the kernel writes back, merges or reads ahead
(a slower device gets larger merged requests, a faster one fewer stalls of writeback
throttling), and none of that is in the stream: a run that waited on background writeback (the
kernel throttling its dirty pages) has that wait in its time off the device, unscaled, and
background writes delaying the run's own requests on the target are not modelled. Service times
are a device's own, not its host's: a different host's CPU or memory is not modelled (compare
sides on one host). Requests are served in issue order; a hard disk's command queueing and a
flash device's garbage collection are not modelled. A delay *above* the block layer is not in a
request's issue-to-completion time: a run measured behind a cgroup I/O throttle (or a network
file system) spent that wait before its requests were issued, so the model counts it as time off
the device, and a prediction *from* such a device keeps it
(``benchmarks/predict_third_device.py`` measured this: from a read-throttled loop device the
native disk's runtimes were over-predicted by a median of 24%). A trace of a shared device (a
run whose scratch was on the root disk rather than on a device of its own) holds other
processes' requests too, and the replay serves them all: such rows carry
:data:`SHARED_DEVICE_NOTE` in ``note`` (``-profile test``'s ssd class is one: its samtools sort
runs were predicted 60% too slow on the emulated HDD, while from the HDD's own loop device the
other way they came within 4%). A run without a block trace cannot be predicted: its row is NaN
with the reason.
"""

from __future__ import annotations

import json
import math
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Iterable, Sequence

import numpy as np
import pandas as pd

from biossd.analysis import replay, speedup
from biossd.core.errors import BiossdError
from biossd.core.files import atomic_write_text, write_frame
from biossd.core.units import SECTOR_BYTES
from biossd.features import extract as features
from biossd.host import requeststream
from biossd.host.models import devicemodels
from biossd.measure import manifest
from biossd.measure.trace import tracefile, tracereader
from biossd.study import catalogue

#: The model and its assumptions in words, for the supplement (the module's text states it).
MODEL_SUMMARY = (
    "A run's wall time W splits into the time its device had none of the run's requests outstanding, W - B, "
    "and the device's busy time B. The run's recorded request stream (order, sizes, sectors, directions and the "
    "queue depth each request met; major faults and swap-ins among its reads, writeback and swap-outs among its "
    "writes) is served by the target's model: for a hard disk the emulated HDD's seek, rotation and transfer "
    "model; for flash the sequential rate for a request that continues the previous one and otherwise the "
    "larger of its transfer time and 1/IOPS at its queue depth, between the device's depth-1 and depth-32 IOPS; "
    "for a cloud volume the stream is replayed on the volume's own clock, each request issued when the one it "
    "followed on the device measured completes there, so that requests issued together overlap their latencies. "
    "With B' the target's busy time and O the compute that overlapped the I/O (CPU time over the cores the run "
    "kept busy, less the time off the device), the predicted runtime is (W - B) + max(B', O). B and B' count "
    "the requests the run waited for, its reads, synchronous writes and the cache flushes issued inside its fsync "
    "calls; a write without the kernel's synchronous "
    "flag is background writeback, served in its place in the stream but not waited for. The replay is "
    "blind to what a device of another speed changes upstream of it: what the page cache absorbs, when the kernel "
    "writes back, how requests merge and how far it reads ahead; and it sees a request from its issue to the device, so a "
    "wait before that (a cgroup I/O throttle, a network file system) counts as time off the device. The trace of a "
    "shared device (a run on the root disk) holds other processes' "
    "requests, which the replay serves too; such predictions say so. A hard disk "
    "serves requests in issue order "
    "(no command queueing); the paper's SSDs, known by their vendors' depth-32 IOPS only, take the geometric "
    "middle of the possible depth-1 IOPS, and the interval spans both ends.")
MS_PER_S = 1000.0
#: The devices of the paper's Fig. 2 (Lee, Min and Yoon 2015, its caption): (a) is the Intel 520 against the
#: Seagate Barracuda, (b) the other five SSDs of Table 3 against the same HDD.
PAPER_FIG2_SSD = "Intel 520"
PAPER_FIG2_HDD = "Seagate Barracuda"
#: The interval's width in standard deviations of a hard disk's random service (≈ 95%).
INTERVAL_SIGMAS = 2.0
PREDICTION_COLUMNS = ["run_dir", *features.LABEL_COLUMNS, "target", "target_kind", "requests",
                      "measured_runtime_s", "off_device_s", "busy_s", "overlap_s", "target_busy_s",
                      "predicted_runtime_s", "predicted_low_s", "predicted_high_s",
                      "predicted_speedup", "speedup_low", "speedup_high", "why", "note"]
#: Said of a run whose scratch was not on a device of its own (``biossd storage up`` gives each
#: class one: a loop device): its trace holds every process's requests to that device, and the
#: replay serves them all.
SHARED_DEVICE_NOTE = ("the run's device was shared (not a device of its own from `biossd storage up`): its trace "
                      "holds other processes' requests too, and the prediction replays them")


@dataclass(frozen=True)
class RunStream:
    """A run's request stream inside its timed window, and what the model takes from the run."""

    stream: devicemodels.Stream
    runtime_s: float
    cpu_s: float
    busy_s: float
    note: str = ""
    #: Per request, whether the run waited for it (``None``: every one); background writeback
    #: is served by the target but not waited for (:func:`biossd.measure.trace.tracereader.waited_for`).
    waited: np.ndarray | None = None
    #: Per request, when it was issued, in seconds after the command started (``None``: unknown),
    #: and when the command started on the host's clock (epoch seconds): what interleaves the
    #: requests of runs that overlapped (:func:`predict_overlapping`).
    issue_s: np.ndarray | None = None
    started_epoch_s: float | None = None
    #: Per request, when it completed on the device measured, in seconds after the command
    #: started (``None``: unknown): what a target that replays the stream on its own clock
    #: (:meth:`biossd.host.models.cloudmodel.CloudTarget.replay`) takes each request's wait from.
    complete_s: np.ndarray | None = None

    @property
    def cores(self) -> float:
        """``p``: the cores the run kept busy at most, as a whole number (at least one)."""
        return max(1.0, math.ceil(self.cpu_s / self.runtime_s - 1e-9)) if self.runtime_s > 0 else 1.0


class NoTrace(Exception):
    """A run that cannot be predicted; the message is the reason, recorded in ``why``."""


def busy_s(issue_s: np.ndarray, complete_s: np.ndarray) -> float:
    """The union of ``[issue, complete]`` intervals (issue order), in seconds."""
    if issue_s.size == 0:
        return 0.0
    ends = np.maximum.accumulate(complete_s)
    starts_block = np.concatenate(([True], issue_s[1:] > ends[:-1]))
    block = np.cumsum(starts_block) - 1
    first = issue_s[starts_block]
    last = np.zeros(first.size)
    np.maximum.at(last, block, ends)
    return float(np.sum(last - first))


def stream_of(requests: dict[str, Any], t0_s: float, t1_s: float, issued: list | None = None
              ) -> tuple[devicemodels.Stream, float, np.ndarray]:
    """The requests issued in ``[t0, t1]`` — reads, writes and flushes of the device's write cache
    — as a :class:`Stream`, the device's busy time in that window with the requests the run
    waited for (a request not seen to complete ends at ``t1``), and which requests those are
    (``requests["waited"]``; without it, every one)."""
    issue = requests["issue_s"]
    keep = (issue >= t0_s) & (issue <= t1_s) & np.isin(requests["op"], ("R", "W", "F"))
    issue = issue[keep]
    complete = requests["complete_s"][keep]
    complete = np.minimum(np.where(np.isnan(complete), t1_s, complete), t1_s)
    complete = np.maximum(complete, issue)
    device = requests["device"][keep]
    done_sorted = np.sort(complete)
    depth = np.arange(1, issue.size + 1) - np.searchsorted(done_sorted, issue, side="right")
    prev_end = np.concatenate(([t0_s], np.maximum.accumulate(complete)[:-1])) if issue.size else np.array([])
    stream = devicemodels.Stream(
        is_write=requests["op"][keep] == "W",
        offset=requests["sector"][keep].astype(np.int64) * SECTOR_BYTES,
        nbytes=requests["bytes"][keep].astype(np.int64),
        depth=np.maximum(depth, 1),
        idle_ms=np.maximum(issue - prev_end, 0.0) * MS_PER_S,
        new_stream=np.concatenate(([True], device[1:] != device[:-1])) if issue.size else np.array([], bool),
        is_flush=requests["op"][keep] == "F",
    )
    waited = np.asarray(requests["waited"], bool)[keep] if "waited" in requests else np.ones(issue.size, bool)
    if issued is not None:  # the kept requests' issue and completion times after t0, for a replay
        issued.append((issue - t0_s, complete - t0_s))
    return stream, busy_s(issue[waited], complete[waited]), waited


def run_stream(run_dir: Path, body: dict[str, Any] | None = None) -> RunStream:
    """The :class:`RunStream` of one run directory; :class:`NoTrace` says why there is none."""
    run_dir = Path(run_dir)
    body = manifest.read_manifest(run_dir) if body is None else body
    if body.get("outcome") != "ok":
        raise NoTrace(f"the run ended {body.get('outcome')}: no complete runtime to scale")
    info = (body.get("collectors") or {}).get("blocktrace") or {}
    path = tracefile.trace_path(run_dir)
    if not info.get("ran") or not path.is_file():
        raise NoTrace(f"no block trace ({info.get('why') or 'not recorded'})")
    rusage = (body.get("collectors") or {}).get("rusage") or {}
    if not rusage.get("ran"):
        raise NoTrace(f"no process accounting ({rusage.get('why') or 'not recorded'})")
    acct = json.loads((run_dir / "rusage.json").read_text())
    t0 = body.get("command_started_s")
    if t0 is None:
        raise NoTrace("the manifest does not say when the command started")
    runtime_s = float(acct["wall_s"])
    issued: list[tuple[np.ndarray, np.ndarray]] = []
    try:
        requests = tracereader.run_requests(run_dir, body)
    except BiossdError as err:  # a trace its collector left half-written: this run is unpredicted, not the report
        raise NoTrace(f"its block trace cannot be read ({err})") from None
    stream, busy, waited = stream_of(requests, t0, t0 + runtime_s, issued)
    own_device = bool((body.get("emulated_storage") or {}).get("cwd"))
    started = body.get("started_at")
    epoch = (pd.Timestamp(started).timestamp() + float(t0)) if started else None
    return RunStream(stream, runtime_s, float(acct["user_s"]) + float(acct["sys_s"]), busy,
                     "" if own_device else SHARED_DEVICE_NOTE, waited, issued[0][0], epoch, issued[0][1])


def predict_stream(run: RunStream, target: devicemodels.Target, service: Any = None) -> dict[str, float]:
    """The model of the module's text for one run on one target: runtime, interval, speedup.
    ``service``: the target's service of this run's requests when they were served among other
    runs' (:func:`predict_overlapping`); by default the run's stream is served alone."""
    w, b = run.runtime_s, min(run.busy_s, run.runtime_s)
    off = w - b
    waited = replay.waited(run)
    if service is None and replay.replays(target, [run]):
        service = replay.service(target.replay(run.stream, *requeststream.followed(run.issue_s, run.complete_s)),
                                 waited, np.arange(len(run.stream)))
    elif service is None:
        service = target.serve(run.stream)  # the whole stream, in order: background writes move the head too
    busy_tgt = float(np.sum(service.mean_ms[waited])) / MS_PER_S
    sigma = math.sqrt(float(np.sum(service.var_ms2[waited]))) / MS_PER_S
    low_tgt = max(0.0, float(np.sum(service.low_ms[waited])) / MS_PER_S - INTERVAL_SIGMAS * sigma)
    high_tgt = float(np.sum(service.high_ms[waited])) / MS_PER_S + INTERVAL_SIGMAS * sigma

    def overlap(cores: float) -> float:
        return float(np.clip(run.cpu_s / cores - off, 0.0, b))

    o_est, o_one = overlap(run.cores), overlap(1.0)
    runtime = off + max(busy_tgt, o_est)
    candidates = [off + max(t, o) for t in (low_tgt, high_tgt) for o in (o_est, o_one)]
    low, high = min(candidates + [runtime]), max(candidates + [runtime])
    return {"requests": len(run.stream), "measured_runtime_s": w, "off_device_s": off, "busy_s": b,
            "overlap_s": o_est, "target_busy_s": busy_tgt, "predicted_runtime_s": runtime,
            "predicted_low_s": low, "predicted_high_s": high, "predicted_speedup": runtime / w,
            "speedup_low": low / w, "speedup_high": high / w, "why": "", "note": run.note}


def predict_overlapping(runs: Sequence[RunStream], target: devicemodels.Target) -> list[dict[str, float]]:
    """Runs that overlapped in time on one device, predicted on one target that they share: their
    requests are served as one stream interleaved by when each was issued (a disk's head moves
    between them; the order is each request's issue time on the host's clock), and each run's
    prediction (:func:`predict_stream`) takes its own requests' service from that stream. On a
    target that replays them on its own clock (a cloud volume: :mod:`biossd.analysis.replay`) one
    run's request waits behind another's in the volume's limits; elsewhere that queueing is not
    modelled."""
    if len(runs) == 1 or any(r.issue_s is None or r.started_epoch_s is None for r in runs):
        return [predict_stream(r, target) for r in runs]
    when = np.concatenate([r.started_epoch_s + r.issue_s for r in runs])
    owner = np.concatenate([np.full(len(r.stream), i) for i, r in enumerate(runs)])
    order = np.argsort(when, kind="stable")

    def merged(field: str) -> np.ndarray:
        return np.concatenate([np.asarray(getattr(r.stream, field)) for r in runs])[order]
    stream = devicemodels.Stream(
        is_write=merged("is_write"), offset=merged("offset"), nbytes=merged("nbytes"), depth=merged("depth"),
        idle_ms=merged("idle_ms"), new_stream=np.zeros(len(order), bool) if len(order) else np.array([], bool),
        is_flush=np.concatenate([r.stream.flushes for r in runs])[order])
    if len(order):
        stream.new_stream[0] = True
    back = np.empty_like(order)
    back[order] = np.arange(len(order))  # each request's place in the merged stream
    if replay.replays(target, runs):
        timeline = target.replay(stream, *replay.merged_followed(runs, back, owner))
        return [predict_stream(run, target, replay.service(timeline, replay.waited(run), back[owner == i]))
                for i, run in enumerate(runs)]
    served = target.serve(stream)
    out = []
    for i, run in enumerate(runs):
        mine = back[owner == i]
        service = type(served)(**{f: np.asarray(getattr(served, f))[mine] for f in _service_fields(served)})
        out.append(predict_stream(run, target, service))
    return out


def _service_fields(served: Any) -> list[str]:
    import dataclasses

    return [f.name for f in dataclasses.fields(served)]


def predict_runs(run_dirs: Iterable[Path], targets: Sequence[devicemodels.Target],
                 base: Path | None = None) -> pd.DataFrame:
    """One row per (run, target) (:data:`PREDICTION_COLUMNS`). A run that cannot be predicted
    gives NaN and its reason in ``why``. ``base``: run directories are named relative to it."""
    rows = []
    for run_dir in run_dirs:
        run_dir = Path(run_dir)
        try:
            body = manifest.read_manifest(run_dir)
        except manifest.ManifestError as err:
            body, problem = {}, f"no readable manifest ({err})"
        else:
            problem = None
        labels = {k: (body.get("labels") or {}).get(k) for k in features.LABEL_COLUMNS}
        name = str(run_dir.relative_to(base)) if base is not None and run_dir.is_relative_to(base) else str(run_dir)
        try:
            if problem:
                raise NoTrace(problem)
            run = run_stream(run_dir, body)
        except NoTrace as err:
            for target in targets:
                rows.append({"run_dir": name, **labels, "target": target.name, "target_kind": target.kind,
                             "why": str(err)})
            continue
        for target in targets:
            rows.append({"run_dir": name, **labels, "target": target.name, "target_kind": target.kind,
                         **predict_stream(run, target)})
    table = pd.DataFrame(rows, columns=PREDICTION_COLUMNS)
    table["note"] = table["note"].astype(object).fillna("")
    return table


def predict_result_set(rs, targets: Sequence[devicemodels.Target], rows: pd.DataFrame | None = None) -> pd.DataFrame:
    """Every run of a result set (:class:`biossd.analysis.resultset.ResultSet`; or only
    ``rows`` of its run table) predicted on each target, with the run table's ``side`` and
    ``root`` — the notebook-level call."""
    runs = rs.runs if rows is None else rows
    frames = []
    for root, group in runs.groupby("root", sort=True):
        table = predict_runs([Path(root) / d for d in group["run_dir"]], targets, base=Path(root))
        table["side"] = table["host"].astype(str) + "-" + table["storage"].astype(str)
        table["root"] = root
        frames.append(table)
    if not frames:
        return pd.DataFrame(columns=[*PREDICTION_COLUMNS, "side", "root"])
    return pd.concat(frames, ignore_index=True)


def side_target(rs, side: str) -> devicemodels.Target:
    """The target a side's device record makes (:func:`biossd.host.models.devicemodels.record_target`)."""
    if side not in rs.devices:
        raise devicemodels.DeviceModelError(f"no device record for {side} in the result set "
                                            f"({side}/device.json); cannot predict for it")
    return devicemodels.record_target(Path(side) / "device.json", rs.devices[side])


#: Validation targets: a tool's prediction is off by at most this much in the median
#: and for no tool by more than the second; the predicted group matches the measured one for at
#: least this share of tools.
TARGET_MEDIAN_ERROR = 0.15
TARGET_MAX_ERROR = 0.40
TARGET_GROUP_AGREEMENT = 0.90
VALIDATION_COLUMNS = ["tool", "direction", "source_side", "target_side", "target", "measured_source_s",
                      "measured_target_s", "target_is_lower_bound", "predicted_target_s", "predicted_low_s",
                      "predicted_high_s", "error", "consistent", "why", "note"]


def cross_predict(a, rows: pd.DataFrame | None = None) -> pd.DataFrame:
    """Validation on a result set with a speedup pair (an :class:`biossd.analysis.Analysis`):
    each tool's baseline runs on each side predicted on the other side's device (its record), the
    mean predicted runtime beside the mean measured one (Table 1's means). ``error`` is
    predicted / measured − 1; where every measured run on the target side reached the time
    limit, the measured time is a lower bound, ``error`` is NaN and ``consistent`` says whether
    the prediction reached it too."""
    if a.pair is None:
        raise ValueError("the result set has no speedup pair: nothing to validate the predictions against")
    fast, slow = a.pair
    base = a.baseline_runs if rows is None else rows
    out = []
    for source, target_side, direction in ((fast, slow, f"{fast} -> {slow}"), (slow, fast, f"{slow} -> {fast}")):
        src = speedup.side_rows(base, source)
        try:
            target = side_target(a.rs, target_side)
        except devicemodels.DeviceModelError as err:
            out += [{"tool": tool, "direction": direction, "source_side": source, "target_side": target_side,
                     "why": f"no model of {target_side}'s device: {err}"} for tool in sorted(src["tool"].unique())]
            continue
        predicted = predict_result_set(a.rs, [target], src[src["outcome"] == speedup.OK])
        measured = speedup.runtime_means(speedup.side_rows(base, target_side), ["tool"]).set_index("tool")
        source_means = speedup.runtime_means(src, ["tool"]).set_index("tool")
        for tool, group in predicted.groupby("tool", sort=True):
            ok = group[group["why"] == ""]
            row = {"tool": tool, "direction": direction, "source_side": source, "target_side": target_side,
                   "target": target.name, "measured_source_s": source_means["runtime_s"].get(tool, math.nan),
                   "why": "" if len(ok) else group["why"].iloc[0],
                   "note": "; ".join(sorted(set(ok["note"].dropna()) - {""}))}
            m = measured.loc[tool] if tool in measured.index else None
            bound = m is not None and m["n_ok"] == 0 and not pd.isna(m["timeout_runtime_s"])
            row["measured_target_s"] = (m["timeout_runtime_s"] if bound else m["runtime_s"]) if m is not None else math.nan
            row["target_is_lower_bound"] = bool(bound)
            for col, src_col in (("predicted_target_s", "predicted_runtime_s"), ("predicted_low_s", "predicted_low_s"),
                                 ("predicted_high_s", "predicted_high_s")):
                row[col] = float(ok[src_col].mean()) if len(ok) else math.nan
            ratio = row["predicted_target_s"] / row["measured_target_s"]
            row["error"] = math.nan if bound else ratio - 1.0
            row["consistent"] = bool(ratio >= 1.0) if bound else bool(abs(ratio - 1.0) <= TARGET_MAX_ERROR)
            out.append(row)
    table = pd.DataFrame(out, columns=VALIDATION_COLUMNS)
    for flag in ("target_is_lower_bound", "consistent"):
        table[flag] = table[flag].astype("boolean").fillna(False).astype(bool)
    for column in ("why", "note"):
        table[column] = table[column].astype(object).fillna("")
    return table


#: The columns of :func:`predicted_speedups` (also of its empty table, for a set without a pair).
SPEEDUP_COLUMNS = ["tool", "measured_speedup", "measured_is_lower_bound", "predicted_speedup", "predicted_speedup_low",
                   "predicted_speedup_high", "measured_group", "predicted_group", "group_agrees", "paper_group"]


def predicted_speedups(a, validation: pd.DataFrame) -> pd.DataFrame:
    """Per tool: the measured baseline speedup (slow / fast, Table 1's) and the one predicted
    from the fast side's runs alone (predicted slow runtime / measured fast runtime), with its
    interval, both groups at the analysis's threshold, and the paper's group (Lee, Min and Yoon 2015, Table 1;
    empty for a tool it did not profile)."""
    fast, slow = a.pair
    pred = validation[validation["source_side"] == fast].set_index("tool")
    measured = a.baseline
    table = pd.DataFrame({"tool": pred.index})
    table["measured_speedup"] = table["tool"].map(measured["speedup"])
    table["measured_is_lower_bound"] = table["tool"].map(measured["speedup_is_lower_bound"]).fillna(False).astype(bool)
    for col, src in (("predicted_speedup", "predicted_target_s"), ("predicted_speedup_low", "predicted_low_s"),
                     ("predicted_speedup_high", "predicted_high_s")):
        table[col] = table["tool"].map(pred[src] / pred["measured_source_s"])
    table["measured_group"] = speedup.group_of(table["measured_speedup"], a.threshold,
                                               table["measured_is_lower_bound"]).to_numpy()
    table["predicted_group"] = speedup.group_of(table["predicted_speedup"], a.threshold).to_numpy()
    known = (table["measured_group"] != "") & (table["predicted_group"] != "")
    table["group_agrees"] = np.where(known, table["measured_group"] == table["predicted_group"], pd.NA)
    papers = {e.id: e.data.get("paper_group") or "" for e in catalogue.load_all() if e.kind == "tool"}
    table["paper_group"] = table["tool"].map(papers).fillna("")
    return table[SPEEDUP_COLUMNS]


def validation_summary(validation: pd.DataFrame, speedups: pd.DataFrame) -> dict[str, Any]:
    """The figures the issue's targets are stated in: median and largest absolute error over
    every (tool, direction) with a measured runtime, how many predictions were consistent with a
    lower bound, and the share of tools whose predicted group is the measured one."""
    errors = pd.to_numeric(validation["error"], errors="coerce").dropna().abs()
    bounds = validation[validation["target_is_lower_bound"].astype(bool).to_numpy()]
    agree = speedups["group_agrees"].dropna() if "group_agrees" in speedups else pd.Series(dtype=object)
    worst = validation.loc[errors.idxmax()] if len(errors) else None
    return {
        "predictions": int(len(errors)), "median_abs_error": float(errors.median()) if len(errors) else math.nan,
        "max_abs_error": float(errors.max()) if len(errors) else math.nan,
        "worst": f"{worst['tool']} ({worst['direction']})" if worst is not None else "",
        "over_max": int((errors > TARGET_MAX_ERROR).sum()),
        "lower_bounds": int(len(bounds)), "lower_bounds_reached": int(bounds["consistent"].sum()),
        "tools_with_groups": int(len(agree)), "group_agreement": float(agree.astype(bool).mean()) if len(agree) else math.nan,
        "meets_targets": bool(len(errors) and errors.median() <= TARGET_MEDIAN_ERROR and errors.max() <= TARGET_MAX_ERROR
                              and len(agree) and agree.astype(bool).mean() >= TARGET_GROUP_AGREEMENT),
    }


def write_table(table: pd.DataFrame, path: Path) -> Path:
    """The prediction table as CSV or Parquet (by suffix), written whole or not at all."""
    return write_frame(table, path, "the prediction table")


def write_json(table: pd.DataFrame, targets: Sequence[devicemodels.Target], path: Path) -> Path:
    """The predictions and the targets they were made for, as JSON (NaN as null)."""
    body = {"model": "biossd.analysis.predict",
            "targets": [{"name": t.name, "kind": t.kind, "source": t.source} for t in targets],
            "predictions": json.loads(table.to_json(orient="records"))}
    atomic_write_text(Path(path), json.dumps(body, indent=1) + "\n")
    return Path(path)


def paper_fig2b(predictions: pd.DataFrame) -> pd.DataFrame:
    """Fig. 2(b) by prediction: per tool and SSD of the paper other than :data:`PAPER_FIG2_SSD`,
    the speedup of that SSD over :data:`PAPER_FIG2_HDD`, both predicted from the same runs
    (mean predicted runtime on the HDD over mean on the SSD), with the interval of the two
    predictions' ends (HDD low over SSD high, HDD high over SSD low)."""
    ok = predictions[predictions["why"] == ""]
    means = ok.groupby(["tool", "target"])[["predicted_runtime_s", "predicted_low_s", "predicted_high_s"]].mean()
    rows = []
    ssds = [t.name for t in devicemodels.paper_targets("SSD") if t.name != PAPER_FIG2_SSD]
    for tool in sorted(ok["tool"].unique()):
        if (tool, PAPER_FIG2_HDD) not in means.index:
            continue
        hdd = means.loc[(tool, PAPER_FIG2_HDD)]
        for ssd in ssds:
            if (tool, ssd) not in means.index:
                continue
            s = means.loc[(tool, ssd)]
            rows.append({"tool": tool, "ssd": ssd, "hdd": PAPER_FIG2_HDD,
                         "predicted_speedup": hdd["predicted_runtime_s"] / s["predicted_runtime_s"],
                         "speedup_low": hdd["predicted_low_s"] / s["predicted_high_s"],
                         "speedup_high": hdd["predicted_high_s"] / s["predicted_low_s"]})
    return pd.DataFrame(rows, columns=["tool", "ssd", "hdd", "predicted_speedup", "speedup_low", "speedup_high"])
