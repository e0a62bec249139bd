"""The memory regime each tool ran in, beside its speedup (Table 1's regime columns): under the
sizing rule (:mod:`biossd.study.sizing.rule`) a tool's cap is its floor F plus the one data memory M,
and whether it paged depends on how far what grows with its input exceeds M — the variable the
paper's single RAM created (Lee, Min and Yoon 2015, §3.7: speedup comes "when the memory
footprint of a program exceeds the capacity of main memory").

Per tool at its baseline: F (measured in the study's session and recorded by every run; for a
study whose caps were given, cap − M), its input, M, the data part over M — from the sizing
record's *uncapped* run of the full input (``pipeline_info/sizing.json``; a capped run cannot
show more than about M) — the input over M, and per class the page swaps per second (Pfault),
the major faults, the pages swapped in and out and the swap-in reads, and on the slow class who
issued most of those. And the pre-registered controls: the paper's G0 tools with small working
sets must come out negligible (below :data:`biossd.analysis.speedup.NEGLIGIBLE_BELOW`); one that
does not is named with the process that paged — the rule is not retuned for it.
"""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from biossd.analysis import Analysis, speedup
from biossd.core.units import format_size, is_size_label, parse_size
from biossd.study.inputs.kinds import PREPARED_RECORD
from biossd.study.sizing import record as sizing_record
from biossd.study.sizing import rule

#: The paper's G0 tools with small working sets (BWA, Bowtie 2, BLAST, ClustalW, GATK
#: PrintReads): under the rule each must come out below NEGLIGIBLE_BELOW. Named before the run.
CONTROLS = ("bwa", "bowtie2", "blast", "clustalw", "gatk_printreads")
REGIME_COLUMNS = ("floor_bytes", "input_bytes", "data_memory_bytes", "data_over_m", "input_over_m",
                  "pfault_fast", "pfault_slow", "major_faults_fast", "major_faults_slow", "swap_ins_fast",
                  "swap_ins_slow", "swap_outs_fast", "swap_outs_slow", "swap_reads_fast", "swap_reads_slow",
                  "swap_read_issuer_slow", "swap_read_issuer_share_slow")
#: Runs whose counts show what a tool did: those that ended ok and those stopped at the limit.
COUNTED = (speedup.OK, speedup.TIMEOUT)


def study_data_memory(a: Analysis) -> float:
    """M of the result set's study (its ``--data_memory``), in bytes; NaN when the study gave none
    (a result set sized by an earlier rule)."""
    value = a.rs.study_param("data_memory")
    return float(parse_size(str(value))) if value and is_size_label(str(value)) else math.nan


def _counted(runs: pd.DataFrame, side: str) -> pd.DataFrame:
    """The runs of ``side`` whose counts show what the tool did (:data:`COUNTED`)."""
    rows = speedup.side_rows(runs, side)
    return rows[rows["outcome"].isin(COUNTED)]


def _mean(rows: pd.DataFrame, column: str) -> float:
    return float(rows[column].mean()) if column in rows and len(rows) else math.nan


def _issuer(rows: pd.DataFrame) -> tuple[str, float]:
    """The command that issued most swap-in reads over ``rows`` (a side's counted runs), and its share."""
    if "swap_read_top_comm" not in rows or rows["swap_read_top_comm"].dropna().empty:
        return "", math.nan
    comm = rows["swap_read_top_comm"].dropna().astype(str).mode().iloc[0]
    share = rows.loc[rows["swap_read_top_comm"] == comm, "swap_read_top_share"].mean()
    return comm, float(share)


def regime_table(a: Analysis) -> pd.DataFrame:
    """One row per tool run at its baseline: :data:`REGIME_COLUMNS` (bytes, ratios and counts)."""
    fast, slow = a.sides
    m_study = study_data_memory(a)
    uncapped = sizing_record.data_over_m(a.rs.sizing)
    rows = []
    for tool, runs in a.baseline_runs.groupby("tool", sort=True):
        cap = float(runs["cap_bytes"].dropna().median()) if runs["cap_bytes"].notna().any() else math.nan
        input_bytes = float(runs["input_bytes"].mean()) if "input_bytes" in runs else math.nan
        # The GATK steps' data memory follows their shared input (Fig. 9's 4 GB on 20 GB); a study
        # that measured its floors in its session recorded both in every run.
        m = input_bytes / rule.INPUT_PER_MEMORY if rule.is_gatk(tool) and np.isfinite(m_study) else m_study
        if "data_memory_bytes" in runs and runs["data_memory_bytes"].notna().any():
            m = float(runs["data_memory_bytes"].dropna().median())
        floor = (float(runs["floor_bytes"].dropna().median()) if "floor_bytes" in runs and runs["floor_bytes"].notna().any()
                 else cap - m)
        counted = {side: _counted(runs, side) for side in (fast, slow)}
        issuer, share = _issuer(counted[slow])
        row = {"tool": tool, "floor_bytes": floor, "input_bytes": input_bytes, "data_memory_bytes": m,
               "data_over_m": float(uncapped.get(tool, math.nan)), "input_over_m": input_bytes / m if m else math.nan,
               "swap_read_issuer_slow": issuer, "swap_read_issuer_share_slow": share}
        for column, key in (("pfault", "Pfault"), ("major_faults", "major_faults"), ("swap_ins", "swap_ins"),
                            ("swap_outs", "swap_outs"), ("swap_reads", "swap_read_requests")):
            row[f"{column}_fast"] = _mean(counted[fast], key)
            row[f"{column}_slow"] = _mean(counted[slow], key)
        rows.append(row)
    return pd.DataFrame(rows, columns=["tool", *REGIME_COLUMNS]).set_index("tool", drop=False)


