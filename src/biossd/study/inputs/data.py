"""Synthetic inputs of controlled size with a fixed seed (same seed and size → same bytes).

The paper's inputs (Lee, Min and Yoon 2015, Table 5) are public data sets of many gigabytes;
offline machines, CI and the test profile use synthetic stand-ins generated here instead. Each kind writes its files and a
``synth.json`` record (kind, seed, requested size, record count, sha256 of every file).
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable

import numpy as np

from biossd.core.errors import BiossdError
from biossd.core.files import atomic_write_text, sha256_file
from biossd.core.partial import atomic_dir
from biossd.study.inputs import synthgen
from biossd.study.inputs.kinds import DESCRIPTIONS, INPUT_RECORDS, SYNTH_RECORD

READ_LENGTH_BP = 100
MAPQ = 60
#: GC fraction of the synthetic genome (human genome average, ~41%).
GC_FRACTION = 0.41
CONTIG_LENGTHS_BP = (600_000, 400_000)
#: Phred+33 base qualities drawn from a skewed distribution like Illumina's (mostly 30–40).
QUALITY_CHARS = np.frombuffer(b"#+5?ABCDEFGHI", dtype=np.uint8)
QUALITY_WEIGHTS = np.array([1, 1, 2, 4, 4, 6, 8, 10, 12, 14, 16, 12, 10], dtype=float)
#: Compressed BAM bytes per 100 bp read with the qualities above, measured with samtools 1.16.1
#: (used to turn a requested file size into a read count).
BAM_BYTES_PER_READ = 101.0
REVERSE_FLAG = 16
_BASES = np.frombuffer(b"ACGT", dtype=np.uint8)


class SynthError(BiossdError, RuntimeError):
    pass


def _genome(rng: np.random.Generator) -> list[np.ndarray]:
    at, gc = (1 - GC_FRACTION) / 2, GC_FRACTION / 2
    probs = [at, gc, gc, at]
    return [_BASES[rng.choice(4, size=n, p=probs)] for n in CONTIG_LENGTHS_BP]


def _sam_records(n_reads: int, rng: np.random.Generator) -> tuple[list[str], list[str]]:
    """SAM header lines and ``n_reads`` perfectly mapped 100 bp reads in random order; each
    record starts with its read number so that replicas can be renamed."""
    contigs = _genome(rng)
    lengths = np.array(CONTIG_LENGTHS_BP)
    contig_idx = rng.choice(len(contigs), size=n_reads, p=lengths / lengths.sum())
    starts = (rng.random(n_reads) * (lengths[contig_idx] - READ_LENGTH_BP)).astype(np.int64)
    reverse = rng.random(n_reads) < 0.5
    quals = QUALITY_CHARS[
        rng.choice(len(QUALITY_CHARS), size=(n_reads, READ_LENGTH_BP), p=QUALITY_WEIGHTS / QUALITY_WEIGHTS.sum())
    ]
    header = ["@HD\tVN:1.6\tSO:unsorted"]
    header += [f"@SQ\tSN:chr{i + 1}\tLN:{n}" for i, n in enumerate(CONTIG_LENGTHS_BP)]
    records = []
    for i in range(n_reads):
        c, s = contig_idx[i], starts[i]
        seq = contigs[c][s : s + READ_LENGTH_BP].tobytes().decode()
        records.append(
            f"{i:09d}\t{REVERSE_FLAG if reverse[i] else 0}\tchr{c + 1}\t{s + 1}\t{MAPQ}\t"
            f"{READ_LENGTH_BP}M\t*\t0\t0\t{seq}\t{quals[i].tobytes().decode()}"
        )
    return header, records


def replicate_sam(header: list[str], records: list[str], scale: int) -> bytes:
    """The baseline records ``scale`` times (Lee, Min and Yoon 2015, §3.4: input size grown by replicating a
    baseline), each replica's read names prefixed ``x<replica>_`` so names stay unique."""
    lines = list(header)
    for replica in range(scale):
        lines += [f"x{replica}_r{rec}" for rec in records]
    return ("\n".join(lines) + "\n").encode()


