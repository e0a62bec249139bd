"""One profiled run of the sizing (:mod:`biossd.study.sizing.procedure`): ``biossd catalogue stage`` plus
``biossd profile``, as the study's PROFILE task does it, on a synthetic input made once per (kind,
size) in the sizing's scratch and prepared once per tool (its indexes and conversions, as the
study's PREPARE task: setup, not the measured program), the run's own files evicted from the page
cache first; a run whose host was busy outside it is run again once, as the study's are
(docs/study.md, "A quiet host, checked")."""

from __future__ import annotations

import json
import os
import subprocess
import tempfile
from pathlib import Path
from typing import Any, Callable

from biossd.core import owners
from biossd.core.files import remove_tree
from biossd.core.units import format_size
from biossd.study.sizing import rule
from biossd.study.sizing.record import SizingError

#: The step of a floor's warm-up run: it reads its code whole into its own cgroup (``--read-code``,
#: docs/study.md "Code is not data").
WARMUP_STEP = "warmup"


class Runner:
    """Profiled runs of the catalogue's tools on synthetic inputs made once per (kind, size) and
    prepared once per (tool, size)."""

    def __init__(self, entries: dict, scratch: Path, seed: int, log: Callable[[str], None]):
        self.entries, self.scratch, self.seed, self.log = entries, scratch, seed, log
        self.made: dict[tuple[str, int], Path] = {}
        self.prepared: dict[tuple[str, int], Path] = {}
        self.runs: list[dict[str, Any]] = []

    def input(self, kind: str, size: int) -> Path:
        from biossd.study.inputs import data

        if (kind, size) not in self.made:
            out = self.scratch / f"in-{kind}-{size}"
            data.synth(kind, out, size, self.seed, 1)
            self.made[(kind, size)] = out
        return self.made[(kind, size)]

    def prepared_input(self, tool: str, size: int) -> Path:
        """``tool``'s input of ``size``, prepared once (:func:`biossd.study.staging.prepare`) for
        every run of it to stage, as the study's runs stage their PREPARE task's directory: a
        repeat, a floor or a capped run of the same input builds no index again. Only one tool's
        are kept at a time (the sizing runs a tool's steps together): its scratch holds the
        inputs and one tool's indexes, not every tool's."""
        from biossd.study import staging

        for other in [key for key in self.prepared if key[0] != tool]:
            remove_tree(self.prepared.pop(other), ignore_errors=True)
        if (tool, size) not in self.prepared:
            entry = self.entries[tool]
            out = self.scratch / f"prepared-{tool}-{size}"
            try:
                staging.prepare(entry, self.input(entry.data["input"], size), out)
            except staging.StageError as err:
                raise SizingError(f"biossd study size: prepare {tool}: {err}") from None
            self.prepared[(tool, size)] = out
        return self.prepared[(tool, size)]

    def run(self, tool: str, size: int, cap: int | None, settings: dict[str, str], step: str,
            timeout_s: float) -> dict[str, Any]:
        """One run of ``tool`` on ``size`` (capped at ``cap``, or not), as the study runs it; one
        whose host was busy outside it (:data:`biossd.measure.hostload.HOST_LOAD_LIMIT_CORES`) is
        run again once, as the study's are (docs/study.md, "A quiet host, checked"): a timing
        the sizing decides by is a quiet host's. The record says how busy and whether redone."""
        first, busy = self._run_once(tool, size, cap, settings, step, timeout_s)
        if not busy:
            return first
        self.log(f"{'':<6} {tool}: the host was busy outside the run ({first['outside_cores']:.2f} cores); "
                 "running it again once")
        self.runs = [r for r in self.runs if r is not first]  # the busy attempt, not an equal record
        again, _ = self._run_once(tool, size, cap, settings, step, timeout_s)
        again["redone"] = {"first_wall_s": first["wall_s"], "first_outside_cores": first["outside_cores"]}
        return again

    def _run_once(self, tool: str, size: int, cap: int | None, settings: dict[str, str], step: str,
                  timeout_s: float) -> tuple[dict[str, Any], bool]:
        """One run: its record (kept in :attr:`runs`) and whether its host was busy outside it."""
        entry = self.entries[tool]
        work = Path(tempfile.mkdtemp(dir=self.scratch))
        try:
            stage_dir, out = work / "scratch", work / "run"
            stage_dir.mkdir()
            sets = [a for k, v in settings.items() for a in ("--set", f"{k}={v}")]
            argv = _checked(["biossd", "catalogue", "stage", "--print0", *sets, entry.id, "--input",
                             str(self.prepared_input(tool, size)), "--scratch", str(stage_dir)],
                            f"stage {tool}").split(b"\0")
            swap = ["--swap", rule.SWAP_SIZE] if cap else []
            warmup = ["--read-code"] if step == WARMUP_STEP else []
            _checked(["biossd", "profile", "--mem", format_size(cap) if cap else "none", "--out", str(out),
                      "--evict", "run", "--timeout", f"{timeout_s:g}", "--label", f"tool={tool}", *swap, *warmup,
                      "--", *[a.decode() for a in argv if a]],
                     f"profile {tool}", cwd=stage_dir, env=_owned_environment())
            body = json.loads((out / "run.json").read_text())
            accounting = out / "rusage.json"  # the process tree's block reads and writes
            usage = json.loads(accounting.read_text()) if accounting.is_file() else {}
        finally:
            remove_tree(work, ignore_errors=True)
        resident = body["memory_cap"].get("resident") or {}
        load = body.get("host_load") or {}
        record = {"step": step, "tool": tool, "size_bytes": size, "cap_bytes": cap, "settings": settings,
                  "outcome": body["outcome"], "wall_s": body["wall_s"], "resident_peak_bytes": resident.get("peak_bytes"),
                  "read_bytes": usage.get("read_bytes"), "write_bytes": usage.get("write_bytes"),
                  "outside_cores": load.get("outside_cores")}
        self.runs.append(record)
        self.log(f"{step:<6} {tool:<22} {format_size(size):>6} cap {format_size(cap) if cap else 'none':<7} "
                 f"{record['outcome']:<8} {record['wall_s']:7.2f} s  resident "
                 f"{(record['resident_peak_bytes'] or 0) >> 10:>8} KiB  {settings or ''}")
        return record, bool(load.get("busy"))


def _owned_environment() -> dict[str, str]:
    """The runs' environment: their owner is the workflow that started this sizing, else this
    sizing, so that the code a warm-up holds resident lasts as long as it does
    (:mod:`biossd.host.codeholder`) and no longer."""
    if owners.from_environment() is not None:
        return dict(os.environ)
    return {**os.environ, owners.OWNER_ENV: owners.environment_value("biossd study size")}


def _checked(argv: list[str], what: str, cwd: Path | None = None, env: dict[str, str] | None = None) -> bytes:
    proc = subprocess.run(argv, cwd=cwd, capture_output=True, env=env)
    if proc.returncode != 0:
        raise SizingError(f"biossd study size: {what} failed ({proc.returncode}): "
                          f"{proc.stderr.decode(errors='replace').strip()[-500:]}")
    return proc.stdout
