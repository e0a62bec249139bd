"""biossd.core.commands: the host's administration commands, with errors that say which failed."""

import pytest

from biossd.core.commands import run_checked


class StepFailed(Exception):
    pass


def test_a_command_s_output_is_returned():
    assert run_checked(["echo", "ready"], StepFailed) == "ready\n"


def test_a_failing_command_is_named_with_what_it_said():
    with pytest.raises(StepFailed, match=r"mounting: `ls /no/such/dir` failed: .*No such file"):
        run_checked(["ls", "/no/such/dir"], StepFailed, "mounting")


def test_a_missing_command_is_said_to_be_not_installed():
    with pytest.raises(StepFailed, match="biossd-no-such-command is not installed"):
        run_checked(["biossd-no-such-command"], StepFailed)
