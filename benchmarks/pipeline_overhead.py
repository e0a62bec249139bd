"""Profiling overhead on a whole pipeline: tests/pipelines/dnaseq (bwa, samtools, bcftools on two
samples) run with and without nextflow/conf/profile_pipeline.config, alternated, side by side.

    sudo .venv/bin/python benchmarks/pipeline_overhead.py [--pairs 3] [--size 12M]

Prints each run's wall time (Nextflow's, launch to end), the median of each side, and the
median of the per-pair ratios (profiled / plain). The profiled side drops the page cache before
each task and runs its tasks one at a time (the host lock); the plain side does neither.
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
PIPELINE = REPO / "tests" / "pipelines" / "dnaseq"
CONFIG = REPO / "nextflow" / "conf" / "profile_pipeline.config"


def synth(root: Path, size: str) -> list[str]:
    biossd = Path(sys.executable).parent / "biossd"
    for sample, seed in (("s1", 3), ("s2", 4)):
        subprocess.run([str(biossd), "data", "synth", "reads", "--size", size, "--seed", str(seed), "-o",
                        str(root / sample)], check=True, capture_output=True)
        for mate in (1, 2):
            (root / sample / f"reads_{mate}.fq").rename(root / f"{sample}_{mate}.fq")
    shutil.copy(root / "s1" / "genome.fa", root / "genome.fa")
    return ["--genome", str(root / "genome.fa"), "--reads", str(root / "s*_{1,2}.fq")]


def run(work: Path, args: list[str], profiled: bool) -> float:
    work.mkdir(parents=True)
    extra = ["-c", str(CONFIG), "--biossd_outdir", str(work / "profiled")] if profiled else []
    t0 = time.monotonic()
    proc = subprocess.run([shutil.which("nextflow"), "run", str(PIPELINE), "-w", str(work / "work"), *args,
                           "--outdir", str(work / "out"), *extra], cwd=work, capture_output=True, text=True)
    wall = time.monotonic() - t0
    if proc.returncode != 0:
        raise SystemExit(f"nextflow failed:\n{proc.stdout[-2000:]}")
    return wall


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--pairs", type=int, default=3)
    ap.add_argument("--size", default="12M", help="reads per sample")
    opts = ap.parse_args()
    os.environ["PATH"] = f"{Path(sys.executable).parent}{os.pathsep}{os.environ['PATH']}"
    with tempfile.TemporaryDirectory(dir=Path.cwd(), prefix="pipeline-overhead-") as tmp:
        root = Path(tmp)
        args = synth(root / "inputs", opts.size)
        plain, profiled = [], []
        for i in range(opts.pairs):
            plain.append(run(root / f"plain-{i}", args, False))
            profiled.append(run(root / f"profiled-{i}", args, True))
            print(f"pair {i + 1}: plain {plain[-1]:.1f} s, profiled {profiled[-1]:.1f} s", flush=True)
    ratios = [p / q for p, q in zip(profiled, plain)]
    print(f"median plain {statistics.median(plain):.1f} s, profiled {statistics.median(profiled):.1f} s; "
          f"median ratio profiled/plain {statistics.median(ratios):.2f}")


if __name__ == "__main__":
    main()
