"""Which calls hold (docs/study.md, "Calls that hold"): each tool's baseline call — G+, G0 or
*between* (Lee, Min and Yoon 2015, Table 1's groups) — and, by one rule for every tool, whether it
is *marginal*: so close to an edge that another host, or another study sized again, could make
the other call. A marginal call counts as neither agreement nor disagreement with the paper.

The band of a tool is b = max(0.5 M_t, 3 σ_F) (:func:`biossd.study.sizing.rule.band_bytes`). Its call
is marginal at one of three edges (:data:`EDGES`):

* ``headroom``: its capped runs swapped out less than b, and their largest resident peak came
  within b of the cap — a floor a little larger elsewhere would make it page;
* ``demand``: its uncapped data demand d (the sizing record's resident peak at the full input,
  uncapped, less the record's floor) lies within b of M_t;
* ``interval``: its speedup's 95% interval touches 1.2x or 2x.

Beside each call, what else a reader needs to judge it: the floor measured in the session and its
spread, the cap, the headroom, the swap-outs, the code the capped runs read from elsewhere than
the device under study, and the repeats redone because the host was busy outside them.
"""

from __future__ import annotations

import math

import numpy as np
import pandas as pd

from biossd.analysis import Analysis, regime, speedup
from biossd.study.sizing import record as sizing_record
from biossd.study.sizing import rule

MARGINAL = "marginal"
EDGES = ("headroom", "demand", "interval")
#: /proc/vmstat counts swapped pages of this size.
PAGE_BYTES = 4096
#: Runs whose memory shows what a tool did: those that ended ok, and those stopped at the limit.
COUNTED = (speedup.OK, speedup.TIMEOUT)
MIB = 1 << 20
CALL_COLUMNS = ("call", "marginal_edge", "floor_bytes", "floor_sd_bytes", "data_memory_bytes", "cap_bytes",
                "headroom_bytes", "band_bytes", "swapped_out_bytes", "demand_bytes", "peak_anon_bytes",
                "peak_file_mapped_bytes", "peak_shmem_bytes", "top_process", "code_read_bytes", "code_read_device",
                "host_pageout_idle_s",
                "redone_fast", "redone_slow", "still_busy", "outside_cores_max")


def _median(rows: pd.DataFrame, column: str) -> float:
    values = rows[column].dropna() if column in rows else pd.Series(dtype=float)
    return float(values.median()) if len(values) else math.nan


def _mode(rows: pd.DataFrame, column: str) -> str:
    values = rows[column].dropna().astype(str) if column in rows else pd.Series(dtype=str)
    return values.mode().iloc[0] if len(values) else ""


def _demand_bytes(a: Analysis, tool: str) -> float:
    """d: the sizing record's uncapped data part at the full input, in bytes (its data / M times
    its M_t: M, or the GATK steps' M_GATK); NaN without a record."""
    rec = a.rs.sizing or {}
    over = sizing_record.data_over_m(rec).get(tool)
    chose = rec.get("chose") or {}
    m = chose.get("data_memory_gatk") if rule.is_gatk(tool) else chose.get("data_memory")
    return float(over) * float(m) if over is not None and m else math.nan


def edges(row: pd.Series, threshold: float) -> list[str]:
    """The edges (:data:`EDGES`) a call sits on, with what puts it there, from its row of
    :func:`call_table`'s measurements."""
    band = row["band_bytes"]
    out = []
    if (np.isfinite(row["headroom_bytes"]) and np.isfinite(band) and row["headroom_bytes"] < band
            and not row["swapped_out_bytes"] >= band):
        out.append(f"headroom: its resident peak came {row['headroom_bytes'] / MIB:.1f} MiB under its cap, within "
                   f"the band of {band / MIB:.1f} MiB, and it swapped out {row['swapped_out_bytes'] / MIB:.1f} MiB")
    if np.isfinite(row["demand_bytes"]) and np.isfinite(band) and abs(row["demand_bytes"] - row["data_memory_bytes"]) < band:
        out.append(f"demand: uncapped, its data part is {row['demand_bytes'] / MIB:.1f} MiB against "
                   f"{row['data_memory_bytes'] / MIB:.1f} MiB of data memory, within the band of {band / MIB:.1f} MiB")
    low, high = row.get("speedup_low", math.nan), row.get("speedup_high", math.nan)
    touched = [b for b in (speedup.NEGLIGIBLE_BELOW, threshold) if np.isfinite(low) and np.isfinite(high)
               and low <= b <= high]
    if touched:
        out.append(f"interval: {low:.2f}-{high:.2f} touches {' and '.join(f'{b:g}x' for b in touched)}")
    return out


