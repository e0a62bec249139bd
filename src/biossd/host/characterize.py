"""Measure a device the way the paper's spec tables describe one (Lee, Min and Yoon 2015, Tables 3 and 4).

``biossd device characterize PATH`` runs fio on the filesystem holding PATH. It measures
sequential read and write throughput (1 MiB blocks) and random 4 KiB read and write IOPS at queue
depths 1 and 32, each with direct I/O and with buffered I/O, plus latency percentiles. Results
go to a JSON record and to a row shaped like ``reference/paper_devices.csv``.

The test file is written in full first (not timed), so that no job reads holes, which a
filesystem answers without touching the device. Each of the :data:`JOBS` then gets an equal share
of the time budget. The test file is removed afterwards. The run is refused when the filesystem
has too little free space.

Buffered jobs start cold: fio drops the file's pages first (``invalidate=1``). Buffered reads make
one pass, never a second pass from the cache. Write jobs end with ``fsync``. Besides fio's own
figures, which for buffered writes count only the time to dirty the page cache, each write job
records ``effective_iops`` and ``effective_mb_per_s``: its bytes over the wall time of the whole
job, writeback included.
"""

from __future__ import annotations

import json
import shutil
import subprocess
import time
import uuid
from pathlib import Path
from typing import Any

from biossd.core.errors import BiossdError
from biossd.core.owners import ProcessRef, dies_with_parent
from biossd.core.units import parse_size
from biossd.host import devices, hostlock

MB = 1_000_000
SEQ_BLOCK = "1M"
RANDOM_BLOCK = "4k"
DEPTHS = (1, 32)
DEFAULT_FILE_BYTES = 256 << 20
MIN_FILE_BYTES = 64 << 20
#: fio's test file in the measured directory: this prefix and a random suffix.
TEST_FILE_PREFIX = ".biossd-characterize-"
#: Leave this share of the free space untouched.
FREE_SPACE_SHARE = 0.5
#: The shortest fio job: a budget of a few seconds (the test suite's) gives each of the 12 jobs
#: this much (passed to fio in milliseconds); the default budget (120 s) gives each 10 s.
MIN_JOB_S = 0.25
MS_PER_S = 1000
PERCENTILES = ("50.000000", "99.000000")

#: (name, fio rw, block size, queue depth); each is run with direct I/O and buffered.
JOBS = (
    ("seq_write", "write", SEQ_BLOCK, 1),
    ("seq_read", "read", SEQ_BLOCK, 1),
    *((f"rand_read_qd{d}", "randread", RANDOM_BLOCK, d) for d in DEPTHS),
    *((f"rand_write_qd{d}", "randwrite", RANDOM_BLOCK, d) for d in DEPTHS),
)


class CharacterizeError(BiossdError, RuntimeError):
    pass


def fio_argv(path: Path, rw: str, block: str, depth: int, direct: bool, runtime_s: float,
             size_bytes: int, name: str) -> list[str]:
    argv = [
        "fio", f"--name={name}", f"--filename={path}", f"--rw={rw}", f"--bs={block}",
        f"--size={size_bytes}", f"--iodepth={depth}", f"--direct={int(direct)}",
        f"--ioengine={'libaio' if depth > 1 else 'psync'}", f"--runtime={round(runtime_s * MS_PER_S)}ms",
        "--invalidate=1", "--output-format=json", "--randrepeat=1", "--norandommap", "--thread",
    ]
    if rw in ("read", "randread"):
        if direct:
            argv.append("--time_based")  # uncached: repeat passes until the budget
    else:
        argv.append("--end_fsync=1")
    return argv


#: How often a running fio job is checked against the owner's life.
_OWNER_POLL_S = 0.2


def _fio(argv: list[str], owner: ProcessRef | None = None) -> subprocess.CompletedProcess[str]:
    """Run one fio job; if ``owner`` (the Nextflow that asked) dies meanwhile, fio is killed
    and the characterization stops, rather than load a device nobody measures any more. fio
    also dies with this process, even a SIGKILLed one; it runs its job as a thread
    (``--thread``), as a forked job process would outlive it."""
    with subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                          preexec_fn=dies_with_parent()) as proc:
        while True:
            try:
                out, err = proc.communicate(timeout=_OWNER_POLL_S)
                return subprocess.CompletedProcess(argv, proc.returncode, out, err)
            except subprocess.TimeoutExpired:
                if owner is not None and not owner.alive():
                    proc.kill()
                    proc.communicate()
                    raise CharacterizeError(f"stopped: its owner {owner.describe()} is gone") from None


