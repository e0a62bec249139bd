"""The SMUFIN NVMe-over-Fabrics study: one device shared by concurrent instances
(``study/experiments/shared_device.yaml``).

N instances of an I/O-heavy tool (samtools sort with a small ``-m``, spilling and merging
temporary files; the substitute for SMUFIN) run *at once*, placed by an allocation on two
devices brought up for the task, A and B, each of the class's kind: an emulated HDD of the
class's profile for an emulated class (two independent disk servers: two spindles), else the
native disk on a loop device (:data:`biossd.host.hdd.emulate.NATIVE_PROFILE`; both then share the one
physical disk, which the notebook says).

* ``one``: every instance on A;
* ``two``: round-robin on A and B — the composed pair, composed by placement (Linux md RAID0 is
  not available here);
* ``dedicated``: instance 1 alone on A, the others shared on B (only for N ≥ 3: with two
  instances it is ``two``).

Each instance works on a block device of its own — a loop device over a file on its device
(direct I/O, so its requests go straight through to the shared device) — so its block trace holds
its own requests: its **sequential-write ratio** (the share of its writes that start where its
previous write ended) is its own, while the shared device sees them all. The device's
**aggregate bandwidth** is what ``/proc/diskstats`` counted on A and B over the group's span.

The concurrency is the experiment: the task holds the host lock for the whole group, declared
(:class:`biossd.host.grouplock.GroupMember`), and starts the members (``biossd profile --group``)
side by side; each member's record names the group, its size and the other members.
"""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import sys
import time
import uuid
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from biossd.core.owners import ProcessRef
from biossd.core.signals import signals_held
from biossd.core.units import SECTOR_BYTES, parse_size
from biossd.experiments.sort_memory import argv as sort_argv
from biossd.experiments.spec import tool_version
from biossd.experiments.tables import by_class, run_rows, scale_keys
from biossd.experiments.task import Task, Teardown
from biossd.host import hostlock, pagecache
from biossd.host.hdd import emulate
from biossd.measure.sampler import read_diskstats
from biossd.measure.trace import tracefile, tracereader

ALLOCATIONS = ("one", "two", "dedicated")
DEVICES = ("A", "B")
TOOL = "samtools_sort"
#: A ``dedicated`` allocation needs this many instances (with fewer it is ``two``).
MIN_DEDICATED = 3
#: Each instance's loop device gets this share of its device, split among the instances there.
INSTANCE_SHARE_OF_DEVICE = 0.8
#: How long the members get to stop after SIGTERM when the group is interrupted.
MEMBER_STOP_S = 30.0
BYTES_PER_MB = 1e6
COLUMNS = ("instances", "allocation", "instance", "device", "outcome", "runtime_s", "group_makespan_s",
           "device_read_mbs", "device_write_mbs", "device_mbs", "seq_write_ratio", "Wiops", "Riops", "CAR",
           "concurrent_with")


def points(settings: dict[str, Any]) -> list[dict[str, Any]]:
    """Every (instances, allocation) that differs: ``two`` needs 2 instances, ``dedicated`` 3; a
    size may name its allocations (``allocations``, default all)."""
    wanted = settings.get("allocations") or ALLOCATIONS
    out = []
    for n in (int(n) for n in settings["instances"]):
        allocations = ["one"] + (["two"] if n >= 2 else []) + (["dedicated"] if n >= MIN_DEDICATED else [])
        out.extend({"id": f"n{n}-{alloc}", "values": {"instances": n, "allocation": alloc}}
                   for alloc in allocations if alloc in wanted)
    return out


def placement(n: int, allocation: str) -> list[str]:
    """The device of each instance (1-based instances in order)."""
    if allocation == "one":
        return ["A"] * n
    if allocation == "two":
        return [DEVICES[i % 2] for i in range(n)]
    if allocation == "dedicated":
        return ["A"] + ["B"] * (n - 1)
    raise ValueError(f"unknown allocation {allocation!r}; choose from {ALLOCATIONS}")


def device_profile(storage: dict[str, Any]) -> str:
    """The kind of device A and B are: the class's emulation profile, else the native disk."""
    return storage.get("profile") if storage.get("emulated") else emulate.NATIVE_PROFILE


