"""biossd.core.files: whole-or-nothing writes and a tree removal that never enters a live mount."""

from __future__ import annotations

import subprocess

import pytest

from biossd.core import files


def test_mount_points_are_unescaped(tmp_path, monkeypatch):
    info = tmp_path / "mountinfo"
    info.write_text("36 35 98:0 / /mnt/a\\040b rw - ext4 /dev/x rw\n"
                    "37 35 98:0 / /mnt/ab rw - ext4 /dev/y rw\n"
                    "38 35 98:0 / /mnt/a\\040b/in rw - ext4 /dev/z rw\n")
    monkeypatch.setattr(files, "_MOUNTINFO", info)
    assert files.mounts_under("/mnt/a b") == ["/mnt/a b", "/mnt/a b/in"]
    assert files.mounts_under("/mnt/a") == []


def test_a_tree_without_mounts_is_removed(tmp_path):
    (tmp_path / "t" / "d").mkdir(parents=True)
    (tmp_path / "t" / "d" / "f").write_text("x")
    files.remove_tree(tmp_path / "t")
    assert not (tmp_path / "t").exists()
    files.remove_tree(tmp_path / "t")  # gone already: nothing to do


@pytest.mark.integration
def test_a_tree_holding_a_live_mount_is_not_entered(tmp_path, root_required):
    """A scratch directory with a file system still mounted in it (an emulated disk whose teardown
    has not run yet): nothing is deleted, neither beside the mount nor in it, and the error names it."""
    inner = tmp_path / "scratch" / "disk"
    inner.mkdir(parents=True)
    (tmp_path / "scratch" / "beside").write_text("kept")
    subprocess.run(["mount", "-t", "tmpfs", "-o", "size=1m", "biossd-test", str(inner)], check=True)
    try:
        (inner / "on-the-mount").write_text("kept")
        with pytest.raises(OSError, match="mounted file system at .*disk"):
            files.remove_tree(tmp_path / "scratch")
        assert (inner / "on-the-mount").read_text() == "kept"
        assert (tmp_path / "scratch" / "beside").read_text() == "kept"
    finally:
        subprocess.run(["umount", str(inner)], check=True)
    files.remove_tree(tmp_path / "scratch")
    assert not (tmp_path / "scratch").exists()
