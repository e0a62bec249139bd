"""Seeded random interrupts of biossd's host-changing commands, and what each one left.

A *kill point* starts a real command (``biossd profile`` with a cap, swap and a block trace;
``biossd device emulate-hdd up`` or ``down``; the study pipeline with emulated storage; a task of
the object-store or shared-device experiment: servers, s3fs, nested emulated disks, a group; a
user's pipeline profiled as a session, its Nextflow, a task or its leader killed),
sends it SIGINT, SIGTERM or SIGKILL after a random delay, then checks the host against the
snapshot taken before: no cgroup, tracefs instance, loop device, swap area, mount, FUSE daemon,
scratch, state or process of biossd's may remain (after ``biossd cleanup`` where the kill was
SIGKILL — or, for the pipeline, after ``-resume``, which reconciles by itself), and no manifest
for an interrupted run. A *next-run* point SIGKILLs ``biossd profile`` and, with no cleanup
between, starts the next run at once: it must reap the dead run's tool before it measures. The
same seed gives the same points. Used by ``tests/test_interrupts.py``
(a few points) and ``benchmarks/interrupts.py`` (many).
"""

from __future__ import annotations

import contextlib
import itertools
import json
import os
import random
import shutil
import signal
import subprocess
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable

from biossd import experiments
from biossd.core import made
from biossd.core.partial import INFIX as PARTIAL_INFIX
from biossd.experiments import task as experiment_task
from biossd.features import extract as features
from biossd.host import cgroups, hostlock, swap, tracefs
from biossd.host.hdd import emulate
from biossd.measure import manifest, rundir
from biossd.measure.own_pipeline import handoff
from biossd.study import layout

REPO = Path(__file__).resolve().parents[1]
PROGRAMS = Path(__file__).resolve().parent / "programs"
SIGNALS = (signal.SIGINT, signal.SIGTERM, signal.SIGKILL)
#: The benchmark's signals: a terminal's hangup too (a closed terminal, a dropped ssh).
SIGNALS_WITH_HANGUP = (signal.SIGINT, signal.SIGTERM, signal.SIGHUP, signal.SIGKILL)
#: The next run's cap: its observer imports part of biossd (more than the hog's cap allows).
NEXT_CAP = "256M"
#: A memory hog larger than the cap, so the run pages to its swap area.
HOG_MIB, CAP, SWAP = 96, "64M", "96M"
#: How long an edge point waits for its artefact before it reports that it never appeared.
EDGE_TIMEOUT_S = 60.0


@dataclass(frozen=True)
class Edge:
    """A moment in a command's life: the first appearance of one of its artefacts (what
    ``look(work)`` returns grows). An *edge point* sends its signal right then — the moment
    just after a step, where a random delay rarely lands and a forgotten rollback shows."""

    name: str
    look: Callable[[Path], set[str]]


def _names(directory: Path, prefix: str) -> set[str]:
    return {p.name for p in directory.iterdir() if p.name.startswith(prefix)} if directory.is_dir() else set()


def _mounts(fragment: str) -> set[str]:
    return {line.split()[1] for line in Path("/proc/self/mounts").read_text().splitlines() if fragment in line}


def _processes(fragment: str, unless: str | None = None) -> set[str]:
    """Processes whose command line holds ``fragment`` (and no argument that is ``unless``: the
    whole argument, so that a checkout at a path holding the word is not mistaken for it)."""
    found = set()
    for proc in Path("/proc").iterdir():
        if proc.name.isdigit():
            with contextlib.suppress(OSError):
                argv = (proc / "cmdline").read_bytes()
                if fragment.encode() in argv and not (unless and unless.encode() in argv.split(b"\0")):
                    found.add(proc.name)
    return found


def _loops_over(directory: Path) -> set[str]:
    listing = subprocess.run(["losetup", "--list", "--noheadings", "--output", "NAME,BACK-FILE"],
                             capture_output=True, text=True).stdout
    return {line for line in listing.splitlines() if str(directory) in line or "/disk.img" in line}


