"""Fig. 8 and 9 (notebook 04_scaling): input size and main memory against SSD effectiveness (Lee, Min and Yoon 2015, §3.4-3.5)."""

from __future__ import annotations

import textwrap

import matplotlib
import matplotlib.patches
import matplotlib.pyplot as plt
import matplotlib.ticker
import numpy as np
import pandas as pd

from biossd.analysis import (
    Analysis,
    regime,
    speedup,
)
from biossd.outputs.figures._style import MISSING_COLOUR, SIDE_COLOURS, empty, finish, mark_bounds, speedup_axis

#: On a log axis of several lines' points, a tick closer than this ratio to the last one is left
#: out (its label would overprint the other's).
MIN_TICK_RATIO = 1.03


def fig08_input_size(a: Analysis, focus_tool: str = "ampliconnoise") -> plt.Figure:
    """Fig. 8: (a) ``focus_tool``'s runtime against the input replication factor on both sides,
    with its break-even scale; (b) every tool's speedup against scale, at its smallest cap."""
    table = a.speedups
    fig, (ax1, ax2) = plt.subplots(1, 2, figsize=(14, 4.8))
    first_cap = table.assign(_m=table["mem"].map(_cap_order(a))).sort_values("_m").groupby("tool")["mem"].first()
    mine = table[(table["tool"] == focus_tool) & (table["mem"] == first_cap.get(focus_tool))].sort_values("scale")
    if mine.empty:
        empty(ax1, f"{focus_tool} not run")
    else:
        for i, (suffix, side) in enumerate(zip(("_fast", "_slow"), a.sides)):
            ax1.plot(mine["scale"], mine[f"runtime_s{suffix}"], marker="o", color=SIDE_COLOURS[i], label=side)
            # Runs stopped at the time limit: hollow markers at the time they ran (a lower bound).
            stopped = mine[mine[f"runtime_s{suffix}"].isna() & mine[f"timeout_runtime_s{suffix}"].notna()]
            ax1.plot(stopped["scale"], stopped[f"timeout_runtime_s{suffix}"], marker="o", lw=0, mfc="none",
                     color=SIDE_COLOURS[i], label=f"{side}: stopped at the time limit" if len(stopped) else None)
        be = speedup.breakeven_scale(mine["scale"], mine["speedup"], a.threshold)
        if not np.isnan(be):
            ax1.axvline(be, ls="--", color="0.3", lw=0.8)
            # The paper's "breakeven point" (§3.4) is where the HDD curve leaves the SSD one; here,
            # the first scale from which the speedup stays at the G+ threshold or more.
            ax1.text(be, ax1.get_ylim()[1], f" break-even: x{be:g}\n (speedup >= {a.threshold:g}x from here)",
                     va="top", fontsize=8)
        else:
            ax1.text(0.02, 0.98, f"no break-even up to x{mine['scale'].max():g}", transform=ax1.transAxes,
                     va="top", fontsize=8)
        ax1.set_xscale("log", base=2)
        ax1.set_xticks(sorted(mine["scale"].unique()), [f"x{v:g}" for v in sorted(mine["scale"].unique())])
        ax1.set_xlim(mine["scale"].min() / 1.3, mine["scale"].max() * 1.3)
        ax1.set_xlabel("input replication factor")
        ax1.set_ylabel("runtime (s)")
        ax1.legend(fontsize=8)
    ax1.set_title(f"(a) {focus_tool} (cap {first_cap.get(focus_tool, '?')})", loc="left", fontsize=10)
    lines = {}
    for tool, g in table.groupby("tool"):
        rows = g[g["mem"] == first_cap[tool]].sort_values("scale")
        if rows["scale"].nunique() > 1:
            lines[tool] = (rows["scale"], rows["speedup"])
    _speedup_lines(ax2, a, lines, "input replication factor", "(b) speedup against input size (gaps: no speedup)",
                   "no tool was run at several scales")
    return finish(fig, a, "Input size and SSD effectiveness (Lee, Min and Yoon 2015, Fig. 8)")


