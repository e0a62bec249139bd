"""The tool catalogue: one YAML entry per profiled program under ``study/catalogue/``.

An entry says what runs (an argv template), which version, and how the memory cap is passed
to the tool. Rendering substitutes values into each argv element separately, so a path with
spaces or shell metacharacters stays one argument; :func:`shell_command` quotes for a shell.
"""

from __future__ import annotations

import re
import shlex
import subprocess
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Mapping, Sequence

from biossd.core import paths, yamlfile
from biossd.core.errors import BiossdError
from biossd.core.paths import REPO_ROOT
from biossd.core.units import parse_size
from biossd.study.inputs import kinds as input_kinds

CATALOGUE_DIR = paths.CATALOGUE_DIR
_FIELD_RE = re.compile(r"\{([a-z_][a-z0-9_]*)\}")
KINDS = ("tool", "pipeline")
STATUSES = ("runnable", "recipe-only")
GROUPS = ("G+", "G0")
#: How a tool's own memory setting follows the sizing rule (biossd.study.sizing.rule): ``scaled``, its
#: paper-era default divided by D; ``heap``, a JVM's heap size (not pre-touched: what the tool touches
#: of it is measured like any other memory).
MEMORY_RULES = ("scaled", "heap")
#: Output formats an aligner's ``quality`` block may name (scored by :mod:`biossd.features.quality`).
QUALITY_FORMATS = ("sam", "maq_mapview")
_DOI_RE = re.compile(r"^10\.\d{4,9}/\S+$")
_ID_RE = re.compile(r"^[a-z][a-z0-9_]*$")

#: The entry schema: field -> (accepted types, required for kinds, what it is). Documented for
#: users in study/catalogue/README.md; :func:`load_entry` checks it with errors naming the field.
_STR, _NUM, _LIST, _MAP, _NONE = (str,), (int, float), (list,), (dict,), (type(None),)
SCHEMA: dict[str, tuple[tuple[type, ...], tuple[str, ...], str]] = {
    "id": (_STR, KINDS, "the file's name without .yaml"),
    "kind": (_STR, (), "tool (default) or pipeline"),
    "paper_name": (_STR, KINDS, "the name in Lee, Min and Yoon 2015 (Table 1, Fig. 3)"),
    "paper_group": (_STR + _NONE, ("tool",), "G+ or G0 (null for a substitute)"),
    "paper_speedup": (_NUM + _NONE, KINDS, "the paper's SSD/HDD speedup (null for a substitute)"),
    "substitute_of": (_STR + _NONE, ("tool",), "the id of the paper's tool this replaces, or null"),
    "task": (_STR, ("tool",), "Table 1's task"),
    "algorithm": (_STR, ("tool",), "Table 1's main algorithm"),
    "citation": (_STR, ("tool",), "DOI of the tool's paper"),
    "licence": (_STR, ("tool",), "the tool's licence"),
    "version": (_STR, ("tool",), "the pinned version (a string)"),
    "version_note": (_STR, (), "how the pinned version relates to the paper's"),
    "status": (_STR, ("tool",), "runnable (buildable and runnable here) or recipe-only"),
    "status_reason": (_STR, (), "why a recipe-only entry cannot be built or run here"),
    "install": (_MAP, ("tool",), "debian / debian_component / maven / pypi_build / upstream"),
    "container": (_MAP, ("tool",), "image, dockerfile, apptainer"),
    "version_command": (_LIST, ("tool",), "argv printing the version"),
    "version_regex": (_STR, ("tool",), "regex whose group 1 is the version"),
    "input": (_STR, ("tool",), "the input dataset kind (data manifests)"),
    "inputs": (_MAP, ("tool",), "named inputs of the command: name -> description"),
    "outputs": (_MAP, ("tool",), "named outputs of the command: name -> description"),
    "params": (_MAP, (), "other named values of the command: name -> description"),
    "threads": (_MAP, ("tool",), "{default: N}: the {threads} value when none is given"),
    "scaling": (_STR, ("tool",), "how the input grows with the scale factor"),
    "memory_options": (_LIST, (), "[{name, rule, default, unit, minimum, source}]: a tool's own memory settings "
                                  "(biossd.study.sizing.rule): rule scaled (the paper-era default / D) or heap (a "
                                  "JVM's heap size, one rule for every JVM tool)"),
    "min_mem": (_STR, (), "the smallest memory cap the tool runs under (e.g. a JVM's heap); the study refuses less"),
    "stage": (_MAP, (), "{files, values, prepare, chdir}: how a run is staged from its input kind (runnable tools); "
                        "chdir names the stage file the command changes into first (abyss-pe -C)"),
    "quality": (_MAP, (), "{output, format, truth}: score the output against the input's truth (biossd.features.quality)"),
    "command": (_LIST, ("tool",), "argv template; {name} fields are filled per argument"),
    "extra_commands": (_MAP, (), "other argv templates: name -> argv"),
    "smoke": (_MAP + _NONE, ("tool",), "{files, commands, expect}: a tiny self-checking run, or null"),
    "paper_figure": (_STR, ("pipeline",), "the figure the pipeline is in"),
    "data": (_STR, ("pipeline",), "the paper's input data for the pipeline"),
    "steps": (_LIST, ("pipeline",), "catalogue ids, in order"),
    "substitute_steps": (_MAP, (), "step id -> substitute id"),
    "chain": (_MAP, (), "{input, prepare, steps, not_chained}: the steps run chained (biossd.study.chain)"),
    "note": (_STR, (), "free text"),
}


