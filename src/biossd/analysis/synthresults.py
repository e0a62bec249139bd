"""A synthetic result set with known structure, for testing and benchmarking the analysis
and for trying the notebooks without a study run: ``biossd data synth-results OUT``.

It writes what a study run writes — per side ``device.json`` and run directories with
``run.json`` (and ``blocktrace.tsv.gz`` for the baseline repeat 1), ``features.csv``,
``pipeline_info/`` — for the paper's 23 programs, with planted truth:

- each tool belongs to a pattern P1..P5 (G+: P1–P3, G0: P4–P5) and its storage features are its
  pattern's centre (:data:`PATTERN_CENTRES`, in normalized units) plus small noise, so the
  clustering must find exactly those patterns and groups;
- its baseline speedup is the paper's Table 1 value; speedup falls with the memory cap for G+
  tools and jumps past :data:`BREAKEVEN_SCALE` for the P5 tools (Figs. 8, 9);
- :data:`OOM_RUN` ends ``oom`` on the slow side at the largest scale, and :data:`NOT_RUN` is
  not run at all.

The truth is written to ``truth.json`` beside the result folders. Every number is synthetic:
the manifests say so (``synthetic: true``) and so does ``pipeline_info/provenance.json``.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any, Sequence

import numpy as np
import pandas as pd

from biossd.core.units import parse_size
from biossd.features import extract as features
from biossd.features.quality import QUALITY_COLUMNS
from biossd.host import devicerecord
from biossd.measure import manifest
from biossd.measure.trace import tracefile
from biossd.study import catalogue, layout

#: Normalized feature centres (Butil, Riops, Wiops, Pfault, CAR, Rsize, Wsize, WBlen) after the
#: paper's description (§3.2–3.3): P1 many small reads and large writes, CAR ~0.7; P2 random
#: (low CAR) large reads; P3 intermediate; P4 sequential reads, little I/O; P5 little I/O.
PATTERN_CENTRES = {
    "P1": (0.80, 0.90, 0.90, 0.90, 0.70, 0.05, 0.85, 0.90),
    "P2": (0.70, 0.60, 0.50, 0.80, 0.10, 0.70, 0.40, 0.60),
    "P3": (0.60, 0.50, 0.60, 0.70, 0.50, 0.40, 0.60, 0.70),
    "P4": (0.20, 0.20, 0.10, 0.05, 0.80, 0.90, 0.30, 0.10),
    "P5": (0.05, 0.05, 0.05, 0.05, 0.40, 0.40, 0.20, 0.05),
}
#: Raw value of a feature = FEATURE_FLOOR * (1 + FEATURE_SPAN * normalized): a range under the
#: log rule's 100x, so normalization maps the centres back linearly.
FEATURE_FLOOR = {"Butil": 0.001, "Riops": 2.0, "Wiops": 1.0, "Pfault": 0.5, "CAR": 0.01,
                 "Rsize": 4.0, "Wsize": 4.0, "WBlen": 0.01}
FEATURE_SPAN = 60.0
FEATURE_NOISE = 0.02
RUNTIME_NOISE = 0.02
BREAKEVEN_SCALE = 5   # §3.4: AmpliconNoise broke even after replicating the input five times
#: This tool ends ``oom`` on the slow side at the largest scale (every cap, every repeat).
OOM_RUN = {"tool": "mc_upgma", "side": "slow"}
NOT_RUN = "erminej"
#: Fig. 1(b): the aligners' planted quality (sensitivity, accuracy, precision, F-measure); Maq
#: the most accurate, as the paper found.
PLANTED_QUALITY = {"maq": (0.97, 0.95, 0.98, 0.975), "bwa": (0.95, 0.93, 0.97, 0.96),
                   "bowtie2": (0.93, 0.91, 0.96, 0.945)}
PAPER_CAPS = ("1G", "4G", "16G", "32G")
PAPER_SCALES = (1, 2, 4, 8, 16)
TRACE_REQUESTS = 2000
SECTORS = 1 << 28
FAST_DEVICE = {"device": "sda", "seq_read_mbs": 550.0, "seq_write_mbs": 475.0,
               "rand_read_iops": 9000.0, "rand_write_iops": 20000.0}
SLOW_DEVICE = {"device": "sdb", "seq_read_mbs": 156.0, "seq_write_mbs": 156.0,
               "rand_read_iops": 79.0, "rand_write_iops": 73.2}


def planted_patterns() -> dict[str, str]:
    """The paper's 23 programs (catalogue ids) → pattern: G+ tools to P1–P3, G0 to P4–P5, in
    Table 1's order, round-robin."""
    tools = [e for e in catalogue.load_all() if e.kind == "tool" and e.data.get("paper_speedup") is not None]
    tools.sort(key=lambda e: (-float(e.data["paper_speedup"]), e.id))
    out = {}
    g_plus = [e.id for e in tools if e.data["paper_group"] == "G+"]
    g_zero = [e.id for e in tools if e.data["paper_group"] != "G+"]
    for i, tool in enumerate(g_plus):
        out[tool] = ("P1", "P2", "P3")[i % 3]
    for i, tool in enumerate(g_zero):
        out[tool] = ("P4", "P5")[i % 2]
    return out


