"""Device models as data, for predicting a run's runtime on a device it was not measured on
(:mod:`biossd.analysis.predict`).

A *target* serves a recorded request stream (:class:`Stream`) and says how long the device
would be busy with each request. Two kinds:

* :class:`HddTarget` — a hard disk: the emulator's seek/rotation/transfer model of a spec sheet
  (:class:`biossd.host.models.diskmodel.DiskModel`, one source of truth with the emulated HDD). Requests
  are served one at a time in issue order (one actuator, no NCQ), whatever the queue depth.
* :class:`FlashTarget` — an SSD or NVMe drive, or any device known only by a fio record: a
  request that continues the previous one on the same device moves at the sequential rate of
  its direction; any other costs ``max(n / rate, 1 / IOPS(q))``, where ``IOPS(q) = min(IOPS_32,
  q · IOPS_1)`` at the queue depth ``q`` the request met (the device's parallelism grows with the
  depth until it saturates at its depth-32 figure).

Where targets come from (:func:`load_target`):

* ``paper:<name>`` (or just the name) — a row of the paper's spec tables,
  ``study/reference/paper_devices.csv`` (Lee, Min and Yoon 2015, Tables 3 and 4): its six SSDs and three HDDs.
  An HDD row uses its profile under ``study/devices/`` (which adds the track-to-track seek the
  paper does not give). The paper's SSD IOPS are the vendors' figures, quoted at queue depth 32;
  their depth-1 IOPS are unknown, so the model takes the geometric middle of what is possible,
  ``IOPS_1 = IOPS_32 / sqrt(32)`` (a request at depth 1 is at most 32 times slower than the
  saturated share, and no faster), and the prediction's interval spans both ends.
* a ``biossd device characterize`` record (JSON): its measured sequential MB/s and 4 KiB IOPS at
  depths 1 and 32 make a :class:`FlashTarget`; a record of an emulated HDD is that HDD's profile.
* ``cloud:<volume>[@<instance>]`` — a cloud block volume or instance-store NVMe of
  ``study/reference/cloud_storage.csv``, behind an instance of ``cloud_instances.csv``
  (:mod:`biossd.host.models.cloudmodel`: latency, I/O-size accounting, burst buckets, the instance's limits).
* ``drive:<name>`` (or just the name) — a drive one could buy, ``study/reference/drives.csv``
  (a PCIe 4.0 NVMe SSD), as a :class:`FlashTarget` of its data sheet.
* a device profile (YAML: ``study/devices/<name>.yaml`` or a user's file): ``kind: HDD`` needs the
  fields of :data:`biossd.host.models.diskmodel.PROFILE_FIELDS`; ``kind: SSD`` or ``NVMe`` needs
  :data:`FLASH_FIELDS` (and may give :data:`FLASH_QD1_FIELDS`).

A file missing a field the model needs is refused with the field's name.
"""

from __future__ import annotations

import csv
import math
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from biossd.core import yamlfile
from biossd.core.errors import BiossdError
from biossd.core.paths import REFERENCE_DIR
from biossd.host.models import cloudmodel, diskmodel
from biossd.host.requeststream import Service, Stream  # noqa: F401 (part of this module's API)

PAPER_DEVICES = REFERENCE_DIR / "paper_devices.csv"
#: Drives a user could buy (an NVMe SSD), by their published limits, sources and dates; cloud
#: volumes are :mod:`biossd.host.models.cloudmodel`'s.
DRIVES = REFERENCE_DIR / "drives.csv"
#: Queue depth at which vendors quote an SSD's random IOPS, and the deeper of the two depths
#: ``biossd device characterize`` measures.
SATURATED_DEPTH = 32
#: What a flash model needs: sequential MB/s and random 4 KiB IOPS at :data:`SATURATED_DEPTH`.
FLASH_FIELDS = ("seq_read_mbs", "seq_write_mbs", "read_iops_qd32", "write_iops_qd32")
#: What it may also have: random 4 KiB IOPS at depth 1 (else bounded, see the module's text).
FLASH_QD1_FIELDS = ("read_iops_qd1", "write_iops_qd1")
FLASH_KINDS = ("SSD", "NVMe")


