"""Fig. 1-3 (notebook 01_speedup): the aligners, every tool's speedup, and the pipelines by step (Lee,
Min and Yoon 2015, §2.1-2.2)."""

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
    resultset,
    speedup,
)
from biossd.features.quality import QUALITY_COLUMNS
from biossd.outputs.figures._style import (
    BOUND_HATCH,
    GROUP_COLOURS,
    MISSING_COLOUR,
    SIDE_COLOURS,
    empty,
    finish,
    mark_bounds,
    speedup_axis,
    tool_names,
)
from biossd.study import catalogue

#: Fig. 1: the short-read aligners (§2.1); their quality columns come from biossd.features.quality.
ALIGNERS = ("maq", "bwa", "bowtie2")


#: Fig. 2's band of speedups neither negligible nor G+.
BETWEEN_BAND_COLOUR = "#fbeed5"
#: Where a bar's "oom N" note starts, times the top of the bar or its interval: just above it, or
#: above the "≥" of a lower bound.
OOM_ABOVE, OOM_ABOVE_BOUND = 1.08, 1.4
#: Where a marginal call's mark sits, times its speedup (just above the line across its bar).
MARGINAL_ABOVE = 1.04


def fig01_aligners(a: Analysis) -> plt.Figure:
    """Fig. 1: (a) runtime of Maq, BWA and Bowtie 2 on both sides (baseline); (b) their quality
    against the synthetic truth, where the runs measured it."""
    fig, (ax1, ax2) = plt.subplots(1, 2, figsize=(10, 4))
    base = a.baseline.drop(columns="tool").reindex(list(ALIGNERS))
    x = np.arange(len(ALIGNERS))
    for i, col in enumerate(("runtime_s_fast", "runtime_s_slow")):
        side = a.sides[i]
        ax1.bar(x + (i - 0.5) * 0.38, base[col].fillna(0), 0.38, label=side, color=SIDE_COLOURS[i])
    for xi, tool in zip(x, ALIGNERS):
        status = base.at[tool, "status"] if tool in a.baseline.index else "not run on either side"
        if status != speedup.OK:
            ax1.text(xi, 0, textwrap.fill(str(status), 18), ha="center", va="bottom", fontsize=7, color=MISSING_COLOUR)
    ax1.set_xticks(x, [catalogue.get(t).data["paper_name"] for t in ALIGNERS])
    ax1.set_ylabel("runtime (s)")
    ax1.set_title("(a) runtime", loc="left", fontsize=10)
    ax1.legend(fontsize=8)
    runs = a.baseline_runs[a.baseline_runs["tool"].isin(ALIGNERS)]
    have = [c for c in QUALITY_COLUMNS if c in runs and runs[c].notna().any()]
    if have:
        quality = runs[runs["outcome"] == speedup.OK].groupby("tool")[have].mean().reindex(list(ALIGNERS))
        quality.plot.bar(ax=ax2, rot=0)
        ax2.set_ylim(0, 1)
        ax2.set_title("(b) quality", loc="left", fontsize=10)
    else:
        ax2.set_title("(b) quality", loc="left", fontsize=10)
        empty(ax2, "quality not measured: no run of these aligners was scored against the truth "
                    "(biossd quality; quality.json in the run directory)")
    return finish(fig, a, "Short-read aligners (Lee, Min and Yoon 2015, Fig. 1)")


PAPER_MARKER = dict(marker="D", color="black", markersize=4, lw=0, zorder=3)


