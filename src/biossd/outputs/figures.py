"""The paper's figures, drawn from an :class:`biossd.analysis.Analysis`. One function
per figure, each returning a matplotlib figure that :func:`biossd.outputs.report.save_figure` writes as
``figNN_<slug>.pdf|png``. Missing data is drawn as such (a labelled gap, "not run", "oom"),
and what differs between the two sides other than the drive is printed at the top.
"""

from __future__ import annotations

import textwrap
from typing import Sequence

import matplotlib
import matplotlib.patches
import matplotlib.ticker

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402
import pandas as pd  # noqa: E402
from scipy.cluster import hierarchy  # noqa: E402

from biossd.analysis import Analysis  # noqa: E402
from biossd.analysis import patterns, predict, regime, resultset, speedup
from biossd.features import extract as features
from biossd.features.quality import QUALITY_COLUMNS  # noqa: E402
from biossd.host.devices import SECTOR_BYTES  # noqa: E402
from biossd.study import catalogue, chain

#: Fig. 1: the short-read aligners (§2.1); their quality columns come from biossd.features.quality.
ALIGNERS = ("maq", "bwa", "bowtie2")
#: Fig. 4: which features share a panel, with the panel's axis label and units.
FIG04_PANELS: tuple[tuple[str, tuple[str, ...], str], ...] = (
    ("(a) Butil", ("Butil",), "fraction of time busy (%util)"),
    ("(b) Riops, Wiops", ("Riops", "Wiops"), "requests/s"),
    ("(c) Pfault", ("Pfault",), "pages swapped/s"),
    ("(d) CAR", ("CAR",), "fraction"),
    ("(e) Rsize, Wsize", ("Rsize", "Wsize"), "KiB/request"),
    ("(f) WBlen", ("WBlen",), "requests"),
)
#: Fig. 10: the CPU and memory features (§3.6).
FIG10_COLUMNS = ("cpu_cores_used", *features.CPU_MEMORY_COLUMNS)
GROUP_COLOURS = {speedup.GROUP_FAST: "#c0392b", speedup.GROUP_FLAT: "#2c7fb8", speedup.GROUP_BETWEEN: "#e6a23c",
                 "": "#999999"}
#: On a log axis of several lines' points, a tick closer than this ratio to the last one is left
#: out (its label would overprint the other's).
MIN_TICK_RATIO = 1.03
#: Fig. 2's band of speedups neither negligible nor G+.
BETWEEN_BAND_COLOUR = "#fbeed5"
PATTERN_CMAP = "tab10"
SIDE_COLOURS = ("#2c7fb8", "#c0392b")
MISSING_COLOUR = "0.55"
NOTE_WIDTH_CHARS = 110
#: At most this many requests of a trace are drawn (every k-th, deterministic) in Fig. 6.
TRACE_MAX_REQUESTS = 20_000
#: A request's bar is its size long, but at least this fraction of the LBA axis (a 4 KiB
#: request on a disk of 2^28 sectors would be invisible otherwise).
#: At most this many intervals on a trace panel's time axis (Fig. 6).
TRACE_TIME_TICKS = 4
TRACE_MIN_BAR_FRACTION = 0.01


# -- shared pieces -----------------------------------------------------------------------------------------------------
def _notes(fig: plt.Figure, a: Analysis) -> None:
    """What differs between the pair's sides besides the drive, at the top of the figure."""
    if a.differences:
        text = "\n".join(textwrap.fill("NOTE: " + n, NOTE_WIDTH_CHARS) for n in a.differences)
        fig.text(0.01, 1.0, text, ha="left", va="bottom", fontsize=7, color="#b03a2e")


def _finish(fig: plt.Figure, a: Analysis | None, title: str) -> plt.Figure:
    """Title, the pair's notes (when the figure compares the pair) and a tight layout."""
    fig.suptitle(title)
    if a is not None:
        _notes(fig, a)
    fig.tight_layout()
    return fig


def _empty(ax: plt.Axes, text: str) -> None:
    ax.text(0.5, 0.5, textwrap.fill(text, 40), ha="center", va="center", fontsize=8, color=MISSING_COLOUR,
            transform=ax.transAxes)
    ax.set_xticks([])
    ax.set_yticks([])


def _no_clustering(a: Analysis, title: str) -> plt.Figure | None:
    """A one-panel figure saying why there are no patterns, or None when there are."""
    if a.clustering is not None:
        return None
    fig, ax = plt.subplots(figsize=(8, 3))
    _empty(ax, f"no clustering: {a.clustering_note}")
    return _finish(fig, None, title)


def _pattern_colours(names: Sequence[str]) -> dict[str, tuple]:
    cmap = plt.get_cmap(PATTERN_CMAP)
    return {n: cmap(i % cmap.N) for i, n in enumerate(sorted(names))}


def _missing_reason(table: pd.DataFrame, feature: str) -> str:
    for text in table.get("missing_reason", pd.Series(dtype=str)).dropna():
        why = features.parse_missing(text).get(feature)
        if why:
            return why
    return "no runs"


