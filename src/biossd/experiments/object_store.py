"""Classmethod's Trinity-on-S3 test (2024): an assembler's input on object storage vs local disk
(``study/experiments/object_store.yaml``).

MEGAHIT (the substitute for Trinity, not in Debian bookworm) assembles synthetic RNA-seq reads
read either from local disk (the class's scratch) or from an S3 bucket mounted with s3fs, served
by S3Proxy on this machine whose objects lie on the same class's device
(:mod:`biossd.host.objectstore`). The server and the mount run outside the run's memory cap, as
a remote store would, and the block trace of the class's device holds the server's reads of the
object.

An inotify watch (:mod:`biossd.measure.filewatch`) of the directory holding the input — the
local one or the mount — splits each run into its **read phase**, from the command's start to
its last read of the input, and **the rest**; the read throughput is the input's bytes over the
span from its first open to its last read.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pandas as pd

from biossd.experiments.tables import by_class, run_rows, scale_keys, since_start_s
from biossd.experiments.task import Task
from biossd.host.objectstore import ObjectStore
from biossd.measure import manifest
from biossd.measure.filewatch import DirectoryWatch

LOCATIONS = ("local", "object_store")
TOOL = "megahit"
INPUT_FILES = ("reads.fq",)
#: The share of the run's memory cap MEGAHIT is told it may use (its -m, in bytes).
MEMORY_FRACTION_OF_CAP = 0.5
COLUMNS = ("location", "outcome", "runtime_s", "read_phase_s", "rest_s", "read_mbs", "input_bytes", "max_rss_kib",
           "Riops", "Rsize", "CAR")
BYTES_PER_MB = 1e6


def points(settings: dict[str, Any]) -> list[dict[str, Any]]:
    unknown = [loc for loc in settings["locations"] if loc not in LOCATIONS]
    if unknown:
        raise ValueError(f"object_store: unknown locations {unknown}; choose from {LOCATIONS}")
    return [{"id": loc, "values": {"location": loc}} for loc in settings["locations"]]


def argv(reads: Path, out_dir: str, tmp_dir: str, memory_bytes: int) -> list[str]:
    """MEGAHIT on single-end reads, one thread, its temporary files on the class's device."""
    return ["megahit", "-r", str(reads), "-o", out_dir, "-t", "1", "-m", str(memory_bytes), "--tmp-dir", tmp_dir]


def run(ctx: Task) -> dict[str, Any]:
    work = ctx.scratch / "work"
    (work / "tmp").mkdir(parents=True)
    memory = int(ctx.cap_bytes * MEMORY_FRACTION_OF_CAP)
    input_bytes = sum((ctx.input_dir / f).stat().st_size for f in INPUT_FILES)
    if ctx.values["location"] == "local":
        return _measure(ctx, ctx.input_dir, work, memory, input_bytes)
    with ObjectStore(ctx.scratch / "objects", ctx.scratch / "mnt") as store:
        for f in INPUT_FILES:
            store.put(ctx.input_dir / f)
        mount = store.mount()
        observed = _measure(ctx, mount, work, memory, input_bytes)
        observed["run"]["endpoint"] = store.endpoint
        return observed


def _measure(ctx: Task, where: Path, work: Path, memory: int, input_bytes: int) -> dict[str, Any]:
    with DirectoryWatch(where) as watch:
        record = ctx.profile(argv(where / INPUT_FILES[0], "asm", "tmp", memory), "run", TOOL, cwd=work)
    span = watch.read_span(list(INPUT_FILES))
    return {"run": {"input_dir": str(where), "input_bytes": input_bytes, "outcome": record["outcome"],
                    "read_first_open_s": span[0] if span else None, "read_last_s": span[1] if span else None}}


def rows(point_dir: Path, record: dict[str, Any]) -> list[dict[str, Any]]:
    out = []
    for row in run_rows(point_dir, record):
        seen = record["observed"][row["run"]]
        body = manifest.read_manifest(point_dir / row["run"])
        first, last = since_start_s(body, seen["read_first_open_s"]), since_start_s(body, seen["read_last_s"])
        row["input_bytes"] = seen["input_bytes"]
        if first is None or last is None:
            row.update(read_phase_s=float("nan"), rest_s=float("nan"), read_mbs=float("nan"))
        else:
            row["read_phase_s"] = max(0.0, last)
            row["rest_s"] = max(0.0, row["runtime_s"] - row["read_phase_s"])
            row["read_mbs"] = seen["input_bytes"] / BYTES_PER_MB / (last - first) if last > first else float("nan")
        out.append(row)
    return out


def summary(table: pd.DataFrame) -> pd.DataFrame:
    """Table S3: per (class, input location), the ok runs' mean runtime, read phase, the rest and
    read throughput, and the object store's runtime over local disk's."""
    ok = table[table["outcome"] == "ok"]
    scale = scale_keys(table)
    keys = [*scale, "storage", "location"]
    out = ok.groupby(keys, sort=False)[["runtime_s", "read_phase_s", "rest_s", "read_mbs", "Riops", "Rsize"]].mean()
    out["runtime_s_sd"] = ok.groupby(keys, sort=False)["runtime_s"].std().fillna(0.0)
    out["runs"] = ok.groupby(keys, sort=False).size()
    out = out.reset_index()
    local = out[out["location"] == "local"].set_index([*scale, "storage"])["runtime_s"]
    out["vs_local"] = out["runtime_s"].to_numpy() / local.reindex(
        pd.MultiIndex.from_frame(out[[*scale, "storage"]]) if scale else out["storage"]).to_numpy()
    return by_class(out.assign(_loc=out["location"].map({loc: i for i, loc in enumerate(LOCATIONS)})),
                    "_loc").drop(columns="_loc")


def headline(table: pd.DataFrame) -> str:
    """When the input's location mattered: the runtime on the S3 mount over local disk per class,
    beside the read phase's share of the run."""
    if table.empty:
        return "No object_store runs in these results."
    s = summary(table)
    parts = []
    for storage, part in s.groupby("storage", sort=False):
        by = part.set_index("location")
        if {"local", "object_store"} <= set(by.index):
            r, loc = by.loc["object_store"], by.loc["local"]
            parts.append(f"on {storage}, input on the S3 mount: {r.runtime_s:.2f} s vs {loc.runtime_s:.2f} s local "
                         f"({r.vs_local:.2f}x); read phase {r.read_phase_s:.2f} s vs {loc.read_phase_s:.2f} s "
                         f"({r.read_mbs:.0f} vs {loc.read_mbs:.0f} MB/s read), "
                         f"{r.read_phase_s / r.runtime_s:.0%} of the run")
    return ("MEGAHIT (for Trinity) " + "; ".join(parts) + ".") if parts else "No pair of locations to compare."
