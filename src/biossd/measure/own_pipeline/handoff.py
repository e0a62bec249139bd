"""A pipeline task handed to its session's leader: the task's own Python start, spared.

Every task of a profiled pipeline starts ``biossd pipeline task`` (the profiling config's task
shell), and a new Python process that loads the profiler costs a task about 0.1 s before its tool
starts — on the pipeline's critical path, for every task. The session's leader
(:mod:`biossd.measure.own_pipeline.session`) has the profiler loaded: once it holds the host lock it
listens on :func:`socket_path` (biossd's runtime directory, mode 0600, this user's only), and a
task that is a member of its session (side by side, on the host of its Nextflow process) hands
itself off (:func:`hand_off`):

1. the task's command line, working directory, environment and umask go to the leader with its
   standard input, output and error (the descriptors themselves, ``SCM_RIGHTS``);
2. the leader checks that the task is its session's and forks a *worker*, which becomes the task
   (those descriptors, directory, environment and umask) and runs it from the same command line
   through the same code as a task in its own process (the command line's ``run`` the leader was
   given: :func:`biossd.cli.main.run_handed_off`);
3. the worker sends ``started <pid>``, then ``exit <status>``; the task's process — what
   Nextflow started and waits for — exits with that status.

A signal the task's process receives (Nextflow stopping the task; biossd's held signals) is sent
on to the worker, which ends the run as the profiler ends it on that signal; if the task's process
is gone (SIGKILL), the worker ends the run as on SIGTERM. Where nothing listens — the session's first tasks, while its
leader starts; a serial task; a SLURM node; a socket not of this user — or the leader declines,
nothing was sent and nothing ran, and the task runs in its own process as before. The run is the
same either way; its ``launched_by`` label says which (:data:`LAUNCHED_BY`).

The task's side imports the standard library only (and :mod:`biossd.core.runtime`,
:mod:`biossd.core.signals`): it is what
every task's process loads before it knows whether it will run the task itself.
"""

from __future__ import annotations

import array
import base64
import errno
import json
import os
import signal
import socket
import struct
import sys
from typing import Any, Callable

from biossd.core import runtime, signals
from biossd.host import hostlock

#: A session's leader socket, in biossd's runtime directory, named for its Nextflow process.
SOCKET_NAME = "pipeline-{owner_pid}.sock"
#: The task's descriptors that travel with it: standard input, output and error.
STDIO = (0, 1, 2)
#: The request's frame: its length, then its JSON body; the descriptors ride on the length.
HEADER = struct.Struct("!I")
#: The largest request a leader reads (a task's environment and command line).
MAX_REQUEST_BYTES = 4 * 1024 * 1024
#: The ``launched_by`` label of a run: in the task's own process, or in a worker of its leader.
LAUNCHED_BY = {False: "task process", True: "session leader"}
#: Exit status of a task whose worker ended without sending one (sysexits' EX_SOFTWARE).
EXIT_LOST = 70
#: How long a task waits for the leader that accepted it to start it (its worker forks at once):
#: past it, the leader is taken for stalled and the task runs in its own process.
HANDOFF_START_S = 60.0
#: How long a leader waits for a connected task to send its request.
REQUEST_TIMEOUT_S = 2.0

_worker = False


def in_worker() -> bool:
    """Whether this process is a leader's worker running a handed-off task."""
    return _worker


def socket_path(owner_pid: int) -> str:
    """The leader socket of the session of Nextflow process ``owner_pid``."""
    return str(runtime.checked_runtime_dir() / SOCKET_NAME.format(owner_pid=int(owner_pid)))


def member_task(argv: list[str]) -> dict[str, Any] | None:
    """The task a ``biossd pipeline task`` command line runs, if it is one that may be handed off:
    side by side, not on a SLURM node, naming its Nextflow process. Anything else — another
    command, a malformed description — is for the full command line to run (or refuse)."""
    if len(argv) < 5 or argv[:3] != ["pipeline", "task", "--task"]:
        return None
    try:
        task = json.loads(base64.b64decode(argv[3], validate=True))
    except ValueError:
        return None
    if not isinstance(task, dict) or task.get("concurrency") != "side-by-side" or task.get("executor") == "slurm":
        return None
    owner = task.get("owner_pid")
    return task if isinstance(owner, int) and not isinstance(owner, bool) and owner > 0 else None


def _peer_uid(sock: socket.socket) -> int:
    _pid, uid, _gid = struct.unpack("3i", sock.getsockopt(socket.SOL_SOCKET, socket.SO_PEERCRED, struct.calcsize("3i")))
    return uid