# -- Fig. 1 ------------------------------------------------------------------------------------------------------------
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
        _empty(ax2, "quality not measured: no run of these aligners was scored against the truth "
                    "(biossd quality; quality.json in the run directory)")
    return _finish(fig, a, "Short-read aligners (Lee, Min and Yoon 2015, Fig. 1)")


# -- Fig. 2 ------------------------------------------------------------------------------------------------------------
#: Speedup axes: plain multiples, on a log scale.
SPEEDUP_TICKS = (0.2, 0.5, 1, 2, 5, 10, 20, 50, 100, 200)
FINE_SPEEDUP_TICKS = (0.5, 0.6, 0.7, 0.8, 0.9, 1, 1.1, 1.2, 1.5, 2, 2.5, 3)
MIN_TICKS = 3
PAPER_MARKER = dict(marker="D", color="black", markersize=4, lw=0, zorder=3)


def _speedup_axis(ax: plt.Axes, values: Sequence[float], horizontal: bool = False) -> None:
    """A log axis of plain multiples (1x, 2x, 5x, ...) spanning ``values`` and 1x (the y axis,
    or the x axis when ``horizontal``)."""
    finite = [v for v in values if np.isfinite(v) and v > 0] + [1.0]
    lo, hi = min(finite) / 1.3, max(finite) * 1.3
    if horizontal:
        ax.set_xscale("log")
        ax.set_xlim(lo, hi)
    else:
        ax.set_yscale("log")
        ax.set_ylim(lo, hi)
    ticks = [t for t in SPEEDUP_TICKS if lo <= t <= hi]
    if len(ticks) < MIN_TICKS:  # a narrow range: the finer plain multiples too
        ticks = sorted({t for t in (*FINE_SPEEDUP_TICKS, *SPEEDUP_TICKS) if lo <= t <= hi})
    axis = ax.xaxis if horizontal else ax.yaxis
    axis.set_major_locator(matplotlib.ticker.FixedLocator(ticks))
    axis.set_major_formatter(matplotlib.ticker.FuncFormatter(lambda v, _pos: f"{v:g}\u00d7"))
    axis.set_minor_formatter(matplotlib.ticker.NullFormatter())


def _mark_bounds(ax: plt.Axes, bars, values: pd.Series, bounded: pd.Series) -> None:
    """Hatch and mark with "≥" the bars whose speedup is a lower bound (the slow side's runs
    all reached the time limit: the true speedup is higher)."""
    for bar, is_bound, v in zip(bars, bounded.fillna(False).astype(bool), values):
        if is_bound:
            bar.set_hatch("//")
            ax.text(bar.get_x() + bar.get_width() / 2, v * 1.05, "≥", ha="center", va="bottom", fontsize=8)


def fig02_speedup(a: Analysis) -> plt.Figure:
    """Fig. 2: baseline speedup of every tool, one panel per (fast, slow) pair; each bar runs
    from 1x (no change) to the tool's speedup, coloured by its group, with its 95% bootstrap
    interval as a whisker, the paper's speedup beside it (a diamond), and the repeats the OOM
    killer ended written above it; the band between negligible and G+ is shaded; tools in the
    order of the first pair's speedup; tools without a speedup are labelled with why."""
    pairs = a.pairs or [(a.fast, a.slow)]
    tools = sorted(a.rs.runs["tool"].unique())
    first = a.baseline["speedup"].reindex(tools)
    order = list(first.sort_values(ascending=False, na_position="last").index)
    entries = {e.id: e.data for e in catalogue.load_all()}
    paper = pd.Series({t: entries.get(t, {}).get("paper_speedup") for t in order}, dtype=float)
    paper_group = pd.Series({t: entries.get(t, {}).get("paper_group") or "" for t in order})
    fig, axes = plt.subplots(len(pairs), 1, figsize=(max(8, 0.42 * len(order)), 3.6 * len(pairs)), squeeze=False)
    agreement = ""
    for ax, (fast, slow), letter in zip(axes[:, 0], pairs, "abcdefghij"):
        table = speedup.speedup_table(a.baseline_runs, fast, slow).set_index("tool").reindex(order)
        values = table["speedup"]
        bounded = table["speedup_is_lower_bound"].fillna(False).astype(bool)
        groups = speedup.group_of(values, a.threshold, bounded)
        colours = [GROUP_COLOURS[g] for g in groups]
        x = np.arange(len(order))
        ax.axhspan(speedup.NEGLIGIBLE_BELOW, a.threshold, color=BETWEEN_BAND_COLOUR, zorder=0,
                   label=f"between ({speedup.NEGLIGIBLE_BELOW:g}x to {a.threshold:g}x)")
        bars = ax.bar(x, (values - 1).fillna(0), bottom=1, color=colours, zorder=2)
        _mark_bounds(ax, bars, values, bounded)
        low, high = table["speedup_low"], table["speedup_high"]
        has = low.notna() & high.notna()
        ax.errorbar(x[has.to_numpy()], values[has], yerr=[(values - low)[has], (high - values)[has]], fmt="none",
                    ecolor="0.15", elinewidth=0.8, capsize=2, zorder=3, label="95% bootstrap interval")
        ax.plot(x, paper, **PAPER_MARKER, label="paper (Intel 520 / Barracuda)")
        _speedup_axis(ax, [*values.dropna(), *paper.dropna(), *high.dropna(), *low.dropna()])
        for xi, (_, row) in zip(x, table.iterrows()):
            ooms = int(np.nansum([row.get("n_oom_fast", 0), row.get("n_oom_slow", 0)]))
            if ooms:
                top = max(v for v in (row["speedup"], row["speedup_high"], 1.0) if np.isfinite(v))
                ax.text(xi, top * 1.08, f"oom {ooms}", rotation=90, ha="center", va="bottom", fontsize=6,
                        color=GROUP_COLOURS[speedup.GROUP_FAST])
            if pd.isna(row["speedup"]):
                status = row["status"] if isinstance(row["status"], str) else "not run"
                ax.text(xi, 1, textwrap.fill(status, 14), rotation=90, ha="center", va="bottom", fontsize=6,
                        color=MISSING_COLOUR)
        ax.axhline(1, color="0.2", lw=0.6)
        ax.axhline(a.threshold, color="0.3", lw=0.8, ls="--")
        ax.set_ylabel("speedup")
        ax.set_xticks(x, order, rotation=60, ha="right", fontsize=7)
        agrees = speedup.agreement(groups, paper_group).dropna()
        between = int((groups == speedup.GROUP_BETWEEN).sum())
        counted = (f"{int(agrees.sum())} of {len(agrees)} tools in the paper's group" if len(agrees) else
                   "no tool comparable with the paper") + (f", {between} between" if between else "")
        ax.set_title(f"({letter}) {slow} / {fast}: {counted}", loc="left", fontsize=10)
        # Outside the axes: a legend inside would cover the tallest bars and the paper's markers.
        handles = [matplotlib.patches.Patch(color=GROUP_COLOURS[g], label=g) for g in
                   (speedup.GROUP_FAST, speedup.GROUP_BETWEEN, speedup.GROUP_FLAT)]
        ax.legend(handles=handles + ax.get_legend_handles_labels()[0], fontsize=7, loc="upper left",
                  bbox_to_anchor=(1.005, 1.0), borderaxespad=0)
        agreement = agreement or counted
    return _finish(fig, a, f"Speedup per tool; G+ at {a.threshold:g}x or more, G0 below {speedup.NEGLIGIBLE_BELOW:g}x; "
                   f"{agreement} (Lee, Min and Yoon 2015, Fig. 2)")