def planted_speedup(tool: str, pattern: str, mem_gib: float, scale: int, base_gib: float) -> float:
    """The speedup planted for one configuration."""
    base = float(catalogue.get(tool).data["paper_speedup"])
    if pattern in ("P1", "P2", "P3"):
        return 1.0 + (base - 1.0) * (base_gib / mem_gib) ** 0.5
    if pattern == "P5" and scale >= BREAKEVEN_SCALE:
        return max(base, 1.0) * scale
    return base


def write(out: Path, caps: Sequence[str] = PAPER_CAPS, scales: Sequence[int] = PAPER_SCALES,
          repeats: int = 3, seed: int = 0, twins: bool = True, kernel_slow: str | None = None) -> dict[str, Any]:
    """Write a synthetic result set under ``out``: ``out/ssd`` and ``out/hdd`` (``twins``, one
    host each, the paper's matched pair) or ``out/results`` (both classes on one host). Returns
    the truth (also in ``out/truth.json``). ``kernel_slow`` gives the slow host another kernel,
    to check the notebooks say so."""
    out = Path(out)
    rng = np.random.default_rng(seed)
    patterns = planted_patterns()
    sides = {"fast": ("host-a", "ssd"), "slow": ("host-b" if twins else "host-a", "hdd")}
    roots = {k: out / (st if twins else "results") for k, (_, st) in sides.items()}
    rows = {str(r): [] for r in set(roots.values())}
    base_gib = parse_size(caps[0]) / (1 << 30)
    floor = np.array([FEATURE_FLOOR[f] for f in features.STORAGE_FEATURES])
    runtime0 = {t: 20.0 + 10.0 * i for i, t in enumerate(sorted(patterns))}
    for tool in sorted(patterns):
        if tool == NOT_RUN:
            continue
        centre = np.array(PATTERN_CENTRES[patterns[tool]])
        tool_centre = np.clip(centre + rng.normal(0, FEATURE_NOISE, centre.size), 0, 1)
        for cap in caps:
            mem_gib = parse_size(cap) / (1 << 30)
            for scale in scales:
                s = planted_speedup(tool, patterns[tool], mem_gib, scale, base_gib)
                for rep in range(1, repeats + 1):
                    for which, (host, storage) in sides.items():
                        fast_s = runtime0[tool] * scale * (1 + rng.normal(0, RUNTIME_NOISE))
                        runtime_s = fast_s * (s if which == "slow" else 1.0)
                        oom = tool == OOM_RUN["tool"] and scale == max(scales) and which == OOM_RUN["side"]
                        vec = np.clip(tool_centre + rng.normal(0, FEATURE_NOISE / 4, centre.size), 0, 1)
                        raw = floor * (1 + FEATURE_SPAN * vec)
                        labels = {"host": host, "storage": storage, "tool": tool, "mem": cap, "scale": scale, "rep": rep}
                        row = _row(labels, "oom" if oom else "ok", runtime_s, raw, patterns[tool], rng)
                        row.update(_facts(tool, which, kernel_slow))
                        rows[str(roots[which])].append(row)
                        run = roots[which] / layout.run_relpath(labels)
                        traced = cap == caps[0] and scale == scales[0] and rep == 1 and not oom
                        _write_run(run, labels, row, which, kernel_slow, trace=traced, pattern=patterns[tool], rng=rng)
    for which, (host, storage) in sides.items():
        spec = FAST_DEVICE if which == "fast" else SLOW_DEVICE
        side_dir = roots[which] / f"{host}-{storage}"
        side_dir.mkdir(parents=True, exist_ok=True)
        devicerecord.write(side_dir / layout.DEVICE_RECORD, {"storage_class": storage, "synthetic": True, "spec_row": spec})
        info = roots[which] / "pipeline_info"
        info.mkdir(parents=True, exist_ok=True)
        manifest.atomic_write_text(info / f"host-{host}.json", json.dumps(_host(which, kernel_slow), indent=2) + "\n")
        manifest.atomic_write_text(info / "provenance.json", json.dumps({
            "synthetic": True, "command_line": "biossd data synth-results", "profile": "synthetic",
            "params": {"mem_caps": ",".join(caps), "scales": ",".join(map(str, scales)), "repeats": str(repeats),
                       "input_size": "64M", "seed": str(seed), "storage_classes": storage,
                       "emulate": None}}, indent=2) + "\n")
    for root, rs in rows.items():
        table = pd.DataFrame(rs, columns=list(features.TABLE_COLUMNS))
        table = table.sort_values(list(features.LABEL_COLUMNS), kind="stable").reset_index(drop=True)
        features.write_table(table, Path(root) / layout.FEATURES_FILE)
    truth = {"patterns": patterns, "groups": {t: "G+" if p in ("P1", "P2", "P3") else "G0" for t, p in patterns.items()},
             "not_run": NOT_RUN, "oom": {**OOM_RUN, "scale": max(scales)}, "breakeven_scale": BREAKEVEN_SCALE,
             "roots": sorted(str(r) for r in set(roots.values())),
             "baseline_speedup": {t: planted_speedup(t, p, base_gib, scales[0], base_gib) for t, p in patterns.items()}}
    manifest.atomic_write_text(out / "truth.json", json.dumps(truth, indent=2, sort_keys=True) + "\n")
    return truth


