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
:mod:`biossd.measure.trace.blocktrace`'s canonical file, so features are computed one way whichever tracer
recorded the run. :func:`write_records` writes synthetic traces of known content for tests and
benchmarks.
"""

from __future__ import annotations

from pathlib import Path
from typing import Iterable, Sequence

import numpy as np

from biossd.core.errors import BiossdError
from biossd.core.units import SECTOR_BYTES

MAGIC = 0x65617400
MAGIC_MASK = 0xFFFFFF00
VERSION = 0x07
RECORD_BYTES = 48
TC_SHIFT = 16

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


class TraceFormatError(BiossdError, ValueError):
    """A blktrace file that is truncated or not a blktrace file; names the file and offset."""


def _parse(data: np.ndarray, path: Path, base: int, final: bool) -> tuple[np.ndarray, int]:
    """Records in ``data`` (bytes of ``path`` from offset ``base``); returns them and how many
    bytes they took. Unless ``final``, a record or payload cut by the end of ``data`` is left
    for the next call."""
    pieces: list[np.ndarray] = []
    offset, total = 0, data.size
    while offset < total:
        n = (total - offset) // RECORD_BYTES
        if n == 0:
            if final:
                raise TraceFormatError(f"{path}: truncated record at byte offset {base + offset} "
                                       f"({total - offset} bytes left, a record has {RECORD_BYTES})")
            break
        view = data[offset : offset + n * RECORD_BYTES].view(RECORD_DTYPE)
        # One pass for both checks: a record is "special" if its magic is wrong or it carries a
        # payload (pdu_len is the high half of the last 32-bit word, little-endian).
        words = data[offset : offset + n * RECORD_BYTES].view("<u4").reshape(n, RECORD_BYTES // 4)
        special = ((words[:, 0] & MAGIC_MASK) ^ MAGIC) | (words[:, -1] >> 16)
        first = int(np.argmax(special != 0)) if special.any() else n
        if first < n and (int(words[first, 0]) & MAGIC_MASK) != MAGIC:
            raise TraceFormatError(f"{path}: not a blktrace record at byte offset "
                                   f"{base + offset + first * RECORD_BYTES} (bad magic)")
        stop = min(first + 1, n)
        has_pdu = first < n
        payload = int(view["pdu_len"][stop - 1]) if has_pdu else 0
        end = offset + stop * RECORD_BYTES + payload
        if end > total:
            if final:
                raise TraceFormatError(f"{path}: payload runs past the end of the file (record at "
                                       f"byte offset {base + offset + (stop - 1) * RECORD_BYTES})")
            if stop > 1:
                pieces.append(view[: stop - 1])
                offset += (stop - 1) * RECORD_BYTES
            break
        pieces.append(view[:stop])
        offset = end
    if len(pieces) == 1:
        return pieces[0], offset
    return (np.concatenate(pieces) if pieces else np.empty(0, RECORD_DTYPE)), offset


def _check_byte_order(path: Path, head: np.ndarray) -> None:
    if head.size >= 4 and (int(head[:4].view(">u4")[0]) & MAGIC_MASK) == MAGIC:
        raise TraceFormatError(f"{path}: big-endian blktrace files are not supported (byte offset 0)")


def read_records(path: Path) -> np.ndarray:
    """All records of one per-CPU file, payloads skipped (a structured array of
    :data:`RECORD_DTYPE`, in file order)."""
    path = Path(path)
    data = np.fromfile(path, dtype=np.uint8)
    _check_byte_order(path, data)
    records, _ = _parse(data, path, 0, final=True)
    return records.copy()


#: Records per chunk when streaming: small enough that the several passes over a chunk stay in
#: the CPU cache (measured: 2^16 is ~30% faster than 2^20; benchmarks/features_throughput.py).
CHUNK_RECORDS = 1 << 16


def iter_records(path: Path, chunk_records: int = CHUNK_RECORDS):
    """The records of one per-CPU file in chunks of about ``chunk_records``, in bounded memory
    (each chunk is a view of its own buffer; nothing is copied but a cut record's bytes)."""
    path = Path(path)
    base = 0
    carry = b""
    with open(path, "rb") as f:
        while True:
            buf = bytearray(len(carry) + chunk_records * RECORD_BYTES)
            buf[: len(carry)] = carry
            got = f.readinto(memoryview(buf)[len(carry):])
            final = got == 0
            data = np.frombuffer(buf, dtype=np.uint8, count=len(carry) + got)
            if base == 0:
                _check_byte_order(path, data)
            if data.size == 0:
                return
            records, used = _parse(data, path, base, final=final)
            if records.size:
                yield records
            carry, base = bytes(buf[used : len(carry) + got]), base + used
            if final:
                return


#: The columns of :func:`compact` events.
EVENT_COLUMNS = ("time", "action", "device", "sector", "bytes")


def compact(records: np.ndarray) -> dict[str, np.ndarray]:
    """The issue (``D``) and completion (``C``) data events of ``records`` as separate columns
    (what the features need, without the other events and fields)."""
    action = records["action"]
    code = action & 0xFFFF
    keep = ((code == ACT_ISSUE) | (code == ACT_COMPLETE)) & (((action >> TC_SHIFT) & TC_NOTIFY) == 0)
    out = {"action": action[keep]}
    for name in ("time", "device", "sector", "bytes"):
        out[name] = records[name][keep]
    return out


def iter_trace(stem: Path, chunk_records: int = CHUNK_RECORDS):
    """The issue and completion events of a trace (all CPU files) in time order, as chunks of
    :func:`compact` columns, in bounded memory: the per-CPU files are each in time order and are
    merged up to the earliest time every unfinished file has reached."""
    readers = [iter_records(p, chunk_records) for p in trace_files(stem)]
    pending: list[dict[str, np.ndarray] | None] = [None] * len(readers)
    done = [False] * len(readers)
    while True:
        for i, reader in enumerate(readers):
            while not done[i] and (pending[i] is None or pending[i]["time"].size == 0):
                got = next(reader, None)
                if got is None:
                    done[i], pending[i] = True, None
                    break
                cols = compact(got)
                t = cols["time"]
                if t.size > 1 and (t[1:] < t[:-1]).any():
                    order = np.argsort(t, kind="stable")
                    cols = {k: v[order] for k, v in cols.items()}
                pending[i] = cols
        live = [p for p in pending if p is not None and p["time"].size]
        if not live:
            return
        if len(live) == 1:
            only = live[0]
            pending = [None if p is only else p for p in pending]
            yield only
            continue
        watermark = min(int(p["time"][-1]) for p in live)
        taken = []
        for i, p in enumerate(pending):
            if p is None or p["time"].size == 0:
                continue
            cut = int(np.searchsorted(p["time"], watermark, side="right"))
            taken.append({k: v[:cut] for k, v in p.items()})
            pending[i] = {k: v[cut:] for k, v in p.items()}
        merged = {k: np.concatenate([t[k] for t in taken]) for k in EVENT_COLUMNS}
        order = np.argsort(merged["time"], kind="stable")
        yield {k: v[order] for k, v in merged.items()}


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


# -- writing (synthetic traces for tests and benchmarks) ---------------------------------------------------------------
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


PATTERNS = ("sequential", "random", "mixed")
#: Request sizes of synthetic traces, in sectors: whole KiB, as blkparse sums KiB per request.
SYNTH_SIZES_SECTORS = np.array([8, 16, 64, 128, 256])
SYNTH_INTERVAL_NS = 10_000
SYNTH_SPAN_SECTORS = 1 << 30


def synthetic(n: int, pattern: str, seed: int = 0, device: int = (8 << 20) | 16, cpus: int = 1,
              write_share: float = 0.5, merge_share: float = 0.0, depth: int = 1,
              t0_ns: int = 1_000_000) -> np.ndarray:
    """Records of ``n`` requests of known content, sorted by time: for each, a queue (``Q``), a
    back merge (``M``) of a second bio for ``merge_share`` of them, an issue (``D``) and a
    completion (``C``). ``pattern``: ``sequential`` (each request starts where the previous
    ended), ``random`` (anywhere) or ``mixed`` (half continue, half jump). ``depth`` > 1 lets
    requests overlap, so completions come out of issue order. Events are spread over ``cpus``."""
    if pattern not in PATTERNS:
        raise ValueError(f"pattern must be one of {PATTERNS}")
    rng = np.random.default_rng(seed)
    size = rng.choice(SYNTH_SIZES_SECTORS, n).astype(np.int64)
    if pattern == "sequential":
        start = 2048 + np.concatenate([[0], np.cumsum(size)[:-1]])
    else:
        jump = rng.integers(0, SYNTH_SPAN_SECTORS // 8, n).astype(np.int64) * 8
        if pattern == "random":
            start = jump
        else:
            keep = rng.random(n) < 0.5
            keep[0] = False
            # A request that continues starts at the end of the previous one: solve by runs.
            run_id = np.cumsum(~keep)
            base = jump[~keep][run_id - 1]
            offset_in_run = np.cumsum(size) - size
            run_first = np.flatnonzero(~keep)
            start = base + offset_in_run - offset_in_run[run_first][run_id - 1]
    write = rng.random(n) < write_share
    merged = rng.random(n) < merge_share
    issue = t0_ns + np.arange(n, dtype=np.int64) * SYNTH_INTERVAL_NS
    service = rng.integers(1_000, SYNTH_INTERVAL_NS * depth - 1_000, n) if depth > 1 else \
        rng.integers(1_000, SYNTH_INTERVAL_NS - 2_000, n)
    cpu = rng.integers(0, cpus, n)
    first_part = np.where(merged, size // 2 // 2 * 2, size)  # the queued bio before the merge
    parts = [
        (issue - 500, [action(ACT_QUEUE, w) for w in (False, True)], start, first_part, np.ones(n, bool)),
        (issue - 200, [action(ACT_BACKMERGE, w) for w in (False, True)], start + first_part, size - first_part, merged),
        (issue, [action(ACT_ISSUE, w) for w in (False, True)], start, size, np.ones(n, bool)),
        (issue + service, [action(ACT_COMPLETE, w) for w in (False, True)], start, size, np.ones(n, bool)),
    ]
    chunks = []
    for time_ns, acts, sector, sectors, mask in parts:
        act = np.where(write, acts[1], acts[0])[mask]
        rec = make_records(time_ns[mask], act, sector[mask], sectors[mask] * SECTOR_BYTES, device, pid=1000)
        rec["cpu"] = cpu[mask]
        chunks.append(rec)
    records = np.concatenate(chunks)
    records = records[np.argsort(records["time"], kind="stable")]
    records["sequence"] = np.arange(records.size)
    return records


def write_trace(stem: Path, records: np.ndarray, comm: str = "synthetic") -> list[Path]:
    """Write records as a blktrace trace ``stem.blktrace.<cpu>``, one file per CPU, each
    starting with a process-name notification for the records' pids."""
    stem = Path(stem)
    paths = []
    for cpu in np.unique(records["cpu"]):
        mine = records[records["cpu"] == cpu]
        notes = [process_notify(int(pid), comm, int(mine["time"][0]) - 1, int(mine["device"][0]), int(cpu))
                 for pid in np.unique(mine["pid"])]
        paths.append(write_records(stem.with_name(f"{stem.name}.blktrace.{cpu}"), [*notes, mine]))
    return paths
