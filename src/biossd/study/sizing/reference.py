"""A reference record in a re-sizing (``biossd study size --reference``): the record a profile
commits, whose calls a host of the same speed keeps (docs/study.md, "A sizing that jitter cannot
move"; Lee, Min and Yoon 2015, §5.1: one input per program, chosen once).

A re-sizing first times each tool where the reference chose (its ladder input, then its capped
runs): where this host's median wall time there lies within
:data:`~biossd.study.sizing.rule.SAME_SPEED_WITHIN` of the reference's, the reference's call
stands, and only a host clearly faster or slower for that tool sizes it again.
"""

from __future__ import annotations

import math
import statistics
from pathlib import Path
from typing import Any, Callable

from biossd.core.units import format_size
from biossd.study.sizing import rule
from biossd.study.sizing.record import SizingError


class Reference:
    """The parts of a reference record a re-sizing reads: its choices and its runs' wall times."""

    def __init__(self, rec: dict[str, Any]):
        self.rec = rec
        self.chose = rec.get("chose", {})

    def ladder_input(self, tool: str) -> int | None:
        """The input the reference's ladder chose for ``tool`` (before any step down for the limit)."""
        return self.chose.get("ladder_inputs", {}).get(tool)

    def final_input(self, tool: str) -> int | None:
        """The input the reference's study runs ``tool`` on."""
        return self.chose.get("inputs", {}).get(tool)

    def wall_s(self, tool: str, size: int, step: str) -> float | None:
        """The median wall time of the reference's runs of ``tool`` at ``size`` in ``step`` that
        ended ok (``input``: uncapped ladder runs; ``capped``: the time limit's), or None."""
        walls = [r["wall_s"] for r in self.rec.get("runs", []) if r.get("tool") == tool and r.get("step") == step
                 and r.get("size_bytes") == size and r.get("outcome") == "ok" and r.get("wall_s") is not None]
        return statistics.median(walls) if walls else None

    def speed_ratio(self, tool: str, size: int, step: str, here_s: float) -> float | None:
        """This host's median wall time over the reference's at the same step, or None when the
        reference did not time it or either ran into no number (a timeout, a failure)."""
        there = self.wall_s(tool, size, step)
        if there is None or there <= 0 or not 0 < here_s < math.inf:
            return None
        return here_s / there


def of_record(rec: dict[str, Any], path: Path, run_budget_s: float) -> Reference:
    """A reference record, already checked as a study's (:func:`biossd.study.sizing.procedure.load`
    of ``path``), if it was sized with the same per-run budget (its calls were made against that
    budget)."""
    if not math.isclose(rec["budget"]["run_s"], run_budget_s, rel_tol=1e-9):
        raise SizingError(f"--reference {path}: it was sized with {rec['budget']['run_s']:g} s a run, this "
                          f"sizing with {run_budget_s:g} s; its calls were made against another budget: give a "
                          "record of the same budget, or no --reference")
    return Reference(rec)


def kept_input(reference: Reference, members: list[str], timed: Callable[[str, int], float | None],
               log: Callable[[str], None]) -> tuple[int | None, dict[str, float | None]]:
    """The reference's ladder input for an input group whose every member runs at the reference's
    speed there (``timed``: this host's median wall time of a member at a size, over
    RETIME_REPEATS runs), else None; and each member's ratio to the reference, as far as timed (a
    member out of the band ends it: the group is sized again, on its ladder)."""
    sizes = {reference.ladder_input(t) for t in members}
    if len(sizes) != 1 or None in sizes:
        return None, {}
    size = sizes.pop()
    ratios: dict[str, float | None] = {}
    for tool in members:
        here = timed(tool, size)
        ratios[tool] = None if here is None else reference.speed_ratio(tool, size, "input", here)
        log(f"==> {tool} at {format_size(size)}, the reference's input: {described(ratios[tool])}")
        if not rule.same_speed(ratios[tool]):
            return None, ratios
    return size, ratios


def described(ratio: float | None) -> str:
    """A speed ratio as the sizing's log says it."""
    if ratio is None:
        return "not comparable (the reference did not time it, or a run did not end ok)"
    kept = "kept" if rule.same_speed(ratio) else "outside"
    return f"{ratio:.2f} x the reference's time ({kept} within {rule.SAME_SPEED_WITHIN:g} x)"
