"""A service-time model of a single-actuator hard disk, calibrated from a spec sheet.

The paper compared SSDs with three 7200/10000 rpm HDDs by their vendor specs (seed 000, Tables 3
and 4: sequential MB/s, random read/write IOPS). To run the study on a machine without an HDD,
biossd serves an emulated disk's requests after the time this model says the real disk would
take. A request of ``n`` bytes at byte offset ``x``, with the head left at ``h`` by the previous
request, costs

* **sequential** (``0 <= x - h <= near_bytes``): the platter turns under the head past the gap
  and the data: ``(x - h + n) / rate``, less the time the disk sat idle before the request (at
  most :data:`LOOKAHEAD_SEGMENTS`' share of its buffer at media rate). A real disk does not stop
  the media while the host turns round between two sequential requests: it reads ahead into its
  buffer, and a write of the stream lands in its write cache while the previous one is written;
  so a sequential stream runs at media rate whatever the host's turnaround, which, here,
  includes FUSE's round trip for every request (without this credit a plain
  sequential read ran at 0.74 of the spec);
* **random** otherwise: ``seek(f) + rotational latency + n / rate``, where
  ``seek(f) = track_seek + k * sqrt(f)`` (the usual square-root profile of a voice-coil actuator)
  for a seek over a fraction ``f`` of the full stroke, and the rotational latency is uniform in
  ``[0, one revolution)``.

The spec's random IOPS are measured over the whole disk, but an emulated disk is small and a
program's files are smaller still. So ``f`` is not the distance within the emulated device: it
is drawn as the distance between two uniform points on the full stroke (``|U - V|``), from a
seeded generator. Then any random workload sees the spec's IOPS, whatever its footprint. ``k`` is
solved so that the mean cost of a random 4 KiB request equals the spec's ``1 / random IOPS``
(E[sqrt|U - V|] = 8/15), separately for reads and writes. The price is a known deviation: a
real disk seeks faster over a small region (short stroking), and this model does not.

Requests are served one at a time, in arrival order: one actuator and no command queueing (NCQ),
so IOPS at queue depth 32 equals IOPS at depth 1 (a real disk gains some from reordering). There
is no write cache: every write costs what the spec's sustained random-write IOPS implies.
"""

from __future__ import annotations

import random
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from biossd.core import yamlfile
from biossd.core.errors import BiossdError

MS_PER_MINUTE = 60_000.0
MB = 1_000_000  # vendor megabytes (MB/s in the spec sheets)
SPEC_RANDOM_BYTES = 4096
#: E[sqrt(|U - V|)] for independent uniform U, V on [0, 1].
MEAN_SQRT_DISTANCE = 8.0 / 15.0
#: Var(sqrt(|U - V|)) = E|U - V| - (8/15)^2 = 1/3 - 64/225.
VAR_SQRT_DISTANCE = 1.0 / 3.0 - MEAN_SQRT_DISTANCE ** 2
#: A forward gap up to this long is passed over at media speed rather than sought (about a
#: track of a 1 TB 7200 rpm disk).
NEAR_BYTES = 1 << 20
#: Drives split their cache into about this many segments; a sequential stream's look-ahead (or
#: its write-cache run) fills one, so an idle disk prefetches at most ``buffer / 16`` bytes.
LOOKAHEAD_SEGMENTS = 16
PROFILE_FIELDS = ("name", "kind", "rpm", "capacity_gb", "buffer_mb", "seq_read_mbs", "seq_write_mbs",
                  "rand_read_iops", "rand_write_iops", "track_seek_ms", "source")


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

    @classmethod
    def load(cls, path: Path) -> "DiskProfile":
        path = Path(path)
        data = yamlfile.read_mapping(path, "a device profile", ProfileError)
        missing = [f for f in PROFILE_FIELDS if f not in data]
        unknown = [f for f in data if f not in PROFILE_FIELDS]
        if missing or unknown:
            raise ProfileError(f"{path}: missing fields {missing}, unknown fields {unknown}")
        numbers = {f: data[f] for f in PROFILE_FIELDS if f not in ("name", "kind", "source")}
        bad = [f for f, v in numbers.items() if not isinstance(v, (int, float)) or v <= 0]
        if bad:
            raise ProfileError(f"{path}: fields {bad} must be positive numbers")
        return cls(**{**data, **{f: float(v) for f, v in numbers.items()}})


