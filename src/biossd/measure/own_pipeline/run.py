"""One task of a user's pipeline under the profiler, start to end: where its session is and how it
holds the host lock (side by side behind the session's leader, shared on a SLURM node, or alone),
how its command is launched and capped (a container's engine, SLURM's job, or biossd's cgroup),
its profiled run, and the status and output it gives back to Nextflow."""

from __future__ import annotations

import contextlib
import os
import signal
import socket
import sys
from pathlib import Path
from typing import Any, Callable

from biossd.core import signals
from biossd.core.errors import BiossdError
from biossd.core.owners import ProcessRef
from biossd.measure import profile, toolrun
from biossd.measure.own_pipeline import handoff
from biossd.measure.own_pipeline import session as pipeline_session
from biossd.measure.own_pipeline import task as pipeline_task


class TaskRefused(BiossdError, ValueError):
    """A task that cannot be profiled as it was given (nothing was run)."""


def run_task(encoded: str, command: list[str], owner: ProcessRef | None,
             run_handed_off: Callable[[list[str]], int] | None = None) -> int:
    """Profile the task ``encoded`` (the profiling config's ``--task``) running ``command`` (the
    task's shell) in the current directory; pass its output on to Nextflow's .command.out/.err
    and return the task's own status. ``owner``: whom it works for, if given (else the task's
    Nextflow process); ``run_handed_off``: the command line's runner, for a session leader this
    task starts to run the session's later tasks."""
    task = pipeline_task.decode(encoded)
    task["launched_by"] = handoff.LAUNCHED_BY[handoff.in_worker()]
    if not command:
        raise TaskRefused("biossd pipeline task: no command after `--` (Nextflow gives /bin/bash -ue .command.sh)")
    workdir = Path.cwd()
    outdir = pipeline_task.outdir_from_env(task=task)
    out = pipeline_task.run_dir(outdir, task, workdir)
    group, shared_group = _session(task, outdir, run_handed_off)
    command, cidfile = pipeline_task.container_launch(task, command, workdir)
    drop, why_not = pipeline_task.drops_caches(task, outdir)
    request = profile.ProfileRequest(argv=command, out_dir=out, mem_bytes=task.get("memory_bytes"),
                                     labels=pipeline_task.labels(task, workdir), overwrite=True,
                                     drop_caches=drop, kept_caches_why=why_not, group=group, shared_group=shared_group,
                                     resident_interval_s=pipeline_task.RESIDENT_INTERVAL_S,
                                     attribute_in_group=True, image=task.get("container"), perf="pmu",
                                     trace_pool=pipeline_session.trace_pool(task["session"], outdir) if group else (),
                                     group_also_tidy=handoff.remove_dead_sockets if group else None,
                                     owner=owner or pipeline_session.nextflow_of(task.get("owner_pid")))
    if cidfile is not None:  # Docker caps its container (Nextflow passes the memory directive as --memory)
        request.container_id_file, request.cap_backend = cidfile, "external"
    elif task.get("executor") == "slurm":  # SLURM's job caps it (the memory directive is the job's --mem)
        request.cap_backend = "external"
    body, signum = toolrun.profiled(request, "biossd pipeline task")
    if signum is not None:
        return profile.signal_exit_code(signum)
    signals.ignored_until_exit()
    for name, stream in (("stdout.log", sys.stdout.buffer), ("stderr.log", sys.stderr.buffer)):
        with contextlib.suppress(OSError):
            stream.write((out / name).read_bytes())
            stream.flush()
    return exit_status(body)


def exit_status(body: dict[str, Any]) -> int:
    """The status Nextflow sees for a task's run: the cap's OOM kill as SIGKILL, a signal as
    128 + its number, else the command's own exit code."""
    if body["outcome"] == "oom":
        return 128 + signal.SIGKILL
    if body.get("signal"):
        return 128 + int(body["signal"])
    return int(body.get("exit_code") or 0)


def _session(task: dict[str, Any], outdir: Path,
             run_handed_off: Callable[[list[str]], int] | None) -> tuple[str | None, str | None]:
    """Name the task's session in ``task`` and return how it holds the host lock: ``(group,
    shared_group)``, both ``None`` for a serial task."""
    on_slurm = task.get("executor") == "slurm"
    if on_slurm:
        if os.geteuid() != 0:
            raise TaskRefused(f"biossd pipeline task on node {socket.gethostname()}: needs root there (it traces the "
                              "task's block requests and reads its cgroup); run the pipeline's jobs as root, or profile "
                              "on the local executor")
        # Nextflow's process is on the submit host, not here: no owner to follow, and no leader
        # (a SLURM job's processes end with it). The run's tasks on this node hold the host lock
        # shared (biossd.host.sharedlock); the page cache is dropped once per node; memory is capped
        # by SLURM's job.
        task["owner_pid"] = None
        task["session"] = f"{task.get('run')}@{socket.gethostname()}"
    else:
        # The session: Nextflow's process (pid and start) where it is on this host, else its run
        # (its session id and run name, which a resumed run renames).
        task["session"] = pipeline_session.session_of(task.get("owner_pid")) or task.get("run")
    if task["concurrency"] != "side-by-side":
        return None, None
    if on_slurm:
        return None, pipeline_session.node_token(task["session"])
    try:
        return pipeline_session.join(str(task.get("session") or ""), task.get("owner_pid"), outdir,
                                     run_handed_off), None
    except pipeline_session.SessionError as err:
        raise TaskRefused(f"biossd pipeline task: {err}") from None
