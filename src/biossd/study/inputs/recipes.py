"""Recipes: a published data set's verified files turned into a study input of a given size.

Lee, Min and Yoon (2015) ran every tool on public data (their Table 5), cut to what finished in
their time limit, and grew inputs by replicating a baseline (§3.4). A manifest's ``prepare``
block (``data-manifests/*.yaml``) names one recipe here, which files of the data set play which
of the recipe's roles, and the recipe's arguments. A recipe writes the files of a study input
kind under the names the catalogue stages (the same names as the synthetic kind of
:mod:`biossd.study.inputs.synthgen`, without its truth files: published data has none), so every
tool reads a prepared input exactly as it reads a synthetic one.

Each recipe subsamples whole records, seeded, to the requested size of the kind's main file(s)
(a random order of the records is taken until their bytes reach the size; the records keep the
data set's order), then writes that baseline ``scale`` times with names prefixed ``x<replica>_``
so that names stay unique, as the synthetic kinds do.
"""

from __future__ import annotations

import gzip
import itertools
import shutil
from dataclasses import dataclass
from pathlib import Path
from typing import IO, Any, Callable, Iterator

import numpy as np

from biossd.core.errors import BiossdError
from biossd.study.inputs.synthgen import QUERY_PROTEINS

#: A compressed source is read through gzip when its name ends so.
GZIP_SUFFIX = ".gz"


class RecipeError(BiossdError, ValueError):
    """A source file that is not what its recipe reads; the message names the file and record."""


@dataclass(frozen=True)
class Recipe:
    """One way to make a study input of ``kind`` from files playing ``roles``; ``optional_roles``
    may be absent; ``args`` are the arguments it takes (name -> what it is)."""

    name: str
    kind: str
    roles: tuple[str, ...]
    make: Callable[[dict[str, Path], Path, int, int, int, dict[str, Any]], dict[str, Any]]
    description: str
    args: dict[str, str]
    optional_roles: tuple[str, ...] = ()


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


def _mate_name(name: str) -> str:
    return name[:-2] if name.endswith(("/1", "/2")) else name


def fastq_pairs(src: dict[str, Path], out: Path, size_bytes: int, seed: int, scale: int,
                args: dict[str, Any]) -> dict[str, Any]:
    """Paired reads (``reads_1.fq``, ``reads_2.fq``; ``size_bytes`` of both) subsampled by pair,
    and the genome (``genome.fa``). Mates must come in the same order with the same names."""
    sizes = []
    for n, (r1, r2) in enumerate(itertools.zip_longest(fastq_records(src["reads_1"]), fastq_records(src["reads_2"])), 1):
        if r1 is None or r2 is None:
            raise RecipeError(f"{src['reads_1' if r1 is None else 'reads_2']}: ends at record {n - 1}, its mate file "
                              "goes on: the two files are not one library's pairs")
        if _mate_name(r1[0]) != _mate_name(r2[0]):
            raise RecipeError(f"{src['reads_2']}: record {n} is {r2[0]!r} but {src['reads_1']} has {r1[0]!r} there: "
                              "the mates are not in the same order")
        sizes.append(2 * (len(r1[0]) + 2 * len(r1[1]) + 8))
    keep = kept(sizes, size_bytes, seed, src["reads_1"], "FASTQ")
    for mate in (1, 2):
        with open(out / f"reads_{mate}.fq", "w") as f:
            for k in range(scale):
                for i, (name, seq, qual) in enumerate(fastq_records(src[f"reads_{mate}"])):
                    if keep[i]:
                        f.write(f"@x{k}_{_mate_name(name)}/{mate}\n{seq}\n+\n{qual}\n")
    _write_genome(src["genome"], out / "genome.fa")
    return {"files": ["genome.fa", "reads_1.fq", "reads_2.fq"], "records": int(keep.sum()) * scale,
            "source_records": len(sizes)}


