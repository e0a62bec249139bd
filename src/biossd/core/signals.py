"""The signals that end biossd (:data:`HELD`) around what it brings up and takes down: the one home of the three ways
biossd handles them.

- :func:`signals_held` — a teardown that nothing may cut short: a signal that comes meanwhile
  waits and is delivered again when the block ends (the careful, deferred form);
- :func:`signals_ignored` — a rollback already running because of a signal: a second one is
  dropped (the first is on its way out as an exception and ends the process anyway);
- :func:`signals_raise` — a bring-up or a task whose every ``finally`` must run: a signal
  raises an exception in the main thread;
- :func:`signals_call` — a handler of the caller's own (the profiler forwards the signal to the
  command it runs).

Each restores the handlers it found. Handlers, not a signal mask: a mask holds a signal for one
thread only, and a process-directed SIGTERM goes to any thread that does not block it — a thread a
library started (OpenBLAS's, once NumPy is imported) would take it and the default action would
kill the process halfway through."""

from __future__ import annotations

import contextlib
import signal
import threading
from typing import Callable, Iterator

#: The signals a user, a terminal or a scheduler ends biossd with: Ctrl-C, a scheduler's or
#: `kill`'s TERM, the hangup of a closed terminal or a dropped ssh, Ctrl-\\. Each tears down as
#: SIGTERM does.
HELD = (signal.SIGINT, signal.SIGTERM, signal.SIGHUP, signal.SIGQUIT)


@contextlib.contextmanager
def signals_call(handler: Callable[[int, object], None]) -> Iterator[None]:
    """``handler`` receives the :data:`HELD` signals while the block runs (main thread only: elsewhere
    the handlers cannot be set and the block runs as it is)."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    previous = {sig: signal.signal(sig, handler) for sig in HELD}
    try:
        yield
    finally:
        for sig, old in previous.items():
            signal.signal(sig, old)


@contextlib.contextmanager
def signals_held() -> Iterator[None]:
    """The :data:`HELD` signals wait until the block ends: a teardown is not cut short; one that came
    meanwhile is delivered again at its end."""
    received: list[int] = []
    with signals_call(lambda signum, _frame: received.append(signum)):
        yield
    for signum in dict.fromkeys(received):
        signal.raise_signal(signum)


@contextlib.contextmanager
def signals_ignored() -> Iterator[None]:
    """The :data:`HELD` signals are dropped while the block runs: a rollback under way because of a
    signal is not cut short by a second one."""
    with signals_call(signal.SIG_IGN):
        yield


@contextlib.contextmanager
def signals_raise(make_exception: Callable[[int], BaseException]) -> Iterator[None]:
    """The :data:`HELD` signals raise ``make_exception(signum)`` in the main thread while the block runs,
    so every ``finally`` inside it tears its part down."""
    def on_signal(signum: int, _frame: object) -> None:
        raise make_exception(signum)

    with signals_call(on_signal):
        yield


def for_the_process(handler: Callable[[int, object], None] | int) -> dict[int, object]:
    """``handler`` receives the :data:`HELD` signals from now on, for the rest of the process (not
    a block): biossd's start, a forked worker that becomes a task, a task whose result is kept.
    Returns the handlers it replaced, for :func:`restore`."""
    return {sig: signal.signal(sig, handler) for sig in HELD}


def restore(previous: dict[int, object]) -> None:
    """Put back the handlers :func:`for_the_process` replaced."""
    for sig, old in previous.items():
        signal.signal(sig, old)


def ignored_until_exit() -> None:
    """The run is complete: a signal from now until the process exits (Python restores the default
    handlers while it shuts down, where SIGINT would kill it) does not turn a result into a failure."""
    for_the_process(signal.SIG_IGN)


def default_child_handler() -> None:
    """SIGCHLD back to its default: a worker forked from a process that reaps its children itself
    (a pipeline session's leader) waits for its own."""
    signal.signal(signal.SIGCHLD, signal.SIG_DFL)
