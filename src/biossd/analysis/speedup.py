"""Speedup of a fast side over a slow one (seed 000 §2.2, Table 1, Figs. 2, 3, 8, 9).

Speedup is the slow side's runtime over the fast side's, each the mean over the repeats that
ended ``ok`` (§5.1: "We repeated all the time measurements three times and used the average
value"). A configuration with no ``ok`` run on a side has no speedup; its ``status`` says why
(``oom on x-hdd (3/3)``, ``not run on x-ssd``), so tables and figures show the gap instead of
dropping it.

A run stopped at the study's time limit (outcome ``timeout``) is censored, as the paper's runs
beyond 72 hours would have been: when any run on the slow side timed out and the fast side has
``ok`` runs, the speedup is *at least* the slow side's mean over its ``ok`` and timed-out runs
(each timed-out one counted at its time to the limit) over the fast side's runtime — a mean of
only the repeats that finished would be biased low. That lower bound is the ``speedup`` with
``speedup_is_lower_bound`` set and a status saying so; it decides the group only when it
reaches the threshold.

Beside it, ``speedup_with_flush``: the same ratio on each run's wall time plus the flush of its
dirty data after the command exited (``flush_s``). In the paper's runs of hours the writeback
fell inside the runtime; in runs of seconds most writes land after exit, and the slow device's
cost of them shows only here.

*Baseline configuration* of a tool: its smallest input scale at the smallest cap it was run
under — the paper's Table 1 setting (1 GB, GATK 4 GB; the baseline input).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Collection, Sequence

import numpy as np
import pandas as pd

#: Table 1's note: "G+, programs with 2x or more speedup; G0, programs with negligible improvements".
SPEEDUP_THRESHOLD = 2.0
GROUP_FAST, GROUP_FLAT = "G+", "G0"
CONFIG_COLUMNS = ("tool", "mem", "scale")
OK = "ok"
TIMEOUT = "timeout"


def side_rows(runs: pd.DataFrame, side: str) -> pd.DataFrame:
    """The runs of one side, named as ``<host>-<storage>`` or by the storage class alone."""
    return runs[(runs["side"] == side) | (runs["storage"] == side)]


def pairs(runs: pd.DataFrame, fast: str, slow: str) -> list[tuple[str, str]]:
    """Every (fast side, slow side) pair the runs hold: each side of storage class (or name)
    ``fast`` with each of ``slow`` — several SSDs against one HDD give Fig. 2(b)."""
    fast_sides = sorted(side_rows(runs, fast)["side"].unique())
    slow_sides = sorted(side_rows(runs, slow)["side"].unique())
    return [(f, s) for f in fast_sides for s in slow_sides if f != s]


def runtime_means(runs: pd.DataFrame, by: Sequence[str] = CONFIG_COLUMNS) -> pd.DataFrame:
    """Per configuration: mean and standard deviation of ``runtime_s`` over ``ok`` repeats, how
    many repeats were ``ok`` and made, and the outcomes of the others (``oom 2, timeout 1``)."""
    keys = list(by)
    ok = runs["outcome"] == OK
    flush = runs["flush_s"].fillna(0.0) if "flush_s" in runs else 0.0
    grouped = runs.assign(_ok=ok, _rt=runs["runtime_s"].where(ok), _rtf=(runs["runtime_s"] + flush).where(ok)
                          ).groupby(keys, sort=True, dropna=False)
    out = grouped.agg(runtime_s=("_rt", "mean"), runtime_sd_s=("_rt", "std"), n_ok=("_ok", "sum"),
                      n_runs=("outcome", "size"), runtime_with_flush_s=("_rtf", "mean"))
    bad = runs[~ok].groupby(keys, sort=True)["outcome"].agg(lambda s: ", ".join(
        f"{k} {v}" for k, v in sorted(s.value_counts().items())))
    out["other_outcomes"] = bad.reindex(out.index).fillna("")
    timed_out = runs["outcome"] == TIMEOUT
    out["timeout_runtime_s"] = (runs.assign(_rt=runs["runtime_s"].where(timed_out)).groupby(keys, sort=True, dropna=False)
                                ["_rt"].mean().reindex(out.index))
    out["n_timeout"] = runs.assign(_t=timed_out).groupby(keys, sort=True, dropna=False)["_t"].sum().reindex(out.index)
    # Each timed-out repeat counted at its time to the limit: a lower bound of the mean.
    out["censored_mean_s"] = (runs.assign(_rt=runs["runtime_s"].where(ok | timed_out))
                              .groupby(keys, sort=True, dropna=False)["_rt"].mean().reindex(out.index))
    return out.reset_index()


def speedup_table(runs: pd.DataFrame, fast: str, slow: str,
                  by: Sequence[str] = CONFIG_COLUMNS) -> pd.DataFrame:
    """One row per configuration run on either side: both sides' mean runtimes, the speedup
    (slow / fast) and a ``status`` that is ``ok`` or says why there is no speedup."""
    keys = list(by)
    a = runtime_means(side_rows(runs, fast), keys)
    b = runtime_means(side_rows(runs, slow), keys)
    table = a.merge(b, on=keys, how="outer", suffixes=("_fast", "_slow"), sort=True)
    table["speedup"] = table["runtime_s_slow"] / table["runtime_s_fast"]
    table["speedup_with_flush"] = table["runtime_with_flush_s_slow"] / table["runtime_with_flush_s_fast"]
    table["status"] = [_status(row, fast, slow) for _, row in table.iterrows()]
    censored = table["n_timeout_slow"].fillna(0).gt(0) & table["n_ok_fast"].fillna(0).gt(0)
    bound = table["censored_mean_s_slow"] / table["runtime_s_fast"]
    table.loc[table["status"] != OK, ["speedup", "speedup_with_flush"]] = np.nan
    table.loc[censored, "speedup"] = bound[censored]
    table.loc[censored, "speedup_with_flush"] = np.nan
    table["speedup_is_lower_bound"] = censored
    table.loc[censored, "status"] = [
        f"at least {v:.3g}x: {'every run' if n == r else f'{int(n)} of {int(r)} runs'} on {slow} reached the time limit"
        for v, n, r in zip(bound[censored], table.loc[censored, "n_timeout_slow"], table.loc[censored, "n_runs_slow"])]
    return table


def _status(row: pd.Series, fast: str, slow: str) -> str:
    notes = []
    for side, suffix in ((fast, "_fast"), (slow, "_slow")):
        n_runs = row[f"n_runs{suffix}"]
        if pd.isna(n_runs) or n_runs == 0:
            notes.append(f"not run on {side}")
        elif row[f"n_ok{suffix}"] == 0:
            notes.append(f"{row[f'other_outcomes{suffix}']} on {side} (of {int(n_runs)})")
    return "; ".join(notes) or OK


def baseline(runs: pd.DataFrame) -> pd.DataFrame:
    """Each tool's runs at its baseline configuration: smallest scale, smallest cap."""
    rows = runs.copy()
    rows["_mem"] = rows["mem_bytes"].fillna(np.inf)
    first_scale = rows.groupby("tool")["scale"].transform("min")
    rows = rows[rows["scale"] == first_scale]
    first_mem = rows.groupby("tool")["_mem"].transform("min")
    return rows[rows["_mem"] == first_mem].drop(columns="_mem")


