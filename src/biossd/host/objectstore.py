"""A real S3-compatible object store on this machine, and a FUSE mount of one of its buckets
(seed 002: an assembler's input on object storage).

* The server is S3Proxy (``org.gaul:s3proxy``, the jar with its dependencies, from Maven
  Central; ``install/bootstrap.sh`` puts it in the environment) with its *file-system* backend:
  each object is a file under ``basedir``, which the experiment puts on the storage class's
  device, so the object store's own reads hit the device under study. It listens on 127.0.0.1
  only, without authorization (a local, private server).
* The client is s3fs-fuse (Debian's ``s3fs``), mounting the bucket with path-style requests and
  no local cache (``use_cache`` unset: every read is an HTTP range request to the server).

Both are owned: :class:`ObjectStore` records its intent in ``/run/biossd/objectstore/<pid>-<hex>/``
before each step (the server's pid and start time, the mount point), and removes both on exit,
on a signal and on failure. What a SIGKILLed owner leaves is found by :func:`find_leftovers`
(``biossd doctor``/``cleanup``): a record whose maker is dead; only the server and the mount it
names are stopped and unmounted — never another process or mount.
"""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.request
import uuid
from pathlib import Path
from typing import Any

from biossd.core.commands import run_checked
from biossd.core.errors import BiossdError
from biossd.core.files import atomic_write_text
from biossd.core.owners import ProcessRef

STATE_ROOT = Path("/run/biossd/objectstore")
S3PROXY_VERSION = "2.1.0"
S3PROXY_JAR = f"s3proxy-{S3PROXY_VERSION}-jar-with-dependencies.jar"
#: Where ``install/bootstrap.sh`` puts the jar, under the environment (``$VENV/s3proxy/``).
S3PROXY_ENV_DIR = "s3proxy"
SERVER_LABEL = "biossd object store (s3proxy)"
START_TIMEOUT_S = 60.0
STOP_GRACE_S = 5.0
_POLL_S = 0.1
S3FS_OPTIONS = ("use_path_request_style", "public_bucket=1", "dbglevel=warn")


class ObjectStoreError(BiossdError, RuntimeError):
    """The object server or the mount could not be set up; the message says which and why."""


def s3proxy_jar() -> Path:
    """The S3Proxy jar: ``$BIOSSD_S3PROXY_JAR``, else the environment's copy."""
    given = os.environ.get("BIOSSD_S3PROXY_JAR")
    jar = Path(given) if given else Path(sys.prefix) / S3PROXY_ENV_DIR / S3PROXY_JAR
    if not jar.is_file():
        raise ObjectStoreError(f"the S3Proxy jar {jar} is missing: `make install` resolves it from Maven Central "
                               "(or set BIOSSD_S3PROXY_JAR)")
    return jar