def call_table(a: Analysis) -> pd.DataFrame:
    """One row per tool run at its baseline (indexed by tool): its call (its group, or
    :data:`MARGINAL`), the edges it sits on (``marginal_edge``, '; '-joined) and
    :data:`CALL_COLUMNS`' measurements (bytes; cores)."""
    base = a.baseline
    reg = regime.regime_table(a)
    runs = a.baseline_runs
    fast, slow = a.sides
    rows = []
    for tool in base.index:
        tool_runs = runs[runs["tool"] == tool]
        counted = tool_runs[tool_runs["outcome"].isin(COUNTED)]
        # Each side's own floor and cap (a host of a matched pair measured its own); shown: the fast
        # side's; the headroom is the least either side's runs left under their own cap.
        on_side = {s: speedup.side_rows(tool_runs, s) for s in (fast, slow)}
        counted_on = {s: rows[rows["outcome"].isin(COUNTED)] for s, rows in on_side.items()}
        fast_runs = on_side[fast]
        floor = _median(fast_runs, "floor_bytes")
        floor_sd = max((_median(on_side[s], "floor_sd_bytes") for s in (fast, slow)),
                       key=lambda v: v if np.isfinite(v) else -1.0)
        m = _median(tool_runs, "data_memory_bytes")
        if not np.isfinite(m) and tool in reg.index:
            m = float(reg.loc[tool, "data_memory_bytes"])
        if not np.isfinite(floor) and tool in reg.index:
            floor = float(reg.loc[tool, "floor_bytes"])
        cap = _median(fast_runs, "cap_bytes")
        left = [_median(counted_on[s], "cap_bytes") - float((counted_on[s]["resident_peak_kib"] * 1024).max())
                for s in (fast, slow) if len(counted_on[s])]
        headroom = min((x for x in left if np.isfinite(x)), default=math.nan)
        swapped = float((counted["swap_outs"] * PAGE_BYTES).max()) if len(counted) else math.nan
        code = counted["code_read_bytes"].dropna() if "code_read_bytes" in counted else pd.Series(dtype=float)
        devices = counted["code_read_device"].dropna() if "code_read_device" in counted else pd.Series(dtype=object)
        redone = tool_runs["redone"].fillna(0) if "redone" in tool_runs else pd.Series(0.0, index=tool_runs.index)
        outside = tool_runs["outside_cores"] if "outside_cores" in tool_runs else pd.Series(dtype=float)
        row = {"tool": tool, "floor_bytes": floor, "floor_sd_bytes": floor_sd, "data_memory_bytes": m, "cap_bytes": cap,
               "headroom_bytes": headroom, "swapped_out_bytes": swapped,
               "band_bytes": rule.band_bytes(m, 0.0 if not np.isfinite(floor_sd) else floor_sd)
               if np.isfinite(m) else math.nan,
               "demand_bytes": _demand_bytes(a, tool),
               # The parts of the capped runs' resident peak on the fast side, and its largest program.
               **{f"peak_{part}_bytes": _median(counted_on[fast], f"resident_{part}_bytes")
                  for part in ("anon", "file_mapped", "shmem")},
               "top_process": _mode(counted_on[fast], "resident_top_process"),
               "code_read_bytes": float(code.median()) if len(code) else math.nan,
               "code_read_device": devices.mode().iloc[0] if len(devices) else "",
               "host_pageout_idle_s": _median(tool_runs, "host_pageout_idle_s"),
               "redone_fast": int(redone[on_side[fast].index].sum()),
               "redone_slow": int(redone[on_side[slow].index].sum()),
               "still_busy": int((outside > _load_limit()).sum()),
               "outside_cores_max": float(outside.max()) if outside.notna().any() else math.nan,
               "speedup_low": base.at[tool, "speedup_low"], "speedup_high": base.at[tool, "speedup_high"]}
        on = edges(pd.Series(row), a.threshold) if base.at[tool, "group"] else []
        row["marginal_edge"] = "; ".join(on)
        row["call"] = MARGINAL if on else base.at[tool, "group"]
        rows.append(row)
    table = pd.DataFrame(rows, columns=["tool", *CALL_COLUMNS, "speedup_low", "speedup_high"])
    return table.drop(columns=["speedup_low", "speedup_high"]).set_index("tool", drop=False)


def _load_limit() -> float:
    from biossd.measure.hostload import HOST_LOAD_LIMIT_CORES

    return HOST_LOAD_LIMIT_CORES


def counts_text(table1: pd.DataFrame) -> str:
    """How Table 1's rows of the paper's tools divide: ran, with a call, agreeing, disagreeing,
    marginal, between, without a speedup."""
    paper = table1[table1["paper_group"].fillna("").ne("") & table1["substitute_of"].fillna("").eq("")]
    ran = paper[paper["mem"].fillna("").ne("")]
    called = ran[ran["call"].isin((speedup.GROUP_FAST, speedup.GROUP_FLAT))]
    agree = int(called["agrees"].eq(True).sum())
    marginal = ran[ran["call"] == MARGINAL]
    between = ran[ran["call"] == speedup.GROUP_BETWEEN]
    none = ran[ran["call"].fillna("") == ""]
    text = (f"Of the paper's {len(paper)} tools, {len(ran)} ran here; {len(called)} "
            f"{'has' if len(called) == 1 else 'have'} a firm call (G+ or G0), of which {agree} "
            f"{'agrees' if agree == 1 else 'agree'} with the paper and {len(called) - agree} "
            f"{'does' if len(called) - agree == 1 else 'do'} not")
    parts = []
    if len(marginal):
        parts.append(f"{len(marginal)} marginal ({', '.join(marginal['name'])})")
    if len(between):
        parts.append(f"{len(between)} between {speedup.NEGLIGIBLE_BELOW:g}x and {speedup.SPEEDUP_THRESHOLD:g}x "
                     f"({', '.join(between['name'])})")
    if len(none):
        parts.append(f"{len(none)} without a speedup ({', '.join(none['name'])})")
    return text + ("; " + ", ".join(parts) if parts else "") + "."
