"""The ``biossd`` script's entry (and ``python -m biossd``'s): a profiled pipeline's task that its
session's leader can run is handed to it (:mod:`biossd.measure.own_pipeline.handoff`) before the command line
(:mod:`biossd.cli.main`) loads; every other command runs as the command line says."""

from __future__ import annotations

import sys


def main(argv: list[str] | None = None) -> int:
    """Run one ``biossd`` command; a handed-off pipeline task returns the task's exit status."""
    from biossd.measure.own_pipeline import handoff

    status = handoff.hand_off(sys.argv[1:] if argv is None else list(argv))
    if status is not None:
        return status
    from biossd.cli import main as run

    return run(argv)
