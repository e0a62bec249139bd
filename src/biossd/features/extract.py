"""Per-run features: the paper's storage features and its CPU/memory features (Lee, Min and Yoon 2015, §3.1,
§5.2, Table 2), computed from a run directory's raw measurements.

Every definition lives here once. A value that could not be measured is NaN and the reason is
given in the ``missing_reason`` column — never 0. Column names carry units (``runtime_s``,
``max_rss_kib``) or are the paper's acronyms with the units documented below.
"""

from __future__ import annotations

import json
import logging
import math
import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Iterable

import pandas as pd
import pyarrow as pa

from biossd.core.errors import BiossdError
from biossd.core.files import write_frame
from biossd.features import blockstats, definitions, quality
from biossd.features.definitions import BLOCK_TRACE_FEATURES, CPU_MEMORY_COLUMNS, KIB, STORAGE_FEATURES
from biossd.features.quality import QUALITY_COLUMNS
from biossd.host import devicerecord
from biossd.host.devices import EQUAL_QUEUE_SETTINGS
from biossd.host.models import devicemodels, diskmodel
from biossd.measure import counters, manifest
from biossd.measure.trace import blkbinary, tracefile, tracereader
from biossd.study import layout

log = logging.getLogger(__name__)

#: Labels every run carries; they identify a row of the features table.
LABEL_COLUMNS = ("host", "storage", "tool", "mem", "scale", "rep")


RUSAGE_COLUMNS = (
    "runtime_s", "user_s", "sys_s", "cpu_cores_used", "max_rss_kib",
    "major_faults", "minor_faults", "major_faults_per_s", "read_bytes", "write_bytes",
)
#: Counts of a run's processes that a run killed by its time limit or the cap's OOM killer cannot
#: be trusted with: a child killed under an MPI launcher, say, is never waited for, so its faults
#: never reach GNU time (NaN, with the reason, rather than a count too small).
KILLED_TREE_COLUMNS = ("major_faults", "minor_faults", "major_faults_per_s")
KILLED_OUTCOMES = ("timeout", "oom")
#: Beside Pfault (§5.2's "page swaps per second"): pages swapped in and out over the run, from
#: the host's /proc/vmstat (pswpin, pswpout) as the run's 1 Hz sampler read it (one measured run
#: at a time holds the host lock, so the host's swapping is the run's); ``flush_s``, the
#: post-exit flush of the run's dirty data, so a speedup can also be read on runtime + flush;
#: the run's input size and its memory settings (labels of the study's PROFILE).
REGIME_COLUMNS = ("swap_ins", "swap_outs", "flush_s", "input_bytes", "resident_peak_kib", "swap_read_requests",
                  "swap_write_requests", "swap_read_top_share", "read_service_s", "write_service_s")
#: Beside them, who paged: the command that issued most of the run's swap-in reads
#: (:func:`biossd.measure.trace.tracereader.swap_issuers`).
TEXT_COLUMNS = ("swap_read_top_comm", "code_read_device", "transient_write_top", "resident_top_process")
#: What makes a call firm or marginal (docs/study.md, "Calls that hold"): the run's cap; its
#: floor F, σ_F, the floor runs counted and its data memory M_t (labels of a study that measured
#: its floors in its session); the parts of its resident peak (the cgroup's anonymous,
#: file-mapped and shared pages); the code it read from elsewhere than the device under study
#: (bytes; the device in ``code_read_device``); the CPU busy outside it (cores, steal among them);
#: whether it was redone because the host was busy (1) or not (0); and what its processes dirtied
#: on the device under study in files they removed before the run ended (bytes; the largest such
#: file, its process and size in ``transient_write_top``). ``resident_top_process``: the program
#: that held the most anonymous memory, with its anonymous, file-backed and shared resident sets.
CALL_COLUMNS = ("cap_bytes", "floor_bytes", "floor_sd_bytes", "floor_runs", "data_memory_bytes", "resident_anon_bytes",
                "resident_file_mapped_bytes", "resident_shmem_bytes", "code_read_bytes", "outside_cores", "steal_cores",
                "redone", "transient_write_bytes")

