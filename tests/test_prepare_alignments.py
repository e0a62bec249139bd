"""The paper's alignment and annotation data sets as study inputs: reads aligned into a BAM, a SAM
turned back into its reads, one contig of a sample cut for GATK, a GEO platform annotation for
ErmineJ. Each recipe's input is run by the tool that reads it (samtools sort, StringTie, GATK
BaseRecalibrator), and the SAM data set goes the whole way: served on 127.0.0.1, fetched,
prepared by the CLI, profiled."""

from __future__ import annotations

import gzip
import json
import subprocess
from pathlib import Path

import pytest

from biossd.measure import manifest
from biossd.study.inputs import alignments, data, datasets, kinds, recipes
from test_prepare import pinned, publish, serve, write_manifest

SIZE = 64 << 10
_COMPLEMENT = str.maketrans("ACGT", "TGCA")


def _samtools(*argv: str) -> str:
    return subprocess.run(["samtools", *argv], capture_output=True, text=True, check=True).stdout


def _profiled(biossd, tool: str, made: Path, tmp_path: Path) -> dict:
    """The tool's own preparation on the input, then one profiled, capped run: its run record."""
    prepared, run = tmp_path / f"{tool}-prepared", tmp_path / f"{tool}-run"
    biossd("catalogue", "prepare", tool, "--input", str(made), "--out", str(prepared))
    biossd("catalogue", "run", tool, "--input", str(prepared), "--scratch", str(tmp_path / f"{tool}-scratch"),
           "--out", str(run), "--mem", "1G", "--no-drop-caches", "--blocktrace", "off", "--label", f"tool={tool}")
    return manifest.read_manifest(run) | {"dir": str(run)}


@pytest.fixture(scope="module")
def rnaseq_alignments(tmp_path_factory, tool_required):
    """A 'published' RNA-seq alignment file as GEO serves one (gzipped SAM from BWA-MEM, every
    other read sequenced from the other strand, so that half align reversed; spliced reads give
    supplementary lines), its genome and gene models, behind a local HTTP server."""
    tool_required("bwa", "samtools")
    root = tmp_path_factory.mktemp("rnaseq")
    made = root / "made"
    data.synth("rnaseq", made, 256 << 10, seed=21)
    lines = (made / "reads.fq").read_text().splitlines()
    for i in range(0, len(lines), 8):  # every other record: the read as the other strand gives it
        lines[i + 1], lines[i + 3] = lines[i + 1].translate(_COMPLEMENT)[::-1], lines[i + 3][::-1]
    (made / "stranded.fq").write_text("\n".join(lines) + "\n")
    subprocess.run(["bwa", "index", str(made / "genome.fa")], capture_output=True, check=True)
    with open(made / "aligned.sam", "w") as sam:
        subprocess.run(["bwa", "mem", "-v", "1", str(made / "genome.fa"), str(made / "stranded.fq")], stdout=sam,
                       check=True)
    served = root / "served"
    publish(served, {made / "aligned.sam": "ES.aligned.sam.gz", made / "genome.fa": "mm.fa",
                     made / "genes.gtf": "mm.gtf"})
    url, httpd = serve(served)
    manifests = root / "manifests"
    write_manifest(manifests, "mm", "rnaseq", ["stringtie"],
                   [pinned(served, url, n) for n in ("ES.aligned.sam.gz", "mm.fa", "mm.gtf")],
                   {"recipe": "sam_rnaseq",
                    "files": {"alignments": "ES.aligned.sam.gz", "genome": "mm.fa", "annotation": "mm.gtf"}})
    datasets.fetch("mm", root / "data/mm", manifest_dir=manifests)
    yield {"root": root, "made": made, "manifests": manifests, "data": root / "data/mm"}
    httpd.shutdown()