def lay_out(path: Path, size_bytes: int, owner: ProcessRef | None = None) -> None:
    """Write the whole test file once, so every later job reads real blocks."""
    proc = _fio(["fio", "--name=layout", f"--filename={path}", "--rw=write", f"--bs={SEQ_BLOCK}",
                 f"--size={size_bytes}", "--direct=1", "--end_fsync=1", "--output-format=json", "--thread"], owner)
    if proc.returncode != 0:
        raise CharacterizeError(f"fio could not write the test file {path}: {proc.stderr.strip()[-500:]}")


def _result(job: dict[str, Any], rw: str, wall_s: float, block_bytes: int) -> dict[str, Any]:
    side = job["read" if "read" in rw else "write"]
    clat = side.get("clat_ns", {}).get("percentile", {})
    effective = {}
    if "write" in rw and wall_s > 0:
        effective = {"effective_mb_per_s": side["io_bytes"] / wall_s / MB,
                     "effective_iops": side["io_bytes"] / block_bytes / wall_s}
    return {
        **effective,
        "mb_per_s": side["bw_bytes"] / MB,
        "iops": side["iops"],
        "bytes": side["io_bytes"],
        "runtime_s": side["runtime"] / 1000.0,
        "lat_p50_ms": clat.get(PERCENTILES[0], 0) / 1e6 if clat else None,
        "lat_p99_ms": clat.get(PERCENTILES[1], 0) / 1e6 if clat else None,
    }


def characterize(path: Path, budget_s: float = 120.0, file_bytes: int | None = None,
                 owner: ProcessRef | None = None) -> dict[str, Any]:
    """fio's four numbers (and more) for the device holding ``path``, under the host lock;
    stopped if ``owner`` dies."""
    path = Path(path)
    if shutil.which("fio") is None:
        raise CharacterizeError("fio is not installed (Debian package fio)")
    if not path.is_dir():
        raise CharacterizeError(f"{path} is not a directory")
    free = shutil.disk_usage(path).free
    size = file_bytes or min(DEFAULT_FILE_BYTES, int(free * FREE_SPACE_SHARE))
    if size < MIN_FILE_BYTES or size > free * FREE_SPACE_SHARE:
        raise CharacterizeError(
            f"{path} has {free >> 20} MiB free: characterize needs a test file of at least "
            f"{MIN_FILE_BYTES >> 20} MiB using at most {FREE_SPACE_SHARE:.0%} of the free space"
        )
    runs = [(job, direct) for direct in (True, False) for job in JOBS]
    job_s = max(MIN_JOB_S, budget_s / len(runs))
    test_file = path / f"{TEST_FILE_PREFIX}{uuid.uuid4().hex[:8]}"
    results: dict[str, dict[str, Any]] = {}
    # fio measures the device: no profiled run (or other characterization) may share it meanwhile.
    # The record names the test file, which `biossd cleanup` removes if this process is SIGKILLed.
    with hostlock.HostLock("biossd device characterize", out=str(path), owner=owner, test_file=str(test_file)):
        _run_jobs(test_file, size, runs, job_s, results, owner)
    return _record(path, size, job_s, results)


def _run_jobs(test_file: Path, size: int, runs, job_s: float, results: dict[str, dict[str, Any]],
              owner: ProcessRef | None) -> None:
    """Lay out ``test_file`` and run every fio job on it; the file is removed however it ends."""
    try:
        lay_out(test_file, size, owner)
        for (name, rw, block, depth), direct in runs:
            key = f"{'direct' if direct else 'buffered'}_{name}"
            t0 = time.monotonic()
            proc = _fio(fio_argv(test_file, rw, block, depth, direct, job_s, size, key), owner)
            wall_s = time.monotonic() - t0
            if proc.returncode != 0:
                raise CharacterizeError(f"fio job {key} failed: {proc.stderr.strip()[-500:]}")
            block_bytes = parse_size(block)
            results[key] = _result(json.loads(proc.stdout)["jobs"][0], rw, wall_s, block_bytes)
    finally:
        test_file.unlink(missing_ok=True)


