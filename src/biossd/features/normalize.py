"""Normalising features across a set of runs to [0, 1], as the paper did before clustering and
plotting (Lee, Min and Yoon 2015, §5.1: "When the range of measurements was large, we took the logarithm. We
then normalized each of the measurements so that values were ranged in [0,1].").

The paper does not say what "large" is. biossd takes the logarithm (base 10) of a column when
its largest value is more than :data:`LOG_RATIO` times its smallest positive value. A column
that holds zeros is shifted by its smallest positive value first: ``log10(x + min_positive)``.
Then every column is scaled min–max to [0, 1]; a constant column becomes 0. NaN stays NaN and
is ignored by min and max. :func:`normalize` returns the rule it applied to each column (log or
not, the ratio, the shift, min and max), to be kept next to the normalised table.
"""

from __future__ import annotations

import math
from pathlib import Path
from typing import Sequence

import numpy as np
import pandas as pd

#: A column spanning more than this factor (max / smallest positive value) is log-transformed.
LOG_RATIO = 100.0
RULES_SUFFIX = ".rules.csv"


def normalize(table: pd.DataFrame, columns: Sequence[str], log_ratio: float = LOG_RATIO
              ) -> tuple[pd.DataFrame, pd.DataFrame]:
    """``table`` with ``columns`` normalised to [0, 1], and one row of rules per column."""
    out = table.copy()
    rules = []
    for col in columns:
        values = pd.to_numeric(table[col], errors="raise").astype(float)
        if (values < 0).any():
            raise ValueError(f"column {col} has negative values; the log rule is for amounts")
        positive = values[values > 0]
        ratio = float(positive.max() / positive.min()) if len(positive) else math.nan
        use_log = bool(len(positive)) and ratio > log_ratio
        shift = float(positive.min()) if use_log and (values == 0).any() else 0.0
        transformed = np.log10(values + shift) if use_log else values
        lo, hi = float(transformed.min()), float(transformed.max())
        out[col] = (transformed - lo) / (hi - lo) if hi > lo else transformed * 0.0
        rules.append({"column": col, "log10": use_log, "ratio_max_to_min_positive": ratio,
                      "log_ratio_threshold": log_ratio, "shift": shift, "min": lo, "max": hi})
    return out, pd.DataFrame(rules)


def rules_path(table_path: Path) -> Path:
    """Where the rules of a normalised table are written: ``name.rules.csv`` beside it."""
    table_path = Path(table_path)
    return table_path.with_name(table_path.stem + RULES_SUFFIX)
