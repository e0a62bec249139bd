"""The conftest's `alone` plugin (tests/alone.py): under pytest-xdist a test marked `alone`, an
integration test not marked `beside` and the test that makes a fixture made alone have no other
test beside it, the others still run side by side, a session value is made once for every worker,
and the lock file goes with the session."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import alone
from conftest import REPO

#: Each test writes the window it ran in (name, start, end) to windows.txt.
WINDOW = '''
import time, pytest

def _window(name):
    start = time.monotonic()
    time.sleep(0.25)
    with open("windows.txt", "a") as out:
        out.write(f"{name} {start} {time.monotonic()}\\n")
'''

WINDOWS = WINDOW + '''
@pytest.mark.parametrize("i", range(4))
def test_before(i):
    _window(f"before{i}")

@pytest.mark.alone
def test_the_load_measuring_one():
    _window("alone")

@pytest.mark.parametrize("i", range(4))
def test_after(i):
    _window(f"after{i}")
'''


def _overlap(a: tuple[float, float], b: tuple[float, float]) -> bool:
    return a[0] < b[1] and b[0] < a[1]


def test_an_alone_test_runs_with_none_beside_it_and_the_others_side_by_side(tmp_path):
    (tmp_path / "test_windows.py").write_text(WINDOWS)
    env = {**os.environ, "PYTHONPATH": str(Path(__file__).parent), "TMPDIR": str(tmp_path)}
    proc = subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "alone", "-p", "no:cacheprovider", "-n", "2",
                           "--rootdir", str(tmp_path), str(tmp_path / "test_windows.py")],
                          cwd=tmp_path, env=env, capture_output=True, text=True, check=False)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    windows = {name: (float(a), float(b)) for name, a, b in
               (line.split() for line in (tmp_path / "windows.txt").read_text().splitlines())}
    others = [w for name, w in windows.items() if name != "alone"]
    assert len(others) == 8 and not any(_overlap(windows["alone"], w) for w in others)
    assert any(_overlap(a, b) for i, a in enumerate(others) for b in others[i + 1:]), "the others ran one by one"
    assert not list(tmp_path.glob("biossd-tests-*.lock"))


MEASURING = WINDOW + '''
from alone import made_alone

@pytest.fixture(scope="module")
@made_alone
def measured():
    _window("made")

@pytest.mark.integration
@pytest.mark.beside
def test_first_beside(measured):
    _window("first")

@pytest.mark.integration
@pytest.mark.beside
@pytest.mark.parametrize("i", range(3))
def test_beside(measured, i):
    _window(f"beside{i}")

@pytest.mark.integration
def test_measures():
    _window("measures")
'''


def test_an_integration_test_runs_alone_unless_beside_and_a_fixture_made_alone_is_made_alone(tmp_path):
    """An integration test not marked `beside` has none beside it; the test that makes a fixture
    decorated `made_alone` has none beside it either, though marked `beside`."""
    (tmp_path / "test_a_measuring.py").write_text(MEASURING)
    (tmp_path / "test_b_units.py").write_text("\n".join([WINDOW] + [
        f"def test_unit{i}():\n    _window('unit{i}')\n" for i in range(4)]))
    env = {**os.environ, "PYTHONPATH": str(Path(__file__).parent), "TMPDIR": str(tmp_path)}
    proc = subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "alone", "-p", "no:cacheprovider", "-n", "2",
                           "--dist", "loadfile", "--rootdir", str(tmp_path), str(tmp_path)], cwd=tmp_path, env=env,
                          capture_output=True, text=True, check=False)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    windows = {name: (float(a), float(b)) for name, a, b in
               (line.split() for line in (tmp_path / "windows.txt").read_text().splitlines())}
    for lone in ("measures", "made", "first"):
        assert not any(_overlap(windows[lone], w) for name, w in windows.items() if name not in (lone, "made", "first"))


class _Item:
    """What the plugin reads of a collected test: its id, its marks and its fixtures."""

    def __init__(self, nodeid: str, *marks: str, fixtures: tuple[str, ...] = ()):
        self.nodeid, self.marks, self.fixturenames = nodeid, marks, fixtures

    def get_closest_marker(self, name: str):
        return name if name in self.marks else None


def test_a_module_that_waits_then_those_none_of_whose_tests_measures_come_first():
    """In each group, the module with more integration tests side by side first (test_c, test_h)."""
    items = [_Item("test_a.py::one", "integration", "beside"), _Item("test_a.py::two", "integration"),
             _Item("test_b.py::unit"), _Item("test_c.py::near", "integration", "beside"),
             _Item("test_d.py::makes", "integration", "beside", fixtures=("made",)), _Item("test_e.py::cpu", "alone"),
             _Item("test_f.py::last"), _Item("test_g.py::measures", "integration"),
             _Item("test_g.py::clock", "integration", "beside", "waits"),
             _Item("test_h.py::near", "integration", "beside"), _Item("test_h.py::far", "integration", "beside"),
             _Item("test_h.py::measures", "integration")]
    alone.MADE_ALONE.add("made")
    try:
        alone.pytest_collection_modifyitems(None, items)
    finally:
        alone.MADE_ALONE.discard("made")
    assert [i.nodeid for i in items] == ["test_g.py::measures", "test_g.py::clock", "test_c.py::near",
                                         "test_b.py::unit", "test_f.py::last", "test_h.py::near", "test_h.py::far",
                                         "test_h.py::measures", "test_a.py::one", "test_a.py::two",
                                         "test_d.py::makes", "test_e.py::cpu"]


def test_make_test_keeps_the_plugin_s_order_of_modules():
    """pytest-xdist reorders the modules by their number of tests unless told not to."""
    recipe = (REPO / "Makefile").read_text().split("\ntest:", 1)[1].split("\n\n", 1)[0]
    assert "--dist loadfile" in recipe and "--no-loadscope-reorder" in recipe, recipe


class _Factory:
    def __init__(self, basetemp: Path):
        self.basetemp = basetemp

    def getbasetemp(self) -> Path:
        return self.basetemp


def test_a_session_value_is_made_once_for_every_worker(tmp_path, monkeypatch):
    """Each worker's session fixture asks; the first makes the value, the others take it."""
    made = []

    def make() -> dict:
        made.append(1)
        return {"value": len(made)}

    monkeypatch.setenv("PYTEST_XDIST_WORKER", "gw0")
    values = [alone.once_per_session(_Factory(tmp_path / worker), "result", make) for worker in ("gw0", "gw1")]
    assert values == [{"value": 1}, {"value": 1}] and len(made) == 1
    assert not list(tmp_path.glob("*.partial"))
    monkeypatch.delenv("PYTEST_XDIST_WORKER")
    assert alone.once_per_session(_Factory(tmp_path / "alone"), "result", make) == {"value": 2}
