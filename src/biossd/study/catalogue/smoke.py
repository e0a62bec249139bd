"""Smoke tests of catalogue tools: each entry's ``smoke`` block writes tiny input files, runs
its commands in a fresh directory, and checks what they left.

The same block runs natively (the host's tools) or in the entry's container (a runner prefix
such as ``ch-run -b DIR:/mnt/smoke -c /mnt/smoke IMAGE --``), so "passes natively" and
"passes in its container" test the same thing.
"""

from __future__ import annotations

import subprocess
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import Callable, Sequence

from biossd.study.catalogue import Entry

SMOKE_TIMEOUT_S = 300


@dataclass
class SmokeResult:
    passed: bool
    detail: str


Runner = Callable[[Path, Sequence[str]], list[str]]


def native(workdir: Path, argv: Sequence[str]) -> list[str]:
    return list(argv)


def run(entry: Entry, runner: Runner = native, cwd_for: Callable[[Path], Path | None] = lambda d: d) -> SmokeResult:
    """Run ``entry``'s smoke block; ``runner`` turns (workdir, argv) into the argv to execute
    and ``cwd_for`` gives the directory to execute it in."""
    smoke = entry.data.get("smoke")
    if smoke is None:
        return SmokeResult(False, "the entry has no smoke test (recipe-only)")
    with tempfile.TemporaryDirectory(prefix=f"biossd-smoke-{entry.id}-") as tmp:
        work = Path(tmp)
        for name, content in (smoke.get("files") or {}).items():
            (work / name).write_text(content)
        output = []
        for argv in smoke["commands"]:
            try:
                proc = subprocess.run(runner(work, argv), cwd=cwd_for(work), capture_output=True, text=True,
                                      errors="replace", timeout=SMOKE_TIMEOUT_S)
            except FileNotFoundError as err:
                return SmokeResult(False, f"`{argv[0]}` not found ({err.filename})")
            except subprocess.TimeoutExpired:
                return SmokeResult(False, f"`{' '.join(argv)}` ran longer than {SMOKE_TIMEOUT_S} s")
            output.append(proc.stdout + proc.stderr)
            if proc.returncode != 0:
                return SmokeResult(False, f"`{' '.join(argv)}` exited {proc.returncode}: "
                                          f"{(proc.stderr or proc.stdout).strip()[-300:]}")
        return _check(smoke["expect"], work, "".join(output))


def _check(expect: dict, work: Path, output: str) -> SmokeResult:
    if "stdout_or_stderr" in expect:
        ok = expect["stdout_or_stderr"] in output
        return SmokeResult(ok, "output has the expected text" if ok else
                           f"output lacks {expect['stdout_or_stderr']!r}")
    path = work / expect["file"]
    if not path.is_file():
        return SmokeResult(False, f"{expect['file']} was not written")
    text = path.read_text(errors="replace")
    if expect.get("nonempty") and path.stat().st_size == 0:
        return SmokeResult(False, f"{expect['file']} is empty")
    if "contains" in expect and expect["contains"] not in text:
        return SmokeResult(False, f"{expect['file']} lacks {expect['contains']!r}")
    return SmokeResult(True, f"{expect['file']} as expected")
