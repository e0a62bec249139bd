"""Aligner quality against the synthetic truth (biossd.measure.quality, Fig. 1(b)): the measures on
hand-made alignments, then each real aligner of Fig. 1 run on synthetic reads and scored."""

from __future__ import annotations

import json
import math
import subprocess

import pandas as pd
import pytest

from biossd.measure import quality
from biossd.study import catalogue, staging

TRUTH = pd.DataFrame({"contig": ["chr1", "chr1", "chr2", "chr1"], "pos1": [100, 500, 40, 900]},
                     index=pd.Index(["r1", "r2", "r3", "r4"], name="read"))


def test_measures_follow_the_definitions(tmp_path):
    sam = tmp_path / "a.sam"
    sam.write_text("@HD\tVN:1.6\n"
                   "r1/1\t0\tchr1\t100\t60\t100M\t*\t0\t0\tA\tI\n"        # correct
                   "r2\t16\tchr1\t503\t60\t3S97M\t*\t0\t0\tA\tI\n"       # correct once the clip is undone
                   "r2\t256\tchr2\t1\t0\t100M\t*\t0\t0\tA\tI\n"          # secondary: ignored
                   "r3\t0\tchr1\t40\t60\t100M\t*\t0\t0\tA\tI\n"          # wrong contig
                   "r4\t4\t*\t0\t0\t*\t*\t0\t0\tA\tI\n")                 # unmapped
    got = quality.score(quality.read_sam(sam), TRUTH)
    assert (got["tp"], got["fp"], got["fn"], got["tn"]) == (2, 1, 1, 0)
    assert got["sensitivity"] == pytest.approx(2 / 3) and got["precision"] == pytest.approx(2 / 3)
    assert got["accuracy"] == pytest.approx(2 / 4) and got["f_measure"] == pytest.approx(2 / 3)


def test_maq_mapview_lines_count_as_mapped():
    text = "r1/1\tchr1\t102\t+\t0\t0\t60\nr3\tchr2\t300\t-\t0\t0\t60\n"
    got = quality.score(quality.read_maq_mapview(text), TRUTH)
    assert (got["tp"], got["fp"], got["fn"]) == (1, 1, 2)


def test_no_alignment_at_all_is_nan_not_an_error():
    empty = pd.DataFrame(columns=["contig", "start", "mapped"], index=pd.Index([], name="read"))
    got = quality.score(empty, TRUTH)
    assert got["tp"] == 0 and got["fn"] == 4 and math.isnan(got["precision"])


@pytest.mark.beside
@pytest.mark.integration
@pytest.mark.parametrize("tool", ["bwa", "bowtie2", "maq"])
def test_real_aligners_are_scored_against_the_truth(biossd, tool, tmp_path):
    reads = tmp_path / "reads"
    biossd("data", "synth", "reads", "--size", "512K", "--seed", "11", "-o", str(reads))
    entry = catalogue.get(tool)
    scratch = tmp_path / "scratch"
    argv = staging.stage(entry, reads, scratch, 512 << 20)
    subprocess.run(argv, cwd=scratch, check=True, capture_output=True)
    run = tmp_path / "run"
    biossd("profile", "--mem", "none", "--no-drop-caches", "--blocktrace", "off", "--perf", "off",
           "--out", str(run), "--", "true")
    biossd("quality", tool, "--scratch", str(scratch), "--run", str(run))
    body = json.loads((run / quality.QUALITY_FILE).read_text())
    n_reads = sum(1 for _ in open(reads / "truth.tsv")) - 1
    assert body["reads"] == n_reads and body["tp"] + body["fp"] + body["fn"] == n_reads
    assert body["sensitivity"] > 0.9 and body["precision"] > 0.95, body
    from biossd.features import extract as features

    row = features.run_features(run)
    assert row["sensitivity"] == pytest.approx(body["sensitivity"])


def test_a_tool_without_a_quality_block_writes_nothing(biossd, tmp_path):
    out = biossd("quality", "samtools_sort", "--scratch", str(tmp_path), "--run", str(tmp_path))
    assert "no quality check" in out.stdout and not (tmp_path / quality.QUALITY_FILE).exists()
