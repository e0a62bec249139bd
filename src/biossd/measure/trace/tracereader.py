"""Reading a run's block trace (:mod:`biossd.measure.trace.tracefile`) for the features and the
predictions: its requests as NumPy arrays or an Arrow table, each counted once, and which of them
the run waited for (Lee, Min and Yoon 2015, §5.2). Also reads the ``blocktrace.parquet`` of result
sets written before the text format."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any, Sequence

from biossd.core.errors import BiossdError
from biossd.measure.trace.tracefile import COLUMN_NAMES, COLUMNS, KERNEL_THREAD_COMMS, SYNC_FLAG, trace_path

if TYPE_CHECKING:
    import numpy


def waited_for(op, rwbs, comm=None, issue_s=None, windows=()):
    """Per request (NumPy arrays of ``op``, ``rwbs`` and the issuing ``comm``): whether the task
    that caused it waited for it — every read, a write carrying :data:`SYNC_FLAG`, a flush the
    run's own process issued, and a flush issued (at ``issue_s``) inside one of the run's sync
    calls, ``windows`` (:func:`sync_waits`: ``fsync`` waits for the journal's commit and the cache
    flush, which the kernel's threads issue for it); a write without the flag is background
    writeback, and any other flush a kernel thread issued (the journal's periodic commit) is the
    file system's, which the run does not wait for (without ``comm``: every flush is taken as
    waited for)."""
    import numpy as np

    op, rwbs = np.asarray(op, dtype=str), np.asarray(rwbs, dtype=str)
    waited = ((op != "W") & (op != "F")) | ((op == "W") & (np.char.find(rwbs, SYNC_FLAG) >= 0))
    if comm is None:
        return waited | (op == "F")
    comm = np.asarray([str(c or "") for c in comm], dtype=str)
    kernel = np.zeros(comm.shape, bool)
    for prefix in KERNEL_THREAD_COMMS:
        kernel |= np.char.startswith(comm, prefix)
    for_a_sync = inside(issue_s, windows) if issue_s is not None else np.zeros(op.shape, bool)
    return waited | ((op == "F") & (~kernel | for_a_sync))


def inside(times_s, windows) -> "numpy.ndarray":
    """Per time, whether it falls in one of ``windows`` (``[start, end]`` pairs, any order)."""
    import numpy as np

    times = np.asarray(times_s, dtype=float)
    found = np.zeros(times.shape, bool)
    for start, end in windows or ():
        found |= (times >= start) & (times <= end)
    return found


def window_ends(times_s, windows) -> "numpy.ndarray":
    """Per time, the earliest end of a window in ``windows`` holding it (NaN where none does)."""
    import numpy as np

    times = np.asarray(times_s, dtype=float)
    ends = np.full(times.shape, np.inf)
    for start, end in windows or ():
        ends = np.where((times >= start) & (times <= end), np.minimum(ends, end), ends)
    return np.where(np.isinf(ends), np.nan, ends)


def sync_windows(body: dict[str, Any]) -> list[list[float]]:
    """The ``[entered, returned]`` of each sync call a run's manifest lists (:func:`sync_waits`)."""
    return (((body.get("collectors") or {}).get("blocktrace") or {}).get("sync") or {}).get("windows_s") or []


def excluded_pids(body: dict[str, Any]) -> list[int]:
    """The pids a run's manifest names as foreign issuers (:func:`foreign_issuers`)."""
    foreign = ((body.get("collectors") or {}).get("blocktrace") or {}).get("foreign") or {}
    return [int(pid) for pid in foreign.get("pids") or {}]


def stacked_devices(body: dict[str, Any]) -> list[str]:
    """Traced devices whose every request reaches another traced device below them: a run's swap
    area, a loop device over a file on the class's traced file system. Each of its requests is
    traced twice, on the swap device (issued by the process that paged) and on the one below (by
    the loop's worker); the features and predictions count it once, below, where the disk served
    it."""
    swap = body.get("swap") or {}
    loop = swap.get("loop_device")
    traced = list(body.get("devices") or [])
    if not loop or Path(loop).name not in traced:
        return []
    under = swap.get("backing_device")
    if under is None:  # a result set from before the swap recorded it: its file on the run's directory
        point = ((body.get("mounts") or {}).get("cwd") or {}).get("mount_point")
        backing = swap.get("backing_file") or ""
        if point and backing.startswith(point.rstrip("/") + "/"):
            under = next((d for d in traced if d != Path(loop).name), None)
    return [Path(loop).name] if under in traced else []


def swap_device(body: dict[str, Any]) -> str | None:
    """The run's swap device, when it was traced."""
    loop = (body.get("swap") or {}).get("loop_device")
    return Path(loop).name if loop and Path(loop).name in (body.get("devices") or []) else None


def run_requests(run_dir: Path, body: dict[str, Any]) -> dict[str, Any]:
    """A run's own requests, each counted once (:func:`request_arrays` without its foreign
    issuers' and without those of a device stacked on another traced one, :func:`stacked_devices`)."""
    return request_arrays(trace_path(run_dir), excluded_pids(body), exclude_devices=stacked_devices(body),
                          sync_windows_s=sync_windows(body))


def kernel_thread_issue_s(run_dir: Path, body: dict[str, Any]) -> "numpy.ndarray":
    """When the run's kept requests that a kernel thread issued (write-back, the journal:
    :data:`KERNEL_THREAD_COMMS`) were issued, in seconds on the run's clock: the requests a run
    cannot tell from those of another run beside it."""
    import numpy as np

    table = read_table(trace_path(run_dir)).select(["issue_s", "pid", "comm"])
    pids = table.column("pid").to_numpy(zero_copy_only=False)
    comms = np.asarray([str(c or "") for c in table.column("comm").to_pylist()])
    kernel = np.char.startswith(comms, KERNEL_THREAD_COMMS[0])
    for prefix in KERNEL_THREAD_COMMS[1:]:
        kernel |= np.char.startswith(comms, prefix)
    kept = kernel & ~np.isin(pids, np.asarray(excluded_pids(body), dtype=float))
    return table.column("issue_s").to_numpy()[kept]


def swap_issuers(run_dir: Path, body: dict[str, Any]) -> dict[str, Any]:
    """Who paged: the read and write requests of the run's swap device (swap-ins and swap-outs as
    the processes that paged submitted them; the kernel's reclaim threads for some writes), and
    the swap-in reads per issuing command (``comm``), most first. Zero counts without a traced
    swap device."""
    import pyarrow.compute as pc

    out: dict[str, Any] = {"reads": 0, "writes": 0, "read_comms": {}}
    device = swap_device(body)
    if device is None:
        return out
    table = read_table(trace_path(run_dir)).select(["device", "op", "comm"])
    table = table.filter(pc.equal(table.column("device"), device))
    ops = table.column("op").to_pylist()
    comms = table.column("comm").to_pylist()
    out["reads"], out["writes"] = ops.count("R"), ops.count("W")
    counts: dict[str, int] = {}
    for op, comm in zip(ops, comms):
        if op == "R":
            counts[comm or "?"] = counts.get(comm or "?", 0) + 1
    out["read_comms"] = dict(sorted(counts.items(), key=lambda kv: (-kv[1], kv[0])))
    return out


def request_arrays(path: Path, exclude_pids: Sequence[int] = (), exclude_devices: Sequence[str] = (),
                   sync_windows_s: Sequence[Sequence[float]] = ()) -> dict[str, Any]:
    """The canonical trace as NumPy arrays in issue order, for the features: ``issue_s``,
    ``complete_s`` (NaN when not seen), ``device`` (integer codes), ``op`` (``R``/``W``/...),
    ``sector``, ``bytes``, and ``waited`` (:func:`waited_for`, with the run's sync calls
    ``sync_windows_s``); without the requests of ``exclude_pids`` and of ``exclude_devices``. A
    flush issued inside a sync call and not seen to complete completes when the call returned."""
    import numpy as np
    import pyarrow as pa

    table = read_table(path).select(["issue_s", "complete_s", "device", "op", "rwbs", "sector", "bytes", "pid", "comm"])
    if len(exclude_pids):
        pids = table.column("pid").to_numpy(zero_copy_only=False)
        table = table.filter(pa.array(~np.isin(pids, np.asarray(exclude_pids, dtype=float))))
    if len(exclude_devices):
        names = table.column("device").to_numpy(zero_copy_only=False).astype(str)
        table = table.filter(pa.array(~np.isin(names, np.asarray(list(exclude_devices), dtype=str))))
    order = np.argsort(table.column("issue_s").to_numpy(), kind="stable")
    device = table.column("device").dictionary_encode().combine_chunks().indices.to_numpy(zero_copy_only=False)
    issue = table.column("issue_s").to_numpy()
    op = table.column("op").to_numpy(zero_copy_only=False).astype(str)
    complete = table.column("complete_s").to_numpy(zero_copy_only=False).astype(float)
    unseen_flush = (op == "F") & np.isnan(complete)
    complete = np.where(unseen_flush, window_ends(issue, sync_windows_s), complete)
    return {
        "issue_s": issue[order],
        "complete_s": complete[order],
        "device": device[order],
        "op": op[order],
        "waited": waited_for(op, table.column("rwbs").to_numpy(zero_copy_only=False).astype(str),
                             table.column("comm").to_pylist(), issue, sync_windows_s)[order],
        "sector": table.column("sector").to_numpy()[order],
        "bytes": table.column("bytes").to_numpy()[order],
    }


def read_table(path: Path):
    """The canonical trace at ``path`` as an Arrow table of :data:`COLUMNS` (a ``.parquet`` path:
    an older result set's)."""
    import pyarrow as pa
    import pyarrow.csv as pacsv
    import pyarrow.parquet as pq

    path = Path(path)
    if path.suffix == ".parquet":
        return pq.read_table(path)
    types = {name: pa.type_for_alias(kind) for name, kind in COLUMNS}
    try:
        table = pacsv.read_csv(path, parse_options=pacsv.ParseOptions(delimiter="\t"),
                               convert_options=pacsv.ConvertOptions(column_types=types, null_values=[""],
                                                                    strings_can_be_null=True))
    except (pa.ArrowInvalid, OSError, EOFError) as err:
        raise BiossdError(f"{path}: not a readable block trace ({err}); re-run the profile that wrote it") from None
    if table.column_names != list(COLUMN_NAMES):
        raise BiossdError(f"{path}: block-trace columns {table.column_names}, expected {list(COLUMN_NAMES)}")
    return table


def read_blocktrace(path: Path):
    """The canonical trace as a pandas DataFrame, in issue order."""
    table = read_table(path)
    return table.to_pandas().sort_values("issue_s", kind="stable").reset_index(drop=True)
