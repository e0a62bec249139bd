"""What every figure of the report shares: the colours, the notes on what differs between a pair's sides, the
title and layout, the labelled gap, and the speedup axis."""

from __future__ import annotations

import textwrap
from typing import Sequence

import matplotlib
import matplotlib.patches
import matplotlib.pyplot as plt
import matplotlib.ticker
import numpy as np
import pandas as pd

from biossd.analysis import (
    Analysis,
    speedup,
)

GROUP_COLOURS = {speedup.GROUP_FAST: "#c0392b", speedup.GROUP_FLAT: "#2c7fb8", speedup.GROUP_BETWEEN: "#e6a23c",
                 "": "#999999"}


SIDE_COLOURS = ("#2c7fb8", "#c0392b")


MISSING_COLOUR = "0.55"


NOTE_WIDTH_CHARS = 110


def tool_names(tools: Sequence[str], short: bool = False) -> list[str]:
    """Each tool as the paper names it (the catalogue's ``paper_name``: a substitute as "X (for
    Y)", or with ``short`` just "X"), never by its catalogue id; a tool outside the catalogue by its id."""
    from biossd.study import catalogue

    entries = {e.id: e.data for e in catalogue.load_all()}
    names = [str(entries.get(t, {}).get("paper_name") or t).replace("(substitute for ", "(for ") for t in tools]
    return [n.split(" (for ")[0] for n in names] if short else names


#: A point's label: this many points right of it and below it, and the line height it moves by.
LABEL_OFFSET_PT, LABEL_LINE_PT = (4, -8), 1.25


def annotate_apart(ax: plt.Axes, xs: Sequence[float], ys: Sequence[float], labels: Sequence[str],
                   colours: Sequence[str], fontsize: float = 6.5) -> None:
    """Name points without one label over another: each below-right of its point, moved down a line
    while it would overlap a label placed before it (in the axes' final scales: call it after them)."""
    to_px = ax.figure.dpi / 72.0
    line_px = fontsize * LABEL_LINE_PT * to_px
    placed: list[tuple[float, float, float]] = []  # left, right, baseline of each label, in pixels
    points = sorted(zip(xs, ys, labels, colours), key=lambda p: -ax.transData.transform((p[0], p[1]))[1])
    for x, y, text, colour in points:
        px, py = ax.transData.transform((x, y))
        left = px + LABEL_OFFSET_PT[0] * to_px
        right = left + len(text) * fontsize * 0.55 * to_px
        dy_pt = LABEL_OFFSET_PT[1]
        while any(abs(py + dy_pt * to_px - base) < line_px and left < r and l < right for l, r, base in placed):
            dy_pt -= fontsize * LABEL_LINE_PT
        placed.append((left, right, py + dy_pt * to_px))
        ax.annotate(text, (x, y), xytext=(LABEL_OFFSET_PT[0], dy_pt), textcoords="offset points", fontsize=fontsize,
                    color=colour)


def notes(fig: plt.Figure, a: Analysis) -> None:
    """What differs between the pair's sides besides the drive, at the top of the figure."""
    if a.differences:
        text = "\n".join(textwrap.fill("NOTE: " + n, NOTE_WIDTH_CHARS) for n in a.differences)
        fig.text(0.01, 1.0, text, ha="left", va="bottom", fontsize=7, color="#b03a2e")


def finish(fig: plt.Figure, a: Analysis | None, title: str) -> plt.Figure:
    """Title, the pair's notes (when the figure compares the pair) and a tight layout."""
    fig.suptitle(title)
    if a is not None:
        notes(fig, a)
    fig.tight_layout()
    return fig


def empty(ax: plt.Axes, text: str) -> None:
    ax.text(0.5, 0.5, textwrap.fill(text, 40), ha="center", va="center", fontsize=8, color=MISSING_COLOUR,
            transform=ax.transAxes)
    ax.set_xticks([])
    ax.set_yticks([])


#: Speedup axes: plain multiples, on a log scale.
SPEEDUP_TICKS = (0.2, 0.5, 1, 2, 5, 10, 20, 50, 100, 200)


FINE_SPEEDUP_TICKS = (0.5, 0.6, 0.7, 0.8, 0.9, 1, 1.1, 1.2, 1.5, 2, 2.5, 3)


MIN_TICKS = 3


def speedup_axis(ax: plt.Axes, values: Sequence[float], horizontal: bool = False) -> None:
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


#: The hatch of a bar whose speedup is a lower bound (:func:`mark_bounds`).
BOUND_HATCH = "//"


def mark_bounds(ax: plt.Axes, bars, values: pd.Series, bounded: pd.Series) -> None:
    """Hatch and mark with "≥" the bars whose speedup is a lower bound (the slow side's runs
    all reached the time limit: the true speedup is higher)."""
    for bar, is_bound, v in zip(bars, bounded.fillna(False).astype(bool), values):
        if is_bound:
            if not bar.get_hatch():  # a marginal bar keeps its own hatch; the "≥" still marks it
                bar.set_hatch(BOUND_HATCH)
            ax.text(bar.get_x() + bar.get_width() / 2, v * 1.05, "≥", ha="center", va="bottom", fontsize=8)
