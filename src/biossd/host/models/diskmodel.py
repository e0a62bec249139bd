"""A service-time model of a single-actuator hard disk and its buffer, calibrated from a spec sheet.

The paper compared SSDs with three 7200/10000 rpm HDDs by their vendor specs (Lee, Min and Yoon
2015, Tables 3 and 4: sequential MB/s, random read/write IOPS, a 64 MB buffer each). To run the
study on a machine without an HDD, biossd serves an emulated disk's requests after the time this
model says the real disk would take; the prediction (:mod:`biossd.host.models.devicemodels`) replays a
recorded request stream through the same model. Its parts, after the disk models of Ruemmler and
Wilkes (1994) and DiskSim, whose authors found the buffer the most important part to model:

* **The mechanism.** A request at byte offset ``x`` with the head left at ``h`` by the previous
  media access pays *positioning*, then ``n / media rate``. A forward gap up to
  :data:`NEAR_BYTES` (about a track) is passed over at media rate; any other move is a seek over
  the request's real distance plus a rotational latency, uniform in ``[0, one revolution)``. The
  seek over a fraction ``f`` of the full stroke costs ``track_seek + k * sqrt(f)`` (the usual
  square-root profile of a voice-coil actuator). ``k`` is solved so that a random 4 KiB request
  over the whole stroke costs the spec's ``1 / random IOPS`` on average (E[sqrt|U - V|] = 8/15),
  separately for reads and writes.
* **The buffer** (the spec's ``buffer_mb``): one pool shared by write-behind data and read
  segments.

  - *Write-back with immediate reporting*: a write that fits completes once it crossed the
    interface (``n / interface rate``); its data is destaged later — in idle time, or when a
    write needs room, or on a FLUSH (a FUA write reaches a loop device as a write and a flush).
    Destaging picks the dirty extent nearest the head (shortest seek first) and, choosing in
    rotational-position order among the ``k`` extents waiting (at most :data:`REORDER_DEPTH`),
    expects ``revolution / (k + 1)`` of latency; a write that must wait for room destages only
    as much as it needs, and its transfer over the interface overlaps that. A write larger than
    the whole buffer goes straight to the media.
  - *A segmented read cache*: each read that missed gets a segment (the least recently used
    one is given up); while the disk is idle it keeps reading ahead into the segment of the last
    read, if the head is still at its end, until the segment holds :attr:`segment_bytes` the
    host has not read yet. A read found in a segment or in the write-behind data costs only the
    interface transfer; one that starts in a segment and runs past it reads the rest from the
    media (sequentially when the head is there). Segments overlapping a write are dropped.
* **Scaling.** The study runs the paper's machine scaled down by ``D`` (:mod:`biossd.study.sizing.rule`:
  1 GB of RAM becomes the data memory M). The disk is scaled with it (``scale = D``): its buffer
  holds ``buffer / D``, as the machine's memory does, and a distance on the emulated device
  counts ``D`` times on the stroke, since a program's data (and so the spread of its files and
  its swap) is ``D`` times smaller. A read segment holds at least :data:`MIN_SEGMENT_BYTES` (one
  read-ahead window of the host, which the rule does not scale): smaller, it could not hold one
  request of a stream. ``scale = 1`` is the disk itself.

Requests are served one at a time, in arrival order: one actuator and no command queueing (NCQ).
The model is deterministic but for the rotational latency of a media access after a seek, which
is drawn from a seeded generator (the emulated disk) or taken as its mean with its variance (the
prediction, :meth:`DiskModel.stream_ms`).
"""

from __future__ import annotations

import bisect
import random
from dataclasses import dataclass
from pathlib import Path
from typing import Sequence

from biossd.core import yamlfile
from biossd.core.errors import BiossdError

