"""blktrace's binary trace format: ``struct blk_io_trace`` records, read vectorised and written.

blktrace writes one file per CPU, ``<name>.blktrace.<cpu>``, of records in the tracing host's
byte order (``include/uapi/linux/blktrace_api.h``)::

    u32 magic      0x65617400 | version (7)      u32 sequence
    u64 time       ns since the trace started    u64 sector     (512-byte units)
    u32 bytes                                    u32 action     category bits << 16 | action code
    u32 pid        u32 device (kernel dev_t: major << 20 | minor)
    u32 cpu        u16 error      u16 pdu_len    then pdu_len bytes of payload

Reading never loops over records in Python. The buffer is viewed as records where it can be (a
payload shifts the records after it, so each payload starts a new view). One pass per payload-
bearing record: a trace has such records only for notifications (process names, timestamps,
messages) and driver data, which are few.

:func:`to_requests` turns records into one row per request. Each issue (``D``) is paired with
its completion (``C``) by device and sector, first in first out. The result has the columns of
:mod:`biossd.blocktrace`'s canonical file, so features are computed one way whichever tracer
recorded the run. :func:`write_records` writes synthetic traces of known content for tests and
benchmarks.
"""

from __future__ import annotations

from pathlib import Path
from typing import Iterable, Sequence

import numpy as np

MAGIC = 0x65617400
MAGIC_MASK = 0xFFFFFF00
VERSION = 0x07
RECORD_BYTES = 48
TC_SHIFT = 16
SECTOR_BYTES = 512

#: Action codes (the low 16 bits of ``action``).
ACT_QUEUE, ACT_BACKMERGE, ACT_FRONTMERGE, ACT_GETRQ = 1, 2, 3, 4
ACT_REQUEUE, ACT_ISSUE, ACT_COMPLETE, ACT_INSERT = 6, 7, 8, 12
#: Category bits (the high 16 bits of ``action``).
TC_READ, TC_WRITE, TC_FLUSH, TC_SYNC = 1 << 0, 1 << 1, 1 << 2, 1 << 3
TC_QUEUE, TC_REQUEUE, TC_ISSUE, TC_COMPLETE = 1 << 4, 1 << 5, 1 << 6, 1 << 7
TC_FS, TC_NOTIFY, TC_DISCARD = 1 << 8, 1 << 10, 1 << 13
#: Category bit that goes with each action code (blktrace_api.h's BLK_TA_* definitions).
ACTION_CATEGORY = {ACT_QUEUE: TC_QUEUE, ACT_BACKMERGE: TC_QUEUE, ACT_FRONTMERGE: TC_QUEUE,
                   ACT_GETRQ: TC_QUEUE, ACT_REQUEUE: TC_REQUEUE, ACT_ISSUE: TC_ISSUE,
                   ACT_COMPLETE: TC_COMPLETE, ACT_INSERT: TC_QUEUE}
NOTIFY_PROCESS = 0

RECORD_DTYPE = np.dtype([
    ("magic", "<u4"), ("sequence", "<u4"), ("time", "<u8"), ("sector", "<u8"), ("bytes", "<u4"),
    ("action", "<u4"), ("pid", "<u4"), ("device", "<u4"), ("cpu", "<u4"), ("error", "<u2"),
    ("pdu_len", "<u2"),
])
assert RECORD_DTYPE.itemsize == RECORD_BYTES


class TraceFormatError(ValueError):
    """A blktrace file that is truncated or not a blktrace file; names the file and offset."""


def read_records(path: Path) -> np.ndarray:
    """All records of one per-CPU file, payloads skipped (a structured array of
    :data:`RECORD_DTYPE`, in file order)."""
    path = Path(path)
    data = np.fromfile(path, dtype=np.uint8)
    if data.size == 0:
        return np.empty(0, RECORD_DTYPE)
    if data.size >= 4 and (int(data[:4].view(">u4")[0]) & MAGIC_MASK) == MAGIC:
        raise TraceFormatError(f"{path}: big-endian blktrace files are not supported (byte offset 0)")
    pieces: list[np.ndarray] = []
    offset = 0
    total = data.size
    while offset < total:
        n = (total - offset) // RECORD_BYTES
        if n == 0:
            raise TraceFormatError(f"{path}: truncated record at byte offset {offset} "
                                   f"({total - offset} bytes left, a record has {RECORD_BYTES})")
        view = data[offset : offset + n * RECORD_BYTES].view(RECORD_DTYPE)
        bad_magic = (view["magic"] & MAGIC_MASK) != MAGIC
        has_pdu = view["pdu_len"] != 0
        # Up to and including the first record with a payload, the view is aligned.
        stop = int(np.argmax(has_pdu)) + 1 if has_pdu.any() else n
        first_bad = int(np.argmax(bad_magic[:stop])) if bad_magic[:stop].any() else -1
        if first_bad >= 0:
            raise TraceFormatError(f"{path}: not a blktrace record at byte offset "
                                   f"{offset + first_bad * RECORD_BYTES} (bad magic)")
        pieces.append(view[:stop])
        offset += stop * RECORD_BYTES
        if stop <= n and has_pdu[stop - 1]:
            offset += int(view["pdu_len"][stop - 1])
            if offset > total:
                raise TraceFormatError(f"{path}: payload runs past the end of the file "
                                       f"(record at byte offset {offset - RECORD_BYTES})")
    return np.concatenate(pieces) if len(pieces) > 1 else pieces[0].copy()


