"""Running the host's administration commands (losetup, mount, mkswap, ...) with errors that
say which command failed and what it printed.

Each runs in a session of its own, so a terminal's Ctrl-C (SIGINT to the foreground process
group) does not kill it half way — a ``losetup`` or ``swapoff`` cut short would leave the host
in a state no record describes. biossd reacts to the signal itself, after the command ends."""

from __future__ import annotations

import subprocess
from typing import Sequence


def run_checked(argv: Sequence[str], error: type[Exception], what: str | None = None) -> str:
    """Run ``argv``; return its stdout, or raise ``error`` naming the step and the command's own
    message (or that the command is not installed)."""
    prefix = f"{what}: " if what else ""
    try:
        proc = subprocess.run(list(argv), capture_output=True, text=True, start_new_session=True)
    except FileNotFoundError:
        raise error(f"{prefix}{argv[0]} is not installed") from None
    if proc.returncode != 0:
        raise error(f"{prefix}`{' '.join(argv)}` failed: {(proc.stderr or proc.stdout).strip()}")
    return proc.stdout
