"""The input-size rule of the one-machine study (issue 16), measured: for each input kind, every
runnable tool that reads it, profiled on the native disk under the study's cap at sizes on a
doubling ladder, until one of them takes longer than the per-run budget.

  .venv/bin/python benchmarks/sizing.py [--cap 256M] [--budget-s 15] [--max 64M] [--kinds reads,bam]

The rule (written once in :mod:`biossd.study.sizing`, quoted in ``nextflow/conf/full.config``): each
kind's input is the largest size on the ladder at which every one of its tools that ends ``ok``
finishes within the budget on the native disk — the paper's own criterion (§5.1: each input
"of appropriate size that can be processed in a reasonable amount of time", there under 72 h),
scaled to a study that must end within 45 minutes here. Runs ending ``oom`` or ``failed`` do not
bound the size (they stay in the study as such). Prints one line per run and, per kind, the
size the rule gives.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import tempfile
from pathlib import Path

from biossd.core.units import format_size, parse_size
from biossd.study import catalogue, data, sizing


def run_one(tool: str, kind_dir: Path, work: Path, cap: str, budget_s: float) -> dict:
    """One profiled run of ``tool`` on the native disk (``work``), as the study's PROFILE does."""
    scratch = work / f"scratch-{tool}"
    scratch.mkdir()
    argv = subprocess.run(["biossd", "catalogue", "stage", "--print0", "--mem", cap, tool, "--input", str(kind_dir),
                           "--scratch", str(scratch)], check=True, capture_output=True).stdout.split(b"\0")
    argv = [a.decode() for a in argv if a]
    out = work / f"run-{tool}"
    # Twice the budget as the limit: a run over budget is known to be over without waiting long.
    subprocess.run(["biossd", "profile", "--mem", cap, "--out", str(out), "--timeout", str(2 * budget_s),
                    "--swap", sizing.SWAP_SIZE, "--", *argv], cwd=scratch, check=True, capture_output=True)
    body = json.loads((out / "run.json").read_text())
    subprocess.run(["rm", "-rf", str(scratch), str(out)], check=True)
    return {"outcome": body["outcome"], "wall_s": body["wall_s"]}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--cap", default=sizing.CAP, help="the cap of non-GATK tools (GATK: x4)")
    ap.add_argument("--budget-s", type=float, default=sizing.NATIVE_BUDGET_S)
    ap.add_argument("--min", default=sizing.LADDER_MIN)
    ap.add_argument("--max", default=sizing.LADDER_MAX)
    ap.add_argument("--kinds", default="", help="comma-separated kinds (default: every kind a runnable tool reads)")
    ap.add_argument("--seed", type=int, default=7)
    args = ap.parse_args()
    entries = [e for e in catalogue.load_all() if e.kind == "tool" and e.data["status"] == "runnable"]
    by_kind: dict[str, list[catalogue.Entry]] = {}
    for e in entries:
        by_kind.setdefault(e.data["input"], []).append(e)
    kinds = [k for k in (args.kinds.split(",") if args.kinds else sorted(by_kind)) if k]
    chosen = {}
    with tempfile.TemporaryDirectory(dir="/var/tmp", prefix="biossd-sizing-") as tmp:
        for kind in kinds:
            size = parse_size(args.min)
            best = None
            while size <= parse_size(args.max):
                kind_dir = Path(tmp) / f"{kind}-{size}"
                data.synth(kind, kind_dir, size, args.seed, 1)
                over = False
                for e in by_kind[kind]:
                    cap = sizing.cap_of(e.id, args.cap)
                    work = Path(tempfile.mkdtemp(dir=tmp))
                    r = run_one(e.id, kind_dir, work, cap, args.budget_s)
                    os.rmdir(work)
                    over |= r["outcome"] == "timeout" or (r["outcome"] == "ok" and r["wall_s"] > args.budget_s)
                    print(f"{kind:<11} {format_size(size):>6} {e.id:<22} cap {cap:<5} {r['outcome']:<8} "
                          f"{r['wall_s']:7.1f} s", flush=True)
                subprocess.run(["rm", "-rf", str(kind_dir)], check=True)
                if over:
                    break
                best = size
                size *= 2
            chosen[kind] = format_size(best) if best else f"below {args.min}"
            print(f"==> {kind}: {chosen[kind]}", flush=True)
    print(json.dumps(chosen, indent=2))


if __name__ == "__main__":
    main()