def fastq_rnaseq(src: dict[str, Path], out: Path, size_bytes: int, seed: int, scale: int,
                 args: dict[str, Any]) -> dict[str, Any]:
    """Single RNA-seq reads (``reads.fq``, ``size_bytes``) subsampled, the genome (``genome.fa``)
    and its gene models (``genes.gtf``) as they are."""
    sizes = [len(n) + 2 * len(s) + 6 for n, s, _ in fastq_records(src["reads"])]
    keep = kept(sizes, size_bytes, seed, src["reads"], "FASTQ")
    with open(out / "reads.fq", "w") as f:
        for k in range(scale):
            f.writelines(f"@x{k}_{name}\n{seq}\n+\n{qual}\n"
                         for i, (name, seq, qual) in enumerate(fastq_records(src["reads"])) if keep[i])
    _write_genome(src["genome"], out / "genome.fa")
    with open_text(src["annotation"]) as f, open(out / "genes.gtf", "w") as g:
        shutil.copyfileobj(f, g)
    return {"files": ["genome.fa", "genes.gtf", "reads.fq"], "records": int(keep.sum()) * scale,
            "source_records": len(sizes)}


def fasta_database(src: dict[str, Path], out: Path, size_bytes: int, seed: int, scale: int,
                   args: dict[str, Any]) -> dict[str, Any]:
    """A protein database (``proteins.fa``, ``size_bytes``) subsampled by sequence, and a fixed
    query set (``queries.fa``): ``queries`` sequences of the subsample drawn with the seed, not
    replicated by ``scale`` (the database grows, the queries do not, as in the synthetic kind)."""
    sizes = [len(n) + len(r) + len(s) + 4 for n, r, s in fasta_records(src["database"])]
    keep = kept(sizes, size_bytes, seed, src["database"], "FASTA")
    chosen = np.flatnonzero(keep)
    n_queries = min(int(args.get("queries", QUERY_PROTEINS)), int(chosen.size))
    queries = set(np.random.default_rng(seed + 1).choice(chosen, n_queries, replace=False).tolist())
    with open(out / "proteins.fa", "w") as db, open(out / "queries.fa", "w") as q:
        for k in range(scale):
            for i, (name, _, seq) in enumerate(fasta_records(src["database"])):
                if keep[i]:
                    db.write(f">x{k}_{name}\n{_wrapped(seq)}")
                    if k == 0 and i in queries:
                        q.write(f">q_{name}\n{_wrapped(seq)}")
    return {"files": ["proteins.fa", "queries.fa"], "records": int(chosen.size) * scale,
            "source_records": len(sizes)}


def flowgrams_dat(src: dict[str, Path], out: Path, size_bytes: int, seed: int, scale: int,
                  args: dict[str, Any]) -> dict[str, Any]:
    """454 flowgrams in AmpliconNoise's ``.dat`` (a ``reads flows`` header line, then ``id
    n_flows values...`` per read) subsampled by read into ``flows.dat``."""
    with open_text(src["flowgrams"]) as f:
        header = f.readline().split()
        lines = f.readlines()
    if len(header) != 2 or not all(h.isdigit() for h in header):
        raise RecipeError(f"{src['flowgrams']}: line 1 is not AmpliconNoise's '<reads> <flows>' header")
    if int(header[0]) != len(lines):
        raise RecipeError(f"{src['flowgrams']}: the header says {header[0]} reads, the file has {len(lines)}")
    chosen = pick(np.array([len(x) for x in lines]), size_bytes, seed)
    with open(out / "flows.dat", "w") as f:
        f.write(f"{chosen.size * scale} {header[1]}\n")
        for k in range(scale):
            f.writelines(f"x{k}_{lines[i]}" for i in chosen)
    return {"files": ["flows.dat"], "records": int(chosen.size) * scale, "source_records": len(lines)}


def fasta_sequences(src: dict[str, Path], out: Path, size_bytes: int, seed: int, scale: int,
                    args: dict[str, Any]) -> dict[str, Any]:
    """DNA sequences (``promoters.fa``, ``size_bytes``) subsampled by sequence, otherwise unchanged."""
    sizes = [len(n) + len(s) + 4 for n, _, s in fasta_records(src["sequences"])]
    keep = kept(sizes, size_bytes, seed, src["sequences"], "FASTA")
    with open(out / "promoters.fa", "w") as f:
        for k in range(scale):
            f.writelines(f">x{k}_{name}\n{_wrapped(seq)}"
                         for i, (name, _, seq) in enumerate(fasta_records(src["sequences"])) if keep[i])
    return {"files": ["promoters.fa"], "records": int(keep.sum()) * scale, "source_records": len(sizes)}