#: Host facts that make two sides' runtimes incomparable when they differ (Lee, Min and Yoon 2015, §5.1 kept
#: one machine and swapped only the drive).
HOST_FACT_COLUMNS = ("cpu_model", "cpu_count", "mem_total_bytes", "kernel")

#: How and where a run ran, from its manifest, so that the analysis and the outputs read one
#: table and no run directory: the tool's version and container, the mechanism of
#: each measurement (memory cap backend; block-trace source, ``none`` when there was no trace;
#: ``perf`` with a PMU, software events only, or ``none``; ``native`` storage or the emulation's
#: mechanism), the host's facts (``host_pageout_idle_s``: the idle time after which the host pages
#: memory out itself, DAMON's, none when it does not), and the device record that Butil divides by
#: (its device, its sequential read/write MB/s, and where the record came from).
#: What a study holds equal on both classes' devices (:func:`biossd.host.devices.queue_policy`),
#: as a run found it on its class's device: its queue settings but the rotational flag, and
#: whether its writes went through to the host.
DEVICE_POLICY_COLUMNS = ("device_queue", "device_write_through")
#: How many processes the run's command left running when it ended (found by the run's tag and
#: killed by the profiler; null for a run recorded before runs were tagged): a tool whose helper
#: outlives it would otherwise run beside the next run.
LEFT_RUNNING_COLUMN = "n_left_running"
RUN_FACT_COLUMNS = (
    "tool_version", "container_engine", "container_image", "cap_mechanism", "trace_mechanism", "perf_mechanism",
    "storage_mechanism", "storage_profile", *HOST_FACT_COLUMNS, "host_pageout_idle_s",
    "device_name", "device_seq_read_mbs", "device_seq_write_mbs", "device_source", "device_rotational",
    *DEVICE_POLICY_COLUMNS, LEFT_RUNNING_COLUMN,
)
#: The numeric ones: counts kept exact (nullable integers; the CSV's float format would round
#: a byte count), rates read back as floats.
RUN_FACT_INTEGERS = ("cpu_count", "mem_total_bytes", LEFT_RUNNING_COLUMN)
RUN_FACT_NUMBERS = ("device_seq_read_mbs", "device_seq_write_mbs", "host_pageout_idle_s")


def side_of(labels: dict[str, Any]) -> str:
    """A run's side, ``<host>-<storage>``: the directory its class's runs and device record sit
    in (:mod:`biossd.study.layout`)."""
    return f"{labels.get('host')}-{labels.get('storage')}"


