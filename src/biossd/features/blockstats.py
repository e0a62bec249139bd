"""The counts and integrals behind the block-trace features, accumulated in one pass over a
trace in time order, chunk by chunk, so a trace of any length is summarised in bounded memory.

:class:`BlockTally` takes *issues* (requests sent to the device: time, device, sector, bytes,
direction) and *write queue events* (+1 when a write is issued, -1 when it completes), both in
time order. It keeps only per-device and queue state between chunks. The features
themselves are formulas over the totals, in :mod:`biossd.features.extract`.

Two feeders fill it. :func:`tally_requests` reads the canonical file of one request per row.
:func:`tally_records` reads blktrace records (:mod:`biossd.measure.trace.blkbinary`) without pairing issues with
completions. Both count the same things, so a run's features do not depend on which tracer
recorded it.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any, Iterable

import numpy as np

from biossd.core.units import SECTOR_BYTES
from biossd.measure.trace import blkbinary

NS_PER_S = 1e9


@dataclass
class BlockTally:
    """Totals over the issues and write events in the window ``[t0, t1]`` (one time unit
    throughout: seconds for the canonical file, nanoseconds for blktrace records). A window
    bound of ``None`` is the first/last event seen."""

    t0: float | None
    t1: float | None
    n_reads: int = 0
    n_writes: int = 0
    n_requests: int = 0
    read_bytes: int = 0
    write_bytes: int = 0
    n_consecutive: int = 0
    #: ∫ (write requests outstanding) dt over the window, in the time unit.
    write_queue_integral: float = 0.0
    #: Time with at least one request (read, write or other) outstanding at the device over the
    #: window, in the time unit: the union of the requests' issue → completion intervals.
    busy_time: float = 0.0
    _last_end: dict[int, int] = field(default_factory=dict)
    _queue_raw: int = 0
    _queue_floor: int = 0
    _queue_time: float | None = None
    _busy_raw: int = 0
    _busy_floor: int = 0
    _busy_time_at: float | None = None
    _first: float = math.inf
    _last: float = -math.inf

    def _seen(self, time: np.ndarray) -> None:
        if time.size:
            self._first = min(self._first, float(time.min()))
            self._last = max(self._last, float(time.max()))

    def _bounds(self) -> tuple[float, float]:
        return (-math.inf if self.t0 is None else self.t0, math.inf if self.t1 is None else self.t1)

    def add_issues(self, time: np.ndarray, device: np.ndarray, sector: np.ndarray, nbytes: np.ndarray,
                   is_read: np.ndarray, is_write: np.ndarray) -> None:
        """Requests issued to the device, in time order (those outside the window are ignored)."""
        self._seen(time)
        lo, hi = self._bounds()
        inside = (time >= lo) & (time <= hi)
        if not inside.all():
            device, sector, nbytes = device[inside], sector[inside], nbytes[inside]
            is_read, is_write = is_read[inside], is_write[inside]
        self.n_requests += int(sector.size)
        self.n_reads += int(np.count_nonzero(is_read))
        self.n_writes += int(np.count_nonzero(is_write))
        self.read_bytes += int(nbytes[is_read].sum())
        self.write_bytes += int(nbytes[is_write].sum())
        if sector.size == 0:
            return
        end = sector + nbytes // SECTOR_BYTES
        devices = [int(device[0])] if (device == device[0]).all() else np.unique(device).tolist()
        for dev in devices:
            mine = slice(None) if len(devices) == 1 else device == dev
            start_d, end_d = sector[mine], end[mine]
            self.n_consecutive += int(np.count_nonzero(start_d[1:] == end_d[:-1]))
            if dev in self._last_end and int(start_d[0]) == self._last_end[dev]:
                self.n_consecutive += 1
            self._last_end[dev] = int(end_d[-1])

    def add_write_events(self, time: np.ndarray, delta: np.ndarray) -> None:
        """+1 (a write issued) and -1 (a write completed) events, in time order. A completion
        with no write outstanding (issued before the trace began) is ignored."""
        if time.size == 0:
            return
        self._seen(time)
        raw = self._queue_raw + np.cumsum(delta, dtype=np.int64)
        floor = np.minimum.accumulate(np.minimum(raw, self._queue_floor))
        queue = raw - floor  # outstanding writes after each event, never below zero
        before = np.concatenate([[self._queue_raw - self._queue_floor], queue[:-1]])
        clipped = np.clip(time, *self._bounds()).astype(np.float64)
        prev = np.concatenate([[clipped[0] if self._queue_time is None else self._queue_time], clipped[:-1]])
        self.write_queue_integral += float(np.dot(before, clipped - prev))
        self._queue_raw, self._queue_floor = int(raw[-1]), int(floor[-1])
        self._queue_time = float(clipped[-1])

    def add_busy_events(self, time: np.ndarray, delta: np.ndarray) -> None:
        """+1 (any request issued) and -1 (one completed) events, in time order: the time with at
        least one request outstanding accumulates into :attr:`busy_time`. A completion with
        nothing outstanding (issued before the trace began) is ignored."""
        if time.size == 0:
            return
        raw = self._busy_raw + np.cumsum(delta, dtype=np.int64)
        floor = np.minimum.accumulate(np.minimum(raw, self._busy_floor))
        queue = raw - floor
        before = np.concatenate([[self._busy_raw - self._busy_floor], queue[:-1]])
        clipped = np.clip(time, *self._bounds()).astype(np.float64)
        prev = np.concatenate([[clipped[0] if self._busy_time_at is None else self._busy_time_at], clipped[:-1]])
        self.busy_time += float(np.dot(before > 0, clipped - prev))
        self._busy_raw, self._busy_floor = int(raw[-1]), int(floor[-1])
        self._busy_time_at = float(clipped[-1])

    def finish(self) -> "BlockTally":
        """Fix open window bounds to the first/last event, and account for the writes still
        outstanding from the last event to the window's end."""
        if self.t0 is None:
            self.t0 = self._first if self._first < math.inf else 0.0
        if self.t1 is None:
            self.t1 = self._last if self._last > -math.inf else self.t0
        if self._queue_time is not None:
            self.write_queue_integral += (self._queue_raw - self._queue_floor) * (self.t1 - self._queue_time)
            self._queue_time = self.t1
        if self._busy_time_at is not None:
            self.busy_time += float(self._busy_raw - self._busy_floor > 0) * (self.t1 - self._busy_time_at)
            self._busy_time_at = self.t1
        return self


