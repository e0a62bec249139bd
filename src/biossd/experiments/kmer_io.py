"""McDonald and Brown's khmer chapter (2013): k-mer counting's I/O (``study/experiments/kmer_io.yaml``).

khmer's ``load-into-counting`` counts the k-mers of a FASTQ file (plain, gzip or bzip2) into a
count table of a chosen size, with 1 or more threads, under a fixed memory cap. A table smaller
than the cap stays in memory; a larger one pages to a swap area on the class's device (each run
gets one, :class:`biossd.measure.profile.ProfileRequest`'s ``swap_bytes``, so every run has the
same swap). Per run:

* ``reads_per_s``: reads counted per second of runtime;
* the CPU/I-O split: ``cpu_cores_used`` ((user + sys) / wall) and ``io_share`` = 1 − min(1,
  cpu_cores_used), the share of the wall time in which not even one core's worth of the tool's
  work was done — waiting on the input, the decompression pipe's reads or page faults;
* the paging rate: ``Pfault`` (pages swapped in and out per second, the feature of Lee, Min and
  Yoon 2015) against ``table_fraction_of_cap`` (the table's size over the cap), beside
  ``fault_rate_per_s`` (minor + major; a table that fits takes many minor faults as it is first
  touched), and the pages swapped in and out (``swap_ins``: the pages read back, which cost a read
  each; a table that fits may still be swapped out once, when reading the input fills the cap).
"""

from __future__ import annotations

import bz2
import gzip
import shutil
from pathlib import Path
from typing import Any

import pandas as pd

from biossd.core.units import format_size
from biossd.experiments.tables import by_class, run_rows, scale_keys
from biossd.experiments.task import Task

TOOL = "khmer"
COMPRESSIONS = {"none": "", "gz": ".gz", "bz2": ".bz2"}
_OPENERS = {"gz": gzip.open, "bz2": bz2.open}
#: The input: the first mate file of the synthetic read pairs.
INPUT_FILE = "reads_1.fq"
FASTQ_LINES_PER_READ = 4
#: Each run's swap area, as a multiple of its table (room for the whole table to page out).
SWAP_PER_TABLE = 2
COLUMNS = ("compression", "threads", "table_fraction_of_cap", "table_bytes", "outcome", "runtime_s", "reads",
           "reads_per_s", "cpu_cores_used", "io_share", "fault_rate_per_s", "Pfault", "swap_ins", "swap_outs",
           "major_faults", "minor_faults",
           "max_rss_kib", "Riops", "Wiops")


def points(settings: dict[str, Any]) -> list[dict[str, Any]]:
    unknown = [c for c in settings["compression"] if c not in COMPRESSIONS]
    if unknown:
        raise ValueError(f"kmer_io: unknown compression {unknown}; choose from {list(COMPRESSIONS)}")
    return [{"id": f"{comp}-t{threads}-table{fraction:g}",
             "values": {"compression": comp, "threads": int(threads), "table_fraction_of_cap": float(fraction)}}
            for comp in settings["compression"] for threads in settings["threads"]
            for fraction in settings["table_fraction_of_cap"]]


def argv(spec: dict[str, Any], table_bytes: int, threads: int, reads: str, out_table: str) -> list[str]:
    return ["khmer", "load-into-counting", "-k", str(spec["k"]), "-N", str(spec["n_tables"]), "-M",
            str(table_bytes), "-T", str(threads), out_table, reads]


def prepare_input(source: Path, compression: str, dest_dir: Path) -> Path:
    """The reads in the point's compression (unprofiled, in the class's scratch)."""
    dest = dest_dir / (source.name + COMPRESSIONS[compression])
    if compression == "none":
        shutil.copyfile(source, dest)
        return dest
    with open(source, "rb") as src, _OPENERS[compression](dest, "wb") as out:
        shutil.copyfileobj(src, out)
    return dest


def count_reads(fastq: Path) -> int:
    with open(fastq, "rb") as f:
        return sum(1 for _ in f) // FASTQ_LINES_PER_READ


