"""Data manifests: schema, and verified, resumable fetching from a local HTTP server."""

from __future__ import annotations

import hashlib
import http.server
import threading
from pathlib import Path

import pytest
import yaml

from biossd.study.inputs import data, datasets
from test_prepare import SHUTDOWN_POLL_S

PAYLOAD = bytes(range(256)) * 4096  # 1 MiB


class _Handler(http.server.SimpleHTTPRequestHandler):
    """Serves PAYLOAD at /file.bin as a real server does: a Range is answered with 206 and its
    Content-Range, a range past the end with 416; requests are counted. ``lie_by`` shifts the
    Content-Range's start (a misbehaving server)."""

    ranges: list[str] = []
    lie_by = 0
    etag = '"v1"'

    def do_GET(self):  # noqa: N802 (http.server's name)
        rng = self.headers.get("Range")
        self.ranges.append(rng or "")
        body, status = PAYLOAD, 200
        if rng and self.headers.get("If-Range") not in (None, self.etag):
            rng = None  # RFC 9110: a changed file is sent whole
        if rng:
            start = int(rng.split("=")[1].split("-")[0])
            if start >= len(PAYLOAD):
                self.send_response(416)
                self.send_header("Content-Range", f"bytes */{len(PAYLOAD)}")
                self.send_header("Content-Length", "0")
                self.end_headers()
                return
            body, status = PAYLOAD[start:], 206
        self.send_response(status)
        self.send_header("ETag", self.etag)
        if status == 206:
            first = start + self.lie_by
            self.send_header("Content-Range", f"bytes {first}-{len(PAYLOAD) - 1}/{len(PAYLOAD)}")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *args):
        pass


@pytest.fixture
def server():
    httpd = http.server.ThreadingHTTPServer(("127.0.0.1", 0), _Handler)
    thread = threading.Thread(target=httpd.serve_forever, args=(SHUTDOWN_POLL_S,), daemon=True)
    thread.start()
    _Handler.ranges = []
    _Handler.lie_by = 0
    _Handler.etag = '"v1"'
    yield f"http://127.0.0.1:{httpd.server_address[1]}/file.bin"
    httpd.shutdown()


def _manifest(tmp_path: Path, url: str, sha256: str | None, size: bool = True) -> Path:
    d = tmp_path / "manifests"
    d.mkdir(exist_ok=True)
    doc = {"id": "toy", "name": "Toy", "description": "d", "source": {"url": url}, "licence": "l",
           "files": [{"name": "file.bin", "url": url, **({"size_bytes": len(PAYLOAD)} if size else {}),
                      "sha256": sha256, **({} if sha256 else {"checksum_note": "unknown here"})}],
           "used_by": ["bwa"], "recipe": "r", "synthetic": {"kind": "reads"}}
    (d / "toy.yaml").write_text(yaml.safe_dump(doc))
    return d


def test_fetch_verifies_and_resumes(tmp_path, server):
    good = hashlib.sha256(PAYLOAD).hexdigest()
    mdir = _manifest(tmp_path, server, good)
    out = tmp_path / "data"
    out.mkdir()
    (out / "file.bin.part").write_bytes(PAYLOAD[:300_000])  # an interrupted earlier download
    (out / "file.bin.part.validator").write_text('"v1"\n')  # of this version of the file
    record = datasets.fetch("toy", out, manifest_dir=mdir)
    assert (out / "file.bin").read_bytes() == PAYLOAD and not (out / "file.bin.part").exists()
    assert _Handler.ranges[-1] == "bytes=300000-" and record["files"][0]["resumed_from_bytes"] == 300_000
    assert record["files"][0]["verified"] is True and (out / "fetch.json").is_file()


def test_a_complete_part_is_verified_and_renamed_without_a_request(tmp_path, server):
    mdir = _manifest(tmp_path, server, hashlib.sha256(PAYLOAD).hexdigest())
    out = tmp_path / "data"
    out.mkdir()
    (out / "file.bin.part").write_bytes(PAYLOAD)
    record = datasets.fetch("toy", out, manifest_dir=mdir)
    assert (out / "file.bin").read_bytes() == PAYLOAD and not (out / "file.bin.part").exists()
    assert _Handler.ranges == [], "the .part was not re-requested"
    assert record["files"][0]["downloaded_bytes"] == 0


def test_a_416_for_a_part_of_unknown_size_is_not_complete(tmp_path, server):
    """Without size_bytes a 416 does not prove the .part whole (it may be longer than a changed
    file): the .part is removed, and the next fetch downloads the file whole."""
    mdir = _manifest(tmp_path, server, hashlib.sha256(PAYLOAD).hexdigest(), size=False)
    out = tmp_path / "data"
    out.mkdir()
    (out / "file.bin.part").write_bytes(PAYLOAD)
    (out / "file.bin.part.validator").write_text('"v1"\n')
    with pytest.raises(datasets.DatasetError, match="416"):
        datasets.fetch("toy", out, manifest_dir=mdir)
    assert _Handler.ranges[-1] == f"bytes={len(PAYLOAD)}-" and not (out / "file.bin.part").exists()
    datasets.fetch("toy", out, manifest_dir=mdir)
    assert (out / "file.bin").read_bytes() == PAYLOAD and _Handler.ranges[-1] == ""