def _speedup_lines(ax: plt.Axes, a: Analysis, lines: dict[str, tuple[pd.Series, pd.Series]], xlabel: str,
                   title: str, none_text: str) -> None:
    """One speedup line per tool against ``xlabel`` (log-log), the G+ threshold dashed; a tool
    with no speedup at any point (no pair of sides ran it) has no line."""
    drawn = {tool: (x, y) for tool, (x, y) in lines.items()
             if (np.isfinite(np.asarray(x, float)) & np.isfinite(np.asarray(y, float))).any()}
    if not drawn:
        empty(ax, none_text if not lines else "no speedup to draw: no pair of sides ran these tools")
        ax.set_title(title, loc="left", fontsize=10)
        return
    lines = drawn
    for tool, (x, y) in lines.items():
        ax.plot(x, y, marker=".", lw=0.8, label=tool)
    ax.axhline(a.threshold, ls="--", color="0.3", lw=0.8)
    ax.set_xscale("log", base=2)
    xs = sorted({float(v) for x, _ in lines.values() for v in x if np.isfinite(v) and v > 0})
    ticks: list[float] = []
    for x in xs:  # no two labels collide
        if not ticks or x >= ticks[-1] * MIN_TICK_RATIO:
            ticks.append(x)
    if ticks:
        ax.set_xticks(ticks, [f"{v:.3g}" for v in ticks])
        ax.xaxis.set_minor_formatter(matplotlib.ticker.NullFormatter())
    speedup_axis(ax, [v for _, y in lines.values() for v in y])
    ax.set_xlabel(xlabel)
    ax.set_ylabel("speedup")
    ax.set_title(title, loc="left", fontsize=10)
    if lines:  # beside the axes: inside, it would cover lines
        ax.legend(fontsize=6, ncol=1 if len(lines) <= 12 else 2, loc="upper left", bbox_to_anchor=(1.01, 1.0),
                  borderaxespad=0)


def _cap_order(a: Analysis) -> dict[str, float]:
    runs = a.rs.runs
    return runs.groupby("mem")["mem_bytes"].first().fillna(np.inf).to_dict()


def _memory_over_input(a: Analysis, table: pd.DataFrame) -> pd.Series:
    """Each configuration's memory over its tool's input, as the paper's Fig. 9 read it (its 4,
    16 and 32 GB of RAM over 20 GB of input: 0.2, 0.8 and 1.6): the whole cap — floor and data
    memory — over the input, the cap each configuration's runs had (each tool's own: its floor is
    its own). NaN where the result set does not record the input's size."""
    reg = regime.regime_table(a)
    caps = a.rs.runs.groupby(["tool", "mem"])["cap_bytes"].median()
    inputs = table["tool"].map(reg["input_bytes"]) if len(reg) else np.nan
    cap = pd.Series([caps.get((t, m), np.nan) for t, m in zip(table["tool"], table["mem"])], index=table.index)
    return cap / inputs


def _single_runs(table: pd.DataFrame) -> pd.Series:
    """Configurations whose speedup rests on one ok run on either side (no interval)."""
    return (table["n_ok_fast"].fillna(0).le(1) | table["n_ok_slow"].fillna(0).le(1)) & table["speedup"].notna()


#: The paper's Fig. 9: total memory over input at its three points (4, 16 and 32 GB on 20 GB).
PAPER_FIG9_RATIOS = (0.2, 0.8, 1.6)


def memory_points(a: Analysis) -> pd.DataFrame:
    """Fig. 9's points: every configuration at its tool's smallest scale with its speedup and its
    total memory (cap) over its input (``cap_over_input``), in cap order."""
    table = a.speedups
    first_scale = table.groupby("tool")["scale"].transform("min")
    table = table[table["scale"] == first_scale].copy()
    table["_m"] = table["mem"].map(_cap_order(a))
    table["cap_over_input"] = _memory_over_input(a, table)
    return table.sort_values(["tool", "_m"]).drop(columns="_m")


def regime_note(table: pd.DataFrame, prefix: str = "gatk_") -> str:
    """Whether the GATK points (:func:`memory_points`) reached the paper's regime (total memory
    over input 0.2, 0.8 and 1.6), said plainly with the ratios they had."""
    ratios = table.loc[table["tool"].str.startswith(prefix), "cap_over_input"].dropna()
    if ratios.empty:
        return "the result set does not record the GATK input's size: memory over input unknown"
    low, high = ratios.min(), ratios.max()
    reached = high <= max(PAPER_FIG9_RATIOS) * 1.5
    if reached:
        return f"total memory over input {low:.2g}-{high:.2g} (the paper: 0.2, 0.8 and 1.6)"
    return (f"not the paper's regime: total memory (cap) over input is {low:.3g}-{high:.3g} here, the paper's 0.2, 0.8 "
            "and 1.6; each step's floor (its JVM) is far larger than its input, so only the data memory above the "
            "floor follows the paper's 0.2, 0.8 and 1.6 x input")


