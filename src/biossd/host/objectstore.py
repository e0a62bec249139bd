"""A real S3-compatible object store on this machine, and a FUSE mount of one of its buckets
(Classmethod's Trinity-on-S3 test (2024): an assembler's input on object storage).

* The server is S3Proxy (``org.gaul:s3proxy``, the jar with its dependencies, from Maven
  Central; ``install/bootstrap.sh`` puts it in the environment) with its *file-system* backend:
  each object is a file under ``basedir``, which the experiment puts on the storage class's
  device, so the object store's own reads hit the device under study. It listens on 127.0.0.1
  only and answers only requests signed (AWS signature v4) with a key made for it at random, kept
  in its 0700 state directory; s3fs gets the key from a 0600 ``passwd_file``. Another local user
  — or anything else answering on the port — is refused.
* The client is s3fs-fuse (Debian's ``s3fs``), mounting the bucket with path-style requests and
  no local cache (``use_cache`` unset: every read is an HTTP range request to the server).

Both are owned: :class:`ObjectStore` records its intent in ``/run/biossd/objectstore/<pid>-<hex>/``
before each step (the server's command line before it starts, then its pid and start time, the
mount point), and removes both on exit, on a signal and on failure, with SIGINT and SIGTERM held
off until the teardown is done. What a SIGKILLed owner leaves is found by :func:`find_leftovers`
(``biossd doctor``/``cleanup``): a record whose maker is dead; only the server and the mount it
names are stopped and unmounted — never another process or mount.
"""

from __future__ import annotations

import contextlib
import datetime as dt
import hashlib
import hmac
import json
import os
import secrets
import shutil
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.parse
import urllib.request
import uuid
from pathlib import Path
from typing import Any

from biossd.core.commands import run_checked
from biossd.core.errors import BiossdError
from biossd.core.files import atomic_write_text, is_mount_point, remove_tree
from biossd.core.owners import ProcessRef, open_targets
from biossd.core.signals import signals_held

STATE_ROOT = Path("/run/biossd/objectstore")
S3PROXY_VERSION = "2.1.0"
S3PROXY_JAR = f"s3proxy-{S3PROXY_VERSION}-jar-with-dependencies.jar"
#: Where ``install/bootstrap.sh`` puts the jar, under the environment (``$VENV/s3proxy/``).
S3PROXY_ENV_DIR = "s3proxy"
SERVER_LABEL = "biossd object store (s3proxy)"
START_TIMEOUT_S = 60.0
STOP_GRACE_S = 5.0
_POLL_S = 0.1
S3FS_OPTIONS = ("use_path_request_style", "dbglevel=warn")
#: AWS signature v4's fixed parts for a local S3 endpoint.
SIGV4_REGION = "us-east-1"
SIGV4_SERVICE = "s3"
SIGV4_ALGORITHM = "AWS4-HMAC-SHA256"
#: Bucket and object names this store accepts: S3's safe characters, no "." or ".." segments.
_NAME_CHARS = set("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789._-")


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


#: The kernel's socket tables (``man 5 proc``): local address as HEXIP:HEXPORT, state 0A = LISTEN,
#: the socket's inode in the tenth field.
_TCP_TABLES = ("tcp", "tcp6")
_LISTEN_STATE = "0A"
_LOCAL_FIELD, _STATE_FIELD, _INODE_FIELD = 1, 3, 9


def listens(pid: int, port: int) -> bool:
    """Whether the process ``pid`` itself holds a socket listening on TCP ``port`` (its open
    file descriptors include that socket's inode), not merely some process of its namespace."""
    inodes = set()
    for table in _TCP_TABLES:
        try:
            lines = Path(f"/proc/{pid}/net/{table}").read_text().splitlines()[1:]
        except OSError:
            continue
        for line in lines:
            fields = line.split()
            if len(fields) > _INODE_FIELD and fields[_STATE_FIELD] == _LISTEN_STATE \
                    and int(fields[_LOCAL_FIELD].rsplit(":", 1)[1], 16) == port:
                inodes.add(fields[_INODE_FIELD])
    if not inodes:
        return False
    sockets = {f"socket:[{i}]" for i in inodes}
    return any(target in sockets for target in open_targets(pid))


