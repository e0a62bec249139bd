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


def test_synth_never_writes_over_files_it_did_not_make(biossd, tmp_path):
    """-o naming a directory with a user's file is refused and the file kept; an earlier synth is
    replaced whole (its record rewritten for the new files)."""
    out = tmp_path / "in"
    out.mkdir()
    (out / "notes.txt").write_text("mine")
    proc = biossd("data", "synth", "proteins", "--size", "16K", "-o", str(out), check=False)
    assert proc.returncode == 2 and "did not make (notes.txt)" in proc.stderr
    assert [p.name for p in out.iterdir()] == ["notes.txt"] and (out / "notes.txt").read_text() == "mine"
    again = tmp_path / "again"
    biossd("data", "synth", "proteins", "--size", "16K", "--seed", "1", "-o", str(again))
    first = json.loads((again / "synth.json").read_text())
    biossd("data", "synth", "proteins", "--size", "32K", "--seed", "2", "-o", str(again))
    second = json.loads((again / "synth.json").read_text())
    assert second["seed"] == 2 and second["files"] != first["files"]
    assert sorted(p.name for p in again.iterdir()) == sorted([*second["files"], "synth.json"])


def test_an_interrupted_synth_leaves_no_record_beside_half_new_files(tmp_path, monkeypatch):
    from biossd.study.inputs import data

    out = tmp_path / "in"
    data.synth("proteins", out, 16 * 1024, seed=1)
    before = {p.name: p.read_bytes() for p in out.iterdir()}

    def interrupted(partial, *args):
        (partial / "proteins.fa").write_text(">half\n")
        raise KeyboardInterrupt

    monkeypatch.setitem(data.KINDS, "proteins", data.Kind("proteins", "", interrupted))
    with pytest.raises(KeyboardInterrupt):
        data.synth("proteins", out, 32 * 1024, seed=2)
    assert {p.name: p.read_bytes() for p in out.iterdir()} == before, "the earlier synth must be untouched"
    assert [p.name for p in tmp_path.iterdir()] == ["in"], "the partial directory was left behind"
