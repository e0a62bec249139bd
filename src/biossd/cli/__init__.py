"""The ``biossd`` command line (:mod:`biossd.cli.main`); one module per command group."""

from biossd.cli.main import build_parser, main

__all__ = ["build_parser", "main"]
