"""Cloud block volumes, instance-store NVMe and the instance in front of them, as data and one
model: today's storage asked the paper's question (Lee, Min and Yoon 2015, §1: would a faster
device make this tool faster?) of a recorded request stream.

The data (``study/reference/cloud_storage.csv``, ``cloud_instances.csv``) hold each figure as its
provider publishes it, with the source, the date it was published (a page's last change, a
package's release) and the date it was read; a figure the provider does not publish is empty, and
what rests on it says "unknown".

The model of a volume (:class:`CloudTarget`) serves requests in issue order on a clock that moves
by the idle gaps the trace recorded and by each request's own time, which is the longest of:

* **latency** over the queue depth the request met (requests in flight overlap their waits): the
  provider's stated per-request latency, a range (``latency_low_ms`` to ``latency_high_ms``; its
  middle for the estimate, its ends for the interval; an unstated end is 0 ms below, or the
  stated one);
* **I/O operations** over the volume's IOPS: a request counts ``ceil(bytes / io_unit)`` I/Os, and
  one that continues the previous request counts ``bytes / io_unit`` (the provider merges
  sequential I/O up to its unit: AWS's 256 KiB for SSD-backed volumes, 1 MiB for HDD-backed ones,
  ``ebs-io-characteristics``); a volume whose unit is not stated counts one I/O a request;
* **bytes** over the volume's throughput;
* the same two over the **instance's** limits to its network storage (:class:`Instance`), a second
  bucket in front of every volume it attaches.

Rates come from token buckets (:class:`Bucket`): a volume with burst credits (gp2's I/O
credits, st1's and sc1's throughput credits) runs at its burst rate while its bucket holds credits
and at its baseline when empty, the bucket refilling at the baseline; an instance runs at its
maximum for ``burst_minutes_per_day`` a day and at its baseline after, the budget refilling over 24
hours. Every bucket starts full (a volume's at creation, an instance's "at least once every 24
hours"). Instance-store NVMe is a device of the instance: no network, no bucket, its published
random IOPS per direction (at saturation) and nothing else known.
"""

from __future__ import annotations

import csv
import math
import threading
from dataclasses import dataclass, field, replace

import numpy as np

from biossd.core.errors import BiossdError
from biossd.core.paths import REFERENCE_DIR
from biossd.host.models import CLOUD_PREFIX  # noqa: F401 (named here too, beside the model)
from biossd.host.requeststream import Service, Stream

STORAGE = REFERENCE_DIR / "cloud_storage.csv"
INSTANCES = REFERENCE_DIR / "cloud_instances.csv"
KIB, MIB, MB = 1024, 1 << 20, 1_000_000
SECONDS_PER_DAY = 86_400.0
#: After an instance in a target's spec (``aws-gp3-baseline@m6id.large+spent``): its daily burst
#: is used up, so it starts at its baseline, as an instance does after its first half hour of I/O
#: at its maximum in a day ("at least once every 24 hours", ``ebs-optimized``).
SPENT = "spent"
#: What one request takes of an instance's IOPS limit. AWS publishes that limit at 16 KiB I/O
#: (``ebs-optimized``: "Baseline IOPS (16 KiB I/O)") and the bandwidth at 128 KiB I/O: a larger
#: request counts one operation and meets the bandwidth. Counted in 16 KiB units instead,
#: m6id.large's 3,600 IOPS would cap 128 KiB reads at 59 MB/s, below the 81.25 MB/s published.
INSTANCE_OPERATIONS_PER_REQUEST = 1.0
#: Fields every row must give with its figures: where each came from and when it was read.
PROVENANCE = ("source", "retrieved")


class CloudModelError(BiossdError, ValueError):
    """A row that cannot make a model; the message names the file, row and field."""


