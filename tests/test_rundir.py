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


def test_a_task_partial_is_published_whole_or_removed(tmp_path):
    """An experiment task's directory: marked while written, renamed to its name when the block
    ends, removed when it raises; an existing directory of that name is refused, untouched."""
    import os

    from biossd.core import made
    from biossd.core import partial as partial_dir

    out = tmp_path / "task"
    with rundir.task_partial(out) as partial:
        assert partial_dir.made_by(partial, os.getpid()) and partial.name.startswith(".task" + partial_dir.INFIX)
        assert not partial_dir.made_by(partial, os.getpid() + 1)
        (partial / "point.json").write_text("{}")
    assert sorted(p.name for p in tmp_path.iterdir()) == ["task"] and (out / "point.json").is_file()
    assert not (out / partial_dir.MARKER).exists() and not made._record_path(partial).exists()
    with pytest.raises(rundir.RunDirError, match="exists; an experiment task never overwrites"):
        with rundir.task_partial(out):
            pass
    with pytest.raises(KeyboardInterrupt):
        with rundir.task_partial(tmp_path / "other") as partial:
            (partial / "half").write_text("x")
            raise KeyboardInterrupt
    assert sorted(p.name for p in tmp_path.iterdir()) == ["task"], "the interrupted task left nothing"
