"""DNAnexus's samtools rocksort (2014): sort memory against temporary files (``study/experiments/sort_memory.yaml``).

A BAM is sorted under a fixed memory cap with the sorter's memory option swept (``samtools sort
-m``, ``sambamba sort -m``): the less memory, the more temporary files the split phase writes and
the merge phase reads back together. Beside the profiler, an inotify watch of the temporary
directory (:mod:`biossd.measure.filewatch`) times the phases:

* the **split phase** runs from the command's start to the last close-after-write of a temporary
  file (the last spilled chunk written);
* the **merge phase** is the rest of the run: reading every temporary file at once and writing
  the sorted output. Its block-trace features (Riops, Wiops, CAR: the share of requests
  contiguous with the previous one, Lee, Min and Yoon 2015, §3.3) come from the run's raw trace over that
  window. A sort that spills nothing has no merge phase.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import pandas as pd

from biossd.core.units import format_size, parse_size
from biossd.experiments.tables import by_class, not_ok, run_rows, scale_keys, since_start_s, window_features
from biossd.experiments.task import Task
from biossd.measure import manifest
from biossd.measure.filewatch import DirectoryWatch
from biossd.study import catalogue

SORTERS = ("samtools_sort", "sambamba_sort")
TMP_DIR = "tmp"
#: samtools sort says how many files it merges (bam_sort_core); the watch's count is checked against it.
_SAMTOOLS_MERGING_RE = re.compile(r"merging from (\d+) files")
COLUMNS = ("sorter", "sort_mem", "sort_mem_bytes", "outcome", "runtime_s", "split_s", "merge_s", "temp_files",
           "reported_temp_files", "max_rss_kib", "Riops", "Wiops", "CAR", "merge_Riops", "merge_Wiops", "merge_CAR",
           "merge_Rsize", "merge_Wsize")


def points(settings: dict[str, Any]) -> list[dict[str, Any]]:
    """Every (sorter, -m) pair, smallest memory first; a sorter named in ``sorter_caps`` runs
    under its own cap (one that its runtime alone exceeds would end every run oom)."""
    mems = sorted((str(m) for m in settings["sort_mem"]), key=parse_size)
    own = settings.get("sorter_caps") or {}
    return [{"id": f"{sorter}-{mem}",
             "values": {"sorter": sorter, "sort_mem": mem, **({"cap": str(own[sorter])} if sorter in own else {})}}
            for sorter in SORTERS for mem in mems]


def argv(sorter: str, sort_mem: str, in_bam: str, out_bam: str) -> list[str]:
    """The sort's command, one thread, temporary files under ``tmp/`` (samtools' from the catalogue)."""
    if sorter == "samtools_sort":
        return catalogue.get("samtools_sort").render(
            {"in_bam": in_bam, "out_bam": out_bam, "tmp_prefix": f"{TMP_DIR}/sort", "sort_mem": sort_mem,
             "threads": "1"})
    if sorter == "sambamba_sort":
        return ["sambamba", "sort", "-m", sort_mem, "-t", "1", "--tmpdir", TMP_DIR, "-o", out_bam, in_bam]
    raise ValueError(f"unknown sorter {sorter!r}; the sorters are {SORTERS}")


def run(ctx: Task) -> dict[str, Any]:
    work = ctx.scratch / "work"
    (work / TMP_DIR).mkdir(parents=True)
    sorter, sort_mem = ctx.values["sorter"], ctx.values["sort_mem"]
    command = argv(sorter, sort_mem, str(ctx.input_dir / "reads.bam"), "sorted.bam")
    with DirectoryWatch(work / TMP_DIR) as watch:
        record = ctx.profile(command, "run", sorter, cwd=work)
    reported = _SAMTOOLS_MERGING_RE.search((ctx.out / "run" / "stderr.log").read_text(errors="replace"))
    return {"run": {"temp_files": len(watch.files), "peak_temp_files": watch.peak_files,
                    "split_end_s": watch.last_written(), "watch_overflowed": watch.overflowed,
                    "reported_temp_files": int(reported.group(1)) if reported else None,
                    "outcome": record["outcome"]}}


def rows(point_dir: Path, record: dict[str, Any]) -> list[dict[str, Any]]:
    out = []
    for row in run_rows(point_dir, record):
        seen = record["observed"][row["run"]]
        body = manifest.read_manifest(point_dir / row["run"])
        split_s = since_start_s(body, seen["split_end_s"])
        row["sort_mem_bytes"] = parse_size(str(row["sort_mem"]))
        row["temp_files"] = seen["temp_files"]
        row["reported_temp_files"] = seen["reported_temp_files"]
        if split_s is None:  # nothing spilled: one in-memory phase
            row.update(split_s=row["runtime_s"], merge_s=0.0,
                       **{f"merge_{k}": float("nan") for k in ("Riops", "Wiops", "CAR", "Rsize", "Wsize")})
        else:
            row["split_s"] = split_s
            row["merge_s"] = max(0.0, row["runtime_s"] - split_s)
            merge = window_features(point_dir / row["run"], split_s)
            row.update({f"merge_{k}": merge[k] for k in ("Riops", "Wiops", "CAR", "Rsize", "Wsize")})
        out.append(row)
    return out


SUMMARY_MEANS = ("runtime_s", "split_s", "merge_s", "temp_files", "max_rss_kib", "Riops", "Wiops", "merge_Riops",
                 "merge_Wiops", "merge_CAR")


def summary(table: pd.DataFrame) -> pd.DataFrame:
    """Table S2: per (class, sorter, -m), smallest memory first, the ok runs' means (and the
    runtime's SD), and how many runs were not ok."""
    ok = table[table["outcome"] == "ok"]
    scale = scale_keys(table)
    keys = [*scale, "storage", "sorter", "sort_mem", "sort_mem_bytes"]
    out = ok.groupby(keys, sort=False)[list(SUMMARY_MEANS)].mean()
    out["runtime_s_sd"] = ok.groupby(keys, sort=False)["runtime_s"].std().fillna(0.0)
    out["runs"] = ok.groupby(keys, sort=False).size()
    out = out.reset_index()
    counted = [*scale, "storage", "sorter", "sort_mem"]
    not_ok = table[table["outcome"] != "ok"].groupby(counted).size()
    out["not_ok"] = [int(not_ok.get(tuple(r), 0)) for r in out[counted].itertuples(index=False)]
    out["substitute_of"] = out["sorter"].map(table.drop_duplicates("sorter").set_index("sorter")["substitute_of"])
    out["merge_share"] = out["merge_s"] / out["runtime_s"]
    out["_sorter"] = out["sorter"].map({s: i for i, s in enumerate(SORTERS)})
    return by_class(out, "_sorter", "sort_mem_bytes").drop(columns="_sorter")


