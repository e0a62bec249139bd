"""Trace analytics throughput: parse a blktrace binary trace and compute every block-trace
feature, side by side with ``blkparse -i TRACE -o /dev/null`` on the same files.

  .venv/bin/python benchmarks/features_throughput.py [--events 10M] [--cpus 2] [--repeats 3]
                                                     [--memory-events 100M]

The synthetic trace (biossd.measure.trace.blkbinary.synthetic: mixed sequential/random, reads and writes,
merges, overlapping requests) is written once to a temporary directory. Each repeat times
biossd (streaming: iter_trace + tally_records + block_features) and blkparse, one after the
other, with the files in the page cache. The figures are events/s for each, the median, and
their ratio (target: >= 10 M events/s on one core, >= 3x blkparse). With --memory-events, a
separate child process streams a trace of that many events and reports its peak RSS (target:
under 2 GiB for 100 M events).
"""

from __future__ import annotations

import argparse
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from biossd.features import blockstats, definitions
from biossd.measure.trace import blkbinary

REQUEST_EVENTS = 3.2  # Q, D, C and a merge for a fifth of requests
WRITE_BLOCK_REQUESTS = 1 << 20


def write_trace(stem: Path, events: int, cpus: int) -> int:
    """Write about ``events`` events in blocks of requests (bounded memory); returns the count."""
    requests = int(events / REQUEST_EVENTS)
    handles = {cpu: open(stem.with_name(f"{stem.name}.blktrace.{cpu}"), "wb") for cpu in range(cpus)}
    written, t0, seed = 0, 1_000_000, 0
    try:
        while requests > 0:
            n = min(requests, WRITE_BLOCK_REQUESTS)
            rec = blkbinary.synthetic(n, "mixed", seed=seed, cpus=cpus, merge_share=0.2, depth=4, t0_ns=t0)
            for cpu, f in handles.items():
                f.write(rec[rec["cpu"] == cpu].tobytes())
            written += rec.size
            t0 = int(rec["time"].max()) + blkbinary.SYNTH_INTERVAL_NS
            requests -= n
            seed += 1
    finally:
        for f in handles.values():
            f.close()
    return written


def biossd_features(stem: Path) -> dict[str, float]:
    tally = blockstats.tally_records(blkbinary.iter_trace(stem))
    return definitions.block_features(tally, 1e-9, (150e6, 150e6))


def blkparse(stem: Path) -> None:
    subprocess.run(["blkparse", "-i", stem.name, "-D", str(stem.parent), "-o", "/dev/null"],
                   check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, cwd=stem.parent)


def peak_rss_child(events: int, cpus: int, work: Path) -> None:
    stem = work / "mem"
    n = write_trace(stem, events, cpus)
    print(f"memory: {n / 1e6:.1f} M events written ({sum(p.stat().st_size for p in work.glob('mem.*')) / 2**30:.1f} GiB)")
    # VmHWM, not ru_maxrss: the latter survives exec and would report the parent's peak.
    code = ("import sys; from pathlib import Path; sys.path.insert(0, sys.argv[2]); "
            "import features_throughput as ft; ft.biossd_features(Path(sys.argv[1])); "
            "print([l.split()[1] for l in open('/proc/self/status') if l.startswith('VmHWM')][0])")
    t0 = time.monotonic()
    out = subprocess.run([sys.executable, "-c", code, str(stem), str(Path(__file__).parent)],
                         check=True, capture_output=True, text=True).stdout
    wall = time.monotonic() - t0
    print(f"memory: streamed {n / 1e6:.1f} M events in {wall:.1f} s ({n / wall / 1e6:.1f} M events/s, "
          f"cold-ish cache); peak RSS {int(out.split()[-1]) / 2**20:.2f} GiB (target < 2 GiB)")
    for p in work.glob("mem.*"):
        p.unlink()


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--events", default="10M", help="events in the timed trace (K/M suffixes: decimal here)")
    ap.add_argument("--cpus", type=int, default=2)
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--memory-events", help="also stream a trace this large in a child and report peak RSS")
    args = ap.parse_args()

    def count(text: str) -> int:
        return int(float(text.rstrip("KMkm")) * {"k": 1e3, "m": 1e6}.get(text[-1].lower(), 1))
    with tempfile.TemporaryDirectory(dir="/var/tmp") as tmp:
        work = Path(tmp)
        stem = work / "trace"
        n = write_trace(stem, count(args.events), args.cpus)
        print(f"trace: {n / 1e6:.2f} M events, {args.cpus} CPU files, "
              f"{sum(p.stat().st_size for p in work.glob('trace.*')) / 2**20:.0f} MiB")
        ours, theirs = [], []
        for i in range(args.repeats):
            t0 = time.perf_counter()
            result = biossd_features(stem)
            ours.append(time.perf_counter() - t0)
            t0 = time.perf_counter()
            blkparse(stem)
            theirs.append(time.perf_counter() - t0)
            print(f"repeat {i + 1}: biossd {ours[-1]:.2f} s ({n / ours[-1] / 1e6:.1f} M events/s), "
                  f"blkparse {theirs[-1]:.2f} s ({n / theirs[-1] / 1e6:.1f} M events/s)")
        print(f"median: biossd {n / statistics.median(ours) / 1e6:.1f} M events/s, blkparse "
              f"{n / statistics.median(theirs) / 1e6:.1f} M events/s, ratio "
              f"{statistics.median(theirs) / statistics.median(ours):.1f}x; features "
              + ", ".join(f"{k}={v:.3g}" for k, v in result.items()))
        if args.memory_events:
            for p in work.glob("trace.*"):
                p.unlink()
            peak_rss_child(count(args.memory_events), args.cpus, work)


if __name__ == "__main__":
    main()
