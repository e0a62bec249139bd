"""Benchmark: the whole notebook set over a full-matrix synthetic result set — the
paper's 23 tools x 2 storage classes x 4 caps x 5 scales x 3 repeats (2,760 runs, two result
folders of a matched pair) — rendered by papermill, figures, tables and HTML included.
Target: within 60 s on this project's 2-core machine. Reports each repeat and the median.

    .venv/bin/python benchmarks/notebooks_full_matrix.py [--repeats 3]
"""

from __future__ import annotations

import argparse
import statistics
import tempfile
import time
from pathlib import Path

from biossd.analysis import synthresults
from biossd.outputs import report

TARGET_S = 60.0


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=3)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="biossd-bench-") as tmp:
        t0 = time.perf_counter()
        truth = synthresults.write(Path(tmp))
        print(f"synthetic result set: {time.perf_counter() - t0:.1f} s ({', '.join(truth['roots'])})")
        times = []
        for i in range(args.repeats):
            t0 = time.perf_counter()
            report.render(truth["roots"], Path(tmp) / f"report-{i}")
            times.append(time.perf_counter() - t0)
            print(f"render {i + 1}: {times[-1]:.1f} s")
        median = statistics.median(times)
        print(f"median {median:.1f} s over {len(times)} renders (target {TARGET_S:.0f} s): "
              f"{'met' if median <= TARGET_S else 'NOT met'}")


if __name__ == "__main__":
    main()
