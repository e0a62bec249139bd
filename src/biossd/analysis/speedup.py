"""Speedup of a fast side over a slow one (Lee, Min and Yoon 2015, §2.2, Table 1, Figs. 2, 3, 8, 9).

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

**How firm a speedup is.** Beside each speedup, a 95% bootstrap interval: both sides' ``ok``
repeats resampled with replacement (:data:`BOOTSTRAP_RESAMPLES` times, a fixed seed), the
ratio of the resampled means' percentiles (none for a lower bound, or with fewer than two ``ok``
repeats on a side). Groups: G+ at :data:`SPEEDUP_THRESHOLD` or more, G0 below
:data:`NEGLIGIBLE_BELOW` ("negligible improvements": the paper's largest G0 is 1.09x), and
*between* them neither (:data:`GROUP_BETWEEN`), counted as neither agreement nor disagreement
with the paper. A configuration whose interval straddles one of these bounds is not firm: the
study runs it to :data:`FIRM_REPEATS` repeats (:func:`unfirm`). Runs the memory cgroup's OOM
killer ended are counted per side (``n_oom_fast``, ``n_oom_slow``).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Collection, Sequence

import numpy as np
import pandas as pd

#: Table 1's note: "G+, programs with 2x or more speedup; G0, programs with negligible improvements".
SPEEDUP_THRESHOLD = 2.0
#: Below this a speedup is negligible (G0): the paper's largest G0 speedup is 1.09x (Table 1).
NEGLIGIBLE_BELOW = 1.2
GROUP_FAST, GROUP_FLAT, GROUP_BETWEEN = "G+", "G0", "between"
CONFIG_COLUMNS = ("tool", "mem", "scale")
OK = "ok"
TIMEOUT = "timeout"
OOM = "oom"
#: The bootstrap of a speedup's interval: resamples, level and seed.
BOOTSTRAP_RESAMPLES = 20_000
INTERVAL_LEVEL = 0.95
BOOTSTRAP_SEED = 0
#: Repeats, in all, of a configuration whose interval straddles a group's bound (§5.1's three
#: are enough only where the groups are far apart).
FIRM_REPEATS = 5


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
    out["n_oom"] = runs.assign(_o=runs["outcome"] == OOM).groupby(keys, sort=True, dropna=False)["_o"].sum().reindex(out.index)
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
    table["speedup_low"], table["speedup_high"] = np.nan, np.nan
    fast_rt, slow_rt = _ok_runtimes(side_rows(runs, fast), keys), _ok_runtimes(side_rows(runs, slow), keys)
    for i, row in table.iterrows():
        if row["status"] == OK and not censored[i]:
            key = tuple(row[k] for k in keys)
            table.loc[i, ["speedup_low", "speedup_high"]] = bootstrap_interval(fast_rt.get(key, []), slow_rt.get(key, []))
    table.loc[censored, "status"] = [
        f"at least {v:.3g}x: {'every run' if n == r else f'{int(n)} of {int(r)} runs'} on {slow} reached the time limit"
        for v, n, r in zip(bound[censored], table.loc[censored, "n_timeout_slow"], table.loc[censored, "n_runs_slow"])]
    return table


def _ok_runtimes(runs: pd.DataFrame, keys: list[str]) -> dict[tuple, list[float]]:
    ok = runs[runs["outcome"] == OK]
    return {k if isinstance(k, tuple) else (k,): list(g["runtime_s"]) for k, g in ok.groupby(keys, sort=False)}


def bootstrap_interval(fast_s: Sequence[float], slow_s: Sequence[float], resamples: int = BOOTSTRAP_RESAMPLES,
                       level: float = INTERVAL_LEVEL, seed: int = BOOTSTRAP_SEED) -> tuple[float, float]:
    """A speedup's percentile interval: each side's runtimes resampled with replacement, the
    ratio of the slow side's mean to the fast side's, ``resamples`` times; NaN with fewer than
    two runtimes on a side. With three repeats a side the interval is optimistic."""
    fast, slow = np.asarray(fast_s, float), np.asarray(slow_s, float)
    if fast.size < 2 or slow.size < 2:
        return (np.nan, np.nan)
    rng = np.random.default_rng(seed)
    ratio = (slow[rng.integers(0, slow.size, (resamples, slow.size))].mean(axis=1)
             / fast[rng.integers(0, fast.size, (resamples, fast.size))].mean(axis=1))
    tail = (1 - level) / 2 * 100
    low, high = np.percentile(ratio, [tail, 100 - tail])
    return (float(low), float(high))


def unfirm(table: pd.DataFrame, threshold: float = SPEEDUP_THRESHOLD) -> pd.Series:
    """Per row of a :func:`speedup_table`, whether its group is not firm: its interval straddles a
    group's bound (:data:`NEGLIGIBLE_BELOW` or ``threshold``), or it has a speedup but no
    interval (fewer than two ``ok`` repeats on a side). A lower bound is firm as a bound."""
    low, high = table["speedup_low"], table["speedup_high"]
    straddles = pd.Series(False, index=table.index)
    for bound in (NEGLIGIBLE_BELOW, threshold):
        straddles |= (low < bound) & (high >= bound)
    no_interval = table["speedup"].notna() & low.isna() & ~table["speedup_is_lower_bound"].astype(bool)
    return straddles | no_interval


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
    """G+ at ``threshold`` or more, G0 below :data:`NEGLIGIBLE_BELOW`, *between* them
    :data:`GROUP_BETWEEN`; empty where there is no speedup — or where it is only a lower bound
    (``lower_bound`` true) that stays below the threshold."""
    unknown = speedup.isna()
    if lower_bound is not None:
        unknown |= lower_bound.reindex(speedup.index).fillna(False).astype(bool) & (speedup < threshold)
    grouped = np.where(speedup >= threshold, GROUP_FAST, np.where(speedup < NEGLIGIBLE_BELOW, GROUP_FLAT, GROUP_BETWEEN))
    return pd.Series(np.where(unknown, "", grouped), index=speedup.index)


def agreement(ours: pd.Series, papers: pd.Series) -> pd.Series:
    """Per tool, whether this study's group equals the paper's (True/False), or NA where either
    is missing (not run, no speedup, a substitute the paper did not profile) or ours is
    *between* the groups (neither an agreement nor a disagreement)."""
    known = ours.fillna("").isin((GROUP_FAST, GROUP_FLAT)) & papers.fillna("").ne("")
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


def pipeline_steps(entry, ran: set[str]) -> list[tuple[str, str]]:
    """A pipeline's steps as (step, tool run for it): the substitute where the paper's tool was
    not run but its substitute was."""
    subs = entry.data.get("substitute_steps", {})
    return [(s, s if s in ran or s not in subs or subs[s] not in ran else subs[s]) for s in entry.data["steps"]]


def chain_rows(chains: pd.DataFrame, pipeline: str, side: str) -> pd.DataFrame:
    """A pipeline's chained step runs on one side (a side name, or a class as in ``Analysis``)."""
    rows = chains[chains["pipeline"].eq(pipeline)]
    return rows[rows["side"].eq(side) | rows["side"].str.endswith("-" + side)]