def group_of(speedup: pd.Series, threshold: float = SPEEDUP_THRESHOLD,
             lower_bound: pd.Series | None = None) -> pd.Series:
    """G+ at ``threshold`` or more, G0 below, empty where there is no speedup — or where it is
    only a lower bound (``lower_bound`` true) that stays below the threshold."""
    unknown = speedup.isna()
    if lower_bound is not None:
        unknown |= lower_bound.reindex(speedup.index).fillna(False).astype(bool) & (speedup < threshold)
    return pd.Series(np.where(unknown, "", np.where(speedup >= threshold, GROUP_FAST, GROUP_FLAT)),
                     index=speedup.index)


def agreement(ours: pd.Series, papers: pd.Series) -> pd.Series:
    """Per tool, whether this study's group equals the paper's (True/False), or NA where either
    is missing (not run, no speedup, a substitute the paper did not profile)."""
    known = ours.fillna("").ne("") & papers.fillna("").ne("")
    return pd.Series(np.where(known, ours == papers, pd.NA), index=ours.index, dtype="object")


def breakeven_scale(scales: pd.Series, speedups: pd.Series, threshold: float = SPEEDUP_THRESHOLD) -> float:
    """§3.4, Fig. 8: the smallest input scale from which the speedup stays at ``threshold`` or
    more for every larger scale measured; NaN when the largest scale is below it. A scale with
    no speedup (a gap) breaks the run of scales above it."""
    order = np.argsort(scales.to_numpy(), kind="stable")
    s, v = scales.to_numpy()[order], speedups.to_numpy(dtype=float)[order]
    above = v >= threshold  # NaN compares False
    if not len(s) or not above[-1]:
        return float("nan")
    first = len(s) - 1
    while first > 0 and above[first - 1]:
        first -= 1
    return float(s[first])


@dataclass(frozen=True)
class PipelineSpeedup:
    """A chained pipeline's speedup (Fig. 3): ``value`` is the slow side's runtime over the fast
    side's (``None`` when there is none, ``why`` says so); ``lower_bound`` when the slow side's
    chain reached the time limit and stopped there."""

    value: float | None
    lower_bound: bool = False
    why: str | None = None


def pipeline_speedup(totals_s: dict[str, float], fast: str, slow: str, incomplete: Collection[str] = (),
                     failed: Collection[str] = ()) -> PipelineSpeedup:
    """Fig. 3's speedup of a pipeline from each side's runtime (the sum of its steps,
    ``totals_s``), given the sides whose chain did not complete (``incomplete``: it stopped, or a
    step did not end ok) and those where a step ended other than ok or at the time limit
    (``failed``). Table 1's rule for censored runs: when only the slow side is incomplete, and
    only by the time limit, its runtime so far is a lower bound and so is the speedup; a chain
    that failed, or an incomplete fast side, has no runtime to compare."""
    fast_s = totals_s.get(fast)
    if incomplete and set(incomplete) == {slow} and slow not in failed and fast_s:
        return PipelineSpeedup(totals_s[slow] / fast_s, lower_bound=True, why=f"{slow} reached the time limit")
    if incomplete:
        return PipelineSpeedup(None, why=f"the chain did not complete on {' and '.join(dict.fromkeys(incomplete))}")
    if not fast_s:
        return PipelineSpeedup(None, why=f"no runtime on {fast}")
    return PipelineSpeedup(totals_s[slow] / fast_s)
