"""Per-run features: the paper's storage features and its CPU/memory features (seed 000, §3.1,
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
from pathlib import Path
from typing import Any, Iterable

import pandas as pd

from biossd import layout, manifest

log = logging.getLogger(__name__)

#: Labels every run carries; they identify a row of the features table.
LABEL_COLUMNS = ("host", "storage", "tool", "mem", "scale", "rep")

#: The eight storage features of Table 2, in the paper's order. Units: Butil fraction 0–1;
#: Riops, Wiops requests/s; Pfault major faults/s; CAR fraction 0–1; Rsize, Wsize KiB/request;
#: WBlen requests.
STORAGE_FEATURES = ("Butil", "Riops", "Wiops", "Pfault", "CAR", "Rsize", "Wsize", "WBlen")

#: Features that need a block-request trace (§5.2: measured with blktrace in the paper).
BLOCK_TRACE_FEATURES = ("Butil", "Riops", "Wiops", "CAR", "Rsize", "Wsize", "WBlen")

RUSAGE_COLUMNS = (
    "runtime_s", "user_s", "sys_s", "cpu_cores_used", "max_rss_kib",
    "major_faults", "minor_faults", "read_bytes", "write_bytes",
)


def pfault_per_s(major_faults: float, runtime_s: float) -> float:
    """**Pfault** — page faults per second (seed 000, Table 2 and §5.2: "the number of page
    swaps per second"). Counted as *major* faults (those that needed a read from storage, i.e.
    the swaps and file-backed misses that cost an HDD a seek) of the whole process tree, divided
    by the run's wall-clock time. Units: major faults/s."""
    if not runtime_s or runtime_s <= 0:
        return math.nan
    return major_faults / runtime_s


def cpu_cores_used(user_s: float, sys_s: float, runtime_s: float) -> float:
    """CPU utilisation (seed 000, §3.6, Fig. 10): CPU time (user + system) over wall time.
    Units: cores (1.0 = one core busy for the whole run)."""
    if not runtime_s or runtime_s <= 0:
        return math.nan
    return (user_s + sys_s) / runtime_s


def run_features(run_dir: Path) -> dict[str, Any]:
    """One row of the features table from one complete run directory."""
    run_dir = Path(run_dir)
    body = manifest.read_manifest(run_dir)
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
            cpu_cores_used=cpu_cores_used(acct["user_s"], acct["sys_s"], acct["wall_s"]),
            max_rss_kib=acct["max_rss_kib"], major_faults=acct["major_faults"],
            minor_faults=acct["minor_faults"], read_bytes=acct["read_bytes"],
            write_bytes=acct["write_bytes"],
            Pfault=pfault_per_s(acct["major_faults"], acct["wall_s"]),
        )
    else:
        why = rusage_info.get("why") or "process accounting did not run"
        row.update({col: math.nan for col in RUSAGE_COLUMNS})
        row["Pfault"] = math.nan
        missing.update({col: why for col in (*RUSAGE_COLUMNS, "Pfault")})

    trace_info = body["collectors"].get("blocktrace", {})
    why_no_trace = (
        "block-trace features are not computed by this biossd version" if trace_info.get("ran")
        else trace_info.get("why") or "no block trace"
    )
    for feature in BLOCK_TRACE_FEATURES:
        row[feature] = math.nan
        missing[feature] = why_no_trace

    row["missing_reason"] = format_missing(missing)
    return row


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
    run but has no manifest is incomplete: it is skipped with a warning."""
    found: list[Path] = []
    for root in roots:
        for dirpath, dirnames, filenames in os.walk(Path(root), followlinks=True):
            here = Path(dirpath)
            if manifest.MANIFEST_NAME in filenames:
                found.append(here)
                dirnames.clear()
            elif "rusage.json" in filenames or "stderr.log" in filenames:
                log.warning("skipping %s: no %s (incomplete run)", here, manifest.MANIFEST_NAME)
    return sorted(set(found))


def features_table(run_dirs: Iterable[Path]) -> pd.DataFrame:
    """The features table: one row per run, labels first, then features, in a stable order."""
    rows = [run_features(d) for d in run_dirs]
    columns = [*LABEL_COLUMNS, "outcome", *RUSAGE_COLUMNS, *STORAGE_FEATURES, "missing_reason", "run_dir"]
    table = _typed(pd.DataFrame(rows, columns=columns))
    return table.sort_values(list(LABEL_COLUMNS), kind="stable").reset_index(drop=True)


def write_table(table: pd.DataFrame, path: Path) -> Path:
    """Write CSV or Parquet (by suffix) atomically."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(f".{path.name}.tmp")
    if path.suffix == ".parquet":
        table.to_parquet(tmp, index=False)
    elif path.suffix == ".csv":
        table.to_csv(tmp, index=False, float_format="%.6g")
    else:
        raise ValueError(f"{path}: the features table is written as .csv or .parquet")
    tmp.replace(path)
    return path


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
    return _typed(table)


def _typed(table: pd.DataFrame) -> pd.DataFrame:
    """Labels as strings, measured values as floats (NaN where missing)."""
    table = table.copy()
    for col in LABEL_COLUMNS:
        table[col] = table[col].astype("string").astype(object)
    for col in (*RUSAGE_COLUMNS, *STORAGE_FEATURES):
        if col in table:
            table[col] = pd.to_numeric(table[col], errors="raise").astype(float)
    return table