@pytest.mark.beside
@pytest.mark.integration
def test_a_sam_data_set_becomes_reads_the_study_realigns(biossd, rnaseq_alignments, tmp_path):
    """fetch -> recipe -> input -> run: each read's primary line, back in the orientation it was
    sequenced (reverse-strand alignments reverse-complemented, supplementary lines dropped); the
    record names the source; StringTie's own preparation re-aligns them and the run is profiled."""
    out = tmp_path / "input"
    biossd("data", "prepare", "mm", "--data", str(rnaseq_alignments["data"]), "--size", str(SIZE), "--seed", "4",
           "--scale", "2", "-o", str(out), "--manifests", str(rnaseq_alignments["manifests"]))
    record = json.loads((out / kinds.PREPARED_RECORD).read_text())
    assert record["recipe"] == "sam_rnaseq" and record["kind"] == "rnaseq"
    assert [s["name"] for s in record["sources"]] == ["ES.aligned.sam.gz", "mm.gtf", "mm.fa"]
    assert sorted(record["files"]) == ["genes.gtf", "genome.fa", "reads.fq"]
    sam = (rnaseq_alignments["made"] / "aligned.sam").read_text()
    assert "\t2048\t" in sam or "\t2064\t" in sam, "the source has supplementary lines to drop"
    assert any(int(line.split("\t")[1]) & alignments.FLAG_REVERSE for line in sam.splitlines() if line[0] != "@")
    stranded = (rnaseq_alignments["made"] / "stranded.fq").read_text().splitlines()
    sequenced = dict(zip(stranded[::4], stranded[1::4]))
    got = (out / "reads.fq").read_text().splitlines()
    names = got[::4]
    assert len(names) == record["records"] == len(set(names)) and record["records"] // 2 < record["source_records"]
    for name, seq in zip(names, got[1::4]):
        assert seq == sequenced["@" + name.split("_", 1)[1]], name
    assert SIZE <= record["files"]["reads.fq"]["size_bytes"] / 2 < SIZE * 1.1
    run = _profiled(biossd, "stringtie", out, tmp_path)
    assert run["outcome"] == "ok" and run["exit_code"] == 0


@pytest.mark.beside
@pytest.mark.integration
def test_reads_become_an_unsorted_bam_that_samtools_sort_reads(biossd, tmp_path, tool_required):
    """align_bam: BWA-MEM aligns every read, the BAM holds a seeded subsample of about the size
    asked (its compression measured on the data set), unsorted, replicated under new names."""
    tool_required("bwa", "samtools")
    data.synth("reads", tmp_path / "lib", 256 << 10, seed=22)
    src = {"reads": tmp_path / "lib/reads_1.fq", "reference": tmp_path / "lib/genome.fa"}
    one, two = tmp_path / "one", tmp_path / "two"
    one.mkdir(), two.mkdir()
    size = 16 << 10
    made = recipes.RECIPES["align_bam"].make(src, one, size, 5, 1, {})
    assert made["files"] == ["reads.bam"] and set(made["tools"]) == {"bwa", "samtools"}
    assert made["records"] < made["source_records"] and 0.8 * size < (one / "reads.bam").stat().st_size < 1.25 * size
    assert "SO:unsorted" in _samtools("view", "-H", str(one / "reads.bam"))
    assert sorted(p.name for p in one.iterdir()) == ["reads.bam"], "the index and alignment it made are gone"
    recipes.RECIPES["align_bam"].make(src, two, size, 5, 2, {})
    names = _samtools("view", str(two / "reads.bam")).splitlines()
    assert {n.split("\t")[0][:3] for n in names} == {"x0_", "x1_"}
    assert len(names) == 2 * int(_samtools("view", "-c", str(one / "reads.bam")))
    run = _profiled(biossd, "samtools_sort", one, tmp_path)
    assert run["outcome"] == "ok" and run["exit_code"] == 0


@pytest.mark.beside
@pytest.mark.integration
def test_one_contig_of_a_sample_is_what_gatk_reads(biossd, tmp_path, tool_required):
    """gatk_region: the reads, genome and known sites of one contig only (GATK refuses contigs its
    dictionary lacks), the reads subsampled, replicated, sorted and indexed; BaseRecalibrator
    recalibrates every read of it."""
    tool_required("gatk", "samtools")
    data.synth("vcf", tmp_path / "sample", 2 << 20, seed=23)
    src = {"alignments": tmp_path / "sample/reads.bam", "genome": tmp_path / "sample/genome.fa",
           "known_sites": tmp_path / "sample/known_sites.vcf"}
    out = tmp_path / "region"
    out.mkdir()
    made = recipes.RECIPES["gatk_region"].make(src, out, 200 << 10, 6, 2, {"contig": "chr2"})
    header = _samtools("view", "-H", str(out / "reads.bam"))
    assert [h.split("\t")[1] for h in header.splitlines() if h.startswith("@SQ")] == ["SN:chr2"]
    assert "SO:coordinate" in header and "@RG" in header
    assert {line.split("\t")[2] for line in _samtools("view", str(out / "reads.bam")).splitlines()} == {"chr2"}
    assert (out / "genome.fa").read_text().count(">") == 1 and (out / "genome.dict").exists()
    vcf = (out / "known_sites.vcf").read_text().splitlines()
    assert [v.split(",")[0] for v in vcf if v.startswith("##contig")] == ["##contig=<ID=chr2"]
    assert {v.split("\t")[0] for v in vcf if not v.startswith("#")} == {"chr2"}
    assert 0 < made["records"] < 2 * made["source_records"]
    run = _profiled(biossd, "gatk_baserecalibrator", out, tmp_path)
    assert run["outcome"] == "ok" and run["exit_code"] == 0
    log = (Path(run["dir"]) / "stderr.log").read_text()
    assert f"able to recalibrate {made['records']} reads" in log


