"""A user's own pipeline, profiled as they run it: each Nextflow task's wrapper (:mod:`.task`),
the session whose leader holds the host lock for its tasks side by side (:mod:`.session`), and the
socket through which a task hands itself to that leader (:mod:`.handoff`)."""