class DeviceModelError(BiossdError, ValueError):
    """A target that cannot be made; the message names the file and field."""


@dataclass(frozen=True)
class HddTarget:
    name: str
    profile: diskmodel.DiskProfile
    source: str
    kind: str = "HDD"
    #: The disk scaled as a study scales its machine (:mod:`biossd.host.models.diskmodel`; 1: as built).
    scale: float = 1.0

    def serve(self, stream: Stream) -> Service:
        model = diskmodel.DiskModel(self.profile, seed=None, scale=self.scale)
        ops = np.where(stream.flushes, diskmodel.FLUSH, np.where(stream.is_write, diskmodel.WRITE, diskmodel.READ)).tolist()
        mean, var = model.stream_ms(ops, stream.offset.tolist(), stream.nbytes.tolist(), stream.idle_ms.tolist(),
                                    stream.new_stream.tolist())
        mean, var = np.asarray(mean, float), np.asarray(var, float)
        return Service(mean, var, mean, mean)

    def scaled(self, scale: float) -> "HddTarget":
        """This disk scaled by a study's divisor D."""
        return HddTarget(self.name, self.profile, self.source, self.kind, float(scale))


@dataclass(frozen=True)
class FlashTarget:
    name: str
    seq_read_mbs: float
    seq_write_mbs: float
    read_iops_qd32: float
    write_iops_qd32: float
    read_iops_qd1: float | None
    write_iops_qd1: float | None
    source: str
    kind: str = "SSD"

    def serve(self, stream: Stream) -> Service:
        rate = np.where(stream.is_write, self.seq_write_mbs, self.seq_read_mbs) * diskmodel.MB / 1000.0
        transfer = stream.nbytes / rate
        iops32 = np.where(stream.is_write, self.write_iops_qd32, self.read_iops_qd32)
        depth = np.clip(stream.depth, 1, SATURATED_DEPTH)
        seq = stream.sequential

        def cost(iops1: np.ndarray) -> np.ndarray:
            iops = np.minimum(iops32, iops1 * depth)
            return np.where(stream.flushes, 0.0, np.where(seq, transfer, np.maximum(transfer, 1000.0 / iops)))

        known = self.read_iops_qd1 is not None and self.write_iops_qd1 is not None
        if known:
            mean = cost(np.where(stream.is_write, self.write_iops_qd1, self.read_iops_qd1))
            return Service(mean, np.zeros_like(mean), mean, mean)
        fastest, slowest = iops32, iops32 / SATURATED_DEPTH
        mean = cost(np.sqrt(fastest * slowest))
        return Service(mean, np.zeros_like(mean), cost(fastest), cost(slowest))


Target = HddTarget | FlashTarget  # and biossd.host.models.cloudmodel.CloudTarget ("cloud:<volume>[@<instance>]")


def _number(value: Any, where: str, field: str) -> float:
    try:
        number = float(value)
    except (TypeError, ValueError):
        number = math.nan
    if not number > 0:
        raise DeviceModelError(f"{where}: field {field!r} must be a positive number, got {value!r}")
    return number


def flash_target(name: str, fields: dict[str, Any], where: str, source: str, kind: str = "SSD") -> FlashTarget:
    """A :class:`FlashTarget` from :data:`FLASH_FIELDS` (and optionally :data:`FLASH_QD1_FIELDS`)."""
    missing = [f for f in FLASH_FIELDS if fields.get(f) in (None, "")]
    if missing:
        raise DeviceModelError(f"{where}: missing field {missing[0]!r} (a flash model needs {', '.join(FLASH_FIELDS)})")
    values = {f: _number(fields[f], where, f) for f in FLASH_FIELDS}
    qd1 = {f: _number(fields[f], where, f) if fields.get(f) not in (None, "") else None for f in FLASH_QD1_FIELDS}
    return FlashTarget(name=name, **values, **qd1, source=source, kind=kind)


def paper_devices() -> dict[str, dict[str, str]]:
    """The paper's spec-table rows by device name."""
    with PAPER_DEVICES.open(newline="") as f:
        return {row["device"]: row for row in csv.DictReader(f)}


def _key(name: str) -> str:
    return "".join(ch for ch in name.lower() if ch.isalnum())


