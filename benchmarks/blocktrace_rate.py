"""Block tracing at a high request rate: 4 KiB O_DIRECT writes (one block request each), bare vs
profiled with the default collectors, A/B alternated, plus the profiler's own peak memory.

  .venv/bin/python benchmarks/blocktrace_rate.py [--pairs 5] [--mib 64 256]

This is the tracer's worst case: tiny requests as fast as the device takes them, each one an
issue and a completion event that the profiler parses and writes to blocktrace.tsv.gz. For each
size it prints the per-pair wall times, the median ratio, the requests traced and lost, and the
peak RSS of the profiling process (it should not grow with the number of requests: rows go to
disk in groups, only requests in flight are held).
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from biossd.host import pagecache

DD_BLOCK = "4k"
_RUN_ONE = """
import json, resource, sys
from pathlib import Path
from biossd.measure import profile
argv, out = json.loads(sys.argv[1]), Path(sys.argv[2])
body = profile.run(profile.ProfileRequest(argv=argv, out_dir=out, mem_bytes=None, overwrite=True))
trace = body["collectors"]["blocktrace"]
print(json.dumps({"wall_s": body["wall_s"], "outcome": body["outcome"], "requests": trace.get("requests"),
                  "lost": trace.get("lost_total"), "source": trace.get("source"),
                  "maxrss_kib": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss}))
"""


def dd_argv(target: Path, mib: int) -> list[str]:
    return ["dd", "if=/dev/zero", f"of={target}", f"bs={DD_BLOCK}", f"count={mib * 256}", "oflag=direct",
            "status=none"]


def bare(argv: list[str]) -> float:
    pagecache.drop_all()
    t0 = time.monotonic()
    subprocess.run(argv, check=True)
    return time.monotonic() - t0


def profiled(argv: list[str], out: Path) -> dict:
    proc = subprocess.run([sys.executable, "-c", _RUN_ONE, json.dumps(argv), str(out)], check=True,
                          capture_output=True, text=True)
    result = json.loads(proc.stdout.strip().splitlines()[-1])
    assert result["outcome"] == "ok", result
    return result


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--pairs", type=int, default=5)
    ap.add_argument("--mib", type=int, nargs="+", default=[64, 256], help="MiB written per run")
    args = ap.parse_args()
    with tempfile.TemporaryDirectory(dir=Path.cwd()) as tmp:
        work = Path(tmp)
        for mib in args.mib:
            argv = dd_argv(work / "out.bin", mib)
            bare_s, prof = [], []
            for i in range(args.pairs):
                for which in (("bare", "profiled") if i % 2 == 0 else ("profiled", "bare")):
                    if which == "bare":
                        bare_s.append(bare(argv))
                    else:
                        prof.append(profiled(argv, work / "run"))
                print(f"{mib} MiB pair {i + 1}: bare {bare_s[-1]:.3f} s, profiled {prof[-1]['wall_s']:.3f} s, "
                      f"{prof[-1]['requests']} requests ({prof[-1]['source']}), {prof[-1]['lost']} lost, "
                      f"profiler peak RSS {prof[-1]['maxrss_kib'] / 1024:.0f} MiB")
            ratios = [p["wall_s"] / b for p, b in zip(prof, bare_s)]
            print(f"{mib} MiB: median bare {statistics.median(bare_s):.3f} s, median profiled "
                  f"{statistics.median(p['wall_s'] for p in prof):.3f} s, median ratio "
                  f"{statistics.median(ratios):.4f}; median requests/s "
                  f"{statistics.median(p['requests'] / p['wall_s'] for p in prof):.0f}; max lost "
                  f"{max(p['lost'] for p in prof)}; median profiler peak RSS "
                  f"{statistics.median(p['maxrss_kib'] for p in prof) / 1024:.0f} MiB")


if __name__ == "__main__":
    main()