@dataclass
class Bucket:
    """A rate with an optional burst: ``burst`` per second while ``tokens`` last, ``base`` per
    second when empty; ``tokens`` refill at ``refill`` per second up to ``capacity``. Bursting
    drains the bucket by what it serves above ``base`` (for a volume, whose refill is its
    baseline, that is AWS's "spent at the rate of IOPS … used above baseline"). No burst: ``base``."""

    base: float
    burst: float | None = None
    capacity: float = 0.0
    refill: float = 0.0
    tokens: float = 0.0
    #: A volume's credits count everything served (refilled at its baseline: gp2, st1, sc1); an
    #: instance's budget counts only what it served above its baseline (refilled over the day).
    above_base_only: bool = False

    def seconds(self, amount: float) -> float:
        """The time ``amount`` takes now (burst while the bucket holds what the burst spends)."""
        if amount <= 0:
            return 0.0
        if self.burst is None or self.burst <= self.base or self.tokens <= 0:
            return amount / self.base
        at_burst = amount / self.burst
        spend = amount - self.base * at_burst
        if spend <= self.tokens:
            return at_burst
        # The bucket empties part-way: the rest at the baseline.
        done = self.tokens / (1 - self.base / self.burst)
        return done / self.burst + (amount - done) / self.base

    def spend(self, amount: float, elapsed_s: float) -> None:
        """``amount`` served over ``elapsed_s`` (its own time and the idle time before it)."""
        if self.burst is None:
            return
        charged = max(0.0, amount - self.base * elapsed_s) if self.above_base_only else amount
        self.tokens = min(self.capacity, max(0.0, self.tokens + self.refill * elapsed_s - charged))


@dataclass(frozen=True)
class Volume:
    """A row of ``cloud_storage.csv``."""

    name: str
    provider: str
    backing: str
    size_gib: float
    read_iops: float
    write_iops: float
    throughput_bps: float | None
    io_unit_bytes: float | None
    latency_low_ms: float | None
    latency_high_ms: float | None
    burst_iops: float | None
    burst_throughput_bps: float | None
    burst_bucket: float | None
    burst_refill_per_s: float | None
    source: str
    published: str
    retrieved: str
    note: str

    @property
    def unknown(self) -> list[str]:
        """What the provider does not publish that the model would use."""
        out = []
        if self.throughput_bps is None:
            out.append("throughput")
        if self.latency_low_ms is None and self.latency_high_ms is None:
            out.append("latency")
        elif self.latency_low_ms is None:
            out.append("latency's lower end")
        if self.io_unit_bytes is None:
            out.append("I/O-size accounting")
        if not self.published:
            out.append("publication date")
        return out


@dataclass(frozen=True)
class Instance:
    """A row of ``cloud_instances.csv``: the instance's limits to its network storage."""

    name: str
    provider: str
    vcpus: int
    baseline_iops: float
    burst_iops: float
    baseline_bps: float
    burst_bps: float
    burst_minutes_per_day: float
    local_nvme: str
    source: str
    published: str
    retrieved: str
    note: str


def _rows(path) -> dict[str, dict[str, str]]:
    with path.open(newline="") as f:
        reader = csv.DictReader(f)
        key = reader.fieldnames[0] if reader.fieldnames else ""
        return {row[key]: row for row in reader}


def _num(row: dict[str, str], name: str, where: str, required: bool = False) -> float | None:
    text = (row.get(name) or "").strip()
    if not text:
        if required:
            raise CloudModelError(f"{where}: field '{name}' is empty; the model needs it")
        return None
    try:
        value = float(text)
    except ValueError:
        raise CloudModelError(f"{where}: field '{name}' is {text!r}, not a number") from None
    if not math.isfinite(value) or value < 0:
        raise CloudModelError(f"{where}: field '{name}' is {text!r}: give a finite number >= 0")
    return value


def _provenance(row: dict[str, str], where: str) -> None:
    for name in PROVENANCE:
        if not (row.get(name) or "").strip():
            raise CloudModelError(f"{where}: field '{name}' is empty: every figure needs its source and the date it was read")


def volumes() -> dict[str, Volume]:
    """Every volume of ``cloud_storage.csv`` by name."""
    out = {}
    for name, row in _rows(STORAGE).items():
        where = f"{STORAGE.name}, row {name}"
        _provenance(row, where)
        read_iops = _num(row, "iops", where, required=True)
        mibs = _num(row, "throughput_mibs", where)
        burst_mibs = _num(row, "burst_throughput_mibs", where)
        unit_kib = _num(row, "io_unit_kib", where)
        out[name] = Volume(
            name, row["provider"], row["backing"], _num(row, "size_gib", where, required=True), read_iops,
            _num(row, "write_iops", where) or read_iops, mibs * MIB if mibs else None,
            unit_kib * KIB if unit_kib else None, _num(row, "latency_low_ms", where), _num(row, "latency_high_ms", where),
            _num(row, "burst_iops", where), burst_mibs * MIB if burst_mibs else None, _num(row, "burst_bucket", where),
            _num(row, "burst_refill_per_s", where), row["source"], row.get("published") or "", row["retrieved"],
            row.get("note") or "")
    return out