def paper_target(name: str) -> Target:
    """One of the paper's nine devices (Lee, Min and Yoon 2015, Tables 3 and 4) by name (case, spaces and
    dashes ignored)."""
    rows = {_key(k): row for k, row in paper_devices().items()}
    row = rows.get(_key(name))
    if row is None:
        raise DeviceModelError(f"no device {name!r} in {PAPER_DEVICES.name}; known: {', '.join(paper_devices())}")
    where = f"{PAPER_DEVICES.name}, row {row['device']}"
    source = "Lee, Min and Yoon (2015), Tables 3 and 4"
    if row["kind"] == "HDD":
        for path in sorted(diskmodel.profiles_dir().glob("*.yaml")):
            profile = diskmodel.DiskProfile.load(path)
            if _key(profile.name) == _key(row["device"]):
                return HddTarget(row["device"], profile, f"{source}; {path.name}")
        raise DeviceModelError(f"{where}: no HDD profile under {diskmodel.profiles_dir()} named {row['device']!r}")
    fields = {"seq_read_mbs": row["seq_read_mbs"], "seq_write_mbs": row["seq_write_mbs"],
              "read_iops_qd32": row["rand_read_iops"], "write_iops_qd32": row["rand_write_iops"]}
    return flash_target(row["device"], fields, where, f"{source} (vendor IOPS at depth {SATURATED_DEPTH}; depth 1 bounded)")


def drives() -> dict[str, dict[str, str]]:
    """Drives by name (``study/reference/drives.csv``: each row's published limits, its source
    and the date they were read)."""
    with DRIVES.open(newline="") as f:
        return {row["device"]: row for row in csv.DictReader(f)}


def drive_target(name: str) -> FlashTarget:
    """A drive of :func:`drives` as a flash model of its published limits (depth-1 IOPS bounded
    as for the paper's SSDs)."""
    rows = {_key(k): row for k, row in drives().items()}
    row = rows.get(_key(name))
    if row is None:
        raise DeviceModelError(f"no drive {name!r} in {DRIVES.name}; known: {', '.join(drives())} (a cloud "
                               "volume is cloud:VOLUME[@INSTANCE])")
    fields = {"seq_read_mbs": row["seq_read_mbs"], "seq_write_mbs": row["seq_write_mbs"],
              "read_iops_qd32": row["read_iops_qd32"], "write_iops_qd32": row["write_iops_qd32"]}
    return flash_target(row["device"], fields, f"{DRIVES.name}, row {row['device']}",
                        f"{row['source']} (read {row['retrieved']}; {row['note']})", kind=row["kind"])


def record_target(path: Path, body: dict[str, Any] | None = None) -> Target:
    """A target from a ``biossd device characterize`` record: an emulated HDD's record is its
    profile; any other is a :class:`FlashTarget` of its measured figures."""
    path = Path(path)
    if body is None:
        from biossd.host import devicerecord

        try:
            body = devicerecord.read(path)
        except devicerecord.DeviceRecordError as err:
            raise DeviceModelError(str(err)) from None
    emulation = body.get("emulation") or {}
    if emulation.get("emulated") and str(emulation.get("profile") or "").startswith(cloudmodel.CLOUD_PREFIX):
        scale = float(emulation.get("scale") or 1.0)
        return cloudmodel.target(str(emulation["profile"]).removeprefix(cloudmodel.CLOUD_PREFIX)).scaled(scale)
    if emulation.get("emulated") and emulation.get("profile"):
        profile = diskmodel.load_profile(str(emulation["profile"]))
        scale = float(emulation.get("scale") or 1.0)
        return HddTarget(f"{profile.name} (emulated)", profile, f"{path.name}: emulation of {emulation['profile']}"
                         + (f", scaled by D = {scale:g}" if scale != 1 else ""), scale=scale)
    row = body.get("spec_row")
    if not isinstance(row, dict):
        raise DeviceModelError(f"{path}: missing field 'spec_row' (is it a `biossd device characterize` record?)")
    fields = {"seq_read_mbs": row.get("seq_read_mbs"), "seq_write_mbs": row.get("seq_write_mbs"),
              "read_iops_qd1": row.get("rand_read_iops"), "write_iops_qd1": row.get("rand_write_iops"),
              "read_iops_qd32": row.get("rand_read_iops_qd32"), "write_iops_qd32": row.get("rand_write_iops_qd32")}
    for field in FLASH_QD1_FIELDS:
        if fields[field] in (None, ""):
            name = "rand_read_iops" if "read" in field else "rand_write_iops"
            raise DeviceModelError(f"{path}: missing field 'spec_row.{name}'")
    name = str(row.get("device") or path.stem)
    return flash_target(name, fields, f"{path} (spec_row)", f"fio record {path.name}", kind="measured")


