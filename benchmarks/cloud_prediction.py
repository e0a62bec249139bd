"""Is the cloud model's prediction right? (docs/cloud.md): a study run with emulated cloud classes
beside the native one, each tool's runtime on every cloud class predicted from its native runs and
set against what the class measured.

  nextflow run study -profile full --outdir RESULTS --storage_classes ssd,gp3,st1 \\
      --emulate 'ssd=native,gp3=cloud:aws-gp3-baseline@m6id.large,st1=cloud:aws-st1@m6id.large'
  .venv/bin/python benchmarks/cloud_prediction.py RESULTS [--fast ssd] [--out FILE.json]

gp3 at its baseline behind an m6id.large is an SSD-backed volume whose instance's throughput cap
(81.25 MB/s) binds below the volume's 125 MiB/s; st1 is HDD-backed with a burst bucket. The
prediction is :mod:`biossd.analysis.today`'s (the same targets, scaled by the study's D as the
emulated classes were); a tool whose every run on a class reached the time limit has only a lower
bound there and is left out of the error. Targets: median |error| at most 10%, none above 25%.
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
from pathlib import Path

from biossd import analysis
from biossd.analysis import today

#: The prediction's targets on the emulated cloud classes.
MEDIAN_ERROR, WORST_ERROR = 0.10, 0.25


def errors(table) -> list[dict]:
    """Per measured cloud storage and tool: measured and predicted mean runtimes and the error."""
    rows = []
    for r in table[table["basis"] == today.MEASURED].itertuples():
        if r.predicted_s != r.predicted_s:  # NaN: the native runs could not be predicted
            continue
        rows.append({"storage": r.storage, "tool": r.tool, "measured_s": round(r.runtime_s, 3),
                     "predicted_s": round(r.predicted_s, 3), "error": round(r.predicted_s / r.runtime_s - 1, 4)})
    return rows


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("results", type=Path, help="a study's --outdir with emulated cloud classes")
    ap.add_argument("--fast", default="ssd", help="the native class the predictions start from")
    ap.add_argument("--out", type=Path, help="write the figures here (JSON)")
    args = ap.parse_args()
    a = analysis.open_results([args.results], fast=args.fast, slow=args.fast)
    found = errors(a.today_storage)
    if not found:
        print(f"{args.results}: no class ran on an emulated cloud volume of study/reference/cloud_storage.csv behind "
              f"an {today.INSTANCE} (give --emulate CLASS=cloud:VOLUME@{today.INSTANCE})", file=sys.stderr)
        return 2
    summary = {}
    for storage in sorted({r["storage"] for r in found}):
        mine = [r for r in found if r["storage"] == storage]
        print(f"\n{storage}")
        for r in mine:
            print(f"  {r['tool']:<24} measured {r['measured_s']:8.2f} s  predicted {r['predicted_s']:8.2f} s  "
                  f"{r['error']:+.0%}")
        abs_errors = [abs(r["error"]) for r in mine]
        summary[storage] = {"tools": len(mine), "median_abs_error": round(statistics.median(abs_errors), 4),
                            "worst_abs_error": round(max(abs_errors), 4),
                            "worst_tool": max(mine, key=lambda r: abs(r["error"]))["tool"],
                            "meets": statistics.median(abs_errors) <= MEDIAN_ERROR and max(abs_errors) <= WORST_ERROR}
        s = summary[storage]
        print(f"  median |error| {s['median_abs_error']:.0%}, worst {s['worst_abs_error']:.0%} ({s['worst_tool']}): "
              f"{'meets' if s['meets'] else 'misses'} the targets ({MEDIAN_ERROR:.0%}, {WORST_ERROR:.0%})")
    if args.out:
        tmp = args.out.with_suffix(args.out.suffix + ".tmp")
        tmp.write_text(json.dumps({"results": str(args.results), "rows": found, "summary": summary}, indent=1) + "\n")
        tmp.replace(args.out)
    return 0


if __name__ == "__main__":
    sys.exit(main())
