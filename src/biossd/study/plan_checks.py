"""The study's parameters checked before anything runs (Lee, Min and Yoon 2015, §5.1): against the
schema (nf-core's ``nextflow_schema.json``), the paths, the storage classes' devices and SLURM
partitions, the scratch's free space, the tools' images and the device records. Each check returns
its problems as sentences; :func:`biossd.study.matrix.plan` lists them all at once."""

from __future__ import annotations

import re
import shutil
import socket
from pathlib import Path
from typing import Any, Mapping

from biossd.core import paths
from biossd.core.units import format_size, parse_size
from biossd.host import devices
from biossd.study import catalogue, layout, sizing

#: Every parameter of the study, typed and documented (nf-core's nextflow_schema.json).
SCHEMA_PATH = paths.STUDY_DIR / "nextflow_schema.json"

#: What a class's scratch must have free: this many times the largest input (the sizing module says why).
SCRATCH_PER_INPUT = sizing.SCRATCH_PER_INPUT


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


def _camel(name: str) -> str:
    head, *rest = name.split("_")
    return head + "".join(part.title() for part in rest)


def schema_parameters(schema: Mapping[str, Any]) -> dict[str, dict[str, Any]]:
    """Every parameter of a Nextflow schema by name: the properties of each group under ``$defs``
    (nf-core's layout: the groups joined by ``allOf``), and any at its top level."""
    out: dict[str, dict[str, Any]] = {}
    for group in (schema.get("$defs") or {}).values():
        out.update(group.get("properties") or {})
    out.update(schema.get("properties") or {})
    return out


def schema_text(params: Mapping[str, Any], schema_path: Path = SCHEMA_PATH) -> dict[str, Any]:
    """``params`` with a number given for a parameter the schema takes only as text read as its
    text: Nextflow reads ``--scales 1`` or ``--budget 90`` from the command line as a number."""
    import json

    known = schema_parameters(json.loads(Path(schema_path).read_text()))
    out = dict(params)
    for name, value in params.items():
        types = known.get(name, {}).get("type") or []
        types = {types} if isinstance(types, str) else set(types)
        if isinstance(value, (int, float)) and not isinstance(value, bool) and "string" in types \
                and not types & {"integer", "number"}:
            out[name] = str(value)
    return out


def schema_problems(params: Mapping[str, Any], schema_path: Path = SCHEMA_PATH) -> list[str]:
    """Every parameter checked against the study's schema (types, enums, patterns), and every
    parameter the schema does not know; each problem names the parameter."""
    import json

    import jsonschema

    schema = json.loads(Path(schema_path).read_text())
    known = schema_parameters(schema)
    aliases = {_camel(k) for k in known} | {k.replace("_", "-") for k in known}
    given = {k: v for k, v in params.items() if k in known}
    problems = [f"Unknown parameter --{k}: not in {schema_path.name} (see the README or `nextflow run study "
                "--help`)" for k in sorted(params) if k not in known and k not in aliases]
    validator = jsonschema.Draft202012Validator(schema)
    for error in sorted(validator.iter_errors(given), key=lambda e: list(e.path)):
        name = ".".join(str(p) for p in error.path) or "(parameters)"
        rule = known.get(name, {})
        if error.validator == "pattern":
            why = f"does not match the form {rule['pattern']}"
        elif error.validator == "enum":
            why = f"is not one of {', '.join(str(v) for v in rule['enum'])}"
        elif error.validator == "type":
            why = f"is not of type {rule['type'] if isinstance(rule['type'], str) else ' or '.join(rule['type'])}"
        elif error.validator in ("minimum", "maximum"):
            why = f"is {'below the minimum' if error.validator == 'minimum' else 'above the maximum'} {rule[error.validator]}"
        else:
            why = error.message
        said = rule.get("description", "").split(". ")[0].rstrip(".")
        problems.append(f"Parameter --{name} = {error.instance!r} {why} ({said})")
    return problems


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
            if emulate_bytes * sizing.EXT4_FILES_SHARE < need:  # its own file system takes a share
                problems.append(f"--emulate_size {params.get('emulate_size')} is too small for class '{cls}': a run "
                                f"needs {format_size(need)} of scratch ({SCRATCH_PER_INPUT}x the "
                                f"{format_size(input_bytes)} input{' plus swap' if swap_bytes else ''}), and its ext4 "
                                f"leaves {sizing.EXT4_FILES_SHARE:.0%} of the device for files")
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


#: The study's folders: where results are published, where its emulated disks and scratch live.
PATH_PARAMS = ("outdir", "storage_root", "scratch_dir", "swap_dir", "data_dir")

#: Characters a folder the study writes, mounts or traces may not hold: the kernel's tables write
#: them escaped, and a line-based record would split on them.
_CONTROL_RE = re.compile(r"[\x00-\x1f\x7f]")


def path_problems(params: Mapping[str, Any]) -> list[str]:
    """Folders that cannot be meant: the root directory, one holding the current directory or the
    home directory (publishing or emulating there would mix the study into them), a name with a
    control character (a newline, a tab), and results published into the storage root (its
    emulated disks' mount points) or the other way round."""
    problems = []
    resolved = {}
    for name in PATH_PARAMS:
        value = params.get(name)
        if value in (None, ""):
            continue
        text = str(value)
        if _CONTROL_RE.search(text):
            problems.append(f"--{name} {text!r} holds a control character (a newline or a tab); name a plain folder")
            continue
        path = Path(text).expanduser().absolute().resolve()
        resolved[name] = path
        if name in ("outdir", "storage_root") and (path == Path(path.anchor) or path in Path.cwd().resolve().parents
                                                  or path == Path.home().resolve()):
            problems.append(f"--{name} {text} is {path}: the study would write into it beside what is there; "
                            "give a folder of its own")
        elif name in ("scratch_dir", "swap_dir") and path == Path(path.anchor):
            problems.append(f"--{name} {text} is the root directory: runs would stage their inputs, outputs and swap "
                            "files there; give a scratch folder (on the class's disk)")
    out, root = resolved.get("outdir"), resolved.get("storage_root")
    if out is not None and root is not None and (out == root or root in out.parents or out in root.parents):
        problems.append(f"--outdir {params['outdir']} and --storage_root {params['storage_root']} overlap: the "
                        "results would be published among the emulated disks' mount points; give two separate folders")
    time_limit = params.get("time_limit")
    if time_limit not in (None, "") and str(time_limit).strip() in ("0", "0s", "0m", "0h"):
        problems.append("--time_limit 0 would end every run at once; leave it unset for no limit")
    return problems