def profile_target(path: Path) -> Target:
    """A target from a device profile YAML (``kind: HDD``, ``SSD`` or ``NVMe``)."""
    data = yamlfile.read_mapping(Path(path), "a device profile", DeviceModelError)
    kind = data.get("kind")
    if kind == "HDD":
        try:
            return HddTarget(str(data.get("name")), diskmodel.DiskProfile.load(Path(path)), Path(path).name)
        except diskmodel.ProfileError as err:
            raise DeviceModelError(str(err)) from None
    if kind in FLASH_KINDS:
        return flash_target(str(data.get("name") or Path(path).stem), data, str(path), Path(path).name, kind=kind)
    raise DeviceModelError(f"{path}: field 'kind' must be one of HDD, {', '.join(FLASH_KINDS)}; got {kind!r}")


def sequential_rates(profile: str) -> tuple[float, float, str]:
    """``(read, write, source)``: the sequential rates (MB/s) of an emulated class's model, for a
    run's Butil where no device was characterized — a disk's spec (the emulation is calibrated to
    it), or a cloud volume's baseline throughput under its instance's bandwidth
    (:func:`biossd.host.models.cloudmodel.sequential_mbs`)."""
    if profile.startswith(cloudmodel.CLOUD_PREFIX):
        rate = cloudmodel.sequential_mbs(profile.removeprefix(cloudmodel.CLOUD_PREFIX))
        return rate, rate, "cloud model"
    spec = diskmodel.load_profile(profile)
    return spec.seq_read_mbs, spec.seq_write_mbs, "emulation profile"


def load_target(spec: str | Path) -> Target:
    """A target by ``paper:<name>``, a paper device's name, a profile's name under
    ``study/devices/``, or a file (a characterize record ``.json`` or a profile ``.yaml``)."""
    text = str(spec)
    if text.startswith("paper:"):
        return paper_target(text.removeprefix("paper:"))
    if text.startswith("drive:"):
        return drive_target(text.removeprefix("drive:"))
    if text.startswith(cloudmodel.CLOUD_PREFIX):
        try:
            return cloudmodel.target(text.removeprefix(cloudmodel.CLOUD_PREFIX))
        except cloudmodel.CloudModelError as err:
            raise DeviceModelError(str(err)) from None
    path = Path(text)
    if path.suffix == ".json":
        if not path.is_file():
            raise DeviceModelError(f"{path}: no such device record")
        return record_target(path)
    if path.suffix in (".yaml", ".yml"):
        if not path.is_file():
            raise DeviceModelError(f"{path}: no such device profile")
        return profile_target(path)
    named = diskmodel.profiles_dir() / f"{text}.yaml"
    if named.is_file():
        return profile_target(named)
    if _key(text) in {_key(k) for k in paper_devices()}:
        return paper_target(text)
    if _key(text) in {_key(k) for k in drives()}:
        return drive_target(text)
    known = [p.stem for p in sorted(diskmodel.profiles_dir().glob("*.yaml"))] + list(paper_devices())
    raise DeviceModelError(f"no device {text!r}: give a characterize record (.json), a profile (.yaml) or one of "
                           + ", ".join(known))


def paper_targets(kind: str | None = None, scale: float = 1.0) -> list[Target]:
    """The paper's devices (``kind``: ``SSD`` or ``HDD`` for one kind), in its table's order; its
    hard disks scaled by a study's divisor ``scale`` (a flash model has no buffer or distances to
    scale)."""
    targets = [paper_target(name) for name, row in paper_devices().items() if kind is None or row["kind"] == kind]
    return [t.scaled(scale) if isinstance(t, HddTarget) else t for t in targets]