class CatalogueError(BiossdError, ValueError):
    """A broken or unknown catalogue entry; the message names the file and field."""


@dataclass(frozen=True)
class Entry:
    id: str
    source: Path
    data: Mapping[str, Any]

    @property
    def kind(self) -> str:
        return self.data.get("kind", "tool")

    @property
    def command(self) -> list[str]:
        return list(self.data["command"])

    def parameters(self) -> set[str]:
        return {name for part in self.command for name in _FIELD_RE.findall(part)}

    def min_cap_bytes(self) -> int:
        """The smallest cap a run of the tool may have: its catalogue ``min_mem``, at least the
        smallest any run may have (:data:`biossd.host.cgroups.MIN_CAP_BYTES`)."""
        from biossd.core.units import parse_size
        from biossd.host.cgroups import MIN_CAP_BYTES

        own = self.data.get("min_mem")
        return max(MIN_CAP_BYTES, parse_size(own) if own else 0)

    def memory_options(self) -> list[Mapping[str, Any]]:
        """The tool's own memory settings (``memory_options`` of the entry), in order."""
        return list(self.data.get("memory_options") or [])

    def default_settings(self) -> dict[str, str]:
        """The tool's memory settings at their paper-era defaults (the sizing rule's values at
        D = 1, :func:`biossd.study.sizing.rule.settings`)."""
        return {opt["name"]: str(opt["default"]) for opt in self.memory_options()}

    def render(self, values: Mapping[str, str], settings: Mapping[str, str] | None = None) -> list[str]:
        """The argv for this entry with ``values`` substituted; its memory settings are
        ``settings`` (:func:`biossd.study.sizing.rule.settings`), each missing one its default."""
        values = dict(values)
        values.setdefault("threads", str(self.data.get("threads", {}).get("default", 1)))
        for name, value in {**self.default_settings(), **dict(settings or {})}.items():
            values.setdefault(name, value)
        missing = sorted(self.parameters() - values.keys())
        if missing:
            raise CatalogueError(
                f"{self.source}: command needs values for {missing}; pass them as NAME=VALUE"
            )
        return [_FIELD_RE.sub(lambda m: str(values[m.group(1)]), part) for part in self.command]

    def installed_version(self, prefix: Sequence[str] = ()) -> str | None:
        """The version the tool reports (natively, or through a runner ``prefix`` such as
        ``ch-run ... --``), or ``None`` if it is not installed."""
        try:
            proc = subprocess.run(
                [*prefix, *self.data["version_command"]], capture_output=True, text=True, errors="replace", check=False
            )
        except FileNotFoundError:
            return None
        match = re.search(self.data["version_regex"], proc.stdout + proc.stderr, re.MULTILINE)
        return match.group(1) if match else None


def _fail(path: Path, field: str, problem: str) -> CatalogueError:
    return CatalogueError(f"{path}: field '{field}' {problem}")


def load_entry(path: Path) -> Entry:
    """Read and check one entry against :data:`SCHEMA`; errors name the file and field."""
    path = Path(path)
    data = yamlfile.read_mapping(path, "an entry", CatalogueError)
    kind = data.get("kind", "tool")
    if kind not in KINDS:
        raise _fail(path, "kind", f"is {kind!r}; use one of {KINDS}")
    yamlfile.check_fields(path, data, {name: (types, what) for name, (types, _, what) in SCHEMA.items()},
                          {name for name, (_, required, _) in SCHEMA.items() if kind in required},
                          "catalogue", CatalogueError)
    if not _ID_RE.match(str(data["id"])):
        raise _fail(path, "id", f"is {data['id']!r}: an id is lowercase ASCII letters, digits and '_', "
                                "starting with a letter")
    if data["id"] != path.stem:
        raise _fail(path, "id", f"is {data['id']!r} but the file is named {path.stem!r}")
    if kind == "tool":
        _check_tool(path, data)
    return Entry(id=data["id"], source=path, data=data)


