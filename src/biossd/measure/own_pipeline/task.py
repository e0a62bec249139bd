"""One task of any Nextflow pipeline, profiled: what ``nextflow/conf/profile_pipeline.config``
makes every task's interpreter (Nextflow's ``process.shell``), so a user's own pipeline is measured
with no change to it.

Nextflow runs each task as ``<shell> .command.sh`` in the task's work directory. The config
makes the shell ``biossd pipeline task --task <base64 JSON> -- /bin/bash -ue``: the JSON names the
task (process, tag, attempt, the memory it asked for) and, because Nextflow joins the shell's
words without quoting, travels as one base64 word. This module decodes it, runs
``/bin/bash -ue .command.sh`` under :func:`biossd.measure.profile.run` — the task's request stream
traced, its memory capped at what the task asked for (``memory`` directive) or not at all, the
page cache dropped first — and keeps the run directory under ``$BIOSSD_PIPELINE_OUTDIR``:

    ``runs/<process>/<tag>-<hash>/attempt-<n>/``

(the process's name with ``:`` as ``.``, the tag made a path component, the work directory's hash:
``ab/cdef12...`` as ``abcdef12``). The run's labels carry the process, tag, attempt, hash and work
directory. The task's exit status is the tool's, so Nextflow's retries and error strategies work as
without biossd. Tasks run side by side as Nextflow schedules them, members of their session's
concurrent group (:mod:`biossd.measure.own_pipeline.session`), or with ``concurrency: serial`` one at a
time, each under the host lock (a task waiting for it is not measured while it waits, only its run).

The page cache is dropped as ``drop_caches`` says (:data:`DROP_MODES`): ``once`` (the default) by
the session's first task only — the pipeline starts cold, as it would after a reboot, and its
tasks then read what earlier tasks left in memory, as they do without biossd; ``task`` before
every task (cold reads each time, as the study's runs); ``never``.
"""

from __future__ import annotations

import base64
import binascii
import json
import os
import re
from pathlib import Path
from typing import Any

from biossd.core.errors import BiossdError
from biossd.core.files import private_folder
from biossd.host.cgroups import MAX_CAP_BYTES, MIN_CAP_BYTES

#: Where the config tells each task to keep its run (the config's ``env`` scope).
OUTDIR_ENV = "BIOSSD_PIPELINE_OUTDIR"
RUNS_DIR = "runs"
#: The labels every pipeline run carries (the run table's label columns for pipelines).
LABELS = ("process", "tag", "attempt", "task_hash", "workdir", "launch_dir", "session_id", "run_name", "launched_by")
_UNSAFE = re.compile(r"[^A-Za-z0-9._+-]+")
#: How tasks run: as Nextflow schedules them (:mod:`biossd.measure.own_pipeline.session`), or one at a
#: time (each under its own host lock); a task description without it is serial.
CONCURRENCY_MODES = ("side-by-side", "serial")
#: When a task drops the page cache (the module's text); the config's true/false mean task/never.
DROP_MODES = ("once", "task", "never")
#: How often a task's resident memory is read (the study's runs: every 2 ms, for the short peaks
#: of its sizing rule). A pipeline's tasks run side by side with their profilers on the same
#: cores, where a 2 ms watch takes about 6% of a core from the tools beside it (measured with
#: ``biossd profile -- sleep 2``); every 10 ms takes about 1%. The memory the report suggests
#: for a process is its tasks' peak with a margin (:data:`biossd.analysis.findings.MEMORY_MARGIN`), not a floor.
RESIDENT_INTERVAL_S = 0.01
#: The mark of the session whose first task dropped the page cache (``once``), under the outdir.
DROPPED_MARK = "pipeline_info/.biossd-caches-dropped-{session}"


class PipelineTaskError(BiossdError, ValueError):
    """The task wrapper was given what it cannot use; the message names the option or variable."""


def encode(task: dict[str, Any]) -> str:
    """The task's description as one shell-safe word (what the config computes in Groovy)."""
    return base64.b64encode(json.dumps(task, sort_keys=True).encode()).decode()