#: The steps of ``biossd profile`` (cap, swap, block trace), in the order it makes them.
PROFILE_EDGES = (
    Edge("host lock", lambda work: {p.name for p in [hostlock.runtime_dir() / hostlock.HOLDER_NAME] if p.exists()}),
    Edge("partial run directory", lambda work: _names(work, ".run" + rundir.PARTIAL_INFIX)),
    Edge("swap file", lambda work: _names(work, swap.FILE_PREFIX)),
    Edge("swap area on", lambda work: set(swap.active_swaps())),
    Edge("cgroup", lambda work: set(map(str, cgroups.find_leftovers(include_live=True)))),
    Edge("tracefs instance", lambda work: set(map(str, tracefs.find_leftovers(include_live=True)))),
    Edge("the tool", lambda work: _processes(str(PROGRAMS / "memory_hog.py"), unless="biossd")),
)
#: The steps of ``biossd device emulate-hdd up`` (with swap), in the order it makes them.
EMULATE_EDGES = (
    Edge("state directory", lambda work: set(map(str, emulate.all_states()))),
    Edge("backing file", lambda work: _names(work, emulate.BACKING_PREFIX)),
    Edge("disk server", lambda work: _processes("biossd.host.hdd.server")),
    Edge("FUSE mount", lambda work: _mounts(str(emulate.STATE_ROOT))),
    Edge("loop device", _loops_over),
    Edge("file system mounted", lambda work: _mounts(str(work / "hdd"))),
    Edge("swap area on", lambda work: set(swap.active_swaps())),
)


def host_snapshot() -> dict[str, object]:
    """Everything of biossd's a host can hold, as comparable values."""
    loops = subprocess.run(["losetup", "--list", "--noheadings", "--output", "NAME,BACK-FILE"],
                           capture_output=True, text=True).stdout
    mounts = [line.split()[1] for line in Path("/proc/self/mounts").read_text().splitlines()
              if "biossd" in line or line.split()[2].startswith("fuse")]
    me = {os.getpid(), os.getppid()}
    procs = []
    for proc in Path("/proc").iterdir():
        if proc.name.isdigit() and int(proc.name) not in me:
            try:
                argv = (proc / "cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")
            except OSError:
                continue
            if ("biossd" in argv or "memory_hog" in argv) and "pytest" not in argv and "interrupts" not in argv:
                procs.append(f"{proc.name}: {argv.strip()}")
    run_dir = hostlock.runtime_dir()
    return {
        "cgroups": sorted(map(str, cgroups.find_leftovers(include_live=True))),
        "tracefs": sorted(map(str, tracefs.find_leftovers(include_live=True))),
        "loops": sorted(line for line in loops.splitlines() if line.strip()),
        "swaps": sorted(swap.active_swaps()),
        "mounts": sorted(mounts),
        "processes": sorted(procs),
        "emulations": sorted(str(p) for p in emulate.all_states()),
        "lock_holder": hostlock.held_by() is not None or (run_dir / hostlock.HOLDER_NAME).exists(),
        "stale_records": sorted(map(str, hostlock.stale_records())),
        "made_records": sorted(str(p) for p in made.records_dir().glob("*.json")),
        "leader_sockets": handoff.find_leftovers(),
    }


def differences(before: dict[str, object], after: dict[str, object]) -> dict[str, tuple[object, object]]:
    return {k: (before[k], after[k]) for k in before if before[k] != after[k]}


@dataclass
class KillPoint:
    target: str
    signal: str
    delay_s: float
    exit_code: int | None = None
    completed: bool = False
    cleanup: str = ""
    left: dict[str, object] = field(default_factory=dict)
    #: For an edge point: what had just appeared when the signal was sent.
    appeared: str = ""

    def line(self) -> str:
        state = "completed before the signal" if self.completed else f"exit {self.exit_code}"
        return (f"{self.target:<18} {self.signal:<8} at {self.delay_s:5.2f} s  {state:<28} "
                f"left: {self.left or 'nothing'}{'  (' + self.cleanup + ')' if self.cleanup else ''}"
                + (f"  [just made: {self.appeared}]" if self.appeared else ""))


def _biossd(env: dict[str, str], *args: str, timeout: float = 180) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "biossd", *args], env=env, capture_output=True, text=True,
                          timeout=timeout)


def _send(proc: subprocess.Popen, signum: int) -> None:
    """SIGINT as a terminal's Ctrl-C does (to the whole foreground process group); SIGTERM and
    SIGKILL as ``kill`` does (to the process)."""
    try:
        if signum == signal.SIGINT:
            os.killpg(proc.pid, signum)
        else:
            proc.send_signal(signum)
    except ProcessLookupError:
        pass


