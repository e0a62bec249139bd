"""Fig. 2(b), S1 and S7 (notebook 06_prediction): the paper's other SSDs predicted, predicted against
measured runtime, and the paper's tools on today's storage."""

from __future__ import annotations

import matplotlib
import matplotlib.patches
import matplotlib.pyplot as plt
import matplotlib.ticker
import numpy as np
import pandas as pd

from biossd.analysis import (
    Analysis,
    predict,
    speedup,
    today,
)
from biossd.host.models import cloudmodel
from biossd.outputs.figures._style import (
    GROUP_COLOURS,
    MISSING_COLOUR,
    SIDE_COLOURS,
    annotate_apart,
    empty,
    finish,
    speedup_axis,
    tool_names,
)
from biossd.study import catalogue

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
        empty(ax, "no run could be predicted" + (f": {why.iloc[0]}" if len(why) else ""))
        return finish(fig, None, title)
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
    speedup_axis(ax, [*table["speedup_low"], *table["speedup_high"]])
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
    return finish(fig, None, title)


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
            empty(ax, "nothing to validate: " + (why.iloc[0] if len(why) else "the result set needs a speedup pair "
                                                  "and both sides' device records"))
        return finish(fig, None, title)
    summary = predict.validation_summary(val, a.predicted_speedups)
    _runtime_panel(ax1, val, summary)
    _speedup_panel(ax2, a, summary)
    return finish(fig, a, title)


def _runtime_panel(ax1: plt.Axes, val: pd.DataFrame, summary: dict) -> None:
    """Fig. S1(a): predicted against measured mean runtime, per direction."""
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
    ax1.set_xscale("log")
    ax1.set_yscale("log")
    ax1.set_xlim(lims)
    ax1.set_ylim(lims)
    # Named: the lower bounds and what is off by more than the inner band (after the scales are set).
    named = val[val["predicted_target_s"].notna() & (val["target_is_lower_bound"].astype(bool)
                                                     | (val["error"].abs() > ERROR_BANDS[0]))]
    colour_of = dict(zip(val["direction"].drop_duplicates(), SIDE_COLOURS))
    annotate_apart(ax1, named["measured_target_s"], named["predicted_target_s"], tool_names(named["tool"], short=True),
                   [colour_of[d] for d in named["direction"]])
    ax1.set_xlabel("measured mean runtime (s)")
    ax1.set_ylabel("predicted mean runtime (s)")
    ax1.set_title(f"(a) runtime: median |error| {summary['median_abs_error']:.0%}, largest "
                  f"{summary['max_abs_error']:.0%}\n({summary['worst']}); named: off by more than "
                  f"{ERROR_BANDS[0]:.0%}", loc="left", fontsize=8)
    ax1.legend(fontsize=6.5, loc="upper left")


def _speedup_panel(ax2: plt.Axes, a: Analysis, summary: dict) -> None:
    """Fig. S1(b): the speedup predicted from the fast side alone against the measured one."""
    sp = a.predicted_speedups.dropna(subset=["predicted_speedup", "measured_speedup"])
    values = [*sp["measured_speedup"], *sp["predicted_speedup"], *sp["predicted_speedup_high"].dropna()]
    speedup_axis(ax2, values)
    speedup_axis(ax2, values, horizontal=True)
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
    named = sp[(sp[["measured_speedup", "predicted_speedup"]].max(axis=1) >= a.threshold)
               | sp["group_agrees"].eq(False)]  # G+ on either axis, or a group that differs
    annotate_apart(ax2, named["measured_speedup"], named["predicted_speedup"], tool_names(named["tool"], short=True),
                   ["black"] * len(named))
    ax2.set_xlabel(f"measured speedup {a.pair[1]} / {a.pair[0]}")
    ax2.set_ylabel(f"predicted from the {a.pair[0]} runs alone")
    ax2.set_title(f"(b) speedup: predicted group as measured for {summary['group_agreement']:.0%} of "
                  f"{summary['tools_with_groups']} tools\nnamed: G+, or the group differs", loc="left", fontsize=8)
    ax2.legend(fontsize=6.5, loc="upper left")


