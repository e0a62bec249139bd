"""`biossd profile`: one command under a memory cap, recorded (the profiler,
:mod:`biossd.measure.profile`)."""

from __future__ import annotations

import argparse
import signal
from pathlib import Path

from biossd.cli import options
from biossd.core import signals


def cmd_profile(args: argparse.Namespace) -> int:
    from biossd.measure import profile, toolrun

    command = args.command[1:] if args.command[:1] == ["--"] else args.command
    if options.parent_gone(args, "biossd profile"):
        return profile.signal_exit_code(signal.SIGTERM)
    request = options.profile_request(args, command, options.mem_bytes(args.mem), Path(args.out))
    _, signum = toolrun.profiled(request, "biossd profile")
    if signum is not None:
        return profile.signal_exit_code(signum)
    signals.ignored_until_exit()
    return 0


def register(sub: argparse._SubParsersAction) -> None:
    """This room's commands and their options."""
    p = sub.add_parser("profile", help="run one command under a memory cap and record it")
    p.add_argument("--mem", required=True, help="memory cap, e.g. 1G, or 'none'")
    p.add_argument("--out", required=True, help="run directory to write")
    options.add_profile_options(p)
    p.add_argument("command", nargs=argparse.REMAINDER, help="-- CMD [ARGS...]")
    p.set_defaults(func=cmd_profile)

