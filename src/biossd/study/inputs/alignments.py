"""Recipes for the paper's alignment data sets: reads aligned into an unsorted BAM, an aligned
SAM turned back into the reads it holds, and a region of a whole-genome sample cut for GATK.

Lee, Min and Yoon (2015) sorted and indexed a 16S library's alignments (samtools, IGVtools), ran
transcript assembly on mouse RNA-seq alignments, and ran five GATK steps on NA12878 cut to what
finished in their time limit (their Table 5 and §3.4). These recipes make the study's ``bam``,
``rnaseq`` and ``vcf`` inputs from such files with samtools and BWA (the versions on ``PATH``,
recorded with the input), under the file names the synthetic kinds use.
"""

from __future__ import annotations

import contextlib
import gzip
import os
import shutil
import subprocess
import tempfile
from pathlib import Path
from typing import Any, Iterator

from biossd.core.files import remove_tree
from biossd.study.inputs.formats import RecipeError, fasta_records, kept, open_text, wrapped, write_genome

#: The first bytes of a BAM file once its first BGZF block is inflated (SAM specification §4.2).
BAM_MAGIC = b"BAM\x01"
#: The first bytes of a gzip (and so BGZF) file.
GZIP_MAGIC = b"\x1f\x8b"
#: SAM flags (SAM specification §1.4): read reverse complemented, first and last segment of a
#: template, and the two kinds of record that are not a read's primary line.
FLAG_REVERSE, FLAG_FIRST, FLAG_LAST = 0x10, 0x40, 0x80
FLAG_NOT_PRIMARY = 0x100 | 0x800
#: Mandatory fields of a SAM record, and the positions of those the recipes rewrite.
SAM_FIELDS = 11
QNAME, FLAG, RNAME, RNEXT, PNEXT, SEQ, QUAL = 0, 1, 2, 6, 7, 9, 10
#: Records whose BAM bytes per SAM byte are measured to size a BAM: the sizes asked are of the
#: BAM file, and its compression depends on the data set.
COMPRESSION_SAMPLE_RECORDS = 20_000
_COMPLEMENT = str.maketrans("ACGTNacgtn", "TGCANtgcan")


def tools_version(*names: str) -> dict[str, str]:
    """The first line of each tool's version (recorded with an input it made)."""
    found = {}
    for name in names:
        if shutil.which(name) is None:
            raise RecipeError(f"{name} is not on PATH: install it (`make tools`) to prepare this data set")
        argv = [name, "--version"] if name != "bwa" else [name]
        proc = subprocess.run(argv, capture_output=True, text=True, errors="replace")
        lines = [ln for ln in (proc.stdout + proc.stderr).splitlines() if ln.strip()]
        version = next((ln for ln in lines if ln.lower().startswith("version")), lines[0] if lines else "")
        found[name] = version.split(":", 1)[-1].strip() if name == "bwa" else version.strip()
    return found


def is_bam(path: Path) -> bool:
    """Whether ``path`` is BAM (BGZF whose content starts with the BAM magic), not SAM text."""
    with open(path, "rb") as f:
        if f.read(len(GZIP_MAGIC)) != GZIP_MAGIC:
            return False
    with gzip.open(path, "rb") as g, contextlib.suppress(OSError, EOFError):
        return g.read(len(BAM_MAGIC)) == BAM_MAGIC
    return False


