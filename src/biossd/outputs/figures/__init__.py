"""The report's figures, one module per notebook, each function drawing one figure from an
:class:`biossd.analysis.Analysis` (the related experiments': from their tables) and returning it
for :func:`biossd.outputs.report.save_figure` to write as ``figNN_<slug>.pdf|png``. Missing data is
drawn as such (a labelled gap, "not run", "oom"), and what differs between the two sides other
than the drive is printed at the top."""

from biossd.outputs.figures.patterns import fig05_patterns, fig06_traces, fig07_randomness
from biossd.outputs.figures.prediction import fig02b_predicted_ssds, figs1_prediction, figs7_today_storage
from biossd.outputs.figures.scaling import fig08_input_size, fig09_memory
from biossd.outputs.figures.speedup import fig01_aligners, fig02_speedup, fig03_pipelines
from biossd.outputs.figures.storage_features import fig04_storage_features, fig10_cpu_memory

__all__ = ["fig01_aligners", "fig02_speedup", "fig02b_predicted_ssds", "fig03_pipelines", "fig04_storage_features",
           "fig05_patterns", "fig06_traces", "fig07_randomness", "fig08_input_size", "fig09_memory",
           "fig10_cpu_memory", "figs1_prediction", "figs7_today_storage"]
