"""A pytest plugin (the conftest loads it): under pytest-xdist, where `make check` and `make test`
run tests side by side, a test that measures runs with no other test beside it, and the rest run
beside each other.

A measured run is timed on a quiet host: a program busy beside it makes the study redo the run and
record the host busy (docs/study.md, "A quiet host, checked"). So each test holds a lock file from
its setup to its teardown (the module and session fixtures made for it included): shared, or
exclusive where it measures. A test measures (and holds the lock exclusive) where

- it is marked ``alone`` (a unit test of the host's CPU load), or
- it is marked ``integration`` and not ``beside``: an integration test measures unless it says it
  does not (``beside``: what it checks holds on a busy host — a run it profiles is checked for its
  outcome, not its timing — and it checks no host-wide state: cgroups, mounts, loop devices, the
  host lock's holder), or
- it uses a fixture made alone (:func:`made_alone`: it measures, or records the host's state to
  compare at its end) that this worker has not made yet.

Where tests go (``--dist loadfile``): a module's tests run on one worker, so that its module
fixtures (a Docker engine, a SLURM cluster) are made once; a session fixture too costly to make on
each worker is made by the first that needs it and taken by the others (:func:`once_per_session`).
The modules none of whose tests measures come first, so that the workers run them side by side
while no measuring test waits for them; before them, a module with a test marked ``waits`` (it
waits on a clock of its own, such as SLURM's whole-minute time limit), so that the other worker's
side-by-side tests fill that wait. In each of the two groups, the modules with the most integration
tests that run side by side come first: of those that measure nothing, the long ones (an image
built, a notebook run) start early and the unit tests fill the gaps at the end, so that a
measuring test waits less for the other worker's test to end before it runs alone; of those that
measure, their side-by-side tests meet the other worker's, rather than run alone at the end of
the session while the other worker has nothing left. pytest-xdist would reorder the modules by
their number of tests: `make test` turns that off (``--no-loadscope-reorder``).

The session's controller makes the lock file and removes it at the end; without workers nothing is
locked."""

from __future__ import annotations

import fcntl
import os
import pickle
import tempfile
from collections import Counter
from pathlib import Path
from typing import Callable, TypeVar

import pytest

_LOCK = pytest.StashKey[Path]()
_LOCK_INPUT = "biossd_alone_lock"
MARKER = "alone"
BESIDE = "beside"
WAITS = "waits"
INTEGRATION = "integration"

#: The fixtures made with no other test beside them (:func:`made_alone`).
MADE_ALONE: set[str] = set()

F = TypeVar("F", bound=Callable)
T = TypeVar("T")


def made_alone(fixture: F) -> F:
    """Mark a fixture function (under ``@pytest.fixture``) as made with no other test beside it: it
    measures, or records the host's state to compare at its end. The first test of a worker that
    uses it holds the lock exclusive, even one marked ``beside``."""
    MADE_ALONE.add(fixture.__name__)
    return fixture


def once_per_session(tmp_path_factory, name: str, make: Callable[[], T]) -> T:
    """``make()``'s value, made once for the whole session: under pytest-xdist each worker has
    session fixtures of its own, so the first worker that needs it makes it and the others take
    its value, pickled beside the workers' temporary folders under a lock. Without workers, it
    is just made."""
    if "PYTEST_XDIST_WORKER" not in os.environ:
        return make()
    shared = tmp_path_factory.getbasetemp().parent  # the session's, above each worker's own
    with open(shared / f"{name}.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        made = shared / f"{name}.pickle"
        if made.is_file():
            return pickle.loads(made.read_bytes())
        value = make()
        partial = made.with_suffix(".partial")
        partial.write_bytes(pickle.dumps(value))
        partial.rename(made)
        return value


def pytest_configure(config):
    config.addinivalue_line("markers", f"{MARKER}: measures the host's CPU load, so no other test runs beside it "
                                       "(`make check` and `make test` run tests side by side)")
    config.addinivalue_line("markers", f"{BESIDE}: an integration test whose checks hold on a busy host and that "
                                       "checks no host-wide state (cgroups, mounts, the host lock), so it runs beside "
                                       "other tests")
    config.addinivalue_line("markers", f"{WAITS}: a test marked beside that waits long on a clock of its own (SLURM's "
                                       "minute time limit): its module is collected first, so others fill the wait")
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


def _alone_by_its_marks(item) -> bool:
    """Marked ``alone``, or an integration test not marked ``beside``."""
    return (item.get_closest_marker(MARKER) is not None
            or (item.get_closest_marker(INTEGRATION) is not None and item.get_closest_marker(BESIDE) is None))


def measures(item) -> bool:
    """Whether ``item`` runs alone at least while it makes its fixtures (:func:`exclusive`), as the
    collection knows it."""
    return _alone_by_its_marks(item) or bool(MADE_ALONE & set(getattr(item, "fixturenames", ())))


def _module(item) -> str:
    return item.nodeid.split("::")[0]


def pytest_collection_modifyitems(config, items):
    """The modules with a test that ``waits`` first, then those none of whose tests measures, then
    the rest; in each group, those with more integration tests that run side by side first; each
    module's tests in their order."""
    waiting = {_module(item) for item in items if item.get_closest_marker(WAITS) is not None}
    measuring = {_module(item) for item in items if measures(item)}
    beside = Counter(_module(item) for item in items
                     if item.get_closest_marker(INTEGRATION) is not None and not _alone_by_its_marks(item))
    items.sort(key=lambda item: (_module(item) not in waiting, _module(item) in measuring, -beside[_module(item)]))


def exclusive(item) -> bool:
    """Whether ``item`` runs with no other test beside it (the module's docstring says when)."""
    if _alone_by_its_marks(item):
        return True
    definitions = getattr(getattr(item, "_fixtureinfo", None), "name2fixturedefs", {})
    return any(name not in definitions or definitions[name][-1].cached_result is None
               for name in MADE_ALONE & set(getattr(item, "fixturenames", ())))


@pytest.hookimpl(wrapper=True)
def pytest_runtest_protocol(item, nextitem):
    path = getattr(item.config, "workerinput", {}).get(_LOCK_INPUT)
    if path is None:  # one test at a time: nothing to wait for
        return (yield)
    with open(path) as lock:
        fcntl.flock(lock, fcntl.LOCK_EX if exclusive(item) else fcntl.LOCK_SH)
        return (yield)
