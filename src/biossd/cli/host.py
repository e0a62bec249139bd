"""The host: its facts, devices and storage classes, the emulated disk, a SLURM cluster and a Docker
engine of biossd's own, and `doctor`/`cleanup` of what earlier runs left."""

from __future__ import annotations

import argparse
import json
import math
import sys
from pathlib import Path

from biossd.cli import options
from biossd.cli.options import UsageError


def cmd_doctor(args: argparse.Namespace) -> int:
    from biossd.measure import leftovers

    options.need_root("doctor")
    for line in leftovers.in_use():
        print(f"in use: {line}")
    found = leftovers.find_all()
    for kind, what, _ in found:
        print(f"leftover {kind}: {what}")
    if not found:
        print("biossd doctor: no leftovers of earlier runs")
    else:
        print("biossd doctor: `biossd cleanup` removes them", file=sys.stderr)
    return 1 if found else 0


def cmd_cleanup(args: argparse.Namespace) -> int:
    from biossd.measure import leftovers

    options.need_root("cleanup")
    failed = 0
    from biossd.host import grouplock

    if not grouplock.await_dead_group():
        print("biossd cleanup: a concurrent group's members still run after their leader died; what they "
              "made is theirs until they end: run cleanup again", file=sys.stderr)
    for line in leftovers.stop_orphans():
        print(line)
    for kind, what, remove in leftovers.find_all():
        try:
            remove()
            print(f"removed {kind} {what}")
        except (OSError, RuntimeError, ValueError) as err:
            print(f"biossd cleanup: could not remove {kind} {what}: {err}", file=sys.stderr)
            failed += 1
    return 1 if failed else 0


def cmd_device_characterize(args: argparse.Namespace) -> int:
    from biossd.core.units import parse_duration_s
    from biossd.host import characterize, devicerecord

    record = characterize.characterize(Path(args.path), parse_duration_s(args.budget))
    if args.output:
        devicerecord.write(Path(args.output), record)
    print(json.dumps(record, indent=2) if not args.output else json.dumps(record["spec_row"]))
    return 0


def cmd_device_profiles(args: argparse.Namespace) -> int:
    from biossd.host.models import diskmodel

    for path in sorted(diskmodel.profiles_dir().glob("*.yaml")):
        p = diskmodel.DiskProfile.load(path)
        print(f"{path.stem}\t{p.name}: {p.rpm:.0f} rpm, {p.seq_read_mbs:g} MB/s, "
              f"{p.rand_read_iops:g}/{p.rand_write_iops:g} random read/write IOPS")
    return 0


def cmd_emulate_hdd(args: argparse.Namespace) -> int:
    from biossd.core.units import parse_size
    from biossd.host.hdd import emulate

    if args.action == "up":
        if not args.mount or not args.size:
            raise UsageError("give --mount DIR and --size SIZE")
        if not (math.isfinite(args.scale) and args.scale > 0):
            raise UsageError(f"--scale {args.scale}: give a positive number (the study's D = 1 GB / M; 1 unscaled)")
        state = emulate.up(Path(args.mount), args.profile, parse_size(args.size),
                           args.swap, Path(args.backing_dir), scale=args.scale)
        print(f"emulated HDD ({state['profile_name']}) up at {state['mount']} on {state['loop_device']}"
              + (f", swap {state['swap_file']}" if state.get("swap_file") else ""))
    elif args.action == "down":
        if not args.mount:
            raise UsageError("give --mount DIR")
        done = emulate.down(Path(args.mount))
        print(f"no emulated HDD at {args.mount}" if done is None else "; ".join(done) or "removed")
    else:
        states = emulate.all_states()
        if not states:
            print("no emulated HDD is up", file=sys.stderr)
        print(json.dumps([emulate.status_of(d) for d in states], indent=2))
    return 0


def _disk_scale(data_memory: str | None) -> float:
    """The emulated disks' scale: the study's memory divisor D = 1 GB / M (1 without an M)."""
    from biossd.core.units import parse_size
    from biossd.study.sizing import rule

    return rule.memory_divisor(parse_size(data_memory)) if data_memory else 1.0


