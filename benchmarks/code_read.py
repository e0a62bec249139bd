"""What a capped run reads of its tool's code, after a warm-up that only ran and after one that read
its code whole (docs/study.md, "Code is not data", amended 2026-11-28).

  sudo .venv/bin/python benchmarks/code_read.py [--tool gatk_baserecalibrator] [--repeats 3]

Each repeat, for each arm side by side (alternating which goes first): the page cache dropped
whole, the tool's warm-up on 1/64 of its input uncapped (``--read-code`` in the arm ``read whole``,
not in ``ran only``), then one run on the full input under the cap F + M of the committed sizing
record's data memory M for the tool (its settings too) and F measured here first, as a study
does (the median resident peak of three uncapped runs on 1/64 of the input after a warm-up). The class is the study's native
one (``biossd storage up --emulate ssd=native``: a loop device over a file on the host's disk, its
own file system), so what a run brings into the page cache from any other device is code. Prints,
per arm, the median bytes the capped run brought into the page cache from each other device (its
block trace's ``page_cache.bytes_by_device``) and the median of its wall time, and writes them
with every run's figures to ``--out``.
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

from biossd.core.units import format_size, parse_size
from biossd.study import catalogue
from biossd.study.sizing import procedure, rule

HERE = Path(__file__).resolve().parent
ARMS = {"ran only": [], "read whole": ["--read-code"]}
#: The class's file system: room for the tool's prepared inputs and a run's scratch.
CLASS_SIZE = "2G"


def _biossd(*args: str, cwd: Path | None = None) -> None:
    proc = subprocess.run(["biossd", *args], capture_output=True, text=True, cwd=cwd)
    if proc.returncode != 0:
        sys.exit(f"biossd {' '.join(args)} failed ({proc.returncode}): {proc.stderr.strip()[-800:]}")


def _run(tool: str, prepared: Path, work: Path, out: Path, mem: list[str], sets: list[str], extra: list[str]) -> dict:
    _biossd("catalogue", "run", tool, "--input", str(prepared), "--scratch", str(work / "scratch"), "--out", str(out),
            *mem, *sets, *extra)
    return json.loads((out / "run.json").read_text())


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--tool", default="gatk_baserecalibrator")
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--sizing", default=str(HERE / "sizing-2026-11-27.json"))
    ap.add_argument("--out", default=str(HERE / f"code-read-{dt.date.today().isoformat()}.json"))
    args = ap.parse_args()
    rec = procedure.load(Path(args.sizing))
    tool, chose = args.tool, rec["chose"]
    entry = catalogue.get(tool)
    full = chose["inputs"][tool]
    small = procedure.floor_size(full, parse_size(procedure.SMALLEST_INPUT))
    memory = chose["data_memory_gatk"] if tool.startswith("gatk_") else chose["data_memory"]
    settings = next(r["settings"] for r in reversed(rec["runs"]) if r["tool"] == tool and r["step"] == "capped")
    sets = [a for k, v in settings.items() for a in ("--set", f"{k}={v}")]
    work = Path(tempfile.mkdtemp(prefix="biossd-code-read-", dir="/var/tmp"))
    root = work / "storage"
    rows = []
    try:
        _biossd("storage", "up", "--root", str(root), "--classes", "ssd", "--emulate", "ssd=native", "--size", CLASS_SIZE,
                "-o", str(work / "storage.json"))
        class_dir = Path(json.loads((work / "storage.json").read_text())["ssd"]["scratch"])
        prepared = {}
        for name, size in (("small", small), ("full", full)):
            _biossd("data", "synth", entry.data["input"], "--size", str(size), "--seed", "7", "-o", str(work / f"in-{name}"))
            _biossd("catalogue", "prepare", tool, "--input", str(work / f"in-{name}"), "--out", str(class_dir / f"prep-{name}"))
            prepared[name] = class_dir / f"prep-{name}"
        peaks = [_run(tool, prepared["small"], class_dir, work / f"floor-{rep}", ["--mem", "none", "--uncapped"], sets,
                      [])["memory_cap"]["resident"]["peak_bytes"] for rep in range(1 + rule.FLOOR_REPEATS)][1:]
        floor = rule.floor_of(peaks)[0]
        cap = floor + memory
        print(f"{tool}: warm-up on {format_size(small)}, then {format_size(full)} capped at {format_size(cap)} "
              f"(F {format_size(floor)} here + M {format_size(memory)}); {' '.join(sets)}", file=sys.stderr)
        for rep in range(args.repeats):
            order = list(ARMS) if rep % 2 == 0 else list(ARMS)[::-1]
            for arm in order:
                base = work / f"{rep}-{arm.replace(' ', '-')}"
                warm = _run(tool, prepared["small"], class_dir, base / "warm", ["--mem", "none", "--uncapped"], sets,
                            ["--evict", "all", *ARMS[arm]])
                capped = _run(tool, prepared["full"], class_dir, base / "capped", ["--mem", str(cap)], sets, [])
                cache = capped["collectors"]["blocktrace"].get("page_cache") or {}
                rows.append({"rep": rep, "arm": arm, "warmup_code_read": warm.get("code_read"),
                             "capped_outcome": capped["outcome"], "capped_wall_s": capped["wall_s"],
                             "capped_code_bytes_by_device": cache.get("bytes_by_device"),
                             "capped_code_files": cache.get("files")})
                print(f"  #{rep} {arm:<10} capped {capped['outcome']:<7} {capped['wall_s']:6.2f} s; code brought in "
                      f"{cache.get('bytes_by_device')}", file=sys.stderr)
    finally:
        subprocess.run(["biossd", "storage", "down", "--root", str(root)], capture_output=True)
        shutil.rmtree(work, ignore_errors=True)
    summary = {}
    for arm in ARMS:
        mine = [r for r in rows if r["arm"] == arm]
        devices = sorted({d for r in mine for d in (r["capped_code_bytes_by_device"] or {})})
        summary[arm] = {"capped_wall_s_median": statistics.median(r["capped_wall_s"] for r in mine),
                        "code_bytes_median_by_device": {d: statistics.median((r["capped_code_bytes_by_device"] or {}).get(d, 0)
                                                                             for r in mine) for d in devices}}
        print(f"{arm:<10}: capped run {summary[arm]['capped_wall_s_median']:.2f} s (median); code brought in, "
              f"median: {summary[arm]['code_bytes_median_by_device']}")
    body = {"tool": tool, "sizing": args.sizing, "floor_bytes": floor, "cap_bytes": cap, "input_bytes": full,
            "warmup_input_bytes": small,
            "host": os.uname().nodename, "created": dt.datetime.now(dt.timezone.utc).isoformat(timespec="seconds"),
            "summary": summary, "runs": rows}
    tmp = Path(args.out + ".partial")
    tmp.write_text(json.dumps(body, indent=1) + "\n")
    os.replace(tmp, args.out)
    return 0


if __name__ == "__main__":
    sys.exit(main())