#: Rows of a Cluster 3.0 matrix that are not genes: its header, and an optional EWEIGHT row.
CLUSTER_HEADER_ROWS = ("EWEIGHT",)


def matrix_rows(src: dict[str, Path], out: Path, size_bytes: int, seed: int, scale: int,
                args: dict[str, Any]) -> dict[str, Any]:
    """An expression matrix in Cluster 3.0 format (tab-separated, a header row, an optional
    EWEIGHT row, then one row per gene: id, name, weight, values) subsampled by gene into
    ``expression.txt``; every row must have the header's columns."""
    with open_text(src["matrix"]) as f:
        header = f.readline()
        rows = f.readlines()
    n_columns = len(header.rstrip("\r\n").split("\t"))
    if n_columns < 4:
        raise RecipeError(f"{src['matrix']}: line 1 has {n_columns} tab-separated columns; Cluster 3.0's header "
                          "has ID, NAME, GWEIGHT and at least one sample")
    fixed = [r for r in rows[:1] if r.split("\t", 1)[0] in CLUSTER_HEADER_ROWS]
    genes = rows[len(fixed):]
    for line_no, row in enumerate(genes, 2 + len(fixed)):
        if len(row.rstrip("\r\n").split("\t")) != n_columns:
            raise RecipeError(f"{src['matrix']}: line {line_no} has not the header's {n_columns} columns")
    if not genes:
        raise RecipeError(f"{src['matrix']}: no gene row")
    chosen = pick(np.array([len(r) for r in genes]), size_bytes, seed)
    with open(out / "expression.txt", "w") as f:
        f.write(header)
        f.writelines(fixed)
        for k in range(scale):
            for i in chosen:
                gene, name, rest = genes[i].split("\t", 2)
                f.write(f"x{k}_{gene}\tx{k}_{name}\t{rest}")
    return {"files": ["expression.txt"], "records": int(chosen.size) * scale, "source_records": len(genes)}


#: Bases per line of a FASTA file written here.
FASTA_LINE_BP = 60


def _wrapped(seq: str) -> str:
    return "".join(seq[i:i + FASTA_LINE_BP] + "\n" for i in range(0, len(seq), FASTA_LINE_BP)) or "\n"


def _write_genome(path: Path, target: Path) -> None:
    """The genome as plain FASTA, names cut at the first space (aligners and GATK use that)."""
    n = 0
    with open(target, "w") as g:
        for name, _, seq in fasta_records(path):
            g.write(f">{name}\n{_wrapped(seq)}")
            n += 1
    if not n:
        raise RecipeError(f"{path}: no FASTA record: not a genome")


RECIPES: dict[str, Recipe] = {r.name: r for r in (
    Recipe("fastq_pairs", "reads", ("reads_1", "reads_2", "genome"), fastq_pairs,
           "paired FASTQ subsampled by pair, with the genome", {}),
    Recipe("fastq_rnaseq", "rnaseq", ("reads", "genome", "annotation"), fastq_rnaseq,
           "RNA-seq FASTQ subsampled by read, with the genome and its GTF", {}),
    Recipe("fasta_database", "proteins", ("database",), fasta_database,
           "a FASTA database subsampled by sequence, and a seeded fixed query subset",
           {"queries": "how many query sequences (default: the synthetic kind's)"}),
    Recipe("flowgrams_dat", "flowgrams", ("flowgrams",), flowgrams_dat,
           "AmpliconNoise .dat flowgrams subsampled by read", {}),
    Recipe("fasta_sequences", "promoters", ("sequences",), fasta_sequences,
           "DNA sequences (FASTA) subsampled by sequence", {}),
    Recipe("matrix_rows", "expression", ("matrix",), matrix_rows,
           "a Cluster 3.0 expression matrix subsampled by gene", {}),
)}