def hand_off(argv: list[str]) -> int | None:
    """Run the task of command line ``argv`` in its session leader's worker (the module's text):
    its exit status, or ``None`` when it was not handed off (nothing was sent, nothing ran)."""
    task = member_task(argv)
    if task is None:
        return None
    sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    try:
        sock.connect(socket_path(task["owner_pid"]))
        if _peer_uid(sock) != os.geteuid():
            sock.close()
            return None
        umask = os.umask(0)
        os.umask(umask)
        body = json.dumps({"argv": argv, "cwd": os.getcwd(), "env": dict(os.environ), "umask": umask}).encode()
        sock.sendmsg([HEADER.pack(len(body))], [(socket.SOL_SOCKET, socket.SCM_RIGHTS, array.array("i", STDIO))])
        sock.sendall(body)
    except (OSError, ValueError, runtime.UnsafeRuntimeDir):
        sock.close()
        return None
    # From here a signal (biossd's held ones) goes on to the worker (one that comes before the
    # worker started waits in the socket for it).
    received: list[int] = []

    def forward(signum: int, _frame: object) -> None:
        received.append(signum)
        _send_quietly(sock, f"signal {signum}\n".encode())

    previous = signals.for_the_process(forward)
    replies = sock.makefile("rb")
    sock.settimeout(HANDOFF_START_S)  # a leader that accepted and then stalled holds no task forever
    try:
        started = replies.readline()
    except TimeoutError:
        started = b""  # the worker, if it ever forks, finds this end closed and runs nothing
        print(f"biossd pipeline task: the session leader did not start the task within {HANDOFF_START_S:g} s; "
              "running it here", file=sys.stderr)
    sock.settimeout(None)
    if not started.startswith(b"started "):
        sock.close()  # declined, or the leader ended before it forked: the task is this process's
        signals.restore(previous)
        for signum in dict.fromkeys(received):  # what came meanwhile is this process's again
            signal.raise_signal(signum)
        return None
    while line := replies.readline():
        if line.startswith(b"exit "):
            return int(line.split()[1])
    print(f"biossd pipeline task: the session leader's worker (pid {started.split()[1].decode()}) ended without "
          "sending the task's exit status; see the run's stderr.log under --biossd_outdir", file=sys.stderr)
    return EXIT_LOST


def _send_quietly(sock: socket.socket, data: bytes) -> None:
    try:
        sock.sendall(data)
    except OSError:
        pass


class Listener:
    """A session leader's socket (the module's text): :meth:`serve` accepts the tasks that
    connect and forks a worker for each; the socket is removed on close."""

    def __init__(self, owner_pid: int, accepts: Callable[[dict[str, Any]], bool],
                 run: Callable[[list[str]], int]) -> None:
        #: ``accepts(request)``: whether a task's request (its ``argv``...) is this session's;
        #: ``run(argv)``: the command line, run in a worker (biossd's signal handlers its own).
        self.owner_pid, self.accepts, self.run = owner_pid, accepts, run
        self.path: str | None = None
        self.sock: socket.socket | None = None
        self.workers: set[int] = set()

    def __enter__(self) -> Listener:
        path = str(runtime.ensure_runtime_dir() / SOCKET_NAME.format(owner_pid=int(self.owner_pid)))
        sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        old = os.umask(0o177)
        try:
            try:
                sock.bind(path)
            except OSError as err:  # a dead leader's (no one answers it): biossd's own name, replaced
                if err.errno not in (errno.EADDRINUSE, errno.EEXIST) or _answers(path):
                    raise OSError(f"{path}: another leader of this Nextflow process listens") from None
                os.unlink(path)
                sock.bind(path)
        except OSError:
            sock.close()
            raise
        finally:
            os.umask(old)
        sock.listen(16)
        self.path, self.sock, self.inode = path, sock, os.stat(path).st_ino
        return self

    def __exit__(self, *_exc: object) -> None:
        self.close()

    def close(self) -> None:
        if self.sock is not None:
            self.sock.close()
            self.sock = None
            try:
                if os.stat(self.path).st_ino == self.inode:
                    os.unlink(self.path)
            except OSError:
                pass

    def serve(self, timeout_s: float) -> None:
        """Wait up to ``timeout_s`` for a task, hand each one that came to a worker, and reap the
        workers that ended."""
        import select

        self._reap()
        ready, _, _ = select.select([self.sock], [], [], timeout_s)
        if not ready:
            return
        conn, _ = self.sock.accept()
        with conn:
            fds: list[int] = []
            try:
                request, fds = _receive(conn)
                if request is None or _peer_uid(conn) != os.geteuid() or not self.accepts(request):
                    return
                pid = os.fork()
                if pid == 0:
                    self.sock.close()
                    _work(conn, fds, request, self.run)  # never returns
                self.workers.add(pid)
            finally:
                for fd in fds:
                    os.close(fd)

    def _reap(self) -> None:
        for pid in list(self.workers):
            try:
                done, _ = os.waitpid(pid, os.WNOHANG)
            except ChildProcessError:
                done = pid
            if done:
                self.workers.discard(pid)


