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
so that names stay unique, as the synthetic kinds do. The formats' readers are in
:mod:`~biossd.study.inputs.formats`; the recipes that align, convert or cut alignments (samtools,
BWA) in :mod:`~biossd.study.inputs.alignments`.
"""

from __future__ import annotations

import itertools
import shutil
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable

import numpy as np

from biossd.study.inputs import alignments
from biossd.study.inputs.formats import RecipeError, fasta_records, fastq_records, kept, open_text, pick, wrapped, write_genome
from biossd.study.inputs.synthgen import QUERY_PROTEINS


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
    write_genome(src["genome"], out / "genome.fa")
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
    write_genome(src["genome"], out / "genome.fa")
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
                    db.write(f">x{k}_{name}\n{wrapped(seq)}")
                    if k == 0 and i in queries:
                        q.write(f">q_{name}\n{wrapped(seq)}")
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
            f.writelines(f">x{k}_{name}\n{wrapped(seq)}"
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


#: GEO's platform tables (SOFT ``!platform_table_begin`` ... ``!platform_table_end``, as in a GPL's
#: ``.annot`` file): the columns the ErmineJ annotation takes, by their names in either table.
GEO_TABLE_BEGIN, GEO_TABLE_END = "!platform_table_begin", "!platform_table_end"
GEO_PROBE_COLUMN = "id"
GEO_SYMBOL_COLUMNS = ("gene symbol",)
GEO_TITLE_COLUMNS = ("gene title",)
#: GO columns: a ``.annot`` file's ``GO:Process ID`` (``GO:0006355///GO:0045893``) or a platform
#: table's ``Gene Ontology Biological Process`` (``0006355 // regulation ... // evidence /// ...``).
GEO_GO_PREFIXES = ("go:", "gene ontology ")
GO_TERM_DIGITS = 7


def _go_terms(cell: str) -> list[str]:
    """The GO ids in a GEO GO cell, as ``GO:nnnnnnn``."""
    terms = []
    for entry in cell.split("///"):
        token = entry.split("//", 1)[0].strip().removeprefix("GO:")
        if token.isdigit():
            terms.append(f"GO:{int(token):0{GO_TERM_DIGITS}d}")
    return terms


def geo_table(path: Path) -> tuple[list[str], list[list[str]]]:
    """A GEO platform table's column names and rows (the table between its begin and end marks, or
    the whole file when it has none, ``#`` comment lines skipped)."""
    with open_text(path) as f:
        lines = [ln.rstrip("\r\n") for ln in f]
    if GEO_TABLE_BEGIN in lines:
        start = lines.index(GEO_TABLE_BEGIN) + 1
        end = lines.index(GEO_TABLE_END) if GEO_TABLE_END in lines else len(lines)
        lines = lines[start:end]
    lines = [ln for ln in lines if ln and not ln.startswith(("#", "!", "^"))]
    if not lines:
        raise RecipeError(f"{path}: no table: not a GEO platform table or annotation file")
    return lines[0].split("\t"), [ln.split("\t") for ln in lines[1:]]


def geo_annotations(src: dict[str, Path], out: Path, size_bytes: int, seed: int, scale: int,
                    args: dict[str, Any]) -> dict[str, Any]:
    """A microarray platform's GEO annotation (``annotation``: a GPL's ``.annot`` or platform
    table) as ErmineJ's annotation file (``annotations.txt``: probe, gene symbol, gene name, GO
    terms joined by ``|``), subsampled by probe to about ``size_bytes``, and the gene scores
    (``scores``: a header row, then probe and score) of the probes kept (``scores.txt``)."""
    columns, rows = geo_table(src["annotation"])
    lower = [c.strip().lower() for c in columns]

    def column(names: tuple[str, ...]) -> int:
        found = [i for i, c in enumerate(lower) if c in names]
        if not found:
            raise RecipeError(f"{src['annotation']}: no column named {' or '.join(names)!r} (it has {columns})")
        return found[0]

    probe, symbol, title = column((GEO_PROBE_COLUMN,)), column(GEO_SYMBOL_COLUMNS), column(GEO_TITLE_COLUMNS)
    go = [i for i, c in enumerate(lower) if c.startswith(GEO_GO_PREFIXES)
          and (c.endswith(" id") or not c.startswith("go:"))]
    if not go:
        raise RecipeError(f"{src['annotation']}: no GO column (GO:... ID or Gene Ontology ...): ErmineJ scores GO terms")
    lines = []
    for line_no, row in enumerate(rows, 2):
        if len(row) != len(columns):
            raise RecipeError(f"{src['annotation']}: table row {line_no} has {len(row)} of the header's {len(columns)} "
                              "columns")
        terms = sorted({t for i in go for t in _go_terms(row[i])})
        lines.append((row[probe], f"{row[symbol]}\t{row[title]}\t{'|'.join(terms)}\n"))
    scores: dict[str, str] = {}
    with open_text(src["scores"]) as f:
        f.readline()
        for line_no, line in enumerate(f, 2):
            parts = line.rstrip("\r\n").split("\t")
            try:
                float(parts[1])
            except (IndexError, ValueError):
                raise RecipeError(f"{src['scores']}: line {line_no} is not 'probe<TAB>score'") from None
            scores[parts[0]] = parts[1]
    keep = kept([len(name) + len(rest) + 1 for name, rest in lines], size_bytes, seed, src["annotation"], "probe")
    with open(out / "annotations.txt", "w") as a, open(out / "scores.txt", "w") as s:
        a.write("ProbeName\tGeneSymbol\tGeneName\tGOTerms\n")
        s.write("probe\tscore\n")
        for k in range(scale):
            for i, (name, rest) in enumerate(lines):
                if keep[i]:
                    a.write(f"x{k}_{name}\t{rest}")
                    if name in scores:
                        s.write(f"x{k}_{name}\t{scores[name]}\n")
    return {"files": ["annotations.txt", "scores.txt"], "records": int(keep.sum()) * scale,
            "source_records": len(lines)}


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
    Recipe("geo_annotations", "genesets", ("annotation", "scores"), geo_annotations,
           "a GEO platform annotation as ErmineJ's annotation file subsampled by probe, with gene scores", {}),
    Recipe("align_bam", "bam", ("reads", "reference"), alignments.align_bam,
           "reads aligned by BWA-MEM into an unsorted BAM subsampled by read", {}),
    Recipe("sam_rnaseq", "rnaseq", ("alignments", "genome", "annotation"), alignments.sam_rnaseq,
           "RNA-seq reads recovered from their alignments (SAM/BAM) subsampled by read, with genome and GTF", {}),
    Recipe("gatk_region", "vcf", ("alignments", "genome", "known_sites"), alignments.gatk_region,
           "one contig of a sample's sorted BAM subsampled by template, with that contig's genome and known sites",
           {"contig": "the contig the input keeps (e.g. chr20)"}),
)}