def _cleanup_after_sigkill(env: dict[str, str], point: KillPoint) -> None:
    done = _biossd(env, "cleanup")
    point.cleanup = f"cleanup exit {done.returncode}: " + "; ".join(done.stdout.split("\n")).strip("; ")


def _interrupt_biossd(argv: list[str], point: KillPoint, signum: int, env: dict[str, str],
                     cwd: Path | None = None, edge: Edge | None = None, work: Path | None = None) -> str:
    """Start ``biossd ARGV``, send ``signum`` after the point's delay (or, with ``edge``, the
    moment its artefact appears), wait; after a SIGKILL that cut it short, ``biossd cleanup``
    as a user would. Returns its stderr."""
    seen = edge.look(work) if edge else set()
    proc = subprocess.Popen([sys.executable, "-m", "biossd", *argv], env=env, cwd=cwd, stdout=subprocess.DEVNULL,
                            stderr=subprocess.PIPE, text=True, start_new_session=True)
    if edge is None:
        time.sleep(point.delay_s)
    else:
        started = time.monotonic()
        appeared: set[str] = set()
        while proc.poll() is None and not appeared and time.monotonic() - started < EDGE_TIMEOUT_S:
            appeared = edge.look(work) - seen
        point.appeared = ", ".join(sorted(appeared))
        point.delay_s = round(time.monotonic() - started, 2)
        if proc.poll() is not None or time.monotonic() - started >= EDGE_TIMEOUT_S:
            point.left["edge"] = f"{edge.name} never appeared before the command ended (exit {proc.poll()})"
    point.completed = proc.poll() == 0
    _send(proc, signum)
    _, err = proc.communicate(timeout=120)
    point.exit_code = proc.returncode
    if signum == signal.SIGKILL and not point.completed:
        _cleanup_after_sigkill(env, point)
    return err


def profile_point(rng: random.Random, work: Path, env: dict[str, str], max_delay_s: float = 2.0,
                  signals: tuple[int, ...] = SIGNALS) -> KillPoint:
    """``biossd profile`` with a cap, swap and a block trace, killed at a random moment (the run
    takes about 1.5 s here: most moments fall inside it)."""
    signum = rng.choice(signals)
    point = KillPoint("profile", signal.Signals(signum).name, round(rng.uniform(0.0, max_delay_s), 2))
    return _profile(point, signum, work, env)


def _profile(point: KillPoint, signum: int, work: Path, env: dict[str, str], edge: Edge | None = None) -> KillPoint:
    work.mkdir(parents=True)
    before = host_snapshot()
    run = work / "run"
    err = _interrupt_biossd(["profile", "--mem", CAP, "--swap", SWAP, "--swap-dir", str(work), "--blocktrace",
                             "auto", "--out", str(run), "--", sys.executable, str(PROGRAMS / "memory_hog.py"),
                             str(HOG_MIB)], point, signum, env, cwd=work, edge=edge, work=work)
    left = point.left | differences(before, host_snapshot())
    extra = sorted(p.name for p in work.iterdir() if p.name != "run")
    if extra:
        left["files"] = extra
    if not point.completed:
        if manifest.is_complete(run) and point.exit_code != 0:
            left["manifest"] = str(run)
        # -signum: the signal came while the interpreter was still starting, before biossd could
        # install its handler (nothing existed yet); a shell reports that as 128+signal too.
        if signum != signal.SIGKILL and point.exit_code not in (0, 128 + signum, -signum):
            left["exit"] = f"{point.exit_code}: {err[-300:]}"
    point.left = left
    return point


def emulate_point(rng: random.Random, work: Path, env: dict[str, str], action: str,
                  max_delay_s: float = 0.6, signals: tuple[int, ...] = SIGNALS) -> KillPoint:
    """``emulate-hdd up`` (or ``down`` of one that is up) killed at a random moment; then the
    emulation, if it survived whole, is taken down by hand (it is the user's until then)."""
    signum = rng.choice(signals)
    point = KillPoint(f"emulate-hdd {action}", signal.Signals(signum).name, round(rng.uniform(0.0, max_delay_s), 2))
    return _emulate(point, signum, work, env, action)