def instances() -> dict[str, Instance]:
    """Every instance of ``cloud_instances.csv`` by name."""
    out = {}
    for name, row in _rows(INSTANCES).items():
        where = f"{INSTANCES.name}, row {name}"
        _provenance(row, where)
        out[name] = Instance(
            name, row["provider"], int(_num(row, "vcpus", where, required=True)),
            _num(row, "baseline_iops", where, required=True), _num(row, "burst_iops", where, required=True),
            _num(row, "baseline_throughput_mbs", where, required=True) * MB,
            _num(row, "burst_throughput_mbs", where, required=True) * MB,
            _num(row, "burst_minutes_per_day", where) or 0.0, row.get("local_nvme") or "", row["source"],
            row.get("published") or "", row["retrieved"], row.get("note") or "")
    return out


def company(provider: str) -> str:
    """Whose service a row's ``provider`` names (``AWS EBS`` and ``AWS EC2`` are both AWS's)."""
    return provider.split()[0] if provider.strip() else ""


def storage_behind(instance: str | None = None) -> list[str]:
    """The storage one could rent, as target specs: every volume alone; or behind ``instance``
    its provider's network volumes and its own instance-store drive (another instance's is not on
    offer), and every other provider's volume alone (no instance of theirs in front of it)."""
    if instance is None:
        return list(volumes())
    known = instances()
    if instance not in known:
        raise CloudModelError(f"no instance {instance!r} in {INSTANCES.name}; known: {', '.join(known)}")
    on = known[instance]
    out = []
    for name, v in volumes().items():
        if company(v.provider) != company(on.provider):
            out.append(name)
        elif v.backing != "NVMe" or name == on.local_nvme:
            out.append(f"{name}@{instance}")
    return out


def operations(nbytes: float, unit_bytes: float | None, sequential: bool) -> float:
    """The I/O operations a request counts for: ``ceil(bytes / unit)``, or ``bytes / unit`` when it
    continues the previous request (merged up to the unit); one without a unit."""
    if not unit_bytes:
        return 1.0
    return nbytes / unit_bytes if sequential else float(max(1, math.ceil(nbytes / unit_bytes)))


def _volume_buckets(v: Volume) -> tuple[Bucket, Bucket | None]:
    """The volume's IOPS and throughput buckets, full (a new volume's)."""
    iops_capacity = v.burst_bucket if v.burst_iops else 0.0
    iops = Bucket(v.read_iops, v.burst_iops, iops_capacity or 0.0, v.burst_refill_per_s or 0.0, iops_capacity or 0.0)
    if v.throughput_bps is None:
        return iops, None
    if v.burst_throughput_bps:
        capacity = (v.burst_bucket or 0.0) * MIB
        return iops, Bucket(v.throughput_bps, v.burst_throughput_bps, capacity, (v.burst_refill_per_s or 0.0) * MIB, capacity)
    return iops, Bucket(v.throughput_bps)


def _instance_buckets(i: Instance, spent: bool = False) -> tuple[Bucket, Bucket]:
    """The instance's IOPS and bandwidth buckets: its maximum for its daily minutes, full (or
    empty: ``spent``, :data:`SPENT`)."""
    burst_s = i.burst_minutes_per_day * 60

    def bucket(base: float, burst: float) -> Bucket:
        capacity = burst_s * max(0.0, burst - base)
        return Bucket(base, burst, capacity, capacity / SECONDS_PER_DAY, 0.0 if spent else capacity, above_base_only=True)

    return bucket(i.baseline_iops, i.burst_iops), bucket(i.baseline_bps, i.burst_bps)


def latency_ms(v: Volume, which: str = "mean") -> float:
    """The volume's stated per-request latency: the middle of its range, or its low or high end
    (an unstated low end is 0 ms; an unstated high end is the low one)."""
    low = v.latency_low_ms or 0.0
    high = v.latency_high_ms if v.latency_high_ms is not None else low
    return {"mean": (low + high) / 2, "low": low, "high": high}[which]


