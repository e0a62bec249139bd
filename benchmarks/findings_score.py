"""The device finding (BIOSSD-D01, src/biossd/analysis/findings.py) scored against a study's own
measured truth: for each catalogue tool (and chain) of a result set, whether "the move from the
slow class to the fast one speeds it up at least 1.2x" is predicted from the fast side's runs
alone, against what the slow side measured. Prints each tool and the precision and recall.

    .venv/bin/python benchmarks/findings_score.py results [results-hdd ...]
"""

from __future__ import annotations

import argparse
from pathlib import Path

from biossd.analysis import Analysis, findings, resultset


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("results", nargs="+", type=Path, help="a study result set (one folder, or a twin's two)")
    args = ap.parse_args()
    a = Analysis(resultset.load(args.results))
    s = findings.score(a.predicted_speedups)
    rows = s.pop("rows")
    print(rows.to_string(index=False, float_format=lambda v: f"{v:.2f}"))
    print()
    fast, slow = a.pair
    print(f"{fast} runs predict {slow} (bound {s['bound']:g}x), {s['tools']} tools "
          f"({s['left_out_lower_bounds']} left out: a timed-out lower bound below the bound)")
    print(f"  TP {s['true_positive']}  FP {s['false_positive']}  FN {s['false_negative']}  TN {s['true_negative']}")
    print(f"  precision {s['precision']:.2f}  recall {s['recall']:.2f}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