def run(ctx: Task) -> dict[str, Any]:
    n, allocation = int(ctx.values["instances"]), ctx.values["allocation"]
    where = placement(n, allocation)
    kind = device_profile(ctx.storage)
    device_bytes = parse_size(str(ctx.settings["device_size"]))
    me = ProcessRef.current(f"biossd experiment shared_device {ctx.task['point']}")
    names = [f"inst{i + 1}" for i in range(n)]
    with Teardown() as stack:
        devices: dict[str, dict[str, Any]] = {}
        for dev in sorted(set(where)):
            mount = ctx.scratch / f"dev{dev}"
            devices[dev] = emulate.up(mount, kind, device_bytes, owner=me)
            stack.callback(emulate.down, mount)
        instance_dirs = []
        for name, dev in zip(names, where):
            share = int(device_bytes * INSTANCE_SHARE_OF_DEVICE) // where.count(dev)
            mount = ctx.scratch / f"dev{dev}" / name
            emulate.up(mount, emulate.NATIVE_PROFILE, max(share, emulate.MIN_SIZE_BYTES),
                       backing_dir=ctx.scratch / f"dev{dev}", owner=me)
            stack.callback(emulate.down, mount)
            work = mount / "work"
            (work / "tmp").mkdir(parents=True)
            _copy(ctx.input_dir / "reads.bam", work / "reads.bam")  # onto the instance's own device
            instance_dirs.append(work)
        return _run_group(ctx, names, where, instance_dirs, devices)


def _copy(src: Path, dest: Path) -> None:
    shutil.copyfile(src, dest)
    with open(dest, "rb+") as f:
        os.fsync(f.fileno())


def _run_group(ctx: Task, names: list[str], where: list[str], dirs: list[Path],
               devices: dict[str, dict[str, Any]]) -> dict[str, Any]:
    token = f"shared_device-{os.getpid()}-{uuid.uuid4().hex[:8]}"
    loops = {dev: Path(info["loop_device"]).name for dev, info in devices.items()}
    version = tool_version(ctx.spec, TOOL)
    members: list[subprocess.Popen[bytes]] = []
    with hostlock.HostLock(f"biossd experiment shared_device (group of {len(names)})", owner=ctx.owner,
                           **{hostlock.GROUP_KEY: token}, members=names, out=str(ctx.out),
                           experiment_partial=str(ctx.out)):
        drop = pagecache.drop_all()
        before = read_diskstats(list(loops.values()))
        t0 = time.monotonic()
        try:
            for name, dev, work in zip(names, where, dirs):
                others = ",".join(x for x in names if x != name) or "none"
                labels = ctx.labels(TOOL, instance=name, device=dev, concurrent_group=token,
                                    concurrent_with=others)
                # Each member works for this leader (--owner-pid) and gets SIGTERM from the kernel
                # when the leader dies, even by SIGKILL: it stops its tool and removes what it made.
                argv = [sys.executable, "-m", "biossd", "profile", "--group", token, "--no-drop-caches",
                        "--owner-pid", str(os.getpid()), "--owner-label", "biossd experiment shared_device (leader)",
                        "--die-with-parent",
                        "--mem", ctx.cap, "--out", str(ctx.out / name),
                        "--timeout", str(ctx.timeout_s), "--tool-version", version or "unknown",
                        *(x for k, v in labels.items() for x in ("--label", f"{k}={v}")),
                        *(["--device-record", str(ctx.device_record)] if ctx.device_record else []),
                        "--", *sort_argv(TOOL, str(ctx.settings["sort_mem"]), "reads.bam", "sorted.bam")]
                # Started and listed in one step a signal cannot split: one arriving while Popen
                # forks is raised after the member is in the list, so it is stopped and waited for
                # (else it would run on, untracked, holding its disk until this leader died).
                with signals_held(), open(ctx.out / f".{name}.log", "wb") as log:
                    members.append(subprocess.Popen(argv, cwd=work, stdout=subprocess.DEVNULL, stderr=log))
            codes = [m.wait() for m in members]
        except BaseException:
            _stop(members)
            raise
        makespan = time.monotonic() - t0
        after = read_diskstats(list(loops.values()))
    failed = [f"{name} (exit {code}: {(ctx.out / f'.{name}.log').read_text(errors='replace').strip()[-300:]})"
              for name, code in zip(names, codes) if code != 0]
    if failed:
        raise RuntimeError("shared_device: members of the group failed: " + "; ".join(failed))
    for name in names:
        (ctx.out / f".{name}.log").unlink(missing_ok=True)
        ctx.runs.append(name)
    per_device = {}
    for dev, loop in loops.items():
        read_b = (after[f"disk_{loop}_read_sectors"] - before[f"disk_{loop}_read_sectors"]) * SECTOR_BYTES
        write_b = (after[f"disk_{loop}_write_sectors"] - before[f"disk_{loop}_write_sectors"]) * SECTOR_BYTES
        per_device[dev] = {"loop": loop, "read_bytes": read_b, "write_bytes": write_b}
    return {"group": {"token": token, "makespan_s": makespan, "page_cache": drop, "devices": per_device,
                      "device_profile": device_profile(ctx.storage), "placement": dict(zip(names, where))}}


