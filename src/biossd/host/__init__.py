"""The machine a run measures: block devices, memory caps (cgroup v1/v2), swap areas on loop
devices, tracefs block tracepoints, the emulated hard disk (its service-time model, its FUSE
server and its ``up``/``down``), fio device characterization, the one-measured-run-per-host lock
and the host's facts. Hand-off: the device record ``device.json`` (:mod:`.characterize`)."""
