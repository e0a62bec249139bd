"""Does this host take cached code back while it idles, with memory to spare, and does a holder
that maps and locks the files keep it? (docs/study.md, "Code is not data", found on 2026-11-28.)

  sudo .venv/bin/python benchmarks/code_eviction.py [--idle-s 120] [--repeats 2] [FILE ...]

The files default to the JDK's largest code (``lib/modules`` and ``libjvm.so`` of the ``java`` on
PATH), what the study's capped GATK runs read again from the root disk. Each repeat runs two arms
one after the other, alternating which goes first: each file read whole into the page cache, then
``--idle-s`` seconds in which nothing reads it — in the arm ``held`` a process of its own maps each
file and locks it in memory (``mlock``) for those seconds, in the arm ``idle`` nothing holds it.
Every ``--every-s`` seconds the script notes the files' resident bytes (util-linux ``fincore``), the
host's available memory, and the bytes each running DAMON scheme has applied its action to
(``stats/sz_applied``, refreshed by writing ``update_schemes_stats`` to its kdamond's ``state``:
a command that refreshes the scheme's counters and changes nothing else). With gigabytes
available the kernel's own reclaim takes nothing, so what leaves is the host's proactive reclaim.
Prints per arm the median share still resident at each time, and writes every sample to ``--out``.
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
import time
from pathlib import Path

from biossd.host import codeholder, hostfacts

HERE = Path(__file__).resolve().parent
DAMON_ADMIN = Path("/sys/kernel/mm/damon/admin")
READ_CHUNK_BYTES = 1 << 20


def java_code() -> list[Path]:
    """The JDK's ``lib/modules`` and ``lib/server/libjvm.so`` of the ``java`` on PATH."""
    java = shutil.which("java")
    if java is None:
        sys.exit("code_eviction: no java on PATH; name the files to test")
    home = Path(java).resolve().parents[1]
    files = [home / "lib" / "modules", home / "lib" / "server" / "libjvm.so"]
    return [f for f in files if f.is_file()]


def read_whole(path: Path) -> None:
    with open(path, "rb") as f:
        while f.read(READ_CHUNK_BYTES):
            pass


def resident_bytes(paths: list[Path]) -> dict[str, int]:
    """Each file's bytes in the page cache (``fincore``)."""
    out = subprocess.run(["fincore", "--bytes", "--noheadings", "--raw", "--output", "RES,FILE", *map(str, paths)],
                         capture_output=True, text=True, check=True).stdout
    return {line.split(" ", 1)[1]: int(line.split(" ", 1)[0]) for line in out.splitlines() if line.strip()}


def damon_applied_bytes() -> dict[str, int]:
    """Per running DAMON scheme that evicts (``kdamond/context/scheme``): the bytes its action has
    been applied to, its counters refreshed first."""
    out: dict[str, int] = {}
    for kdamond in sorted(DAMON_ADMIN.glob("kdamonds/[0-9]*")):
        if (kdamond / "state").read_text().strip() != "on":
            continue
        (kdamond / "state").write_text("update_schemes_stats")
        for scheme in sorted(kdamond.glob("contexts/[0-9]*/schemes/[0-9]*")):
            if (scheme / "action").read_text().strip() in hostfacts.EVICTING_ACTIONS:
                name = "/".join(scheme.relative_to(kdamond.parent).parts[::2])
                out[name] = int((scheme / "stats" / "sz_applied").read_text())
    return out


def available_bytes() -> int:
    for line in Path("/proc/meminfo").read_text().splitlines():
        if line.startswith("MemAvailable:"):
            return int(line.split()[1]) * 1024
    return -1


def start_holder(paths: list[Path]) -> subprocess.Popen:
    """A process of its own that maps each file whole and locks its pages (:func:`hold`)."""
    proc = subprocess.Popen([sys.executable, __file__, "--hold", *map(str, paths)], stdin=subprocess.PIPE,
                            stdout=subprocess.PIPE, text=True)
    said = proc.stdout.readline().strip()
    if said != "ready":
        proc.kill()
        proc.wait()
        sys.exit(f"code_eviction: the holder could not map and lock the files ({said or 'it ended'})")
    return proc