def missing_features() -> list[str]:
    """What this host lacks for the object store and its mount (empty: nothing)."""
    missing = []
    if shutil.which("java") is None:
        missing.append("java (for S3Proxy)")
    if shutil.which("s3fs") is None:
        missing.append("s3fs (Debian package s3fs)")
    if not Path("/dev/fuse").exists():
        missing.append("/dev/fuse")
    try:
        s3proxy_jar()
    except ObjectStoreError as err:
        missing.append(str(err))
    return missing


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class ObjectStore:
    """``with ObjectStore(basedir, mountpoint, bucket) as store:`` — the server up with its objects
    under ``basedir``, the bucket made, :meth:`put` to add an object (over HTTP, unprofiled) and
    :meth:`mount` to mount the bucket at ``mountpoint``; all removed on exit."""

    def __init__(self, basedir: Path, mountpoint: Path, bucket: str = "reads") -> None:
        self.basedir = Path(basedir)
        self.mountpoint = Path(mountpoint)
        self.bucket = bucket
        self.state_dir = STATE_ROOT / f"{os.getpid()}-{uuid.uuid4().hex[:8]}"
        self.state: dict[str, Any] = {"maker": ProcessRef.current("biossd experiment (object store)").record()}
        self.port = 0
        self.server: subprocess.Popen[bytes] | None = None
        self.mounted = False

    @property
    def endpoint(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def _save(self) -> None:
        atomic_write_text(self.state_dir / "state.json", json.dumps(self.state, indent=2) + "\n")

    def __enter__(self) -> "ObjectStore":
        missing = missing_features()
        if missing:
            raise ObjectStoreError("cannot run the object store here; missing: " + "; ".join(missing))
        self.state_dir.mkdir(parents=True)
        self._save()
        try:
            self._start()
        except BaseException:
            self.close()
            raise
        return self

    def _start(self) -> None:
        self.basedir.mkdir(parents=True, exist_ok=True)
        self.port = _free_port()
        props = self.state_dir / "s3proxy.conf"
        props.write_text(f"s3proxy.endpoint={self.endpoint}\ns3proxy.authorization=none\n"
                         f"jclouds.provider=filesystem\njclouds.filesystem.basedir={self.basedir}\n")
        log = open(self.state_dir / "server.log", "wb")
        self.server = subprocess.Popen(["java", "-jar", str(s3proxy_jar()), "--properties", str(props)],
                                       stdout=log, stderr=log, stdin=subprocess.DEVNULL, start_new_session=True)
        log.close()
        self.state["server"] = ProcessRef.of(self.server.pid, SERVER_LABEL).record()
        self._save()
        deadline = time.monotonic() + START_TIMEOUT_S
        while True:
            try:
                urllib.request.urlopen(self.endpoint + "/", timeout=1).close()
                break
            except urllib.error.HTTPError:
                break  # the server answers (an error status is an answer)
            except OSError:
                if self.server.poll() is not None or time.monotonic() > deadline:
                    text = (self.state_dir / "server.log").read_text(errors="replace").strip()
                    raise ObjectStoreError(f"S3Proxy did not start on {self.endpoint}: "
                                           f"{text[-500:] or 'no output'}") from None
                time.sleep(_POLL_S)
        self._request("PUT", f"/{self.bucket}")

    def _request(self, method: str, path: str, body_path: Path | None = None) -> None:
        data = body_path.read_bytes() if body_path is not None else None
        req = urllib.request.Request(self.endpoint + path, data=data, method=method)
        try:
            urllib.request.urlopen(req, timeout=300).close()
        except OSError as err:
            raise ObjectStoreError(f"{method} {self.endpoint}{path} failed: {err}") from None

    def put(self, path: Path, key: str | None = None) -> None:
        """Upload one file as an object of the bucket."""
        self._request("PUT", f"/{self.bucket}/{key or Path(path).name}", Path(path))

    def mount(self) -> Path:
        """Mount the bucket with s3fs at the mount point (made empty if absent)."""
        self.mountpoint.mkdir(parents=True, exist_ok=True)
        if any(self.mountpoint.iterdir()) or os.path.ismount(self.mountpoint):
            raise ObjectStoreError(f"{self.mountpoint} must be an empty directory that is not a mount point")
        self.state["mount"] = str(self.mountpoint)
        self._save()
        run_checked(["s3fs", self.bucket, str(self.mountpoint), "-o", f"url={self.endpoint}",
                     *(x for opt in S3FS_OPTIONS for x in ("-o", opt))], ObjectStoreError, "mount the bucket with s3fs")
        self.mounted = True
        return self.mountpoint

    def close(self) -> None:
        _remove(self.state, self.server)
        shutil.rmtree(self.state_dir, ignore_errors=True)

    def __exit__(self, *exc: object) -> None:
        self.close()


def _remove(state: dict[str, Any], child: subprocess.Popen[bytes] | None = None) -> None:
    """Unmount the mount and stop the server that ``state`` names (only those); ``child``: the
    server as this process's child, reaped once it has stopped."""
    mount = state.get("mount")
    if mount and os.path.ismount(mount):
        proc = subprocess.run(["umount", mount], capture_output=True)
        if proc.returncode != 0:
            subprocess.run(["umount", "-l", mount], capture_output=True)
    server = ProcessRef.from_record(state.get("server"))
    if server is not None and server.alive():
        with contextlib.suppress(ProcessLookupError):
            os.killpg(server.pid, 15)
        if child is not None:
            try:
                child.wait(timeout=STOP_GRACE_S)
            except subprocess.TimeoutExpired:
                with contextlib.suppress(ProcessLookupError):
                    os.killpg(server.pid, 9)
                child.wait()
            return
        deadline = time.monotonic() + STOP_GRACE_S
        while server.alive() and time.monotonic() < deadline:
            time.sleep(_POLL_S)
        if server.alive():
            with contextlib.suppress(ProcessLookupError):
                os.killpg(server.pid, 9)


def find_leftovers() -> list[Path]:
    """State directories whose maker is dead (a SIGKILLed experiment task)."""
    found = []
    for state_dir in sorted(STATE_ROOT.glob("*")) if STATE_ROOT.is_dir() else []:
        try:
            state = json.loads((state_dir / "state.json").read_text())
        except (OSError, ValueError):
            state = {}
        maker = ProcessRef.from_record(state.get("maker"))
        if maker is None or not maker.alive():
            found.append(state_dir)
    return found


def remove_leftover(state_dir: Path) -> None:
    try:
        state = json.loads((Path(state_dir) / "state.json").read_text())
    except (OSError, ValueError):
        state = {}
    _remove(state)
    shutil.rmtree(state_dir, ignore_errors=True)
