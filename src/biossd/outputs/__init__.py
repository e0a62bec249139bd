"""What a reader sees: the paper's tables and figures, the notebooks rendered by papermill, the
citable supplement and the RO-Crate of a result set. Reads the analysis; writes under
``OUTDIR/report/`` and ``paper/build/``.

Figures are files, never windows: matplotlib's backend is set here, once, for every module of
this room (and before any of them imports pyplot), to Agg, so that a report renders the same on a
host without a display, in a notebook's kernel and in CI.
"""

import matplotlib

matplotlib.use("Agg")
