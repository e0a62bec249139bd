"""The answer to the paper's question for one result set: which tools the fast
side accelerated, by how much, where that agrees with the paper's Table 1 — and, for every tool,
why, in words drawn from its runs' traces.

Lee, Min and Yoon 2015 §3.7 names the mechanism: "when the memory footprint of a program exceeds
the capacity of main memory, using SSDs is likely to bring a significant gain" — G+ tools page
(Pfault) and move much data (Butil), G0 tools are compute-bound. :func:`explain` states, per
tool, what its runs showed: whether it paged enough to matter (:func:`paged`: its swap-in reads
on the slow side, at that device's random-read time, against the fast side's runtime), which
process issued them, whether the slow device's time went to reads or writes, its peak resident
memory against its cap, the bytes its device moved, and how busy the CPU was.
"""

from __future__ import annotations

import math

import numpy as np
import pandas as pd

from biossd.analysis import Analysis, calls, regime, speedup

#: A tool *paged* when its swap-in reads on the slow side, each at that device's mean random
#: read time (its fio record, 4 KiB at depth 1), would take at least this share of its runtime on
#: the fast side: enough to change a group, whatever the run's length.
PAGING_SHARE = 0.2
#: A run that uses more CPU cores than this on average is *CPU-bound* (one core busy = 1).
CPU_BOUND_CORES = 0.8
MIB = 1 << 20
KIB = 1 << 10
MS_PER_S = 1000.0


def _mean(rows: pd.DataFrame, column: str, outcomes: tuple[str, ...] = (speedup.OK,)) -> float:
    """The mean of ``column`` over ``rows`` (one side's runs) that ended in one of ``outcomes``."""
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


def random_read_ms(a: Analysis, side: str) -> float:
    """The mean time of one random 4 KiB read on ``side``'s device (its fio record at depth 1);
    NaN without a record."""
    row = (a.rs.devices.get(side) or {}).get("spec_row") or {}
    iops = row.get("rand_read_iops")
    return MS_PER_S / float(iops) if iops else math.nan


def evidence(a: Analysis) -> pd.DataFrame:
    """Per tool run at its baseline: the measured facts the explanations rest on."""
    fast, slow = a.sides
    runs = a.baseline_runs
    reg = regime.regime_table(a)
    called = calls.call_table(a)
    rows = []
    for tool, tool_runs in runs.groupby("tool", sort=True):
        cap = tool_runs["cap_bytes"].dropna()
        device_kib = (tool_runs["Riops"] * tool_runs["Rsize"].fillna(0) + tool_runs["Wiops"] * tool_runs["Wsize"].fillna(0)
                      ) * tool_runs["runtime_s"]
        on = {side: speedup.side_rows(tool_runs.assign(_kib=device_kib), side) for side in (fast, slow)}
        row = {
            "tool": tool,
            "swap_reads_fast": _mean(on[fast], "swap_read_requests", COUNTED),
            "swap_reads_slow": _mean(on[slow], "swap_read_requests", COUNTED),
            "pfault_fast": _mean(on[fast], "Pfault", COUNTED),
            "pfault_slow": _mean(on[slow], "Pfault", COUNTED),
            "read_service_slow_s": _mean(on[slow], "read_service_s", COUNTED),
            "write_service_slow_s": _mean(on[slow], "write_service_s", COUNTED),
            "resident_mib": _mean(on[fast], "resident_peak_kib", COUNTED) * KIB / MIB,
            "cap_mib": float(cap.iloc[0]) / MIB if len(cap) else math.nan,
            "device_mib": _mean(on[fast], "_kib") * KIB / MIB,
            "cpu_cores_used": _mean(on[fast], "cpu_cores_used"),
            "runtime_fast_s": _mean(on[fast], "runtime_s"),
            "random_read_slow_ms": random_read_ms(a, slow),
            "transient_mib": _mean(on[slow], "transient_write_bytes", COUNTED) / MIB,
            "transient_top": _mode(on[slow], "transient_write_top"),
        }
        if tool in reg.index:
            row.update(issuer=reg.loc[tool, "swap_read_issuer_slow"], issuer_share=reg.loc[tool, "swap_read_issuer_share_slow"],
                       data_over_m=reg.loc[tool, "data_over_m"])
        if tool in called.index:
            row.update({k: called.loc[tool, k] for k in ("code_read_bytes", "code_read_device", "band_bytes",
                                                         "marginal_edge", "host_pageout_idle_s") if k in called})
        row["kept_from_paging"] = kept_from_paging(a, tool, row)
        rows.append(row)
    return pd.DataFrame(rows).set_index("tool") if rows else pd.DataFrame(columns=["tool"]).set_index("tool")


