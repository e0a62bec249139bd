"""biossd — will solid-state drives accelerate your bioinformatics?

A reproducible re-run of Lee, Min & Yoon's SSD/HDD profiling study of 23 bioinformatics
programs. The library holds the logic the pipeline and the notebooks call: the profiler
(:mod:`biossd.profile`), memory caps (:mod:`biossd.cgroups`), run manifests
(:mod:`biossd.manifest`), features (:mod:`biossd.features`), synthetic data
(:mod:`biossd.data`), the tool catalogue (:mod:`biossd.catalogue`) and the report
(:mod:`biossd.report`).
"""

__version__ = "0.1.0"