def _row(labels: dict[str, Any], outcome: str, runtime_s: float, raw: np.ndarray, pattern: str,
         rng: np.random.Generator) -> dict[str, Any]:
    g_plus = pattern in ("P1", "P2", "P3")
    row: dict[str, Any] = dict(labels)
    cores = 0.3 if g_plus else 0.95
    row.update(outcome=outcome, runtime_s=runtime_s, user_s=runtime_s * cores * 0.9, sys_s=runtime_s * cores * 0.1,
               cpu_cores_used=cores, max_rss_kib=900_000, major_faults=raw[3] * runtime_s,
               major_faults_per_s=raw[3], swap_ins=raw[3] * runtime_s / 2, swap_outs=raw[3] * runtime_s / 2,
               minor_faults=10_000, read_bytes=int(raw[1] * raw[5] * 1024 * runtime_s),
               write_bytes=int(raw[2] * raw[6] * 1024 * runtime_s))
    row.update(dict(zip(features.STORAGE_FEATURES, raw)))
    noise = rng.normal(0, 0.01, 4)
    row.update(ipc=(0.6 if g_plus else 1.6) + noise[0], cache_miss_ratio=(0.30 if g_plus else 0.08) + noise[1],
               llc_miss_ratio=(0.45 if g_plus else 0.15) + noise[2], dtlb_miss_ratio=(0.02 if g_plus else 0.004) + noise[3] / 10,
               page_faults_per_s=raw[3] * 10)
    row.update(dict(zip(QUALITY_COLUMNS, PLANTED_QUALITY.get(str(labels["tool"]), (np.nan,) * len(QUALITY_COLUMNS)))))
    if outcome != "ok":
        for col in (*features.RUSAGE_COLUMNS, *features.STORAGE_FEATURES, *features.CPU_MEMORY_COLUMNS,
                    *QUALITY_COLUMNS):
            if col != "runtime_s":
                row[col] = np.nan
    row["missing_reason"] = ""
    row["run_dir"] = str(layout.run_relpath(labels))
    return row