def _mode(rows: pd.DataFrame, column: str) -> str:
    values = rows[column].dropna().astype(str) if column in rows else pd.Series(dtype=str)
    return values.mode().iloc[0] if len(values) else ""


#: Writes to files a run removed before it ended (an MPI launcher's segments, say) are named in a
#: tool's reason from this many MiB a run.
TRANSIENT_MIB = 1.0


def paging_s(facts: pd.Series | pd.DataFrame) -> pd.Series | float:
    """What a tool's swap-in reads on the slow side cost there: reads x the device's random-read time (s)."""
    return facts["swap_reads_slow"] * facts["random_read_slow_ms"] / MS_PER_S


def paged(facts: pd.Series | pd.DataFrame) -> pd.Series | bool:
    """Whether a tool paged enough to matter: its swap-in reads on the slow side cost at least
    :data:`PAGING_SHARE` of its runtime on the fast side (:func:`paging_s`)."""
    return paging_s(facts) >= PAGING_SHARE * facts["runtime_fast_s"]


def _share(part: float, whole: float) -> str:
    return "?" if not (np.isfinite(part) and np.isfinite(whole) and whole > 0) else f"{part / whole:.0%}"


def _reason(row: pd.Series, facts: pd.Series | None, fast: str, slow: str) -> str:
    if facts is None or not row["group"]:
        return f"no speedup here: {row['status']}"
    did_page = bool(paged(facts))
    reads = (f"{_whole(facts['swap_reads_slow'])} swap-in reads per run on {slow}, "
             f"{_whole(facts['swap_reads_fast'])} on {fast}")
    if isinstance(facts.get("issuer"), str) and facts.get("issuer") and facts["swap_reads_slow"] > 0:
        reads += f" ({_share(facts['issuer_share'], 1.0)} on {slow} issued by {facts['issuer']})"
    cost = f"about {_fmt(paging_s(facts), ' s')} of {slow}'s time against {_fmt(facts['runtime_fast_s'], ' s')} on {fast}"
    footprint = f"peak resident {_whole(facts['resident_mib'], ' MiB')} of the {_whole(facts['cap_mib'], ' MiB')} cap"
    data = facts.get("data_over_m", math.nan)
    if isinstance(data, float) and np.isfinite(data):
        footprint += f"; uncapped, its data part is {data:.2g} x M"
    busy = facts["read_service_slow_s"] + facts["write_service_slow_s"]
    device = (f"{_whole(facts['device_mib'], ' MiB')} moved on its device; of {slow}'s device time, reads "
              f"{_share(facts['read_service_slow_s'], busy)} and writes {_share(facts['write_service_slow_s'], busy)}")
    paging = (f"it paged: {reads}, {cost}; {footprint}" if did_page else
              f"no paging that costs {slow} much: {reads}; {footprint}")
    transient = facts.get("transient_mib", math.nan)
    if isinstance(transient, float) and np.isfinite(transient) and transient >= TRANSIENT_MIB:
        device += (f"; at least {transient:.1f} MiB a run dirtied on {slow} in files its processes removed before it "
                   f"ended — temporary files, a launcher's segments (largest, {facts.get('transient_top') or '?'})")
    cpu = facts["cpu_cores_used"]
    busy_cpu = f"; CPU-bound ({cpu:.1f} cores busy)" if np.isfinite(cpu) and cpu >= CPU_BOUND_CORES else ""
    kept = facts.get("kept_from_paging")
    why_not = f"; what keeps it from paging here: {kept}" if (not did_page and row.get("paper_group") == speedup.GROUP_FAST
                                                               and isinstance(kept, str) and kept) else ""
    return f"{paging}; {device}{busy_cpu}{why_not}"


