"""Every runnable tool staged from its synthetic input and profiled for real: the path a study
run takes (issue 8), natively here; the output the entry declares is written."""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

import pytest

from biossd.measure import manifest
from biossd.study import catalogue

pytestmark = pytest.mark.integration
RUNNABLE = sorted(e.id for e in catalogue.load_all() if e.kind == "tool" and e.data["status"] == "runnable")
#: Small inputs, but enough for each tool to do real work (assemblers need coverage; ClustalW
#: and all-against-all BLAST grow with the square of the sequence count).
SIZES = {"reads": "1M", "proteins": "32K"}
DEFAULT_SIZE = "128K"


@pytest.fixture(scope="module")
def inputs(biossd, tmp_path_factory):
    root = tmp_path_factory.mktemp("inputs")
    for kind in sorted({catalogue.get(t).data["input"] for t in RUNNABLE}):
        biossd("data", "synth", kind, "--size", SIZES.get(kind, DEFAULT_SIZE), "--seed", "3", "-o", str(root / kind))
    return root


@pytest.mark.parametrize("tool", RUNNABLE)
def test_staged_run_profiles_ok(biossd, env, inputs, tool, tmp_path):
    entry = catalogue.get(tool)
    scratch = tmp_path / "scratch"  # (hisat2's and blast's wrappers split paths on spaces)
    argv = biossd("catalogue", "stage", tool, "--input", str(inputs / entry.data["input"]), "--scratch", str(scratch),
                  "--mem", "1G", "--print0").stdout.split("\0")[:-1]
    run = tmp_path / "run"
    biossd("profile", "--mem", "1G", "--no-drop-caches", "--blocktrace", "off", "--label", f"tool={tool}",
           "--out", str(run), "--", *argv, cwd=scratch)
    body = manifest.read_manifest(run)
    assert body["outcome"] == "ok", (run / "stderr.log").read_text()[-2000:]
    main_output = next(iter(entry.data["outputs"]))
    produced = scratch / entry.data["stage"]["files"][main_output]
    assert produced.exists() or list(scratch.glob(produced.name + "*")), f"{produced} was not written"


def test_a_failing_preparation_is_named(biossd, tmp_path):
    empty = tmp_path / "empty"
    empty.mkdir()
    proc = biossd("catalogue", "stage", "bwa", "--input", str(empty), "--scratch", str(tmp_path / "s"), check=False)
    assert proc.returncode == 2 and "bwa index genome.fa" in proc.stderr


def test_a_workflow_s_staging_never_makes_its_scratch(biossd, tmp_path):
    """--existing-scratch (PROFILE, CHAIN): when the scratch is gone — an emulated disk taken down
    under a study interrupted while this run was staging — the copy fails and makes nothing in the
    bare mount point, where it would otherwise recreate the scratch without its mark."""
    source = tmp_path / "in"
    source.mkdir()
    (source / "reads.bam").write_bytes(b"x")
    gone = tmp_path / "mountpoint" / "biossd-3"
    (tmp_path / "mountpoint").mkdir()
    proc = biossd("catalogue", "stage", "samtools_sort", "--input", str(source), "--scratch", str(gone),
                  "--existing-scratch", check=False)
    assert proc.returncode == 2 and "does not exist" in proc.stderr and "nothing was staged" in proc.stderr
    assert list((tmp_path / "mountpoint").iterdir()) == []


def test_an_input_prepared_once_stages_without_preparing_again(biossd, env, inputs, tmp_path):
    """PREPARE runs a tool's preparation once per input; each run copies the prepared directory:
    real files (no links into the prepared one), the index kept newer than its file, and no
    preparation command run again (bwa is not on PATH when the run stages)."""
    prepared = tmp_path / "prepared"
    out = biossd("catalogue", "prepare", "bwa", "--input", str(inputs / "reads"), "--out", str(prepared)).stdout
    assert int(out) == sum(p.stat().st_size for p in (inputs / "reads").iterdir() if p.name != "synth.json")
    assert (prepared / "genome.fa").is_symlink() and (prepared / "genome.fa.bwt").is_file()
    scratch = tmp_path / "scratch"
    scratch.mkdir()
    no_bwa = {**env, "PATH": os.pathsep.join(p for p in env["PATH"].split(os.pathsep) if not (Path(p) / "bwa").exists())}
    staged_run = subprocess.run([shutil.which("biossd", path=env["PATH"]), "catalogue", "stage", "bwa", "--input",
                                 str(prepared), "--scratch", str(scratch)], env=no_bwa, capture_output=True, text=True)
    assert staged_run.returncode == 0, staged_run.stderr
    staged = {p.name for p in scratch.iterdir()}
    assert {"genome.fa", "genome.fa.bwt", "reads_1.fq"} <= staged and "prepared.json" not in staged
    assert not any(p.is_symlink() for p in scratch.iterdir())
    assert (scratch / "genome.fa.bwt").stat().st_mtime >= (scratch / "genome.fa").stat().st_mtime
    again = biossd("catalogue", "prepare", "bwa", "--input", str(inputs / "reads"), "--out", str(prepared), check=False)
    assert again.returncode == 2 and "replaces nothing" in again.stderr
    wrong = biossd("catalogue", "stage", "bowtie2", "--input", str(prepared), "--scratch", str(tmp_path / "s2"),
                   check=False)
    assert wrong.returncode == 2 and "was prepared for 'bwa'" in wrong.stderr


def test_an_input_changed_since_it_was_made_is_refused_before_any_run(biossd, tmp_path):
    source = tmp_path / "in"
    biossd("data", "synth", "proteins", "--size", "16K", "-o", str(source))
    (source / "proteins.fa").write_text(">changed\nMK\n")
    proc = biossd("catalogue", "prepare", "blast", "--input", str(source), "--out", str(tmp_path / "p"), check=False)
    assert proc.returncode == 2 and "proteins.fa is not the file" in proc.stderr and "sha256" in proc.stderr
    assert not (tmp_path / "p").exists()
