"""A directory made whole or not at all (biossd.core.partial), and the cleanup that knows its partials."""

from __future__ import annotations

import signal
import subprocess
import sys
import time

import pytest

from biossd.core import made, partial
from biossd.measure import leftovers


@pytest.fixture
def records(tmp_path, monkeypatch):
    """The record directory in the test's own place (never the host's)."""
    here = tmp_path / "state" / "made"
    monkeypatch.setattr(made, "records_dir", lambda: here)
    return here


def _partials(parent):
    return sorted(p.name for p in parent.iterdir() if partial.INFIX in p.name)


def test_a_complete_directory_is_renamed_into_place_without_its_mark(records, tmp_path):
    final = tmp_path / "inputs" / "prepared"
    with partial.atomic_dir(final) as work:
        assert partial.is_marked(work) and work.parent == final.parent and len(list(records.glob("*.json"))) == 1
        (work / "reads.fq").write_text("@r\nACGT\n+\nIIII\n")
        assert not final.exists()
    assert sorted(p.name for p in final.iterdir()) == ["reads.fq"]
    assert _partials(final.parent) == [] and not records.exists()


def test_a_failure_leaves_nothing_and_goes_on(records, tmp_path):
    final = tmp_path / "prepared"
    with pytest.raises(RuntimeError, match="index failed"):
        with partial.atomic_dir(final) as work:
            (work / "half.bam").write_bytes(b"\0" * 100)
            raise RuntimeError("index failed")
    assert not final.exists() and _partials(tmp_path) == [] and not records.exists()


def test_an_existing_directory_is_replaced_only_when_asked(records, tmp_path):
    final = tmp_path / "image"
    final.mkdir()
    (final / "old").write_text("old")
    with pytest.raises(FileExistsError, match="appeared while it was being made"):
        with partial.atomic_dir(final) as work:
            (work / "new").write_text("new")
    assert sorted(p.name for p in final.iterdir()) == ["old"] and _partials(tmp_path) == []
    with partial.atomic_dir(final, replace=True) as work:
        (work / "new").write_text("new")
    assert sorted(p.name for p in final.iterdir()) == ["new"] and _partials(tmp_path) == [] and not records.exists()


def test_a_staging_directory_is_removed_once_its_files_moved_out(records, tmp_path):
    out = tmp_path / "synth"
    out.mkdir()
    with partial.atomic_dir(out, publish=False) as work:
        (work / "genome.fa").write_text(">c\nACGT\n")
        (work / "genome.fa").rename(out / "genome.fa")
    assert sorted(p.name for p in out.iterdir()) == ["genome.fa"] and _partials(tmp_path) == []


def test_a_killed_maker_s_partial_is_found_and_removed_by_cleanup_and_nothing_else(records, tmp_path):
    """SIGKILL inside the block: the partial stays, marked and recorded; ``biossd cleanup`` (the
    leftovers it lists) removes it once its maker is gone. A directory with the same kind of name
    but no mark is never touched."""
    final = tmp_path / "prepared"
    lookalike = tmp_path / f".prepared{partial.INFIX}1-deadbeef"
    lookalike.mkdir()
    (lookalike / "thesis.tex").write_text("keep")
    maker = subprocess.Popen(
        [sys.executable, "-c",
         "import sys, time\nfrom pathlib import Path\nfrom biossd.core import made, partial\n"
         f"made.records_dir = lambda: Path({str(records)!r})\n"
         f"with partial.atomic_dir(Path({str(final)!r})) as work:\n"
         "    (work / 'half.bam').write_bytes(b'0' * 10)\n    print('in', flush=True)\n    time.sleep(60)\n"],
        stdout=subprocess.PIPE, text=True)
    try:
        assert maker.stdout.readline().strip() == "in"
        assert [k for k, _, _ in leftovers.find_all() if k == partial.KIND] == [], "a live maker's partial is no leftover"
    finally:
        maker.send_signal(signal.SIGKILL)
        maker.wait()
    time.sleep(0.05)
    left = [p for p in tmp_path.iterdir() if partial.is_marked(p)]
    assert len(left) == 1 and not final.exists()
    found = [(what, remove) for kind, what, remove in leftovers.find_all() if kind == partial.KIND]
    assert len(found) == 1 and str(left[0]) in found[0][0]
    found[0][1]()
    assert not left[0].exists() and (lookalike / "thesis.tex").read_text() == "keep" and not records.exists()