def cmd_storage(args: argparse.Namespace) -> int:
    from biossd.core.units import parse_size
    from biossd.measure import storage

    if args.action in ("up", "down") and not args.root:
        raise UsageError("give --root DIR")
    owner = options.owner(args, "nothing was done")
    if args.action == "up":
        for line in storage.reconcile():
            print(f"biossd storage up: reconciled: {line}", file=sys.stderr)
        classes = [c.strip() for c in args.classes.split(",") if c.strip()]
        resolved = storage.up(classes, Path(args.root), storage.parse_emulate(args.emulate),
                              parse_size(args.size), Path(args.scratch_dir) if args.scratch_dir else None,
                              owner=owner, scale=_disk_scale(args.data_memory))
        if args.output:
            storage.write(resolved, Path(args.output))
        print(json.dumps(resolved, indent=2))
    elif args.action == "characterize":
        from biossd.core.units import parse_duration_s

        if not args.input or not args.output:
            raise UsageError("give --input storage.json and -o DIR")
        resolved = json.loads(Path(args.input).read_text())
        written = storage.characterize_all(resolved, parse_duration_s(args.budget), Path(args.output),
                                           Path.cwd() / "scratch", owner,
                                           Path(args.reuse) if args.reuse else None, args.host)
        for name, path in written.items():
            print(f"{name}: {path}")
    else:
        done = storage.down(Path(args.root), owner)
        print("; ".join(done) if done else f"no emulated storage under {args.root}")
    return 0


def cmd_host(args: argparse.Namespace) -> int:
    from biossd.core.files import atomic_write_text
    from biossd.host.hostfacts import host_facts

    text = json.dumps(host_facts(), indent=2) + "\n"
    if args.output:
        atomic_write_text(Path(args.output), text)
    print(text, end="")
    return 0


def cmd_slurm(args: argparse.Namespace) -> int:
    from biossd.host.slurm import cluster

    if args.slurm_cmd == "up":
        owner = options.owner(args, "nothing was brought up")
        partitions = tuple(p.strip() for p in args.partitions.split(",") if p.strip())
        state = cluster.up(partitions, owner)
        print(f"biossd slurm: one-node cluster up on {state['host']}, partitions {', '.join(state['partitions'])}; "
              f"memory enforced by {state['memory_enforced_by']}", file=sys.stderr)
        print(f"export SLURM_CONF={cluster.env()['SLURM_CONF']}")
    elif args.slurm_cmd == "down":
        done = cluster.down()
        print("biossd slurm down: " + ("; ".join(done) if done else "no cluster was up"), file=sys.stderr)
    elif args.slurm_cmd == "env":
        if cluster.load() is None:
            raise UsageError("no biossd SLURM cluster is up: `biossd slurm up` (or `make slurm-up`) brings one up")
        print(f"export SLURM_CONF={cluster.env()['SLURM_CONF']}")
    else:
        print(json.dumps(cluster.status(), indent=2))
    return 0


def cmd_docker(args: argparse.Namespace) -> int:
    from biossd.host import dockerengine

    if args.docker_cmd == "up":
        state = dockerengine.up(options.owner(args, "nothing was brought up"))
        if state.get("external"):
            print(f"biossd docker: using the Docker engine at {state['docker_host']} (Docker {state['version']}); "
                  "it is never started, stopped or changed by biossd", file=sys.stderr)
        else:
            print(f"biossd docker: engine up (Docker {state['version']}, storage driver {state['driver']}, "
                  f"data root {state['data_root']})", file=sys.stderr)
        print(f"export DOCKER_HOST={dockerengine.env()['DOCKER_HOST']}")
    elif args.docker_cmd == "down":
        done = dockerengine.down()
        print("biossd docker down: " + ("; ".join(done) if done else "no engine was up"), file=sys.stderr)
    elif args.docker_cmd == "env":
        if dockerengine.load() is None:
            raise UsageError("no biossd Docker engine is up: `biossd docker up` brings one up")
        print(f"export DOCKER_HOST={dockerengine.env()['DOCKER_HOST']}")
    else:
        print(json.dumps(dockerengine.status(), indent=2))
    return 0


