"""SLURM: a one-node cluster of biossd's own on this host (:mod:`.cluster`) and what a run
learns from the scheduler it runs under (:mod:`.scheduler`)."""
