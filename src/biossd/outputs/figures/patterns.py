"""Fig. 5-7 (notebook 03_patterns): the I/O patterns, their traces, and randomness against speedup
(Lee, Min and Yoon 2015, §3.2-3.3)."""

from __future__ import annotations

import textwrap
from typing import Sequence

import matplotlib
import matplotlib.patches
import matplotlib.pyplot as plt
import matplotlib.ticker
import numpy as np
from scipy.cluster import hierarchy

from biossd.analysis import (
    Analysis,
    patterns,
    resultset,
    speedup,
)
from biossd.core.units import SECTOR_BYTES
from biossd.outputs.figures._style import MISSING_COLOUR, SIDE_COLOURS, empty, finish

PATTERN_CMAP = "tab10"


#: At most this many requests of a trace are drawn (every k-th, deterministic) in Fig. 6.
TRACE_MAX_REQUESTS = 20_000


#: A request's bar is its size long, but at least this fraction of the LBA axis (a 4 KiB
#: request on a disk of 2^28 sectors would be invisible otherwise).
#: At most this many intervals on a trace panel's time axis (Fig. 6).
TRACE_TIME_TICKS = 4


TRACE_MIN_BAR_FRACTION = 0.01


def _no_clustering(a: Analysis, title: str) -> plt.Figure | None:
    """A one-panel figure saying why there are no patterns, or None when there are."""
    if a.clustering is not None:
        return None
    fig, ax = plt.subplots(figsize=(8, 3))
    empty(ax, f"no clustering: {a.clustering_note}")
    return finish(fig, None, title)


def _pattern_colours(names: Sequence[str]) -> dict[str, tuple]:
    cmap = plt.get_cmap(PATTERN_CMAP)
    return {n: cmap(i % cmap.N) for i, n in enumerate(sorted(names))}


def fig05_patterns(a: Analysis) -> plt.Figure:
    """Fig. 5: (a) the dendrogram (average linkage, Euclidean, normalized features) with the
    merge distances and the two cuts; (b) a radar chart of each pattern's mean features; (c) the
    numbers."""
    title = "I/O patterns by clustering (Lee, Min and Yoon 2015, Fig. 5)"
    if (empty := _no_clustering(a, title)) is not None:
        return empty
    c = a.clustering
    table = patterns.pattern_table(c)
    feats = list(c.matrix.columns)
    n = len(table)
    fig = plt.figure(figsize=(max(12, 2.6 * n), 11))
    grid = fig.add_gridspec(3, max(n, 1), height_ratios=(1.3, 1.0, 0.55))
    ax = fig.add_subplot(grid[0, :])
    labels = [f"{t} [{c.pattern[t]}]" for t in c.tools]
    dendro = hierarchy.dendrogram(c.linkage, labels=labels, ax=ax, leaf_rotation=60, color_threshold=0,
                                  above_threshold_color="0.2")
    for xs, ys in zip(dendro["icoord"], dendro["dcoord"]):
        ax.text((xs[1] + xs[2]) / 2, ys[1], f"{ys[1]:.2f}", ha="center", va="bottom", fontsize=6)
    for k, h in sorted(c.cut_heights.items()):
        ax.axhline(h, ls="--", lw=0.8, color="#b03a2e" if k == patterns.N_GROUPS else "#1f618d")
        ax.text(ax.get_xlim()[1], h, f" {k} clusters", va="center", fontsize=7)
    ax.set_ylabel("distance")
    ax.tick_params(axis="x", labelsize=7)
    ax.set_title("(a) dendrogram (average linkage, Euclidean); " + "; ".join(
        f"{p}: {g}" for p, g in zip(table["pattern"], table["cluster"]))
        + f"; {patterns.agreement_text(c, a.threshold)}", loc="left", fontsize=9)
    colours = _pattern_colours(table["pattern"])
    angles = np.linspace(0, 2 * np.pi, len(feats), endpoint=False)
    for i, row in table.iterrows():
        rax = fig.add_subplot(grid[1, i], projection="polar")
        values = row[feats].to_numpy(dtype=float)
        rax.plot(np.append(angles, angles[0]), np.append(values, values[0]), color=colours[row["pattern"]])
        rax.fill(np.append(angles, angles[0]), np.append(values, values[0]), color=colours[row["pattern"]], alpha=0.3)
        rax.set_xticks(angles, feats, fontsize=7)
        rax.set_ylim(0, 1)
        rax.set_yticklabels([])
        rax.set_title(f"{row['pattern']} ({row['cluster']}), {row['mean_speedup']:.1f}x", fontsize=9)
    tax = fig.add_subplot(grid[2, :])
    tax.axis("off")
    shown = table[["pattern", "cluster", "n_tools", "mean_speedup", *feats]]
    cell = [[f"{v:.2f}" if isinstance(v, float) else str(v) for v in r] for r in shown.itertuples(index=False)]
    tab = tax.table(cellText=cell, colLabels=list(shown.columns), loc="upper center", cellLoc="center")
    tab.auto_set_font_size(False)
    tab.set_fontsize(8)
    tab.scale(1, 1.6)
    tax.set_title("(c) mean normalized features per pattern (members: the [P] after each tool above)",
                  loc="left", fontsize=9, pad=2)
    notes = []
    if c.excluded:
        notes.append("not clustered: " + "; ".join(f"{t} ({w})" for t, w in sorted(c.excluded.items())))
    if c.dropped_features:
        notes.append("features not used: " + "; ".join(f"{f} ({w})" for f, w in sorted(c.dropped_features.items())))
    if c.filled:
        notes.append("set for want of requests (patterns.NO_REQUESTS): "
                     + "; ".join(f"{t}: {w}" for t, w in sorted(c.filled.items())))
    if notes:
        fig.text(0.01, 0.005, textwrap.fill(" | ".join(notes), 160), fontsize=7, color=MISSING_COLOUR)
    return finish(fig, a, title)