#: A heat-map cell this far (as a share of the colour scale's bound) from 1x is written in white.
DARK_CELL = 0.6


def figs7_today_storage(a: Analysis) -> plt.Figure:
    """The paper's tools on today's storage (:mod:`biossd.analysis.today`): each tool's speedup
    over the study's fast side on every cloud volume (its provider's behind
    :data:`biossd.analysis.today.INSTANCE`, with its own NVMe drive; the others alone), with the
    interval; measured where a class ran on the storage (marked "m"), predicted elsewhere; the
    storage to rent for the tool (the cheapest within 10% of the fastest) boxed."""
    table = a.today_storage
    title = (f"The paper's tools on today's storage: speedup over the {a.features_side} runs\n"
             f"AWS's volumes behind an {today.INSTANCE}, the others alone (Lee, Min and Yoon 2015 asked it of an SSD)")
    order = [t for t in _tool_order(a) if t in set(table["tool"])] + sorted(set(table["tool"]) - set(_tool_order(a)))
    storage = list(dict.fromkeys(table["storage"]))
    if table.empty or table["runtime_s"].isna().all():
        fig, ax = plt.subplots(figsize=(9.0, 3.0))
        why = table["why"].replace("", np.nan).dropna() if len(table) else pd.Series(dtype=str)
        empty(ax, "no run could be predicted on today's storage" + (f": {why.iloc[0]}" if len(why) else ""))
        return finish(fig, None, title)
    fig, ax = plt.subplots(figsize=(max(9.0, 1.05 * len(storage) + 3), 1.6 + 0.42 * max(len(order), 1)))
    grid = table.set_index(["tool", "storage"])
    values = np.log2(np.array([[grid.loc[(t, s), "speedup_over_fast_side"] for s in storage] for t in order], dtype=float))
    bound = max(1.0, float(np.nanmax(np.abs(values))))
    im = ax.imshow(values, cmap="RdBu", vmin=-bound, vmax=bound, aspect="auto")
    for i, tool in enumerate(order):
        for j, name in enumerate(storage):
            row = grid.loc[(tool, name)]
            v = row["speedup_over_fast_side"]
            if not np.isfinite(v):
                ax.text(j, i, "n/a", ha="center", va="center", fontsize=6.5, color=MISSING_COLOUR)
                continue
            lo, hi = row["fast_side_s"] / row["high_s"], row["fast_side_s"] / row["low_s"]
            mark = " m" if row["basis"] == today.MEASURED else ""
            dark = abs(values[i, j]) > DARK_CELL * bound
            ax.text(j, i, f"{v:.2f}{mark}\n[{lo:.2f}–{hi:.2f}]", ha="center", va="center", fontsize=6,
                    color="white" if dark else "black", linespacing=1.1)
            if row["rent"]:
                ax.add_patch(matplotlib.patches.Rectangle((j - 0.5, i - 0.5), 1, 1, fill=False, lw=1.6, ec="#1b7837"))
    short = [s.replace(f"@{today.INSTANCE}", "").replace(f"+{cloudmodel.SPENT}", " (instance's burst spent)")
             for s in storage]
    ax.set_xticks(np.arange(len(storage)), short, rotation=35, ha="right", fontsize=7.5)
    ax.set_yticks(np.arange(len(order)), tool_names(order), fontsize=7.5)
    bar = fig.colorbar(im, ax=ax, fraction=0.03)
    bar.set_label("speedup over the fast side, log2 (blue faster, red slower)", fontsize=7.5)
    ax.set_title("cell: speedup [interval]; m: measured on an emulated volume, else predicted; green box: the storage "
                 "to rent (cheapest within 10% of the fastest; unpriced volumes never chosen)", loc="left", fontsize=7.5)
    return finish(fig, None, title)
