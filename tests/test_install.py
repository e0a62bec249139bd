"""install/bootstrap.sh stops early with a message naming what is missing, and never leaves a
half-installed step looking complete."""

import os
import shutil
import subprocess

import pytest
from conftest import REPO

BOOTSTRAP = REPO / "install" / "bootstrap.sh"
pytestmark = pytest.mark.integration


def run(args, env=None, **kw):
    return subprocess.run([str(BOOTSTRAP), *args], capture_output=True, text=True,
                          env={**os.environ, **(env or {})}, **kw)


def test_refuses_without_root(tmp_path, root_required):
    proc = subprocess.run(
        ["setpriv", "--reuid=65534", "--regid=65534", "--clear-groups", str(BOOTSTRAP), "check"],
        capture_output=True, text=True,
    )
    assert proc.returncode != 0
    assert "must run as root" in proc.stderr


def test_refuses_without_apt_get(tmp_path):
    fakebin = tmp_path / "bin"
    fakebin.mkdir()
    for tool in ("dirname", "id", "bash", "cat", "sha256sum", "cut"):
        os.symlink(shutil.which(tool), fakebin / tool)
    proc = subprocess.run([str(BOOTSTRAP), "check"], capture_output=True, text=True,
                          env={"PATH": str(fakebin)})
    assert proc.returncode != 0
    assert "apt-get not found" in proc.stderr


def test_no_network_to_pypi_leaves_no_stamp_and_a_rerun_works(tmp_path):
    venv = tmp_path / "venv"
    offline = {"VENV": str(venv), "PIP_INDEX_URL": "http://127.0.0.1:9/simple", "PIP_NO_CACHE_DIR": "1",
               "PIP_RETRIES": "0", "PIP_TIMEOUT": "2"}
    proc = run(["python"], env=offline, timeout=300)
    assert proc.returncode != 0
    assert "no network to PyPI" in proc.stderr
    assert not (venv / ".stamps" / "python").exists(), "a failed install must not look complete"
    proc = run(["python"], env={"VENV": str(venv)}, timeout=600)
    assert proc.returncode == 0, proc.stderr
    assert (venv / ".stamps" / "python").exists()
    out = subprocess.run([str(venv / "bin" / "biossd"), "--version"], capture_output=True, text=True)
    assert out.returncode == 0 and out.stdout.startswith("biossd ")
    again = run(["python"], env={"VENV": str(venv)}, timeout=60)
    assert again.returncode == 0 and "creating" not in again.stderr, "a second call must skip the step"