# -- Fig. 3 ------------------------------------------------------------------------------------------------------------
def pipeline_steps(entry: catalogue.Entry, ran: set[str]) -> list[tuple[str, str]]:
    """A pipeline's steps as (step, tool run for it): the substitute where the paper's tool was
    not run but its substitute was."""
    subs = entry.data.get("substitute_steps", {})
    return [(s, s if s in ran or s not in subs or subs[s] not in ran else subs[s]) for s in entry.data["steps"]]


def _chain_rows(chains: pd.DataFrame, pipeline: str, side: str) -> pd.DataFrame:
    """A pipeline's chained step runs on one side (a side name, or a class as in ``Analysis``)."""
    rows = chains[chains["pipeline"].eq(pipeline)]
    return rows[rows["side"].eq(side) | rows["side"].str.endswith("-" + side)]


def fig03_pipelines(a: Analysis) -> plt.Figure:
    """Fig. 3: each pipeline's runtime on both sides, broken down by step. Where the study ran
    the pipeline chained (``<side>/chains/``: each step's output the next step's input, in one
    scratch), the bars are its steps' mean runtimes over the repeats, and a step that did not
    end ok is hatched and named with its outcome (its runtime is then a lower bound, or the
    chain stopped there). Otherwise the bars sum the steps' separate baseline runs, and the
    panel says so."""
    pipes = [e for e in catalogue.load_all() if e.kind == "pipeline"]
    chains = resultset.chains(a.rs)
    ran = set(a.baseline.index)
    cmap = plt.get_cmap("tab20")
    fig, axes = plt.subplots(len(pipes), 1, figsize=(13, 2.6 * len(pipes)), squeeze=False)
    for ax, entry, letter in zip(axes[:, 0], pipes, "abc"):
        sides = list(zip(("fast", "slow"), a.sides))
        totals: dict[str, float] = {}
        incomplete: list[str] = []  # sides whose chain stopped or had a step not end ok
        failed: list[str] = []  # ... with a step that ended other than ok or timeout
        chained = entry.data.get("chain") and all(not _chain_rows(chains, entry.id, s).empty for _, s in sides)
        if chained:
            step_labels, not_run = chain.step_labels(entry)
            order = list(step_labels)
            stopped = []
            for y, (_, side) in enumerate(sides):
                rows = _chain_rows(chains, entry.id, side)
                left = 0.0
                for i, step in enumerate(order):
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
                    if set(bad) - {speedup.TIMEOUT}:
                        failed.append(side)
                    label = step_labels[step] + (f" [{'/'.join(bad)} on {side}]" if bad else "")
                    ax.barh(y, value, left=left, color=cmap(i % 20), label=label if (y == 0 or bad) else None,
                            hatch="//" if bad else None, edgecolor="white" if not bad else "0.3", lw=0.5)
                    left += value
                totals[side] = left
            what = f"chained, {int(chains[chains['pipeline'].eq(entry.id)]['rep'].nunique())} repeat(s)"
            notes = [f"{p}: {why}" for p, why in not_run.items()]
            notes += [f"{step_labels[s]} not reached" for s in dict.fromkeys(stopped)]
        else:
            steps = pipeline_steps(entry, ran)
            missing = []
            for y, (suffix, side) in enumerate(sides):
                left = 0.0
                for i, (step, tool) in enumerate(steps):
                    value = a.baseline["runtime_s_" + suffix].get(tool, np.nan)
                    if pd.isna(value):
                        if y == 0:
                            missing.append(tool)
                        continue
                    ax.barh(y, value, left=left, color=cmap(i % 20),
                            label=(tool if tool == step else f"{tool} (for {step})") if y == 0 else None,
                            edgecolor="white", lw=0.5)
                    left += value
                totals[side] = left
            what = "not chained: the sum of the steps' separate runs"
            notes = [f"not run: {', '.join(sorted(set(missing)))}"] if missing else []
        fast, slow = sides[0][1], sides[1][1]
        if not any(totals.values()):
            _empty(ax, f"{entry.data['paper_name']}: no step ran in this result set; " + "; ".join(notes))
            ax.set_title(f"({letter}) {entry.data['paper_name']}", loc="left", fontsize=9)
            continue
        ax.set_yticks([0, 1], [s for _, s in sides])
        ax.set_xlabel("runtime (s), sum of steps")
        ratio = speedup.pipeline_speedup(totals, fast, slow, incomplete, failed)
        if ratio.lower_bound:
            total = f"{slow}/{fast} at least {ratio.value:.2f}x ({ratio.why})"
        elif ratio.value is not None:
            total = f"{slow}/{fast} {ratio.value:.2f}x"
        elif incomplete:
            total = f"no speedup, {ratio.why}"
        else:
            total = f"{slow}/{fast} n/a"
        paper = entry.data.get("paper_speedup")
        title = (f"({letter}) {entry.data['paper_name']}: {total} ({what}; paper "
                 f"{'n/a' if paper is None else f'{paper:g}x'})")
        ax.set_title(textwrap.fill(title, 110), loc="left", fontsize=9)
        if notes:
            ax.text(0.0, -0.4, textwrap.fill("; ".join(notes), 130), transform=ax.transAxes,
                    fontsize=7, color=MISSING_COLOUR, va="top")
        handles, labels = ax.get_legend_handles_labels()
        if handles:
            ax.legend(handles, [textwrap.fill(t, 34) for t in labels], fontsize=6.5, loc="upper left",
                      bbox_to_anchor=(1.01, 1.0), frameon=False)
    return _finish(fig, a, "Pipelines, runtime per step (Lee, Min and Yoon 2015, Fig. 3)")


