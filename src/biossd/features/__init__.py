"""Features of runs (Lee, Min and Yoon 2015, §3.1): block-trace statistics, the paper's eight storage features
and its CPU/memory features, aligner quality, normalization. Hand-off: ``features.csv``, one row
per run (:func:`.extract.features_table`, :func:`.extract.write_table`)."""
