"""Quality of a short-read aligner's output against the synthetic truth (Lee, Min and Yoon 2015, §2.1,
Fig. 1(b): "Quality measured in sensitivity, accuracy, precision, and F-measure").

The ``reads`` input kind (:func:`biossd.study.inputs.synthgen.reads`) records where each read came from
(``truth.tsv``: read, contig, 1-based leftmost position of mate 1). A read's primary alignment
is *correct* when it is on the true contig and its leftmost aligned position, moved back by a
leading soft clip, is within :data:`TOLERANCE_BP` of the truth. Over the N reads of the truth:

- TP: aligned correctly; FP: aligned elsewhere; FN: not aligned (unmapped or absent);
  TN = 0 (every read has a true origin in the genome).
- sensitivity = TP / (TP + FN); precision = TP / (TP + FP); accuracy = (TP + TN) / N;
  F-measure = 2 · precision · sensitivity / (precision + sensitivity).

The paper does not define them; these are the usual read-mapping definitions. A catalogue entry
opts in with a ``quality`` block naming its alignment output (``output``), its ``format``
(``sam``, or ``maq_mapview`` for Maq's binary map, converted with ``maq mapview``) and the
``truth`` file; the run that made the output scores it (:mod:`biossd.measure.toolrun`, or
``biossd quality`` afterwards) and writes ``quality.json`` into its run directory, beside
``rusage.json``; :mod:`biossd.features.quality` reads it.
"""

from __future__ import annotations

import json
import subprocess
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from biossd.core.errors import BiossdError
from biossd.core.files import atomic_write_text
from biossd.measure import rundir
from biossd.study.catalogue import QUALITY_FORMATS, Entry

QUALITY_FILE = rundir.QUALITY_FILE
QUALITY_COLUMNS = ("sensitivity", "accuracy", "precision", "f_measure")
#: How far (bp) an alignment's start may be from the truth and still count as correct.
TOLERANCE_BP = 5
SAM_UNMAPPED, SAM_SECONDARY, SAM_SUPPLEMENTARY = 0x4, 0x100, 0x800
_MATE_SUFFIXES = ("/1", "/2")


class QualityError(BiossdError, RuntimeError):
    pass


def read_truth(path: Path) -> pd.DataFrame:
    """``truth.tsv`` as read → (contig, pos1)."""
    truth = pd.read_csv(path, sep="\t", usecols=["read", "contig", "pos1"], dtype={"read": str, "contig": str})
    return truth.set_index("read")


def _strip_mate(names: pd.Series) -> pd.Series:
    return names.str.replace(r"/[12]$", "", regex=True)


def read_sam(path: Path) -> pd.DataFrame:
    """Primary alignments of a SAM file as read → (contig, start, mapped); the start is POS
    moved back by a leading soft clip."""
    rows = pd.read_csv(path, sep="\t", comment="@", header=None, usecols=range(6), dtype=str,
                       names=["qname", "flag", "rname", "pos", "mapq", "cigar"], quoting=3)
    flag = rows["flag"].astype(int)
    rows = rows[(flag & (SAM_SECONDARY | SAM_SUPPLEMENTARY)) == 0]
    flag = rows["flag"].astype(int)
    clip = rows["cigar"].str.extract(r"^(\d+)S", expand=False).fillna("0").astype(int)
    out = pd.DataFrame({"read": _strip_mate(rows["qname"]), "contig": rows["rname"],
                        "start": rows["pos"].astype(int) - clip, "mapped": (flag & SAM_UNMAPPED) == 0})
    return out.drop_duplicates("read").set_index("read")


def read_maq_mapview(text: str) -> pd.DataFrame:
    """``maq mapview`` output (name, chromosome, 1-based position, ...): every line is mapped."""
    from io import StringIO

    rows = pd.read_csv(StringIO(text), sep="\t", header=None, usecols=[0, 1, 2], names=["read", "contig", "start"],
                       dtype={"read": str, "contig": str})
    rows["read"] = _strip_mate(rows["read"])
    rows["mapped"] = True
    return rows.drop_duplicates("read").set_index("read")


def score(alignments: pd.DataFrame, truth: pd.DataFrame, tolerance_bp: int = TOLERANCE_BP) -> dict[str, Any]:
    """The confusion counts and the four measures of the module's definitions."""
    mapped = alignments.loc[alignments["mapped"].astype(bool), ["contig", "start"]]
    joined = truth.merge(mapped, left_index=True, right_index=True, how="left", suffixes=("", "_aln"))
    aligned = joined["start"].notna().to_numpy()
    correct = aligned & (joined["contig_aln"] == joined["contig"]).to_numpy() & (
        np.abs(joined["start"].to_numpy(dtype=float) - joined["pos1"].to_numpy(dtype=float)) <= tolerance_bp)
    n = len(truth)
    tp, fp = int(correct.sum()), int((aligned & ~correct).sum())
    fn, tn = n - tp - fp, 0
    sens = tp / (tp + fn) if tp + fn else float("nan")
    prec = tp / (tp + fp) if tp + fp else float("nan")
    f1 = 2 * prec * sens / (prec + sens) if prec + sens else float("nan")
    return {"reads": n, "tp": tp, "fp": fp, "fn": fn, "tn": tn, "tolerance_bp": tolerance_bp,
            "sensitivity": sens, "precision": prec, "accuracy": (tp + tn) / n if n else float("nan"), "f_measure": f1}


def evaluate(entry: Entry, scratch: Path) -> dict[str, Any] | None:
    """Score ``entry``'s output in a run's ``scratch``; None when the entry has no quality block."""
    block = entry.data.get("quality")
    if not block:
        return None
    files = entry.data["stage"]["files"]
    output = Path(scratch) / files[block["output"]]
    truth_path = Path(scratch) / block["truth"]
    for path in (output, truth_path):
        if not path.is_file():
            raise QualityError(f"{entry.id}: {path} is missing; nothing to score")
    if block["format"] == "sam":
        alignments = read_sam(output)
    elif block["format"] == "maq_mapview":
        try:
            text = subprocess.run(["maq", "mapview", str(output)], capture_output=True, text=True, check=True).stdout
        except (OSError, subprocess.CalledProcessError) as err:
            raise QualityError(f"{entry.id}: `maq mapview {output}` failed ({err})") from None
        alignments = read_maq_mapview(text)
    else:
        raise QualityError(f"{entry.source}: quality.format {block['format']!r} is not one of {QUALITY_FORMATS}")
    return {"tool": entry.id, "format": block["format"], **score(alignments, read_truth(truth_path))}


def write(run_dir: Path, result: dict[str, Any]) -> Path:
    path = Path(run_dir) / QUALITY_FILE
    atomic_write_text(path, json.dumps(result, indent=2, sort_keys=True) + "\n")
    return path
