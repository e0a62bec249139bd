"""The peak RSS the profiler records, against the command's own, for commands of a few sizes.

  sudo .venv/bin/python benchmarks/peak_rss.py [--repeats 3] [--mib 0 16 64 256]

For each size, a command touching that many MiB (0: ``true``) is run three ways, side by side:

* ``truth``: GNU time run straight from a shell, outside Python (the command's own peak);
* ``wait4 after a Python fork``: what the profiler recorded before it ran the command under
  GNU time — ``ru_maxrss`` of a child forked from this Python process (with the profiler's
  modules imported) and exec'ing the command; Linux keeps the peak across exec, so it is at
  least the Python process's resident set;
* ``biossd profile``: ``max_rss_kib`` of a real profiled run (no cap, no trace) and its
  ``max_rss_source``.

Prints the medians (KiB) and each one's ratio to the truth.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

import pandas as pd  # noqa: F401  (imported as the profiler's process has it: its resident set)

from biossd.measure import gnutime, profile  # noqa: F401 (as the profiler's process has them)

HOG = Path(__file__).resolve().parents[1] / "tests" / "programs" / "memory_hog.py"


def _argv(mib: int) -> list[str]:
    return ["true"] if mib == 0 else [sys.executable, str(HOG), str(mib)]


def truth_kib(mib: int) -> int:
    out = subprocess.run(["sh", "-c", 'exec /usr/bin/time -f "%M" "$@" 2>&1 >/dev/null', "sh", *_argv(mib)],
                         capture_output=True, text=True, check=True).stdout
    return int(out.strip().splitlines()[-1])


def wait4_kib(mib: int) -> int:
    pid = os.fork()
    if pid == 0:
        os.dup2(os.open(os.devnull, os.O_WRONLY), 1)
        os.execvp(_argv(mib)[0], _argv(mib))
    _, _, ru = os.wait4(pid, 0)
    return ru.ru_maxrss


def profiled_kib(mib: int, work: Path) -> tuple[int, str]:
    run = work / f"run-{mib}"
    subprocess.run([sys.executable, "-m", "biossd", "profile", "--mem", "none", "--no-drop-caches", "--blocktrace",
                    "off", "--perf", "off", "--overwrite", "--out", str(run), "--", *_argv(mib)],
                   check=True, capture_output=True)
    acct = json.loads((run / "rusage.json").read_text())
    return acct["max_rss_kib"], acct["max_rss_source"]


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--mib", type=int, nargs="+", default=[0, 16, 64, 256])
    args = ap.parse_args()
    print(f"this Python process's resident set: {int(Path('/proc/self/status').read_text().split('VmRSS:')[1].split()[0])} KiB")
    print(f"{'MiB':>5} {'truth':>9} {'wait4 after fork':>17} {'ratio':>6} {'biossd profile':>15} {'ratio':>6}  source")
    with tempfile.TemporaryDirectory(prefix="biossd-peak-rss-") as work:
        for mib in args.mib:
            truth, forked, profiled, source = [], [], [], ""
            for _ in range(args.repeats):  # side by side, interleaved
                truth.append(truth_kib(mib))
                forked.append(wait4_kib(mib))
                kib, source = profiled_kib(mib, Path(work))
                profiled.append(kib)
            t, f, p = (statistics.median(x) for x in (truth, forked, profiled))
            print(f"{mib:>5} {t:>9.0f} {f:>17.0f} {f / t:>6.2f} {p:>15.0f} {p / t:>6.2f}  {source[:40]}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