# -- Fig. 4 ------------------------------------------------------------------------------------------------------------
def fig04_storage_features(a: Analysis) -> plt.Figure:
    """Fig. 4: the eight storage features per tool (baseline, feature side), one panel per
    group of features as in the paper; a feature with no measurement says so in its panel."""
    runs = speedup.side_rows(a.baseline_runs, a.features_side)
    means = a.feature_means
    fig, axes = plt.subplots(2, 3, figsize=(13, 6.5))
    for ax, (title, feats, unit) in zip(axes.flat, FIG04_PANELS):
        ax.set_title(title, loc="left", fontsize=10)
        data = means[list(feats)].dropna(how="all") if len(means) else pd.DataFrame()
        if data.empty:
            _empty(ax, "not measured: " + _missing_reason(runs, feats[0]))
            continue
        data.plot.bar(ax=ax, rot=90, legend=len(feats) > 1, width=0.7, fontsize=6)
        ax.set_xlabel("")
        ax.set_ylabel(unit)
    return _finish(fig, None, f"Storage features on {a.features_side} (Lee, Min and Yoon 2015, Fig. 4)")


# -- Fig. 5 ------------------------------------------------------------------------------------------------------------
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
    return _finish(fig, a, title)


# -- Fig. 6 ------------------------------------------------------------------------------------------------------------
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
                _empty(ax, "no block trace for this run")
                continue
            req = trace[trace["op"] == op]
            if req.empty:
                _empty(ax, f"no {name} requests")
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
    return _finish(fig, None, "Representative I/O traces per pattern (Lee, Min and Yoon 2015, Fig. 6); bars at least "
                 f"{TRACE_MIN_BAR_FRACTION:.0%} of the LBA axis long")


# -- Fig. 7 ------------------------------------------------------------------------------------------------------------
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
            _empty(ax, f"not measured: {c.dropped_features.get(feat) or c.dropped_features.get('CAR')}")
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
    return _finish(fig, a, "Randomness and speedup; circle area ~ speedup (Lee, Min and Yoon 2015, Fig. 7)")


