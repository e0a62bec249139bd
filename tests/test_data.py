"""Synthetic BAM: real samtools, determinism, replication."""

import json
import subprocess

import pytest

pytestmark = pytest.mark.integration


def test_same_seed_and_size_give_identical_bytes(biossd, tmp_path):
    a = json.loads(biossd("data", "synth", "bam", "--size", "1M", "--seed", "7", "-o", str(tmp_path / "a")).stdout)
    b = json.loads(biossd("data", "synth", "bam", "--size", "1M", "--seed", "7", "-o", str(tmp_path / "b")).stdout)
    c = json.loads(biossd("data", "synth", "bam", "--size", "1M", "--seed", "8", "-o", str(tmp_path / "c")).stdout)
    assert a["files"]["reads.bam"]["sha256"] == b["files"]["reads.bam"]["sha256"]
    assert a["files"]["reads.bam"]["sha256"] != c["files"]["reads.bam"]["sha256"]
    size = a["files"]["reads.bam"]["size_bytes"]
    assert 0.8 * (1 << 20) < size < 1.2 * (1 << 20), f"1M requested, {size} bytes written"


def test_bam_is_valid_and_scale_replicates_with_unique_names(biossd, tmp_path):
    one = json.loads(biossd("data", "synth", "bam", "--size", "256K", "-o", str(tmp_path / "x1")).stdout)
    three = json.loads(biossd("data", "synth", "bam", "--size", "256K", "--scale", "3", "-o", str(tmp_path / "x3")).stdout)
    assert three["records"] == 3 * one["records"]
    bam = tmp_path / "x3" / "reads.bam"
    subprocess.run(["samtools", "quickcheck", str(bam)], check=True)
    names = subprocess.run(["samtools", "view", str(bam)], capture_output=True, text=True, check=True).stdout
    names = [line.split("\t", 1)[0] for line in names.splitlines()]
    assert len(names) == three["records"] == len(set(names))


def test_unknown_kind_is_named(biossd, tmp_path):
    proc = biossd("data", "synth", "nosuch", "-o", str(tmp_path), check=False)
    assert proc.returncode != 0 and "unknown kind 'nosuch'" in proc.stderr
    assert "bam" in biossd("data", "synth", "--list").stdout