def sam_lines(path: Path, *region: str, index: Path | None = None) -> Iterator[str]:
    """The SAM text (header lines, then records) of a SAM file (plain or gzipped) or of a BAM
    file (through ``samtools view -h``; ``region`` needs the BAM's ``index``). A record without
    SAM's eleven mandatory fields is an error naming the file and line."""
    if is_bam(path):
        argv = ["samtools", "view", "-h", "--no-PG", str(path)]
        if region:
            argv[4:4] = ["-X"]
            argv += [str(index), *region]
        with tempfile.TemporaryFile("w+") as errors:
            proc = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=errors, text=True)
            assert proc.stdout is not None
            read_all = False
            try:
                yield from proc.stdout
                read_all = True
            finally:
                proc.stdout.close()
                if not read_all:  # the reader stopped early (a header is read this way)
                    proc.kill()
                proc.wait()
            errors.seek(0)
            if proc.returncode != 0:
                raise RecipeError(f"{path}: `samtools view` could not read it ({errors.read().strip()[-500:]}): is it "
                                  "the BAM file the manifest names?")
        return
    if region:
        raise RecipeError(f"{path}: a region is read from a BAM file and its index; this file is SAM text")
    with open_text(path) as f:
        for line_no, line in enumerate(f, 1):
            if not line.startswith("@") and len(line.split("\t", SAM_FIELDS)) < SAM_FIELDS:
                raise RecipeError(f"{path}: line {line_no} is not a SAM record ({SAM_FIELDS} tab-separated fields): "
                                  "is the manifest's file SAM or BAM?")
            yield line


def sam_header(path: Path) -> list[str]:
    """The header lines of a SAM or BAM file."""
    header = []
    for line in sam_lines(path):
        if not line.startswith("@"):
            break
        header.append(line)
    return header


def templates(path: Path, lines: Iterator[str] | None = None) -> Iterator[list[str]]:
    """A SAM file's records grouped by template: the consecutive records that share a name (a
    read's supplementary and secondary lines, and its mate when the file is name-grouped)."""
    group: list[str] = []
    for line in lines if lines is not None else sam_lines(path):
        if line.startswith("@"):
            continue
        if group and line.split("\t", 1)[0] != group[0].split("\t", 1)[0]:
            yield group
            group = []
        group.append(line)
    if group:
        yield group


def _write_bam(lines: Iterator[str], target: Path, sort: bool = False) -> None:
    """SAM text into a BAM file by samtools (``sort``: coordinate-sorted, else in the given order)."""
    argv = ["samtools", "sort", "--no-PG", "-o", str(target), "-"] if sort else \
        ["samtools", "view", "--no-PG", "-b", "-o", str(target), "-"]
    with tempfile.TemporaryFile("w+") as errors:
        proc = subprocess.Popen(argv, stdin=subprocess.PIPE, stderr=errors, text=True)
        assert proc.stdin is not None
        try:
            for line in lines:
                proc.stdin.write(line)
        except BrokenPipeError:
            pass
        finally:
            with contextlib.suppress(BrokenPipeError):
                proc.stdin.close()
            proc.wait()
        errors.seek(0)
        if proc.returncode != 0:
            raise RecipeError(f"`{' '.join(argv[:2])}` could not write {target.name}: {errors.read().strip()[-500:]}")


def _unsorted_header(header: list[str]) -> list[str]:
    """The header with its @HD line saying the records are unsorted (they are, once replicated)."""
    rest = [h for h in header if not h.startswith("@HD")]
    return ["@HD\tVN:1.6\tSO:unsorted\n", *rest]


def _renamed(group: list[str], replica: int) -> Iterator[str]:
    for line in group:
        yield f"x{replica}_{line}"


