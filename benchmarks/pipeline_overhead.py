"""Profiling overhead on a whole pipeline: tests/pipelines/dnaseq (bwa, samtools, bcftools on two
samples) run with and without nextflow/conf/profile_pipeline.config, alternated, side by side.

    sudo .venv/bin/python benchmarks/pipeline_overhead.py [--pairs 3] [--size 12M] [--drop-caches once,never]

Prints each run's wall time (Nextflow's, launch to end), the median of each side, and the
median of the per-pair ratios (profiled / plain), for each page-cache mode asked for
(``--biossd_drop_caches``: once per session, the default; before every task, which runs the
tasks one at a time; or never), each profiled run right after its plain partner, both started
as that mode leaves the cache (:data:`START_COLD`). Both sides run the tasks as Nextflow
schedules them (the profiled side side by side, its default ``--biossd_concurrency``). Then, per mode, the median of each harness
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

from biossd.host import pagecache

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


#: How each profiled page-cache mode starts, and so its plain partner: ``once`` and ``task`` drop
#: the page cache, so both runs of their pair start cold (dropped before Nextflow starts);
#: ``never`` keeps it, so both start warm (after the run before them). The two runs of a pair
#: differ only in the profiling.
START_COLD = {"once": True, "task": True, "never": False}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--pairs", type=int, default=3)
    ap.add_argument("--size", default="12M", help="reads per sample")
    ap.add_argument("--drop-caches", default="once,never", help="the profiled page-cache modes to run, comma-separated "
                    f"({', '.join(START_COLD)})")
    opts = ap.parse_args()
    modes = opts.drop_caches.split(",")
    unknown = [m for m in modes if m not in START_COLD]
    if unknown:
        raise SystemExit(f"--drop-caches: unknown mode {', '.join(unknown)}; choose from {', '.join(START_COLD)}")
    os.environ["PATH"] = f"{Path(sys.executable).parent}{os.pathsep}{os.environ['PATH']}"
    with tempfile.TemporaryDirectory(dir=Path.cwd(), prefix="pipeline-overhead-") as tmp:
        root = Path(tmp)
        args = synth(root / "inputs", opts.size)
        plain: dict[str, list[float]] = {m: [] for m in modes}
        profiled: dict[str, list[float]] = {m: [] for m in modes}
        phases: dict[str, dict[str, list[float]]] = {m: {} for m in modes}
        instances: dict[str, dict[str, int]] = {m: {} for m in modes}
        for i in range(opts.pairs):
            for mode in modes:
                for side, drop in (("plain", None), ("profiled", mode)):
                    if START_COLD[mode] and not pagecache.drop_all()["dropped"]:
                        raise SystemExit("a cold start needs root (it drops the page cache): run with sudo")
                    (plain if drop is None else profiled)[mode].append(run(root / f"{side}-{mode}-{i}", args, drop))
                for record in (root / f"profiled-{mode}-{i}" / "profiled" / "runs").glob("*/*/attempt-*/run.json"):
                    body = json.loads(record.read_text())
                    instance = body["collectors"].get("blocktrace", {}).get("instance", "none")
                    instances[mode][instance] = instances[mode].get(instance, 0) + 1
                    for phase, seconds in body["harness_s"].items():
                        phases[mode].setdefault(phase, []).append(seconds)
            print(f"round {i + 1}: " + ", ".join(f"{m} ({'cold' if START_COLD[m] else 'warm'}): plain {plain[m][-1]:.1f} s, "
                                                  f"profiled {profiled[m][-1]:.1f} s" for m in modes), flush=True)
    for mode in modes:
        ratios = [p / q for p, q in zip(profiled[mode], plain[mode])]
        print(f"drop caches {mode} ({'both cold' if START_COLD[mode] else 'both warm'}): median plain "
              f"{statistics.median(plain[mode]):.1f} s, median profiled {statistics.median(profiled[mode]):.1f} s; "
              f"median ratio profiled/plain {statistics.median(ratios):.2f} (pairs: "
              + ", ".join(f"{r:.2f}" for r in ratios) + ")")
        print("  median harness per task: " + ", ".join(f"{k} {statistics.median(v):.3f} s"
                                                       for k, v in sorted(phases[mode].items())))
        print("  tracefs instances: " + ", ".join(f"{k} {n}" for k, n in sorted(instances[mode].items())))


if __name__ == "__main__":
    main()