class Limits:
    """A volume's rate limits and its instance's, each a :class:`Bucket` (full at the start),
    and what one request asks of each: what :class:`CloudTarget` walks a stream through and
    :class:`CloudDevice` serves on the host's clock."""

    def __init__(self, v: Volume, instance: Instance | None, instance_spent: bool = False) -> None:
        self.volume = v
        self.iops, self.throughput = _volume_buckets(v)
        self.instance = _instance_buckets(instance, instance_spent) if instance and v.backing != "NVMe" else None

    @property
    def buckets(self) -> list[Bucket]:
        return [b for b in (self.iops, self.throughput, *(self.instance or ())) if b is not None]

    def demands(self, is_write: bool, nbytes: float, sequential: bool) -> list[tuple[Bucket, float]]:
        """Each limit with what the request takes of it: I/Os in the provider's units, bytes, and
        the instance's I/Os (:data:`INSTANCE_OPERATIONS_PER_REQUEST`) and bytes."""
        v = self.volume
        if self.iops.burst is None:  # a device without credits has a rate per direction (instance-store NVMe)
            self.iops.base = v.write_iops if is_write else v.read_iops
        out = [(self.iops, operations(nbytes, v.io_unit_bytes, sequential))]
        if self.throughput is not None:
            out.append((self.throughput, nbytes))
        if self.instance:
            out += [(self.instance[0], INSTANCE_OPERATIONS_PER_REQUEST), (self.instance[1], nbytes)]
        return out


@dataclass(frozen=True)
class CloudTarget:
    """A volume (and the instance it is attached to) serving a request stream
    (:class:`biossd.host.models.devicemodels.Stream`)."""

    name: str
    volume: Volume
    instance: Instance | None = None
    kind: str = "cloud"
    source: str = field(default="")
    #: The instance's daily burst already spent (``…@INSTANCE+spent``): it starts at its baseline.
    instance_spent: bool = False

    def serve(self, stream: Stream) -> Service:
        mean = self._walk(stream, latency_ms(self.volume))
        return Service(mean, np.zeros_like(mean), self._walk(stream, latency_ms(self.volume, "low")),
                       self._walk(stream, latency_ms(self.volume, "high")))

    def _walk(self, stream: Stream, latency: float) -> np.ndarray:
        """Each request's time (ms) at one latency (ms), the buckets carried along the stream."""
        limits = Limits(self.volume, self.instance, self.instance_spent)
        flushes, sequential = stream.flushes, stream.sequential
        out = np.zeros(len(stream))
        for k in range(len(stream)):
            if flushes[k]:
                continue
            for bucket in limits.buckets:  # credits earned while the device waited
                bucket.spend(0.0, float(stream.idle_ms[k]) / 1000.0)
            demands = limits.demands(bool(stream.is_write[k]), float(stream.nbytes[k]), bool(sequential[k]))
            t = max([latency / 1000.0 / max(1, int(stream.depth[k]))] + [b.seconds(amount) for b, amount in demands])
            for bucket, amount in demands:
                bucket.spend(amount, t)
            out[k] = t * 1000.0
        return out

    def replay(self, stream: Stream, after: np.ndarray, think_s: np.ndarray
               ) -> dict[str, tuple[np.ndarray, np.ndarray]]:
        """The stream on the volume's own clock, as the emulated volume serves it
        (:class:`CloudDevice`: latencies overlap, each limit a queue of its own): a request is
        issued ``think_s`` after the request it followed on the device measured (``after``,
        :func:`biossd.host.requeststream.followed`) completes here, and not before the one issued
        before it. Requests issued together overlap their latencies, where serving them in issue
        order with ``latency / depth`` each charges a burst of n requests ``1 + 1/2 + … + 1/n``
        latencies. Per latency (``mean``, ``low``, ``high``): each request's start and finish (s)."""
        return {which: self._timeline(stream, after, think_s, which) for which in ("mean", "low", "high")}

    def _timeline(self, stream: Stream, after: np.ndarray, think_s: np.ndarray, latency: str
                  ) -> tuple[np.ndarray, np.ndarray]:
        device = CloudDevice(self, latency)
        flushes = stream.flushes
        start, finish = np.zeros(len(stream)), np.zeros(len(stream))
        now = 0.0
        for k in range(len(stream)):
            j = int(after[k])
            now = max(now, float(think_s[k]) + (finish[j] if j >= 0 else 0.0))
            start[k] = now
            finish[k] = now if flushes[k] else device.finish_at(bool(stream.is_write[k]), int(stream.offset[k]),
                                                                 int(stream.nbytes[k]), now)
        return start, finish

    def scaled(self, scale: float) -> "CloudTarget":
        """The target as a study scaled by D sees it: its inputs are D times smaller, so its burst
        credits (a volume's bucket, an instance's daily minutes) are D times smaller too; rates and
        latency stay (they are per second and per request, not per byte held)."""
        if scale == 1:
            return self
        volume = replace(self.volume, burst_bucket=self.volume.burst_bucket / scale if self.volume.burst_bucket else None)
        instance = (replace(self.instance, burst_minutes_per_day=self.instance.burst_minutes_per_day / scale)
                    if self.instance else None)
        return replace(self, volume=volume, instance=instance, source=f"{self.source}; burst credits / D = {scale:g}")