def kept_from_paging(a: Analysis, tool: str, facts: dict) -> str:
    """Which variable of the sizing rule keeps a tool from paging, from its data: its data part
    fits in M (and its input was stepped down by the time limit, when it was), it grows uncapped
    but does without under the cap (a JVM within its fixed heap), its cap squeezed its code rather
    than its data (the code its capped runs read again), or its call sits at an edge."""
    data = facts.get("data_over_m", math.nan)
    extra = _edge_and_code(facts)
    if not (isinstance(data, float) and np.isfinite(data)):
        return "; ".join(extra)
    if data < 1:
        text = f"its data part is {data:.2g} x M uncapped, so it fits in M"
        halved = regime.halved_from(a, tool)
        if halved:
            text += (f"; the rule stepped its input down because {', '.join(f'{b >> 10:,} KiB' for b in halved)} ran "
                     "capped past half the time limit")
        return "; ".join([text, *extra])
    settings = a.baseline_runs.loc[a.baseline_runs["tool"] == tool, "settings"].dropna().astype(str)
    heap = next((kv.split("=", 1)[1] for kv in (settings.iloc[0].split(",") if len(settings) else [])
                 if kv.startswith("java_mem=")), None)
    return "; ".join([
        f"uncapped it grows to {data:.2g} x M above its floor, but under the cap it did without it (peak resident "
        f"{_whole(facts['resident_mib'], ' MiB')} of {_whole(facts['cap_mib'], ' MiB')})"
        + (f"; its JVM's heap is bounded at -Xmx {heap}" if heap else ""), *extra])


def _edge_and_code(facts: dict) -> list[str]:
    """What else a tool's runs say kept it from paging (its :func:`evidence` from
    :mod:`biossd.analysis.calls`): its cap squeezed its code rather than its data (its capped runs
    read more code than one band from elsewhere than the device under study, and whether the host
    evicts idle memory itself), and the edge its call sits on."""
    out = []
    code, band = facts.get("code_read_bytes", math.nan), facts.get("band_bytes", math.nan)
    if isinstance(code, float) and isinstance(band, float) and np.isfinite(code) and np.isfinite(band) and code >= band:
        idle = facts.get("host_pageout_idle_s", math.nan)
        out.append(f"the cap squeezed its code rather than its data: its capped runs read {code / MIB:.1f} MiB of code "
                   f"again from {facts.get('code_read_device') or 'the host disk'} a run"
                   + (f" (this host pages out memory left idle for {idle:g} s itself, DAMON's pageout: code its warm-up "
                      "read was gone by its capped runs)" if isinstance(idle, float) and np.isfinite(idle) else ""))
    if facts.get("marginal_edge"):
        out.append(f"its call is marginal — {facts['marginal_edge']}")
    return out


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


def marginal_text(explained: pd.DataFrame) -> list[str]:
    """One line per tool whose call is marginal: its group here and in the paper, its speedup,
    the edge it sits on, and why its speedup is what it is."""
    return [f"{r['name']}: marginal ({r['group']} here at {_fmt(r['speedup'], 'x')}, {r['paper_group'] or 'not in'} the "
            f"paper) - {r['marginal_edge']}; {r['reason']}."
            for _, r in explained[explained["call"] == calls.MARGINAL].iterrows()]


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
    text = (f"The {fast} side accelerated {len(plus)} of the {len(have)} tools with a speedup by "
            f"{a.threshold:g}x or more" + (f": {named}." if len(plus) else ".") +
            (f" The other {len(rest)} changed by less than {a.threshold:g}x (median "
             f"{_fmt(float(rest['speedup'].median()), 'x')})." if len(rest) else "") +
            " " + calls.counts_text(explained) +
            " A marginal call sits at an edge — its headroom or its uncapped demand within one band of its cap, or "
            f"its interval touching {speedup.NEGLIGIBLE_BELOW:g}x or {a.threshold:g}x — and, like one between "
            f"{speedup.NEGLIGIBLE_BELOW:g}x and {a.threshold:g}x, counts as neither agreeing nor disagreeing.")
    pagers = have[paged(have)]
    text += (f" {len(pagers)} of the {len(have)} paged (swap-in reads on {slow} costing at least "
             f"{PAGING_SHARE:.0%} of the {fast} runtime at {slow}'s random-read time)"
             + (f": {', '.join(pagers['name'])}." if len(pagers) else "."))
    return text
