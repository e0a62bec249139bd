"""Shared primitives no stage owns: byte sizes and durations (:mod:`.units`), files written whole
or not at all (:mod:`.files`), process owners of what biossd makes on a host (:mod:`.owners`),
administration commands with clear errors (:mod:`.commands`) and the checkout's paths
(:mod:`.paths`). Every other package may import this one; it imports none of them."""
