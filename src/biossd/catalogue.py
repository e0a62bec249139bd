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
from typing import Any, Mapping

import yaml

from biossd.units import format_size, parse_size

REPO_ROOT = Path(__file__).resolve().parents[2]
CATALOGUE_DIR = REPO_ROOT / "study" / "catalogue"
_FIELD_RE = re.compile(r"\{([a-z_][a-z0-9_]*)\}")
REQUIRED_FIELDS = ("id", "paper_name", "version", "version_command", "version_regex", "command")


class CatalogueError(ValueError):
    """A broken or unknown catalogue entry; the message names the file and field."""


@dataclass(frozen=True)
class Entry:
    id: str
    source: Path
    data: Mapping[str, Any]

    @property
    def command(self) -> list[str]:
        return list(self.data["command"])

    def parameters(self) -> set[str]:
        return {name for part in self.command for name in _FIELD_RE.findall(part)}

    def render(self, values: Mapping[str, str], mem_bytes: int | None = None) -> list[str]:
        """The argv for this entry with ``values`` substituted; the memory option, if the entry
        has one, is derived from the cap (``fraction_of_cap`` of it) or its default."""
        values = dict(values)
        mem_opt = self.data.get("memory_option")
        if mem_opt:
            if mem_bytes is None:
                values.setdefault(mem_opt["name"], mem_opt["default"])
            else:
                per_tool = int(mem_bytes * float(mem_opt["fraction_of_cap"]))
                values.setdefault(mem_opt["name"], format_size(per_tool))
        missing = sorted(self.parameters() - values.keys())
        if missing:
            raise CatalogueError(
                f"{self.source}: command needs values for {missing}; pass them as NAME=VALUE"
            )
        return [_FIELD_RE.sub(lambda m: str(values[m.group(1)]), part) for part in self.command]

    def installed_version(self) -> str | None:
        """The version the native tool reports, or ``None`` if it is not installed."""
        try:
            proc = subprocess.run(
                self.data["version_command"], capture_output=True, text=True, errors="replace", check=False
            )
        except FileNotFoundError:
            return None
        match = re.search(self.data["version_regex"], proc.stdout + proc.stderr, re.MULTILINE)
        return match.group(1) if match else None


def load_entry(path: Path) -> Entry:
    path = Path(path)
    try:
        data = yaml.safe_load(path.read_text())
    except yaml.YAMLError as err:
        raise CatalogueError(f"{path}: not valid YAML ({err})") from None
    if not isinstance(data, dict):
        raise CatalogueError(f"{path}: an entry is a mapping of fields")
    for name in REQUIRED_FIELDS:
        if name not in data:
            raise CatalogueError(f"{path}: missing field '{name}'")
    if not isinstance(data["command"], list) or not all(isinstance(p, str) for p in data["command"]):
        raise CatalogueError(f"{path}: field 'command' must be a list of strings (one per argument)")
    if data["id"] != path.stem:
        raise CatalogueError(f"{path}: field 'id' is {data['id']!r} but the file is named {path.stem!r}")
    mem_opt = data.get("memory_option")
    if mem_opt is not None:
        for key in ("name", "fraction_of_cap", "default"):
            if key not in mem_opt:
                raise CatalogueError(f"{path}: field 'memory_option.{key}' is missing")
        parse_size(mem_opt["default"])
    return Entry(id=data["id"], source=path, data=data)


def get(tool_id: str, catalogue_dir: Path = CATALOGUE_DIR) -> Entry:
    path = Path(catalogue_dir) / f"{tool_id}.yaml"
    if not path.is_file():
        known = sorted(p.stem for p in Path(catalogue_dir).glob("*.yaml"))
        raise CatalogueError(f"unknown tool {tool_id!r}; the catalogue has {known}")
    return load_entry(path)


def shell_command(argv: list[str]) -> str:
    return shlex.join(argv)