def headline(table: pd.DataFrame) -> str:
    """The numbers a reader needs first: per sorter and class, runtime and merge phase at the
    smallest and the largest -m, and the slow class's runtime over the fast one's."""
    if table.empty:
        return "No sort_memory runs in these results."
    s = summary(table)
    lines = []
    for (storage, sorter), part in s.groupby(["storage", "sorter"], sort=False):
        lo, hi = part.iloc[0], part.iloc[-1]
        lines.append(f"{sorter} on {storage}: -m {lo.sort_mem} spilled {lo.temp_files:.0f} temporary file(s) and "
                     f"took {lo.runtime_s:.2f} s (merge {lo.merge_share:.0%} of it); -m {hi.sort_mem}: "
                     f"{hi.temp_files:.0f} file(s), {hi.runtime_s:.2f} s.")
    classes = list(dict.fromkeys(s["storage"]))
    if len(classes) == 2:
        fast, slow = ("ssd", "hdd") if set(classes) == {"ssd", "hdd"} else classes
        pair = s.pivot_table(index=["sorter", "sort_mem_bytes"], columns="storage", values="runtime_s")
        ratio = (pair[slow] / pair[fast]).dropna()
        if len(ratio):
            worst = ratio.idxmax()
            lines.append(f"{slow} over {fast} runtime: {ratio.min():.1f}x to {ratio.max():.1f}x across sorters and -m "
                         f"(largest: {worst[0]} at -m {format_size(int(worst[1]))}).")
    lines.append(not_ok(table.assign(sort_mem="-m " + table["sort_mem"].astype(str)), ["sorter", "sort_mem"]))
    return " ".join(line for line in lines if line)

