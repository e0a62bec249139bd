"""A recorded request stream and what a device model makes of it: the two shapes every target
(:mod:`biossd.host.models.devicemodels`, :mod:`biossd.host.models.cloudmodel`) takes and gives."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np


@dataclass(frozen=True)
class Stream:
    """A recorded request stream in issue order: direction, byte offset on its device, size,
    the queue depth it met (requests outstanding when it was issued, itself included), how long
    its device had been idle before it (ms) and whether its predecessor was on another device."""

    is_write: np.ndarray
    offset: np.ndarray
    nbytes: np.ndarray
    depth: np.ndarray
    idle_ms: np.ndarray
    new_stream: np.ndarray
    #: Flushes of the device's write cache (no data; ``None``: there are none).
    is_flush: np.ndarray | None = None

    def __len__(self) -> int:
        return len(self.nbytes)

    @property
    def flushes(self) -> np.ndarray:
        return np.zeros(len(self), bool) if self.is_flush is None else np.asarray(self.is_flush, bool)

    @property
    def sequential(self) -> np.ndarray:
        """Data requests that start where the previous data request on the same device ended
        (a flush between them does not move anything)."""
        data = ~self.flushes
        out = np.zeros(len(self), bool)
        offset, end = self.offset[data], self.offset[data] + self.nbytes[data]
        new = self.new_stream[data]
        out[data] = (offset == np.concatenate(([-1], end[:-1]))) & ~new
        return out


@dataclass(frozen=True)
class Service:
    """Per request: expected device time (ms), its variance (ms², the model's randomness) and
    the low and high ends of what the model's unknowns allow (ms)."""

    mean_ms: np.ndarray
    var_ms2: np.ndarray
    low_ms: np.ndarray
    high_ms: np.ndarray


def followed(issue_s: np.ndarray, complete_s: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Per request of a recorded stream (issue order): the request it followed — the last whose
    completion came before its issue (``-1``: none had completed) — and the time between that
    completion and its issue (s; for a request that followed none, its issue time). The replay of
    :meth:`biossd.host.models.cloudmodel.CloudTarget.replay` issues a request that long after the
    one it followed completes on the target: a process that waited for a request issues its next
    after it, and what it did in between (computing) takes as long on any device."""
    issue_s, complete_s = np.asarray(issue_s, float), np.asarray(complete_s, float)
    if issue_s.size == 0:
        return np.zeros(0, np.int64), np.zeros(0)
    order = np.argsort(complete_s, kind="stable")
    last = np.searchsorted(complete_s[order], issue_s, side="right") - 1
    after = np.where(last >= 0, order[np.maximum(last, 0)], -1)
    think = np.where(after >= 0, issue_s - complete_s[np.maximum(after, 0)], issue_s)
    return after, np.maximum(think, 0.0)


def union_increments(start_s: np.ndarray, finish_s: np.ndarray, counted: np.ndarray) -> np.ndarray:
    """Per request (in order of ``start_s``, which never decreases): what its ``[start, finish]``
    adds to the union of the counted requests' intervals (s; 0 for one not counted). Their sum is
    the time the device had a counted request outstanding."""
    out = np.zeros(len(start_s))
    end = -np.inf
    for k in np.flatnonzero(counted):
        out[k] = max(0.0, finish_s[k] - max(start_s[k], end))
        end = max(end, finish_s[k])
    return out