def _check_tool(path: Path, data: dict[str, Any]) -> None:
    for name in ("command", "version_command"):
        if not data[name] or not all(isinstance(p, str) for p in data[name]):
            raise _fail(path, name, "must be a list of strings (one per argument)")
    if data["paper_group"] is not None and data["paper_group"] not in GROUPS:
        raise _fail(path, "paper_group", f"is {data['paper_group']!r}; use one of {GROUPS} or null")
    if data["substitute_of"] is not None and (data["paper_group"] is not None or data["paper_speedup"] is not None):
        raise _fail(path, "paper_speedup", "must be null for a substitute: its numbers are not the paper's")
    if not _DOI_RE.match(data["citation"]):
        raise _fail(path, "citation", f"is {data['citation']!r}, not a DOI (10.NNNN/...)")
    if data["status"] not in STATUSES:
        raise _fail(path, "status", f"is {data['status']!r}; use one of {STATUSES}")
    install = data["install"]
    if data["status"] == "runnable" and not (install.get("debian") or install.get("maven") or install.get("pypi_build")):
        raise _fail(path, "install", "of a runnable entry needs a debian, maven or pypi_build pin")
    build = install.get("pypi_build")
    if build is not None:
        missing = [k for k in ("package", "version", "wheel_sha256", "source", "library", "include_dir", "program")
                   if not isinstance(build, dict) or not build.get(k)]
        if missing:
            raise _fail(path, "install.pypi_build", f"needs {', '.join(missing)}")
    if data["status"] == "recipe-only" and not data.get("status_reason"):
        raise _fail(path, "status_reason", "is missing: say why the entry cannot run here")
    if install.get("debian") and not all("=" in pin for pin in install["debian"].split()):
        raise _fail(path, "install.debian", f"is {install['debian']!r}; pin each package as NAME=VERSION")
    for key in ("dockerfile", "apptainer"):
        recipe = data["container"].get(key)
        if not recipe:
            raise _fail(path, f"container.{key}", "is missing")
    try:
        re.compile(data["version_regex"])
    except re.error as err:
        raise _fail(path, "version_regex", f"is not a regular expression ({err})") from None
    if data.get("min_mem") is not None:
        try:
            parse_size(data["min_mem"])
        except ValueError:
            raise _fail(path, "min_mem", f"is {data['min_mem']!r}, not a size like 512M") from None
    declared = {*data["inputs"], *data["outputs"], *data.get("params", {}), "threads"}
    declared |= _check_memory_options(path, data)
    _check_commands_and_stage(path, data, declared)


def _check_memory_options(path: Path, data: dict[str, Any]) -> set[str]:
    """Each ``memory_options`` entry well formed; returns their names (fields a command may use)."""
    names = set()
    for i, opt in enumerate(data.get("memory_options") or []):
        where = f"memory_options[{i}]"
        if not isinstance(opt, dict):
            raise _fail(path, where, "must be a mapping {name, rule, default, unit, source}")
        for key in ("name", "rule", "default", "source"):
            if key not in opt:
                raise _fail(path, f"{where}.{key}", "is missing")
        if opt["rule"] not in MEMORY_RULES:
            raise _fail(path, f"{where}.rule", f"is {opt['rule']!r}; use one of {MEMORY_RULES}")
        unit = opt.get("unit", "bytes")
        if unit not in ("bytes", "count"):
            raise _fail(path, f"{where}.unit", f"is {unit!r}; use bytes or count")
        for key in ("default", "minimum"):
            if key not in opt:
                continue
            try:
                int(opt[key]) if unit == "count" else parse_size(str(opt[key]))
            except ValueError:
                raise _fail(path, f"{where}.{key}", f"is {opt[key]!r}, not a {unit}") from None
        if opt["rule"] == "heap" and unit != "bytes":
            raise _fail(path, f"{where}.unit", "of a heap must be bytes")
        names.add(opt["name"])
    return names


