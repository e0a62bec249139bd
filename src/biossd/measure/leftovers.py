"""Leftovers of profiled runs that were killed before they could clean up: cgroups, tracefs
instances and mounts, loop-device swap areas, the partial run directories named by stale
host-lock records, and emulated HDDs whose owner is gone (or that broke, if brought up by hand).
``biossd doctor`` lists them and ``biossd cleanup`` removes them — and nothing that is in use.

Every such object is named ``<prefix><pid>-<ticks>-<hex>`` after the process that made it; one whose
process is still running belongs to a live run and is not a leftover. A profiled run whose
owner (the Nextflow session it worked for) is dead is an *orphan*: :func:`stop_orphans` ends
it, which is what a resumed study does first. Swap files and partial directories also have a
record that survives a reboot (:mod:`biossd.core.made`), so they are found when ``/run`` is empty."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Callable

from biossd.core.files import remove_tree

if TYPE_CHECKING:
    from biossd.core.owners import ProcessRef


def find_all() -> list[tuple[str, str, Callable[[], None]]]:
    """``(kind, what, remove)`` for every leftover on this host."""
    from biossd.core import made
    from biossd.core.owners import ProcessRef
    from biossd.host import cgroups, codeholder, dockerengine, hostlock, objectstore, swap, tracefs
    from biossd.host.hdd import emulate
    from biossd.host.slurm import cluster
    from biossd.measure.own_pipeline import handoff

    found: list[tuple[str, str, Callable[[], None]]] = []
    for record in hostlock.stale_records():
        found.append(("killed run", _describe_stale(record), lambda r=record: _remove_stale(r)))
    for path in cgroups.find_leftovers():
        found.append(("cgroup", str(path), lambda p=path: cgroups.remove_cgroup(p)))
    for path in tracefs.find_leftovers():
        found.append(("tracefs", str(path), lambda p=path: tracefs.remove_leftover(p)))
    for sock in handoff.find_leftovers():
        found.append(("leader socket", f"{sock} (a pipeline session's leader that was killed)",
                      lambda p=sock: handoff.remove_leftover(p)))
    for entry in swap.find_leftovers():
        found.append(("swap", entry, lambda e=entry: swap.remove_leftover(e)))
    slurm = cluster.leftover()
    if slurm is not None:
        found.append(("slurm-cluster", f"one-node SLURM cluster whose owner is gone ({slurm['dir']})",
                      lambda: cluster.down()))
    engine = dockerengine.leftover()
    if engine is not None:
        found.append(("docker-engine", f"Docker engine whose owner is gone ({engine['dir']})",
                      lambda: dockerengine.down()))
    for record in codeholder.leftovers():
        owner = ProcessRef.from_record(record.get("owner"))
        found.append(("code holder", f"code of {record.get('key') or 'a tool'} held for "
                      f"{owner.describe() if owner else 'nobody'}, which is gone ({record['path']})",
                      lambda r=record: codeholder.remove_leftover(r)))
    for state_dir in objectstore.find_leftovers():
        found.append(("object-store", f"S3Proxy server and s3fs mount of a killed experiment task ({state_dir})",
                      lambda d=state_dir: objectstore.remove_leftover(d)))
    # Innermost first: a disk emulated inside another one's mount (the shared-device experiment's
    # instances) must be down before the disk holding its image can be.
    leftover_disks = [(d, emulate.status_of(d)) for d in emulate.all_states() if not emulate.in_use(d)]
    leftover_disks.sort(key=lambda pair: -len(Path(str(pair[1].get("mount", ""))).parts))
    for state_dir, status in leftover_disks:
        owner = emulate.owner_of(status)
        why = f"its owner {owner.describe()} is gone" if owner else "brought up by hand, and broken"
        what = f"{status['mount']} ({'healthy' if status['healthy'] else 'broken'}; {why}; {state_dir})"
        found.append(("emulated-hdd", what, lambda d=state_dir: emulate.down_state(d)))
    # After the mounts above are down (a scratch holds the disks emulated in it), and after a
    # reboot (/run empty): swap files and partial directories on the devices under
    # study, found through their persistent records (each removed only if it carries the mark).
    for record in made.gone_makers():
        path, kind = Path(record["path"]), record["kind"]
        if _marked(path, kind):
            found.append((kind, f"{path} (its maker, pid {record.get('pid')}, is gone)",
                          lambda p=path: _remove_made(p)))
        elif not path.exists() or not swap.loops_over(path):
            found.append(("record", f"{record['record_file']} ({kind} {path}: gone, or not biossd's)",
                          lambda p=path: made.forget(p)))
    return found


def _marked(path: Path, kind: str) -> bool:
    """Whether ``path`` still carries biossd's mark for its kind (nothing else is ever deleted):
    a swap file by its name and no loop device over it, a partial directory by its marker."""
    from biossd.core import partial
    from biossd.host import swap
    from biossd.measure import rundir

    if kind == "swap file":
        return path.is_file() and path.name.startswith(swap.FILE_PREFIX) and not swap.loops_over(path)
    if kind == "partial run":
        return path.is_dir() and rundir.PARTIAL_INFIX in path.name and (path / rundir.MARKER).is_file()
    if kind == "replaced run":
        return path.is_dir() and rundir.OLD_INFIX in path.name and (path / rundir.MARKER).is_file()
    if kind == "scratch":
        return path.is_dir() and (path / rundir.SCRATCH_MARKER).is_file()
    return kind == partial.KIND and partial.is_marked(path)


def _remove_made(path: Path) -> None:
    from biossd.core import made

    remove_tree(path)  # never into a live mount
    made.forget(path)


def in_use() -> list[str]:
    """What biossd has on this host that is in use (not leftovers): the host lock's holder and
    owned emulations, for ``biossd doctor``."""
    from biossd.core.owners import ProcessRef
    from biossd.host import codeholder, dockerengine, hostlock
    from biossd.host.hdd import emulate
    from biossd.host.slurm import cluster

    lines = []
    engine = dockerengine.load()
    if engine is not None and dockerengine.leftover() is None:
        owner = ProcessRef.from_record(engine.get("owner"))
        lines.append(f"Docker engine {engine.get('docker_host') or engine['dir']}: "
                     + (f"in use by {owner.describe()}" if owner else "brought up by hand; `biossd docker down` "
                        "takes it down"))
    slurm = cluster.load()
    if slurm is not None and cluster.leftover() is None:
        owner = ProcessRef.from_record(slurm.get("owner"))
        lines.append(f"SLURM cluster {slurm['dir']} (partitions {', '.join(slurm['partitions'])}): "
                     + (f"in use by {owner.describe()}" if owner else "brought up by hand; `biossd slurm down` "
                        "takes it down"))
    holder = hostlock.held_by()
    if holder is not None:
        lines.append(f"host lock {hostlock.lock_path()}: held by {hostlock.describe(holder)}")
    for record in codeholder.live():
        lines.append(f"code of {record.get('key') or 'a tool'} held resident ({record.get('bytes', 0) >> 20} MiB, "
                     f"{record.get('files')} files) for {ProcessRef.from_record(record['owner']).describe()}")
    for state_dir in emulate.all_states():
        if emulate.in_use(state_dir):
            status = emulate.status_of(state_dir)
            owner = emulate.owner_of(status)
            lines.append(f"emulated HDD {status['mount']} ({status['profile_name']}, {status.get('loop_device')}): "
                         + (f"in use by {owner.describe()}" if owner else "brought up by hand; "
                            "`biossd device emulate-hdd down --mount` takes it down"))
    return lines


def _describe_stale(record: Path) -> str:
    import json

    try:
        body = json.loads(record.read_text())
    except (OSError, ValueError):
        return f"{record} (unreadable)"
    left = f"fio test file {body['test_file']}" if body.get("test_file") else f"partial run {body.get('partial')}"
    if body.get("swap_file"):
        left += f", swap file {body['swap_file']}"
    return f"{body.get('what', 'a run')} (pid {body.get('pid')}) {left} ({record})"


def _remove_stale(record: Path) -> None:
    """Remove what a killed run's host-lock record names (its partial run directory, which
    carries biossd's marker; a characterization's fio test file and a swap file not yet on a
    loop device, each by its prefix), then the record. A swap file on a loop device is
    :func:`biossd.host.swap.find_leftovers`'s."""
    import json

    from biossd.core import made, partial
    from biossd.host import characterize, hostlock, swap
    from biossd.measure import rundir

    try:
        body = json.loads(record.read_text())
    except (OSError, ValueError):
        body = {}
    hostlock.reap(body)  # the tool it was measuring, if it still runs
    # Only the partial this dead holder made (its marker names it): never a run directory the
    # record merely points at.
    if body.get("partial") and rundir.partial_of(Path(body["partial"]), body.get("pid"), body.get("start_ticks")):
        rundir.remove(Path(body["partial"]))
    # An experiment task's partial directory (its marker names the dead holder).
    partial_task = Path(body["experiment_partial"]) if body.get("experiment_partial") else None
    if partial_task is not None and partial.made_by(partial_task, body.get("pid"), body.get("start_ticks")):
        remove_tree(partial_task)
        made.forget(partial_task)
    test_file = Path(body["test_file"]) if body.get("test_file") else None
    if test_file is not None and test_file.name.startswith(characterize.TEST_FILE_PREFIX):
        test_file.unlink(missing_ok=True)
    swap_file = Path(body["swap_file"]) if body.get("swap_file") else None
    if swap_file is not None and swap_file.name.startswith(swap.FILE_PREFIX) and not swap.loops_over(swap_file):
        swap_file.unlink(missing_ok=True)
        made.forget(swap_file)
    record.unlink(missing_ok=True)


