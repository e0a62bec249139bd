"""Which of a study's planned repeats run (Lee, Min and Yoon 2015, §2.2: each run repeated three
times): a configuration (tool, class, cap, scale) whose first repeat reached the time limit is not
repeated. Its censored run already bounds the speedup from below — the sizing steps down an input
whose capped native run exceeds the limit / CENSORED_MIN_SPEEDUP, so a censored slow run proves at
least that speedup (:mod:`biossd.study.sizing.rule`) — and two more runs to the limit would only spend
the study's time. The repeats left out are listed (``pipeline_info/repeats_not_run.tsv``), never
dropped silently; the workflow runs the others.
"""

from __future__ import annotations

from typing import Any, Iterable, Mapping

#: A run's outcome when it reached the time limit.
CENSORED_OUTCOME = "timeout"
#: The list of repeats not run: its columns, and why each was not.
NOT_RUN_COLUMNS = ("tool", "storage", "mem", "scale", "rep", "why")
NOT_RUN_WHY = "the first repeat reached the time limit"


def config_key(meta: Mapping[str, Any]) -> tuple[str, str, str, str]:
    """A configuration: what a run's repeats share (tool, class, cap, scale)."""
    return (str(meta.get("tool")), str(meta.get("storage")), str(meta.get("mem")), str(meta.get("scale")))


def censored(first_runs: Iterable[tuple[Mapping[str, Any], str | None]]) -> set[tuple[str, str, str, str]]:
    """The configurations whose first repeat reached the time limit, from each run's labels and
    outcome (a probe is not a repeat)."""
    return {config_key(labels) for labels, outcome in first_runs
            if not labels.get("probe") and outcome == CENSORED_OUTCOME}


def split(repeats: list[dict[str, Any]], censored_keys: set[tuple[str, str, str, str]]
          ) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """The planned repeats (metas) to run, and those not run, in the plan's order."""
    run = [m for m in repeats if config_key(m) not in censored_keys]
    not_run = [m for m in repeats if config_key(m) in censored_keys]
    return run, not_run


def not_run_tsv(not_run: Iterable[Mapping[str, Any]]) -> str:
    """The list of repeats not run, one line each, sorted (the report reads it:
    :func:`biossd.analysis.resultset.repeats_not_run`)."""
    lines = sorted("\t".join(str(m.get(c)) for c in NOT_RUN_COLUMNS[:-1]) + f"\t{NOT_RUN_WHY}" for m in not_run)
    return "\t".join(NOT_RUN_COLUMNS) + "\n" + "".join(f"{line}\n" for line in lines)