# -- Fig. 8 ------------------------------------------------------------------------------------------------------------
def fig08_input_size(a: Analysis, focus_tool: str = "ampliconnoise") -> plt.Figure:
    """Fig. 8: (a) ``focus_tool``'s runtime against the input replication factor on both sides,
    with its break-even scale; (b) every tool's speedup against scale, at its smallest cap."""
    table = a.speedups
    fig, (ax1, ax2) = plt.subplots(1, 2, figsize=(14, 4.8))
    first_cap = table.assign(_m=table["mem"].map(_cap_order(a))).sort_values("_m").groupby("tool")["mem"].first()
    mine = table[(table["tool"] == focus_tool) & (table["mem"] == first_cap.get(focus_tool))].sort_values("scale")
    if mine.empty:
        _empty(ax1, f"{focus_tool} not run")
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
    return _finish(fig, a, "Input size and SSD effectiveness (Lee, Min and Yoon 2015, Fig. 8)")


def _speedup_lines(ax: plt.Axes, a: Analysis, lines: dict[str, tuple[pd.Series, pd.Series]], xlabel: str,
                   title: str, none_text: str) -> None:
    """One speedup line per tool against ``xlabel`` (log-log), the G+ threshold dashed."""
    if not lines:
        _empty(ax, none_text)
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
    _speedup_axis(ax, [v for _, y in lines.values() for v in y])
    ax.set_xlabel(xlabel)
    ax.set_ylabel("speedup")
    ax.set_title(title, loc="left", fontsize=10)
    if lines:  # beside the axes: inside, it would cover lines
        ax.legend(fontsize=6, ncol=1 if len(lines) <= 12 else 2, loc="upper left", bbox_to_anchor=(1.01, 1.0),
                  borderaxespad=0)


def _cap_order(a: Analysis) -> dict[str, float]:
    runs = a.rs.runs
    return runs.groupby("mem")["mem_bytes"].first().fillna(np.inf).to_dict()


# -- Fig. 9 ------------------------------------------------------------------------------------------------------------
def _memory_over_input(a: Analysis, table: pd.DataFrame) -> pd.Series:
    """Each configuration's memory over its tool's input, as the paper's Fig. 9 read it (its 4,
    16 and 32 GB of RAM over 20 GB of input: 0.2, 0.8 and 1.6): the whole cap — floor and data
    memory — over the input. NaN where the result set does not record the input's size."""
    reg = regime.regime_table(a)
    caps = a.rs.runs.groupby("mem")["mem_bytes"].first()
    inputs = table["tool"].map(reg["input_bytes"]) if len(reg) else np.nan
    return table["mem"].map(caps) / inputs


def fig09_memory(a: Analysis, prefix: str = "gatk_") -> plt.Figure:
    """Fig. 9: speedup per memory size at each tool's smallest scale: (a) the GATK steps
    (``prefix``), one bar per memory point in the order of the tool's caps, labelled by the
    memory (the whole cap) over the input, as the paper's 4, 16 and 32 GB on 20 GB are 0.2, 0.8
    and 1.6, where the result set records the input's size, else by the cap; (b) every tool run
    under several caps, against memory over input (or the cap in GiB)."""
    table = a.speedups
    order = _cap_order(a)
    first_scale = table.groupby("tool")["scale"].min()
    table = table[table["scale"] == table["tool"].map(first_scale)].copy()
    table["_m"] = table["mem"].map(order)
    table["_ratio"] = _memory_over_input(a, table)
    by_ratio = table["_ratio"].notna().all() and len(table)
    fig, (ax1, ax2) = plt.subplots(1, 2, figsize=(14, 4.8))
    gatk = sorted(t for t in table["tool"].unique() if t.startswith(prefix))
    n_points = max((table["tool"].eq(t).sum() for t in gatk), default=0)
    if not gatk:
        _empty(ax1, f"no {prefix}* tool was run")
    width = 0.8 / max(n_points, 1)
    shown = []
    cmap = plt.get_cmap("viridis")
    for i in range(n_points):
        rows = pd.DataFrame([table[table["tool"] == t].sort_values("_m").iloc[i] if table["tool"].eq(t).sum() > i
                             else pd.Series({"tool": t, "speedup": np.nan, "speedup_is_lower_bound": False})
                             for t in gatk]).set_index("tool")
        ratios = rows["_ratio"].dropna() if "_ratio" in rows else pd.Series(dtype=float)
        label = (f"memory {ratios.median():.2g} x input" if by_ratio and len(ratios)
                 else "cap " + "/".join(rows["mem"].dropna().astype(str).unique()))
        bars = ax1.bar(np.arange(len(gatk)) + i * width, (rows["speedup"] - 1).fillna(0), width, bottom=1, label=label,
                       color=cmap(i / max(n_points - 1, 1)))
        _mark_bounds(ax1, bars, rows["speedup"], rows["speedup_is_lower_bound"].fillna(False).astype(bool))
        shown += list(rows["speedup"].dropna())
        for j, (_, row) in enumerate(rows.iterrows()):
            ax1.text(j + i * width, 1 if pd.isna(row["speedup"]) else max(row["speedup"], 1),
                     "n/a" if pd.isna(row["speedup"]) else f"{row['speedup']:.2f}", fontsize=6, ha="center",
                     va="bottom", color=MISSING_COLOUR if pd.isna(row["speedup"]) else "0.2")
    if gatk:
        ax1.set_xticks(np.arange(len(gatk)) + 0.4 - width / 2, gatk, rotation=20, fontsize=7)
        ax1.legend(title="memory point", fontsize=7, loc="upper left", bbox_to_anchor=(0.0, -0.22), ncol=3,
                   borderaxespad=0)
    _speedup_axis(ax1, shown)
    ax1.axhline(1, color="0.2", lw=0.6)
    ax1.axhline(a.threshold, color="0.3", lw=0.8, ls="--")
    ax1.set_ylabel("speedup")
    ax1.set_title("(a) GATK steps", loc="left", fontsize=10)
    lines = {}
    for tool, g in table.groupby("tool"):
        rows = g.sort_values("_m")
        if rows["mem"].nunique() > 1:
            lines[tool] = (rows["_ratio"] if by_ratio else rows["_m"] / (1 << 30), rows["speedup"])
    _speedup_lines(ax2, a, lines, "memory (cap) / input" if by_ratio else "memory cap (GiB)",
                   "(b) every tool run under several caps", "no tool was run under several caps")
    return _finish(fig, a, "Main memory size and SSD effectiveness (Lee, Min and Yoon 2015, Fig. 9)")


