"""The report's bytes on a synthetic result set, for a refactoring that must not change them.

    python benchmarks/report_checksums.py DIR > before.txt   # on the commit before
    python benchmarks/report_checksums.py DIR > after.txt    # on the commit after
    diff before.txt after.txt

``biossd data synth-results`` writes the same result set for the same seed, and the report renders
it deterministically (figures, tables): each figure's and table's sha256, one line each, sorted.
DIR must not exist (it is made and left for a look)."""

from __future__ import annotations

import argparse
import hashlib
import subprocess
import sys
from pathlib import Path


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("dir", type=Path, help="a new directory for the synthetic result set and its report")
    args = parser.parse_args()
    if args.dir.exists():
        parser.error(f"{args.dir} exists; give a new directory")
    biossd = [sys.executable, "-m", "biossd"]
    subprocess.run([*biossd, "data", "synth-results", str(args.dir)], check=True, stdout=subprocess.DEVNULL)
    subprocess.run([*biossd, "report", str(args.dir / "ssd"), str(args.dir / "hdd")], check=True,
                   stdout=subprocess.DEVNULL)
    report = args.dir / "ssd" / "report"
    for path in sorted(p for sub in ("figures", "tables") for p in (report / sub).rglob("*") if p.is_file()):
        print(hashlib.sha256(path.read_bytes()).hexdigest(), path.relative_to(report))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