def _stop(members: list[subprocess.Popen[bytes]]) -> None:
    """The members asked to stop (each removes what it made), then waited for."""
    for m in members:
        if m.poll() is None:
            m.send_signal(signal.SIGTERM)
    deadline = time.monotonic() + MEMBER_STOP_S
    for m in members:
        try:
            m.wait(timeout=max(0.1, deadline - time.monotonic()))
        except subprocess.TimeoutExpired:
            m.kill()
            m.wait()


def seq_write_ratio(run_dir: Path) -> float:
    """The share of a run's write requests that start where its previous write ended (from its
    block trace, in issue order); NaN without writes."""
    requests = tracereader.request_arrays(tracefile.trace_path(run_dir))
    writes = requests["op"] == "W"
    if np.count_nonzero(writes) < 2:
        return float("nan")
    order = np.argsort(requests["issue_s"][writes], kind="stable")
    sector = requests["sector"][writes][order]
    end = sector + requests["bytes"][writes][order] // SECTOR_BYTES
    return float(np.count_nonzero(sector[1:] == end[:-1]) / (sector.size - 1))


def rows(point_dir: Path, record: dict[str, Any]) -> list[dict[str, Any]]:
    group = record["observed"]["group"]
    moved = sum(d["read_bytes"] + d["write_bytes"] for d in group["devices"].values())
    reads = sum(d["read_bytes"] for d in group["devices"].values())
    span = group["makespan_s"]
    out = []
    for row in run_rows(point_dir, record):
        from biossd.measure import manifest

        labels = manifest.read_manifest(point_dir / row["run"])["labels"]
        row.update(instance=row["run"], device=labels.get("device"), concurrent_with=labels.get("concurrent_with"),
                   group_makespan_s=span, device_read_mbs=reads / BYTES_PER_MB / span,
                   device_write_mbs=(moved - reads) / BYTES_PER_MB / span, device_mbs=moved / BYTES_PER_MB / span,
                   seq_write_ratio=seq_write_ratio(point_dir / row["run"]))
        out.append(row)
    return out


def point_order(table: pd.DataFrame) -> list[str]:
    """The points by instances, then allocation in :data:`ALLOCATIONS`' order."""
    points = table.drop_duplicates("point")[["point", "instances", "allocation"]]
    points = points.assign(rank=points["allocation"].map({a: i for i, a in enumerate(ALLOCATIONS)}))
    return list(points.sort_values(["instances", "rank"])["point"])


def summary(table: pd.DataFrame) -> pd.DataFrame:
    """Table S5: per (class, instances, allocation), the instances' mean and slowest runtime, the
    group's makespan, the devices' aggregate MB/s and the mean sequential-write ratio."""
    keys = [*scale_keys(table), "storage", "instances", "allocation"]
    out = table.groupby(keys, sort=False).agg(
        runs=("outcome", "size"), not_ok=("outcome", lambda o: int((o != "ok").sum())),
        runtime_s=("runtime_s", "mean"), slowest_s=("runtime_s", "max"), makespan_s=("group_makespan_s", "mean"),
        device_mbs=("device_mbs", "mean"), seq_write_ratio=("seq_write_ratio", "mean"))
    out = out.reset_index()
    out["rank"] = out["allocation"].map({a: i for i, a in enumerate(ALLOCATIONS)})
    return by_class(out, "instances", "rank").drop(columns="rank")


def headline(table: pd.DataFrame) -> str:
    """Whether a second device (or a dedicated one) shortened the group's makespan, per class and N."""
    if table.empty:
        return "No shared_device runs in these results."
    s = summary(table)
    parts = []
    for (storage, n), part in s.groupby(["storage", "instances"], sort=False):
        by = part.set_index("allocation")
        if "one" not in by.index or len(by) < 2:
            continue
        one = by.loc["one", "makespan_s"]
        others = ", ".join(f"{a} {by.loc[a, 'makespan_s']:.2f} s ({by.loc[a, 'makespan_s'] / one:.2f}x)"
                           for a in by.index if a != "one")
        parts.append(f"{storage}, {n} instances: makespan one device {one:.2f} s; {others}")
    return ("; ".join(parts) + ".") if parts else "Only one instance per group: nothing shared."
