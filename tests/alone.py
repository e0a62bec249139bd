"""A pytest plugin (the conftest loads it): under pytest-xdist, where `make check` runs tests side by
side, a test marked `alone` runs with no other test beside it — it measures the host's CPU load.

Each test holds a lock file shared from its setup to its teardown (the module fixtures made for it
included); an `alone` test holds it exclusive. The session's controller makes the file and removes
it at the end; without workers nothing is locked."""

from __future__ import annotations

import fcntl
import os
import tempfile
from pathlib import Path

import pytest

_LOCK = pytest.StashKey[Path]()
_LOCK_INPUT = "biossd_alone_lock"
MARKER = "alone"


def pytest_configure(config):
    config.addinivalue_line("markers", f"{MARKER}: measures the host's CPU load, so no other test runs beside it "
                                       "(`make check` runs tests side by side)")
    if not hasattr(config, "workerinput"):  # the session's controller, or a session without workers
        fd, name = tempfile.mkstemp(prefix="biossd-tests-", suffix=".lock")
        os.close(fd)
        config.stash[_LOCK] = Path(name)


def pytest_unconfigure(config):
    if _LOCK in config.stash:
        config.stash[_LOCK].unlink(missing_ok=True)


@pytest.hookimpl(optionalhook=True)
def pytest_configure_node(node):
    """pytest-xdist's: each worker is told where the lock is."""
    node.workerinput[_LOCK_INPUT] = str(node.config.stash[_LOCK])


@pytest.hookimpl(wrapper=True)
def pytest_runtest_protocol(item, nextitem):
    path = getattr(item.config, "workerinput", {}).get(_LOCK_INPUT)
    if path is None:  # one test at a time: nothing to wait for
        return (yield)
    with open(path) as lock:
        fcntl.flock(lock, fcntl.LOCK_EX if item.get_closest_marker(MARKER) else fcntl.LOCK_SH)
        return (yield)