def _facts(tool: str, which: str, kernel_slow: str | None) -> dict[str, Any]:
    """The run table's facts of a planted run (:data:`biossd.features.extract.RUN_FACT_COLUMNS`)."""
    host = _host(which, kernel_slow)
    spec = FAST_DEVICE if which == "fast" else SLOW_DEVICE
    return {"tool_version": str(catalogue.get(tool).data["version"]), "container_engine": "native",
            "container_image": None, "cap_mechanism": "synthetic", "trace_mechanism": "synthetic",
            "perf_mechanism": "none", "storage_mechanism": "synthetic", "storage_profile": None,
            **{fact: host[fact] for fact in features.HOST_FACT_COLUMNS}, "device_name": spec["device"],
            "device_seq_read_mbs": spec["seq_read_mbs"], "device_seq_write_mbs": spec["seq_write_mbs"],
            "device_source": "side record"}


def _host(which: str, kernel_slow: str | None) -> dict[str, Any]:
    return {"hostname": "host-a" if which == "fast" else "host-b", "kernel": (kernel_slow if which == "slow" and kernel_slow
            else "6.1.0-synthetic"), "os": "Debian GNU/Linux 12 (bookworm)", "cpu_model": "Synthetic CPU @ 3.3GHz",
            "cpu_count": 4, "mem_total_bytes": 34359738368, "synthetic": True}


def _write_run(run: Path, labels: dict[str, Any], row: dict[str, Any], which: str, kernel_slow: str | None,
               trace: bool, pattern: str, rng: np.random.Generator) -> None:
    run.mkdir(parents=True, exist_ok=True)
    files = []
    if trace:
        path = run / tracefile.BLOCKTRACE_FILE
        tracefile.write_trace(path, _trace(row, pattern, rng, "sda" if which == "fast" else "sdb"))
        files.append(manifest.file_record(run, path))
    manifest.write_manifest(run, {
        "synthetic": True, "labels": {k: str(v) for k, v in labels.items()}, "outcome": row["outcome"],
        "wall_s": row["runtime_s"], "tool_version": str(catalogue.get(labels["tool"]).data["version"]),
        "host": _host(which, kernel_slow), "collectors": {"blocktrace": {"ran": trace}}, "files": files,
    })


def _trace(row: dict[str, Any], pattern: str, rng: np.random.Generator, device: str) -> dict[str, Any]:
    """A block trace shaped like the pattern: reads and writes over the run's time, sequential
    runs of requests where the pattern's CAR is high, sizes from Rsize/Wsize."""
    n = TRACE_REQUESTS
    car = PATTERN_CENTRES[pattern][4]
    write = rng.random(n) < 0.5
    size_kib = np.where(write, row["Wsize"], row["Rsize"]).astype(float)
    nbytes = (np.maximum(4, np.round(size_kib / 4) * 4) * 1024).astype(np.int64)
    jump = rng.random(n) >= car
    starts = rng.integers(0, SECTORS, n)
    sector = np.empty(n, dtype=np.int64)
    sector[0] = starts[0]
    for i in range(1, n):  # small n: a loop is clearer than a scan here
        sector[i] = starts[i] if jump[i] else sector[i - 1] + nbytes[i - 1] // 512
    issue = np.sort(rng.random(n)) * float(row["runtime_s"])
    return {
        "issue_s": issue, "complete_s": issue + 0.001, "device": [device] * n,
        "op": np.where(write, "W", "R"), "rwbs": np.where(write, "W", "R"), "sector": sector, "bytes": nbytes,
        "pid": np.full(n, 1, dtype=np.int32), "comm": ["synthetic"] * n, "error": np.zeros(n, dtype=np.int32),
    }
