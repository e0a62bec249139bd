"""Only what is provably biossd's own is deleted or replaced: a record's names never leave the
directory it governs, a file changed since biossd made it is kept, a directory is a run only by
its marker, a user's file beside a run or a download is kept, and a removal cut short keeps its
mark until last (so `biossd cleanup` finishes it)."""

from __future__ import annotations

import json
import signal

import pytest

from biossd.core import files, made
from biossd.host.hdd import emulate
from biossd.measure import manifest, rundir
from biossd.study.inputs import data, datasets


def test_a_synth_record_naming_paths_outside_its_directory_deletes_nothing(tmp_path):
    """A synth.json that did not come from this synth (copied, downloaded, edited) lists '../x'
    and an absolute path: neither is touched; the input is written and its own record replaces it."""
    victim, absolute = tmp_path / "victim.txt", tmp_path / "abs-victim.txt"
    victim.write_text("precious")
    absolute.write_text("precious")
    out = tmp_path / "d"
    out.mkdir()
    (out / data.SYNTH_RECORD).write_text(json.dumps({"files": {"../victim.txt": {}, str(absolute): {}}}))
    record = data.synth("reads", out, 64 << 10, seed=1)
    assert victim.read_text() == "precious" and absolute.read_text() == "precious"
    assert "../victim.txt" not in record["files"]


def test_a_synth_file_the_user_changed_since_is_kept(tmp_path):
    out = tmp_path / "e"
    data.synth("reads", out, 64 << 10, seed=1)
    (out / "reads_1.fq").write_text("mine\n")
    with pytest.raises(data.SynthError, match=r"reads_1\.fq changed since biossd data made it"):
        data.synth("reads", out, 64 << 10, seed=2)
    assert (out / "reads_1.fq").read_text() == "mine\n"
    (out / "reads_1.fq").unlink()  # moved away: the rest is still the record's, and replaced
    data.synth("reads", out, 64 << 10, seed=2)
    assert json.loads((out / data.SYNTH_RECORD).read_text())["seed"] == 2


def test_a_directory_that_merely_holds_a_run_json_is_not_a_run(biossd, tmp_path):
    """--overwrite replaces only a directory with biossd's marker, and only when it holds nothing
    but what its run wrote."""
    fake = tmp_path / "a18"
    fake.mkdir()
    (fake / "run.json").write_text(json.dumps({"schema": manifest.SCHEMA, "schema_version": manifest.SCHEMA_VERSION}))
    (fake / "notes.txt").write_text("notes")
    proc = biossd("profile", "--mem", "none", "--overwrite", "--out", str(fake), "--", "true", check=False)
    assert proc.returncode == 2 and "is not a biossd run directory" in proc.stderr
    assert (fake / "notes.txt").read_text() == "notes"
    run = tmp_path / "run"
    biossd("profile", "--mem", "none", "--blocktrace", "off", "--out", str(run), "--", "true")
    (run / "notes.txt").write_text("mine")
    proc = biossd("profile", "--mem", "none", "--blocktrace", "off", "--overwrite", "--out", str(run), "--", "true",
                  check=False)
    assert proc.returncode == 2 and "holds files its run did not write (notes.txt)" in proc.stderr
    assert (run / "notes.txt").read_text() == "mine"
    (run / "notes.txt").unlink()
    biossd("profile", "--mem", "none", "--blocktrace", "off", "--overwrite", "--out", str(run), "--", "true")
    assert rundir.is_ours(run) and manifest.is_complete(run)
    # The run it replaced was recorded while it was removed (a SIGKILL then leaves it to cleanup), and is gone.
    assert not [p for p in tmp_path.iterdir() if rundir.OLD_INFIX in p.name]
    assert not [r for r in made.records_dir().glob("*.json") if str(tmp_path) in r.read_text()]


def test_a_user_s_image_in_the_backing_directory_is_not_a_stale_backing_file(tmp_path):
    mine = tmp_path / f"{emulate.BACKING_PREFIX}mine.img"
    mine.write_text("mine")
    stale = tmp_path / f"{emulate.BACKING_PREFIX}0123456789ab-89abcdef.img"
    stale.write_text("")
    assert emulate.remove_stale_backing([tmp_path]) == [stale]
    assert mine.read_text() == "mine"


def test_a_fetch_never_replaces_a_file_it_did_not_download(tmp_path):
    """A file of the download's name already in -o DIR that no earlier fetch recorded is kept,
    and the fetch refuses before it asks the server."""
    out = tmp_path / "out"
    out.mkdir()
    (out / "reads.fq").write_text("mine\n")
    entry = {"name": "reads.fq", "url": "http://127.0.0.1:9/reads.fq", "size_bytes": None, "sha256": None,
             "checksum_note": "test"}
    with pytest.raises(datasets.DatasetError, match=r"reads\.fq exists and is not a file `biossd data fetch` downloaded"):
        datasets.fetch_file(entry, out, accept_unverified=True)
    assert (out / "reads.fq").read_text() == "mine\n"


def test_a_removal_cut_short_keeps_the_mark_until_last(tmp_path, monkeypatch):
    """A removal interrupted after its first subdirectory (a SIGKILL, or a signal on the way out):
    whatever is left still carries the mark (so `biossd cleanup` knows it for biossd's), because
    the mark goes last."""
    import shutil

    scratch = tmp_path / "scratch"
    scratch.mkdir()
    (scratch / rundir.SCRATCH_MARKER).touch()
    for d in ("a", "b", "z"):
        (scratch / d).mkdir()
        (scratch / d / "out.bam").write_text("x")
    (scratch / "log.txt").write_text("x")
    real = shutil.rmtree

    def cut_short(path, *args, **kwargs):
        real(path, *args, **kwargs)
        raise KeyboardInterrupt(signal.SIGTERM)

    monkeypatch.setattr(shutil, "rmtree", cut_short)
    with pytest.raises(KeyboardInterrupt):
        files.remove_tree(scratch)
    assert (scratch / rundir.SCRATCH_MARKER).is_file() and len(list(scratch.iterdir())) > 1
    monkeypatch.setattr(shutil, "rmtree", real)
    files.remove_tree(scratch)
    assert not scratch.exists()
