"""biossd.study.inputs.synthgen: the synthetic inputs' generators — the same seed and size give
the same bytes, a scale replicates the baseline with unique names, and the genome looks human."""

import numpy as np

from biossd.study.inputs import synthgen


def test_a_genome_has_the_human_gc_share_and_is_the_same_for_a_seed():
    one = synthgen.genome(np.random.default_rng(3), 200_000)
    two = synthgen.genome(np.random.default_rng(3), 200_000)
    assert all(np.array_equal(a, b) for a, b in zip(one, two))
    bases = np.concatenate(one)
    gc = np.isin(bases, np.frombuffer(b"GC", dtype=np.uint8)).mean()
    assert abs(gc - synthgen.GC_FRACTION) < 0.01


def test_reverse_complement_and_fasta_lines():
    seq = np.frombuffer(b"AACGTT", dtype=np.uint8)
    assert synthgen._revcomp(np.frombuffer(b"AACG", dtype=np.uint8)).tobytes() == b"CGTT"
    assert synthgen._revcomp(seq).tobytes() == b"AACGTT"


def test_fasta_is_wrapped_at_its_width(tmp_path):
    synthgen.write_fasta(tmp_path / "a.fa", [("c1", "ACGTACGTAC"), ("c2", np.frombuffer(b"GG", dtype=np.uint8))], width=4)
    assert (tmp_path / "a.fa").read_text() == ">c1\nACGT\nACGT\nAC\n>c2\nGG\n"


def test_a_scale_replicates_the_baseline_with_unique_names(tmp_path):
    (tmp_path / "x1").mkdir()
    (tmp_path / "x3").mkdir()
    one = synthgen.expression(tmp_path / "x1", 20_000, 5, 1)
    three = synthgen.expression(tmp_path / "x3", 20_000, 5, 3)
    assert three["records"] == 3 * one["records"]
    names = [line.split("\t")[0] for line in (tmp_path / "x3" / "expression.txt").read_text().splitlines()[2:]]
    assert len(names) == len(set(names)) == three["records"]
    again = tmp_path / "again"
    again.mkdir()
    synthgen.expression(again, 20_000, 5, 1)
    assert (again / "expression.txt").read_bytes() == (tmp_path / "x1" / "expression.txt").read_bytes()