def hold(paths: list[str]) -> None:
    """The holder's body: each file mapped shared and read-only and its pages locked, as the
    study's code holder does (:func:`biossd.host.codeholder.lock_files`), ``ready`` said, then a
    wait for stdin to close."""
    try:
        codeholder.lock_files([os.open(name, os.O_RDONLY) for name in paths])
    except OSError as err:
        print(err.strerror, flush=True)
        return
    print("ready", flush=True)
    sys.stdin.read()


def arm(name: str, paths: list[Path], idle_s: float, every_s: float) -> dict:
    """One arm: the files read whole, then ``idle_s`` seconds with (``held``) or without a holder,
    sampled every ``every_s`` seconds."""
    for path in paths:
        read_whole(path)
    holder = start_holder(paths) if name == "held" else None
    samples = []
    start = time.monotonic()
    try:
        while True:
            t = time.monotonic() - start
            samples.append({"t_s": round(t, 1), "resident_bytes": resident_bytes(paths),
                            "available_bytes": available_bytes(), "damon_applied_bytes": damon_applied_bytes()})
            if t >= idle_s:
                break
            time.sleep(min(every_s, idle_s - t) if idle_s > t else every_s)
    finally:
        if holder is not None:
            holder.stdin.close()
            holder.wait()
    return {"arm": name, "samples": samples}


def share_resident(sample: dict, sizes: dict[str, int]) -> float:
    return sum(sample["resident_bytes"].values()) / sum(sizes.values())


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("files", nargs="*", type=Path)
    parser.add_argument("--idle-s", type=float, default=120.0)
    parser.add_argument("--every-s", type=float, default=15.0)
    parser.add_argument("--repeats", type=int, default=2)
    parser.add_argument("--out", type=Path, default=HERE / f"code-eviction-{dt.date.today()}.json")
    args = parser.parse_args()
    if os.geteuid() != 0:
        sys.exit("code_eviction: run as root (DAMON's counters and mlock of whole files)")
    if not shutil.which("fincore"):
        sys.exit("code_eviction: fincore (util-linux) is missing")
    paths = [p.resolve() for p in (args.files or java_code())]
    sizes = {str(p): p.stat().st_size for p in paths}
    runs = []
    for repeat in range(args.repeats):
        order = ("idle", "held") if repeat % 2 == 0 else ("held", "idle")
        for name in order:
            runs.append({"repeat": repeat, **arm(name, paths, args.idle_s, args.every_s)})
            print(f"repeat {repeat} {name}: resident "
                  + " ".join(f"{s['t_s']:.0f}s {share_resident(s, sizes):.0%}" for s in runs[-1]["samples"]), flush=True)
    summary = {}
    for name in ("idle", "held"):
        mine = [r["samples"] for r in runs if r["arm"] == name]
        summary[name] = [{"t_s": column[0]["t_s"], "share_resident": statistics.median(share_resident(s, sizes) for s in column),
                          "damon_applied_bytes_since_start": statistics.median(
                              sum(s["damon_applied_bytes"].values()) - sum(column_start["damon_applied_bytes"].values())
                              for s, column_start in zip(column, [r[0] for r in mine]))}
                         for column in zip(*mine)]
        print(f"{name}: median share resident " + " ".join(f"{c['t_s']:.0f}s {c['share_resident']:.0%}" for c in summary[name]))
    body = {"date": dt.datetime.now(dt.timezone.utc).isoformat(timespec="seconds"), "host": hostfacts.host_facts(),
            "files": sizes, "idle_s": args.idle_s, "every_s": args.every_s, "repeats": args.repeats,
            "summary": summary, "runs": runs}
    tmp = args.out.with_name(args.out.name + ".tmp")
    tmp.write_text(json.dumps(body, indent=1) + "\n")
    tmp.replace(args.out)
    print(f"wrote {args.out}")


if __name__ == "__main__":
    if sys.argv[1:2] == ["--hold"]:
        hold(sys.argv[2:])
    else:
        main()
