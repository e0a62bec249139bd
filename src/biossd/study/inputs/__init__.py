"""A run's input: synthetic inputs and their generators (:mod:`.data`, :mod:`.synthgen`) and the
paper's published data sets, downloaded and verified (:mod:`.datasets`)."""
