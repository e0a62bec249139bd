"""biossd.core.signals: the three ways biossd handles SIGINT and SIGTERM around what it brings up
and takes down, each restoring the handlers it found."""

import os
import signal

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