def halved_from(a: Analysis, tool: str) -> list[int]:
    """The inputs (bytes) of ``tool`` that the sizing rule left behind because their capped native
    run passed half the time limit (the sizing record's ``capped`` runs that timed out), largest
    first; empty without a record."""
    return sizing_record.capped_timeouts(a.rs.sizing, tool)


def controls(a: Analysis) -> pd.DataFrame:
    """The pre-registered controls that ran: their baseline speedup and its interval, whether it
    stayed negligible (below :data:`biossd.analysis.speedup.NEGLIGIBLE_BELOW`), and, where it did
    not, who paged on the slow side."""
    table = regime_table(a)
    base = a.baseline
    rows = []
    for tool in CONTROLS:
        if tool not in table.index or tool not in base.index:
            continue
        r, b = table.loc[tool], base.loc[tool]
        held = bool(np.isfinite(b["speedup"]) and b["speedup"] < speedup.NEGLIGIBLE_BELOW)
        note = "" if held else (
            "no speedup to judge" if not np.isfinite(b["speedup"]) else
            f"{r['swap_reads_slow']:,.0f} swap-in reads per run on the slow side"
            + (f", {r['swap_read_issuer_share_slow']:.0%} issued by {r['swap_read_issuer_slow']}"
               if r["swap_read_issuer_slow"] else ""))
        rows.append({"tool": tool, "speedup": b["speedup"], "speedup_low": b["speedup_low"],
                     "speedup_high": b["speedup_high"], "swap_reads_fast": r["swap_reads_fast"],
                     "swap_reads_slow": r["swap_reads_slow"], "data_over_m": r["data_over_m"], "held": held,
                     "note": note})
    return pd.DataFrame(rows, columns=["tool", "speedup", "speedup_low", "speedup_high", "swap_reads_fast",
                                       "swap_reads_slow", "data_over_m", "held", "note"])


def controls_text(a: Analysis) -> str:
    """One sentence on the controls: how many held, and each that did not with why."""
    table = controls(a)
    if table.empty:
        return "No pre-registered control ran in this result set."
    held = table[table["held"]]
    text = (f"Pre-registered controls (the paper's G0 tools with small working sets: {', '.join(CONTROLS)}): "
            f"{len(held)} of {len(table)} that ran stayed below {speedup.NEGLIGIBLE_BELOW:g}x.")
    for _, r in table[~table["held"]].iterrows():
        text += f" {r['tool']} did not ({r['speedup']:.2f}x: {r['note']}); the rule was not retuned for it."
    return text


def sizing_text(a: Analysis) -> str:
    """How the result set was sized, plainly: by the sizing rule on which host and budget, or by
    hand — then that the paper's regime was not kept, with each tool's input over its cap."""
    rec = a.rs.sizing
    if rec and rec.get("format") == sizing_record.FORMAT:
        how = sizing_record.provenance(rec)
        return (f"Sized by the rule (`biossd study size` on {how['host']}, {how['created']}: {how['run_s']:g} s "
                f"an input may add to a run, a {how['time_limit_s']:g} s limit); both sides ran its inputs, data "
                "memory, settings and limit, each capped at the floor its own session measured plus that data memory, "
                "so each tool ran in the paper's regime as the rule defines it.")
    if rec:
        return ("Sized by the rule, measured by benchmarks/sizing.py on the machine that ran the study (its record "
                "is kept in pipeline_info/sizing.json).")
    base = a.baseline_runs.groupby("tool")[["input_bytes", "cap_bytes"]].mean()
    ratios = (base["input_bytes"] / base["cap_bytes"]).dropna()
    listed = ", ".join(f"{tool} {ratio:.2g}" for tool, ratio in ratios.sort_values().items())
    if len(ratios) and (ratios >= rule.INPUT_PER_MEMORY).all():
        return (f"Caps and inputs as given, not measured by the rule (the paper's own setup is given so: "
                f"-profile paper); every tool's input is at least {rule.INPUT_PER_MEMORY} times its cap, Fig. 9's "
                f"20 GB on 4 GB, so each ran in the paper's regime. Input over cap per tool: {listed}.")
    m = study_data_memory(a)
    given = f" (a data memory M of {format_size(int(m))} scaled the tools' settings)" if np.isfinite(m) else ""
    return ("Not sized by a measurement of the rule: the caps and inputs were given by hand" + given + ", so the "
            "paper's regime — inputs several times the memory, Fig. 9's 20 GB on 4 GB — was not kept unless they "
            f"happen to keep it. Input over cap per tool: {listed or 'no baseline runs'}. A tool that did not page "
            "here may page in the paper's regime; its group says nothing about the paper's.")


def inputs_text(a: Analysis) -> str:
    """Where the runs' inputs came from: synthetic stand-ins, or data sets of the paper's Table 5
    prepared by their manifests' recipes (each prepared input's record, ``inputs/*/prepared.json``)."""
    prepared: dict[str, dict[str, Any]] = {}
    for root in a.rs.roots:
        for path in sorted(Path(root).glob(f"inputs/*/{PREPARED_RECORD}")):
            body = json.loads(path.read_text())
            prepared.setdefault(body["dataset"], body)
    if not prepared:
        return ("Every input was synthetic (`biossd data synth`): a stand-in of the kind each tool reads, not the "
                "data sets of the paper's Table 5.")
    parts = []
    for dataset, body in sorted(prepared.items()):
        unverified = [s["name"] for s in body.get("sources", []) if not s.get("verified")]
        parts.append(f"{dataset} (recipe {body['recipe']}, seed {body['seed']}"
                     + (f"; not verified against a pinned checksum: {', '.join(unverified)}" if unverified else "")
                     + ")")
    return ("Inputs prepared from the paper's data sets by their manifests' recipes (`biossd data prepare`): "
            + "; ".join(parts) + ". Every other input was synthetic.")
