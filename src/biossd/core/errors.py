"""The one kind of error a user can act on. Every module's error class derives from
:class:`BiossdError`; the command line prints its message (which names the file, field or
command and what to do) and exits 2, without a traceback — in one place, ``biossd.cli.main``."""

from __future__ import annotations


class BiossdError(Exception):
    """An error whose message tells the user what is wrong and what to do."""

    #: The exit status of a command that ends with this error.
    exit_status = 2
