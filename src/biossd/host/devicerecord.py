"""The device record (``device.json``): what ``biossd device characterize`` measured of the device
a storage class is on — the bandwidth Butil divides by and the row of the paper's Tables 3/4
(Lee, Min and Yoon 2015, §4.1) — with the device, mount and emulation it was measured on; or a
stub-run's or a synthetic result set's stand-in, which say so.

Its form is a JSON Schema (2020-12, ``schemas/device.schema.json`` beside this module), checked
when a record is written (:func:`write`) and when it is read (:func:`read`): a record that does
not follow it is refused, naming the file and the field.
"""

from __future__ import annotations

import functools
import json
from pathlib import Path
from typing import Any

from biossd.core.errors import BiossdError
from biossd.core.files import atomic_write_text

SCHEMA_PATH = Path(__file__).with_name("schemas") / "device.schema.json"


class DeviceRecordError(BiossdError, ValueError):
    """A device record that does not follow its schema; the message names the file and the field."""


@functools.lru_cache(maxsize=1)
def _validator() -> Any:
    """The schema's validator, made once per process (the features read a record per run)."""
    import jsonschema

    return jsonschema.Draft202012Validator(json.loads(SCHEMA_PATH.read_text()))


def problems(record: Any) -> list[str]:
    """What in ``record`` breaks the schema, each naming its field (``spec_row.seq_read_mbs``)."""
    out = []
    for error in sorted(_validator().iter_errors(record), key=lambda e: list(map(str, e.absolute_path))):
        field = ".".join(str(p) for p in error.absolute_path) or "(the record)"
        out.append(f"field {field}: {error.message}")
    return out


def check(record: Any, where: Path | str) -> dict[str, Any]:
    """``record``, or :class:`DeviceRecordError` naming ``where`` and every field that is wrong."""
    found = problems(record)
    if found:
        raise DeviceRecordError(f"{where}: not a device record of `biossd device characterize` ({'; '.join(found)}); "
                                "write it again with `biossd device characterize PATH -o FILE`")
    return record


def read(path: Path) -> dict[str, Any]:
    """The record in ``path``, checked."""
    path = Path(path)
    try:
        record = json.loads(path.read_text())
    except (OSError, ValueError) as err:
        raise DeviceRecordError(f"{path}: cannot read the device record ({err})") from None
    return check(record, path)


def write(path: Path, record: dict[str, Any]) -> Path:
    """Write ``record`` to ``path`` whole (a temporary name, then renamed), once it is checked."""
    check(record, path)
    atomic_write_text(Path(path), json.dumps(record, indent=2) + "\n")
    return Path(path)