def find_leftovers() -> list[str]:
    """Leader sockets nothing answers on (a leader killed before it could remove its own)."""
    try:
        directory = runtime.checked_runtime_dir()
    except runtime.UnsafeRuntimeDir:
        return []
    return sorted(str(p) for p in directory.glob(SOCKET_NAME.format(owner_pid="*"))
                  if p.name[len("pipeline-"):-len(".sock")].isdigit() and not _answers(str(p)))


def remove_dead_sockets() -> list[str]:
    """Remove every leader socket nothing answers on (what a dead leader's last task out does:
    :func:`biossd.host.grouplock.tidy_after_group`). Returns what was done."""
    done = []
    for path in find_leftovers():
        remove_leftover(path)
        done.append(f"removed a dead leader's socket {path}")
    return done


def remove_leftover(path: str) -> None:
    """Remove a dead leader's socket (:func:`find_leftovers`), unless a leader answers on it now."""
    if not _answers(path):
        try:
            os.unlink(path)
        except FileNotFoundError:
            pass


def _answers(path: str) -> bool:
    probe = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    try:
        probe.connect(path)
        return True
    except OSError:
        return False
    finally:
        probe.close()


def _receive(conn: socket.socket) -> tuple[dict[str, Any] | None, list[int]]:
    """A task's request and its descriptors; ``None`` (and whatever descriptors came, to close)
    for anything but a whole, well-formed one."""
    conn.settimeout(REQUEST_TIMEOUT_S)
    fds = array.array("i")
    try:
        head, ancillary, _flags, _addr = conn.recvmsg(HEADER.size, socket.CMSG_SPACE(len(STDIO) * fds.itemsize))
        for level, kind, data in ancillary:
            if level == socket.SOL_SOCKET and kind == socket.SCM_RIGHTS:
                fds.frombytes(data[:len(data) - len(data) % fds.itemsize])
        if len(head) != HEADER.size or len(fds) != len(STDIO):
            return None, list(fds)
        (size,) = HEADER.unpack(head)
        if size > MAX_REQUEST_BYTES:
            return None, list(fds)
        body = bytearray()
        while len(body) < size:
            chunk = conn.recv(size - len(body))
            if not chunk:
                return None, list(fds)
            body += chunk
        request = json.loads(body)
    except (OSError, ValueError):
        return None, list(fds)
    ok = (isinstance(request, dict) and isinstance(request.get("argv"), list) and isinstance(request.get("cwd"), str)
          and isinstance(request.get("env"), dict) and isinstance(request.get("umask"), int))
    return (request if ok else None), list(fds)


def _work(conn: socket.socket, fds: list[int], request: dict[str, Any], run: Callable[[list[str]], int]) -> None:
    """The worker (a fork of the leader): become the task, run it, send its status, exit."""
    global _worker
    status = EXIT_LOST
    try:
        import threading

        _worker = True
        hostlock.close_inherited()  # the leader's lock is the leader's: a dead one frees it at once
        signals.default_child_handler()
        for target, fd in zip(STDIO, fds):
            os.dup2(fd, target)
        os.chdir(request["cwd"])  # noqa: TID251 -- the worker becomes the task's process, in its directory
        os.environ.clear()
        os.environ.update({str(k): str(v) for k, v in request["env"].items()})
        os.umask(request["umask"])
        sys.argv = ["biossd", *request["argv"]]
        conn.settimeout(None)
        conn.sendall(f"started {os.getpid()}\n".encode())
        finished = threading.Event()

        def relay() -> None:  # the task's process: a signal it got, or its end (as SIGTERM)
            reader = conn.makefile("rb")
            for line in reader:
                if line.startswith(b"signal "):
                    os.kill(os.getpid(), int(line.split()[1]))
            if not finished.is_set():
                os.kill(os.getpid(), signal.SIGTERM)

        threading.Thread(target=relay, name="biossd-handoff-relay", daemon=True).start()
        try:
            status = run(request["argv"])
        except SystemExit as end:  # argparse's refusal, --help
            status = end.code if isinstance(end.code, int) else (0 if end.code is None else 1)
        for stream in (sys.stdout, sys.stderr):
            try:
                stream.flush()
            except (OSError, ValueError):
                pass
        signals.ignored_until_exit()  # the task has ended: nothing may cut its status short
        finished.set()
        conn.sendall(f"exit {int(status)}\n".encode())
    except BaseException:  # a worker never returns into the leader's loop
        try:
            import traceback

            traceback.print_exc()
        finally:
            os._exit(EXIT_LOST)
    os._exit(0)