def run_features(run_dir: Path, device_records: dict[str, Path] | None = None) -> dict[str, Any]:
    """One row of the features table from one complete run directory. ``device_records`` maps a
    side (:func:`side_of`) to its ``biossd device characterize`` record, for Butil when the run
    has no record of its own."""
    run_dir = Path(run_dir)
    body = manifest.read_manifest(run_dir)
    damaged = manifest.verify(run_dir, body)
    if damaged:
        raise FeatureError("; ".join(damaged) + " — the run is not counted; re-run it")
    labels = body.get("labels", {})
    row: dict[str, Any] = {col: labels.get(col) for col in LABEL_COLUMNS}
    row["outcome"] = body["outcome"]
    try:
        row["run_dir"] = str(layout.run_relpath(labels))
    except ValueError:
        row["run_dir"] = str(run_dir)
    missing: dict[str, str] = {}

    rusage_info = body["collectors"].get("rusage", {})
    if rusage_info.get("ran"):
        acct = json.loads((run_dir / "rusage.json").read_text())
        row.update(
            runtime_s=acct["wall_s"], user_s=acct["user_s"], sys_s=acct["sys_s"],
            cpu_cores_used=definitions.cpu_cores_used(acct["user_s"], acct["sys_s"], acct["wall_s"]),
            max_rss_kib=acct["max_rss_kib"], major_faults=acct["major_faults"], minor_faults=acct["minor_faults"],
            major_faults_per_s=definitions.major_faults_per_s(acct["major_faults"], acct["wall_s"]),
            read_bytes=acct["read_bytes"], write_bytes=acct["write_bytes"],
        )
        if body["outcome"] in KILLED_OUTCOMES:
            row.update({col: math.nan for col in KILLED_TREE_COLUMNS})
            missing.update({col: f"the run was killed ({body['outcome']}): its processes' counts are incomplete"
                            for col in KILLED_TREE_COLUMNS})
    else:
        why = rusage_info.get("why") or "process accounting did not run"
        row.update({col: math.nan for col in RUSAGE_COLUMNS})
        missing.update({col: why for col in RUSAGE_COLUMNS})

    row.update(swap_counts(run_dir))
    row["Pfault"] = definitions.pfault_per_s(row["swap_ins"], row["swap_outs"], row.get("runtime_s", math.nan))
    if math.isnan(row["Pfault"]):
        missing["Pfault"] = "no sampler record of the host's swapping, or no runtime"
    resident = ((body.get("memory_cap") or {}).get("resident") or {}).get("peak_bytes")
    row["resident_peak_kib"] = resident / KIB if resident is not None else math.nan
    row["flush_s"] = float(body.get("flush_s") or 0.0)
    row["input_bytes"] = float(labels["input_bytes"]) if str(labels.get("input_bytes", "")).isdigit() else math.nan
    row.update(call_columns(body))
    row["settings"] = ",".join(f"{k.removeprefix('setting.')}={v}" for k, v in sorted(labels.items())
                               if k.startswith("setting.")) or None
    device = device_record(run_dir, body, (device_records or {}).get(side_of(labels)))
    row.update(_trace_columns(run_dir, body, device, missing))
    row.update(_perf_columns(run_dir, body, row.get("runtime_s", math.nan), missing))
    row.update(quality.read_columns(run_dir))
    row.update(run_facts(body, device))
    row["missing_reason"] = format_missing(missing)
    return row


def _number(value: Any) -> float:
    try:
        return float(value)
    except (TypeError, ValueError):
        return math.nan


def call_columns(body: dict[str, Any]) -> dict[str, Any]:
    """The :data:`CALL_COLUMNS` (and ``code_read_device``) of one run's manifest; NaN where the run
    did not record them (a run of an earlier version, a study with caps as given)."""
    labels = body.get("labels") or {}
    cap = body.get("memory_cap") or {}
    parts = (cap.get("resident") or {}).get("peak_parts") or {}
    cache = ((body.get("collectors") or {}).get("blocktrace") or {}).get("page_cache") or {}
    by_device = cache.get("bytes_by_device") or {}
    load = body.get("host_load") or {}
    return {
        "cap_bytes": _number(cap.get("limit_bytes")),
        **{key: _number(labels.get(key)) for key in ("floor_bytes", "floor_sd_bytes", "floor_runs", "data_memory_bytes")},
        "resident_anon_bytes": _number(parts.get("anon_bytes")),
        "resident_file_mapped_bytes": _number(parts.get("file_mapped_bytes")),
        "resident_shmem_bytes": _number(parts.get("shmem_bytes")),
        "code_read_bytes": _number(cache.get("bytes")) if cache.get("traced") else math.nan,
        "code_read_device": max(by_device, key=by_device.get) if by_device else None,
        "outside_cores": _number(load.get("outside_cores")) if load.get("measured") else math.nan,
        "steal_cores": _number(load.get("steal_cores")) if load.get("measured") else math.nan,
        "redone": 1.0 if body.get("redone") else 0.0,
        **_transient(((body.get("collectors") or {}).get("blocktrace") or {}).get("dirtied") or {}),
        "resident_top_process": _top_process((cap.get("resident") or {}).get("by_process") or {}),
    }


def _top_process(by_process: dict[str, dict[str, int]]) -> str | None:
    """The program of a run that held the most anonymous memory, with its parts in MiB."""
    if not by_process:
        return None
    name = max(by_process, key=lambda n: by_process[n].get("anon_bytes", 0))
    parts = by_process[name]
    return (f"{name}: anon {parts.get('anon_bytes', 0) / (1 << 20):.1f}, file {parts.get('file_bytes', 0) / (1 << 20):.1f}, "
            f"shmem {parts.get('shmem_bytes', 0) / (1 << 20):.1f} MiB")


