"""The related experiments' figures (the four related studies, :mod:`biossd.experiments`): one function per
experiment, drawn from its table (:func:`biossd.experiments.load_table`), returning a matplotlib
figure. Storage classes keep the study's colours (the fast class blue, the slow one red); a
substitute tool is named as such in the legend; runs that did not end ``ok`` are drawn hollow
and said so.
"""

from __future__ import annotations

import textwrap

import matplotlib.pyplot as plt
import numpy as np
import pandas as pd

from biossd.experiments import kmer_io, shared_device, sort_memory

CLASS_COLOURS = {"ssd": "#2c7fb8", "hdd": "#c0392b"}
#: A class's marker (the slow class hollow and square, so equal values of both stay visible).
CLASS_MARKERS = {"ssd": dict(marker="o"), "hdd": dict(marker="s", mfc="none", markersize=8)}
OTHER_COLOURS = ("#31a354", "#756bb1", "#636363")
MISSING_COLOUR = "0.55"
SORTER_STYLES = {"samtools_sort": "-", "sambamba_sort": "--"}
TITLE_WIDTH_CHARS = 100


def _colour(storage: str, order: list[str]) -> str:
    return CLASS_COLOURS.get(storage, OTHER_COLOURS[order.index(storage) % len(OTHER_COLOURS)])


def _classes(table: pd.DataFrame) -> list[str]:
    """The storage classes, the fast ones first (ssd before hdd, then by name)."""
    known = [c for c in CLASS_COLOURS if c in set(table["storage"])]
    return known + sorted(set(table["storage"]) - set(known))


def _empty_figure(title: str, why: str) -> plt.Figure:
    fig, ax = plt.subplots(figsize=(6, 2.5))
    ax.text(0.5, 0.5, textwrap.fill(why, 60), ha="center", va="center", color=MISSING_COLOUR, transform=ax.transAxes)
    ax.set_axis_off()
    fig.suptitle(title)
    return fig


def _tool_label(tool: str, substitute_of: object) -> str:
    return f"{tool} (substitute for {substitute_of})" if isinstance(substitute_of, str) and substitute_of else tool


def _finish(fig: plt.Figure, title: str, note: str | None = None) -> plt.Figure:
    fig.suptitle(title)
    if note:
        fig.text(0.01, 0.0, textwrap.fill(note, TITLE_WIDTH_CHARS * 2), ha="left", va="top", fontsize=7,
                 color="#444444")
    fig.tight_layout()
    return fig


# -- DNAnexus's samtools rocksort (2014) -------------------------------------------------------------------------------
def figs2_sort_memory(table: pd.DataFrame) -> plt.Figure:
    """(a) runtime against the sort's memory option, (b) the temporary files it spilled, (c) the
    merge phase's time against the number of files it merges and (d) the merge phase's read
    requests per second and CAR: where the slow class's merge turns seek-bound."""
    title = "Fig. S2. Sort memory and temporary files under a fixed memory cap"
    if table.empty:
        return _empty_figure(title, "no sort_memory runs in these results")
    classes = _classes(table)
    fig, axes = plt.subplots(2, 2, figsize=(11, 7.5))
    means = sort_memory.summary(table)
    for (storage, sorter), part in means.groupby(["storage", "sorter"], sort=False):
        colour, style = _colour(storage, classes), SORTER_STYLES.get(sorter, ":")
        marker = CLASS_MARKERS.get(storage, dict(marker="^"))
        label = f"{storage}, {_tool_label(sorter, part['substitute_of'].iloc[0])}"
        x = part["sort_mem_bytes"] / (1 << 20)
        axes[0, 0].errorbar(x, part["runtime_s"], yerr=part["runtime_s_sd"], color=colour, ls=style, capsize=2,
                            label=label, **marker)
        axes[0, 1].plot(x, part["temp_files"], color=colour, ls=style, label=label, **marker)
        spilled = part[part["temp_files"] > 0]
        axes[1, 0].plot(spilled["temp_files"], spilled["merge_s"], color=colour, ls=style, label=label, **marker)
        axes[1, 1].plot(spilled["temp_files"], spilled["merge_Riops"], color=colour, ls=style, label=label, **marker)
        for _, r in spilled.iterrows():
            if np.isfinite(r["merge_CAR"]):
                axes[1, 1].annotate(f"{r['merge_CAR']:.2f}", (r["temp_files"], r["merge_Riops"]), fontsize=6,
                                    color=colour, xytext=(3, 3), textcoords="offset points")
    for ax in axes[0]:
        ax.set_xscale("log", base=2)
        ax.set_xlabel("sort memory option -m (MiB, log scale)")
    axes[0, 0].set_ylabel("runtime (s)")
    axes[0, 0].set_title("(a) runtime")
    axes[0, 1].set_ylabel("temporary files written")
    axes[0, 1].set_title("(b) temporary files")
    axes[1, 0].set_xlabel("temporary files merged")
    axes[1, 0].set_ylabel("merge phase (s)")
    axes[1, 0].set_title("(c) merge phase against files merged")
    axes[1, 1].set_xlabel("temporary files merged")
    axes[1, 1].set_ylabel("merge-phase reads/s (labels: merge CAR)")
    axes[1, 1].set_title("(d) merge-phase Riops and CAR")
    for ax in axes.flat:
        ax.set_ylim(bottom=0)
        ax.margins(x=0.08)  # room for the CAR labels at the right
        ax.grid(alpha=0.3)
    axes[0, 0].legend(fontsize=7)
    caps = table.drop_duplicates("sorter").set_index("sorter")["mem"].astype(str)
    bad = table[table["outcome"] != "ok"].groupby(["sorter", "storage", "outcome"]).size()
    repeats = table.groupby(["storage", "point"]).size().max()
    note = (f"Fixed cap per sorter, whatever its -m: {', '.join(f'{k} {v}' for k, v in caps.items())}; means of the "
            f"ok runs of {repeats} repeat{'s' if repeats > 1 else ''} (bars: SD).")
    if len(bad):
        note += " Not ok: " + ", ".join(f"{n} {sorter} run(s) on {storage} ({outcome})"
                                        for (sorter, storage, outcome), n in bad.items()) + "."
    return _finish(fig, title, note)