@pytest.mark.beside
@pytest.mark.integration
def test_a_region_the_sample_lacks_or_a_bam_without_read_group_is_named(tmp_path, tool_required):
    tool_required("samtools")
    data.synth("vcf", tmp_path / "sample", 256 << 10, seed=24)
    src = {"alignments": tmp_path / "sample/reads.bam", "genome": tmp_path / "sample/genome.fa",
           "known_sites": tmp_path / "sample/known_sites.vcf"}
    with pytest.raises(recipes.RecipeError, match=r"reads\.bam: no @SQ line for contig 'chr9' \(args\.contig\)"):
        recipes.RECIPES["gatk_region"].make(src, tmp_path, SIZE, 1, 1, {"contig": "chr9"})
    bare = tmp_path / "bare.bam"
    sam = [line for line in _samtools("view", "-h", str(src["alignments"])).splitlines(keepends=True)
           if not line.startswith("@RG")]
    subprocess.run(["samtools", "view", "-b", "-o", str(bare), "-"], input="".join(sam), text=True, check=True)
    with pytest.raises(recipes.RecipeError, match=r"bare\.bam: no @RG read group; GATK needs one"):
        recipes.RECIPES["gatk_region"].make({**src, "alignments": bare}, tmp_path, SIZE, 1, 1, {"contig": "chr1"})
    text = tmp_path / "aln.sam.gz"
    text.write_bytes(gzip.compress(b"@HD\tVN:1.6\nr1\t0\tchr1\n"))
    with pytest.raises(recipes.RecipeError, match=r"aln\.sam\.gz: line 2 is not a SAM record"):
        list(alignments.sam_lines(text))


#: A GEO annotation table as a GPL's .annot file gives it (a metadata preamble, the table between
#: its marks, GO ids in "GO:... ID" columns) and a platform table's GO column ("id // name // evidence").
GEO_ANNOT = (
    "^Annotation\n!Annotation_platform = GPL92\n!platform_table_begin\n"
    "ID\tGene title\tGene symbol\tGO:Function ID\tGO:Process ID\tGene Ontology Cellular Component\n"
    "100_g_at\tgene one\tONE\tGO:0003677///GO:0005515\tGO:0006355\t0005634 // nucleus // IDA /// 0005737 // x // IEA\n"
    "101_at\tgene two\tTWO\t\tGO:0006355\t\n"
    "102_at\tgene three\tTHREE\tGO:0005515\t\t\n"
    "!platform_table_end\n")


def test_a_geo_platform_annotation_becomes_erminej_s_inputs(tmp_path):
    """geo_annotations: probe, symbol, name and every GO id of the row (both GEO spellings), with
    the scores of the probes kept; a short row is named."""
    (tmp_path / "GPL92.annot").write_text(GEO_ANNOT)
    (tmp_path / "scores.txt").write_text("probe\tp\n100_g_at\t0.01\n101_at\t0.5\n102_at\t0.9\n")
    src = {"annotation": tmp_path / "GPL92.annot", "scores": tmp_path / "scores.txt"}
    out = tmp_path / "out"
    out.mkdir()
    made = recipes.RECIPES["geo_annotations"].make(src, out, 1 << 20, 1, 2, {})
    assert made["records"] == 6 and made["source_records"] == 3
    ann = (out / "annotations.txt").read_text().splitlines()
    assert ann[0] == "ProbeName\tGeneSymbol\tGeneName\tGOTerms"
    assert ann[1] == "x0_100_g_at\tONE\tgene one\tGO:0003677|GO:0005515|GO:0005634|GO:0005737|GO:0006355"
    assert ann[4].startswith("x1_100_g_at\t")
    assert (out / "scores.txt").read_text().splitlines()[1:3] == ["x0_100_g_at\t0.01", "x0_101_at\t0.5"]
    (tmp_path / "short.annot").write_text(GEO_ANNOT.replace("101_at\tgene two\tTWO\t\tGO:0006355\t\n", "101_at\tgene two\n"))
    with pytest.raises(recipes.RecipeError, match=r"short\.annot: table row 3 has 2 of the header's 6 columns"):
        recipes.RECIPES["geo_annotations"].make({**src, "annotation": tmp_path / "short.annot"}, out, 1 << 20, 1, 1, {})