class ObjectStore:
    """``with ObjectStore(basedir, mountpoint, bucket) as store:`` — the server up with its objects
    under ``basedir``, the bucket made, :meth:`put` to add an object (over HTTP, unprofiled) and
    :meth:`mount` to mount the bucket at ``mountpoint``; all removed on exit."""

    def __init__(self, basedir: Path, mountpoint: Path, bucket: str = "reads") -> None:
        self.basedir = Path(basedir)
        self.mountpoint = Path(mountpoint)
        self.bucket = bucket
        check_name(bucket, "bucket")
        self.state_dir = STATE_ROOT / f"{os.getpid()}-{uuid.uuid4().hex[:8]}"
        #: The server's key, made here at random: only this process and s3fs (its passwd_file) know it.
        self.key_id = "biossd" + secrets.token_hex(6)
        self.secret = secrets.token_hex(20)
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
        STATE_ROOT.mkdir(parents=True, exist_ok=True)
        self.state_dir.mkdir(mode=0o700)
        self.state_dir.chmod(0o700)
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
        fd = os.open(props, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
        with os.fdopen(fd, "w") as f:
            f.write(f"s3proxy.endpoint={self.endpoint}\ns3proxy.authorization=aws-v2-or-v4\n"
                    f"s3proxy.identity={self.key_id}\ns3proxy.credential={self.secret}\n"
                    f"jclouds.provider=filesystem\njclouds.filesystem.basedir={self.basedir}\n")
        argv = ["java", "-jar", str(s3proxy_jar()), "--properties", str(props)]
        self.state["server_argv"] = argv  # named before it starts: found by its command line if we die now
        self._save()
        log = open(self.state_dir / "server.log", "wb")
        self.server = subprocess.Popen(argv, stdout=log, stderr=log, stdin=subprocess.DEVNULL, start_new_session=True)
        log.close()
        self.state["server"] = ProcessRef.of(self.server.pid, SERVER_LABEL).record()
        self._save()
        deadline = time.monotonic() + START_TIMEOUT_S
        while True:
            # Ready only when our child runs and answers a request signed with our key: a server
            # someone else runs on the port answers it with an error, or not at all.
            if self.server.poll() is not None:
                raise ObjectStoreError(f"S3Proxy exited before it answered on {self.endpoint}: {self._log_tail()}")
            try:
                self._request("GET", "/", timeout_s=1)
                if not listens(self.server.pid, self.port):
                    # SigV4 authenticates us to the server, not the server to us: whoever answered
                    # must be our child, holding the listening socket itself.
                    raise ObjectStoreError(f"the answer on port {self.port} came from a process that is not "
                                           f"our S3Proxy (pid {self.server.pid})")
                break
            except ObjectStoreError as err:
                if time.monotonic() > deadline:
                    raise ObjectStoreError(f"S3Proxy did not answer signed requests on {self.endpoint} "
                                           f"({err}): {self._log_tail()}") from None
                time.sleep(_POLL_S)
        self._request("PUT", f"/{self.bucket}")

    def _log_tail(self) -> str:
        text = (self.state_dir / "server.log").read_text(errors="replace").strip()
        return text[-500:] or "no output"

    def _request(self, method: str, path: str, body_path: Path | None = None, timeout_s: float = 300) -> None:
        data = body_path.read_bytes() if body_path is not None else None
        host = f"127.0.0.1:{self.port}"
        headers = sigv4_headers(method, path, host, data or b"", self.key_id, self.secret)
        req = urllib.request.Request(self.endpoint + path, data=data, method=method, headers=headers)
        try:
            urllib.request.urlopen(req, timeout=timeout_s).close()
        except OSError as err:
            raise ObjectStoreError(f"{method} {self.endpoint}{path} failed: {err}") from None

    def put(self, path: Path, key: str | None = None) -> None:
        """Upload one file as an object of the bucket."""
        key = key or Path(path).name
        check_name(key, "object key")
        self._request("PUT", f"/{self.bucket}/{key}", Path(path))

    def mount(self) -> Path:
        """Mount the bucket with s3fs at the mount point (made empty if absent)."""
        self.mountpoint.mkdir(parents=True, exist_ok=True)
        if any(self.mountpoint.iterdir()) or is_mount_point(self.mountpoint):
            raise ObjectStoreError(f"{self.mountpoint} must be an empty directory that is not a mount point")
        self.state["mount"] = str(self.mountpoint)
        self._save()
        passwd = self.state_dir / "s3fs.passwd"
        fd = os.open(passwd, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
        with os.fdopen(fd, "w") as f:
            f.write(f"{self.key_id}:{self.secret}\n")
        run_checked(["s3fs", self.bucket, str(self.mountpoint), "-o", f"url={self.endpoint}",
                     "-o", f"passwd_file={passwd}", *(x for opt in S3FS_OPTIONS for x in ("-o", opt))],
                    ObjectStoreError, "mount the bucket with s3fs")
        self.mounted = True
        return self.mountpoint

    def close(self) -> None:
        with signals_held():
            _remove(self.state, self.server)
            if not (self.state.get("mount") and is_mount_point(self.state["mount"])):
                remove_tree(self.state_dir, ignore_errors=True)

    def __exit__(self, *exc: object) -> None:
        self.close()


def _remove(state: dict[str, Any], child: subprocess.Popen[bytes] | None = None) -> None:
    """Unmount the mount and stop the server that ``state`` names (only those); ``child``: the
    server as this process's child, reaped once it has stopped."""
    mount = state.get("mount")
    if mount and is_mount_point(mount):
        proc = subprocess.run(["umount", mount], capture_output=True)
        if proc.returncode != 0:
            subprocess.run(["umount", "-l", mount], capture_output=True)
    server = ProcessRef.from_record(state.get("server"))
    if server is None and state.get("server_argv"):
        # Recorded before it started, killed before its pid was: found by its exact command line.
        for pid in _pids_with_argv(state["server_argv"]):
            with contextlib.suppress(ProcessLookupError):
                os.killpg(pid, 9)
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


def _pids_with_argv(argv: list[str]) -> list[int]:
    """Processes whose command line is exactly ``argv`` (it names a state directory of ours)."""
    want = ("\0".join(argv) + "\0").encode()
    found = []
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            with contextlib.suppress(OSError):
                if (entry / "cmdline").read_bytes() == want:
                    found.append(int(entry.name))
    return found


def check_name(name: str, what: str) -> str:
    """A bucket or object name this store takes: S3's safe characters, not ``.`` or ``..``
    (which a server would read as a path); refused before it reaches the server."""
    if not name or name in (".", "..") or ".." in name or set(name) - _NAME_CHARS:
        raise ObjectStoreError(f"{what} {name!r}: use letters, digits, '.', '_' and '-', and no '..'")
    return name


def sigv4_headers(method: str, path: str, host: str, body: bytes, key_id: str, secret: str,
                  now: dt.datetime | None = None) -> dict[str, str]:
    """The headers of an AWS signature version 4 request (AWS's "Signature Version 4 signing
    process": canonical request, string to sign, derived key), for a path-style S3 request
    with no query string: ``Authorization``, ``x-amz-date`` and ``x-amz-content-sha256``."""
    now = now or dt.datetime.now(dt.timezone.utc)
    amz_date, day = now.strftime("%Y%m%dT%H%M%SZ"), now.strftime("%Y%m%d")
    payload = hashlib.sha256(body).hexdigest()
    canonical_uri = urllib.parse.quote(path, safe="/-_.~")
    signed = "host;x-amz-content-sha256;x-amz-date"
    canonical = "\n".join([method, canonical_uri, "", f"host:{host}", f"x-amz-content-sha256:{payload}",
                           f"x-amz-date:{amz_date}", "", signed, payload])
    scope = f"{day}/{SIGV4_REGION}/{SIGV4_SERVICE}/aws4_request"
    to_sign = "\n".join([SIGV4_ALGORITHM, amz_date, scope, hashlib.sha256(canonical.encode()).hexdigest()])
    key = f"AWS4{secret}".encode()
    for part in (day, SIGV4_REGION, SIGV4_SERVICE, "aws4_request"):
        key = hmac.new(key, part.encode(), hashlib.sha256).digest()
    signature = hmac.new(key, to_sign.encode(), hashlib.sha256).hexdigest()
    return {"Authorization": f"{SIGV4_ALGORITHM} Credential={key_id}/{scope}, SignedHeaders={signed}, "
                             f"Signature={signature}",
            "x-amz-date": amz_date, "x-amz-content-sha256": payload}


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
    remove_tree(state_dir, ignore_errors=True)