def bam_subsample(sam: Path, target: Path, size_bytes: int, seed: int, scale: int) -> dict[str, Any]:
    """``sam``'s templates subsampled, seeded, until the BAM they make is about ``size_bytes``,
    written ``scale`` times (names prefixed ``x<replica>_``) as an unsorted BAM ``target``. The BAM
    bytes per SAM byte are measured on the file's first :data:`COMPRESSION_SAMPLE_RECORDS` records."""
    header = sam_header(sam)
    if not any(h.startswith("@SQ") for h in header):
        raise RecipeError(f"{sam}: no @SQ header line: a BAM file needs the reference's sequence names and lengths")
    sample, sample_bytes = [], 0
    for group in templates(sam):
        sample += group
        sample_bytes += sum(len(line) for line in group)
        if len(sample) >= COMPRESSION_SAMPLE_RECORDS:
            break
    if not sample:
        raise RecipeError(f"{sam}: no alignment record")
    probe = target.with_name(f".{target.name}.sample")
    _write_bam(iter(header + sample), probe)
    bam_per_sam_byte = probe.stat().st_size / sample_bytes
    probe.unlink()
    sizes = [sum(len(line) for line in group) * bam_per_sam_byte for group in templates(sam)]
    keep = kept(sizes, size_bytes, seed, sam, "SAM")

    def lines() -> Iterator[str]:
        yield from _unsorted_header(header)
        for k in range(scale):
            for i, group in enumerate(templates(sam)):
                if keep[i]:
                    yield from _renamed(group, k)

    _write_bam(lines(), target)
    return {"records": int(keep.sum()) * scale, "source_records": len(sizes)}