def stop_orphans(owner: "ProcessRef | None" = None, grace_s: float | None = None) -> list[str]:
    """End the measured run holding the host lock if the owner it works for is dead (e.g.
    Nextflow was SIGKILLed) — or, given ``owner``, if it works for that owner (which is taking
    its storage down, so its runs are over): SIGTERM, so it cleans up after itself, then SIGKILL
    after the profiler's own grace period plus its teardown. Returns what was done."""
    import os
    import signal
    import time

    from biossd.core.owners import ProcessRef
    from biossd.host import hostlock
    from biossd.measure import processes

    holder = hostlock.held_by()
    if not holder:
        return []
    run = ProcessRef.from_record(holder)
    theirs = ProcessRef.from_record(holder.get("owner"))
    if run is None or theirs is None or not run.alive():
        return []
    ours = owner is not None and (theirs.pid, theirs.start_ticks) == (owner.pid, owner.start_ticks)
    if not ours and theirs.alive():
        return []
    os.kill(run.pid, signal.SIGTERM)
    deadline = time.monotonic() + (processes.TERM_GRACE_S + ORPHAN_TEARDOWN_S if grace_s is None else grace_s)
    while run.alive() and time.monotonic() < deadline:
        time.sleep(0.1)
    what = "orphaned" if not ours else "interrupted"
    if run.alive():
        os.kill(run.pid, signal.SIGKILL)
        return [f"killed {what} run {hostlock.describe(holder)} (SIGKILL)"]
    return [f"stopped {what} run {hostlock.describe(holder)}"]


#: Time an orphaned run is given, beyond the profiler's grace for its tool, to tear down.
ORPHAN_TEARDOWN_S = 20.0