def _transient(dirtied: dict[str, Any]) -> dict[str, Any]:
    """What a run dirtied in files it removed before it ended: bytes, and the largest such file."""
    if not dirtied.get("traced"):
        return {"transient_write_bytes": math.nan, "transient_write_top": None}
    gone = [f for f in dirtied.get("files") or [] if not f.get("left")]
    top = max(gone, key=lambda f: f["bytes"], default=None)
    by = max(top["by"], key=top["by"].get) if top and top.get("by") else "?"
    return {"transient_write_bytes": float(dirtied.get("transient_bytes") or 0.0),
            "transient_write_top": f"{by}: {top['file']} ({top['bytes'] / (1 << 20):.1f} MiB)" if top else None}


def swap_counts(run_dir: Path) -> dict[str, float]:
    """Pages swapped in and out during the run (``pswpin``/``pswpout`` of /proc/vmstat, last
    sample minus first of the run's ``sampler.csv``); NaN without a sampler record."""
    path = Path(run_dir) / "sampler.csv"
    out = {"swap_ins": math.nan, "swap_outs": math.nan}
    if not path.is_file():
        return out
    import csv

    with open(path, newline="") as f:
        rows = [r for r in csv.DictReader(f)]
    for key, col in (("swap_ins", "vmstat_pswpin"), ("swap_outs", "vmstat_pswpout")):
        values = [int(r[col]) for r in rows if r.get(col, "").isdigit()]
        if len(values) >= 1:
            out[key] = float(values[-1] - values[0])
    return out


def _cap_mechanism(cap: dict[str, Any]) -> str | None:
    """How the cap was enforced: the backend, and who enforced an external one when known
    (``external (docker)``)."""
    backend = cap.get("backend")
    return f"{backend} ({cap['enforced_by']})" if backend and cap.get("enforced_by") else backend


def _engine(body: dict[str, Any]) -> str:
    """The engine the tool ran in: ``native``, ``charliecloud``, ... with Docker's version when the
    run recorded it (``docker 20.10.24``)."""
    engine = (body.get("labels") or {}).get("container_engine") or "native"
    version = ((body.get("memory_cap") or {}).get("container") or {}).get("engine_version")
    return f"{engine} {version}" if version else engine


def run_facts(body: dict[str, Any], device: DeviceRecord) -> dict[str, Any]:
    """The :data:`RUN_FACT_COLUMNS` of one run, from its manifest and its device record."""
    collectors = body.get("collectors") or {}
    trace, perf = collectors.get("blocktrace") or {}, collectors.get("perf") or {}
    storage = (body.get("emulated_storage") or {}).get("cwd") or {}
    host = body.get("host") or {}
    first = (body.get("device_facts") or [{}])[0]
    return {
        "tool_version": body.get("tool_version"),
        "container_engine": _engine(body),
        "container_image": body.get("container_image"),
        "cap_mechanism": _cap_mechanism(body.get("memory_cap") or {}),
        "trace_mechanism": (trace.get("source") or "a source not recorded") if trace.get("ran") else "none",
        "perf_mechanism": ("pmu" if perf.get("pmu") else "software") if perf.get("ran") else "none",
        "storage_mechanism": storage.get("mechanism") or "native",
        "storage_profile": storage.get("profile"),
        **{fact: host.get(fact) for fact in HOST_FACT_COLUMNS},
        "host_pageout_idle_s": min((s["idle_s"] for s in host.get("proactive_reclaim") or [] if s.get("idle_s")), default=None),
        "device_name": device.name,
        "device_seq_read_mbs": device.seq_read_mbs, "device_seq_write_mbs": device.seq_write_mbs,
        "device_source": device.source, "device_rotational": first.get("rotational"),
        "device_queue": ",".join(f"{k}={first.get(k)}" for k in EQUAL_QUEUE_SETTINGS) if first else None,
        "device_write_through": storage.get("write_through"),
        LEFT_RUNNING_COLUMN: _left_running(body),
    }


