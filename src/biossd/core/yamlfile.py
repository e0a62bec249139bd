"""The study's YAML files (catalogue entries, data-set manifests, device profiles): read as a
mapping and checked against a schema of fields, with errors naming the file and the field."""

from __future__ import annotations

from pathlib import Path
from typing import Any, Collection, Mapping

import yaml

#: libyaml's parser where PyYAML was built with it (the same safe subset of YAML; the suite's
#: synthetic result set, which reads the catalogue 1,241 times, was written in 1.8 s instead of
#: about 5 s), PyYAML's own otherwise.
_SAFE_LOADER = getattr(yaml, "CSafeLoader", yaml.SafeLoader)


def read_mapping(path: Path, what: str, error: type[Exception]) -> dict[str, Any]:
    """The YAML mapping in ``path`` (``what`` it is, for the message); ``error`` when the file
    cannot be read, is not valid YAML or is not a mapping."""
    path = Path(path)
    try:
        data = yaml.load(path.read_text(), Loader=_SAFE_LOADER)
    except OSError as err:
        raise error(f"{path}: cannot read {what} ({err})") from None
    except yaml.YAMLError as err:
        raise error(f"{path}: not valid YAML ({err})") from None
    if not isinstance(data, dict):
        raise error(f"{path}: {what} is a mapping of fields")
    return data


def check_fields(path: Path, data: Mapping[str, Any], schema: Mapping[str, tuple[tuple[type, ...], str]],
                 required: Collection[str], what: str, error: type[Exception]) -> None:
    """Every field of ``data`` is in ``schema`` (name → (accepted types, what it is)) with one of
    its types (a bool only where ``bool`` is named), and every ``required`` field is there."""
    for name, value in data.items():
        if name not in schema:
            raise error(f"{path}: field '{name}' is not a {what} field (known: {', '.join(schema)})")
        types = schema[name][0]
        if not isinstance(value, types) or (isinstance(value, bool) and bool not in types):
            raise error(f"{path}: field '{name}' must be {' or '.join(t.__name__ for t in types)}, not "
                        f"{type(value).__name__} ({schema[name][1]})")
    for name in schema:
        if name in required and name not in data:
            raise error(f"{path}: field '{name}' is missing ({schema[name][1]})")
