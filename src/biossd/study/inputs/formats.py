"""The published data sets' formats as the recipes read and write them: FASTQ and FASTA records
(plain or gzipped), a seeded subsample of whole records, and a genome written as aligners and GATK
read it. An error names the file and the line that is not its format."""

from __future__ import annotations

import gzip
from pathlib import Path
from typing import IO, Any, Iterator

import numpy as np

from biossd.core.errors import BiossdError

#: A compressed source is read through gzip when its name ends so.
GZIP_SUFFIX = ".gz"


class RecipeError(BiossdError, ValueError):
    """A source file that is not what its recipe reads; the message names the file and record."""


def open_text(path: Path) -> IO[str]:
    """A source file as text, decompressed when its name ends in ``.gz``."""
    if path.name.endswith(GZIP_SUFFIX):
        return gzip.open(path, "rt", encoding="ascii", errors="strict", newline="")
    return open(path, encoding="ascii", errors="strict", newline="")


def fastq_records(path: Path) -> Iterator[tuple[str, str, str]]:
    """(name, sequence, qualities) of each four-line FASTQ record; a malformed record is an
    error naming the file and line."""
    with open_text(path) as f:
        line_no = 0
        while True:
            head = f.readline()
            if not head:
                return
            seq, plus, qual = f.readline(), f.readline(), f.readline()
            line_no += 4
            if not head.startswith("@") or not plus.startswith("+") or len(seq.rstrip()) != len(qual.rstrip()):
                raise RecipeError(f"{path}: line {line_no - 3} does not begin a FASTQ record (@name, sequence, +, "
                                  "qualities of the same length): is the manifest's file the one it names?")
            yield head[1:].split()[0], seq.rstrip(), qual.rstrip()


def fasta_records(path: Path) -> Iterator[tuple[str, str, str]]:
    """(name, rest of the header, sequence) of each FASTA record."""
    name, rest, seq = None, "", []
    with open_text(path) as f:
        for line_no, line in enumerate(f, 1):
            if line.startswith(">"):
                if name is not None:
                    yield name, rest, "".join(seq)
                parts = line[1:].rstrip().split(maxsplit=1)
                if not parts:
                    raise RecipeError(f"{path}: line {line_no}: a FASTA header without a name")
                name, rest, seq = parts[0], parts[1] if len(parts) > 1 else "", []
            elif name is None and line.strip():
                raise RecipeError(f"{path}: line {line_no}: sequence before the first '>' header: not FASTA")
            else:
                seq.append(line.strip())
    if name is not None:
        yield name, rest, "".join(seq)


def pick(record_bytes: np.ndarray, size_bytes: int, seed: int) -> np.ndarray:
    """The indices (ascending) of a seeded random subset of records whose bytes first reach
    ``size_bytes`` (all of them when the data set is smaller; at least one)."""
    order = np.random.default_rng(seed).permutation(record_bytes.size)
    total = np.cumsum(record_bytes[order])
    k = min(int(np.searchsorted(total, size_bytes)) + 1, record_bytes.size)
    return np.sort(order[:k])


def kept(record_bytes: Any, size_bytes: int, seed: int, path: Path, what: str) -> np.ndarray:
    """Which records (a mask in the source's order) the seeded subsample of :func:`pick` keeps; a
    source without a record is an error naming it."""
    sizes = np.asarray(record_bytes)
    if not sizes.size:
        raise RecipeError(f"{path}: no {what} record")
    keep = np.zeros(sizes.size, dtype=bool)
    keep[pick(sizes, size_bytes, seed)] = True
    return keep


#: Bases per line of a FASTA file written here.
FASTA_LINE_BP = 60


def wrapped(seq: str) -> str:
    return "".join(seq[i:i + FASTA_LINE_BP] + "\n" for i in range(0, len(seq), FASTA_LINE_BP)) or "\n"


def write_genome(path: Path, target: Path) -> None:
    """The genome as plain FASTA, names cut at the first space (aligners and GATK use that)."""
    n = 0
    with open(target, "w") as g:
        for name, _, seq in fasta_records(path):
            g.write(f">{name}\n{wrapped(seq)}")
            n += 1
    if not n:
        raise RecipeError(f"{path}: no FASTA record: not a genome")