def fig06_traces(a: Analysis) -> plt.Figure:
    """Fig. 6: a read and a write trace per pattern — each request a vertical bar at its issue
    time from its start sector, as long as its size — from the block trace of the pattern's
    representative tool (its first baseline run on the feature side)."""
    if (empty := _no_clustering(a, "Representative I/O traces per pattern (Lee, Min and Yoon 2015, Fig. 6)")) is not None:
        return empty
    reps = patterns.representatives(a.clustering)
    runs = speedup.side_rows(a.baseline_runs, a.features_side)
    fig, axes = plt.subplots(2, max(len(reps), 1), figsize=(3.2 * max(len(reps), 1), 5.5), squeeze=False)
    for col, (pattern, tool) in enumerate(sorted(reps.items())):
        mine = runs[(runs["tool"] == tool) & (runs["outcome"] == speedup.OK)].sort_values("rep")
        trace = resultset.first_trace(a.rs, mine)
        for r, (op, name) in enumerate((("R", "read"), ("W", "write"))):
            ax = axes[r, col]
            ax.set_title(f"{pattern}: {tool} ({name})" if r == 0 else f"({name})", fontsize=8)
            if trace is None:
                empty(ax, "no block trace for this run")
                continue
            req = trace[trace["op"] == op]
            if req.empty:
                empty(ax, f"no {name} requests")
                continue
            step = max(1, len(req) // TRACE_MAX_REQUESTS)
            req = req.iloc[::step]
            t = req["issue_s"] - trace["issue_s"].min()
            lo, hi = float(trace["sector"].min()), float((trace["sector"] + trace["bytes"] // SECTOR_BYTES).max())
            length = np.maximum(req["bytes"] // SECTOR_BYTES, TRACE_MIN_BAR_FRACTION * max(hi - lo, 1.0))
            ax.vlines(t, req["sector"], req["sector"] + length, lw=0.5, color=SIDE_COLOURS[r])
            ax.set_ylim(lo, hi + TRACE_MIN_BAR_FRACTION * (hi - lo))
            ax.set_xlabel("time (s)", fontsize=7)
            ax.set_ylabel("LBA (sector); bar = request size", fontsize=6)
            ax.tick_params(labelsize=6)
            # Few time ticks: a trace of a fraction of a millisecond otherwise prints overlapping labels.
            ax.xaxis.set_major_locator(matplotlib.ticker.MaxNLocator(nbins=TRACE_TIME_TICKS))
    return finish(fig, None, "Representative I/O traces per pattern (Lee, Min and Yoon 2015, Fig. 6); bars at least "
                 f"{TRACE_MIN_BAR_FRACTION:.0%} of the LBA axis long")


def fig07_randomness(a: Analysis) -> plt.Figure:
    """Fig. 7: CAR against Rsize (a) and Wsize (b), normalized; circle area proportional to the
    tool's speedup; colour by pattern."""
    if (empty := _no_clustering(a, "Randomness and speedup (Lee, Min and Yoon 2015, Fig. 7)")) is not None:
        return empty
    c = a.clustering
    colours = _pattern_colours(c.pattern.unique())
    fig, axes = plt.subplots(1, 2, figsize=(11, 5))
    for ax, feat, letter in zip(axes, ("Rsize", "Wsize"), "ab"):
        ax.set_title(f"({letter}) CAR vs {feat}", loc="left", fontsize=10)
        if feat not in c.matrix or "CAR" not in c.matrix:
            empty(ax, f"not measured: {c.dropped_features.get(feat) or c.dropped_features.get('CAR')}")
            continue
        s = c.speedup.fillna(1.0).clip(lower=0.5)
        for pattern in sorted(c.pattern.unique()):
            tools = c.pattern.index[c.pattern == pattern]
            ax.scatter(c.matrix.loc[tools, "CAR"], c.matrix.loc[tools, feat], s=12 * s[tools], alpha=0.6,
                       color=colours[pattern], label=pattern, edgecolor="k", lw=0.4)
        for tool in c.tools:
            ax.annotate(tool, (c.matrix.at[tool, "CAR"], c.matrix.at[tool, feat]), fontsize=6,
                        xytext=(3, 3), textcoords="offset points")
        ax.set_xlim(-0.05, 1.1)
        ax.set_ylim(-0.05, 1.1)
        ax.set_xlabel("CAR (normalized)")
        ax.set_ylabel(f"{feat} (normalized)")
        ax.legend(fontsize=7, markerscale=0.5)
    return finish(fig, a, "Randomness and speedup; circle area ~ speedup (Lee, Min and Yoon 2015, Fig. 7)")
