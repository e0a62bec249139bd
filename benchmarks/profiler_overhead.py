"""Profiler overhead: samtools sort spilling under a memory cap, bare vs profiled, A/B alternated.

  .venv/bin/python benchmarks/profiler_overhead.py [--pairs 5] [--size 64M] [--cap 64M]

"Bare" runs the same command in a cgroup with the same cap (biossd.host.cgroups.MemoryCap) and no
collectors; "profiled" runs it through biossd.measure.profile.run with the default collectors (process
accounting, the 1 Hz sampler, the block trace — tracefs here — and perf stat). Both start with
the page cache dropped. Prints per-pair wall times, the median of each, and the
median of the per-pair ratios (target: <= 1.02).
"""

from __future__ import annotations

import argparse
import statistics
import subprocess
import tempfile
import time
from pathlib import Path

from biossd.core.units import parse_size
from biossd.host import pagecache
from biossd.host.cgroups import MemoryCap
from biossd.measure import profile
from biossd.study import catalogue
from biossd.study.inputs import data


def sort_argv(work: Path, bam: Path, cap: int) -> list[str]:
    (work / "tmp").mkdir(exist_ok=True)
    return catalogue.get("samtools_sort").render(
        {"in_bam": str(bam), "out_bam": str(work / "sorted.bam"), "tmp_prefix": str(work / "tmp" / "s")},
        mem_bytes=cap,
    )


def bare(argv: list[str], cap: int) -> float:
    pagecache.drop_all()
    with MemoryCap(cap) as mc:
        t0 = time.monotonic()
        subprocess.run(argv, preexec_fn=mc.join, check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        return time.monotonic() - t0


def profiled(argv: list[str], cap: int, out: Path) -> float:
    body = profile.run(profile.ProfileRequest(argv=argv, out_dir=out, mem_bytes=cap, overwrite=True))
    assert body["outcome"] == "ok", body
    ran = sorted(name for name, c in body["collectors"].items() if c["ran"])
    trace = body["collectors"]["blocktrace"]
    print(f"  profiled: collectors {', '.join(ran)}; {trace.get('requests')} block requests "
          f"({trace.get('source')}), {trace.get('lost_total')} lost")
    return body["wall_s"]


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--pairs", type=int, default=5)
    ap.add_argument("--size", default="64M", help="baseline BAM size")
    ap.add_argument("--cap", default="64M", help="memory cap")
    args = ap.parse_args()
    cap = parse_size(args.cap)
    with tempfile.TemporaryDirectory(dir=Path.cwd()) as tmp:
        work = Path(tmp)
        record = data.synth("bam", work / "in", parse_size(args.size), seed=7)
        bam = work / "in" / "reads.bam"
        argv = sort_argv(work, bam, cap)
        print(f"input {record['files']['reads.bam']['size_bytes'] / 2**20:.1f} MiB BAM, cap {args.cap}, "
              f"{args.pairs} pairs: {' '.join(argv)}")
        bare_s, prof_s = [], []
        for i in range(args.pairs):
            order = (("bare", "profiled") if i % 2 == 0 else ("profiled", "bare"))
            for which in order:
                if which == "bare":
                    bare_s.append(bare(argv, cap))
                else:
                    prof_s.append(profiled(argv, cap, work / "run"))
            print(f"pair {i + 1}: bare {bare_s[-1]:.3f} s, profiled {prof_s[-1]:.3f} s, ratio {prof_s[-1] / bare_s[-1]:.4f}")
        ratios = [p / b for p, b in zip(prof_s, bare_s)]
        print(f"median bare {statistics.median(bare_s):.3f} s, median profiled {statistics.median(prof_s):.3f} s, "
              f"median ratio {statistics.median(ratios):.4f} (target <= 1.02)")


if __name__ == "__main__":
    main()