def decode(word: str) -> dict[str, Any]:
    """:func:`encode`'s inverse, checked: a mapping with at least the process's name."""
    try:
        task = json.loads(base64.b64decode(word, validate=True))
    except (binascii.Error, ValueError) as err:
        raise PipelineTaskError(f"--task is not the base64 JSON the profiling config writes ({err})") from None
    if not isinstance(task, dict) or not task.get("process"):
        raise PipelineTaskError("--task names no process; use nextflow/conf/profile_pipeline.config as it is")
    memory = task.get("memory_bytes")
    if memory is not None and (isinstance(memory, bool) or not isinstance(memory, int)
                               or not MIN_CAP_BYTES <= memory <= MAX_CAP_BYTES):
        raise PipelineTaskError(f"--task memory_bytes {memory!r}: the process's memory directive must be a size "
                                f"between {MIN_CAP_BYTES} and {MAX_CAP_BYTES} bytes (or none)")
    drop = task.get("drop_caches", "once")
    drop = {True: "task", False: "never", "true": "task", "false": "never"}.get(drop, drop) \
        if isinstance(drop, (bool, str)) else drop
    if drop not in DROP_MODES:
        raise PipelineTaskError(f"--task drop_caches {drop!r}: --biossd_drop_caches is one of {', '.join(DROP_MODES)}")
    task["drop_caches"] = drop
    concurrency = task.get("concurrency", "serial")
    if concurrency not in CONCURRENCY_MODES:
        raise PipelineTaskError(f"--task concurrency {concurrency!r}: --biossd_concurrency is one of "
                                f"{', '.join(CONCURRENCY_MODES)}")
    if concurrency == "side-by-side" and drop == "task":
        raise PipelineTaskError("--biossd_drop_caches task drops the page cache under tasks that run beside it: "
                                "use it with --biossd_concurrency serial (or drop once, the default)")
    task["concurrency"] = concurrency
    attempt = task.get("attempt", 1)
    if isinstance(attempt, bool) or not isinstance(attempt, int) or attempt < 1:
        raise PipelineTaskError(f"--task attempt {attempt!r}: Nextflow's task.attempt is a whole number from 1")
    return task


def component(text: object, empty: str = "_") -> str:
    """``text`` as one path component: runs of unsafe characters as ``_``, no dot or ``_`` at its ends."""
    out = _UNSAFE.sub("_", str(text or "")).strip("._")
    return out[:120] or empty


def task_hash(workdir: Path) -> str:
    """Nextflow's task hash from its work directory (``.../work/ab/cdef...`` → ``abcdef...``)."""
    parts = Path(workdir).parts
    return (parts[-2] + parts[-1]) if len(parts) >= 2 else component(workdir)


def run_dir(outdir: Path, task: dict[str, Any], workdir: Path) -> Path:
    """Where this attempt's run is kept (the module's text)."""
    process = component(str(task["process"]).replace(":", "."))
    tag = component(task.get("tag"), empty="untagged")
    return Path(outdir) / RUNS_DIR / process / f"{tag}-{task_hash(workdir)[:8]}" / f"attempt-{int(task.get('attempt') or 1)}"


def labels(task: dict[str, Any], workdir: Path) -> dict[str, str]:
    """The run's labels: the task (process, tag, attempt, hash, work directory), the Nextflow
    run it belongs to (launch directory, session id, run name: where ``nextflow log`` finds it)
    and which process ran its profiler (``launched_by``: :data:`biossd.measure.own_pipeline.handoff.LAUNCHED_BY`)."""
    return {"process": str(task["process"]), "tag": str(task.get("tag") or ""),
            "attempt": str(int(task.get("attempt") or 1)), "task_hash": task_hash(workdir), "workdir": str(workdir),
            **{k: str(task[k]) for k in ("launch_dir", "session_id", "run_name", "launched_by") if task.get(k)}}


