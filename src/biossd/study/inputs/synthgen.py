"""Generators of the synthetic input kinds (one function per kind; registered in
:mod:`biossd.study.inputs.data`). Every generator takes ``(out_dir, size_bytes, seed, scale)``, draws
everything from ``numpy.random.default_rng(seed)`` (same seed and size → the same bytes), writes
a baseline of about ``size_bytes`` replicated ``scale`` times with unique record names, and
returns ``{"files": [...], "records": N}``. Where a tool's result can be judged, a ``truth``
file says what the right answer is (each read's origin and errors, planted motifs, planted
clusters).
"""

from __future__ import annotations

import subprocess
from pathlib import Path

import numpy as np

BASES = np.frombuffer(b"ACGT", dtype=np.uint8)
GC_FRACTION = 0.41
#: Repeat families: copies of a few 300 bp units, 2% diverged, make up this share of a genome.
REPEAT_SHARE = 0.08
REPEAT_UNIT_BP = 300
REPEAT_FAMILIES = 4
REPEAT_DIVERGENCE = 0.02
READ_BP = 100
INSERT_MEAN_BP, INSERT_SD_BP = 300, 30
#: Per-base substitution rate of synthetic reads (recorded per read in the truth file).
READ_ERROR_RATE = 0.005
FASTQ_BYTES_PER_READ = 2 * READ_BP + 40
#: Depth of the synthetic reads over their genome (assemblers need real coverage).
TARGET_COVERAGE = 30
AMINO_ACIDS = np.frombuffer(b"ACDEFGHIKLMNPQRSTVWY", dtype=np.uint8)
#: Amino-acid background frequencies (UniProt), same order as AMINO_ACIDS.
AA_FREQ = np.array([8.25, 1.38, 5.46, 6.72, 3.86, 7.07, 2.27, 5.96, 5.84, 9.66,
                    2.42, 4.06, 4.70, 3.93, 5.53, 6.56, 5.34, 6.87, 1.08, 2.92])
PROTEIN_FAMILY_SIZE = 5
PROTEIN_LEN_RANGE = (80, 400)
PROTEIN_DIVERGENCE = 0.3
#: BLAST and BLAT search a database that grows with the input with this many query proteins, a
#: fixed random subset (data-manifests/uniref50.yaml's recipe): the database is what grows.
QUERY_PROTEINS = 64
#: GATK's reads: the depth of a whole-genome sample such as NA12878's (Lee, Min and Yoon 2015,
#: §3.5), over a genome that grows with the input.
GATK_COVERAGE = 30
#: Known sites one per this many bases: dbSNP build 132's density (≈30 M SNVs over 3.1 Gbp, 2010).
KNOWN_SITE_SPACING_BP = 100
#: Bytes of BAM per 100 bp read with qualities (measured on the synthetic reads: samtools' level 6).
BAM_BYTES_PER_READ = 67
FLOW_ORDER = np.frombuffer(b"TACG", dtype=np.uint8)
FLOWS_PER_READ = 360
#: The size a flowgram input is asked in per read: five characters a flow value ("1.02 ") and
#: about twenty of name and count per line.
FLOWGRAM_BYTES_PER_READ = FLOWS_PER_READ * 5 + 20
FLOW_KEY = "TCAG"
#: Reads drawn at once by the vectorised generators: bounds their index arrays (8 bytes a base).
CHUNK_READS = 1 << 16


def _mutate(seq: np.ndarray, rate: float, alphabet: np.ndarray, rng: np.random.Generator) -> tuple[np.ndarray, np.ndarray]:
    """``seq`` with a share ``rate`` of positions changed to another letter; returns it and the
    changed positions."""
    hit = np.flatnonzero(rng.random(seq.size) < rate)
    out = seq.copy()
    if hit.size:
        shift = rng.integers(1, alphabet.size, hit.size)
        idx = np.searchsorted(np.sort(alphabet), seq[hit])
        out[hit] = np.sort(alphabet)[(idx + shift) % alphabet.size]
    return out, hit


