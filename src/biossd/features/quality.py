"""A run's quality record read into the features table (Lee, Min and Yoon 2015, Fig. 1(b)): the
four measures :mod:`biossd.measure.quality` wrote, NaN for a run that was not scored."""

from __future__ import annotations

import json
from pathlib import Path

from biossd.measure.quality import QUALITY_COLUMNS, QUALITY_FILE, QualityError

__all__ = ["QUALITY_COLUMNS", "QualityError", "read_columns"]


def read_columns(run_dir: Path) -> dict[str, float]:
    """The four measures of a run, NaN when it was not scored."""
    path = Path(run_dir) / QUALITY_FILE
    if not path.is_file():
        return {c: float("nan") for c in QUALITY_COLUMNS}
    try:
        body = json.loads(path.read_text())
        return {c: float(body.get(c, float("nan"))) for c in QUALITY_COLUMNS}
    except (OSError, ValueError, TypeError, AttributeError) as err:
        raise QualityError(f"{path}: not a quality record ({err})") from None