# -- Fig. 10 -----------------------------------------------------------------------------------------------------------
def _cachegrind_columns(a: Analysis, tools: Sequence[str]) -> tuple[pd.DataFrame, str]:
    """Simulated miss ratios of the study's cachegrind probes (one short run per tool on a
    reduced input), per tool, and a note naming them as simulated and the probes without a result."""
    probes = resultset.probes(a.rs)
    cols = list(resultset.CACHEGRIND_COLUMNS.values())
    if probes.empty:
        return pd.DataFrame(index=pd.Index(tools), columns=[]), ""
    ok = probes[probes["outcome"] == speedup.OK]
    table = ok.groupby("tool")[cols].mean().reindex(list(tools))
    table = table[[c for c in cols if table[c].notna().any()]]
    failed = probes[probes["outcome"] != speedup.OK]
    note = "simulated columns: valgrind cachegrind on a reduced input, not a PMU"
    if len(failed):
        note += "; no simulation for " + ", ".join(f"{r.tool} ({r.outcome})" for r in failed.itertuples())
    return table, note


def fig10_cpu_memory(a: Analysis) -> plt.Figure:
    """Fig. 10: CPU and memory features per tool (baseline, feature side), normalized to [0, 1]
    like the storage features, with the tool's speedup beside them."""
    from biossd.features import normalize

    runs = speedup.side_rows(a.baseline_runs, a.features_side)
    means = patterns.feature_means(runs, FIG10_COLUMNS)
    measured = [c for c in FIG10_COLUMNS if c in means and means[c].notna().any()]
    simulated, probe_note = _cachegrind_columns(a, means.index)
    if len(simulated.columns) and not any(c in measured for c in ("cache_miss_ratio", "llc_miss_ratio")):
        means = means.join(simulated, how="left")  # no PMU: cachegrind's simulated ratios
        measured += list(simulated.columns)
    fig, (ax1, ax2) = plt.subplots(1, 2, figsize=(13, max(4, 0.3 * len(means) + 1.5)),
                                   gridspec_kw={"width_ratios": (3, 1)}, sharey=True)
    if measured:
        norm, _ = normalize.normalize(means[measured], measured)
        ax1.imshow(norm.to_numpy(dtype=float), aspect="auto", cmap="viridis", vmin=0, vmax=1)
        ax1.set_xticks(range(len(measured)), measured, rotation=30, ha="right", fontsize=7)
    else:
        _empty(ax1, "no CPU/memory feature measured")
    ax1.set_yticks(range(len(means)), list(means.index), fontsize=7)
    missing = [c for c in FIG10_COLUMNS if c not in measured]
    title = "(a) normalized CPU/memory features"
    if missing:
        title += "; not measured: " + "; ".join(f"{c} ({_missing_reason(runs, c)})" for c in missing)
    if probe_note and any(c in simulated.columns for c in measured):
        title += "; " + probe_note
    ax1.set_title(textwrap.fill(title, 90), loc="left", fontsize=8)
    s = a.baseline["speedup"].reindex(means.index)
    bounded = a.baseline["speedup_is_lower_bound"].reindex(means.index).fillna(False).astype(bool)
    groups = speedup.group_of(s, a.threshold, bounded)
    bars = ax2.barh(range(len(means)), (s - 1).fillna(0), left=1, color=[GROUP_COLOURS[g] for g in groups])
    for bar, is_bound in zip(bars, bounded):
        if is_bound:
            bar.set_hatch("//")
    _speedup_axis(ax2, list(s.dropna()), horizontal=True)
    ax2.axvline(1, color="0.2", lw=0.6)
    ax2.set_xlabel("speedup (hatched: at least)")
    ax2.set_title("(b) speedup", loc="left", fontsize=9)
    return _finish(fig, a, "CPU and memory features (Lee, Min and Yoon 2015, Fig. 10)")