def register(sub: argparse._SubParsersAction) -> None:
    """This room's commands and their options."""
    dev_p = sub.add_parser("device", help="storage devices").add_subparsers(dest="dev_cmd", required=True)
    p = dev_p.add_parser("characterize", help="measure a device with fio, as the paper's spec tables")
    p.add_argument("path", help="a directory on the device")
    p.add_argument("--budget", default="120s", help="total time for all fio jobs (e.g. 120s, 5m)")
    p.add_argument("-o", "--output", help="write the JSON record here")
    p.set_defaults(func=cmd_device_characterize)
    dev_p.add_parser("profiles", help="list the device profiles").set_defaults(func=cmd_device_profiles)
    p = dev_p.add_parser("emulate-hdd", help="make a directory behave like a hard disk")
    p.add_argument("action", choices=("up", "down", "status"))
    p.add_argument("--mount", help="the directory to make a mount point")
    p.add_argument("--profile", default="seagate-barracuda-7200",
                   help="name in study/devices/, a YAML path, or a cloud volume behind an instance: "
                        "cloud:VOLUME[@INSTANCE] (study/reference/cloud_storage.csv, docs/cloud.md)")
    p.add_argument("--size", help="size of the emulated disk, e.g. 20G")
    p.add_argument("--swap", type=options.swap_bytes, help="also a swap area of this size on it")
    p.add_argument("--backing-dir", default="/var/tmp", help="where the disk's data is kept")
    p.add_argument("--scale", type=float, default=1.0,
                   help="scale the disk down as a study scales its machine: its buffer / D and its distances x D "
                        "(D = 1 GB / the study's data memory; default 1: the disk itself)")
    p.set_defaults(func=cmd_emulate_hdd)

    p = sub.add_parser("storage", help="the storage classes of a study run")
    p.add_argument("action", choices=("up", "down", "characterize"))
    p.add_argument("--root", help="directory under which emulated classes are mounted (up, down)")
    p.add_argument("--input", help="storage.json from `storage up` (characterize)")
    p.add_argument("--budget", default="120s", help="fio time budget per class (characterize)")
    p.add_argument("--reuse", metavar="DIR",
                   help="characterize: take each class's record from this result folder of an earlier run "
                   "(HOST-CLASS/device.json), checked to be of the same device, instead of measuring")
    p.add_argument("--host", help="characterize --reuse: the host name the records were published under")
    p.add_argument("--classes", default="ssd", help="class names, comma-separated")
    p.add_argument("--emulate", action="append", default=[], metavar="CLASS=PROFILE",
                   help="emulate this class as an HDD of this profile (study/devices/)")
    p.add_argument("--size", default="4G", help="size of each emulated disk")
    p.add_argument("--data-memory", metavar="SIZE",
                   help="the study's data memory M: its emulated disks are scaled by D = 1 GB / M (default: unscaled)")
    p.add_argument("--scratch-dir", help="scratch directory of the real classes (default: task dir)")
    p.add_argument("-o", "--output", help="up: write the resolved classes (JSON) here; "
                   "characterize: directory for <class>.json")
    options.add_owner_options(p, "the emulations", " (the Nextflow session): only it takes them down")
    p.set_defaults(func=cmd_storage)

    p = sub.add_parser("host", help="this host's facts (kernel, OS, CPU, memory, swap) as JSON")
    p.add_argument("-o", "--output", help="also write them here")
    p.set_defaults(func=cmd_host)

    slurm_p = sub.add_parser("slurm", help="a one-node SLURM cluster on this host (tests, trying -profile slurm)")
    slurm_sub = slurm_p.add_subparsers(dest="slurm_cmd", required=True)
    p = slurm_sub.add_parser("up", help="bring up munged, slurmctld and slurmd with a partition per storage class")
    p.add_argument("--partitions", default="fast,slow", help="partition names, comma-separated (default fast,slow)")
    options.add_owner_options(p, "the cluster")
    p.set_defaults(func=cmd_slurm)
    for name, text in (("down", "cancel its jobs, stop its daemons, remove its state"),
                       ("status", "the cluster's record and health (JSON)"),
                       ("env", "print the SLURM_CONF that reaches the cluster (for eval)")):
        slurm_sub.add_parser(name, help=text).set_defaults(func=cmd_slurm)

    docker_p = sub.add_parser("docker", help="a Docker engine of biossd's own on this host (-profile docker)")
    docker_sub = docker_p.add_subparsers(dest="docker_cmd", required=True)
    p = docker_sub.add_parser("up", help="start dockerd with a private socket, data root and exec root "
                                         "(with DOCKER_HOST set: use that engine)")
    options.add_owner_options(p, "the engine")
    p.set_defaults(func=cmd_docker)
    for name, text in (("down", "stop the engine biossd started, remove its state (its images are kept)"),
                       ("status", "the engine's record and whether it answers (JSON)"),
                       ("env", "print the DOCKER_HOST that reaches the engine (for eval)")):
        docker_sub.add_parser(name, help=text).set_defaults(func=cmd_docker)

    sub.add_parser("doctor", help="list leftovers of earlier runs").set_defaults(func=cmd_doctor)
    sub.add_parser("cleanup", help="remove leftovers of earlier runs").set_defaults(func=cmd_cleanup)