def _emulate(point: KillPoint, signum: int, work: Path, env: dict[str, str], action: str,
             edge: Edge | None = None) -> KillPoint:
    work.mkdir(parents=True)
    mount = work / "hdd"
    before = host_snapshot()
    up = ["device", "emulate-hdd", "up", "--mount", str(mount), "--size", "128M", "--swap", "16M",
          "--backing-dir", str(work)]
    if action == "down":
        done = _biossd(env, *up)
        assert done.returncode == 0, done.stderr
        argv = ["device", "emulate-hdd", "down", "--mount", str(mount)]
    else:
        argv = up
    _interrupt_biossd(argv, point, signum, env, edge=edge, work=work)
    still_up = [d for d in emulate.all_states() if emulate.status_of(d)["mount"] == str(mount)]
    if still_up:
        healthy = emulate.status_of(still_up[0])["healthy"]
        if not healthy:
            point.left["broken emulation"] = str(still_up[0])
        # A whole emulation is the user's (brought up by hand): taken down the way a user does.
        down = _biossd(env, "device", "emulate-hdd", "down", "--mount", str(mount))
        point.cleanup = (point.cleanup + f"; down by hand exit {down.returncode}").strip("; ")
    point.left.update(differences(before, host_snapshot()))
    extra = sorted(p.name for p in work.iterdir())
    if extra:
        point.left["files"] = extra
    return point


#: The experiment tasks a kill point interrupts (tiny size) and the span of their random moments
#: (about each task's length here): the object store (S3Proxy, s3fs), and two concurrent
#: instances on two emulated disks (a group of members).
EXPERIMENT_POINTS = {"object_store": (None, 2.5), "shared_device": ("n2-two", 4.0)}


def experiment_point(rng: random.Random, work: Path, env: dict[str, str], name: str) -> KillPoint:
    """A tiny task of ``name`` killed at a random moment: no server, mount, disk, member or
    partial task may remain (after ``biossd cleanup`` for a SIGKILL)."""
    point_id, max_delay_s = EXPERIMENT_POINTS[name]
    signum = rng.choice(SIGNALS)
    point = KillPoint(f"experiment {name}", signal.Signals(signum).name, round(rng.uniform(0.0, max_delay_s), 2))
    work.mkdir(parents=True)
    before = host_snapshot()
    tasks = experiments.plan(name, "tiny", ["hdd"], "ip")["tasks"]
    task = next(t for t in tasks if point_id in (None, t["point"]))
    (work / "task.json").write_text(json.dumps(task))
    err = _interrupt_biossd(["experiment", "run", "--task", f"@{work / 'task.json'}",
                             "--storage", '{"emulated": true, "profile": "seagate-barracuda-7200"}',
                             "--scratch", str(work / "scratch"), "--out", str(work / "out")], point, signum, env,
                            cwd=work)
    left = point.left | differences(before, host_snapshot())
    if left and err.strip():  # what the task said, for the point's line: why its teardown failed
        left["stderr"] = err.strip().splitlines()[-3:]
    partial = sorted(p.name for p in work.glob(".out" + PARTIAL_INFIX + "*"))
    if partial:
        left["partial task"] = partial
    for scratch in work.glob("scratch*"):  # its name gets the task's pid
        left[f"scratch {scratch.name}"] = sorted(p.name for p in scratch.iterdir())
    if not point.completed and (work / "out" / experiment_task.POINT_RECORD).is_file():
        # Published (a complete task is renamed into place whole) before the signal arrived.
        point.completed = True
    if not point.completed and (work / "out").exists():
        left["task directory of an interrupted task"] = str(work / "out")
    point.left = left
    return point


