"""Shared fixtures. Integration tests need root, the real tools and the installed environment
(`make test` installs them); they are not skipped silently: a missing piece fails the test."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
VENV_BIN = Path(sys.executable).parent


@pytest.fixture(scope="session")
def repo() -> Path:
    return REPO


@pytest.fixture(scope="session")
def env(tmp_path_factory) -> dict[str, str]:
    """The environment the Makefile gives the study: the venv's bin first, Nextflow offline; the
    JVM's temporary files in the session's temporary directory (a Nextflow that a test kills
    leaves its compiled scripts there, not in /tmp)."""
    e = dict(os.environ)
    e["PATH"] = f"{VENV_BIN}{os.pathsep}{e.get('PATH', '')}"
    e["NXF_OFFLINE"] = "true"
    e["NXF_TEMP"] = str(tmp_path_factory.mktemp("nxf-temp"))
    return e


@pytest.fixture(scope="session")
def biossd(env):
    """Run the installed `biossd` command; returns the CompletedProcess."""
    exe = shutil.which("biossd", path=env["PATH"])
    assert exe, "the biossd command is not installed in this environment (run `make install`)"

    def run(*args: str, check: bool = True, cwd: Path | None = None, **kw):
        proc = subprocess.run([exe, *args], capture_output=True, text=True, env=env, cwd=cwd, **kw)
        if check and proc.returncode != 0:
            raise AssertionError(f"biossd {' '.join(args)} failed ({proc.returncode}):\n{proc.stderr}")
        return proc

    return run


@pytest.fixture(scope="session")
def root_required():
    assert os.geteuid() == 0, "integration tests of cgroups and caches need root"


def own_cgroups() -> list[Path]:
    from biossd.host.cgroups import find_leftovers

    return find_leftovers()


def pdf_text(pdf: Path) -> str:
    text = subprocess.run(["pdftotext", str(pdf), "-"], capture_output=True, text=True, check=True).stdout
    return " ".join(text.replace("\u2019", "'").split())


def squeezed(text: str) -> str:
    """Without white space and hyphens: LaTeX breaks lines at spaces and hyphens (its own
    hyphenation too), and pdftotext keeps the break; the words stay in order."""
    return re.sub(r"[\s\-]", "", text)
