"""The experiments' definitions: ``study/experiments/<id>.yaml`` found, loaded and checked, and
each one's logic module (``biossd.experiments.<id>``)."""

from __future__ import annotations

import importlib
from pathlib import Path
from types import ModuleType
from typing import Any, Mapping, Sequence

from biossd.core import paths, yamlfile
from biossd.core.errors import BiossdError
from biossd.core.units import parse_size
from biossd.study import catalogue

EXPERIMENTS_DIR = paths.EXPERIMENTS_DIR


def _discover(directory: Path) -> tuple[str, ...]:
    """The experiments defined in ``directory`` (one ``<id>.yaml`` each), in their definitions'
    ``order``: adding a definition adds the experiment everywhere its name is listed."""
    found = []
    for path in sorted(Path(directory).glob("*.yaml")):
        spec = yamlfile.read_mapping(path, "experiment definition", ExperimentError)
        found.append((int(spec.get("order", 0)), path.stem))
    return tuple(name for _order, name in sorted(found))


#: Every experiment's sizes: tiny for the test suite, test for one machine, full for a host pair.
SIZES = ("tiny", "test", "full")

#: An experiment's figure and table in the report and the supplement: their number (``S2``) and captions.
ARTEFACT_KEYS = ("number", "figure", "table")
#: Keys every size of every experiment has.
SIZE_KEYS = ("input_size", "cap", "repeats", "timeout")


class ExperimentError(BiossdError, ValueError):
    """An experiment's definition, plan or task is wrong; the message names the file or field."""


#: The experiments, in the seeds' order (``study/experiments/<id>.yaml``).
NAMES = _discover(EXPERIMENTS_DIR)


def names_of(value: str | Sequence[str]) -> list[str]:
    """``sort_memory,kmer_io`` or ``all`` as the list of experiment ids (checked)."""
    given = [v.strip() for v in (value.split(",") if isinstance(value, str) else value) if v.strip()]
    if given == ["all"]:
        return list(NAMES)
    unknown = [n for n in given if n not in NAMES]
    if unknown or not given:
        raise ExperimentError(f"--experiment {','.join(given) or '(empty)'}: unknown {unknown or 'nothing given'}; "
                              f"choose from {', '.join(NAMES)} or all")
    return given


def load_spec(name: str, directory: Path = EXPERIMENTS_DIR) -> dict[str, Any]:
    """``study/experiments/<name>.yaml``, checked: every size has the shared keys."""
    path = Path(directory) / f"{name}.yaml"
    if not path.is_file():
        raise ExperimentError(f"{path}: no such experiment definition; the experiments are {', '.join(NAMES)}")
    spec = yamlfile.read_mapping(path, "experiment definition", ExperimentError)
    for key in ("id", "order", "source", "title", "question", "source_finding", "tools", "artefacts", "input", "sizes"):
        if key not in spec:
            raise ExperimentError(f"{path}: field {key!r} is missing")
    if spec["id"] != name:
        raise ExperimentError(f"{path}: field 'id' is {spec['id']!r}, not the file's name {name!r}")
    missing = [k for k in ARTEFACT_KEYS if k not in (spec["artefacts"] or {})]
    if missing:
        raise ExperimentError(f"{path}: artefacts lacks {missing} (its figure's and table's number and captions)")
    for size in SIZES:
        settings = spec["sizes"].get(size)
        if not isinstance(settings, dict):
            raise ExperimentError(f"{path}: sizes.{size} is missing")
        missing = [k for k in SIZE_KEYS if k not in settings]
        if missing:
            raise ExperimentError(f"{path}: sizes.{size} lacks {missing}")
        repeats = settings["repeats"]
        if isinstance(repeats, bool) or not isinstance(repeats, int) or not 1 <= repeats <= MAX_REPEATS:
            raise ExperimentError(f"{path}: sizes.{size}.repeats is {repeats!r}: a whole number from 1 to {MAX_REPEATS}")
        try:
            input_bytes = parse_size(str(settings["input_size"]))
        except ValueError as err:
            raise ExperimentError(f"{path}: sizes.{size}.input_size: {err}") from None
        if input_bytes < 1:
            raise ExperimentError(f"{path}: sizes.{size}.input_size is {settings['input_size']!r}: an input has bytes")
    return spec


#: Repeats of an experiment's points (the study's own --repeats has the same bound).
MAX_REPEATS = 1000


def module(name: str) -> ModuleType:
    """The experiment's logic, ``biossd.experiments.<name>``."""
    return importlib.import_module(f"biossd.experiments.{name}")


def substitutes(spec: Mapping[str, Any]) -> dict[str, str]:
    """Each tool of the experiment that stands in for another: ``{tool: what it substitutes}``."""
    return {tool: info["substitute_of"] for tool, info in spec["tools"].items() if info.get("substitute_of")}


def tool_version(spec: Mapping[str, Any], tool: str) -> str | None:
    """The installed version of one of the experiment's tools (a catalogue entry's, or from its
    own ``version_command``); ``None`` when it is not installed."""
    info = spec["tools"][tool]
    if info.get("catalogue"):
        return catalogue.get(info["catalogue"]).installed_version()
    if not info.get("version_command"):
        return info.get("version")
    entry = catalogue.Entry(tool, EXPERIMENTS_DIR / f"{spec['id']}.yaml",
                            {"version_command": info["version_command"], "version_regex": info["version_regex"]})
    return entry.installed_version()


def describe(spec: Mapping[str, Any]) -> str:
    """The experiment in words, as a reader of the report meets it: the study it re-runs, its
    question and that study's finding, its tools with each substitute named as such, and what is
    not available here."""
    lines = [f"{spec['title']}, after {spec['source']}.", f"Question: {' '.join(spec['question'].split())}",
             f"That study found: {' '.join(spec['source_finding'].split())}", "Tools:"]
    for tool, info in spec["tools"].items():
        sub = f" — SUBSTITUTE for {info['substitute_of']}" if info.get("substitute_of") else ""
        version = info.get("version") or (catalogue.get(info["catalogue"]).data.get("version") if info.get("catalogue")
                                          else "")
        note = f": {' '.join(info['note'].split())}" if info.get("note") else ""
        lines.append(f"  - {info.get('name', tool)} {version}{sub}{note}")
    for what, why in (spec.get("not_available") or {}).items():
        lines.append(f"Not available here ({what}): {' '.join(why.split())}")
    return "\n".join(lines)