def next_run_point(rng: random.Random, work: Path, env: dict[str, str], max_delay_s: float = 2.0) -> KillPoint:
    """``biossd profile`` SIGKILLed at a random moment and, with no cleanup, the next run at
    once: the dead run's tool must be gone before the next window opens (its record says it
    reaped a stale holder when there was one); after the next run and a cleanup, nothing is left."""
    point = KillPoint("profile, next run", "SIGKILL", round(rng.uniform(0.0, max_delay_s), 2))
    work.mkdir(parents=True)
    before = host_snapshot()
    hog = [sys.executable, str(PROGRAMS / "memory_hog.py"), str(HOG_MIB)]
    proc = subprocess.Popen([sys.executable, "-m", "biossd", "profile", "--mem", CAP, "--swap", SWAP, "--swap-dir",
                             str(work), "--out", str(work / "killed"), "--", *hog], env=env, cwd=work,
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True)
    time.sleep(point.delay_s)
    point.completed = proc.poll() == 0
    holder = hostlock.held_by()
    proc.kill()
    proc.wait()
    point.exit_code = proc.returncode
    # The next run's command looks around while its window is open: the killed run's tool, and
    # its swap area, cgroup and trace instance, must all be gone before the next run measures.
    observe = [sys.executable, str(PROGRAMS / "next_run_environment.py"), str(PROGRAMS / "memory_hog.py")]
    nxt = _biossd(env, "profile", "--mem", NEXT_CAP, "--out", str(work / "next"), "--", *observe)
    if nxt.returncode != 0 or not manifest.is_complete(work / "next"):
        point.left["next run"] = nxt.stderr[-500:]
    else:
        body = manifest.read_manifest(work / "next")
        if body["outcome"] != "ok":
            point.left["next run"] = f"{body['outcome']}: {(work / 'next' / 'stderr.log').read_text()[-300:]}"
        else:
            seen = json.loads((work / "next" / "stdout.log").read_text())
            during = {what: found for what, found in seen.items() if found}
            if during:
                point.left["during the next run"] = during
        # Reaped only when the killed run had a command running (killed while it set up or tore
        # down, there was none): what the next window saw is what is checked above.
        reaped = body["host_lock"]["reaped_stale_holder"]
        point.cleanup = (f"the killed run {'held' if holder else 'did not hold'} the lock; "
                         f"next run reaped a stale holder: {'yes' if reaped else 'no'}")
    done = _biossd(env, "cleanup")
    point.cleanup += f"; cleanup exit {done.returncode}"
    point.left.update(differences(before, host_snapshot()))
    return point


def pipeline_point(rng: random.Random, work: Path, env: dict[str, str], min_delay_s: float = 10.0,
                   max_delay_s: float = 60.0) -> KillPoint:
    """The study with emulated storage (``-profile test``) killed at a random moment, then
    ``-resume``d: afterwards every expected run exists exactly once and the host is as before."""
    signum = rng.choice(SIGNALS)
    point = KillPoint("pipeline", signal.Signals(signum).name, round(rng.uniform(min_delay_s, max_delay_s), 2))
    work.mkdir(parents=True)
    before = host_snapshot()
    outdir = work / "results"
    exe = shutil.which("nextflow", path=env["PATH"])
    args = [exe, "run", str(REPO / "study"), "-profile", "test", "--outdir", str(outdir), "--host", "ip",
            "--skip_report", "--characterize_budget", "3s"]
    proc = subprocess.Popen(args, cwd=work, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                            start_new_session=True)
    time.sleep(point.delay_s)
    point.completed = proc.poll() == 0
    _send(proc, signum)
    out, _ = proc.communicate(timeout=300)
    point.exit_code = proc.returncode
    if signum != signal.SIGKILL:
        interrupted = differences(before, host_snapshot())
        if interrupted:
            point.left["after the interrupt"] = interrupted
    resumed = subprocess.run([*args, "-resume"], cwd=work, env=env, capture_output=True, text=True, timeout=900)
    if resumed.returncode != 0:
        point.left["resume"] = resumed.stdout[-2000:]
    point.cleanup = "-resume"
    point.left.update(differences(before, host_snapshot()))
    expected = {("ssd", rep) for rep in (1, 2, 3)} | {("hdd", rep) for rep in (1, 2, 3)}
    runs = features.find_run_dirs([outdir])
    found = []
    for run in runs:
        body = manifest.read_manifest(run)
        if manifest.verify(run, body):
            point.left[f"damaged {run}"] = manifest.verify(run, body)
        found.append((body["labels"]["storage"], int(body["labels"]["rep"])))
    if sorted(found) != sorted(expected):
        point.left["runs"] = sorted(found)
    partial = [str(p) for p in outdir.rglob(".*biossd-partial*")]
    if partial:
        point.left["partial run directories"] = partial
    table = outdir / layout.FEATURES_FILE
    if not table.is_file() or len(features.read_table(table)) != len(expected):
        point.left["features"] = "features.csv missing or not one row per run"
    storage_root = work / ".biossd-storage"
    if storage_root.exists() and [p.name for p in storage_root.iterdir()]:
        point.left["storage root"] = sorted(p.name for p in storage_root.iterdir())
    return point


