"""What a reader sees: the paper's tables and figures, the notebooks rendered by papermill, the
citable supplement and the RO-Crate of a result set. Reads the analysis; writes under
``OUTDIR/report/`` and ``paper/build/``."""
