"""The sizing rule of the one-machine study, measured on this machine (the rule itself is written
once, in :mod:`biossd.study.sizing`): per program an input, per program a floor, one data memory
M for all, the tools' memory settings divided by D = 1 GB / M, and each cap F + M.

  .venv/bin/python benchmarks/sizing.py [--tools all] [--budget-s 5] [--out sizing.json]

Steps, each a profiled run on the native disk (``/var/tmp``) with the page cache dropped:

1. **Inputs.** For each input group (the GATK steps share one input, and the aligners of Fig. 1
   another; every other tool is its own group), a doubling ladder from ``LADDER_MIN``, uncapped:
   the group's input is the largest size at which each of its tools' runs adds at most the budget
   over its run at 1/FLOOR_DIVISOR of that size (its start-up excluded). JVM tools run the ladder
   with a generous heap.
2. **Heaps.** For each JVM tool, the smallest heap on a doubling ladder that completes its input
   (and, for the record, the smallest that completes 1/FLOOR_DIVISOR of it); its heap size is
   HEAP_MARGIN times that, not pre-touched.
3. **Floors.** Each tool's peak resident memory (every process of the run, from its cgroup)
   uncapped on 1/FLOOR_DIVISOR of its input (JVM tools with their heap size).
4. **M, D, caps.** M = median of the non-GATK inputs / INPUT_PER_MEMORY; the GATK steps' M is
   their input / INPUT_PER_MEMORY; AmpliconNoise's input is the paper's 2,000-read baseline
   scaled by √(M / 1 GB). Cap = F + M.
5. **Time.** Each tool capped (F + M, with the class's swap) on the native disk: an input whose
   run exceeds TIME_LIMIT_S / CENSORED_MIN_SPEEDUP is halved until it fits.
6. **Data.** Each tool uncapped at its final input: its peak resident memory less F, over M (the
   regime's data / M, which a capped run cannot show).

Prints one line per run, then the parameters of ``nextflow/conf/full.config`` and a JSON record
(``--out``) with every measurement.
"""

from __future__ import annotations

import argparse
import json
import shutil
import subprocess
import tempfile
from pathlib import Path

from biossd.core.units import format_size, parse_size
from biossd.study import catalogue, sizing
from biossd.study.inputs import data, synthgen

JVM_LADDER_HEAP = "1G"
#: An input over L / 2 capped is halved until it fits, at most this many times.
MAX_HALVINGS = 8


def is_jvm(entry: catalogue.Entry) -> bool:
    return any(o["rule"] == "heap" for o in entry.memory_options())


def run_one(entry: catalogue.Entry, input_dir: Path, tmp: Path, cap: str | None, settings: dict[str, str],
            timeout_s: float) -> dict:
    """One profiled run of ``entry`` as the study's PROFILE does it (stage, then profile)."""
    work = Path(tempfile.mkdtemp(dir=tmp))
    scratch, out = work / "scratch", work / "run"
    scratch.mkdir()
    sets = [a for k, v in settings.items() for a in ("--set", f"{k}={v}")]
    argv = subprocess.run(["biossd", "catalogue", "stage", "--print0", *sets, entry.id, "--input", str(input_dir),
                           "--scratch", str(scratch)], check=True, capture_output=True).stdout.split(b"\0")
    argv = [a.decode() for a in argv if a]
    swap = ["--swap", sizing.SWAP_SIZE] if cap else []
    subprocess.run(["biossd", "profile", "--mem", cap or "none", "--out", str(out), "--timeout", str(timeout_s),
                    *swap, "--", *argv], cwd=scratch, check=True, capture_output=True)
    body = json.loads((out / "run.json").read_text())
    usage = json.loads((out / "rusage.json").read_text()) if (out / "rusage.json").is_file() else {}
    shutil.rmtree(work)
    resident = (body["memory_cap"].get("resident") or {})
    return {"outcome": body["outcome"], "wall_s": body["wall_s"], "max_rss_kib": usage.get("max_rss_kib"),
            "resident_peak_bytes": resident.get("peak_bytes"), "major_faults": usage.get("major_faults")}


class Inputs:
    """Synthetic inputs made once per (kind, size) under ``tmp``."""

    def __init__(self, tmp: Path, seed: int):
        self.tmp, self.seed, self.made = tmp, seed, {}

    def get(self, kind: str, size: int) -> Path:
        key = (kind, size)
        if key not in self.made:
            out = self.tmp / f"in-{kind}-{size}"
            data.synth(kind, out, size, self.seed, 1)
            self.made[key] = out
        return self.made[key]