#: A user's pipeline profiled as docs/profile-your-pipeline.md says (tests/pipelines/spill: GNU sort
#: spilling, a table retried with twice its memory), at a size whose tasks run a few seconds each.
SESSION_PIPELINE = REPO / "tests" / "pipelines" / "spill"
SESSION_CONFIG = REPO / "nextflow" / "conf" / "profile_pipeline.config"
SESSION_COUNT = 8_000_000
#: The ways a session is cut short: Nextflow SIGKILLed, a task's first attempt killed by
#: Nextflow at its time limit (then retried), the session's leader SIGKILLed.
SESSION_KINDS = ("nextflow", "task", "leader")
#: The processes whose first attempt runs past a one-second time limit at SESSION_COUNT (Nextflow
#: looks at a task's time every few seconds, so each runs several).
SESSION_SLOW_PROCESSES = ("MAKE_NUMBERS", "SORT_CHUNK")
#: How long the host may take to be as it was once Nextflow is gone: a task notices its owner's
#: death at its next look (biossd.core.owners), a leader between the tasks it takes.
SESSION_SETTLE_S = 90.0


def _leader_pids(outdir: Path) -> list[int]:
    """The session leaders working for ``outdir``, from the marks they keep there
    (``pipeline_info/.biossd-leader-<session>.json``: the leader's pid)."""
    out = []
    for mark in (outdir / "pipeline_info").glob(".biossd-leader-*.json"):
        with contextlib.suppress(OSError, ValueError, KeyError, TypeError):
            out.append(int(json.loads(mark.read_text())["pid"]))
    return out


def _settled(before: dict[str, object], deadline_s: float) -> dict[str, tuple[object, object]]:
    """What still differs from ``before`` once it stops differing or ``deadline_s`` passes."""
    end = time.monotonic() + deadline_s
    while True:
        left = differences(before, host_snapshot())
        if not left or time.monotonic() > end:
            return left
        time.sleep(1.0)


def session_point(rng: random.Random, work: Path, env: dict[str, str], kind: str,
                  max_delay_s: float = 10.0) -> KillPoint:
    """A user's pipeline profiled by biossd (about 15 s), cut short one way (:data:`SESSION_KINDS`)
    within ``max_delay_s``: the host must be as before once Nextflow has ended, with no ``biossd
    cleanup`` — and where only a task or the leader died, the pipeline must still succeed, as it
    would without biossd."""
    work.mkdir(parents=True)
    outdir = work / "out"
    outdir.mkdir()
    extra: list[str] = []
    if kind == "task":
        slow = rng.choice(SESSION_SLOW_PROCESSES)
        config = work / "time-limit.config"
        config.write_text(f"process {{\n    withName: '{slow}' {{\n        time = {{ task.attempt == 1 ? '1s' : '1h' }}\n"
                          "        errorStrategy = 'retry'\n        maxRetries = 1\n    }\n}\n")
        extra = ["-c", str(config)]
    point = KillPoint(f"session {kind}", "SIGKILL" if kind != "task" else f"time limit {slow}",
                      round(rng.uniform(2.0, max_delay_s), 2))
    before = host_snapshot()
    exe = shutil.which("nextflow", path=env["PATH"])
    args = [exe, "run", str(SESSION_PIPELINE), "-w", str(work / "work"), "-c", str(SESSION_CONFIG), *extra,
            "--biossd_outdir", str(outdir), "--outdir", str(outdir / "published"), "--count", str(SESSION_COUNT)]
    proc = subprocess.Popen(args, cwd=outdir, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                            start_new_session=True)
    started = time.monotonic()
    if kind == "nextflow":
        time.sleep(point.delay_s)
        point.completed = proc.poll() == 0
        _send(proc, signal.SIGKILL)  # Nextflow alone: its tasks and the leader are left to notice
    elif kind == "leader":
        leaders: list[int] = []
        while proc.poll() is None and not leaders and time.monotonic() - started < EDGE_TIMEOUT_S:
            leaders = _leader_pids(outdir)
            time.sleep(0.05)
        time.sleep(min(point.delay_s, 3.0))
        point.completed = proc.poll() is not None
        point.appeared = f"leader {leaders}" if leaders else "no leader appeared"
        for pid in leaders:
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGKILL)
    out, _ = proc.communicate(timeout=900)
    point.exit_code = proc.returncode
    if kind != "nextflow" and proc.returncode != 0:
        point.left["pipeline"] = f"failed (exit {proc.returncode}) where it succeeds without biossd: {out[-1500:]}"
    if kind == "task":
        log = (outdir / ".nextflow.log").read_text(errors="replace") if (outdir / ".nextflow.log").is_file() else ""
        if "exceeded running time limit" not in log:
            point.left["time limit"] = "Nextflow never killed the task (no time-limit line in .nextflow.log)"
    left = _settled(before, SESSION_SETTLE_S)
    if left:
        point.left.update(left)
    point.cleanup = f"settled in {time.monotonic() - started:.0f} s of the run"
    return point


