"""biossd.core.signals: the three ways biossd handles SIGINT and SIGTERM around what it brings up
and takes down, each restoring the handlers it found."""

import os
import signal
import sys

import pytest

from biossd.core.signals import signals_call, signals_held, signals_ignored, signals_raise


class Stop(Exception):
    pass


def test_a_signal_during_a_held_block_waits_for_its_end_and_is_delivered_again():
    seen, during = [], []
    before = signal.signal(signal.SIGTERM, lambda signum, _frame: seen.append(signum))
    try:
        with signals_held():
            os.kill(os.getpid(), signal.SIGTERM)
            during.extend(seen)
        assert during == [] and seen == [signal.SIGTERM]
    finally:
        signal.signal(signal.SIGTERM, before)


def test_an_ignored_signal_is_dropped_and_the_handler_restored():
    before = signal.getsignal(signal.SIGINT)
    with signals_ignored():
        os.kill(os.getpid(), signal.SIGINT)
    assert signal.getsignal(signal.SIGINT) is before


def test_a_signal_raises_the_caller_s_exception_so_every_finally_runs():
    cleaned = []
    with pytest.raises(Stop, match=str(int(signal.SIGTERM))):
        with signals_raise(lambda signum: Stop(signum)):
            try:
                os.kill(os.getpid(), signal.SIGTERM)
            finally:
                cleaned.append(True)
    assert cleaned == [True]


def test_the_caller_s_handler_receives_both_signals():
    got = []
    with signals_call(lambda signum, _frame: got.append(signum)):
        os.kill(os.getpid(), signal.SIGINT)
        os.kill(os.getpid(), signal.SIGTERM)
    assert got == [signal.SIGINT, signal.SIGTERM]


SIGNAL_WHILE_LOADING = """
import sys

class Interrupted:
    # A closed terminal's SIGHUP arriving while biossd's command modules are imported.
    def find_spec(self, name, path, target=None):
        if name == "biossd.cli.analysis":
            raise KeyboardInterrupt(1)

sys.meta_path.insert(0, Interrupted())
sys.argv = ["biossd", "--version"]
import runpy
runpy.run_module("biossd", run_name="__main__")
"""


def test_a_signal_while_the_commands_load_exits_as_that_signal_without_a_traceback():
    """biossd's handlers are installed before its commands are imported: a signal then ends it
    with 128+signal and no traceback (nothing is made before the command runs)."""
    import subprocess

    proc = subprocess.run([sys.executable, "-c", SIGNAL_WHILE_LOADING], capture_output=True, text=True, timeout=60)
    assert proc.returncode == 128 + 1 and "Traceback" not in proc.stderr, (proc.returncode, proc.stderr[-800:])