def outdir_from_env(environ: dict[str, str] | None = None, task: dict[str, Any] | None = None) -> Path:
    """Where the runs are kept: the task's own ``outdir`` (the config writes it), else
    ``$BIOSSD_PIPELINE_OUTDIR`` (a task's environment; a container launch's shell has not got it)."""
    value = (task or {}).get("outdir") or (environ if environ is not None else os.environ).get(OUTDIR_ENV)
    if not value:
        raise PipelineTaskError(f"${OUTDIR_ENV} is not set: run the pipeline with -c nextflow/conf/profile_pipeline.config "
                                "--biossd_outdir DIR")
    return Path(value)


def session_folder(outdir: Path) -> Path:
    """``outdir``'s ``pipeline_info/``, where a session keeps what its tasks read as root (its
    leader mark, its page-cache mark, its tracefs pool list): made only this user's when new, and
    refused, naming it, when another user could write it (they could point a root task's writes
    anywhere, or hold every task waiting)."""
    folder = Path(outdir) / Path(DROPPED_MARK).parent
    if not folder.exists():
        folder.mkdir(parents=True, exist_ok=True)
        os.chmod(folder, 0o755)
    why = private_folder(folder)
    if why:
        raise PipelineTaskError(f"{why}: a session's marks and trace pool live there and biossd reads them as "
                                f"root; make it yours and not writable by others (chmod go-w {folder}), or give "
                                "another --biossd_outdir")
    return folder


def drops_caches(task: dict[str, Any], outdir: Path) -> tuple[bool, str]:
    """Whether this task drops the page cache, and why not when it does not: ``task`` always,
    ``never`` never, ``once`` only the first task of its session (the one that makes the
    session's mark under ``outdir``, in one step no other task can also take)."""
    mode = task.get("drop_caches", "once")
    if mode == "task":
        return True, ""
    if mode == "never":
        return False, "--biossd_drop_caches never"
    mark = session_folder(outdir) / Path(DROPPED_MARK.format(session=component(task.get("session"),
                                                                                empty="unknown-session"))).name
    try:
        os.close(os.open(mark, os.O_CREAT | os.O_EXCL | os.O_WRONLY, 0o644))
    except FileExistsError:
        return False, "--biossd_drop_caches once: dropped by the session's first task"
    return True, ""


#: The engines whose container launch a task wraps (``nextflow/conf/profile_pipeline.config``), and
#: the verb that launches one.
ENGINE_VERBS = {"docker": "run", "singularity": "exec", "apptainer": "exec"}
#: Where Docker writes a task's container id (in its work directory), for the profiler to
#: inspect, account and remove the container.
CIDFILE = ".command.cid"


def container_launch(task: dict[str, Any], command: list[str], workdir: Path) -> tuple[list[str], Path | None]:
    """The task's command as the profiler runs it, and Docker's container-id file: a
    ``docker run`` gets ``--cidfile`` (a stale file of an earlier attempt removed first: Docker
    refuses an existing one); an Apptainer/Singularity ``exec`` runs as it is (its processes are
    the launcher's children). A native task's command is returned unchanged."""
    engine = task.get("engine")
    if not engine:
        return command, None
    if engine not in ENGINE_VERBS:
        raise PipelineTaskError(f"--task engine {engine!r}: biossd wraps the launch of {', '.join(ENGINE_VERBS)} only")
    if len(command) < 2 or Path(command[0]).name != engine or command[1] != ENGINE_VERBS[engine]:
        raise PipelineTaskError(f"the task runs in {engine}, but the command is not `{engine} {ENGINE_VERBS[engine]} ...`: "
                                f"{' '.join(command[:3])}")
    import shutil

    if shutil.which(command[0]) is None:
        raise PipelineTaskError(f"{engine} is not installed on this host ({command[0]} not found on PATH): the task "
                                f"asks for its {engine} container ({task.get('container')}); install {engine}, or "
                                "profile the pipeline with an engine this host has")
    if engine != "docker":
        return command, None
    cidfile = Path(workdir) / CIDFILE
    cidfile.unlink(missing_ok=True)
    return [command[0], command[1], "--cidfile", str(cidfile), *command[2:]], cidfile
