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
