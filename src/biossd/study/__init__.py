"""What is studied (Lee, Min and Yoon 2015, §2): the tool catalogue and its containers, the synthetic and the
paper's input data, the sizing rule, chained pipelines, the result layout and the experiment
matrix. Hand-off: the study plan (``biossd study plan``, :mod:`.plan`): every run with its
labels, input and publish path, read by the Nextflow workflow."""
