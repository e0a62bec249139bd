"""The result layout every run lands in (the study pipeline's output contract):

``OUTDIR/<host>-<storage>/runs/<tool>/<mem>/<scale>/<rep>/run.json``,
``OUTDIR/<host>-<storage>/device.json`` (``biossd device characterize`` of the class's device),
``OUTDIR/features.csv`` and ``OUTDIR/report/{figures,tables,notebooks}/``.

``nextflow/modules/local/profile/main.nf`` publishes to the same path; a test checks both agree.
"""

from __future__ import annotations

from pathlib import PurePosixPath
from typing import Mapping

RUN_PATH_LABELS = ("host", "storage", "tool", "mem", "scale", "rep")
FEATURES_FILE = "features.csv"
DEVICE_RECORD = "device.json"
#: How far a run directory is below its ``<host>-<storage>`` directory (runs/tool/mem/scale/rep).
RUN_DEPTH = 5
REPORT_DIR = "report"
FIGURES_DIR = PurePosixPath(REPORT_DIR) / "figures"


def run_relpath(labels: Mapping[str, object]) -> PurePosixPath:
    """Where a run with these labels lives, relative to the output directory."""
    missing = [k for k in RUN_PATH_LABELS if labels.get(k) in (None, "")]
    if missing:
        raise ValueError(f"run labels lack {missing}, needed for the result layout")
    return PurePosixPath(
        f"{labels['host']}-{labels['storage']}", "runs", str(labels["tool"]), str(labels["mem"]),
        str(labels["scale"]), str(labels["rep"]),
    )