# -- Classmethod's Trinity-on-S3 test (2024) ---------------------------------------------------------------------------
def figs3_object_store(table: pd.DataFrame) -> plt.Figure:
    """Each (class, input location)'s mean runtime split into the read phase and the rest, with the
    read throughput over each bar."""
    title = "Fig. S3. The assembler's input on an S3 mount (s3fs + S3Proxy) vs local disk"
    if table.empty:
        return _empty_figure(title, "no object_store runs in these results")
    classes = _classes(table)
    ok = table[table["outcome"] == "ok"]
    means = ok.groupby(["storage", "location"], sort=False)[["read_phase_s", "rest_s", "read_mbs", "runtime_s"]].mean()
    fig, ax = plt.subplots(figsize=(8, 4.5))
    labels, x = [], 0
    for storage in classes:
        for location in ("local", "object_store"):
            if (storage, location) not in means.index:
                continue
            r = means.loc[(storage, location)]
            colour = _colour(storage, classes)
            ax.bar(x, r["read_phase_s"], color=colour, edgecolor="black", hatch="//" if location != "local" else None)
            ax.bar(x, r["rest_s"], bottom=r["read_phase_s"], color=colour, alpha=0.35, edgecolor="black")
            ax.text(x, r["read_phase_s"] + r["rest_s"], f"{r['read_mbs']:.0f} MB/s\nread", ha="center", va="bottom",
                    fontsize=7)
            labels.append(f"{storage}\n{location.replace('_', ' ')}")
            x += 1
    ax.set_xticks(range(len(labels)), labels)
    ax.set_ylabel("runtime (s)")
    ax.set_ylim(top=ax.get_ylim()[1] * 1.15)
    ax.bar(0, 0, color="white", edgecolor="black", label="read phase (solid; hatched: via the S3 mount)")
    ax.bar(0, 0, color="white", alpha=0.35, edgecolor="black", label="the rest of the run (light)")
    ax.legend(fontsize=7, loc="upper left")
    tool = _tool_label("megahit", table["substitute_of"].dropna().iloc[0] if table["substitute_of"].notna().any()
                       else None)
    note = (f"{tool}; read phase: from the command's start to its last read of the input (inotify); read MB/s: "
            f"the input's bytes over its first open to last read. Means of the ok runs.")
    return _finish(fig, title, note)


