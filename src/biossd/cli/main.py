"""The ``biossd`` command line: ``main`` (signals, and the one path from an error to an exit
status) and the parser, assembled from the rooms of this package — one module per command group,
its parser beside its handlers; handlers parse, call the library, print."""

from __future__ import annotations

import errno
import signal
import sys


def _terminate_as_interrupt(signum: int, _frame: object) -> None:
    raise KeyboardInterrupt(signum)


# As early as the command allows: the signals that end biossd (INT, TERM, HUP, QUIT) unwind like
# Ctrl-C, so every command's clean-up (finally, context managers) runs and it exits 128+signal;
# commands that measure install their own handlers. (A signal in the interpreter's own start,
# before these lines, kills it by the signal, which a shell reports as the same 128+signal.)
from biossd.core.signals import for_the_process  # noqa: E402 (the handlers before anything slow loads)

for_the_process(_terminate_as_interrupt)


def _signum_of(intr: KeyboardInterrupt) -> int:
    """The signal a :class:`KeyboardInterrupt` stands for (SIGINT when Ctrl-C raised it)."""
    return intr.args[0] if intr.args and isinstance(intr.args[0], int) else signal.SIGINT


try:
    import argparse  # noqa: E402 (loaded once the handlers are set)
    import logging  # noqa: E402 (loaded once the handlers are set)

    from biossd import __version__  # noqa: E402 (loaded once the handlers are set)
    from biossd.cli import pipeline  # noqa: E402 (loaded once the handlers are set)
    from biossd.core.errors import BiossdError  # noqa: E402 (loaded once the handlers are set)
except KeyboardInterrupt as _intr:  # a signal while the commands load: nothing was made yet
    sys.exit(128 + _signum_of(_intr))

DESCRIPTION = ("biossd: will solid-state drives accelerate your bioinformatics? The study's runs, their "
               "analysis, and the host they run on.")

#: The rooms (modules of this package), in the order ``biossd --help`` lists their commands.
ROOMS = ("profile", "analysis", "data", "catalogue", "study", "host", "pipeline")


def rooms(first: str | None = None) -> list:
    """The room modules a command line needs: only the pipeline room for its commands (every
    task of a profiled pipeline starts ``biossd pipeline task``, which then loads no other room
    and registers no other parser), else all of them."""
    import importlib

    if first == pipeline.COMMAND:
        return [pipeline]
    return [importlib.import_module(f"biossd.cli.{name}") for name in ROOMS]


def build_parser(first: str | None = None) -> argparse.ArgumentParser:
    """The command line: every room registers its commands (for ``first``, a command's first
    word, only the rooms it needs: :func:`rooms`)."""
    parser = argparse.ArgumentParser(prog="biossd", description=DESCRIPTION)
    parser.add_argument("--version", action="version", version=f"biossd {__version__}")
    parser.set_defaults(run_handed_off=run_handed_off)  # what a pipeline session's leader runs tasks with
    sub = parser.add_subparsers(dest="cmd", required=True)
    for room in rooms(first):
        room.register(sub)
    return parser


def _name_commands(parser: argparse.ArgumentParser) -> None:
    """Give every (sub)command its full name (``biossd data synth``) for its messages."""
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            for sub in action.choices.values():
                sub.set_defaults(command_name=sub.prog)
                _name_commands(sub)


def run_handed_off(argv: list[str]) -> int:
    """A pipeline task's command line in its session leader's worker (:mod:`biossd.measure.own_pipeline.handoff`):
    biossd's signal handlers, as in a process of its own (the worker is a fork of the leader,
    which had its own), then :func:`main`; the handlers reach the leader through the parser's
    defaults (``args.run_handed_off``)."""
    for_the_process(_terminate_as_interrupt)
    try:
        return main(argv)
    except KeyboardInterrupt as intr:
        return 128 + _signum_of(intr)


#: Errors of the file system a user can act on, by errno, and what to do.
FULL_OR_DENIED = {errno.ENOSPC: "the disk is full; free space there (or write elsewhere) and run the command again",
                  errno.EDQUOT: "the disk quota is used up; free space there and run the command again",
                  errno.EROFS: "the file system is read-only; write elsewhere",
                  errno.EACCES: "no permission to write there; write elsewhere or ask its owner"}


def main(argv: list[str] | None = None) -> int:
    """Run one command. Every error a user can act on (:class:`biossd.core.errors.BiossdError`,
    or a bad value — a size, a path — that the library refuses with ``ValueError`` or
    ``FileNotFoundError``) ends here: its message, prefixed by the command's name, on stderr,
    and the error's exit status (2; 75 for a busy host); anything else is a bug and keeps its
    traceback."""
    logging.basicConfig(level=logging.WARNING, format="biossd: %(message)s")
    try:
        words = sys.argv[1:] if argv is None else argv
        parser = build_parser(words[0] if words else None)
        _name_commands(parser)
        args = parser.parse_args(argv)
    except KeyboardInterrupt as intr:
        return 128 + _signum_of(intr)
    name = getattr(args, "command_name", "biossd")
    try:
        return args.func(args)
    except KeyboardInterrupt as intr:
        signum = _signum_of(intr)
        print(f"{name}: interrupted by signal {signum}; what it had made was removed", file=sys.stderr)
        return 128 + signum
    except (BiossdError, ValueError, FileNotFoundError) as err:
        print(f"{name}: {err}", file=sys.stderr)
        return getattr(err, "exit_status", 2)
    except OSError as err:
        if err.errno not in FULL_OR_DENIED:
            raise
        # A full disk or a folder it may not write: what it names and what to do, not a traceback
        # (whatever the command wrote is written whole or not at all).
        where = f" ({err.filename})" if err.filename else ""
        print(f"{name}: {err.strerror}{where}: {FULL_OR_DENIED[err.errno]}", file=sys.stderr)
        return 2


if __name__ == "__main__":
    sys.exit(main())