def fig02_speedup(a: Analysis) -> plt.Figure:
    """Fig. 2: baseline speedup of every tool, one panel per (fast, slow) pair; each bar runs
    from 1x (no change) to the tool's speedup, coloured by its group, with its 95% bootstrap
    interval as a whisker, the paper's speedup beside it (a diamond), and the repeats the OOM
    killer ended written above it; the band between negligible and G+ is shaded; on the primary
    pair a *marginal* call (:mod:`biossd.analysis.calls`) is hatched, marked and counted as
    neither agreement nor disagreement; tools named as the paper names them, in the order of the
    first pair's speedup; tools without a speedup are labelled with why."""
    from biossd.analysis import calls

    pairs = a.pairs or [(a.fast, a.slow)]
    tools = sorted(a.rs.runs["tool"].unique())
    first = a.baseline["speedup"].reindex(tools)
    order = list(first.sort_values(ascending=False, na_position="last").index)
    entries = {e.id: e.data for e in catalogue.load_all()}
    paper = pd.Series({t: entries.get(t, {}).get("paper_speedup") for t in order}, dtype=float)
    paper_group = pd.Series({t: entries.get(t, {}).get("paper_group") or "" for t in order})
    names = tool_names(order)
    marginal = calls.call_table(a)["call"].reindex(order).eq(calls.MARGINAL) if len(a.baseline) else None
    fig, axes = plt.subplots(len(pairs), 1, figsize=(max(9, 0.55 * len(order) + 4), 5.6 * len(pairs)), squeeze=False)
    agreement = ""
    for ax, (fast, slow), letter in zip(axes[:, 0], pairs, "abcdefghij"):
        table = speedup.speedup_table(a.baseline_runs, fast, slow).set_index("tool").reindex(order)
        values = table["speedup"]
        bounded = table["speedup_is_lower_bound"].fillna(False).astype(bool)
        groups = speedup.group_of(values, a.threshold, bounded)
        colours = [GROUP_COLOURS[g] for g in groups]
        x = np.arange(len(order))
        ax.axhspan(speedup.NEGLIGIBLE_BELOW, a.threshold, color=BETWEEN_BAND_COLOUR, zorder=0)
        edge = (marginal.fillna(False).to_numpy() if marginal is not None and (fast, slow) == a.pair
                else np.zeros(len(order), bool))
        bars = ax.bar(x, (values - 1).fillna(0), bottom=1, color=colours, zorder=2,
                      hatch=["xxx" if m else None for m in edge], edgecolor=["0.2" if m else "none" for m in edge])
        mark_bounds(ax, bars, values, bounded)
        # Each speedup also as a line across its bar: a bar at about 1x has no height to see.
        shown = values.notna().to_numpy()
        ax.hlines(values[shown], x[shown] - 0.4, x[shown] + 0.4, colors=np.array(colours, dtype=object)[shown], lw=2.5,
                  zorder=2.5)
        if edge.any():  # and a marginal call's hatch, which such a bar cannot show, as a mark above it
            ax.plot(x[edge & shown], values[edge & shown] * MARGINAL_ABOVE, ls="none", marker="x", color="0.2", ms=5,
                    zorder=4)
        low, high = table["speedup_low"], table["speedup_high"]
        has = low.notna() & high.notna()
        ax.errorbar(x[has.to_numpy()], values[has], yerr=[(values - low)[has], (high - values)[has]], fmt="none",
                    ecolor="0.15", elinewidth=0.8, capsize=2, zorder=3, label="95% bootstrap interval")
        ax.plot(x, paper, **PAPER_MARKER, label="paper (Intel 520 / Barracuda)")
        speedup_axis(ax, [*values.dropna(), *paper.dropna(), *high.dropna(), *low.dropna()])
        for xi, (_, row) in zip(x, table.iterrows()):
            ooms = int(np.nansum([row.get("n_oom_fast", 0), row.get("n_oom_slow", 0)]))
            if ooms:
                top = max(v for v in (row["speedup"], row["speedup_high"], 1.0) if np.isfinite(v))
                # Above the "≥" of a lower bound (mark_bounds), not over it.
                above = OOM_ABOVE_BOUND if bool(bounded.get(row.name, False)) else OOM_ABOVE
                ax.text(xi, top * above, f"oom {ooms}", rotation=90, ha="center", va="bottom", fontsize=6,
                        color=GROUP_COLOURS[speedup.GROUP_FAST])
            if pd.isna(row["speedup"]):
                status = row["status"] if isinstance(row["status"], str) else "not run"
                ax.text(xi, 1, textwrap.fill(status, 14), rotation=90, ha="center", va="bottom", fontsize=6,
                        color=MISSING_COLOUR)
        ax.axhline(1, color="0.2", lw=0.6)
        ax.axhline(a.threshold, color="0.3", lw=0.8, ls="--")
        ax.set_ylabel("speedup")
        ax.set_xticks(x, names, rotation=50, ha="right", fontsize=7)
        ax.set_xlim(-0.6, len(order) - 0.4)
        called = pd.Series(np.where(edge, calls.MARGINAL, groups), index=groups.index)
        agrees = speedup.agreement(called, paper_group).dropna()
        between = int((called == speedup.GROUP_BETWEEN).sum())
        counted = (f"{int(agrees.sum())} of {len(agrees)} tools in the paper's group" if len(agrees) else
                   "no tool comparable with the paper") + (f", {between} between" if between else "") + (
                   f", {int(edge.sum())} marginal" if edge.any() else "")
        ax.set_title(f"({letter}) {slow} / {fast}: {counted}", loc="left", fontsize=10)
        # Outside the axes: a legend inside would cover the tallest bars and the paper's markers.
        handles = _legend_handles(a.threshold, bounded.any(), edge.any())
        ax.legend(handles=handles + ax.get_legend_handles_labels()[0], fontsize=7, loc="upper left",
                  bbox_to_anchor=(1.005, 1.0), borderaxespad=0)
        agreement = agreement or counted
    return finish(fig, a, f"Speedup per tool; G+ at {a.threshold:g}x or more, G0 below {speedup.NEGLIGIBLE_BELOW:g}x; "
                   f"{agreement} (Lee, Min and Yoon 2015, Fig. 2)")