# -- McDonald and Brown's khmer chapter (2013) -------------------------------------------------------------------------
def figs4_kmer_io(table: pd.DataFrame) -> plt.Figure:
    """(a) reads per second by compression × class × threads for the tables that fit the cap, (b)
    the major-fault rate (pages read back from swap) against the table's size over the cap."""
    title = "Fig. S4. khmer load-into-counting — input compression, threads, and tables that page"
    if table.empty:
        return _empty_figure(title, "no kmer_io runs in these results")
    classes = _classes(table)
    fig, axes = plt.subplots(1, 2, figsize=(12, 4.8))
    fits = table[table["table_fraction_of_cap"] < 1]
    groups = kmer_io.throughput(fits)
    comps = [c for c in kmer_io.COMPRESSIONS if c in set(fits["compression"])]
    threads = sorted(set(fits["threads"]))
    pairs = [(s, t) for s in classes for t in threads]
    width = 0.8 / max(1, len(pairs))
    for i, (storage, t) in enumerate(pairs):
        part = groups[(groups["storage"] == storage) & (groups["threads"] == t)].set_index("compression")
        for comp in comps:
            x = comps.index(comp) + (i - (len(pairs) - 1) / 2) * width
            value = part["reads_per_s"].get(comp, np.nan)
            if np.isfinite(value):
                axes[0].bar(x, value, width, color=_colour(storage, classes), alpha=1.0 if t == threads[0] else 0.5,
                            edgecolor="black")
            else:
                axes[0].text(x, 0, "no ok run", rotation=90, ha="center", va="bottom", fontsize=7, color=MISSING_COLOUR)
        axes[0].bar(0, 0, 0, color=_colour(storage, classes), alpha=1.0 if t == threads[0] else 0.5, edgecolor="black",
                    label=f"{storage}, {t} thread{'s' if t > 1 else ''}")
    axes[0].set_xlim(-0.5, len(comps) - 0.5)
    axes[0].set_xticks(range(len(comps)), [{"none": "plain"}.get(c, c) for c in comps])
    axes[0].set_xlabel("input compression")
    axes[0].set_ylabel("reads counted per second")
    axes[0].set_title("(a) throughput, tables within the cap")
    axes[0].legend(fontsize=7)
    for storage in classes:
        part = table[table["storage"] == storage]
        ok = part["outcome"] == "ok"
        colour = _colour(storage, classes)
        if ok.any():
            axes[1].scatter(part.loc[ok, "table_fraction_of_cap"], part.loc[ok, "Pfault"], color=colour,
                            label=f"{storage}, ok")
        if (~ok).any():
            axes[1].scatter(part.loc[~ok, "table_fraction_of_cap"], part.loc[~ok, "Pfault"],
                            facecolors="none", edgecolors=colour, label=f"{storage}, not ok (time limit)")
    axes[1].axvline(1.0, color="black", lw=0.8, ls=":")
    axes[1].text(1.0, 1, " cap", transform=axes[1].get_xaxis_transform(), fontsize=7, va="top")
    axes[1].set_yscale("log")
    axes[1].set_xlabel("count table size / memory cap")
    axes[1].set_ylabel("major page faults per second (log)")
    axes[1].set_title("(b) major-fault rate against table size")
    axes[1].legend(fontsize=7)
    for ax in axes:
        ax.grid(alpha=0.3)
    limit = ", ".join(sorted(set(table["mem"].astype(str))))
    return _finish(fig, title, f"Memory cap {limit}; each run with a swap area twice its table on the class's "
                               "device. A table above the cap pages on almost every k-mer.")


# -- the SMUFIN NVMe-over-Fabrics study --------------------------------------------------------------------------------
def figs5_shared_device(table: pd.DataFrame) -> plt.Figure:
    """(a) each instance's runtime per (instances, allocation), (b) the devices' aggregate bandwidth
    over the group's span, (c) each instance's sequential-write ratio."""
    title = "Fig. S5. Concurrent instances on one device, a pair, or one dedicated + the rest shared"
    if table.empty:
        return _empty_figure(title, "no shared_device runs in these results")
    classes = _classes(table)
    order = shared_device.point_order(table)
    fig, axes = plt.subplots(1, 3, figsize=(14, 4.8))
    offset = {s: (i - (len(classes) - 1) / 2) * 0.35 for i, s in enumerate(classes)}
    groups = table.groupby(["storage", "point"], sort=False)
    for (storage, point), part in groups:
        x = order.index(point) + offset[storage]
        colour = _colour(storage, classes)
        ok = part["outcome"] == "ok"
        for ax, col in ((axes[0], "runtime_s"), (axes[2], "seq_write_ratio")):
            ax.scatter([x] * int(ok.sum()), part.loc[ok, col], color=colour, s=14, zorder=3)
            ax.scatter([x] * int((~ok).sum()), part.loc[~ok, col], facecolors="none", edgecolors=colour, s=14)
            ax.bar(x, part[col].mean(), 0.33, color=colour, alpha=0.3)
        per_rep = part.groupby("rep")["device_mbs"].first()
        axes[1].bar(x, per_rep.mean(), 0.33, color=colour, alpha=0.8, yerr=per_rep.std() if len(per_rep) > 1 else None,
                    capsize=2, label=storage if point == order[0] else None)
    for ax in axes:
        ax.set_xticks(range(len(order)), [p.replace("-", "\n") for p in order], fontsize=8)
        ax.set_xlabel("instances and allocation")
        ax.set_ylim(bottom=0)
        ax.grid(alpha=0.3, axis="y")
    axes[0].set_ylabel("runtime of each instance (s)")
    axes[0].set_title("(a) per-instance runtime (bar: mean)")
    axes[1].set_ylabel("aggregate MB/s on devices A and B")
    axes[1].set_title("(b) the devices' aggregate bandwidth")
    axes[1].legend(fontsize=7)
    axes[2].set_ylabel("sequential-write ratio")
    axes[2].set_ylim(0, 1)
    axes[2].set_title("(c) each instance's sequential writes")
    tool = _tool_label("samtools_sort", "SMUFIN")
    note = (f"{tool}. one: all on A; two: round-robin on A and B (composed by placement; no md RAID0 here); "
            "dedicated: instance 1 alone on A, the rest on B. Each instance on a loop device of its own over a file "
            "on its device; A and B are each a device of the class's kind.")
    return _finish(fig, title, note)

