"""biossd.core.errors: an error a user can act on ends the command with its message and status,
in one place (biossd.cli.main), without a traceback."""

from biossd.cli import main
from biossd.core.errors import BiossdError
from biossd.host.hostlock import EXIT_BUSY
from biossd.measure.request import Busy
from biossd.study.catalogue import CatalogueError


def test_a_user_s_error_is_a_message_and_exit_2(capsys):
    assert issubclass(CatalogueError, BiossdError)
    assert main(["catalogue", "command", "no_such_tool"]) == 2
    err = capsys.readouterr().err
    assert err.startswith("biossd catalogue command: ") and "no_such_tool" in err and "Traceback" not in err


def test_an_error_keeps_its_own_exit_status():
    """A run refused because another holds the host lock exits 75 (EX_TEMPFAIL: try again)."""
    assert issubclass(Busy, BiossdError) and Busy.exit_status == EXIT_BUSY == 75 != BiossdError.exit_status