def align_bam(src: dict[str, Path], out: Path, size_bytes: int, seed: int, scale: int,
              args: dict[str, Any]) -> dict[str, Any]:
    """A library's reads (``reads``, FASTQ or FASTA) aligned to its reference (``reference``) by
    BWA-MEM, every read, then subsampled by read into an unsorted BAM (``reads.bam``) of about
    ``size_bytes``, replicated ``scale`` times: the input samtools sort and IGVtools sort read."""
    versions = tools_version("bwa", "samtools")
    work = out / ".align"
    work.mkdir()
    n_ref = 0
    with open(work / "reference.fa", "w") as ref:
        for name, _, seq in fasta_records(src["reference"]):
            ref.write(f">{name}\n{wrapped(seq)}")
            n_ref += 1
    if not n_ref:
        raise RecipeError(f"{src['reference']}: no FASTA record: not a reference")
    threads = str(len(os.sched_getaffinity(0)))
    for argv, stdout in ((["bwa", "index", "-p", str(work / "reference"), str(work / "reference.fa")], None),
                         (["bwa", "mem", "-v", "1", "-t", threads, str(work / "reference"), str(src["reads"])],
                          work / "aligned.sam")):
        with open(stdout, "w") if stdout else contextlib.nullcontext() as sink:
            proc = subprocess.run(argv, stdout=sink or subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
        if proc.returncode != 0:
            raise RecipeError(f"`{' '.join(argv[:2])}` failed on {src['reads'] if stdout else src['reference']}: "
                              f"{proc.stderr.strip()[-500:]}")
    made = bam_subsample(work / "aligned.sam", out / "reads.bam", size_bytes, seed, scale)
    remove_tree(work)
    return {"files": ["reads.bam"], "tools": versions, **made}


def _fastq_of(fields: list[str], path: Path, line_no: int) -> str:
    """A SAM record's read as FASTQ, in the orientation it was sequenced."""
    seq, qual = fields[SEQ], fields[QUAL]
    if qual == "*":
        raise RecipeError(f"{path}: line {line_no} has no base qualities (QUAL '*'); the aligners the study runs "
                          "read them: this data set cannot become FASTQ")
    if int(fields[FLAG]) & FLAG_REVERSE:
        seq, qual = seq.translate(_COMPLEMENT)[::-1], qual[::-1]
    flag = int(fields[FLAG])
    mate = "/1" if flag & FLAG_FIRST else "/2" if flag & FLAG_LAST else ""
    return f"{fields[QNAME]}{mate}\n{seq}\n+\n{qual}\n"


def _primary_reads(path: Path) -> Iterator[tuple[int, list[str]]]:
    """(line number, fields) of each record that is a read's primary line and carries its bases."""
    for line_no, line in enumerate(sam_lines(path), 1):
        if line.startswith("@"):
            continue
        fields = line.rstrip("\r\n").split("\t")
        try:
            flag = int(fields[FLAG])
        except ValueError:
            raise RecipeError(f"{path}: line {line_no}: FLAG {fields[FLAG]!r} is not a number") from None
        if not flag & FLAG_NOT_PRIMARY and fields[SEQ] != "*":
            yield line_no, fields


def sam_rnaseq(src: dict[str, Path], out: Path, size_bytes: int, seed: int, scale: int,
               args: dict[str, Any]) -> dict[str, Any]:
    """RNA-seq reads recovered from a SAM/BAM of their alignments (``alignments``; each read's
    primary line, bases and qualities back in sequencing orientation) subsampled into ``reads.fq``
    of about ``size_bytes``, with the genome (``genome.fa``) and gene models (``genes.gtf``): the
    study re-aligns them as the tool's own preparation (HISAT2 for StringTie, TopHat for Scripture)."""
    sizes = [len(_fastq_of(f, src["alignments"], n)) + 1 for n, f in _primary_reads(src["alignments"])]
    keep = kept(sizes, size_bytes, seed, src["alignments"], "primary read")
    with open(out / "reads.fq", "w") as f:
        for k in range(scale):
            f.writelines(f"@x{k}_{_fastq_of(fields, src['alignments'], n)}"
                         for i, (n, fields) in enumerate(_primary_reads(src["alignments"])) if keep[i])
    write_genome(src["genome"], out / "genome.fa")
    with open_text(src["annotation"]) as g, open(out / "genes.gtf", "w") as t:
        shutil.copyfileobj(g, t)
    return {"files": ["genome.fa", "genes.gtf", "reads.fq"], "records": int(keep.sum()) * scale,
            "source_records": len(sizes)}


def _region_line(line: str, contig: str) -> str:
    """A record of the region with a mate on another contig made mate-less there (the input's
    header names one contig; GATK refuses a mate on a contig its dictionary lacks)."""
    fields = line.split("\t", SAM_FIELDS)
    if fields[RNEXT] not in ("=", "*", contig):
        fields[RNEXT], fields[PNEXT] = "*", "0"
        return "\t".join(fields)
    return line


def gatk_region(src: dict[str, Path], out: Path, size_bytes: int, seed: int, scale: int,
                args: dict[str, Any]) -> dict[str, Any]:
    """The inputs of the GATK steps cut to one contig of a whole-genome sample, as the paper cut
    NA12878 to what finished in its time limit: the coordinate-sorted alignments (``alignments``,
    BAM, with a read group) on ``args['contig']``, subsampled by template (``samtools view
    --subsample``, seeded) so that ``reads.bam`` is about ``size_bytes``, replicated ``scale``
    times (more depth over the same contig), sorted and indexed; that contig of the genome
    (``genome.fa`` with ``.fai`` and ``.dict``); and the known sites on it (``known_sites.vcf``,
    e.g. dbSNP). The genome and known sites are the contig's whatever the size: the reads grow."""
    versions = tools_version("samtools")
    contig = args.get("contig")
    if not contig:
        raise RecipeError("recipe gatk_region needs args.contig (the contig the input keeps, e.g. chr20)")
    bam = src["alignments"]
    if not is_bam(bam):
        raise RecipeError(f"{bam}: not BAM; gatk_region reads coordinate-sorted BAM alignments")
    header = sam_header(bam)
    names = [f[3:] for h in header if h.startswith("@SQ") for f in h.rstrip("\n").split("\t") if f.startswith("SN:")]
    sq = next((h for h in header if h.startswith("@SQ") and f"\tSN:{contig}\t" in h + "\t"), None)
    if sq is None:
        raise RecipeError(f"{bam}: no @SQ line for contig {contig!r} (args.contig); it has {names[:8]}")
    if not any(h.startswith("@RG") for h in header):
        raise RecipeError(f"{bam}: no @RG read group; GATK needs one: add it (samtools addreplacerg) and pin that file")
    sq_length = int(next(f for f in sq.rstrip("\n").split("\t") if f.startswith("LN:"))[3:])
    genome = [(name, seq) for name, _, seq in fasta_records(src["genome"]) if name == contig]
    if not genome:
        raise RecipeError(f"{src['genome']}: no sequence named {contig!r} (args.contig)")
    if len(genome[0][1]) != sq_length:
        raise RecipeError(f"{src['genome']}: {contig} is {len(genome[0][1])} bp, the alignments' header says "
                          f"{sq_length}: they were made against another assembly")
    work = out / ".region"
    work.mkdir()
    index = work / "alignments.bai"
    proc = subprocess.run(["samtools", "index", str(bam), str(index)], capture_output=True, text=True)
    if proc.returncode != 0:
        raise RecipeError(f"{bam}: `samtools index` failed ({proc.stderr.strip()}): is it coordinate-sorted?")
    kept_header = [h for h in header if not h.startswith(("@SQ", "@HD"))]
    region_header = ["@HD\tVN:1.6\tSO:coordinate\n", sq, *kept_header]
    region = work / "region.bam"
    _write_bam(iter(region_header + [_region_line(line, contig)
                                     for line in sam_lines(bam, contig, index=index) if not line.startswith("@")]),
               region)
    source_records = int(subprocess.run(["samtools", "view", "-c", str(region)], capture_output=True, text=True,
                                        check=True).stdout)
    if not source_records:
        raise RecipeError(f"{bam}: no alignment on {contig} (args.contig)")
    fraction = size_bytes / region.stat().st_size
    chosen = work / "chosen.bam"
    if fraction < 1:
        proc = subprocess.run(["samtools", "view", "--no-PG", "-b", "--subsample", f"{fraction:.6f}",
                               "--subsample-seed", str(seed), "-o", str(chosen), str(region)],
                              capture_output=True, text=True)
        if proc.returncode != 0:
            raise RecipeError(f"`samtools view --subsample` failed on {contig} of {bam}: {proc.stderr.strip()}")
    else:
        region.replace(chosen)
    records = int(subprocess.run(["samtools", "view", "-c", str(chosen)], capture_output=True, text=True,
                                 check=True).stdout)

    def replicated() -> Iterator[str]:
        yield from region_header
        for k in range(scale):
            yield from (f"x{k}_{line}" for line in sam_lines(chosen) if not line.startswith("@"))

    _write_bam(replicated(), out / "reads.bam", sort=True)
    with open(out / "genome.fa", "w") as g:
        g.write(f">{contig}\n{wrapped(genome[0][1])}")
    for argv in (["samtools", "index", str(out / "reads.bam")], ["samtools", "faidx", str(out / "genome.fa")],
                 ["samtools", "dict", "-o", str(out / "genome.dict"), str(out / "genome.fa")]):
        proc = subprocess.run(argv, capture_output=True, text=True)
        if proc.returncode != 0:
            raise RecipeError(f"`{' '.join(argv[:2])}` failed: {proc.stderr.strip()}")
    _known_sites(src["known_sites"], contig, out / "known_sites.vcf")
    remove_tree(work)
    return {"files": ["genome.fa", "genome.fa.fai", "genome.dict", "reads.bam", "reads.bam.bai", "known_sites.vcf"],
            "records": records * scale, "source_records": source_records, "tools": versions}


def _known_sites(path: Path, contig: str, target: Path) -> int:
    """The VCF's header (its ``##contig`` lines for ``contig`` only) and its records on ``contig``."""
    n, columns = 0, False
    with open_text(path) as f, open(target, "w") as t:
        for line_no, line in enumerate(f, 1):
            if line.startswith("##contig=<"):
                if f"ID={contig}," in line or f"ID={contig}>" in line:
                    t.write(line)
            elif line.startswith("#"):
                columns = columns or line.startswith("#CHROM")
                t.write(line)
            elif not columns:
                raise RecipeError(f"{path}: line {line_no} is a record before the #CHROM line: not VCF")
            elif line.split("\t", 1)[0] == contig:
                t.write(line)
                n += 1
    if not columns:
        raise RecipeError(f"{path}: no #CHROM header line: not VCF")
    return n