# -- Prediction --------------------------------------------------------------------------------------------------------
#: Relative errors drawn as bands around y = x in the validation figure.
ERROR_BANDS = (predict.TARGET_MEDIAN_ERROR, predict.TARGET_MAX_ERROR)
SSD_CMAP = "viridis"


def _tool_order(a: Analysis) -> list[str]:
    """Tools in the order of Fig. 2(a): the primary pair's baseline speedup, highest first."""
    return list(a.baseline["speedup"].sort_values(ascending=False, na_position="last").index)


def fig02b_predicted_ssds(a: Analysis) -> plt.Figure:
    """Fig. 2(b) by prediction: each tool's speedup on the paper's five other SSDs over its
    Seagate Barracuda (Lee, Min and Yoon 2015, Fig. 2(b)), every runtime predicted from the fast side's block
    traces (:func:`biossd.analysis.predict.paper_fig2b`); error bars are the model's interval.
    Tick labels are coloured by the paper's measured group; tools in Fig. 2(a)'s order."""
    title = (f"Fig. 2(b) predicted: the paper's SSDs over its {predict.PAPER_FIG2_HDD}, from the "
             f"{a.features_side} runs' block traces (Lee, Min and Yoon 2015, Fig. 2(b))")
    table = predict.paper_fig2b(a.paper_device_predictions)
    fig, ax = plt.subplots(figsize=(max(9, 0.5 * max(table["tool"].nunique(), 1) + 2), 4.2))
    if table.empty:
        why = a.paper_device_predictions["why"].replace("", np.nan).dropna()
        _empty(ax, "no run could be predicted" + (f": {why.iloc[0]}" if len(why) else ""))
        return _finish(fig, None, title)
    order = [t for t in _tool_order(a) if t in set(table["tool"])]
    ssds = list(dict.fromkeys(table["ssd"]))
    cmap = plt.get_cmap(SSD_CMAP)
    width = 0.8 / len(ssds)
    x = np.arange(len(order))
    for i, ssd in enumerate(ssds):
        rows = table[table["ssd"] == ssd].set_index("tool").reindex(order)
        v = rows["predicted_speedup"]
        err = np.vstack([(v - rows["speedup_low"]).clip(lower=0), (rows["speedup_high"] - v).clip(lower=0)])
        ax.bar(x - 0.4 + width * (i + 0.5), (v - 1).fillna(0), bottom=1, width=width, color=cmap(i / max(len(ssds) - 1, 1)),
               label=ssd, yerr=err, error_kw=dict(lw=0.6, capsize=1.5, ecolor="0.3"))
    _speedup_axis(ax, [*table["speedup_low"], *table["speedup_high"]])
    ax.axhline(1, color="0.2", lw=0.6)
    ax.axhline(a.threshold, color="0.3", lw=0.8, ls="--")
    entries = {e.id: e.data for e in catalogue.load_all()}
    ax.set_xticks(x, order, rotation=60, ha="right", fontsize=7)
    paper_group = [entries.get(t, {}).get("paper_group") or "" for t in order]
    for label, group in zip(ax.get_xticklabels(), paper_group):
        label.set_color(GROUP_COLOURS[group])
    above = (table["predicted_speedup"] >= a.threshold).groupby(table["tool"])
    every = pd.Series(np.where(above.all(), speedup.GROUP_FAST, np.where(~above.any(), speedup.GROUP_FLAT, "")),
                      index=above.all().index).reindex(order)  # "": the SSDs put the tool in different groups
    agrees = speedup.agreement(every, pd.Series(paper_group, index=order)).dropna()
    ax.set_ylabel("predicted speedup over the HDD")
    ax.legend(fontsize=7, loc="upper left", bbox_to_anchor=(1.01, 1.0), title="SSD (Lee, Min and Yoon 2015, Table 3)",
              title_fontsize=7)
    ax.set_title(f"{int(agrees.sum())} of {len(agrees)} tools in the paper's measured group on all five SSDs "
                 "(tick colour: the paper's group, red G+, blue G0, grey: not in the paper)", loc="left", fontsize=9)
    return _finish(fig, None, title)


