"""Fig. 4 and 10 (notebook 02_storage_features): the storage features, and the CPU and memory ones, per
tool (Lee, Min and Yoon 2015, §3.1, §3.6)."""

from __future__ import annotations

import textwrap
from typing import Sequence

import matplotlib.pyplot as plt
import pandas as pd

from biossd.analysis import (
    Analysis,
    patterns,
    resultset,
    speedup,
)
from biossd.features import extract as features
from biossd.outputs.figures._style import GROUP_COLOURS, empty, finish, speedup_axis, tool_names

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


def _missing_reason(table: pd.DataFrame, feature: str) -> str:
    for text in table.get("missing_reason", pd.Series(dtype=str)).dropna():
        why = features.parse_missing(text).get(feature)
        if why:
            return why
    return "no runs"


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
            empty(ax, "not measured: " + _missing_reason(runs, feats[0]))
            continue
        data.plot.bar(ax=ax, rot=90, legend=False, width=0.7, fontsize=6)
        ax.set_xticks(range(len(data)), tool_names(list(data.index)), rotation=90, fontsize=6)
        if len(feats) > 1:  # above the panel, beside its title: inside it would cover the tallest bars
            ax.legend(fontsize=7, loc="lower right", bbox_to_anchor=(1.0, 1.0), ncol=len(feats), frameon=False,
                      borderaxespad=0.2)
        ax.set_xlabel("")
        ax.set_ylabel(unit)
    return finish(fig, None, f"Storage features on {a.features_side} (Lee, Min and Yoon 2015, Fig. 4)")


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
        empty(ax1, "no CPU/memory feature measured")
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
    speedup_axis(ax2, list(s.dropna()), horizontal=True)
    ax2.axvline(1, color="0.2", lw=0.6)
    ax2.set_xlabel("speedup (hatched: at least)")
    ax2.set_title("(b) speedup", loc="left", fontsize=9)
    return finish(fig, a, "CPU and memory features (Lee, Min and Yoon 2015, Fig. 10)")