def run(ctx: Task) -> dict[str, Any]:
    work = ctx.scratch / "work"
    work.mkdir()
    comp, threads = ctx.values["compression"], int(ctx.values["threads"])
    table_bytes = int(ctx.cap_bytes * float(ctx.values["table_fraction_of_cap"]))
    reads = prepare_input(ctx.input_dir / INPUT_FILE, comp, work)
    record = ctx.profile(argv(ctx.spec, table_bytes, threads, reads.name, "counts.ct"), "run", TOOL, cwd=work,
                         swap_bytes=SWAP_PER_TABLE * table_bytes, swap_dir=work,
                         labels={"table_bytes": table_bytes, "swap": format_size(SWAP_PER_TABLE * table_bytes)})
    return {"run": {"reads": count_reads(ctx.input_dir / INPUT_FILE), "table_bytes": table_bytes,
                    "input_bytes": reads.stat().st_size, "outcome": record["outcome"]}}


def rows(point_dir: Path, record: dict[str, Any]) -> list[dict[str, Any]]:
    out = []
    for row in run_rows(point_dir, record):
        seen = record["observed"][row["run"]]
        runtime = row["runtime_s"]
        row["reads"] = seen["reads"]
        row["table_bytes"] = seen["table_bytes"]
        row["reads_per_s"] = seen["reads"] / runtime if row["outcome"] == "ok" and runtime > 0 else float("nan")
        row["io_share"] = 1.0 - min(1.0, row["cpu_cores_used"])
        row["fault_rate_per_s"] = (row["major_faults"] + row["minor_faults"]) / runtime if runtime > 0 else float("nan")
        out.append(row)
    return out


def throughput(table: pd.DataFrame) -> pd.DataFrame:
    """Mean reads/s, CPU cores used and I/O share of the ok runs per (class, compression, threads)."""
    ok = table[table["outcome"] == "ok"]
    return ok.groupby([*scale_keys(table), "storage", "compression", "threads"], sort=False)[
        ["reads_per_s", "cpu_cores_used", "io_share", "runtime_s"]].mean().reset_index()


def summary(table: pd.DataFrame) -> pd.DataFrame:
    """Table S4: per (class, compression, threads, table size / cap), the runs' mean runtime,
    throughput, CPU/I-O split and fault rates, and how many did not end ok (a table that pages
    runs into the size's time limit)."""
    keys = [*scale_keys(table), "storage", "compression", "threads", "table_fraction_of_cap"]
    out = table.groupby(keys, sort=False).agg(
        runs=("outcome", "size"), not_ok=("outcome", lambda o: int((o != "ok").sum())),
        runtime_s=("runtime_s", "mean"), reads_per_s=("reads_per_s", "mean"), cpu_cores_used=("cpu_cores_used", "mean"),
        io_share=("io_share", "mean"), fault_rate_per_s=("fault_rate_per_s", "mean"), Pfault=("Pfault", "mean"))
    out = out.reset_index()
    out["_comp"] = out["compression"].map({c: i for i, c in enumerate(COMPRESSIONS)})
    return by_class(out, "_comp", "threads", "table_fraction_of_cap").drop(columns="_comp")


def headline(table: pd.DataFrame) -> str:
    if table.empty:
        return "No kmer_io runs in these results."
    s = summary(table)
    fits, pages = s[s["table_fraction_of_cap"] < 1], s[s["table_fraction_of_cap"] >= 1]
    parts = []
    for storage, part in fits.groupby("storage", sort=False):
        best = part.loc[part["reads_per_s"].idxmax()] if part["reads_per_s"].notna().any() else None
        if best is not None:
            parts.append(f"on {storage}, tables within the cap: up to {best.reads_per_s:,.0f} reads/s "
                         f"({best.compression}, {best.threads} thread(s)), I/O share {part['io_share'].min():.0%}-"
                         f"{part['io_share'].max():.0%}")
    if len(pages) and len(fits):
        for storage, part in pages.groupby("storage", sort=False):
            within = fits[fits["storage"] == storage]["Pfault"].median()
            parts.append(f"on {storage}, tables above the cap: {int(part['not_ok'].sum())} of {int(part['runs'].sum())} "
                         f"runs hit the time limit, at a median {part['Pfault'].median():,.0f} pages swapped/s against "
                         f"{within:,.0f} for tables within the cap")
    return "; ".join(parts) + "."