def test_a_part_of_a_file_that_changed_since_is_not_resumed(tmp_path, server):
    """If-Range: the server's file is another version than the .part's, so it comes whole (and a
    .part with no recorded version is never resumed)."""
    mdir = _manifest(tmp_path, server, hashlib.sha256(PAYLOAD).hexdigest())
    out = tmp_path / "data"
    out.mkdir()
    (out / "file.bin.part").write_bytes(b"x" * 300_000)  # bytes of an older version
    (out / "file.bin.part.validator").write_text('"v0"\n')
    record = datasets.fetch("toy", out, manifest_dir=mdir)
    assert (out / "file.bin").read_bytes() == PAYLOAD and record["files"][0]["resumed_from_bytes"] == 0
    (out / "file.bin").unlink()
    (out / "file.bin.part").write_bytes(b"x" * 300_000)
    assert not (out / "file.bin.part.validator").exists()  # removed with the finished download
    datasets.fetch("toy", out, manifest_dir=mdir)
    assert (out / "file.bin").read_bytes() == PAYLOAD and _Handler.ranges[-1] == ""


def test_a_wrong_content_range_is_refused_and_the_part_kept(tmp_path, server):
    mdir = _manifest(tmp_path, server, hashlib.sha256(PAYLOAD).hexdigest())
    out = tmp_path / "data"
    out.mkdir()
    (out / "file.bin.part").write_bytes(PAYLOAD[:1000])
    (out / "file.bin.part.validator").write_text('"v1"\n')
    _Handler.lie_by = 24
    with pytest.raises(datasets.DatasetError, match="Content-Range"):
        datasets.fetch("toy", out, manifest_dir=mdir)
    assert (out / "file.bin.part").read_bytes() == PAYLOAD[:1000] and not (out / "file.bin").exists()


def test_a_wrong_checksum_is_refused_and_nothing_is_kept(tmp_path, server):
    mdir = _manifest(tmp_path, server, "0" * 64)
    out = tmp_path / "data"
    with pytest.raises(datasets.DatasetError, match="does not match"):
        datasets.fetch("toy", out, manifest_dir=mdir)
    assert not list(out.iterdir())


def test_an_unknown_checksum_is_refused_unless_accepted(tmp_path, server):
    mdir = _manifest(tmp_path, server, None)
    with pytest.raises(datasets.DatasetError, match="no known sha256"):
        datasets.fetch("toy", tmp_path / "d1", manifest_dir=mdir)
    record = datasets.fetch("toy", tmp_path / "d2", accept_unverified=True, manifest_dir=mdir)
    assert record["files"][0]["verified"] is False


def test_offline_fails_at_once_pointing_to_synth(tmp_path):
    mdir = _manifest(tmp_path, "http://127.0.0.1:9/file.bin", "0" * 64)  # nothing listens on port 9
    with pytest.raises(datasets.DatasetError, match="biossd data synth reads"):
        datasets.fetch("toy", tmp_path / "d", manifest_dir=mdir)


@pytest.mark.parametrize("edit,field", [
    (lambda d: d.pop("licence"), "licence"),
    (lambda d: d["files"][0].update(sha256="abc"), "files[0].sha256"),
    (lambda d: d["files"][0].update(sha256=None), "files[0].checksum_note"),
    (lambda d: d.update(colour="blue"), "colour"),
    (lambda d: d.update(id="other"), "id"),
    (lambda d: d["files"][0].update(name=".."), "files[0].name"),
    (lambda d: d["files"][0].update(name="."), "files[0].name"),
    (lambda d: d["files"][0].update(name=""), "files[0].name"),
    (lambda d: d["files"].append(dict(d["files"][0])), "files"),
])
def test_malformed_manifest_names_the_field(tmp_path, edit, field):
    doc = yaml.safe_load((_manifest(tmp_path, "http://x/f", "0" * 64) / "toy.yaml").read_text())
    edit(doc)
    path = tmp_path / "toy.yaml"
    path.write_text(yaml.safe_dump(doc))
    with pytest.raises(datasets.DatasetError) as err:
        datasets.load(path)
    assert str(path) in str(err.value) and f"'{field}" in str(err.value)


def test_every_manifest_loads_and_names_real_tools_and_kinds():
    from biossd.study import catalogue

    tools = {e.id for e in catalogue.load_all()}
    manifests = datasets.load_all()
    assert len(manifests) >= 12
    for m in manifests:
        assert set(m["used_by"]) <= tools, m["id"]
        assert m["synthetic"]["kind"] in data.KINDS, m["id"]
        for f in m["files"]:
            assert f["sha256"] is None or len(f["sha256"]) == 64  # never invented: unknown is null
