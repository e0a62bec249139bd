"""The study's parameters as given, checked first (Lee, Min and Yoon 2015, §5.1): against the
schema (nf-core's ``nextflow_schema.json``: types, enums, patterns, unknown names), and the
folders the study writes, mounts or traces. Each check returns its problems as sentences;
:func:`.matrix.plan` lists them all at once."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any, Mapping

from biossd.core import paths

#: Every parameter of the study, typed and documented (nf-core's nextflow_schema.json).
SCHEMA_PATH = paths.STUDY_DIR / "nextflow_schema.json"


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
