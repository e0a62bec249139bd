"""Records of what outlives a reboot (biossd.core.made) and the cleanup that reads them."""

from __future__ import annotations

import json
import os

import pytest

from biossd.core import made
from biossd.core import partial as partial_dir
from biossd.host import swap
from biossd.measure import leftovers, rundir


@pytest.fixture
def records(tmp_path, monkeypatch):
    """The record directory in the test's own place (never the host's)."""
    here = tmp_path / "state" / "biossd" / "made"
    monkeypatch.setattr(made, "records_dir", lambda: here)
    return here


def _as_if_rebooted(records_dir):
    """Every record as a previous boot would have left it (its makers' pids mean nothing now)."""
    for record_file in records_dir.glob("*.json"):
        record = json.loads(record_file.read_text())
        record["boot_id"] = "an-earlier-boot"
        record_file.write_text(json.dumps(record))


def test_a_record_lives_exactly_as_long_as_its_thing(records, tmp_path):
    target = tmp_path / "runs" / "bwa"
    partial = rundir.make_partial(target)
    assert len(list(records.glob("*.json"))) == 1
    (partial / "run.json").write_text("{}")
    rundir.publish(partial, target)
    assert not records.exists() and not records.parent.exists(), "the record directory is removed with the last record"


def test_a_record_is_written_when_another_process_removed_the_empty_directory_meanwhile(records, tmp_path,
                                                                                           monkeypatch):
    """Two biossd processes at once: one forgets its last record and removes the empty record
    directory just after the other made it, before the other's write."""
    write = made.atomic_write_text
    removed = []

    def after_the_other_pruned(target, text):
        if not removed:
            target.parent.rmdir()
            removed.append(target.parent)
        write(target, text)

    monkeypatch.setattr(made, "atomic_write_text", after_the_other_pruned)
    made.remember(tmp_path / "swapfile", "swap file")
    assert removed == [records] and len(list(records.glob("*.json"))) == 1


def test_after_a_reboot_cleanup_finds_swap_files_and_partials_by_their_records(records, tmp_path):
    """/run is empty after a reboot: no lock record names the killed run's swap file or its
    partial directories; their persistent records do, and only marked things are removed."""
    device = tmp_path / "scratch"
    device.mkdir()
    swap_file = swap.backing_path(device)
    made.remember(swap_file, "swap file")
    swap_file.write_bytes(b"\0" * 4096)
    partial = rundir.make_partial(tmp_path / "runs" / "bwa")
    task = partial_dir.partial_path(tmp_path / "experiments" / "point")
    made.remember(task, partial_dir.KIND)
    task.mkdir(parents=True)
    (task / partial_dir.MARKER).write_text(json.dumps({"pid": os.getpid()}))
    users = tmp_path / "thesis.tex"  # recorded (say, a record from a bug) but not biossd's
    made.remember(users, "swap file")
    users.write_text("keep")
    assert [k for k, _, _ in leftovers.find_all() if k in made.KINDS] == [], "a live maker's things are not leftovers"

    _as_if_rebooted(records)
    found = {kind: remove for kind, what, remove in leftovers.find_all() if kind in (*made.KINDS, "record")}
    assert set(found) == {"swap file", "partial run", partial_dir.KIND, "record"}
    for remove in found.values():
        remove()
    assert not swap_file.exists() and not partial.exists() and not task.exists()
    assert users.read_text() == "keep" and not records.exists()
