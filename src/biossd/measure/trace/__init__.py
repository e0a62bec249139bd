"""A run's block trace: its collection through tracefs (or blktrace) and its reading, from the
kernel's text or binary events to the canonical per-request table (``blocktrace.tsv.gz``)."""
