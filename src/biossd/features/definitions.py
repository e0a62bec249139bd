"""The paper's features, each defined once (Lee, Min and Yoon 2015, §3.1, §5.2, Table 2): the
eight storage features, the block-trace ones among them, the CPU and memory features of Fig. 10,
and the rates they derive from. :mod:`biossd.features.extract` computes them from a run directory;
Table 2 is printed from the definitions' docstrings."""

from __future__ import annotations

import math
from typing import Any

from biossd.features import blockstats


def pfault_per_s(swap_ins: float, swap_outs: float, runtime_s: float) -> float:
    """**Pfault** — page swaps per second (Lee, Min and Yoon 2015, §5.2): the pages swapped in and out
    while the run ran, over its wall-clock time. Table 2 of the paper says "page faults per second",
    §5.2 "the number of page swaps per second"; biossd reads ``pswpin`` + ``pswpout`` of
    /proc/vmstat as the run's sampler saw them (one measured run at a time holds the host lock, so
    the host's swapping is the run's), and keeps major faults, which also count file-backed misses
    and miss swap-outs, beside it (:func:`major_faults_per_s`). Units: pages/s."""
    if not runtime_s or runtime_s <= 0:
        return math.nan
    return (swap_ins + swap_outs) / runtime_s


def major_faults_per_s(major_faults: float, runtime_s: float) -> float:
    """Major faults of the whole process tree (rusage: faults that needed a read from storage —
    swap-ins and file-backed misses) per second of wall-clock time. Units: faults/s."""
    if not runtime_s or runtime_s <= 0:
        return math.nan
    return major_faults / runtime_s


def cpu_cores_used(user_s: float, sys_s: float, runtime_s: float) -> float:
    """CPU utilisation (Lee, Min and Yoon 2015, §3.6, Fig. 10): CPU time (user + system) over wall time.
    Units: cores (1.0 = one core busy for the whole run)."""
    if not runtime_s or runtime_s <= 0:
        return math.nan
    return (user_s + sys_s) / runtime_s


KIB = 1024


def riops(n_reads: int, runtime_s: float) -> float:
    """**Riops** — read requests issued to the device per second of runtime (Lee, Min and Yoon 2015, §5.2:
    "how many read ... requests are made per second"). Units: requests/s."""
    return n_reads / runtime_s if runtime_s > 0 else math.nan


def wiops(n_writes: int, runtime_s: float) -> float:
    """**Wiops** — write requests issued per second of runtime (Lee, Min and Yoon 2015, §5.2). Units:
    requests/s."""
    return n_writes / runtime_s if runtime_s > 0 else math.nan


def rsize_kib(read_bytes: int, n_reads: int) -> float:
    """**Rsize** — mean size of a read request (Lee, Min and Yoon 2015, §5.2, "read size per request" after
    ref. 41). Units: KiB/request; NaN when the run issued no reads."""
    return read_bytes / n_reads / KIB if n_reads else math.nan


def wsize_kib(write_bytes: int, n_writes: int) -> float:
    """**Wsize** — mean size of a write request (Lee, Min and Yoon 2015, §5.2). Units: KiB/request; NaN when
    the run issued no writes."""
    return write_bytes / n_writes / KIB if n_writes else math.nan


def car(n_consecutive: int, n_requests: int) -> float:
    """**CAR** — consecutive access ratio (Lee, Min and Yoon 2015, §5.2, after Traeger et al. 2008, ref. 42):
    the fraction of requests whose start sector equals the end sector of the previous request
    issued to the same device (counted by :class:`biossd.features.blockstats.BlockTally`). The first request on a
    device has no previous one and is not consecutive; the denominator is every request. This
    equals the share of zero-distance seeks in btt's D2D seek analysis, where the first request
    counts as a seek from sector 0 (the two differ only when a device's first request starts at
    sector 0). Units: fraction 0–1; NaN without requests."""
    return n_consecutive / n_requests if n_requests else math.nan


def wblen(write_queue_integral: float, span: float) -> float:
    """**WBlen** — time-weighted mean number of write requests outstanding at the device
    (Lee, Min and Yoon 2015, §5.2: "the number of write requests waiting in the write buffer of a storage
    device") over the run's window: the integral over time of the number of writes issued and
    not yet completed, over the window's length (both in one time unit). A write never seen to
    complete is outstanding until the window's end; a completion with nothing outstanding
    (issued before the trace began) is ignored. Units: requests."""
    return write_queue_integral / span if span > 0 else math.nan


def butil(busy_s: float, window_s: float) -> float:
    """**Butil** — interface bandwidth utilisation (Lee, Min and Yoon 2015, §5.2: "how much
    bandwidths of the interface between the host computer and the storage device are used",
    measured with SAR and blktrace, §5.1) as SAR measures it: sysstat's ``%util``, "percentage of
    elapsed time during which I/O requests were issued to the device (bandwidth utilization for
    the device)". The time with at least one request outstanding (the union of the requests'
    issue → completion intervals in the block trace) over the run's window (its runtime and the
    flush after it). Small random requests keep a disk busy while moving few bytes, which the
    bytes-over-bandwidth reading (:func:`butil_bytes`, column ``Butil_bytes``) misses. Units:
    fraction 0–1."""
    if not window_s or window_s <= 0:
        return math.nan
    return min(1.0, busy_s / window_s)