def log(*parts) -> None:
    print(" ".join(str(p) for p in parts), flush=True)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--tools", default="all", help="comma-separated ids (default: every runnable tool)")
    ap.add_argument("--budget-s", type=float, default=sizing.INPUT_BUDGET_S)
    ap.add_argument("--max", default=sizing.LADDER_MAX)
    ap.add_argument("--seed", type=int, default=7)
    ap.add_argument("--out", default="", help="write every measurement as JSON here")
    args = ap.parse_args()
    entries = {e.id: e for e in catalogue.load_all() if e.kind == "tool" and e.data["status"] == "runnable"}
    if args.tools != "all":
        entries = {t: entries[t] for t in args.tools.split(",")}
    groups: dict[str, list[str]] = {}
    for tool in sorted(entries):
        if tool in sizing.PAPER_BASELINE_READS:
            continue  # sized from M (step 4)
        key = "gatk" if sizing.is_gatk(tool) else "fig1" if tool in sizing.FIG1_TOOLS else tool
        groups.setdefault(key, []).append(tool)
    record: dict = {"budget_s": args.budget_s, "runs": []}
    limit = 4 * args.budget_s + 30
    with tempfile.TemporaryDirectory(dir="/var/tmp", prefix="biossd-sizing-") as tmp_name:
        tmp = Path(tmp_name)
        inputs = Inputs(tmp, args.seed)
        heap_of = {t: {"java_mem": JVM_LADDER_HEAP} for t in entries if is_jvm(entries[t])}

        def run(tool: str, size: int, cap: str | None, settings: dict, step: str, timeout: float = limit) -> dict:
            r = run_one(entries[tool], inputs.get(entries[tool].data["input"], size), tmp, cap, settings, timeout)
            r.update(tool=tool, size=size, cap=cap, step=step, settings=settings)
            record["runs"].append(r)
            log(f"{step:<6} {tool:<22} {format_size(size):>6} cap {cap or 'none':<6} {r['outcome']:<8} "
                f"{r['wall_s']:7.2f} s  resident {(r['resident_peak_bytes'] or 0) >> 10:>8} KiB  "
                f"largest process {r['max_rss_kib'] or 0:>8} KiB  {settings or ''}")
            return r

        # 1. Inputs per program (per shared group).
        chosen: dict[str, int] = {}
        for key, tools in groups.items():
            times: dict[str, dict[int, float | None]] = {t: {} for t in tools}
            size, best = parse_size(sizing.LADDER_MIN), None
            while size <= parse_size(args.max):
                over, all_ok = False, True
                for tool in tools:
                    r = run(tool, size, None, heap_of.get(tool, {}), "input")
                    # A timeout is over budget; a failure (too small an input for the tool, e.g.
                    # ABySS's distance estimate with few pairs) qualifies no size but goes on.
                    times[tool][size] = (float("inf") if r["outcome"] == "timeout" else
                                         r["wall_s"] if r["outcome"] == "ok" else None)
                    all_ok &= times[tool][size] is not None
                    low = max(size // sizing.FLOOR_DIVISOR, parse_size(sizing.LADDER_MIN))
                    if low not in times[tool]:
                        rr = run(tool, low, None, heap_of.get(tool, {}), "input")
                        times[tool][low] = rr["wall_s"] if rr["outcome"] == "ok" else None
                    ref = next((times[tool][k] for k in sorted(times[tool]) if k >= low and times[tool][k] is not None),
                               None)
                    if times[tool][size] is not None and ref is not None:
                        over |= times[tool][size] - ref > args.budget_s
                if over:
                    break
                if all_ok:
                    best = size
                size *= 2
            if best is None:
                log(f"==> {key}: no size on the ladder ends ok within the budget; left out of the sizing")
                continue
            for tool in tools:
                chosen[tool] = best
            log(f"==> input of {key}: {format_size(best)}")

        # 2. Fixed heaps of the JVM tools.
        heaps: dict[str, str] = {}
        smallest_heaps: dict[str, dict[str, str]] = {}

        def smallest_heap(tool: str, size: int, step: str) -> int:
            heap = parse_size(sizing.HEAP_LADDER_MIN)
            while heap <= parse_size(sizing.HEAP_LADDER_MAX):
                if run(tool, size, None, {"java_mem": format_size(heap)}, step)["outcome"] == "ok":
                    break
                heap *= 2
            return heap

        for tool in sorted(heap_of):
            if tool not in chosen:
                continue
            heap = smallest_heap(tool, chosen[tool], "heap")
            small = smallest_heap(tool, max(chosen[tool] // sizing.FLOOR_DIVISOR, parse_size("16K")), "heap64")
            smallest_heaps[tool] = {"input": format_size(heap), "input_over_floor_divisor": format_size(small)}
            heaps[tool] = format_size(sizing.HEAP_MARGIN * heap)
            heap_of[tool] = {"java_mem": heaps[tool]}
            log(f"==> heap of {tool}: {heaps[tool]} ({sizing.HEAP_MARGIN} x {format_size(heap)}; "
                f"{format_size(small)} completes 1/{sizing.FLOOR_DIVISOR} of the input)")

        # 4 (first half). M and D from the inputs; AmpliconNoise's baseline from M.
        others = [chosen[t] for t in chosen if not sizing.is_gatk(t)]
        m = sizing.data_memory_bytes(others)
        d = sizing.memory_divisor(m)
        for tool in entries:
            n = sizing.baseline_reads(tool, m)
            if n is not None:
                chosen[tool] = n * (synthgen.FLOWS_PER_READ * 5 + 20)
                log(f"==> input of {tool}: {n} reads, {format_size(chosen[tool])}")
        gatk_inputs = [chosen[t] for t in chosen if sizing.is_gatk(t)]
        m_gatk = sizing.data_memory_bytes(gatk_inputs[:1]) if gatk_inputs else None

        # 3. Floors, with the rule's settings.
        def settings_of(tool: str) -> dict[str, str]:
            return entries[tool].settings(d, heap_of.get(tool, {}))

        floors: dict[str, int] = {}
        for tool in sorted(chosen):
            small = max(chosen[tool] // sizing.FLOOR_DIVISOR, parse_size("16K"))
            r = run(tool, small, None, settings_of(tool), "floor")
            if r["resident_peak_bytes"] is None:
                raise SystemExit(f"{tool}: the floor run has no resident memory (run as root, with a memory cgroup)")
            floors[tool] = sizing.floor_bytes(r["resident_peak_bytes"])

        # 5. The time limit: the capped native run within L / 2, else halve.
        caps: dict[str, int] = {}
        for tool in sorted(chosen):
            mem = m_gatk if sizing.is_gatk(tool) else m
            caps[tool] = sizing.cap_bytes(floors[tool], mem)
            for _ in range(MAX_HALVINGS):
                r = run(tool, chosen[tool], format_size(caps[tool]), settings_of(tool), "capped",
                        timeout=sizing.TIME_LIMIT_S)
                if r["outcome"] in ("ok", "oom", "failed") and sizing.fits_time_limit(r["wall_s"]):
                    break
                if sizing.is_gatk(tool) or tool in sizing.FIG1_TOOLS or tool in sizing.PAPER_BASELINE_READS:
                    log(f"==> {tool}: over L/2 but its input is shared or the paper's; kept")
                    break
                chosen[tool] //= 2
                log(f"==> {tool}: over L/2 capped: input halved to {format_size(chosen[tool])}")

        # 6. The regime's data / M: uncapped at the final input.
        data_over_m: dict[str, float] = {}
        for tool in sorted(chosen):
            r = run(tool, chosen[tool], None, settings_of(tool), "data")
            mem = m_gatk if sizing.is_gatk(tool) else m
            if r["outcome"] == "ok" and r["resident_peak_bytes"] is not None:
                data_over_m[tool] = round((r["resident_peak_bytes"] - floors[tool]) / mem, 3)

    record.update(inputs={t: format_size(s) for t, s in chosen.items()}, heaps=heaps, smallest_heaps=smallest_heaps,
                  data_over_m=data_over_m,
                  floors={t: format_size(f) for t, f in floors.items()}, data_memory=format_size(m),
                  data_memory_gatk=format_size(m_gatk) if m_gatk else None, memory_divisor=round(d, 1),
                  caps={t: format_size(c) for t, c in caps.items()})
    fig9 = {t: [format_size(c) for c in sizing.fig9_caps(floors[t], chosen[t])] for t in chosen if sizing.is_gatk(t)}
    record["fig9_caps"] = fig9
    tool_caps = ";".join(f"{t}={','.join(fig9.get(t, [format_size(caps[t])]))}" for t in sorted(caps))
    kinds: dict[str, int] = {}
    for t, s in chosen.items():
        k = entries[t].data["input"]
        kinds[k] = min(kinds.get(k, s), s)
    print("\n# nextflow/conf/full.config (benchmarks/sizing.py):")
    print(f"    tool_caps        = '{tool_caps}'")
    print(f"    tool_input_sizes = '{';'.join(f'{t}={format_size(s)}' for t, s in sorted(chosen.items()))}'")
    print(f"    input_sizes      = '{','.join(f'{k}={format_size(s)}' for k, s in sorted(kinds.items()))}'")
    print(f"    data_memory      = '{format_size(m)}'  // D = 1 GB / M = {d:.1f}")
    print(f"    java_heaps       = '{';'.join(f'{t}={h}' for t, h in sorted(heaps.items()))}'")
    print(json.dumps({k: v for k, v in record.items() if k != "runs"}, indent=2))
    if args.out:
        Path(args.out).write_text(json.dumps(record, indent=2) + "\n")


if __name__ == "__main__":
    main()