def _left_running(body: dict[str, Any]) -> int | None:
    """:data:`LEFT_RUNNING_COLUMN` of one run's manifest."""
    left = body.get("left_running")
    return len(left.get("killed") or []) if isinstance(left, dict) else None


@dataclass(frozen=True)
class DeviceRecord:
    """The device a run's I/O went to, as far as Butil needs it: sequential read and write rates
    (MB/s, ``math.nan`` when unknown), where they came from, and why there are none."""

    name: str | None = None
    seq_read_mbs: float = math.nan
    seq_write_mbs: float = math.nan
    source: str = ""
    why: str = ""

    @property
    def bandwidth_bps(self) -> tuple[float, float] | None:
        if math.isnan(self.seq_read_mbs) or math.isnan(self.seq_write_mbs):
            return None
        return self.seq_read_mbs * diskmodel.MB, self.seq_write_mbs * diskmodel.MB


def device_record(run_dir: Path, body: dict[str, Any], side_record: Path | None = None) -> DeviceRecord:
    """The run's device, for Butil, from the first of: the run's own ``device.json`` (``biossd
    profile --device-record``), ``side_record`` (its side's ``biossd device characterize -o``),
    and, for emulated storage, the model it is calibrated to (a disk's spec, a cloud volume's
    sequential rate). Without any, the rates are NaN and ``why`` says what to do."""
    for candidate, source in ((Path(run_dir) / layout.DEVICE_RECORD, "run record"),
                              (side_record, "side record")):
        if candidate is not None and Path(candidate).is_file():
            row = devicerecord.read(Path(candidate))["spec_row"]
            return DeviceRecord(row.get("device"), float(row["seq_read_mbs"]), float(row["seq_write_mbs"]), source)
    emulated = (body.get("emulated_storage") or {}).get("cwd")
    if emulated and emulated.get("emulated", emulated.get("profile") != "native"):  # a model, not the native disk
        read, write, source = devicemodels.sequential_rates(str(emulated["profile"]))
        return DeviceRecord(emulated.get("profile_name") or emulated["profile"], read, write, source)
    side = side_of(body.get("labels") or {})
    return DeviceRecord(why=f"no device characterization for {side} (write one with `biossd device characterize "
                            f"SCRATCH -o RESULTS/{side}/{layout.DEVICE_RECORD}` and pass it to `biossd features`)")


def side_device_records(roots: Iterable[Path]) -> dict[str, Path]:
    """The device record of every side directory directly under each result folder in ``roots``
    (``ROOT/<host>-<storage>/device.json``), by side; for ``biossd features`` over result folders."""
    found: dict[str, Path] = {}
    for root in roots:
        for record in sorted(Path(root).glob(f"*/{layout.DEVICE_RECORD}")):
            if (record.parent / layout.RUNS_DIR).is_dir():  # a side, not a run's own record
                found.setdefault(record.parent.name, record)
    return found


