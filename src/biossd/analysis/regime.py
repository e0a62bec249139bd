"""The memory regime each tool ran in, beside its speedup (Table 1's regime columns): under the
sizing rule (:mod:`biossd.study.sizing`) a tool's cap is its floor F plus the one data memory M,
and whether it paged depends on how far what grows with its input exceeds M — the variable the
paper's single RAM created (Lee, Min and Yoon 2015, §3.7: speedup comes "when the memory
footprint of a program exceeds the capacity of main memory").

Per tool at its baseline: F (cap − M), its input, M, the data part (peak RSS − F) over M, the
input over M, and per class the major faults and the pages swapped in and out. And the
pre-registered controls: the paper's G0 tools with small working sets must stay below the
paging threshold under the rule; one that does not is named with the constant that did not
scale — the rule is not retuned for it.
"""

from __future__ import annotations

import math

import numpy as np
import pandas as pd

from biossd.analysis import Analysis, speedup
from biossd.core.units import is_size_label, parse_size
from biossd.study import sizing

#: The paper's G0 tools with small working sets (BWA, Bowtie 2, BLAST, ClustalW, GATK
#: PrintReads): under the rule each must stay below the paging threshold. Named before the run.
CONTROLS = ("bwa", "bowtie2", "blast", "clustalw", "gatk_printreads")
#: Why a control could page under the rule although its data part scales: the constant of the
#: tool that does not (from its algorithm), said when it pages.
CONTROL_CONSTANTS = {
    "bwa": "bwa mem's batch of reads (-K, scaled by D) and its index of the whole genome",
    "bowtie2": "its index of the whole genome, read at random",
    "blast": "its lookup table of the query batch and the database it maps",
    "clustalw": "its n x n distance matrix of the family",
    "gatk_printreads": "the JVM's code and metadata outside the fixed heap",
}
REGIME_COLUMNS = ("floor_bytes", "input_bytes", "data_memory_bytes", "data_over_m", "input_over_m",
                  "major_faults_fast", "major_faults_slow", "swap_ins_fast", "swap_ins_slow",
                  "swap_outs_fast", "swap_outs_slow")
#: Runs whose counts show what a tool did: those that ended ok and those stopped at the limit.
COUNTED = (speedup.OK, speedup.TIMEOUT)


def study_data_memory(a: Analysis) -> float:
    """M of the result set's study (its ``--data_memory``), in bytes; NaN when the study gave none
    (a result set sized by an earlier rule)."""
    value = a.rs.study_param("data_memory")
    return float(parse_size(str(value))) if value and is_size_label(str(value)) else math.nan


def _mean(rows: pd.DataFrame, side: str, column: str) -> float:
    rows = speedup.side_rows(rows, side)
    rows = rows[rows["outcome"].isin(COUNTED)]
    return float(rows[column].mean()) if column in rows and len(rows) else math.nan


def regime_table(a: Analysis) -> pd.DataFrame:
    """One row per tool run at its baseline: :data:`REGIME_COLUMNS` (bytes, ratios and counts)."""
    fast, slow = a.sides
    m_study = study_data_memory(a)
    rows = []
    for tool, runs in a.baseline_runs.groupby("tool", sort=True):
        cap = float(runs["mem_bytes"].dropna().iloc[0]) if runs["mem_bytes"].notna().any() else math.nan
        input_bytes = float(runs["input_bytes"].mean()) if "input_bytes" in runs else math.nan
        # The GATK steps' data memory follows their shared input (Fig. 9's 4 GB on 20 GB).
        m = input_bytes / sizing.INPUT_PER_MEMORY if sizing.is_gatk(tool) and np.isfinite(m_study) else m_study
        floor = cap - m
        peak = _mean(runs, fast, "max_rss_kib") * 1024
        row = {"tool": tool, "floor_bytes": floor, "input_bytes": input_bytes, "data_memory_bytes": m,
               "data_over_m": (peak - floor) / m if m else math.nan, "input_over_m": input_bytes / m if m else math.nan}
        for column, key in (("major_faults", "major_faults"), ("swap_ins", "swap_ins"), ("swap_outs", "swap_outs")):
            row[f"{column}_fast"] = _mean(runs, fast, key)
            row[f"{column}_slow"] = _mean(runs, slow, key)
        rows.append(row)
    return pd.DataFrame(rows, columns=["tool", *REGIME_COLUMNS]).set_index("tool", drop=False)


def controls(a: Analysis, paged_faults: int) -> pd.DataFrame:
    """The pre-registered controls that ran: their major faults per run on each class and whether
    they stayed below ``paged_faults``, with the constant to blame where one did not."""
    table = regime_table(a)
    rows = []
    for tool in CONTROLS:
        if tool not in table.index:
            continue
        r = table.loc[tool]
        worst = np.fmax(r["major_faults_fast"], r["major_faults_slow"])
        held = bool(np.isfinite(worst) and worst < paged_faults)
        rows.append({"tool": tool, "major_faults_fast": r["major_faults_fast"], "major_faults_slow": r["major_faults_slow"],
                     "data_over_m": r["data_over_m"], "held": held,
                     "note": "" if held else f"paged under the rule: {CONTROL_CONSTANTS[tool]} did not scale"})
    return pd.DataFrame(rows, columns=["tool", "major_faults_fast", "major_faults_slow", "data_over_m", "held", "note"])


def controls_text(a: Analysis, paged_faults: int) -> str:
    """One sentence on the controls: how many held, and each that did not with why."""
    table = controls(a, paged_faults)
    if table.empty:
        return "No pre-registered control ran in this result set."
    held = table[table["held"]]
    text = (f"Pre-registered controls (the paper's G0 tools with small working sets: {', '.join(CONTROLS)}): "
            f"{len(held)} of {len(table)} that ran stayed below {paged_faults:,} major faults per run on both classes.")
    for _, r in table[~table["held"]].iterrows():
        text += (f" {r['tool']} did not ({r['major_faults_fast']:,.0f} on the fast side, {r['major_faults_slow']:,.0f} "
                 f"on the slow): {CONTROL_CONSTANTS[r['tool']]} did not scale; the rule was not retuned for it.")
    return text