def target(spec: str) -> CloudTarget:
    """``<volume>``, ``<volume>@<instance>`` or ``<volume>@<instance>+spent`` (names of the two
    data files; :data:`SPENT`: the instance has used its daily burst) as a target."""
    name, _, on = spec.partition("@")
    on, plus, state = on.partition("+")
    vols, insts = volumes(), instances()
    if name not in vols:
        raise CloudModelError(f"no volume {name!r} in {STORAGE.name}; known: {', '.join(vols)}")
    if plus and (state != SPENT or not on):
        raise CloudModelError(f"{spec!r}: after an instance, only '+{SPENT}' may follow (its daily burst used up)")
    if on and on not in insts:
        raise CloudModelError(f"no instance {on!r} in {INSTANCES.name}; known: {', '.join(insts)}")
    volume, instance = vols[name], insts.get(on) if on else None
    unknown = volume.unknown
    source = (f"{volume.source} (published {volume.published or 'unknown'}, read {volume.retrieved})"
              + (f"; instance {instance.name}: {instance.source}" if instance else "")
              + ("; the instance's daily burst spent" if plus else "")
              + (f"; unknown: {', '.join(unknown)}" if unknown else ""))
    return CloudTarget(spec, volume, instance, kind=f"cloud {volume.backing}", source=source, instance_spent=bool(plus))


def sequential_mbs(spec: str) -> float:
    """The sustained sequential rate (MB/s, either direction) of ``spec`` (as :func:`target`):
    the volume's baseline throughput, under its instance's baseline bandwidth where it has one —
    what a run's Butil divides its bytes by on an emulated cloud class, as a characterized
    device's sequential rate is on a real one. NaN where neither is published."""
    t = target(spec)
    rates = [r for r in (t.volume.throughput_bps, t.instance.baseline_bps if t.instance else None) if r]
    return min(rates) / MB if rates else float("nan")


class CloudDevice:
    """The model on the host's clock, for the emulated disk's server (:mod:`biossd.host.hdd.server`):
    requests arrive from several threads at once, and each finishes at the later of its arrival
    plus the volume's latency and the time the rate limits let it through. Each limit (the
    volume's IOPS and throughput, the instance's) is a queue of its own with its bucket: a request
    starts on it when the one before has passed, and takes what :class:`Bucket` says. At depth 1
    a request waits its latency; at depth q, q latencies overlap until a limit binds — the
    prediction's ``max(latency / q, I/Os / IOPS, bytes / throughput)`` in steady state."""

    def __init__(self, target: CloudTarget, latency: str = "mean") -> None:
        self.latency_s = latency_ms(target.volume, latency) / 1000.0
        self.limits = Limits(target.volume, target.instance, target.instance_spent)
        self._lock = threading.Lock()
        self._next_offset: int | None = None
        self._free_at: dict[int, float] = {}

    def finish_at(self, is_write: bool, offset: int, nbytes: int, arrived_s: float) -> float:
        """When a request that arrived at ``arrived_s`` (the host's monotonic clock) is done."""
        with self._lock:
            sequential = offset == self._next_offset
            self._next_offset = offset + nbytes
            done = arrived_s + self.latency_s
            for bucket, amount in self.limits.demands(is_write, nbytes, sequential):
                free = self._free_at.get(id(bucket), arrived_s)
                start = max(arrived_s, free)
                bucket.spend(0.0, start - free)  # credits earned while this limit was idle
                took = bucket.seconds(amount)
                bucket.spend(amount, took)
                self._free_at[id(bucket)] = start + took
                done = max(done, start + took)
            return done