def synth_bam(out_dir: Path, size_bytes: int, seed: int, scale: int = 1) -> dict[str, object]:
    """An unsorted BAM (``reads.bam``): a baseline of about ``size_bytes`` replicated ``scale``
    times, converted by samtools."""
    if shutil.which("samtools") is None:
        raise SynthError("samtools is not on PATH: install it (`make install`) to write BAM files")
    n_reads = max(1, int(round(size_bytes / BAM_BYTES_PER_READ)))
    header, records = _sam_records(n_reads, np.random.default_rng(seed))
    sam = replicate_sam(header, records, scale)
    target = out_dir / "reads.bam"
    tmp = out_dir / ".reads.bam.tmp"
    proc = subprocess.run(
        ["samtools", "view", "--no-PG", "-b", "-o", str(tmp), "-"], input=sam, capture_output=True
    )
    if proc.returncode != 0:
        tmp.unlink(missing_ok=True)
        raise SynthError(f"samtools view failed: {proc.stderr.decode().strip()}")
    tmp.replace(target)
    return {"files": ["reads.bam"], "records": n_reads * scale}


@dataclass(frozen=True)
class Kind:
    name: str
    description: str
    make: Callable[[Path, int, int, int], dict[str, object]]


#: Kind name -> its generator (out_dir, size_bytes, seed, scale) -> record.
_MAKERS = {
    "bam": synth_bam,
    "genome": synthgen.genome_kind,
    "reads": synthgen.reads,
    "vcf": synthgen.vcf,
    "proteins": synthgen.proteins,
    "expression": synthgen.expression,
    "flowgrams": synthgen.flowgrams,
    "promoters": synthgen.promoters,
    "genesets": synthgen.genesets,
    "rnaseq": synthgen.rnaseq,
}
if set(_MAKERS) != set(DESCRIPTIONS):  # one list of kinds, two halves
    raise AssertionError(f"input kinds without a generator or description: {set(_MAKERS) ^ set(DESCRIPTIONS)}")
KINDS = {name: Kind(name, DESCRIPTIONS[name], make) for name, make in _MAKERS.items()}


def synth(kind: str, out_dir: Path, size_bytes: int, seed: int, scale: int = 1) -> dict[str, object]:
    """Generate ``kind`` (baseline of ``size_bytes``, replicated ``scale`` times) into
    ``out_dir`` and write ``synth.json``; returns that record (:func:`write_input`)."""
    if scale < 1:
        raise SynthError(f"--scale must be a whole number >= 1, got {scale}")
    if kind not in KINDS:
        raise SynthError(f"unknown kind {kind!r}; `biossd data synth --list` shows {sorted(KINDS)}")
    _check_room(Path(out_dir), size_bytes, scale)

    def make(partial: Path) -> dict[str, object]:
        made = KINDS[kind].make(partial, size_bytes, seed, scale)
        return {"kind": kind, "seed": seed, "requested_size_bytes": size_bytes, "scale": scale,
                "records": made["records"], "files": made["files"]}

    return write_input(out_dir, make, SYNTH_RECORD)


def _check_room(out_dir: Path, size_bytes: int, scale: int) -> None:
    """Refuse what cannot be made here, before anything is: an empty baseline, a baseline larger
    than the memory available (it is generated in memory), or more bytes than the target's file
    system has free (``--size`` times ``--scale``)."""
    from biossd.core.units import format_size

    if size_bytes < 1:
        raise SynthError(f"--size must be at least 1 byte, got {size_bytes}")
    from biossd.host.hostfacts import meminfo_bytes

    # MemAvailable counts the page cache the kernel can reclaim, not only free pages.
    available = meminfo_bytes("MemAvailable") or os.sysconf("SC_AVPHYS_PAGES") * os.sysconf("SC_PAGE_SIZE")
    if size_bytes > available:
        raise SynthError(f"--size {format_size(size_bytes)}: the baseline is generated in memory, and this host has "
                         f"{format_size(available)} available; give a smaller --size and grow it with --scale")
    where = out_dir
    while not where.exists() and where != where.parent:
        where = where.parent
    free = shutil.disk_usage(where).free
    if size_bytes * scale > free:
        raise SynthError(f"-o {out_dir}: --size {format_size(size_bytes)} x --scale {scale} = "
                         f"{format_size(size_bytes * scale)} does not fit in the {format_size(free)} free on {where}'s "
                         "file system")


