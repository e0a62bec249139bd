"""The storage classes of a study, read from its parameters and checked against this host
(Lee, Min and Yoon 2015, §2.1: the same programs on an HDD and on an SSD): which classes, which
of them are emulated, the device named for each and, under SLURM, each class's partition."""

from __future__ import annotations

import shutil
import socket
from pathlib import Path
from typing import Any, Mapping

from biossd.host import devices
from biossd.study.plan.parse import csv_list, parse_pairs


def storage_of(params: Mapping[str, Any], stub: bool,
                problems: list[str]) -> tuple[list[str], set[str], dict[str, str], dict[str, str]]:
    """The storage classes, which are emulated, the devices named for them and (under SLURM)
    each class's partition, every one checked against this host (not in a ``stub`` run)."""
    classes = csv_list(params.get("storage_classes"))
    if not classes:
        problems.append("--storage_classes is empty")
    emulated = {name for name in parse_pairs(params.get("emulate"), "emulate", problems)}
    problems += [f"--emulate names class '{c}', which is not in --storage_classes" for c in sorted(emulated - set(classes))]
    scratch = params.get("scratch_dir") or None
    if scratch and not Path(str(scratch)).is_dir():
        problems.append(f"--scratch_dir {scratch} is not an existing directory on the device under study")
    named = parse_pairs(params.get("devices"), "devices", problems)
    if not stub:
        problems += device_problems(classes, named, str(scratch) if scratch else None, emulated)
    partitions: dict[str, str] = {}
    if params.get("executor") == "slurm":
        given = parse_pairs(params.get("slurm_partitions"), "slurm_partitions", problems)
        default = params.get("slurm_default_partition")
        partitions = {c: given.get(c) or str(default) for c in classes if given.get(c) or default}
        problems += slurm_problems(classes, emulated, given, default,
                                               None if stub else slurm_partitions())
    swap_dir = params.get("swap_dir") or None
    if swap_dir and not Path(str(swap_dir)).is_dir():
        problems.append(f"--swap_dir {swap_dir} is not an existing directory")
    return classes, emulated, named, partitions


def device_problems(classes: list[str], named: Mapping[str, str], scratch_dir: str | None,
                    emulated: set[str]) -> list[str]:
    """A named device that does not exist, a device named for an emulated class (which gets its
    own), and a scratch directory not on the device named for its class."""
    problems = []
    for cls, dev in sorted(named.items()):
        if cls not in classes:
            problems.append(f"--devices names class '{cls}', which is not in --storage_classes")
            continue
        if cls in emulated:
            problems.append(f"--devices names {dev} for class '{cls}', but that class is emulated (--emulate)")
            continue
        try:
            want = devices.resolve(dev)
        except devices.DeviceError as err:
            problems.append(f"--devices: the device of class '{cls}' is missing: {err}")
            continue
        if scratch_dir and Path(scratch_dir).is_dir():
            have = devices.device_of_path(Path(scratch_dir))
            if have != want and devices.whole_disk(have) != want:
                problems.append(f"--scratch_dir {scratch_dir} is on {have}, not on {want} named for class "
                                f"'{cls}' in --devices: give a scratch directory on that device")
        elif not scratch_dir:
            problems.append(f"--devices names {dev} for class '{cls}', but no --scratch_dir on it is given "
                            "(runs would use the task directory, on whatever device that is)")
    return problems


def slurm_partitions() -> dict[str, list[str]] | None:
    """The SLURM cluster's partitions and the nodes of each (``sinfo``, as ``SLURM_CONF`` points);
    ``None`` when SLURM cannot be asked."""
    import subprocess

    if shutil.which("sinfo") is None:
        return None
    try:
        proc = subprocess.run(["sinfo", "-h", "-N", "-o", "%P %N"], capture_output=True, text=True, timeout=30)
    except (OSError, subprocess.TimeoutExpired):
        return None
    if proc.returncode != 0:
        return None
    out: dict[str, list[str]] = {}
    for line in proc.stdout.splitlines():
        partition, _, node = line.strip().partition(" ")
        out.setdefault(partition.rstrip("*"), []).append(node)
    return out


def slurm_problems(classes: list[str], emulated: set[str], partitions: Mapping[str, str],
                   default: object, cluster: Mapping[str, list[str]] | None = None,
                   this_host: str | None = None) -> list[str]:
    """On SLURM every class needs a partition that exists (``cluster``: the partitions and their
    nodes, from :func:`slurm_partitions`). One invocation studies one partition's nodes: several
    partitions are allowed only when they hold the same nodes (a one-node cluster's per-class
    partitions), since every class's device is characterized once. An emulated class needs those
    nodes to be this host, where the emulation is mounted."""
    chosen = {c: partitions.get(c) or (str(default) if default else None) for c in classes}
    problems = [f"-profile slurm: class '{c}' has no partition; give --slurm_partitions {c}=PARTITION "
                "or --slurm_default_partition" for c, p in chosen.items() if p is None]
    used = sorted({p for p in chosen.values() if p})
    if cluster is None:
        return problems + ["-profile slurm: SLURM cannot be asked for its partitions (sinfo is missing or fails); "
                           "check SLURM_CONF, or `biossd slurm up` for the one-node cluster on this host"]
    unknown = [p for p in used if p not in cluster]
    problems += [f"-profile slurm: partition '{p}' does not exist; the cluster has {', '.join(sorted(cluster)) or 'none'}"
                 for p in unknown]
    nodes = {p: frozenset(cluster[p]) for p in used if p in cluster}
    if len(set(nodes.values())) > 1:
        problems.append("-profile slurm: the classes map to partitions on different nodes "
                        f"({', '.join(f'{c}={p}' for c, p in sorted(chosen.items()))}); run one invocation per "
                        "partition (-profile ssd,slurm and -profile hdd,slurm), as the paper's matched pair")
    local = this_host or socket.gethostname().split(".")[0]
    remote = sorted({n for ns in nodes.values() for n in ns} - {local})
    if emulated and remote:
        problems += [f"-profile slurm: class '{c}' is emulated on this host ({local}), but its partition's nodes "
                     f"are {', '.join(remote)}; emulated storage needs the one-node cluster on this host "
                     "(`biossd slurm up`)" for c in sorted(emulated)]
    return problems