def _check_commands_and_stage(path: Path, data: dict[str, Any], declared: set[str]) -> None:
    """Every field a command uses is declared; the staging gives each a value; the quality check,
    the input kind and the smoke test are well formed."""
    commands = {"command": data["command"], **{f"extra_commands.{k}": v for k, v in data.get("extra_commands", {}).items()}}
    for where, argv in commands.items():
        used = {name for part in argv for name in _FIELD_RE.findall(part)}
        if used - declared:
            raise _fail(path, where, f"uses {sorted(used - declared)}, which inputs/outputs/params do not declare")
    stage = data.get("stage")
    if data["status"] == "runnable" and stage is None:
        raise _fail(path, "stage", "is missing: a runnable tool says how its input is staged")
    if stage is not None:
        given = {*stage.get("files", {}), *stage.get("values", {}), "threads"}
        given |= {opt["name"] for opt in data.get("memory_options") or []}
        needed = {name for part in data["command"] for name in _FIELD_RE.findall(part)}
        if needed - given:
            raise _fail(path, "stage", f"gives no value for {sorted(needed - given)} of the command")
        if not all(isinstance(c, list) and c and all(isinstance(a, str) for a in c) for c in stage.get("prepare", [])):
            raise _fail(path, "stage.prepare", "must be a list of argv lists")
        if "chdir" in stage and stage["chdir"] not in stage.get("files", {}):
            raise _fail(path, "stage.chdir", f"is {stage['chdir']!r}, not a file of stage.files")
    quality = data.get("quality")
    if quality is not None:
        if quality.get("output") not in (stage or {}).get("files", {}):
            raise _fail(path, "quality.output", f"is {quality.get('output')!r}, not a file of stage.files")
        if quality.get("format") not in QUALITY_FORMATS:
            raise _fail(path, "quality.format", f"is {quality.get('format')!r}; use one of {QUALITY_FORMATS}")
        if not quality.get("truth"):
            raise _fail(path, "quality.truth", "is missing: the input's truth file")
    if data["input"] not in input_kinds.DESCRIPTIONS:
        kinds = ", ".join(sorted(input_kinds.DESCRIPTIONS))
        raise _fail(path, "input", f"is {data['input']!r}, not a synthetic input kind ({kinds})")
    smoke = data["smoke"]
    if smoke is not None:
        if not smoke.get("commands") or not all(isinstance(c, list) and c for c in smoke["commands"]):
            raise _fail(path, "smoke.commands", "must be a list of argv lists")
        if not isinstance(smoke.get("expect"), dict):
            raise _fail(path, "smoke.expect", "must say what a passing smoke run leaves (file/contains)")


def get(tool_id: str, catalogue_dir: Path = CATALOGUE_DIR) -> Entry:
    path = Path(catalogue_dir) / f"{tool_id}.yaml"
    if not path.is_file():
        known = sorted(p.stem for p in Path(catalogue_dir).glob("*.yaml"))
        raise CatalogueError(f"unknown tool {tool_id!r}; the catalogue has {known}")
    return load_entry(path)


def load_all(catalogue_dir: Path = CATALOGUE_DIR) -> list[Entry]:
    """Every entry, checked one by one and across entries: substitutes and pipeline steps name
    existing tools, and every container recipe file exists."""
    entries = [load_entry(p) for p in sorted(Path(catalogue_dir).glob("*.yaml"))]
    ids = {e.id for e in entries}
    for e in entries:
        refs = []
        if e.kind == "tool":
            if e.data["substitute_of"]:
                refs.append(("substitute_of", e.data["substitute_of"]))
            for key in ("dockerfile", "apptainer"):
                recipe = REPO_ROOT / e.data["container"][key]
                if not recipe.is_file():
                    raise _fail(e.source, f"container.{key}", f"names {recipe}, which does not exist")
        else:
            refs += [("steps", s) for s in e.data["steps"]]
            refs += [("substitute_steps", s) for pair in e.data.get("substitute_steps", {}).items() for s in pair]
        for field_name, ref in refs:
            if ref not in ids:
                raise _fail(e.source, field_name, f"names {ref!r}, which is not in the catalogue")
    return entries


def shell_command(argv: list[str]) -> str:
    return shlex.join(argv)


def version_matches(installed: str | None, pinned: str) -> bool:
    """A tool's reported version is the pinned one (``0.7.17-r1188`` matches ``0.7.17``)."""
    return installed is not None and (installed == pinned or installed.startswith(pinned + "-")
                                      or installed.startswith(pinned + "+") or installed.startswith(pinned + "."))
