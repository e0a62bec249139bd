"""Analysis of result sets (Lee, Min and Yoon 2015, §2.2, §3.2): reading them (:mod:`.resultset`), speedups
(:mod:`.speedup`), I/O patterns by clustering (:mod:`.patterns`) and the answer to the paper's
question (:mod:`.verdict`). Reads a result set's run table (``features.csv``).

:class:`Analysis` (:mod:`.analysis`) is one analysis of one or more result sets, shared by every
notebook; :func:`open_results` opens it.
"""

from biossd.analysis.analysis import Analysis, open_results

__all__ = ["Analysis", "open_results"]
