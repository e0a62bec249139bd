"""Run directories and run scratch (biossd.measure.rundir): made with a mark, removed only with it."""

from __future__ import annotations

import pytest

from biossd.measure import rundir


def test_a_scratch_is_made_marked_and_removed_when_its_run_ends(tmp_path):
    where = tmp_path / "class" / "biossd-abc"
    with rundir.scratch(where) as scratch:
        assert (scratch / rundir.SCRATCH_MARKER).is_file()
        (scratch / "out.bam").write_bytes(b"x")
    assert not where.exists() and (tmp_path / "class").is_dir()


def test_a_scratch_is_removed_when_its_run_is_interrupted(tmp_path):
    where = tmp_path / "biossd-abc"
    with pytest.raises(KeyboardInterrupt):
        with rundir.scratch(where):
            raise KeyboardInterrupt(15)
    assert not where.exists()


def test_an_earlier_attempt_s_scratch_is_replaced(tmp_path):
    where = tmp_path / "biossd-abc"
    where.mkdir()
    (where / rundir.SCRATCH_MARKER).touch()
    (where / "half-written.bam").write_bytes(b"x")
    with rundir.scratch(where) as scratch:
        assert sorted(p.name for p in scratch.iterdir()) == [rundir.SCRATCH_MARKER]


def test_an_unmarked_directory_is_never_a_scratch(tmp_path):
    where = tmp_path / "mine"
    where.mkdir()
    (where / "notes.txt").write_text("keep")
    with pytest.raises(rundir.RunDirError, match="not a biossd scratch directory"):
        with rundir.scratch(where):
            pass
    assert (where / "notes.txt").read_text() == "keep"
