"""A run's recorded request stream replayed on a target's own clock, for the prediction
(:mod:`biossd.analysis.predict`) on a target that can (a cloud volume:
:meth:`biossd.host.models.cloudmodel.CloudTarget.replay`).

Served in issue order, each request costs ``latency / depth`` with the depth it met on the device
measured: a burst of n requests issued together costs ``1 + 1/2 + … + 1/n`` latencies there, where
a volume whose latency dominates (gp3's 1–10 ms) serves the burst in about one. The replay issues
each request when the request it followed on the device measured completes on the target, plus
the time the run took in between (:func:`biossd.host.requeststream.followed`), and the target's
busy time is the union of its waited-for requests' intervals on that clock. It still replays the
run's own requests: how the kernel would re-form them on a slower device (merging, read-ahead,
the page cache) is as blind here as in the module it serves.
"""

from __future__ import annotations

from typing import Any, Sequence

import numpy as np

from biossd.host import requeststream

#: A run's stream as :class:`biossd.analysis.predict.RunStream` holds it (named, not imported:
#: the prediction imports this module).
RunStream = Any
MS_PER_S = 1000.0


def replays(target: Any, runs: Sequence[RunStream]) -> bool:
    """Whether ``target`` replays the runs on its own clock (it can, and every run recorded
    when each of its requests was issued and completed) rather than serving them in issue order."""
    return hasattr(target, "replay") and all(r.issue_s is not None and r.complete_s is not None for r in runs)


def waited(run: RunStream) -> np.ndarray:
    """Per request of the run, whether the run waited for it (every one, where not recorded)."""
    return np.ones(len(run.stream), bool) if run.waited is None else np.asarray(run.waited, bool)


def service(timeline: dict[str, tuple[np.ndarray, np.ndarray]], counted: np.ndarray,
            mine: np.ndarray) -> requeststream.Service:
    """A run's service from a replay's timeline (``mine``: its requests' places in it, in its
    issue order): per request, what it adds to the time the target had one of the run's
    ``counted`` requests outstanding (ms), at the middle, low and high latency; each sum is the
    target's busy time for the run."""
    def busy_ms(which: str) -> np.ndarray:
        start, finish = timeline[which]
        return requeststream.union_increments(start[mine], finish[mine], counted) * MS_PER_S

    mean = busy_ms("mean")
    return requeststream.Service(mean, np.zeros_like(mean), busy_ms("low"), busy_ms("high"))


def merged_followed(runs: Sequence[RunStream], back: np.ndarray, owner: np.ndarray
                    ) -> tuple[np.ndarray, np.ndarray]:
    """:func:`biossd.host.requeststream.followed` of runs that overlapped, in their merged
    stream's places (``back``: each request's place; ``owner``: its run, both in the runs'
    order): a request follows only its own run's, and one that followed none is issued at its
    time on the runs' shared clock, from the first run's start."""
    origin = min(r.started_epoch_s for r in runs)
    after = np.full(len(back), -1, np.int64)
    think = np.zeros(len(back))
    for i, run in enumerate(runs):
        mine = back[owner == i]
        own_after, own_think = requeststream.followed(run.issue_s, run.complete_s)
        after[mine] = np.where(own_after >= 0, mine[np.maximum(own_after, 0)], -1)
        think[mine] = np.where(own_after >= 0, own_think, own_think + run.started_epoch_s - origin)
    return after, think
