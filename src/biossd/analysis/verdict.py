"""The answer to the paper's question for one result set: which tools the fast
side accelerated, by how much, where that agrees with the paper's Table 1 — and, for every tool,
why, in words drawn from the measured features.

Seed 000 §4 names the mechanism: "when the memory footprint of a program exceeds the capacity
of main memory, using SSDs is likely to bring a significant gain" — G+ tools page (Pfault) and
move much data (Butil), G0 tools are compute-bound. :func:`explain` states, per tool, which of
these the runs showed: major faults per run on the slow side (did it page?), peak RSS against
its cap (does the footprint fit?), the bytes it read and wrote, how busy the CPU was, and how
long a run was (in a run of a few seconds, reading the input and the final flush weigh more than
in the paper's runs of hours).
"""

from __future__ import annotations

import math

import numpy as np
import pandas as pd

from biossd.analysis import Analysis, speedup

#: Major faults per run above which a run *paged*: a few hundred come from loading the program
#: and its libraries from a cold cache (§5.1 drops the page cache before each run).
PAGED_FAULTS = 1000
#: A run shorter than this on the fast side is *short*: fixed costs weigh on its speedup.
SHORT_RUN_S = 5.0
#: A run that uses more CPU cores than this on average is *CPU-bound* (one core busy = 1).
CPU_BOUND_CORES = 0.8
MIB = 1 << 20
KIB = 1 << 10


def _mean(runs: pd.DataFrame, side: str, column: str,
          outcomes: tuple[str, ...] = (speedup.OK,)) -> float:
    rows = speedup.side_rows(runs, side)
    rows = rows[rows["outcome"].isin(outcomes)]
    return float(rows[column].mean()) if column in rows and len(rows) else math.nan


#: Runs whose counts show what a tool did: those that ended ok, and those stopped at the time
#: limit (they paged or read for the whole limit; their counts are lower bounds).
COUNTED = (speedup.OK, speedup.TIMEOUT)


def _fmt(value: float, unit: str = "", digits: int = 3) -> str:
    return "?" if not np.isfinite(value) else f"{value:.{digits}g}{unit}"


def _whole(value: float, unit: str = "") -> str:
    """A count or a size in whole units: ``232,400``, ``879 MiB`` (``0.4 MiB`` below one)."""
    if not np.isfinite(value):
        return "?"
    return (f"{value:,.0f}" if abs(value) >= 1 or value == 0 else f"{value:.1g}") + unit


def evidence(a: Analysis) -> pd.DataFrame:
    """Per tool run at its baseline: the measured facts the explanations rest on."""
    fast, slow = a.sides
    runs = a.baseline_runs
    rows = []
    for tool, tool_runs in runs.groupby("tool", sort=True):
        cap = tool_runs["mem_bytes"].dropna()
        rows.append({
            "tool": tool,
            "major_faults_fast": _mean(tool_runs, fast, "major_faults", COUNTED),
            "major_faults_slow": _mean(tool_runs, slow, "major_faults", COUNTED),
            "peak_rss_mib": _mean(tool_runs, fast, "max_rss_kib", COUNTED) * KIB / MIB,
            "cap_mib": float(cap.iloc[0]) / MIB if len(cap) else math.nan,
            "io_mib": (_mean(tool_runs, fast, "read_bytes") + _mean(tool_runs, fast, "write_bytes")) / MIB,
            "cpu_cores_used": _mean(tool_runs, fast, "cpu_cores_used"),
            "runtime_fast_s": _mean(tool_runs, fast, "runtime_s"),
        })
    return pd.DataFrame(rows).set_index("tool") if rows else pd.DataFrame(columns=["tool"]).set_index("tool")


def paged(facts: pd.Series | pd.DataFrame) -> pd.Series | bool:
    """Whether a tool paged: :data:`PAGED_FAULTS` or more major faults per run on either side."""
    return np.fmax(facts["major_faults_fast"], facts["major_faults_slow"]) >= PAGED_FAULTS


