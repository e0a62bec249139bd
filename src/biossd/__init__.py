"""biossd — will solid-state drives accelerate your bioinformatics?

A reproducible re-run of Lee, Min & Yoon's SSD/HDD profiling study of 23 bioinformatics
programs. The library holds the logic the pipeline and the notebooks call: the profiler
(:mod:`biossd.measure.profile`), memory caps (:mod:`biossd.host.cgroups`), run manifests
(:mod:`biossd.measure.manifest`), features (:mod:`biossd.features.extract`), synthetic data
(:mod:`biossd.study.inputs.data`), the tool catalogue (:mod:`biossd.study.catalogue`) and the report
(:mod:`biossd.outputs.report`).
"""

__version__ = "0.1.0"
