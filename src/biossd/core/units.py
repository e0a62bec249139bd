"""Byte-size parsing and formatting shared by every command (binary units: 1K = 1024 bytes)."""

from __future__ import annotations

import re

BYTES_PER_KIB = 1024
#: The kernel's sector: block requests, ``/sys/block/*/size`` and blktrace count 512-byte units.
SECTOR_BYTES = 512
_SUFFIX_POWER = {"": 0, "K": 1, "M": 2, "G": 3, "T": 4}
_SIZE_RE = re.compile(r"^\s*(\d+(?:\.\d+)?)\s*([KMGT]?)(?:I?B)?\s*$", re.IGNORECASE)
_SIZE_LABEL_RE = re.compile(r"^\d+[KMGT]?$")


def parse_size(text: str) -> int:
    """Parse ``"64M"``, ``"1G"``, ``"1.5GiB"`` or ``"4096"`` into bytes (binary multiples).

    Raises ``ValueError`` naming the text and the accepted form.
    """
    match = _SIZE_RE.match(str(text))
    if not match:
        raise ValueError(
            f"cannot read size {text!r}: use a number with an optional K, M, G or T suffix "
            "(binary multiples), e.g. 64M or 1G"
        )
    number, suffix = match.groups()
    value = float(number) * BYTES_PER_KIB ** _SUFFIX_POWER[suffix.upper()]
    return int(value)


def is_size_label(text: str) -> bool:
    """Whether ``text`` is a size as a study names it in labels and paths (a cap ``1G``, an input
    ``8M``): whole digits and an optional unit letter, no spaces, no ``B`` — a form that
    :func:`parse_size` reads and that is one path component."""
    return bool(_SIZE_LABEL_RE.match(str(text)))


def format_size(n_bytes: int) -> str:
    """Shortest exact binary form of a byte count: 67108864 → ``"64M"``, 1000 → ``"1000"``."""
    for suffix in ("T", "G", "M", "K"):
        unit = BYTES_PER_KIB ** _SUFFIX_POWER[suffix]
        if n_bytes >= unit and n_bytes % unit == 0:
            return f"{n_bytes // unit}{suffix}"
    return str(n_bytes)


_DURATION_S = {"": 1.0, "s": 1.0, "m": 60.0, "h": 3600.0}
_DURATION_RE = re.compile(r"^\s*(\d+(?:\.\d+)?)\s*([smh]?)\s*$", re.IGNORECASE)


def parse_duration_s(text: str) -> float:
    """Parse ``"120s"``, ``"5m"``, ``"1.5h"`` or ``"30"`` (seconds) into seconds."""
    match = _DURATION_RE.match(str(text))
    if not match:
        raise ValueError(f"cannot read duration {text!r}: use a number with s, m or h, e.g. 120s or 5m")
    return float(match.group(1)) * _DURATION_S[match.group(2).lower()]