def _facts(path: Path) -> dict[str, Any]:
    """What a record says of the device holding ``path``: the disk, its mount, its emulation."""
    from biossd.host.hdd import emulate

    return {
        "path": str(path.resolve()),
        "device": devices.device_facts(devices.device_of_path(path)),
        "mount": devices.mount_facts(path),
        "emulation": emulate.run_record(path),
    }


def _record(path: Path, size: int, job_s: float, results: dict[str, dict[str, Any]]) -> dict[str, Any]:
    facts = _facts(path)
    return {
        **facts,
        "file_bytes": size,
        "job_s": job_s,
        "fio_version": subprocess.run(["fio", "--version"], capture_output=True, text=True).stdout.strip(),
        "results": results,
        "spec_row": spec_row(results, facts["device"]["name"]),
    }


#: What must be equal for an earlier record to stand for the device a path is on now (a study
#: re-run with --device_records), besides the emulation profile (none for a real disk): a real
#: disk by its identity and file system; an emulated one by its model (the loop device and
#: backing file are new with every emulation).
NATIVE_IDENTITY = (("device", "disk"), ("device", "model"), ("device", "serial"), ("device", "size_bytes"),
                   ("mount", "fstype"))
EMULATED_IDENTITY = (("emulation", "emulated"), ("emulation", "mechanism"), ("mount", "fstype"))


def reuse(record_file: Path, path: Path) -> dict[str, Any]:
    """The record of an earlier characterization (``record_file``) for the device holding
    ``path``, instead of measuring it again: refused unless it was measured on the same device
    (:data:`NATIVE_IDENTITY`, :data:`EMULATED_IDENTITY`). The copy keeps the measurements and
    describes the device as it is now (its loop device, say, is new with every emulation); it says
    where it came from and what the device was then (``reused``)."""
    from biossd.core.files import sha256_file
    from biossd.host import devicerecord

    record_file = Path(record_file)
    try:
        record = devicerecord.read(record_file)
    except devicerecord.DeviceRecordError as err:
        raise CharacterizeError(str(err)) from None
    if record.get("stub") or record.get("synthetic"):
        raise CharacterizeError(f"{record_file}: a {'stub-run' if record.get('stub') else 'synthetic'} device record, "
                                "not a measurement: it cannot stand for a device (leave out --device_records)")
    now = _facts(path)
    keys = EMULATED_IDENTITY if now["emulation"] else NATIVE_IDENTITY
    differ = []
    was_on, is_on = ((r.get("emulation") or {}).get("profile") for r in (record, now))
    if was_on != is_on:
        differ.append(f"emulation {was_on or 'none (a real disk)'} there, {is_on or 'none (a real disk)'} here")
    for part, key in keys:
        was, is_ = (record.get(part) or {}).get(key), (now[part] or {}).get(key)
        if was != is_:
            differ.append(f"{part}.{key} {was!r} there, {is_!r} here")
    if differ:
        raise CharacterizeError(f"{record_file} was measured on another device than the one {path} is on: "
                                + "; ".join(differ) + ". Measure it again (leave out --device_records).")
    return {**record, **now, "spec_row": {**record["spec_row"], "device": now["device"]["name"]},
            "reused": {"from": str(record_file.resolve()), "sha256": sha256_file(record_file),
                       "measured_path": record.get("path"), "path": now["path"],
                       "measured_on": {key: record.get(key) for key in now},
                       "matched_on": ["emulation.profile", *(f"{part}.{key}" for part, key in keys)]}}


def spec_row(results: dict[str, dict[str, Any]], device: str) -> dict[str, Any]:
    """The measured counterpart of a row of the paper's Tables 3/4 (direct I/O; IOPS at QD1
    and QD32)."""
    return {
        "device": device,
        "seq_read_mbs": results["direct_seq_read"]["mb_per_s"],
        "seq_write_mbs": results["direct_seq_write"]["mb_per_s"],
        "rand_read_iops": results["direct_rand_read_qd1"]["iops"],
        "rand_write_iops": results["direct_rand_write_qd1"]["iops"],
        "rand_read_iops_qd32": results["direct_rand_read_qd32"]["iops"],
        "rand_write_iops_qd32": results["direct_rand_write_qd32"]["iops"],
    }