def _trace_columns(run_dir: Path, body: dict[str, Any], device: DeviceRecord,
                   missing: dict[str, str]) -> dict[str, float]:
    out: dict[str, Any] = {feature: math.nan for feature in (*BLOCK_TRACE_FEATURES, "Butil_bytes", *TRACE_REGIME_COLUMNS)}
    out["swap_read_top_comm"] = None
    info = body["collectors"].get("blocktrace", {})
    if not info.get("ran"):
        missing.update({f: info.get("why") or "no block trace" for f in (*BLOCK_TRACE_FEATURES, "Butil_bytes")})
        return out
    if body.get("command_started_s") is None:
        missing.update({f: "the manifest does not say when the command started" for f in BLOCK_TRACE_FEATURES})
        return out
    trace_path = tracefile.trace_path(run_dir)
    try:
        requests = tracereader.run_requests(run_dir, body)
    except (OSError, pa.ArrowException, BiossdError) as err:
        raise FeatureError(f"{trace_path}: cannot read the block trace ({err}); re-run the "
                           "profile or pass --keep-going to skip this run") from None
    t0 = body["command_started_s"]
    bandwidth = device.bandwidth_bps
    # The window ends after the scratch was flushed (accounting.flush_filesystem): the run's dirty
    # data is the run's I/O, though its time is not in the runtime the rates divide by.
    t1 = t0 + manifest.window_s(body)
    tally = blockstats.tally_requests(requests, t0, t1)
    out.update(definitions.block_features(tally, 1.0, bandwidth, runtime_s=body["wall_s"]))
    out["read_service_s"], out["write_service_s"] = blockstats.service_split(requests, t0, t1)
    paged = tracereader.swap_issuers(run_dir, body)
    out["swap_read_requests"], out["swap_write_requests"] = float(paged["reads"]), float(paged["writes"])
    if paged["read_comms"]:
        comm, count = next(iter(paged["read_comms"].items()))
        out["swap_read_top_comm"], out["swap_read_top_share"] = comm, count / paged["reads"]
    if bandwidth is None:
        missing["Butil_bytes"] = device.why
    for feature in (*BLOCK_TRACE_FEATURES, "Butil_bytes"):
        if math.isnan(out[feature]) and feature not in missing:
            missing[feature] = "no such requests in the run" if feature in ("Rsize", "Wsize", "CAR") else "zero runtime"
    return out


#: The regime columns read from the block trace.
TRACE_REGIME_COLUMNS = ("swap_read_requests", "swap_write_requests", "swap_read_top_share", "read_service_s",
                        "write_service_s")


def _perf_columns(run_dir: Path, body: dict[str, Any], runtime_s: float, missing: dict[str, str]) -> dict[str, float]:
    info = body["collectors"].get("perf", {})
    if not info.get("ran"):
        missing.update({c: info.get("why") or "perf did not run" for c in CPU_MEMORY_COLUMNS})
        return {c: math.nan for c in CPU_MEMORY_COLUMNS}
    counts = counters.parse_perf_csv((run_dir / counters.PERF_FILE).read_text())
    values, why = definitions.cpu_memory_features(counts, runtime_s)
    missing.update(why)
    return values


def format_missing(missing: dict[str, str]) -> str:
    """``{"Butil": why, "CAR": why}`` → ``"Butil, CAR: why"`` (features grouped by reason)."""
    by_reason: dict[str, list[str]] = {}
    for feature, why in missing.items():
        by_reason.setdefault(why, []).append(feature)
    return "; ".join(f"{', '.join(feats)}: {why}" for why, feats in by_reason.items())


def parse_missing(text: object) -> dict[str, str]:
    """Inverse of :func:`format_missing`: the reason recorded for each missing feature."""
    out: dict[str, str] = {}
    if not isinstance(text, str):
        return out
    for part in text.split("; "):
        names, _, why = part.partition(": ")
        for name in names.split(", "):
            out[name] = why
    return out


def find_run_dirs(roots: Iterable[Path]) -> list[Path]:
    """Complete run directories at or below each root (a directory holding ``run.json``),
    following symbolic links (Nextflow stages inputs as links). A directory that looks like a
    run but has no manifest is incomplete: it is skipped with a warning. Probe runs (under
    ``<side>/probes/``: cachegrind, not timed) and chained pipelines' steps (``<side>/chains/``,
Fig. 3) and the related experiments' runs (``<side>/experiments/``, tables of their own) are not
    runs of the features table."""
    found: list[Path] = []
    for root in roots:
        for dirpath, dirnames, filenames in os.walk(Path(root), followlinks=True):
            dirnames[:] = [d for d in dirnames if d not in (layout.PROBES_DIR, layout.CHAINS_DIR, layout.EXPERIMENTS_DIR)]
            here = Path(dirpath)
            if manifest.MANIFEST_NAME in filenames:
                found.append(here)
                dirnames.clear()
            elif "rusage.json" in filenames or "stderr.log" in filenames:
                log.warning("skipping %s: no %s (incomplete run)", here, manifest.MANIFEST_NAME)
    return sorted(set(found))


