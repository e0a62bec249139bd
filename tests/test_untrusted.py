"""Places and servers biossd does not trust: another user's directory named like biossd's in the
shared temporary directory, a runtime directory someone else made for a non-root user, and a
server that answers on the object store's port before S3Proxy does."""

from __future__ import annotations

import http.server
import json
import os
import signal
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

import pytest

from biossd.core.owners import start_ticks
from biossd.host import objectstore, tracefs
from test_prepare import SHUTDOWN_POLL_S

pytestmark = pytest.mark.integration
#: A uid no account uses here, standing for another local user.
OTHER_UID = 65533


def test_another_user_s_tracefs_look_alike_stops_no_cleanup_and_no_study(biossd, tmp_path, root_required):
    """Any local user can make <tmp>/biossd-tracefs-<dead pid>-...: root's `cleanup` and every
    study's `storage up` leave it alone (it is not root's), and neither fails."""
    planted = Path(tempfile.gettempdir()) / f"{tracefs.MOUNT_PREFIX}999999-1-aaaaaaaa"
    planted.mkdir()
    try:
        (planted / "x").write_text("x")
        os.chown(planted, OTHER_UID, OTHER_UID)
        assert planted not in tracefs.find_leftovers()
        assert biossd("cleanup").returncode == 0
        up = biossd("storage", "up", "--root", str(tmp_path / "storage"), "--classes", "ssd", check=False)
        assert up.returncode == 0 and "Traceback" not in up.stderr, up.stderr
        biossd("storage", "down", "--root", str(tmp_path / "storage"))
        assert (planted / "x").read_text() == "x"
    finally:
        (planted / "x").unlink(missing_ok=True)
        planted.rmdir()


def test_a_runtime_directory_someone_else_made_is_refused_not_acted_on(env, tmp_path, root_required):
    """A non-root user's runtime directory made by another user, holding a 'stale' record that
    names the user's own process: `storage up` refuses, naming the directory, and the process lives."""
    runtime = Path(tempfile.gettempdir()) / f"biossd-{OTHER_UID}"
    assert not runtime.exists(), f"{runtime} exists before the test"
    victim = subprocess.Popen(["setpriv", f"--reuid={OTHER_UID}", f"--regid={OTHER_UID}", "--clear-groups",
                               "sleep", "95"], start_new_session=True)
    try:
        time.sleep(0.3)
        (runtime / "stale").mkdir(parents=True)
        runtime.chmod(0o777)
        record = {"pid": 999999, "start_ticks": 1, "command": {"pid": victim.pid, "start_ticks": start_ticks(victim.pid)}}
        (runtime / "stale" / "x.json").write_text(json.dumps(record))
        storage = tmp_path / "storage"
        storage.mkdir()
        os.chown(storage, OTHER_UID, OTHER_UID)
        user_env = {k: v for k, v in env.items() if k != "XDG_RUNTIME_DIR"} | {"HOME": str(storage)}
        proc = subprocess.run(["setpriv", f"--reuid={OTHER_UID}", f"--regid={OTHER_UID}", "--clear-groups",
                               sys.executable, "-m", "biossd", "storage", "up", "--root", str(storage), "--classes",
                               "ssd"], capture_output=True, text=True, env=user_env, cwd=storage)
        assert proc.returncode == 2 and f"runtime directory {runtime} is owned by uid 0" in proc.stderr, proc.stderr
        assert victim.poll() is None, "the user's own process was killed on another user's record"
    finally:
        victim.send_signal(signal.SIGKILL)
        victim.wait()
        for path in sorted(runtime.rglob("*"), reverse=True):
            path.unlink() if path.is_file() else path.rmdir()
        runtime.rmdir()


class _Impostor(http.server.BaseHTTPRequestHandler):
    """Answers 200 to everything, and remembers what it was sent."""

    seen: list[str] = []

    def _answer(self) -> None:
        length = int(self.headers.get("Content-Length") or 0)
        self.rfile.read(length)
        _Impostor.seen.append(f"{self.command} {self.path}")
        self.send_response(200)
        self.send_header("Content-Length", "0")
        self.end_headers()

    do_GET = do_PUT = do_HEAD = _answer

    def log_message(self, *args):
        pass


def test_an_impostor_on_the_object_store_s_port_gets_nothing(tmp_path, monkeypatch, root_required):
    """Whatever answers 2xx on the port before S3Proxy binds is not our server: the store does not
    come up on it, and the impostor never receives the bucket or an object."""
    impostor = http.server.ThreadingHTTPServer(("127.0.0.1", 0), _Impostor)
    threading.Thread(target=impostor.serve_forever, args=(SHUTDOWN_POLL_S,), daemon=True).start()
    monkeypatch.setattr(objectstore, "_free_port", lambda: impostor.server_address[1])
    _Impostor.seen = []
    try:
        with pytest.raises(objectstore.ObjectStoreError, match="S3Proxy exited|not our S3Proxy"):
            with objectstore.ObjectStore(tmp_path / "objects", tmp_path / "mnt") as store:
                store.put(tmp_path / "never.fq")
        assert not any(line.startswith("PUT") for line in _Impostor.seen), _Impostor.seen
    finally:
        impostor.shutdown()
    assert not objectstore.find_leftovers()
