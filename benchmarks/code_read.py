"""What a capped run reads of its tool's code after its warm-up, when the code was only run, read
whole, or read whole and held resident (docs/study.md, "Code is not data", amended 2026-11-28 and
2026-11-29).

  sudo .venv/bin/python benchmarks/code_read.py [--tool gatk_baserecalibrator] [--repeats 3] [--idle-s 90]

Each repeat, for each arm side by side (alternating which goes first): the page cache dropped
whole, the tool's warm-up on 1/64 of its input uncapped (``--read-code`` in the arms ``read whole``
and ``held``; in ``held`` with an owner, a process that lives until the arm's capped run has
ended, so that :mod:`biossd.host.codeholder` holds the code), ``--idle-s`` seconds with nothing
running (in a study the other tools' runs come between a tool's warm-up and its capped runs, and a
host that pages out idle memory takes code back meanwhile), then one run on the full input under
the cap F + M of the committed sizing record's data memory M for the tool (its settings too) and F
measured here first, as a study does (the median resident peak of three uncapped runs on 1/64 of
the input after a warm-up). The class is the study's native one (``biossd storage up --emulate
ssd=native``: a loop device over a file on the host's disk, its own file system), so what a run
brings into the page cache from any other device is code. Prints, per arm, the median bytes the
capped run brought into the page cache from each other device (its block trace's
``page_cache.bytes_by_device``) and the median of its wall time, and writes them with every run's
figures to ``--out``.
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
import time
from pathlib import Path

from biossd.core import owners, signals
from biossd.core.units import format_size, parse_size
from biossd.study import catalogue
from biossd.study.sizing import procedure, rule

HERE = Path(__file__).resolve().parent
#: Each arm's warm-up options and whether its code is held for an owner until the capped run ends.
ARMS = {"ran only": ([], False), "read whole": (["--read-code"], False), "held": (["--read-code"], True)}
#: The class's file system: room for the tool's prepared inputs and a run's scratch.
CLASS_SIZE = "2G"


def _biossd(*args: str, cwd: Path | None = None, env: dict[str, str] | None = None) -> None:
    proc = subprocess.run(["biossd", *args], capture_output=True, text=True, cwd=cwd, env=env)
    if proc.returncode != 0:
        sys.exit(f"biossd {' '.join(args)} failed ({proc.returncode}): {proc.stderr.strip()[-800:]}")


def _run(tool: str, prepared: Path, work: Path, out: Path, mem: list[str], sets: list[str], extra: list[str],
         env: dict[str, str] | None = None) -> dict:
    _biossd("catalogue", "run", tool, "--input", str(prepared), "--scratch", str(work / "scratch"), "--out", str(out),
            *mem, *sets, *extra, env=env)
    return json.loads((out / "run.json").read_text())


def _arm(tool: str, arm: str, rep: int, prepared: dict[str, Path], class_dir: Path, work: Path, sets: list[str],
         cap: int, idle_s: float) -> dict:
    """One arm of one repeat: the warm-up, the idle time, the capped run; its row."""
    warm_args, held = ARMS[arm]
    base = work / f"{rep}-{arm.replace(' ', '-')}"
    owner = subprocess.Popen(["sleep", "infinity"]) if held else None
    env = {k: v for k, v in os.environ.items() if k != owners.OWNER_ENV}
    if owner is not None:
        env[owners.OWNER_ENV] = owners.environment_value("benchmarks/code_read.py", owner.pid)
    try:
        warm = _run(tool, prepared["small"], class_dir, base / "warm", ["--mem", "none", "--uncapped"], sets,
                    ["--evict", "all", *warm_args], env=env)
        time.sleep(idle_s)
        # Swap on the class, as the study's capped runs have (docs/study.md).
        capped = _run(tool, prepared["full"], class_dir, base / "capped", ["--mem", str(cap), "--swap", rule.SWAP_SIZE],
                      sets, [])
    finally:
        if owner is not None:
            owner.kill()
            owner.wait()
    cache = capped["collectors"]["blocktrace"].get("page_cache") or {}
    code = warm.get("code_read") or {}
    print(f"  #{rep} {arm:<10} held {(code.get('held') or {}).get('bytes', 0) >> 20:>4} MiB; capped "
          f"{capped['outcome']:<7} {capped['wall_s']:6.2f} s; code brought in {cache.get('bytes_by_device')}",
          file=sys.stderr)
    return {"rep": rep, "arm": arm, "warmup_code_read": code, "capped_outcome": capped["outcome"],
            "capped_wall_s": capped["wall_s"], "capped_code_bytes_by_device": cache.get("bytes_by_device"),
            "capped_code_files": cache.get("files")}


def main() -> int:
    """Interrupted (SIGINT, SIGTERM, SIGHUP), it still takes its storage down and removes its files."""
    with signals.signals_raise(lambda signum: KeyboardInterrupt(f"signal {signum}")):
        return _main()


def _main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--tool", default="gatk_baserecalibrator")
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--idle-s", type=float, default=90.0, help="seconds between the warm-up and the capped run")
    ap.add_argument("--arms", default=",".join(ARMS), help=f"which arms (of {', '.join(ARMS)})")
    ap.add_argument("--sizing", default=str(HERE / "sizing-2026-11-28-amended-1.json"))
    ap.add_argument("--out", default=str(HERE / f"code-read-{dt.date.today().isoformat()}.json"))
    args = ap.parse_args()
    arms = args.arms.split(",")
    if set(arms) - set(ARMS):
        ap.error(f"--arms: {', '.join(sorted(set(arms) - set(ARMS)))} is not an arm (the arms: {', '.join(ARMS)})")
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
            for arm in (arms if rep % 2 == 0 else arms[::-1]):
                rows.append(_arm(tool, arm, rep, prepared, class_dir, work, sets, cap, args.idle_s))
    finally:
        subprocess.run(["biossd", "storage", "down", "--root", str(root)], capture_output=True)
        shutil.rmtree(work, ignore_errors=True)
    summary = {}
    for arm in arms:
        mine = [r for r in rows if r["arm"] == arm]
        devices = sorted({d for r in mine for d in (r["capped_code_bytes_by_device"] or {})})
        summary[arm] = {"capped_wall_s_median": statistics.median(r["capped_wall_s"] for r in mine),
                        "code_bytes_median_by_device": {d: statistics.median((r["capped_code_bytes_by_device"] or {}).get(d, 0)
                                                                             for r in mine) for d in devices}}
        print(f"{arm:<10}: capped run {summary[arm]['capped_wall_s_median']:.2f} s (median); code brought in, "
              f"median: {summary[arm]['code_bytes_median_by_device']}")
    body = {"tool": tool, "sizing": args.sizing, "idle_s": args.idle_s, "floor_bytes": floor, "cap_bytes": cap,
            "input_bytes": full, "warmup_input_bytes": small,
            "host": os.uname().nodename, "created": dt.datetime.now(dt.timezone.utc).isoformat(timespec="seconds"),
            "summary": summary, "runs": rows}
    tmp = Path(args.out + ".partial")
    tmp.write_text(json.dumps(body, indent=1) + "\n")
    os.replace(tmp, args.out)
    return 0


if __name__ == "__main__":
    sys.exit(main())