def butil_bytes(read_bytes: float, write_bytes: float, runtime_s: float, seq_read_bps: float,
          seq_write_bps: float) -> float:
    """Butil's second reading, bytes over bandwidth (the column ``Butil_bytes``): the share of the
    runtime the device would need to move the run's bytes at its measured sequential rates,
    ``(read_bytes / seq_read + write_bytes / seq_write) / runtime``. The paper leaves the
    bandwidth open; biossd divides by what ``biossd device characterize`` measured on the same
    device (1 MiB direct I/O), reads and writes each by their own rate. Units: fraction (0–1 for
    sequential transfers; random transfers cannot reach 1)."""
    if runtime_s <= 0 or seq_read_bps <= 0 or seq_write_bps <= 0:
        return math.nan
    return (read_bytes / seq_read_bps + write_bytes / seq_write_bps) / runtime_s


#: Each storage feature's defining function: its docstring is the definition (Table 2 is made
#: from these, so a definition is written once).
DEFINITIONS = {"Butil": butil, "Riops": riops, "Wiops": wiops, "Pfault": pfault_per_s, "CAR": car,
               "Rsize": rsize_kib, "Wsize": wsize_kib, "WBlen": wblen}
#: The eight storage features of Table 2, in the paper's order. Units: Butil fraction 0–1;
#: Riops, Wiops requests/s; Pfault pages swapped in and out per second; CAR fraction 0–1; Rsize,
#: Wsize KiB/request; WBlen requests.
STORAGE_FEATURES = tuple(DEFINITIONS)
#: Features that need a block-request trace (§5.2: measured with blktrace in the paper): all but
#: Pfault, which the swap counters give.
BLOCK_TRACE_FEATURES = tuple(name for name in STORAGE_FEATURES if name != "Pfault")


def block_features(tally: blockstats.BlockTally, seconds_per_unit: float,
                   bandwidth_bps: tuple[float, float] | None, runtime_s: float | None = None) -> dict[str, float]:
    """The seven block-trace features from a run's totals (:mod:`biossd.features.blockstats`) over its
    window; ``seconds_per_unit`` converts the tally's time unit (1 for seconds, 1e-9 for ns).
    Reads and writes are the requests' data direction; discards and flush-only requests count
    in neither. Rates (Riops, Wiops, Butil) are per second of ``runtime_s`` — the run's
    runtime, when the window also holds the flush after it (:func:`biossd.measure.accounting.flush_filesystem`)
    — and per second of the window when it is not given; WBlen is averaged over the window."""
    span = tally.t1 - tally.t0
    runtime_s = span * seconds_per_unit if runtime_s is None else runtime_s
    out = {
        "Riops": riops(tally.n_reads, runtime_s),
        "Wiops": wiops(tally.n_writes, runtime_s),
        "Rsize": rsize_kib(tally.read_bytes, tally.n_reads),
        "Wsize": wsize_kib(tally.write_bytes, tally.n_writes),
        "CAR": car(tally.n_consecutive, tally.n_requests),
        "WBlen": wblen(tally.write_queue_integral, span),
        "Butil": butil(tally.busy_time * seconds_per_unit, span * seconds_per_unit),
        "Butil_bytes": math.nan,
    }
    if bandwidth_bps is not None:
        out["Butil_bytes"] = butil_bytes(tally.read_bytes, tally.write_bytes, runtime_s, *bandwidth_bps)
    return out


def ratio(numerator: float | None, denominator: float | None) -> float:
    if numerator is None or denominator is None or denominator == 0:
        return math.nan
    return numerator / denominator


#: CPU and memory features of the paper's Fig. 10, from perf counters: (column, numerator event,
#: denominator event). IPC: instructions per cycle; the others are miss ratios (fraction 0–1).
PERF_RATIOS = (
    ("ipc", "instructions", "cycles"),
    ("cache_miss_ratio", "cache-misses", "cache-references"),
    ("llc_miss_ratio", "LLC-load-misses", "LLC-loads"),
    ("dtlb_miss_ratio", "dTLB-load-misses", "dTLB-loads"),
)

CPU_MEMORY_COLUMNS = ("ipc", "cache_miss_ratio", "llc_miss_ratio", "dtlb_miss_ratio", "page_faults_per_s")


def cpu_memory_features(counts: dict[str, dict[str, Any]], runtime_s: float) -> tuple[dict[str, float], dict[str, str]]:
    """Fig. 10's CPU/memory features (Lee, Min and Yoon 2015, §3.6) from ``perf stat`` counts: IPC, cache, LLC
    and dTLB miss ratios (fractions), and page faults per second (all faults, minor and major).
    Returns the values and, for each one that could not be computed, why."""
    values, missing = {}, {}
    for column, num, den in PERF_RATIOS:
        a, b = counts.get(num, {}).get("value"), counts.get(den, {}).get("value")
        values[column] = ratio(a, b)
        if math.isnan(values[column]):
            missing[column] = f"perf could not count {num}/{den} here (no hardware PMU?)"
    faults = counts.get("page-faults", {}).get("value")
    values["page_faults_per_s"] = ratio(faults, runtime_s)
    if math.isnan(values["page_faults_per_s"]):
        missing["page_faults_per_s"] = "perf did not count page-faults"
    return values, missing
