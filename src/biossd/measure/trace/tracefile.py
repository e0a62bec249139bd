"""A run's block-trace file, ``blocktrace.tsv.gz``: its columns and its writer (Lee, Min and Yoon 2015, §5.1).

One row per block request, written as requests complete (:mod:`biossd.measure.trace.blocktrace` records
them; :mod:`biossd.measure.trace.tracereader` reads them):

=============  ========  ==================================================================
``issue_s``    float64   when the request was issued to the device, seconds since run start
``complete_s`` float64   when it completed (null: not seen before the trace ended)
``device``     string    kernel device name (``vda``, ``loop3``)
``op``         string    ``R`` read, ``W`` write, ``D`` discard, ``F`` flush only, ``N`` other
``rwbs``       string    the kernel's full operation flags (``WS``: synchronous write, ...)
``sector``     int64     first sector, 512-byte units
``bytes``      int64     request size in bytes
``pid``        int32     the task that submitted it (the one that allocated the request,
                         ``block_getrq``, or queued it, ``block_rq_insert``; else the one
                         that issued it; null when unknown)
``comm``       string    that task's name (null when unknown)
``error``      int32     completion status (0 = success; null when not completed)
=============  ========  ==================================================================

The file is tab-separated text, gzip-compressed, with a header row; a null is an empty field and
floats are written exactly (``repr``). It is text, not Parquet, so that the profiler writes it
with the standard library alone: every profiled run's process starts right after the previous
run's cache drop, and importing NumPy and PyArrow there read a fifth of a second from disk per run.
This module imports neither (an import-linter contract says so).
"""

from __future__ import annotations

import csv
import gzip
import os
from pathlib import Path
from typing import Any, Sequence

BLOCKTRACE_FILE = "blocktrace.tsv.gz"

#: The trace of result sets written before the text format.
LEGACY_BLOCKTRACE_FILE = "blocktrace.parquet"

#: gzip's fastest level: the writer runs beside the tool, on the same cores.
GZIP_LEVEL = 1

#: The canonical table's columns and their Arrow types, in file order.
COLUMNS = (("issue_s", "float64"), ("complete_s", "float64"), ("device", "string"), ("op", "string"),
           ("rwbs", "string"), ("sector", "int64"), ("bytes", "int64"), ("pid", "int32"), ("comm", "string"),
           ("error", "int32"))

COLUMN_NAMES = tuple(name for name, _ in COLUMNS)


def trace_path(run_dir: Path) -> Path:
    """A run's block trace: ``blocktrace.tsv.gz``, or the Parquet file of an older result set."""
    path = Path(run_dir) / BLOCKTRACE_FILE
    legacy = Path(run_dir) / LEGACY_BLOCKTRACE_FILE
    return legacy if not path.exists() and legacy.exists() else path


def _field(value: Any) -> str:
    """One value as the file writes it: empty for null, floats exactly, the rest as text."""
    if value is None:
        return ""
    if isinstance(value, float):
        return repr(value)
    return str(value)


class TraceFile:
    """Rows of the canonical table written to ``path``'s temporary name, renamed on :meth:`close`
    (removed on :meth:`abort`)."""

    def __init__(self, path: Path) -> None:
        self.path = Path(path)
        self.tmp = self.path.with_name(self.path.name + ".part")
        self._file = gzip.open(self.tmp, "wt", compresslevel=GZIP_LEVEL, newline="", encoding="utf-8")
        self._csv = csv.writer(self._file, delimiter="\t", lineterminator="\n")
        self._csv.writerow(COLUMN_NAMES)

    def write(self, row: Sequence[Any]) -> None:
        """One request, its values in :data:`COLUMNS` order (``None`` for null)."""
        self._csv.writerow([_field(v) for v in row])

    def close(self) -> None:
        self._file.close()
        os.replace(self.tmp, self.path)

    def abort(self) -> None:
        try:
            self._file.close()
        finally:
            self.tmp.unlink(missing_ok=True)


def write_trace(path: Path, columns: dict[str, Sequence[Any]]) -> Path:
    """A whole canonical table (every column of :data:`COLUMNS`, equal lengths) written to
    ``path``; for traces made rather than measured (synthetic result sets, tests)."""
    missing = [name for name in COLUMN_NAMES if name not in columns]
    if missing:
        raise ValueError(f"a block trace needs the columns {list(COLUMN_NAMES)}; missing {missing}")
    kinds = dict(COLUMNS)
    out = TraceFile(path)
    try:
        for values in zip(*(columns[name] for name in COLUMN_NAMES)):
            out.write([None if v is None else float(v) if kinds[name] == "float64" else
                       int(v) if kinds[name] in ("int64", "int32") else str(v)
                       for name, v in zip(COLUMN_NAMES, values)])
    except BaseException:
        out.abort()
        raise
    out.close()
    return Path(path)


#: The kernel's mark of a synchronous request in ``rwbs`` (REQ_SYNC): reads, O_DIRECT and
#: O_SYNC/fsync writes, journal commits. A write without it is writeback that whoever dirtied the
#: pages did not wait for (the flusher's, or one started by ``close``/``rename``).
SYNC_FLAG = "S"

#: Kernel threads (writeback, the journal, loop devices' workers, kswapd) issue everyone's
#: requests, the run's included: kept, even once they have ended.
KERNEL_THREAD_COMMS = ("kworker/", "jbd2/", "kswapd", "kcompactd", "ksoftirqd/", "kthreadd", "loop")