def _reason(row: pd.Series, facts: pd.Series | None, fast: str, slow: str) -> str:
    if facts is None or not row["group"]:
        return f"no speedup here: {row['status']}"
    rss, cap = facts["peak_rss_mib"], facts["cap_mib"]
    did_page = bool(paged(facts))
    footprint = f"peak RSS {_whole(rss, ' MiB')} of the {_whole(cap, ' MiB')} cap"
    data_over_m = row.get("data_over_m", math.nan)
    if isinstance(data_over_m, float) and np.isfinite(data_over_m):
        # The sizing rule's regime variable: what grows with the input against the data memory M.
        footprint += (f" (data part {data_over_m:.2g} x M)" if data_over_m >= 0 else
                      " (below the floor measured at sizing: no data part above it)")
    faults = (f"{_whole(facts['major_faults_fast'])} major faults per run on {fast}, "
              f"{_whole(facts['major_faults_slow'])} on {slow}")
    paging = (f"it paged: {faults}; {footprint}" if did_page else
              f"no paging at this cap: {faults}; {footprint}")
    io = f"{_whole(facts['io_mib'], ' MiB')} read and written"
    short = np.isfinite(facts["runtime_fast_s"]) and facts["runtime_fast_s"] < SHORT_RUN_S
    busy = np.isfinite(facts["cpu_cores_used"]) and facts["cpu_cores_used"] >= CPU_BOUND_CORES
    if row["group"] == speedup.GROUP_FAST:
        why = paging if did_page else f"{io} in {_fmt(facts['runtime_fast_s'], ' s')}, with " + paging.split(": ", 1)[1]
        if short and not did_page:
            why += "; a short run, where reading the input and the final flush weigh more than in hours-long runs"
        return why
    why = paging + (f"; CPU-bound ({facts['cpu_cores_used']:.1f} cores busy)" if busy else "") + f"; {io}"
    return why


def explain(a: Analysis, table1: pd.DataFrame) -> pd.DataFrame:
    """Table 1's rows with the evidence and a sentence per tool: whether it agrees with the
    paper's group and, from the features, why the speedup is what it is."""
    facts = evidence(a)
    fast, slow = a.sides
    out = table1.copy()
    for column in facts.columns:
        out[column] = out["tool"].map(facts[column])
    reasons = []
    for _, row in out.iterrows():
        f = facts.loc[row["tool"]] if row["tool"] in facts.index else None
        reasons.append(_reason(row, f, fast, slow))
    out["reason"] = reasons
    return out


def disagreements_text(explained: pd.DataFrame) -> list[str]:
    """One line per tool whose group differs from the paper's: both groups, both speedups, why."""
    lines = []
    for _, r in explained[explained["agrees"] == False].iterrows():  # noqa: E712 (NA stays out)
        lines.append(f"{r['name']}: {r['group']} here ({_fmt(r['speedup'], 'x')}), {r['paper_group']} in the paper "
                     f"({_fmt(r['paper_speedup'], 'x')}) - {r['reason']}.")
    return lines


def answer_text(a: Analysis, explained: pd.DataFrame) -> str:
    """The answer in prose: which tools the fast side accelerated, by how much, and where that
    agrees with the paper."""
    fast, slow = a.sides
    have = explained[explained["group"] != ""].sort_values("speedup", ascending=False)
    if have.empty:
        return f"No tool has a speedup of {fast} over {slow} in this result set."
    plus = have[have["group"] == speedup.GROUP_FAST]
    named = ", ".join(f"{r['name']} ({'at least ' if r.get('speedup_is_lower_bound') else ''}{_fmt(r['speedup'], 'x')})"
                      for _, r in plus.iterrows())
    rest = have[have["group"] != speedup.GROUP_FAST]
    compared = explained[explained["agrees"].notna()]
    agree = int((compared["agrees"] == True).sum())  # noqa: E712
    text = (f"The {fast} side accelerated {len(plus)} of the {len(have)} tools with a speedup by "
            f"{a.threshold:g}x or more" + (f": {named}." if len(plus) else ".") +
            (f" The other {len(rest)} changed by less than {a.threshold:g}x (median "
             f"{_fmt(float(rest['speedup'].median()), 'x')})." if len(rest) else "") +
            f" Of the {len(compared)} tools the paper profiled that ran here, {agree} land in the paper's group.")
    pagers = have[paged(have)]
    text += (f" {len(pagers)} of the {len(have)} paged (at least {PAGED_FAULTS} major faults per run on either side)"
             + (f": {', '.join(pagers['name'])}." if len(pagers) else "."))
    return text