MS_PER_MINUTE = 60_000.0
MB = 1_000_000  # vendor megabytes (MB/s in the spec sheets)
#: A drive's buffer is sized in binary megabytes.
MIB = 1 << 20
SPEC_RANDOM_BYTES = 4096
#: E[sqrt(|U - V|)] for independent uniform U, V on [0, 1].
MEAN_SQRT_DISTANCE = 8.0 / 15.0
#: A forward gap up to this long (on the device, unscaled) is passed over at media speed rather
#: than sought: about a track of a 1 TB 7200 rpm disk.
NEAR_BYTES = 1 << 20
#: A drive reorders at most this many waiting commands by rotational position (NCQ's depth).
REORDER_DEPTH = 32
#: A drive divides its buffer into about this many read segments.
READ_SEGMENTS = 16
#: The smallest read segment: the host's read-ahead window (the kernel's default
#: ``read_ahead_kb``, the same on both storage classes), so that a segment holds a request.
MIN_SEGMENT_BYTES = 128 << 10
PROFILE_FIELDS = ("name", "kind", "rpm", "capacity_gb", "buffer_mb", "interface_mbs", "seq_read_mbs", "seq_write_mbs",
                  "rand_read_iops", "rand_write_iops", "track_seek_ms", "source")
#: The largest value each of a profile's numbers may take: beyond any rotating disk made (the
#: fastest spin at 15,000 rpm, the largest at tens of TB), so a typo or an overflowing number is
#: refused, naming the field, rather than modelled.
PROFILE_MAXIMA = {"rpm": 100_000, "capacity_gb": 1e6, "buffer_mb": 1e5, "interface_mbs": 1e5, "seq_read_mbs": 1e5,
                  "seq_write_mbs": 1e5, "rand_read_iops": 1e7, "rand_write_iops": 1e7, "track_seek_ms": 1e3}
READ, WRITE, FLUSH = "read", "write", "flush"


class ProfileError(BiossdError, ValueError):
    pass


@dataclass(frozen=True)
class DiskProfile:
    """A device's spec sheet (one YAML file under ``study/devices/``)."""

    name: str
    kind: str
    rpm: float
    capacity_gb: float
    buffer_mb: float
    #: The host interface's rate (MB/s): a buffer hit moves at this rate.
    interface_mbs: float
    seq_read_mbs: float
    seq_write_mbs: float
    rand_read_iops: float
    rand_write_iops: float
    #: Track-to-track seek (not in the paper's tables; vendors quote ~0.8–1 ms for 7200 rpm).
    track_seek_ms: float
    source: str

    @property
    def revolution_ms(self) -> float:
        return MS_PER_MINUTE / self.rpm

    @property
    def capacity_bytes(self) -> float:
        return self.capacity_gb * 1e9

    @classmethod
    def load(cls, path: Path) -> "DiskProfile":
        path = Path(path)
        data = yamlfile.read_mapping(path, "a device profile", ProfileError)
        missing = [f for f in PROFILE_FIELDS if f not in data]
        unknown = [f for f in data if f not in PROFILE_FIELDS]
        if missing or unknown:
            raise ProfileError(f"{path}: missing fields {missing}, unknown fields {unknown}")
        numbers = {f: data[f] for f in PROFILE_FIELDS if f not in ("name", "kind", "source")}
        bad = [f for f, v in numbers.items() if isinstance(v, bool) or not isinstance(v, (int, float)) or not v > 0]
        if bad:
            raise ProfileError(f"{path}: fields {bad} must be positive numbers")
        over = [f"{f} {v!r} (at most {PROFILE_MAXIMA[f]:g})" for f, v in numbers.items() if v > PROFILE_MAXIMA[f]]
        if over:
            raise ProfileError(f"{path}: fields out of a disk's range: {', '.join(over)}")
        return cls(**{**data, **{f: float(v) for f, v in numbers.items()}})


@dataclass
class Cost:
    """One request's time at the disk (ms) and its variance (ms², from the rotational latencies
    taken at their mean)."""

    ms: float = 0.0
    var_ms2: float = 0.0

    def add(self, other: "Cost") -> "Cost":
        self.ms += other.ms
        self.var_ms2 += other.var_ms2
        return self


@dataclass
class _Segment:
    """A read segment: the cached bytes ``[start, end)`` and how far the host has read them."""

    start: int
    end: int
    read_to: int