def write_input(out_dir: Path, make: Callable[[Path], dict[str, Any]], record_name: str) -> dict[str, Any]:
    """Make a study input's files with ``make(partial)`` (which returns its record, ``files`` a
    list of names) and move them into ``out_dir`` with the record ``record_name`` (``files``
    then maps each name to its size and sha256).

    The files are made in a partial directory beside ``out_dir`` and moved in only when all are
    complete, the record last, so an interrupted run leaves no record beside half-new files.
    ``out_dir`` may be new, empty, or an earlier input (whose recorded files are replaced); any
    other file there is refused, never written over."""
    out_dir = Path(out_dir)
    replaced = _replaceable(out_dir)
    out_dir.parent.mkdir(parents=True, exist_ok=True)
    with atomic_dir(out_dir, publish=False) as partial:
        record = make(partial)
        names = list(record["files"])
        record["files"] = {name: {"size_bytes": (partial / name).stat().st_size, "sha256": sha256_file(partial / name)}
                           for name in names}
        out_dir.mkdir(exist_ok=True)
        for name in INPUT_RECORDS:
            (out_dir / name).unlink(missing_ok=True)  # no record while the files change
        for name in replaced - set(names):
            (out_dir / name).unlink(missing_ok=True)
        for name in names:
            os.replace(partial / name, out_dir / name)
        atomic_write_text(out_dir / record_name, json.dumps(record, indent=2, sort_keys=True) + "\n")
    return record


def _replaceable(out_dir: Path) -> set[str]:
    """The files of an earlier input in ``out_dir`` that a new one may replace: each a plain name
    of its record, a regular file there whose size and sha256 are still the record's. Anything
    else in the directory (a file the record does not list, a listed file changed since, a name
    that leaves the directory) is refused, and nothing is written."""
    if not out_dir.exists():
        return set()
    if not out_dir.is_dir() or out_dir.is_symlink():
        raise SynthError(f"-o {out_dir} exists and is not a directory; give a new directory")
    present = {p.name for p in out_dir.iterdir()}
    if not present:
        return set()
    earlier: dict[str, Any] = {}
    for name in INPUT_RECORDS:
        try:
            files = json.loads((out_dir / name).read_text())["files"]
        except (OSError, ValueError, KeyError, TypeError):
            continue
        if isinstance(files, dict):
            earlier = files
            break
    own = {name for name, info in earlier.items() if name in present and _still_made(out_dir, name, info)}
    changed = sorted(name for name in earlier if name in present and name not in own)
    if changed:
        raise SynthError(f"-o {out_dir}: {', '.join(changed[:5])} changed since biossd data made "
                         f"{'it' if len(changed) == 1 else 'them'} (size or sha256 not the record's); nothing was "
                         "written: give a new directory, or move the changed files away")
    others = sorted(present - own - set(INPUT_RECORDS))
    if others:
        raise SynthError(f"-o {out_dir} holds files biossd data did not make ({', '.join(others[:5])}); "
                         "nothing was written: give a new or empty directory")
    return own


def _still_made(out_dir: Path, name: Any, info: Any) -> bool:
    """Whether ``name`` of an input's record is a plain file name in ``out_dir`` (never a path
    out of it) whose size and sha256 are the recorded ones."""
    if not isinstance(name, str) or name in ("", ".", "..") or "/" in name or "\0" in name or not isinstance(info, dict):
        return False
    path = out_dir / name
    if path.is_symlink() or not path.is_file():
        return False
    return path.stat().st_size == info.get("size_bytes") and sha256_file(path) == info.get("sha256")
