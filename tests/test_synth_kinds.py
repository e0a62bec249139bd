"""Every synthetic kind: deterministic, valid for the tools that read it (checked with those
tools), and replicated k times by --scale with unique names."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest

from biossd.study.inputs import data

#: Nothing here measures: these tests run beside others (tests/alone.py).
pytestmark = [pytest.mark.integration, pytest.mark.beside]
SIZE = "256K"
KINDS = sorted(data.KINDS)


def synth(biossd, kind, out, *extra):
    return json.loads(biossd("data", "synth", kind, "--size", SIZE, "--seed", "11", *extra, "-o", str(out)).stdout)


@pytest.mark.parametrize("kind", KINDS)
def test_same_seed_same_bytes_and_scale_multiplies(biossd, tmp_path, kind):
    a, b = synth(biossd, kind, tmp_path / "a"), synth(biossd, kind, tmp_path / "b")
    assert {n: f["sha256"] for n, f in a["files"].items()} == {n: f["sha256"] for n, f in b["files"].items()}
    three = synth(biossd, kind, tmp_path / "x3", "--scale", "3")
    assert three["records"] == 3 * a["records"]


def _names(path: Path, prefix: str) -> list[str]:
    return [line[1:].split()[0] for line in path.read_text().splitlines() if line.startswith(prefix)]


def test_reads_map_back_to_their_truth(biossd, tmp_path):
    out = tmp_path / "r"
    synth(biossd, "reads", out, "--scale", "2")
    subprocess.run(["bwa", "index", str(out / "genome.fa")], check=True, capture_output=True)
    sam = subprocess.run(["bwa", "mem", str(out / "genome.fa"), str(out / "reads_1.fq"), str(out / "reads_2.fq")],
                         check=True, capture_output=True, text=True).stdout
    truth = {l.split("\t")[0]: l.split("\t")[1:3] for l in (out / "truth.tsv").read_text().splitlines()[1:]}
    firsts = [l.split("\t") for l in sam.splitlines() if not l.startswith("@") and int(l.split("\t")[1]) & 64
              and not int(l.split("\t")[1]) & 2304]
    right = sum(1 for f in firsts if f[2] == truth[f[0].rsplit("/", 1)[0]][0]
                and abs(int(f[3]) - int(truth[f[0].rsplit("/", 1)[0]][1])) <= 5)
    assert len(firsts) == len(truth) and right / len(firsts) > 0.97
    names = _names(out / "reads_1.fq", "@")
    assert len(names) == len(set(names))


def test_rnaseq_reads_splice_where_the_truth_says(biossd, tmp_path):
    out = tmp_path / "t"
    synth(biossd, "rnaseq", out)
    subprocess.run(["hisat2-build", "-q", str(out / "genome.fa"), str(out / "idx")], check=True, capture_output=True)
    sam = subprocess.run(["hisat2", "--no-unal", "-x", str(out / "idx"), "-U", str(out / "reads.fq")],
                         check=True, capture_output=True, text=True).stdout
    spliced = {l.split("\t")[0] for l in sam.splitlines() if not l.startswith("@") and "N" in l.split("\t")[5]}
    junction = {l.split("\t")[0] for l in (out / "truth.tsv").read_text().splitlines()[1:] if l.endswith("\t1")}
    assert len(spliced & junction) > 0.8 * len(junction) and len(spliced - junction) < 0.05 * len(spliced)


def test_vcf_refs_are_the_genome_bases(biossd, tmp_path):
    out = tmp_path / "v"
    synth(biossd, "vcf", out)
    subprocess.run(["samtools", "faidx", str(out / "genome.fa")], check=True)
    rows = [l.split("\t") for l in (out / "known_sites.vcf").read_text().splitlines() if not l.startswith("#")]
    sample = rows[:: max(1, len(rows) // 50)]
    regions = [f"{r[0]}:{r[1]}-{r[1]}" for r in sample]
    fa = subprocess.run(["samtools", "faidx", str(out / "genome.fa"), *regions], check=True, capture_output=True,
                        text=True).stdout
    bases = [l for l in fa.splitlines() if not l.startswith(">")]
    assert bases == [r[3] for r in sample] and all(r[3] != r[4] for r in rows)


def test_protein_families_are_found_by_blast(biossd, tmp_path):
    out = tmp_path / "p"
    synth(biossd, "proteins", out)
    subprocess.run(["makeblastdb", "-in", str(out / "proteins.fa"), "-dbtype", "prot", "-out", str(out / "db")],
                   check=True, capture_output=True)
    query = "".join((out / "proteins.fa").read_text().split(">")[1:2])
    hits = subprocess.run(["blastp", "-db", str(out / "db"), "-outfmt", "6 sseqid evalue", "-evalue", "1e-5"],
                          input=">" + query, check=True, capture_output=True, text=True).stdout
    family = query.split("_m")[0]
    found = {h.split("\t")[0] for h in hits.splitlines()}
    assert sum(1 for f in found if f.startswith(family)) == 5, "all five members, and no other family"
    assert all(f.startswith(family) for f in found)


def test_expression_matrix_clusters_with_cluster3(biossd, tmp_path):
    out = tmp_path / "e"
    synth(biossd, "expression", out)
    subprocess.run(["cluster3", "-f", str(out / "expression.txt"), "-u", str(out / "job"), "-g", "2", "-m", "a"],
                   check=True, capture_output=True)
    assert (out / "job.cdt").stat().st_size > 0 and (out / "job.gtr").stat().st_size > 0


def test_flowgrams_are_read_by_pyrodist(biossd, tmp_path):
    out = tmp_path / "f"
    synth(biossd, "flowgrams", out)
    proc = subprocess.run(["PyroDist", "-in", str(out / "flows.dat"), "-out", str(out / "pd")], capture_output=True,
                          text=True, cwd=out)
    n = int((out / "flows.dat").read_text().split()[0])
    assert proc.returncode == 0 and f"nN={n} nM=360" in proc.stdout + proc.stderr
    assert (out / "pd.fdist").stat().st_size > 0


def test_promoters_carry_the_planted_motif(biossd, tmp_path):
    out = tmp_path / "m"
    synth(biossd, "promoters", out)
    seqs = dict(zip(_names(out / "promoters.fa", ">"),
                    ["".join(b.splitlines()[1:]) for b in (out / "promoters.fa").read_text().split(">")[1:]]))
    comp = str.maketrans("ACGT", "TGCA")
    for line in (out / "motif.tsv").read_text().splitlines()[2:]:
        name, start, strand, inst = line.split("\t")
        site = seqs[name][int(start) - 1 : int(start) - 1 + len(inst)]
        assert site == (inst if strand == "+" else inst.translate(comp)[::-1])


def test_genesets_enriched_terms_score_higher(biossd, tmp_path):
    out = tmp_path / "g"
    synth(biossd, "genesets", out)
    enriched = set((out / "enriched.txt").read_text().split())
    scores = dict(l.split("\t") for l in (out / "scores.txt").read_text().splitlines()[1:])
    hi, lo = [], []
    for line in (out / "annotations.txt").read_text().splitlines()[1:]:
        probe, _, _, terms = line.split("\t")
        (hi if enriched & set(terms.split("|")) else lo).append(float(scores[probe]))
    assert sum(hi) / len(hi) > sum(lo) / len(lo) + 1.5
