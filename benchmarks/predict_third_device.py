"""Transfer: does the prediction transfer to a device it was not built with?

Two storage classes on this host, both loop devices over files on the native disk with direct
I/O (``biossd storage up``'s ``native`` profile): ``native`` as it is, and ``throttled``, the same
kind of device slowed by the kernel's cgroup I/O throttle (:mod:`biossd.host.iothrottle`) — a
token bucket on read bytes/s and read IOPS, nothing like the seek/rotation model of the emulated
HDD. Each class is measured with ``biossd device characterize`` from inside the throttled cgroup
(so its record says what the runs see), then the tools run on both, alternating, under the same
cap and inputs as ``-profile full``. The ``native`` runs' block traces are then replayed on the
``throttled`` record's model and the ``throttled`` runs' on the ``native`` one, and the mean
runtimes compared (:func:`biossd.analysis.predict.cross_predict`).

  .venv/bin/python benchmarks/predict_third_device.py --out /tmp/third [--tools bwa,blast,...]
        [--repeats 3] [--read-mbs 40] [--read-iops 400] [--budget 60s]

Under cgroup v1 only reads are throttled (buffered writes are written back by the kernel's
flusher threads, outside any cgroup); the record shows it. The result folder (``--out``) is a
result set of its own: ``biossd predict`` and the notebooks read it. Everything the script makes
on the host (the loop devices, their mounts, the cgroup) is removed on success, failure and
interruption.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

from biossd import analysis
from biossd.analysis import predict
from biossd.core.owners import ProcessRef
from biossd.core.units import parse_size
from biossd.host import iothrottle
from biossd.measure import storage
from biossd.study import layout

FULL_PARAMS = {"mem_caps": "256M", "scales": "1", "input_size": "1M", "seed": 7,
               "input_sizes": "bam=64M,expression=512K,flowgrams=8M,proteins=64K,reads=8M,rnaseq=64M,vcf=4M"}
DEFAULT_TOOLS = "bwa,bowtie2,blast,blat,hisat2,samtools_sort,igvtools,stringtie"
HOST = "bench"
CLASSES = ("native", "throttled")
TIME_LIMIT = "120s"


def biossd(*argv: str, cwd: Path | None = None, capture: bool = False) -> str:
    exe = shutil.which("biossd") or sys.exit("biossd is not on PATH (run from the project's .venv)")
    proc = subprocess.run([exe, *argv], cwd=cwd, text=True, stdout=subprocess.PIPE if capture else None)
    if proc.returncode not in (0,):
        raise SystemExit(f"biossd {' '.join(argv[:3])} ... failed ({proc.returncode})")
    return proc.stdout or ""


def plan(tools: str, repeats: int) -> dict:
    params = {**FULL_PARAMS, "tools": tools, "host": HOST, "storage_classes": ",".join(CLASSES), "repeats": repeats}
    body = json.loads(biossd("study", "plan", "--params", json.dumps(params), capture=True))
    if body["problems"]:
        raise SystemExit("the plan has problems: " + "; ".join(body["problems"]))
    return body


def run_one(task: dict, inputs: Path, scratch_root: Path, results: Path) -> None:
    out = results / task["publish"]
    if (out / "run.json").is_file():
        return  # a re-run of the benchmark keeps what it measured
    scratch = scratch_root / f"biossd-bench-{task['tool']}-{task['rep']}"
    scratch.mkdir(parents=True)
    try:
        argv = biossd("catalogue", "stage", "--print0", "--mem", task["mem"], task["tool"],
                      "--input", str(inputs / task["input"]), "--scratch", str(scratch), capture=True)
        command = [a for a in argv.split("\0") if a]
        version = biossd("catalogue", "version", task["tool"], capture=True).strip()
        labels = [f"--label={k}={v}" for k, v in task["labels"].items()]
        out.parent.mkdir(parents=True, exist_ok=True)
        biossd("profile", "--mem", task["mem"], "--out", str(out), "--timeout", TIME_LIMIT, *labels,
               f"--label=tool_version={version}", "--tool-version", version,
               "--device-record", str(results / f"{HOST}-{task['storage']}" / layout.DEVICE_RECORD),
               "--", *command, cwd=scratch)
    finally:
        shutil.rmtree(scratch, ignore_errors=True)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--out", required=True, type=Path, help="the result folder (created; kept)")
    ap.add_argument("--tools", default=DEFAULT_TOOLS)
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--read-mbs", type=float, default=40.0, help="the throttled device's read MB/s")
    ap.add_argument("--read-iops", type=int, default=400, help="the throttled device's read IOPS")
    ap.add_argument("--budget", default="60s", help="characterize's time budget per class")
    ap.add_argument("--size", default="3G", help="each loop device's size")
    args = ap.parse_args()

    results = args.out.resolve() / "results"
    root = args.out.resolve() / "storage"
    inputs = args.out.resolve() / "inputs"
    owner = ProcessRef.of(os.getpid(), "benchmarks/predict_third_device.py")
    the_plan = plan(args.tools, args.repeats)
    for item in the_plan["inputs"]:
        if not (inputs / item["id"]).is_dir():
            biossd("data", "synth", item["kind"], "-o", str(inputs / item["id"]), "--size", item["size"],
                   "--seed", str(FULL_PARAMS["seed"]), "--scale", str(item["scale"]))
    resolved = storage.up(list(CLASSES), root, {c: "native" for c in CLASSES}, parse_size(args.size), owner=owner)
    try:
        throttle = iothrottle.IoThrottle(resolved["throttled"]["device"], read_bps=int(args.read_mbs * 1e6),
                                         read_iops=args.read_iops)
        with throttle:
            for name in CLASSES:
                record = results / f"{HOST}-{name}" / layout.DEVICE_RECORD
                record.parent.mkdir(parents=True, exist_ok=True)
                if not record.is_file():
                    biossd("device", "characterize", resolved[name]["scratch"], "--budget", args.budget,
                           "-o", str(record))
            (results / "pipeline_info").mkdir(parents=True, exist_ok=True)
            (results / "pipeline_info" / "throttle.json").write_text(json.dumps(throttle.record(), indent=2) + "\n")
            for task in sorted(the_plan["tasks"], key=lambda t: t["order"]):
                run_one(task, inputs, Path(resolved[task["storage"]]["scratch"]), results)
    finally:
        for line in storage.down(root, owner):
            print(f"storage down: {line}", file=sys.stderr)
    biossd("features", str(results), "-o", str(results / layout.FEATURES_FILE))

    a = analysis.open_results([results], fast="native", slow="throttled")
    val = a.cross_prediction
    cols = ["tool", "direction", "measured_source_s", "measured_target_s", "predicted_target_s", "error", "why"]
    print(val[cols].round(3).to_string(index=False))
    print(a.predicted_speedups[["tool", "measured_speedup", "predicted_speedup", "measured_group",
                                "predicted_group"]].round(3).to_string(index=False))
    summary = predict.validation_summary(val, a.predicted_speedups)
    print(json.dumps(summary, indent=1))
    print(f"throttle: {json.dumps(throttle.record())}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
