"""Measuring one run (Lee, Min and Yoon 2015, §5.1): the profiler and its collectors (rusage, the 1 Hz sampler,
perf or cachegrind counters, the block trace), storage classes for a study run, run directories
and the leftovers of killed runs. Hand-off: a run directory with its manifest ``run.json``
(:mod:`.manifest`) and raw traces."""