class DiskModel:
    """Service times of one disk; not thread-safe (the server serialises requests, as the single
    actuator does). ``near_bytes``: a forward gap up to this long is passed over, not sought."""

    def __init__(self, profile: DiskProfile, seed: int = 0, near_bytes: int = NEAR_BYTES) -> None:
        self.profile = profile
        self.near_bytes = near_bytes
        self.head = 0
        self._rng = random.Random(seed)
        self.rate_bytes_per_ms = {"read": profile.seq_read_mbs * MB / 1000.0,
                                  "write": profile.seq_write_mbs * MB / 1000.0}
        self.seek_k_ms = {op: self._solve_k(op) for op in ("read", "write")}
        self.lookahead_bytes = profile.buffer_mb * MB / LOOKAHEAD_SEGMENTS

    def _solve_k(self, op: str) -> float:
        p = self.profile
        iops = p.rand_read_iops if op == "read" else p.rand_write_iops
        mean_ms = 1000.0 / iops
        rest = p.track_seek_ms + p.revolution_ms / 2 + SPEC_RANDOM_BYTES / self.rate_bytes_per_ms[op]
        if mean_ms <= rest:
            raise ProfileError(
                f"{p.name}: {iops} random {op} IOPS is faster than rotation and track seek allow "
                f"({1000.0 / rest:.0f} IOPS at most); not a hard-disk profile"
            )
        return (mean_ms - rest) / MEAN_SQRT_DISTANCE

    def seek_ms(self, fraction: float, op: str) -> float:
        """A seek over ``fraction`` (0–1) of the full stroke."""
        return self.profile.track_seek_ms + self.seek_k_ms[op] * fraction ** 0.5

    def service_ms(self, op: str, offset: int, nbytes: int, idle_ms: float = 0.0) -> float:
        """Time to serve one request, and move the head to its end. ``idle_ms``: how long the
        disk sat idle before the request arrived (a sequential request's look-ahead credit)."""
        rate = self.rate_bytes_per_ms[op]
        gap = offset - self.head
        if 0 <= gap <= self.near_bytes:
            cost = sequential_ms(gap, nbytes, rate, idle_ms, self.lookahead_bytes)
        else:
            fraction = abs(self._rng.random() - self._rng.random())
            cost = (self.seek_ms(fraction, op) + self._rng.uniform(0.0, self.profile.revolution_ms)
                    + nbytes / rate)
        self.head = offset + nbytes
        return cost

    def stream_ms(self, is_write: np.ndarray, offset: np.ndarray, nbytes: np.ndarray, idle_ms: np.ndarray,
                  new_stream: np.ndarray | None = None) -> tuple[np.ndarray, np.ndarray]:
        """The same costs for a whole request stream served in order from the head at 0 (for
        prediction, :mod:`biossd.analysis.predict`), as each request's *expected* cost and its
        variance (ms, ms²): a random request's seek and rotation are random (:meth:`service_ms`
        draws them), so its cost is their mean, ``track_seek + k E[sqrt f] + revolution / 2 +
        n / rate``, with variance ``k² Var(sqrt f) + revolution² / 12``; a sequential one is
        certain. ``new_stream`` marks requests whose predecessor was on another device (a
        different address space: never sequential)."""
        is_write = np.asarray(is_write, dtype=bool)
        offset = np.asarray(offset, dtype=np.int64)
        nbytes = np.asarray(nbytes, dtype=np.int64)
        head = np.concatenate(([0], offset[:-1] + nbytes[:-1]))
        gap = offset - head
        rate = np.where(is_write, self.rate_bytes_per_ms["write"], self.rate_bytes_per_ms["read"])
        sequential = (gap >= 0) & (gap <= self.near_bytes)
        if new_stream is not None:
            sequential &= ~np.asarray(new_stream, dtype=bool)
        k = np.where(is_write, self.seek_k_ms["write"], self.seek_k_ms["read"])
        revolution = self.profile.revolution_ms
        random_mean = self.profile.track_seek_ms + k * MEAN_SQRT_DISTANCE + revolution / 2 + nbytes / rate
        mean = np.where(sequential, sequential_ms(gap, nbytes, rate, idle_ms, self.lookahead_bytes), random_mean)
        var = np.where(sequential, 0.0, k ** 2 * VAR_SQRT_DISTANCE + revolution ** 2 / 12.0)
        return mean, var


def sequential_ms(gap, nbytes, rate_bytes_per_ms, idle_ms, lookahead_bytes):
    """A sequential request's cost: the platter turns past the ``gap`` and the data at media
    rate, less the look-ahead the disk did while idle (at most ``lookahead_bytes``). Scalars or
    NumPy arrays."""
    ahead_ms = np.minimum(np.maximum(idle_ms, 0.0), lookahead_bytes / rate_bytes_per_ms)
    return np.maximum(0.0, (gap + nbytes) / rate_bytes_per_ms - ahead_ms)


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
