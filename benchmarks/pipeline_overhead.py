"""Profiling overhead on a whole pipeline: tests/pipelines/dnaseq (bwa, samtools, bcftools on two
samples) run with and without nextflow/conf/profile_pipeline.config, alternated, side by side.

    sudo .venv/bin/python benchmarks/pipeline_overhead.py [--pairs 3] [--size 12M] [--drop-caches once,task]

Prints each run's wall time (Nextflow's, launch to end), the median of each side, and the
median of the per-pair ratios (profiled / plain), for each page-cache mode asked for
(``--biossd_drop_caches``: once per session, the default, or before every task, which runs the
tasks one at a time), run in turn after each plain run. Both sides run the tasks as Nextflow schedules them (the profiled side
side by side, its default ``--biossd_concurrency``). Then, per mode, the median of each harness
phase over the profiled tasks (their run.json ``harness_s``: lock wait, cache drop, collectors,
...) and how many tasks traced on a tracefs instance the session's leader had ready.
"""

from __future__ import annotations

import argparse
import json
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


def run(work: Path, args: list[str], drop: str | None) -> float:
    """One run of the pipeline; ``drop``: the profiling config's page-cache mode, None: plain."""
    work.mkdir(parents=True)
    extra = (["-c", str(CONFIG), "--biossd_outdir", str(work / "profiled"), "--biossd_drop_caches", drop]
             if drop else [])
    if drop == "task":  # a cache drop before each task would drop it under the tasks beside it
        extra += ["--biossd_concurrency", "serial"]
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
    ap.add_argument("--drop-caches", default="once,task", help="the profiled page-cache modes to run, comma-separated")
    opts = ap.parse_args()
    modes = opts.drop_caches.split(",")
    os.environ["PATH"] = f"{Path(sys.executable).parent}{os.pathsep}{os.environ['PATH']}"
    with tempfile.TemporaryDirectory(dir=Path.cwd(), prefix="pipeline-overhead-") as tmp:
        root = Path(tmp)
        args = synth(root / "inputs", opts.size)
        plain: list[float] = []
        profiled: dict[str, list[float]] = {m: [] for m in modes}
        phases: dict[str, dict[str, list[float]]] = {m: {} for m in modes}
        instances: dict[str, dict[str, int]] = {m: {} for m in modes}
        for i in range(opts.pairs):
            plain.append(run(root / f"plain-{i}", args, None))
            for mode in modes:
                profiled[mode].append(run(root / f"{mode}-{i}", args, mode))
                for record in (root / f"{mode}-{i}" / "profiled" / "runs").glob("*/*/attempt-*/run.json"):
                    body = json.loads(record.read_text())
                    instance = body["collectors"].get("blocktrace", {}).get("instance", "none")
                    instances[mode][instance] = instances[mode].get(instance, 0) + 1
                    for phase, seconds in body["harness_s"].items():
                        phases[mode].setdefault(phase, []).append(seconds)
            print(f"round {i + 1}: plain {plain[-1]:.1f} s, " + ", ".join(f"profiled ({m}) {profiled[m][-1]:.1f} s"
                                                                       for m in modes), flush=True)
    print(f"median plain {statistics.median(plain):.1f} s")
    for mode in modes:
        ratios = [p / q for p, q in zip(profiled[mode], plain)]
        print(f"drop caches {mode}: median profiled {statistics.median(profiled[mode]):.1f} s; "
              f"median ratio profiled/plain {statistics.median(ratios):.2f}")
        print("  median harness per task: " + ", ".join(f"{k} {statistics.median(v):.3f} s"
                                                       for k, v in sorted(phases[mode].items())))
        print("  tracefs instances: " + ", ".join(f"{k} {n}" for k, n in sorted(instances[mode].items())))


if __name__ == "__main__":
    main()