def tally_requests(requests: dict[str, Any], t0_s: float, t1_s: float) -> BlockTally:
    """Totals from the canonical file's rows (:func:`biossd.measure.trace.tracereader.request_arrays`)."""
    tally = BlockTally(t0_s, t1_s)
    is_read, is_write = requests["op"] == "R", requests["op"] == "W"
    tally.add_issues(requests["issue_s"], requests["device"], requests["sector"], requests["bytes"],
                     is_read, is_write)
    done = requests["complete_s"][is_write]
    done = done[~np.isnan(done)]
    time = np.concatenate([requests["issue_s"][is_write], done])
    delta = np.concatenate([np.ones(np.count_nonzero(is_write), np.int64), -np.ones(done.size, np.int64)])
    order = np.argsort(time, kind="stable")
    tally.add_write_events(time[order], delta[order])
    finished = requests["complete_s"][~np.isnan(requests["complete_s"])]
    time = np.concatenate([requests["issue_s"], finished])
    delta = np.concatenate([np.ones(requests["issue_s"].size, np.int64), -np.ones(finished.size, np.int64)])
    order = np.argsort(time, kind="stable")
    tally.add_busy_events(time[order], delta[order])
    return tally.finish()


def tally_records(chunks: Iterable[np.ndarray | dict[str, np.ndarray]], t0_ns: float | None = None,
                  t1_ns: float | None = None) -> BlockTally:
    """Totals from blktrace events in time order, chunk by chunk: structured records
    (:data:`biossd.measure.trace.blkbinary.RECORD_DTYPE`) or their :func:`biossd.measure.trace.blkbinary.compact` columns.
    Issues are ``D`` events; the write queue moves on write ``D`` (+1) and ``C`` (-1)."""
    tally = BlockTally(t0_ns, t1_ns)
    for chunk in chunks:
        cols = blkbinary.compact(chunk) if isinstance(chunk, np.ndarray) else chunk
        action = cols["action"]
        cat = action >> blkbinary.TC_SHIFT
        issue = (action & 0xFFFF) == blkbinary.ACT_ISSUE
        write = (cat & blkbinary.TC_WRITE) != 0
        discard = (cat & blkbinary.TC_DISCARD) != 0
        d_write, d_discard = write[issue], discard[issue]
        tally.add_issues(cols["time"][issue], cols["device"][issue], cols["sector"][issue].astype(np.int64),
                         cols["bytes"][issue].astype(np.int64), ~d_write & ~d_discard, d_write & ~d_discard)
        events = write & ~discard
        delta = np.where(issue[events], 1, -1).astype(np.int64)
        tally.add_write_events(cols["time"][events], delta)
        done = (action & 0xFFFF) == blkbinary.ACT_COMPLETE
        moves = issue | done
        tally.add_busy_events(cols["time"][moves], np.where(issue[moves], 1, -1).astype(np.int64))
    return tally.finish()


def service_split(requests: dict[str, Any], t0_s: float, t1_s: float) -> tuple[float, float]:
    """The device's time spent on reads and on writes among the requests issued in ``[t0, t1]``
    (seconds): each request's service, taken as a disk serves one at a time — from the later of
    its issue and the previous completion to its own completion. On a device that serves several
    at once (flash) the split is an approximation; its sum is at most the busy time."""
    issue, complete = requests["issue_s"], requests["complete_s"]
    keep = (issue >= t0_s) & (issue <= t1_s) & ~np.isnan(complete) & np.isin(requests["op"], ("R", "W"))
    issue, complete, op = issue[keep], complete[keep], requests["op"][keep]
    order = np.argsort(complete, kind="stable")
    issue, complete, op = issue[order], complete[order], op[order]
    previous = np.concatenate(([-np.inf], complete[:-1]))
    service = complete - np.maximum(issue, previous)
    return float(service[op == "R"].sum()), float(service[op == "W"].sum())
