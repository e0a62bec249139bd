import json
import os

import pytest

from biossd.core import files
from biossd.measure import manifest


def test_write_is_atomic_and_readable(tmp_path):
    manifest.write_manifest(tmp_path, {"outcome": "ok", "labels": {"tool": "x"}})
    assert manifest.is_complete(tmp_path)
    body = manifest.read_manifest(tmp_path)
    assert body["schema"] == manifest.SCHEMA and body["schema_version"] == manifest.SCHEMA_VERSION
    assert body["labels"] == {"tool": "x"}
    assert [p.name for p in tmp_path.iterdir()] == ["run.json"], "no temporary file is left behind"
    assert oct(os.stat(tmp_path / "run.json").st_mode & 0o777) != oct(0o600)


def test_unknown_outcome_is_refused_and_nothing_written(tmp_path):
    with pytest.raises(manifest.ManifestError, match="outcome"):
        manifest.write_manifest(tmp_path, {"outcome": "fine"})
    assert not manifest.is_complete(tmp_path)


def test_failed_write_leaves_no_partial_file(tmp_path, monkeypatch):
    def boom(*a, **k):
        raise OSError("disk full")

    monkeypatch.setattr(files.os, "replace", boom)
    with pytest.raises(OSError):
        files.atomic_write_text(tmp_path / "run.json", "{}")
    assert list(tmp_path.iterdir()) == []


def test_read_errors_name_the_file(tmp_path):
    with pytest.raises(manifest.ManifestError, match=str(tmp_path / "run.json")):
        manifest.read_manifest(tmp_path)
    (tmp_path / "run.json").write_text("{not json")
    with pytest.raises(manifest.ManifestError, match="not valid JSON"):
        manifest.read_manifest(tmp_path)
    (tmp_path / "run.json").write_text(json.dumps({"schema": "biossd.run", "schema_version": 99}))
    with pytest.raises(manifest.ManifestError, match="schema_version"):
        manifest.read_manifest(tmp_path)
