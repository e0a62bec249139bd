"""Does jitter move the sizing? (docs/study.md, "A sizing that jitter cannot move"): ``biossd study
size`` run again on this machine, each record's choices — every tool's input, M, D and JVM heaps — side by
side with the others', and which tools, if any, were sized differently.

  .venv/bin/python benchmarks/sizing_stability.py [--runs N] [--record FILE ...] [--tools all] [--keep DIR]
                                                  [--reference FILE]

``--record`` adds records made before (the committed one, a study's ``pipeline_info/sizing.json`` of
``--sizing auto``); ``--runs`` makes N more (about 35 minutes each on the project's 2-core VM, at
the one-machine study's 5 s budget; about 30 given the committed record as reference), kept in
``--keep`` (``sizing-N.json``) when given, each given ``--reference`` when given (a tool that runs
within SAME_SPEED_WITHIN of the reference's speed keeps its call; the reference is compared too).
Run it on a quiet machine: the sizing times runs.
"""

from __future__ import annotations

import argparse
import json
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

from biossd.core.units import format_size
from biossd.study.sizing import rule


def choices(record: dict) -> dict[str, str]:
    """What a record chose that a study runs: every tool's input, M, M_GATK, D and JVM heap."""
    chose = record["chose"]
    out = {f"input {tool}": format_size(size) for tool, size in sorted(chose["inputs"].items())}
    out["M"] = format_size(chose["data_memory"])
    out["M_GATK"] = format_size(chose["data_memory_gatk"]) if chose.get("data_memory_gatk") else "-"
    out["D"] = f"{chose['memory_divisor']:.1f}"
    out.update({f"heap {tool}": heap for tool, heap in sorted(chose.get("heaps", {}).items())})
    return out


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--runs", type=int, default=0, help="sizings to run now")
    ap.add_argument("--record", action="append", default=[], help="a sizing record made before")
    ap.add_argument("--tools", default="all")
    ap.add_argument("--scratch", default="/var/tmp")
    ap.add_argument("--keep", type=Path, help="a directory to keep the new records in")
    ap.add_argument("--reference", type=Path, help="the record each new sizing keeps within the band")
    args = ap.parse_args()
    given = args.record + ([str(args.reference)] if args.reference and str(args.reference) not in args.record else [])
    records = [(Path(r).name, json.loads(Path(r).read_text())) for r in given]
    reference = ["--reference", str(args.reference)] if args.reference else []
    with tempfile.TemporaryDirectory(prefix="biossd-sizing-stability-", dir=args.scratch) as tmp:
        for i in range(args.runs):
            out = Path(tmp) / f"run{i + 1}.json"
            proc = subprocess.run(["biossd", "study", "size", "--tools", args.tools, "--run-budget",
                                   f"{rule.INPUT_BUDGET_S:g}s", "--scratch", args.scratch, "--out", str(out), *reference])
            if proc.returncode != 0:
                return proc.returncode
            records.append((f"run {i + 1} ({out.name})", json.loads(out.read_text())))
            if args.keep:
                args.keep.mkdir(parents=True, exist_ok=True)
                kept = args.keep / f"sizing-{i + 1}.json"
                shutil.copyfile(out, kept.with_suffix(".json.tmp"))
                kept.with_suffix(".json.tmp").replace(kept)
    if len(records) < 2:
        print("give at least two records to compare (--record, --runs)", file=sys.stderr)
        return 2
    table = [choices(rec) for _, rec in records]
    keys = list(table[0])
    width = max(len(k) for k in keys)
    print(f"{'':<{width}}  " + "  ".join(f"{name[:18]:>18}" for name, _ in records))
    moved = []
    for key in keys:
        values = [row.get(key, "?") for row in table]
        mark = "" if len(set(values)) == 1 else "  <- differs"
        if mark:
            moved.append(key)
        print(f"{key:<{width}}  " + "  ".join(f"{v:>18}" for v in values) + mark)
    print(f"\n{len(records)} sizings: " + ("every input, M and D the same" if not moved else
                                          f"{len(moved)} of {len(keys)} choices differ: {', '.join(moved)}"))
    for name, rec in records:
        created = rec.get("created", "?")
        n_runs = len(rec.get("runs", []))
        print(f"  {name}: {rec['host'].get('hostname')} {created}, {n_runs} runs")
    return 0


if __name__ == "__main__":
    sys.exit(main())
