"""Holding SIGINT and SIGTERM off while a teardown runs, so a second Ctrl-C cannot cut short the
removal of what a first one began to remove."""

from __future__ import annotations

import contextlib
import signal
import threading
from typing import Iterator


@contextlib.contextmanager
def signals_held() -> Iterator[None]:
    """SIGINT and SIGTERM wait until the block ends: a teardown is not cut short; one that came
    meanwhile is delivered again at its end. Handlers, not a signal mask: a mask holds a signal
    for this thread only, and a process-directed SIGTERM goes to any thread that does not block
    it — a thread a library started (OpenBLAS's, once NumPy is imported) would take it and the
    default action would kill the process halfway through the teardown."""
    held = (signal.SIGINT, signal.SIGTERM)
    if threading.current_thread() is not threading.main_thread():  # handlers can only be set there
        yield
        return
    received: list[int] = []
    previous = {sig: signal.signal(sig, lambda signum, _frame: received.append(signum)) for sig in held}
    try:
        yield
    finally:
        for sig, handler in previous.items():
            signal.signal(sig, handler)
        for signum in dict.fromkeys(received):
            signal.raise_signal(signum)
