"""What the host must have for the plan, checked last (Lee, Min and Yoon 2015, §5.1): free space on
each class's scratch for the largest input, the tools' container images, and the device records
an earlier run left. Each check returns its problems as sentences; :func:`.matrix.plan` lists
them with the others."""

from __future__ import annotations

import shutil
from pathlib import Path
from typing import Any, Mapping

from biossd.core.units import format_size, parse_size
from biossd.study import catalogue, layout
from biossd.study.sizing import rule

#: What a class's scratch must have free: this many times the largest input (the sizing rule says why).
SCRATCH_PER_INPUT = rule.SCRATCH_PER_INPUT


def space_problems(params: Mapping[str, Any], classes: list[str], emulated: set[str],
                   input_bytes: int) -> list[str]:
    """Free space on each class's scratch (and the emulated disks' size) against the largest
    input a run reads, before any run: a full scratch mid-study would be a harness failure."""
    try:
        swap_bytes = parse_size(str(params["swap"])) if params.get("swap") and not params.get("swap_dir") else 0
        emulate_bytes = parse_size(str(params.get("emulate_size") or "0"))
    except ValueError:
        return []  # named by the schema check
    need = input_bytes * SCRATCH_PER_INPUT + swap_bytes
    problems = []
    for cls in classes:
        if cls in emulated:
            if emulate_bytes * rule.EXT4_FILES_SHARE < need:  # its own file system takes a share
                problems.append(f"--emulate_size {params.get('emulate_size')} is too small for class '{cls}': a run "
                                f"needs {format_size(need)} of scratch ({SCRATCH_PER_INPUT}x the "
                                f"{format_size(input_bytes)} input{' plus swap' if swap_bytes else ''}), and its ext4 "
                                f"leaves {rule.EXT4_FILES_SHARE:.0%} of the device for files")
            continue
        where = Path(str(params.get("scratch_dir") or Path.cwd()))
        if where.is_dir():
            free = shutil.disk_usage(where).free
            if free < need:
                problems.append(f"The scratch of class '{cls}' ({where}) has {format_size(free)} free; a run "
                                f"needs {format_size(need)} ({SCRATCH_PER_INPUT}x the {format_size(input_bytes)} "
                                f"input of --input_size{' plus --swap ' + str(params['swap']) if swap_bytes else ''}): "
                                "free space, lower them, or give --scratch_dir elsewhere")
    if emulated:
        root = Path(str(params.get("storage_root") or Path.cwd()))
        probe = next((p for p in [root, *root.parents] if p.is_dir()), Path.cwd())
        total = emulate_bytes * len(emulated)
        free = shutil.disk_usage(probe).free
        if free < total:
            problems.append(f"--storage_root {root} ({probe}) has {format_size(free)} free; the emulated disks "
                            f"need {format_size(total)} ({len(emulated)} x --emulate_size)")
    return problems


def image_problems(engine: str, entries: list[catalogue.Entry]) -> list[str]:
    """With a container engine: the engine must answer and every planned tool's image must be
    there, before any run (each missing image named with the command that builds it)."""
    if not engine:
        return []
    from biossd.study.catalogue import containers

    try:
        containers.check_engine(engine)
    except containers.ContainerError as err:
        return [str(err)]
    missing = [e.id for e in entries if e.kind == "tool" and not containers.built(e, engine)]
    return [f"{tool}'s {engine} image is not built here: run `biossd catalogue build --engine {engine} {tool}`"
            for tool in missing]


def device_record_problems(records_dir: object, host: str, classes: list[str]) -> list[str]:
    """--device_records DIR: an earlier result folder must hold a device record for every class
    of this host (whether each is of the same device is checked when the class is up)."""
    if not records_dir:
        return []
    root = Path(str(records_dir))
    if not root.is_dir():
        return [f"--device_records {root} is not a directory (give the result folder of an earlier run on this host)"]
    if not host:
        return []  # named by the --host check
    missing = [str(layout.device_record_relpath(host, c)) for c in classes
               if not (root / layout.device_record_relpath(host, c)).is_file()]
    if missing:
        return [f"--device_records {root} has no device record {', '.join(missing)}: give a result folder of an "
                f"earlier run with --host {host} and these classes, or leave it out to measure the devices"]
    return []