def fig03_pipelines(a: Analysis) -> plt.Figure:
    """Fig. 3: each pipeline's runtime on both sides, broken down by step
    (:func:`biossd.analysis.speedup.pipeline_runtimes`). A chained step that did not end ok is
    hatched and named with its outcome (its runtime is then a lower bound, or the chain stopped
    there); a pipeline not run chained sums its steps' separate runs, and the panel says so."""
    pipes = [e for e in catalogue.load_all() if e.kind == "pipeline"]
    chains = resultset.chains(a.rs)
    cmap = plt.get_cmap("tab20")
    fig, axes = plt.subplots(len(pipes), 1, figsize=(13, 2.6 * len(pipes)), squeeze=False)
    for ax, entry, letter in zip(axes[:, 0], pipes, "abc"):
        sides = list(zip(("fast", "slow"), a.sides))
        got = speedup.pipeline_runtimes(entry, chains, a.baseline, sides)
        for bar in got.bars:
            ax.barh(bar.side_index, bar.runtime_s, left=bar.left_s, color=cmap(bar.step_index % 20), label=bar.label,
                    hatch="//" if bar.bad else None, edgecolor="white" if not bar.bad else "0.3", lw=0.5)
        fast, slow = sides[0][1], sides[1][1]
        if not any(got.totals_s.values()):
            empty(ax, f"{entry.data['paper_name']}: no step ran in this result set; " + "; ".join(got.notes))
            ax.set_title(f"({letter}) {entry.data['paper_name']}", loc="left", fontsize=9)
            continue
        ax.set_yticks([0, 1], [s for _, s in sides])
        ax.set_xlabel("runtime (s), sum of steps")
        ratio = got.speedup
        if ratio.lower_bound:
            total = f"{slow}/{fast} at least {ratio.value:.2f}x ({ratio.why})"
        elif ratio.value is not None:
            total = f"{slow}/{fast} {ratio.value:.2f}x"
        elif got.incomplete:
            total = f"no speedup, {ratio.why}"
        else:
            total = f"{slow}/{fast} n/a"
        paper = entry.data.get("paper_speedup")
        title = (f"({letter}) {entry.data['paper_name']}: {total} ({got.what}; paper "
                 f"{'n/a' if paper is None else f'{paper:g}x'})")
        ax.set_title(textwrap.fill(title, 110), loc="left", fontsize=9)
        if got.notes:
            ax.text(0.0, -0.4, textwrap.fill("; ".join(got.notes), 130), transform=ax.transAxes,
                    fontsize=7, color=MISSING_COLOUR, va="top")
        handles, labels = ax.get_legend_handles_labels()
        if handles:
            ax.legend(handles, [textwrap.fill(t, 34) for t in labels], fontsize=6.5, loc="upper left",
                      bbox_to_anchor=(1.01, 1.0), frameon=False)
    return finish(fig, a, "Pipelines, runtime per step (Lee, Min and Yoon 2015, Fig. 3)")


def _legend_handles(threshold: float, any_bound: bool, any_marginal: bool) -> list:
    """Fig. 2's legend: the groups' colours, and the hatches of a lower bound and a marginal call
    where a bar has one."""
    handles = [matplotlib.patches.Patch(color=GROUP_COLOURS[speedup.GROUP_FAST], label=f"G+ ({threshold:g}x or more)"),
               matplotlib.patches.Patch(color=GROUP_COLOURS[speedup.GROUP_BETWEEN],
                                        label=f"between ({speedup.NEGLIGIBLE_BELOW:g}x to {threshold:g}x, shaded)"),
               matplotlib.patches.Patch(color=GROUP_COLOURS[speedup.GROUP_FLAT],
                                        label=f"G0 (below {speedup.NEGLIGIBLE_BELOW:g}x)")]
    if any_bound:
        handles.append(matplotlib.patches.Patch(facecolor="white", edgecolor="0.2", hatch=BOUND_HATCH,
                                                label="≥: a lower bound (the slow side's runs all reached "
                                                      "the time limit)"))
    if any_marginal:
        handles.append(matplotlib.patches.Patch(facecolor="white", edgecolor="0.2", hatch="xxx",
                                                label="marginal (x): at an edge (neither agrees nor disagrees)"))
    return handles