def figs1_prediction(a: Analysis) -> plt.Figure:
    """The prediction's validation: (a) each tool's mean runtime on one side
    predicted from its runs on the other, against the measured one (y = x, bands at ±15% and
    ±40%; a measured time that is only a lower bound — the time limit — is drawn with ▶);
    (b) the baseline speedup predicted from the fast side alone against the measured one, with
    the G+ threshold on both axes (off-diagonal quadrants: the groups disagree). Named are the
    tools off by more than 15% or bounded (a) and those in G+ or in another group (b); every
    tool is in Table S1."""
    title = "Predicted against measured: each side's runs replayed on the other side's device model"
    val = a.cross_prediction
    fig, (ax1, ax2) = plt.subplots(1, 2, figsize=(11, 5))
    if val.empty or val["predicted_target_s"].isna().all():
        why = val["why"].replace("", np.nan).dropna()
        for ax in (ax1, ax2):
            _empty(ax, "nothing to validate: " + (why.iloc[0] if len(why) else "the result set needs a speedup pair "
                                                  "and both sides' device records"))
        return _finish(fig, None, title)
    pred = val["predicted_target_s"]
    lims = [min(val["measured_target_s"].min(), pred.min()) / 1.5, max(val["measured_target_s"].max(), pred.max()) * 1.5]
    grid = np.geomspace(*lims, 50)
    ax1.plot(grid, grid, color="0.2", lw=0.8)
    for band, alpha in zip(ERROR_BANDS, (0.25, 0.12)):
        ax1.fill_between(grid, grid * (1 - band), grid * (1 + band), color="0.5", alpha=alpha, lw=0,
                         label=f"±{band:.0%}")
    for (direction, rows), colour in zip(val.groupby("direction", sort=False), SIDE_COLOURS):
        err = np.vstack([(rows["predicted_target_s"] - rows["predicted_low_s"]).clip(lower=0),
                         (rows["predicted_high_s"] - rows["predicted_target_s"]).clip(lower=0)])
        bound = rows["target_is_lower_bound"].astype(bool).to_numpy()
        ax1.errorbar(rows["measured_target_s"][~bound], rows["predicted_target_s"][~bound], yerr=err[:, ~bound],
                     fmt="o", ms=4, color=colour, lw=0.7, capsize=2,
                     label=f"{direction} (measured on {rows['target_side'].iloc[0]})")
        if bound.any():
            ax1.plot(rows["measured_target_s"][bound], rows["predicted_target_s"][bound], ">", ms=6, color=colour,
                     label=f"{direction}: measured only a lower bound")
        for _, r in rows.iterrows():  # named: the lower bounds and what is off by more than the inner band
            off = r["target_is_lower_bound"] or abs(r["error"]) > ERROR_BANDS[0]
            if pd.notna(r["predicted_target_s"]) and off:
                ax1.annotate(r["tool"], (r["measured_target_s"], r["predicted_target_s"]), fontsize=6.5,
                             xytext=(4, -8), textcoords="offset points", color=colour)
    ax1.set_xscale("log")
    ax1.set_yscale("log")
    ax1.set_xlim(lims)
    ax1.set_ylim(lims)
    ax1.set_xlabel("measured mean runtime (s)")
    ax1.set_ylabel("predicted mean runtime (s)")
    summary = predict.validation_summary(val, a.predicted_speedups)
    ax1.set_title(f"(a) runtime: median |error| {summary['median_abs_error']:.0%}, largest "
                  f"{summary['max_abs_error']:.0%}\n({summary['worst']}); named: off by more than "
                  f"{ERROR_BANDS[0]:.0%}", loc="left", fontsize=8)
    ax1.legend(fontsize=6.5, loc="upper left")

    sp = a.predicted_speedups.dropna(subset=["predicted_speedup", "measured_speedup"])
    values = [*sp["measured_speedup"], *sp["predicted_speedup"], *sp["predicted_speedup_high"].dropna()]
    _speedup_axis(ax2, values)
    _speedup_axis(ax2, values, horizontal=True)
    lo, hi = ax2.get_xlim()
    ax2.plot([lo, hi], [lo, hi], color="0.2", lw=0.8)
    ax2.axhline(a.threshold, color="0.3", lw=0.8, ls="--")
    ax2.axvline(a.threshold, color="0.3", lw=0.8, ls="--")
    agrees = sp["group_agrees"].fillna(True).astype(bool)
    err = np.vstack([(sp["predicted_speedup"] - sp["predicted_speedup_low"]).clip(lower=0),
                     (sp["predicted_speedup_high"] - sp["predicted_speedup"]).clip(lower=0)])
    for mask, colour, label in ((agrees, GROUP_COLOURS["G0"], "group as measured"),
                                (~agrees, GROUP_COLOURS["G+"], "group differs")):
        if mask.any():
            ax2.errorbar(sp["measured_speedup"][mask], sp["predicted_speedup"][mask], yerr=err[:, mask.to_numpy()],
                         fmt="o", ms=4, color=colour, lw=0.7, capsize=2, label=label)
    bounded = sp["measured_is_lower_bound"].astype(bool)
    if bounded.any():
        ax2.plot(sp["measured_speedup"][bounded], sp["predicted_speedup"][bounded], ">", ms=7, mfc="none",
                 color="black", label="measured only a lower bound")
    for _, r in sp.iterrows():  # named: G+ on either axis, or a group that differs
        if max(r["measured_speedup"], r["predicted_speedup"]) >= a.threshold or r["group_agrees"] is False:
            ax2.annotate(r["tool"], (r["measured_speedup"], r["predicted_speedup"]), fontsize=6.5, xytext=(4, -8),
                         textcoords="offset points")
    ax2.set_xlabel(f"measured speedup {a.pair[1]} / {a.pair[0]}")
    ax2.set_ylabel(f"predicted from the {a.pair[0]} runs alone")
    ax2.set_title(f"(b) speedup: predicted group as measured for {summary['group_agreement']:.0%} of "
                  f"{summary['tools_with_groups']} tools\nnamed: G+, or the group differs", loc="left", fontsize=8)
    ax2.legend(fontsize=6.5, loc="upper left")
    return _finish(fig, a, title)