def fig09_memory(a: Analysis, prefix: str = "gatk_") -> plt.Figure:
    """Fig. 9: speedup per memory size at each tool's smallest scale: (a) the GATK steps
    (``prefix``), one bar per memory point in the order of the tool's caps, each labelled with its
    own total memory (its cap) over its input, as the paper's 4, 16 and 32 GB on 20 GB are 0.2,
    0.8 and 1.6 (or with its cap, where the result set does not record the input's size), a bar
    resting on one run a side hatched; and whether the paper's regime was reached, said under it;
    (b) every tool run under several caps, against memory over input (or the cap in GiB)."""
    table = memory_points(a)
    table["_m"] = table["mem"].map(_cap_order(a))
    table["_ratio"] = table["cap_over_input"]
    table["_single"] = _single_runs(table)
    by_ratio = table["_ratio"].notna().all() and len(table)
    fig, (ax1, ax2) = plt.subplots(1, 2, figsize=(14, 5.2))
    gatk = sorted(t for t in table["tool"].unique() if t.startswith(prefix))
    n_points = max((table["tool"].eq(t).sum() for t in gatk), default=0)
    if not gatk:
        empty(ax1, f"no {prefix}* tool was run")
    width = 0.8 / max(n_points, 1)
    shown = []
    cmap = plt.get_cmap("viridis")
    for i in range(n_points):
        rows = pd.DataFrame([table[table["tool"] == t].sort_values("_m").iloc[i] if table["tool"].eq(t).sum() > i
                             else pd.Series({"tool": t, "speedup": np.nan, "speedup_is_lower_bound": False,
                                             "_single": False})
                             for t in gatk]).set_index("tool")
        share = f"{PAPER_FIG9_RATIOS[i]:g} x input" if i < len(PAPER_FIG9_RATIOS) else f"point {i + 1}"
        bars = ax1.bar(np.arange(len(gatk)) + i * width, (rows["speedup"] - 1).fillna(0), width, bottom=1,
                       label=f"data memory {share}" if by_ratio else f"memory point {i + 1}",
                       color=cmap(i / max(n_points - 1, 1)),
                       hatch=["//" if s else None for s in rows["_single"].fillna(False)])
        mark_bounds(ax1, bars, rows["speedup"], rows["speedup_is_lower_bound"].fillna(False).astype(bool))
        shown += list(rows["speedup"].dropna())
        for j, (_, row) in enumerate(rows.iterrows()):
            value = "n/a" if pd.isna(row["speedup"]) else f"{row['speedup']:.2f}" + (" (n=1)" if row["_single"] else "")
            under = (f"{row['_ratio']:.3g}" if by_ratio and pd.notna(row.get("_ratio")) else str(row.get("mem", "")))
            ax1.text(j + i * width, 1 if pd.isna(row["speedup"]) else max(row["speedup"], 1), value, fontsize=6,
                     ha="center", va="bottom", rotation=90, color=MISSING_COLOUR if pd.isna(row["speedup"]) else "0.2")
            ax1.text(j + i * width, -0.02, under, fontsize=6, ha="center", va="top", rotation=90,
                     transform=ax1.get_xaxis_transform())
    if gatk:
        ax1.set_xticks(np.arange(len(gatk)) + 0.4 - width / 2, gatk, fontsize=7)
        ax1.tick_params(axis="x", pad=28)
    speedup_axis(ax1, shown)
    ax1.axhline(1, color="0.2", lw=0.6)
    ax1.axhline(a.threshold, color="0.3", lw=0.8, ls="--")
    ax1.set_ylabel("speedup")
    ax1.set_title("(a) GATK steps", loc="left", fontsize=10)
    lines = {}
    for tool, g in table.groupby("tool"):
        rows = g.sort_values("_m")
        if rows["mem"].nunique() > 1:
            lines[tool] = (rows["_ratio"] if by_ratio else rows["_m"] / (1 << 30), rows["speedup"])
    _speedup_lines(ax2, a, lines, "total memory (cap) / input" if by_ratio else "memory cap (GiB)",
                   "(b) every tool run under several caps", "no tool was run under several caps")
    finish(fig, a, "Main memory size and SSD effectiveness (Lee, Min and Yoon 2015, Fig. 9)")
    if gatk:  # under the panels, after the layout: the legend of (a) and whether the paper's regime was reached
        fig.subplots_adjust(bottom=0.3)
        fig.legend(*ax1.get_legend_handles_labels(), title="(a): hatched, one run a side; under each bar, its cap / input"
                   if by_ratio else "(a)", fontsize=7, title_fontsize=7, loc="lower left", bbox_to_anchor=(0.01, 0.07),
                   ncol=3, borderaxespad=0)
        fig.text(0.01, 0.01, textwrap.fill(regime_note(table, prefix), 170), fontsize=7, va="bottom")
    return fig