@dataclass
class StepBar:
    """One step's runtime on one side (``side_index``: 0 the fast side, 1 the slow one), after the
    steps before it (``left_s``); ``bad``: its runs' outcomes other than ok; ``label``: its legend
    entry (``None``: already in the legend)."""

    side_index: int
    left_s: float
    runtime_s: float
    step_index: int
    label: str | None
    bad: list[str]


@dataclass
class PipelineRuntimes:
    """Fig. 3's numbers for one pipeline: its step bars on both sides, their totals, the sides
    whose chain stopped or had a step not end ok (``incomplete``; ``failed``: other than a
    timeout), how the runtimes were made (``what``), notes, and the pipeline's speedup."""

    bars: list[StepBar]
    totals_s: dict[str, float]
    incomplete: list[str]
    failed: list[str]
    what: str
    notes: list[str]
    speedup: PipelineSpeedup


def pipeline_runtimes(entry, chains: pd.DataFrame, baseline_table: pd.DataFrame,
                      sides: Sequence[tuple[str, str]]) -> PipelineRuntimes:
    """Each step's runtime of the pipeline ``entry`` on both ``sides`` (``(suffix, side)``, fast
    first; Lee, Min and Yoon 2015, Fig. 3). Where the study ran it chained (``chains``: each step's
    output the next one's input, in one scratch), a step's mean runtime over the repeats, and a step
    that did not end ok is named with its outcome; otherwise the steps' separate baseline runs
    (``baseline_table``), summed."""
    from biossd.study import chain

    bars: list[StepBar] = []
    totals: dict[str, float] = {}
    incomplete: list[str] = []
    failed: list[str] = []
    if entry.data.get("chain") and all(not chain_rows(chains, entry.id, s).empty for _, s in sides):
        step_labels, not_run = chain.step_labels(entry)
        stopped: list[str] = []
        for y, (_, side) in enumerate(sides):
            rows = chain_rows(chains, entry.id, side)
            left = 0.0
            for i, step in enumerate(step_labels):
                runs = rows[rows["step"].eq(step)]
                if runs.empty:
                    if y == 0 or step not in stopped:
                        stopped.append(step)
                    incomplete.append(side)
                    continue
                value = float(runs["runtime_s"].mean())
                bad = sorted(set(runs["outcome"]) - {"ok"})
                if bad:
                    incomplete.append(side)
                if set(bad) - {TIMEOUT}:
                    failed.append(side)
                label = step_labels[step] + (f" [{'/'.join(bad)} on {side}]" if bad else "")
                bars.append(StepBar(y, left, value, i, label if (y == 0 or bad) else None, bad))
                left += value
            totals[side] = left
        what = f"chained, {int(chains[chains['pipeline'].eq(entry.id)]['rep'].nunique())} repeat(s)"
        notes = [f"{p}: {why}" for p, why in not_run.items()]
        notes += [f"{step_labels[s]} not reached" for s in dict.fromkeys(stopped)]
    else:
        steps = pipeline_steps(entry, set(baseline_table.index))
        missing = []
        for y, (suffix, side) in enumerate(sides):
            left = 0.0
            for i, (step, tool) in enumerate(steps):
                value = baseline_table["runtime_s_" + suffix].get(tool, np.nan)
                if pd.isna(value):
                    if y == 0:
                        missing.append(tool)
                    continue
                label = (tool if tool == step else f"{tool} (for {step})") if y == 0 else None
                bars.append(StepBar(y, left, value, i, label, []))
                left += value
            totals[side] = left
        what = "not chained: the sum of the steps' separate runs"
        notes = [f"not run: {', '.join(sorted(set(missing)))}"] if missing else []
    fast, slow = sides[0][1], sides[1][1]
    return PipelineRuntimes(bars, totals, incomplete, failed, what, notes,
                            pipeline_speedup(totals, fast, slow, incomplete, failed))