class DiskModel:
    """Service times of one disk and the state of its buffer; not thread-safe (the server
    serialises requests, as the single actuator does). ``seed``: the rotational latencies are
    drawn from it; ``None``: they are taken at their mean (and their variance reported).
    ``scale``: the study's memory divisor D (the module's text)."""

    def __init__(self, profile: DiskProfile, seed: int | None = 0, scale: float = 1.0) -> None:
        if scale < 1:
            raise ProfileError(f"a disk is scaled down by its study's divisor D >= 1, got {scale}")
        self.profile = profile
        self.scale = float(scale)
        self._rng = random.Random(seed) if seed is not None else None
        self.rate_bytes_per_ms = {READ: profile.seq_read_mbs * MB / 1000.0, WRITE: profile.seq_write_mbs * MB / 1000.0}
        self.interface_bytes_per_ms = profile.interface_mbs * MB / 1000.0
        self.seek_k_ms = {op: self._solve_k(op) for op in (READ, WRITE)}
        self.buffer_bytes = int(profile.buffer_mb * MIB / self.scale)
        self.segment_bytes = max(self.buffer_bytes // READ_SEGMENTS, MIN_SEGMENT_BYTES)
        self.head = 0
        #: Write-behind data: sorted starts, and start -> end of each dirty extent (disjoint).
        self._dirty_starts: list[int] = []
        self._dirty: dict[int, int] = {}
        self.dirty_bytes = 0
        #: Read segments, least recently used first; the last one is the last read's.
        self._segments: list[_Segment] = []
        self._prefetching: _Segment | None = None

    def _solve_k(self, op: str) -> float:
        p = self.profile
        iops = p.rand_read_iops if op == READ else p.rand_write_iops
        mean_ms = 1000.0 / iops
        rest = p.track_seek_ms + p.revolution_ms / 2 + SPEC_RANDOM_BYTES / self.rate_bytes_per_ms[op]
        if mean_ms <= rest:
            raise ProfileError(
                f"{p.name}: {iops} random {op} IOPS is faster than rotation and track seek allow "
                f"({1000.0 / rest:.0f} IOPS at most); not a hard-disk profile"
            )
        return (mean_ms - rest) / MEAN_SQRT_DISTANCE

    # -- the mechanism ------------------------------------------------------------------------
    def seek_ms(self, fraction: float, op: str) -> float:
        """A seek over ``fraction`` (0–1) of the full stroke."""
        return self.profile.track_seek_ms + self.seek_k_ms[op] * min(1.0, fraction) ** 0.5

    def stroke_fraction(self, distance_bytes: int) -> float:
        """The share of the full stroke a move of ``distance_bytes`` on the device crosses."""
        return min(1.0, abs(distance_bytes) * self.scale / self.profile.capacity_bytes)

    def _rotation(self, choices: int = 1) -> Cost:
        """Rotational latency before a media access; with ``choices`` requests to pick from in
        rotational-position order, the expected nearest (no variance: a destage's own choice)."""
        rev = self.profile.revolution_ms
        if choices > 1:
            return Cost(rev / (choices + 1))
        if self._rng is not None:
            return Cost(self._rng.uniform(0.0, rev))
        return Cost(rev / 2, rev ** 2 / 12.0)

    def _position(self, offset: int, op: str, choices: int = 1, far: bool = False) -> Cost:
        """Bring the head to ``offset``: pass over a near forward gap, else seek and rotate.
        ``far``: the previous request was on another address space; a seek of mean length."""
        gap = offset - self.head
        if not far and 0 <= gap <= NEAR_BYTES:
            return Cost(gap / self.rate_bytes_per_ms[op])
        seek = (self.profile.track_seek_ms + self.seek_k_ms[op] * MEAN_SQRT_DISTANCE if far
                else self.seek_ms(self.stroke_fraction(gap), op))
        return Cost(seek).add(self._rotation(choices))

    def _media(self, op: str, offset: int, nbytes: int, choices: int = 1, far: bool = False) -> Cost:
        cost = self._position(offset, op, choices, far)
        cost.ms += nbytes / self.rate_bytes_per_ms[op]
        self.head = offset + nbytes
        return cost

    # -- the buffer ---------------------------------------------------------------------------
    @property
    def cached_bytes(self) -> int:
        return self.dirty_bytes + self.segment_bytes * len(self._segments)

    def _make_room(self, nbytes: int) -> Cost:
        """Free ``nbytes`` of the buffer: give up read segments, least recently used first, then
        destage write-behind data, as much as is needed."""
        cost = Cost()
        while self._segments and self.buffer_bytes - self.cached_bytes < nbytes:
            self._drop_segment(self._segments[0])
        while self._dirty and self.buffer_bytes - self.cached_bytes < nbytes:
            cost.add(self._destage_one(limit=nbytes - (self.buffer_bytes - self.cached_bytes)))
        return cost

    def _drop_segment(self, seg: _Segment) -> None:
        self._segments.remove(seg)
        if self._prefetching is seg:
            self._prefetching = None

    def _nearest_dirty(self) -> int:
        i = bisect.bisect_left(self._dirty_starts, self.head)
        candidates = self._dirty_starts[max(0, i - 1): i + 1]
        return min(candidates, key=lambda s: (abs(s - self.head), s))

    def _destage_one(self, limit: int | None = None) -> Cost:
        """Write the dirty extent nearest the head to the media (only its first ``limit`` bytes
        when that is all the room needed)."""
        start = self._nearest_dirty()
        end = self._dirty[start]
        choices = min(len(self._dirty_starts), REORDER_DEPTH)
        upto = end if limit is None else min(end, start + max(limit, 1))
        self._dirty_starts.remove(start)
        del self._dirty[start]
        if upto < end:
            self._dirty_starts.insert(bisect.bisect_left(self._dirty_starts, upto), upto)
            self._dirty[upto] = end
        self.dirty_bytes -= upto - start
        self._prefetching = None
        return self._media(WRITE, start, upto - start, choices=choices)

    def _add_dirty(self, start: int, end: int) -> None:
        """Merge ``[start, end)`` into the write-behind data."""
        i = bisect.bisect_left(self._dirty_starts, start)
        if i > 0 and self._dirty[self._dirty_starts[i - 1]] >= start:
            i -= 1
        while i < len(self._dirty_starts) and self._dirty_starts[i] <= end:
            s = self._dirty_starts.pop(i)
            e = self._dirty.pop(s)
            self.dirty_bytes -= e - s
            start, end = min(start, s), max(end, e)
        self._dirty_starts.insert(i, start)
        self._dirty[start] = end
        self.dirty_bytes += end - start

    def _in_dirty(self, offset: int, nbytes: int) -> bool:
        i = bisect.bisect_right(self._dirty_starts, offset) - 1
        return i >= 0 and self._dirty[self._dirty_starts[i]] >= offset + nbytes

    def _segment_at(self, offset: int) -> _Segment | None:
        for seg in reversed(self._segments):
            if seg.start <= offset < seg.end:
                return seg
        return None

    def _idle(self, idle_ms: float) -> None:
        """What the disk does while no request is waiting: read ahead into the last read's
        segment (if the head is still at its end), then destage write-behind data, each one
        only as far as the idle time allows."""
        seg = self._prefetching
        if seg is not None and self.head == seg.end and idle_ms > 0:
            room = self.segment_bytes - (seg.end - seg.read_to)
            ahead = int(min(max(room, 0), idle_ms * self.rate_bytes_per_ms[READ]))
            seg.end += ahead
            seg.start = max(seg.start, seg.end - self.segment_bytes)
            self.head = seg.end
            idle_ms -= ahead / self.rate_bytes_per_ms[READ]
        while self._dirty and idle_ms > 0:
            start = self._nearest_dirty()
            choices = min(len(self._dirty_starts), REORDER_DEPTH)
            if self._expected_ms(WRITE, start, self._dirty[start] - start, choices) > idle_ms:
                break
            idle_ms -= self._destage_one().ms

    def _expected_ms(self, op: str, offset: int, nbytes: int, choices: int = 1) -> float:
        """The mean time of a media access from the head, without making it."""
        gap = offset - self.head
        rev = self.profile.revolution_ms
        if 0 <= gap <= NEAR_BYTES:
            position = gap / self.rate_bytes_per_ms[op]
        else:
            position = self.seek_ms(self.stroke_fraction(gap), op) + (rev / (choices + 1) if choices > 1 else rev / 2)
        return position + nbytes / self.rate_bytes_per_ms[op]

    # -- requests ----------------------------------------------------------------------------
    def request(self, op: str, offset: int, nbytes: int, idle_ms: float = 0.0, far: bool = False) -> Cost:
        """Serve one request (``read``, ``write`` or ``flush``) that arrived after the disk sat
        idle ``idle_ms``; returns its time at the disk. ``far``: its predecessor was on another
        device (another address space: no locality with the head)."""
        self._idle(idle_ms)
        if op == FLUSH:
            cost = Cost()
            while self._dirty:
                cost.add(self._destage_one())
            return cost
        if op == WRITE:
            return self._write(offset, nbytes, far)
        return self._read(offset, nbytes, far)

    def _write(self, offset: int, nbytes: int, far: bool) -> Cost:
        for seg in [s for s in self._segments if s.start < offset + nbytes and offset < s.end]:
            self._drop_segment(seg)
        if nbytes > self.buffer_bytes:
            return self._media(WRITE, offset, nbytes, far=far)
        # The transfer over the interface overlaps the destaging that makes room for it.
        cost = self._make_room(nbytes)
        cost.ms = max(cost.ms, nbytes / self.interface_bytes_per_ms)
        self._add_dirty(offset, offset + nbytes)
        return cost

    def _read(self, offset: int, nbytes: int, far: bool) -> Cost:
        end = offset + nbytes
        if self._in_dirty(offset, nbytes):
            return Cost(nbytes / self.interface_bytes_per_ms)
        seg = None if far else self._segment_at(offset)
        if seg is not None:
            self._segments.remove(seg)
            self._segments.append(seg)
            hit = min(end, seg.end) - offset
            cost = Cost(hit / self.interface_bytes_per_ms)
            seg.read_to = max(seg.read_to, offset + hit)
            if hit < nbytes:  # the rest from the media, sequentially when the head is there
                cost.add(self._media(READ, seg.end, end - seg.end))
                seg.end = seg.read_to = end
                seg.start = max(seg.start, end - self.segment_bytes)
            self._prefetching = seg
            return cost
        cost = self._media(READ, offset, nbytes, far=far)
        cost.add(self._make_room(self.segment_bytes))
        if self.buffer_bytes - self.cached_bytes >= self.segment_bytes:
            seg = _Segment(max(offset, end - self.segment_bytes), end, end)
            self._segments.append(seg)
            self._prefetching = seg
        return cost

    def service_ms(self, op: str, offset: int, nbytes: int, idle_ms: float = 0.0) -> float:
        """:meth:`request`'s time alone (ms)."""
        return self.request(op, offset, nbytes, idle_ms).ms

    def stream_ms(self, ops: Sequence[str], offset: Sequence[int], nbytes: Sequence[int], idle_ms: Sequence[float],
                  new_stream: Sequence[bool] | None = None) -> tuple[list[float], list[float]]:
        """A whole request stream served in order from a cold disk with the head at 0, for the
        prediction (:mod:`biossd.host.models.devicemodels`): each request's expected time and its
        variance (ms, ms²). Build the model with ``seed=None`` for the expectation. ``ops``:
        ``read``/``write``/``flush`` per request; ``new_stream`` marks requests whose predecessor
        was on another device."""
        means, variances = [], []
        news = new_stream if new_stream is not None else [False] * len(ops)
        for op, x, n, idle, new in zip(ops, offset, nbytes, idle_ms, news):
            cost = self.request(op, int(x), int(n), float(idle), far=bool(new) and bool(means))
            means.append(cost.ms)
            variances.append(cost.var_ms2)
        return means, variances


def profiles_dir() -> Path:
    from biossd.core.paths import DEVICE_PROFILES_DIR

    return DEVICE_PROFILES_DIR


def load_profile(name_or_path: str) -> DiskProfile:
    """A profile by name (``study/devices/<name>.yaml``) or by path."""
    path = Path(name_or_path)
    if not path.suffix:
        path = profiles_dir() / f"{name_or_path}.yaml"
    if not path.is_file():
        known = sorted(p.stem for p in profiles_dir().glob("*.yaml"))
        raise ProfileError(f"no device profile {name_or_path!r}; known: {', '.join(known)}")
    return DiskProfile.load(path)