def session_points(seed: int, work: Path, env: dict[str, str], n: int, report=print) -> list[KillPoint]:
    """``n`` session points of one seed, the kinds in turn."""
    rng = random.Random(seed)
    points = []
    for i in range(n):
        points.append(session_point(rng, work / f"session-{i}", env, SESSION_KINDS[i % len(SESSION_KINDS)]))
        report(points[-1].line())
    return points


def run_points(seed: int, work: Path, env: dict[str, str], n_profile: int, n_emulate: int,
               n_pipeline: int, report=print, n_experiment: int = 0, n_next: int = 0,
               signals: tuple[int, ...] = SIGNALS) -> list[KillPoint]:
    """The kill points of one seed: ``n_profile`` of the profiler, ``n_emulate`` of the
    emulation (up and down alternating), ``n_pipeline`` of the pipeline, ``n_experiment`` of the
    experiments' tasks (object store and shared device alternating) and ``n_next`` next-run
    points (SIGKILL, no cleanup before the next run)."""
    rng = random.Random(seed)
    points = []
    for i in range(n_profile):
        points.append(profile_point(rng, work / f"profile-{i}", env, signals=signals))
        report(points[-1].line())
    for i in range(n_emulate):
        points.append(emulate_point(rng, work / f"emulate-{i}", env, "up" if i % 2 == 0 else "down", signals=signals))
        report(points[-1].line())
    for i in range(n_pipeline):
        points.append(pipeline_point(rng, work / f"pipeline-{i}", env))
        report(points[-1].line())
    names = list(EXPERIMENT_POINTS)
    for i in range(n_experiment):
        points.append(experiment_point(rng, work / f"experiment-{i}", env, names[i % len(names)]))
        report(points[-1].line())
    for i in range(n_next):
        points.append(next_run_point(rng, work / f"next-{i}", env))
        report(points[-1].line())
    return points


def edge_points(work: Path, env: dict[str, str], profile_signals: tuple[int, ...] = SIGNALS,
                emulate_signals: tuple[int, ...] = SIGNALS, rotate: bool = False, report=print) -> list[KillPoint]:
    """Every edge of ``biossd profile`` with each of ``profile_signals``, and every edge of
    ``emulate-hdd up`` with each of ``emulate_signals`` — or, with ``rotate``, each edge once,
    the signals taken in turn."""
    def plan(edges: tuple[Edge, ...], signals: tuple[int, ...]) -> list[tuple[Edge, int]]:
        if rotate:
            return [(edge, signals[i % len(signals)]) for i, edge in enumerate(edges)]
        return list(itertools.product(edges, signals))

    points = []
    for i, (edge, signum) in enumerate(plan(PROFILE_EDGES, profile_signals)):
        point = KillPoint(f"profile @{edge.name}", signal.Signals(signum).name, 0.0)
        points.append(_profile(point, signum, work / f"edge-profile-{i}", env, edge))
        report(points[-1].line())
    for i, (edge, signum) in enumerate(plan(EMULATE_EDGES, emulate_signals)):
        point = KillPoint(f"up @{edge.name}", signal.Signals(signum).name, 0.0)
        points.append(_emulate(point, signum, work / f"edge-emulate-{i}", env, "up", edge))
        report(points[-1].line())
    return points


def summary(points: list[KillPoint]) -> str:
    bad = [p for p in points if p.left]
    return json.dumps({"points": len(points), "left_something": len(bad),
                       "by_signal": {s: sum(p.signal == s for p in points)
                                     for s in ("SIGINT", "SIGTERM", "SIGHUP", "SIGKILL")}})