def trace_files(stem: Path) -> list[Path]:
    """The per-CPU files of a trace named ``stem`` (``DIR/name`` → ``DIR/name.blktrace.<cpu>``)."""
    stem = Path(stem)
    files = sorted(stem.parent.glob(f"{stem.name}.blktrace.*"),
                   key=lambda p: int(p.suffix[1:]) if p.suffix[1:].isdigit() else -1)
    if not files:
        raise FileNotFoundError(f"no blktrace files {stem}.blktrace.<cpu>")
    return files


def read_trace(stem: Path) -> np.ndarray:
    """Every record of a trace (all CPUs), sorted by time (stable)."""
    records = np.concatenate([read_records(p) for p in trace_files(stem)])
    return records[np.argsort(records["time"], kind="stable")]


def to_requests(records: np.ndarray) -> dict[str, np.ndarray]:
    """One entry per issued request: ``issue_ns``, ``complete_ns`` (-1 when not seen), ``device``
    (kernel dev_t), ``is_write``, ``is_discard``, ``sector``, ``bytes``, ``pid``; in issue order.

    Issues (``D``) and completions (``C``) are paired by (device, sector) in order of time,
    vectorised: both sides are sorted by (device, sector, time), numbered within their key, and
    matched on (device, sector, number).
    """
    act = records["action"] & 0xFFFF
    cat = records["action"] >> TC_SHIFT
    notify = (cat & TC_NOTIFY) != 0
    d = records[(act == ACT_ISSUE) & ~notify]
    c = records[(act == ACT_COMPLETE) & ~notify]
    d = d[np.argsort(d["time"], kind="stable")]
    complete_ns = np.full(d.size, -1, dtype=np.int64)
    if d.size and c.size:
        d_order, d_rank = _ranked(d)
        c_order, c_rank = _ranked(c)
        d_key = _key(d["device"][d_order], d["sector"][d_order], d_rank)
        c_key = _key(c["device"][c_order], c["sector"][c_order], c_rank)
        c_sort = np.argsort(c_key, kind="stable")
        pos = np.searchsorted(c_key[c_sort], d_key)
        pos_clipped = np.minimum(pos, c_key.size - 1)
        found = c_key[c_sort][pos_clipped] == d_key
        c_time = c["time"][c_order][c_sort][pos_clipped]
        matched = np.where(found, c_time.astype(np.int64), -1)
        complete_ns[d_order] = matched
    cat_d = d["action"] >> TC_SHIFT
    return {
        "issue_ns": d["time"].astype(np.int64),
        "complete_ns": complete_ns,
        "device": d["device"],
        "is_write": (cat_d & TC_WRITE) != 0,
        "is_discard": (cat_d & TC_DISCARD) != 0,
        "sector": d["sector"].astype(np.int64),
        "bytes": d["bytes"].astype(np.int64),
        "pid": d["pid"],
    }


def _ranked(events: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Order by (device, sector, time) and each event's number within its (device, sector)."""
    order = np.lexsort((events["time"], events["sector"], events["device"]))
    dev, sec = events["device"][order], events["sector"][order]
    new_key = np.ones(order.size, dtype=bool)
    new_key[1:] = (dev[1:] != dev[:-1]) | (sec[1:] != sec[:-1])
    group_start = np.maximum.accumulate(np.where(new_key, np.arange(order.size), 0))
    return order, np.arange(order.size) - group_start


def _key(device: np.ndarray, sector: np.ndarray, rank: np.ndarray) -> np.ndarray:
    """One sortable key per (device, sector, rank): a record array compared field by field."""
    key = np.empty(device.size, dtype=[("device", "<u4"), ("sector", "<u8"), ("rank", "<i8")])
    key["device"], key["sector"], key["rank"] = device, sector, rank
    return key


# -- writing (synthetic traces for tests and benchmarks) -------------------------------------------
def make_records(time_ns: Sequence[int] | np.ndarray, action: Sequence[int] | np.ndarray,
                 sector: Sequence[int] | np.ndarray, nbytes: Sequence[int] | np.ndarray,
                 device: int, pid: int = 1, cpu: int = 0) -> np.ndarray:
    """Records of the given times, actions (``category << 16 | code``), sectors and sizes."""
    n = len(time_ns)
    rec = np.zeros(n, RECORD_DTYPE)
    rec["magic"] = MAGIC | VERSION
    rec["sequence"] = np.arange(n)
    rec["time"], rec["action"], rec["sector"], rec["bytes"] = time_ns, action, sector, nbytes
    rec["pid"], rec["device"], rec["cpu"] = pid, device, cpu
    return rec


def action(code: int, write: bool = False, discard: bool = False, sync: bool = False) -> int:
    """The ``action`` field of a data event: its category bits (direction, flags, the action's
    own category) over its code."""
    cat = ACTION_CATEGORY[code] | TC_FS
    cat |= TC_WRITE if write else (0 if discard else TC_READ)
    cat |= TC_DISCARD if discard else 0
    cat |= TC_SYNC if sync else 0
    return (cat << TC_SHIFT) | code


def process_notify(pid: int, comm: str, time_ns: int, device: int, cpu: int = 0) -> bytes:
    """A process-name notification (what blktrace emits for each new pid), with its payload."""
    name = comm.encode()[:15] + b"\0"
    rec = make_records([time_ns], [(TC_NOTIFY << TC_SHIFT) | NOTIFY_PROCESS], [0], [0], device, pid, cpu)
    rec["pdu_len"] = len(name)
    return rec.tobytes() + name


def write_records(path: Path, chunks: Iterable[np.ndarray | bytes]) -> Path:
    """Write records (and pre-encoded records with payloads) to one per-CPU file."""
    path = Path(path)
    tmp = path.with_name(path.name + ".part")
    with open(tmp, "wb") as f:
        for chunk in chunks:
            f.write(chunk if isinstance(chunk, bytes) else chunk.tobytes())
    tmp.replace(path)
    return path