def _mutate_rows(rows: np.ndarray, rate: float, alphabet: np.ndarray, rng: np.random.Generator) -> np.ndarray:
    """:func:`_mutate` of every row of ``rows`` at once (reads of one length, as a 2-D array)."""
    out = rows.copy()
    hit = rng.random(rows.shape) < rate
    if hit.any():
        ordered = np.sort(alphabet)
        shift = rng.integers(1, alphabet.size, int(hit.sum()))
        out[hit] = ordered[(np.searchsorted(ordered, rows[hit]) + shift) % alphabet.size]
    return out


def _rows_text(rows: np.ndarray) -> list[str]:
    """Each row of a 2-D array of ASCII codes as a string."""
    width = rows.shape[1]
    text = np.ascontiguousarray(rows).tobytes().decode()
    return [text[i : i + width] for i in range(0, len(text), width)]


def genome(rng: np.random.Generator, total_bp: int, n_contigs: int = 2) -> list[np.ndarray]:
    """Contigs with the human GC share and interspersed repeat families."""
    at, gc = (1 - GC_FRACTION) / 2, GC_FRACTION / 2
    sizes = np.full(n_contigs, max(total_bp // n_contigs, 4 * REPEAT_UNIT_BP))
    units = [BASES[rng.choice(4, REPEAT_UNIT_BP, p=[at, gc, gc, at])] for _ in range(REPEAT_FAMILIES)]
    contigs = []
    for size in sizes:
        seq = BASES[rng.choice(4, int(size), p=[at, gc, gc, at])]
        copies = int(size * REPEAT_SHARE // REPEAT_UNIT_BP)
        for start in rng.integers(0, size - REPEAT_UNIT_BP, copies):
            unit, _ = _mutate(units[rng.integers(REPEAT_FAMILIES)], REPEAT_DIVERGENCE, BASES, rng)
            seq[start : start + REPEAT_UNIT_BP] = unit
        contigs.append(seq)
    return contigs


def write_fasta(path: Path, records: list[tuple[str, np.ndarray | str]], width: int = 60) -> None:
    with open(path, "w") as f:
        for name, seq in records:
            text = seq if isinstance(seq, str) else seq.tobytes().decode()
            f.write(f">{name}\n")
            f.write("".join(text[i : i + width] + "\n" for i in range(0, len(text), width)))


def _revcomp(seq: np.ndarray) -> np.ndarray:
    table = np.zeros(256, dtype=np.uint8)
    table[b"A"[0]], table[b"C"[0]], table[b"G"[0]], table[b"T"[0]] = b"TGCA"
    return table[seq[::-1]]


def _qualities(rng: np.random.Generator, n: int) -> np.ndarray:
    chars = np.frombuffer(b"5?ABCDEFGHI", dtype=np.uint8)
    weights = np.array([1, 2, 4, 6, 8, 10, 12, 14, 16, 12, 10], dtype=float)
    return chars[rng.choice(chars.size, size=(n, READ_BP), p=weights / weights.sum())]


def reads(out_dir: Path, size_bytes: int, seed: int, scale: int) -> dict[str, object]:
    """Paired 100 bp reads from a synthetic genome (``genome.fa``) with substitution errors:
    ``reads_1.fq``, ``reads_2.fq`` and ``truth.tsv`` (read, contig, 1-based position of each
    mate, strand of mate 1, error positions of each mate) for sensitivity/precision checks."""
    rng = np.random.default_rng(seed)
    n_pairs = max(1, size_bytes // (2 * FASTQ_BYTES_PER_READ))
    contigs = genome(rng, max(20_000, n_pairs * 2 * READ_BP // TARGET_COVERAGE))
    write_fasta(out_dir / "genome.fa", [(f"chr{i + 1}", c) for i, c in enumerate(contigs)])
    lengths = np.array([c.size for c in contigs])
    which = rng.choice(len(contigs), n_pairs, p=lengths / lengths.sum())
    insert = np.clip(rng.normal(INSERT_MEAN_BP, INSERT_SD_BP, n_pairs).astype(int), READ_BP + 10, None)
    start = (rng.random(n_pairs) * (lengths[which] - insert)).astype(np.int64)
    forward = rng.random(n_pairs) < 0.5
    q1, q2 = _qualities(rng, n_pairs), _qualities(rng, n_pairs)
    lines1, lines2, truth = [], [], ["read\tcontig\tpos1\tpos2\tstrand1\terrors1\terrors2"]
    for i in range(n_pairs):
        frag = contigs[which[i]][start[i] : start[i] + insert[i]]
        left, right = frag[:READ_BP], _revcomp(frag[-READ_BP:])
        m1, m2 = (left, right) if forward[i] else (right, left)
        m1, e1 = _mutate(m1, READ_ERROR_RATE, BASES, rng)
        m2, e2 = _mutate(m2, READ_ERROR_RATE, BASES, rng)
        pos1, pos2 = (start[i] + 1, start[i] + insert[i] - READ_BP + 1)
        if not forward[i]:
            pos1, pos2 = pos2, pos1
        name = f"p{i:09d}"
        lines1.append((name, m1.tobytes().decode(), q1[i].tobytes().decode()))
        lines2.append((name, m2.tobytes().decode(), q2[i].tobytes().decode()))
        truth.append(f"{name}\tchr{which[i] + 1}\t{pos1}\t{pos2}\t{'+' if forward[i] else '-'}\t"
                     f"{','.join(map(str, e1)) or '-'}\t{','.join(map(str, e2)) or '-'}")
    for path, recs, mate in ((out_dir / "reads_1.fq", lines1, 1), (out_dir / "reads_2.fq", lines2, 2)):
        with open(path, "w") as f:
            for k in range(scale):
                for name, seq, qual in recs:
                    f.write(f"@x{k}_{name}/{mate}\n{seq}\n+\n{qual}\n")
    with open(out_dir / "truth.tsv", "w") as f:
        f.write(truth[0] + "\n")
        for k in range(scale):
            f.writelines(f"x{k}_{line}\n" for line in truth[1:])
    return {"files": ["genome.fa", "reads_1.fq", "reads_2.fq", "truth.tsv"], "records": n_pairs * scale}


def genome_kind(out_dir: Path, size_bytes: int, seed: int, scale: int) -> dict[str, object]:
    """A reference genome (``genome.fa``): GC 41%, 8% interspersed repeats; ``scale`` copies
    of the contigs under new names (``chr1_x2``...)."""
    rng = np.random.default_rng(seed)
    contigs = genome(rng, max(10_000, int(size_bytes * 60 / 61)))
    recs = [(f"chr{i + 1}" + (f"_x{k}" if k else ""), c) for k in range(scale) for i, c in enumerate(contigs)]
    write_fasta(out_dir / "genome.fa", recs)
    return {"files": ["genome.fa"], "records": len(recs)}


def _aligned_bam(out_dir: Path, contigs: list[np.ndarray], n_reads: int, rng: np.random.Generator) -> None:
    """``reads.bam``: ``n_reads`` 100 bp reads placed on ``contigs`` (with errors), coordinate
    sorted, with a read group (GATK needs one), plus ``genome.fa.fai`` and ``genome.dict``."""
    lengths = np.array([c.size for c in contigs])
    which = rng.choice(len(contigs), n_reads, p=lengths / lengths.sum())
    starts = (rng.random(n_reads) * (lengths[which] - READ_BP)).astype(np.int64)
    quals = _qualities(rng, n_reads)
    lines = ["@HD\tVN:1.6\tSO:unsorted"] + [f"@SQ\tSN:chr{i + 1}\tLN:{c.size}" for i, c in enumerate(contigs)]
    lines.append("@RG\tID:rg1\tSM:synthetic\tPL:ILLUMINA\tLB:lib1")
    for i in range(n_reads):
        seq, _ = _mutate(contigs[which[i]][starts[i] : starts[i] + READ_BP], READ_ERROR_RATE, BASES, rng)
        lines.append(f"r{i:09d}\t0\tchr{which[i] + 1}\t{starts[i] + 1}\t60\t{READ_BP}M\t*\t0\t0\t"
                     f"{seq.tobytes().decode()}\t{quals[i].tobytes().decode()}\tRG:Z:rg1")
    tmp = out_dir / ".reads.bam.tmp"
    for argv, data in ((["samtools", "sort", "--no-PG", "-o", str(tmp), "-"], ("\n".join(lines) + "\n").encode()),
                       (["samtools", "faidx", str(out_dir / "genome.fa")], None),
                       (["samtools", "dict", "-a", "synthetic", "-u", "genome.fa", "-o", str(out_dir / "genome.dict"),
                         str(out_dir / "genome.fa")], None)):
        proc = subprocess.run(argv, input=data, capture_output=True)
        if proc.returncode != 0:
            raise RuntimeError(f"`{' '.join(argv)}` failed: {proc.stderr.decode().strip()}")
    tmp.replace(out_dir / "reads.bam")
    subprocess.run(["samtools", "index", str(out_dir / "reads.bam")], check=True)


def vcf(out_dir: Path, size_bytes: int, seed: int, scale: int) -> dict[str, object]:
    """Inputs of the GATK steps, shaped like a whole-genome sample: ``genome.fa`` (with ``.fai``
    and ``.dict``), ``reads.bam`` (sorted, indexed, one read group) at :data:`GATK_COVERAGE` x
    over that genome, and ``known_sites.vcf`` at dbSNP's density (:data:`KNOWN_SITE_SPACING_BP`;
    SNVs whose REF is the genome's base), sorted by position. The genome grows with
    ``size_bytes`` so that the three files together are about that size; ``scale`` replicates the
    reads (more depth over the same genome, as a larger sample of one person would)."""
    rng = np.random.default_rng(seed)
    per_bp = 1 + 40 / KNOWN_SITE_SPACING_BP + GATK_COVERAGE / READ_BP * BAM_BYTES_PER_READ
    contigs = genome(rng, max(20_000, int(size_bytes / per_bp)))
    total_bp = sum(c.size for c in contigs)
    write_fasta(out_dir / "genome.fa", [(f"chr{i + 1}", c) for i, c in enumerate(contigs)])
    n = max(1, total_bp // KNOWN_SITE_SPACING_BP)
    lines = ["##fileformat=VCFv4.2", "##source=biossd data synth vcf"]
    lines += [f"##contig=<ID=chr{i + 1},length={c.size}>" for i, c in enumerate(contigs)]
    lines.append("#CHROM\tPOS\tID\tREF\tALT\tQUAL\tFILTER\tINFO")
    records = []
    for i, c in enumerate(contigs):
        share = n * c.size // total_bp
        pos = np.unique(rng.integers(1, c.size + 1, max(1, share)))
        ref = c[pos - 1]
        alt, _ = _mutate(ref, 1.0, BASES, rng)
        records += [(i, int(p), chr(r), chr(a)) for p, r, a in zip(pos, ref, alt)]
    lines += [f"chr{i + 1}\t{p}\trs{j}\t{r}\t{a}\t.\tPASS\t." for j, (i, p, r, a) in enumerate(records)]
    (out_dir / "known_sites.vcf").write_text("\n".join(lines) + "\n")
    n_reads = max(100, total_bp * GATK_COVERAGE // READ_BP)
    _aligned_bam(out_dir, contigs, n_reads * scale, rng)
    return {"files": ["genome.fa", "genome.fa.fai", "genome.dict", "reads.bam", "reads.bam.bai", "known_sites.vcf"],
            "records": n_reads * scale}


def proteins(out_dir: Path, size_bytes: int, seed: int, scale: int) -> dict[str, object]:
    """Protein families (``proteins.fa``): each family's members are 30% diverged copies of an
    ancestor drawn with UniProt's amino-acid frequencies; ``families.tsv`` is the truth;
    ``queries.fa`` is a fixed random subset of :data:`QUERY_PROTEINS` of them (not replicated by
    ``scale``): the database grows, the queries do not."""
    rng = np.random.default_rng(seed)
    mean_len = sum(PROTEIN_LEN_RANGE) / 2
    n_families = max(1, int(size_bytes / (mean_len * 1.03 + 12) / PROTEIN_FAMILY_SIZE))
    recs, truth = [], ["protein\tfamily"]
    for fam in range(n_families):
        length = int(rng.integers(*PROTEIN_LEN_RANGE))
        ancestor = AMINO_ACIDS[rng.choice(AMINO_ACIDS.size, length, p=AA_FREQ / AA_FREQ.sum())]
        for m in range(PROTEIN_FAMILY_SIZE):
            member, _ = _mutate(ancestor, PROTEIN_DIVERGENCE, AMINO_ACIDS, rng)
            recs.append((f"fam{fam:06d}_m{m}", member))
            truth.append(f"fam{fam:06d}_m{m}\tfam{fam:06d}")
    out = [(f"x{k}_{name}", seq) for k in range(scale) for name, seq in recs]
    write_fasta(out_dir / "proteins.fa", out)
    picked = sorted(rng.choice(len(recs), min(QUERY_PROTEINS, len(recs)), replace=False).tolist())
    write_fasta(out_dir / "queries.fa", [(f"q_{recs[i][0]}", recs[i][1]) for i in picked])
    (out_dir / "families.tsv").write_text(
        truth[0] + "\n" + "".join(f"x{k}_{line}\n" for k in range(scale) for line in truth[1:]))
    return {"files": ["proteins.fa", "queries.fa", "families.tsv"], "records": len(out)}


def expression(out_dir: Path, size_bytes: int, seed: int, scale: int) -> dict[str, object]:
    """An expression matrix in Cluster 3.0/TreeView format (``expression.txt``): genes in
    planted co-expression clusters over 20 samples; ``clusters.tsv`` is the truth."""
    rng = np.random.default_rng(seed)
    n_samples, n_clusters = 20, 8
    n_genes = max(n_clusters, size_bytes // (n_samples * 7 + 20))
    centres = rng.normal(0, 2, (n_clusters, n_samples))
    member = rng.integers(0, n_clusters, n_genes)
    values = centres[member] + rng.normal(0, 0.5, (n_genes, n_samples))
    header = "ID\tNAME\tGWEIGHT\t" + "\t".join(f"s{j + 1}" for j in range(n_samples))
    lines = [header, "EWEIGHT\t\t\t" + "\t".join("1" for _ in range(n_samples))]
    truth = ["gene\tcluster"]
    for k in range(scale):
        for g in range(n_genes):
            name = f"x{k}_g{g:07d}"
            lines.append(f"{name}\t{name}\t1\t" + "\t".join(f"{v:.3f}" for v in values[g]))
            truth.append(f"{name}\tc{member[g]}")
    (out_dir / "expression.txt").write_text("\n".join(lines) + "\n")
    (out_dir / "clusters.tsv").write_text("\n".join(truth) + "\n")
    return {"files": ["expression.txt", "clusters.tsv"], "records": n_genes * scale}


def promoters(out_dir: Path, size_bytes: int, seed: int, scale: int) -> dict[str, object]:
    """Promoter-like sequences (``promoters.fa``, 500 bp) with instances of one planted motif
    (``motif.tsv``: sequence, 1-based start, strand, instance) — what the motif finders of
    Tompa's benchmark are asked to find."""
    rng = np.random.default_rng(seed)
    length, motif_len = 500, 12
    n = max(2, size_bytes // (length + length // 60 + 20))
    consensus = BASES[rng.integers(0, 4, motif_len)]
    seqs, truth = [], ["sequence\tstart\tstrand\tinstance"]
    for i in range(n):
        seq = BASES[rng.choice(4, length, p=[0.3, 0.2, 0.2, 0.3])]
        if rng.random() < 0.8:
            inst, _ = _mutate(consensus, 0.08, BASES, rng)
            strand = "+" if rng.random() < 0.5 else "-"
            site = inst if strand == "+" else _revcomp(inst)
            pos = int(rng.integers(0, length - motif_len))
            seq[pos : pos + motif_len] = site
            truth.append(f"seq{i:06d}\t{pos + 1}\t{strand}\t{inst.tobytes().decode()}")
        seqs.append((f"seq{i:06d}", seq))
    write_fasta(out_dir / "promoters.fa", [(f"x{k}_{name}", s) for k in range(scale) for name, s in seqs])
    (out_dir / "motif.tsv").write_text(
        f"# consensus {consensus.tobytes().decode()}\n" + truth[0] + "\n"
        + "".join(f"x{k}_{line}\n" for k in range(scale) for line in truth[1:]))
    return {"files": ["promoters.fa", "motif.tsv"], "records": n * scale}


def genesets(out_dir: Path, size_bytes: int, seed: int, scale: int) -> dict[str, object]:
    """ErmineJ inputs: ``annotations.txt`` (probe, gene symbol, gene name, GO terms) and
    ``scores.txt`` (probe, score), with a few GO terms whose genes score high (``enriched.txt``)."""
    rng = np.random.default_rng(seed)
    n_terms = 200
    n_probes = max(n_terms, size_bytes // 90)
    terms = [f"GO:{9000000 + t:07d}" for t in range(n_terms)]
    enriched = set(rng.choice(n_terms, 5, replace=False).tolist())
    ann = ["ProbeName\tGeneSymbol\tGeneName\tGOTerms"]
    scores = ["probe\tscore"]
    for k in range(scale):
        sub = np.random.default_rng([seed, 1])
        for p in range(n_probes):
            mine = sub.choice(n_terms, int(sub.integers(1, 6)), replace=False)
            boost = any(int(t) in enriched for t in mine)
            name = f"x{k}_probe{p:07d}"
            ann.append(f"{name}\tG{p:06d}\tgene {p}\t{'|'.join(terms[t] for t in sorted(mine))}")
            scores.append(f"{name}\t{sub.normal(2.0 if boost else 0.0, 1.0):.4f}")
    (out_dir / "annotations.txt").write_text("\n".join(ann) + "\n")
    (out_dir / "scores.txt").write_text("\n".join(scores) + "\n")
    (out_dir / "enriched.txt").write_text("".join(f"{terms[t]}\n" for t in sorted(enriched)))
    return {"files": ["annotations.txt", "scores.txt", "enriched.txt"], "records": n_probes * scale}


def flowgrams(out_dir: Path, size_bytes: int, seed: int, scale: int) -> dict[str, object]:
    """454 Titanium-style flowgrams in AmpliconNoise's ``.dat`` format (``flows.dat``: a
    ``N 360`` header, then ``id 360 f1 ... f360`` per read, flow order TACG, key TCAG) from a
    few amplicon sequences with errors, and their true sequences (``truth.fa``)."""
    rng = np.random.default_rng(seed)
    n = max(1, size_bytes // FLOWGRAM_BYTES_PER_READ)
    templates = [BASES[rng.integers(0, 4, 400)] for _ in range(10)]
    lines, truth = [], []
    for i in range(n):
        t = int(rng.integers(len(templates)))
        seq, _ = _mutate(templates[t], 0.01, BASES, rng)
        full = np.frombuffer(FLOW_KEY.encode(), dtype=np.uint8).tolist() + seq.tolist()
        flows, pos = [], 0
        for f in range(FLOWS_PER_READ):
            base = FLOW_ORDER[f % 4]
            run = 0
            while pos < len(full) and full[pos] == base:
                run += 1
                pos += 1
            signal = run + rng.normal(0, 0.04 + 0.03 * run) if run else abs(rng.normal(0, 0.05))
            flows.append(min(max(signal, 0.0), 9.4 if run else 0.45))
        lines.append((f"r{i:07d}", " ".join(f"{v:.2f}" for v in flows)))
        truth.append((f"r{i:07d}_t{t}", seq[: max(0, pos - 4)]))
    with open(out_dir / "flows.dat", "w") as f:
        f.write(f"{n * scale} {FLOWS_PER_READ}\n")
        for k in range(scale):
            f.writelines(f"x{k}_{name} {FLOWS_PER_READ} {values}\n" for name, values in lines)
    write_fasta(out_dir / "truth.fa", [(f"x{k}_{name}", s) for k in range(scale) for name, s in truth])
    return {"files": ["flows.dat", "truth.fa"], "records": n * scale}


def rnaseq(out_dir: Path, size_bytes: int, seed: int, scale: int) -> dict[str, object]:
    """Spliced RNA-seq: ``genome.fa``, ``genes.gtf`` (multi-exon genes) and ``reads.fq``
    (100 bp reads from transcripts, many across exon junctions), with ``truth.tsv`` (read,
    gene, transcript offset, whether it spans a junction)."""
    rng = np.random.default_rng(seed)
    contig = genome(rng, 400_000, 1)[0]
    genes, gtf = [], []
    pos = 5_000
    while pos < contig.size - 20_000:
        n_exons = int(rng.integers(2, 6))
        exons = []
        for _ in range(n_exons):
            elen = int(rng.integers(120, 400))
            exons.append((pos, pos + elen))
            pos += elen + int(rng.integers(200, 1500))
            contig[exons[-1][1] : exons[-1][1] + 2] = np.frombuffer(b"GT", dtype=np.uint8)  # splice donor
            contig[pos - 2 : pos] = np.frombuffer(b"AG", dtype=np.uint8)  # splice acceptor
        gid = f"gene{len(genes):04d}"
        genes.append((gid, exons))
        for e, (a, b) in enumerate(exons):
            gtf.append(f"chr1\tbiossd\texon\t{a + 1}\t{b}\t.\t+\t.\t"
                       f"gene_id \"{gid}\"; transcript_id \"{gid}.1\"; exon_number \"{e + 1}\";")
        pos += int(rng.integers(2_000, 8_000))
    write_fasta(out_dir / "genome.fa", [("chr1", contig)])
    (out_dir / "genes.gtf").write_text("\n".join(gtf) + "\n")
    n = max(1, size_bytes // FASTQ_BYTES_PER_READ)
    transcripts = [np.concatenate([contig[a:b] for a, b in exons]) for _gid, exons in genes]
    lengths = np.array([t.size for t in transcripts])
    starts = np.concatenate([[0], np.cumsum(lengths)[:-1]])
    bounds = [np.cumsum([b - a for a, b in exons])[:-1] for _gid, exons in genes]
    joined = np.concatenate(transcripts)
    which: list[int] = []
    offsets: list[int] = []
    spans: list[bool] = []
    seq_text: list[str] = []
    qual_text: list[str] = []
    for first in range(0, n, CHUNK_READS):
        count = min(CHUNK_READS, n - first)
        genes_of = rng.integers(len(genes), size=count)
        starts_in = rng.integers(0, lengths[genes_of] - READ_BP)
        across = np.zeros(count, dtype=bool)
        for g in np.unique(genes_of):
            mine = genes_of == g
            for bound in bounds[g]:
                across[mine] |= (bound > starts_in[mine]) & (bound < starts_in[mine] + READ_BP)
        rows = joined[(starts[genes_of] + starts_in)[:, None] + np.arange(READ_BP)]
        seq_text += _rows_text(_mutate_rows(rows, READ_ERROR_RATE, BASES, rng))
        qual_text += _rows_text(_qualities(rng, count))
        which += genes_of.tolist()
        offsets += starts_in.tolist()
        spans += across.tolist()
    names = [f"t{i:08d}" for i in range(n)]
    with open(out_dir / "reads.fq", "w") as f:
        for k in range(scale):
            f.writelines(f"@x{k}_{name}\n{seq}\n+\n{qual}\n" for name, seq, qual in zip(names, seq_text, qual_text))
    with open(out_dir / "truth.tsv", "w") as f:
        f.write("read\tgene\ttranscript_offset\tspans_junction\n")
        for k in range(scale):
            f.writelines(f"x{k}_{name}\t{genes[g][0]}\t{off}\t{int(sp)}\n"
                         for name, g, off, sp in zip(names, which, offsets, spans))
    return {"files": ["genome.fa", "genes.gtf", "reads.fq", "truth.tsv"], "records": n * scale}
