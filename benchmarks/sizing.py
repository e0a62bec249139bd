"""The sizing of ``-profile full`` on this machine: ``biossd study size`` at the one-machine study's
per-run budget (:data:`biossd.study.sizing.rule.INPUT_BUDGET_S`), every runnable tool, written to
``benchmarks/sizing-<date>.json`` (the procedure is :mod:`biossd.study.sizing.procedure`; this only calls it
and prints the record's parameters as ``full.config`` lines).

  .venv/bin/python benchmarks/sizing.py [--tools all] [--out benchmarks/sizing-YYYY-MM-DD.json]
                                       [--reference benchmarks/<the record -profile full reads>]

``--reference``: the record a re-sizing keeps the calls of where a timing lies within the re-timing
band (docs/study.md, "A sizing that jitter cannot move"); the committed record was made given
the one before it.

About an hour on the project's 2-core VM.
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import subprocess
import sys
from pathlib import Path

from biossd.study.sizing import procedure, rule

HERE = Path(__file__).resolve().parent


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--tools", default="all")
    ap.add_argument("--out", default=str(HERE / f"sizing-{dt.date.today().isoformat()}.json"))
    ap.add_argument("--scratch", default="/var/tmp")
    ap.add_argument("--reference", help="a record of the same budget whose calls a timing within the band keeps")
    args = ap.parse_args()
    proc = subprocess.run(["biossd", "study", "size", "--tools", args.tools, "--run-budget", f"{rule.INPUT_BUDGET_S:g}s",
                           "--scratch", args.scratch, "--out", args.out, "--replace",
                           *(["--reference", args.reference] if args.reference else [])])
    if proc.returncode != 0:
        return proc.returncode
    rec = json.loads(Path(args.out).read_text())
    print(f"\n# nextflow/conf/full.config: sizing = \"${{projectDir}}/../benchmarks/{Path(args.out).name}\", which sets")
    for name, value in rec["parameters"].items():
        print(f"#   {name:<16} = {value!r}")
    print(f"# D = 1 GB / M = {rec['chose']['memory_divisor']:.1f}; record checked: {procedure.check(rec) or 'ok'}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
