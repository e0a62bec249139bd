"""The conftest's `alone` plugin (tests/alone.py): under pytest-xdist a test marked `alone` has no
other test beside it, the others still run side by side, and the lock file goes with the session."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

WINDOWS = '''
import time, pytest

def _window(name):
    start = time.monotonic()
    time.sleep(0.25)
    with open("windows.txt", "a") as out:
        out.write(f"{name} {start} {time.monotonic()}\\n")

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