class FeatureError(BiossdError, ValueError):
    """A run whose raw traces cannot be read; the message names the file (and byte offset)."""


def features_table(run_dirs: Iterable[Path], keep_going: bool = False,
                   failures: list[tuple[Path, str]] | None = None,
                   device_records: dict[str, Path] | None = None) -> pd.DataFrame:
    """The run table: one row per run, labels first, then the outcome, the features and the
    run's facts (:data:`RUN_FACT_COLUMNS`), in a stable order. ``device_records``: each side's
    device record (:func:`device_record`).

    A run whose traces cannot be read raises :class:`FeatureError`; with ``keep_going`` it is
    left out and ``(run_dir, reason)`` is appended to ``failures``."""
    rows = []
    for run_dir in run_dirs:
        try:
            rows.append(run_features(run_dir, device_records))
        except (FeatureError, blkbinary.TraceFormatError, manifest.ManifestError, quality.QualityError) as err:
            if not keep_going:
                raise FeatureError(f"{err}; pass --keep-going to skip this run") from err
            if failures is not None:
                failures.append((Path(run_dir), str(err)))
        except (OSError, ValueError, KeyError, TypeError, pa.ArrowException) as err:
            # A per-run file that parses but is not what its writer writes: named by the run.
            if not keep_going:
                raise FeatureError(f"{run_dir}: a run file is damaged ({type(err).__name__}: {err}); "
                                   "pass --keep-going to skip this run") from err
            if failures is not None:
                failures.append((Path(run_dir), f"a run file is damaged ({type(err).__name__}: {err})"))
    table = _typed(pd.DataFrame(rows, columns=TABLE_COLUMNS))
    return table.sort_values(list(LABEL_COLUMNS), kind="stable").reset_index(drop=True)


#: The run table's columns, in order.
TABLE_COLUMNS = (*LABEL_COLUMNS, "outcome", *RUSAGE_COLUMNS, *STORAGE_FEATURES, "Butil_bytes", *REGIME_COLUMNS,
                 *CALL_COLUMNS, *TEXT_COLUMNS, "settings", *CPU_MEMORY_COLUMNS, *QUALITY_COLUMNS, "missing_reason", "run_dir",
                 *RUN_FACT_COLUMNS)


def write_table(table: pd.DataFrame, path: Path) -> Path:
    """Write CSV or Parquet (by suffix) atomically."""
    return write_frame(table, path, "the features table")


def read_table(path: Path) -> pd.DataFrame:
    """Read a features table and check it has the columns this version writes."""
    path = Path(path)
    if path.suffix == ".parquet":
        table = pd.read_parquet(path)
    else:
        table = pd.read_csv(path, dtype={c: str for c in LABEL_COLUMNS})
    absent = [c for c in (*LABEL_COLUMNS, "outcome", "runtime_s", *STORAGE_FEATURES) if c not in table]
    if absent:
        raise ValueError(f"{path}: not a biossd features table, missing columns {absent}")
    for column in (*RUN_FACT_COLUMNS, "Butil_bytes", *REGIME_COLUMNS, *CALL_COLUMNS, *TEXT_COLUMNS, "settings",
                   "major_faults_per_s"):  # written by an older version
        if column not in table:
            table[column] = math.nan
    return _typed(table)


def _typed(table: pd.DataFrame) -> pd.DataFrame:
    """Labels as strings, measured values as floats (NaN where missing)."""
    table = table.copy()
    for col in LABEL_COLUMNS:
        table[col] = table[col].astype("string").astype(object)
    for col in (*RUSAGE_COLUMNS, *STORAGE_FEATURES, "Butil_bytes", *REGIME_COLUMNS, *CALL_COLUMNS, *CPU_MEMORY_COLUMNS,
                *QUALITY_COLUMNS, *RUN_FACT_NUMBERS):
        if col in table:
            table[col] = pd.to_numeric(table[col], errors="raise").astype(float)
    for col in RUN_FACT_INTEGERS:
        if col in table:
            table[col] = pd.to_numeric(table[col], errors="raise").round().astype("Int64")
    return table
