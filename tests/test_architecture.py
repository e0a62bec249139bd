"""The architecture (README, "How the code is laid out"): the packages of ``src/biossd`` follow
the data — core, host, study, measure, features, analysis, outputs, cli — each importing only
the ones before it, with no import cycle inside a package. import-linter checks the contracts
in ``pyproject.toml`` (``[tool.importlinter]``)."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
import tomllib
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
LINT_IMPORTS = Path(sys.executable).with_name("lint-imports")


def lint_imports(src: Path) -> subprocess.CompletedProcess:
    """``lint-imports`` over the package under ``src``, without writing a cache anywhere."""
    env = {**os.environ, "PYTHONPATH": str(src)}
    return subprocess.run([str(LINT_IMPORTS), "--config", str(REPO / "pyproject.toml"), "--no-cache", "--no-logo"],
                          cwd=src, env=env, capture_output=True, text=True, timeout=120)


def contracts() -> list[dict]:
    return tomllib.loads((REPO / "pyproject.toml").read_text())["tool"]["importlinter"]["contracts"]


def test_every_stage_imports_only_the_stages_before_it_and_no_package_has_a_cycle():
    done = lint_imports(REPO / "src")
    assert done.returncode == 0, done.stdout + done.stderr
    assert "2 kept, 0 broken" in done.stdout


def test_an_upward_import_or_a_cycle_breaks_a_contract(tmp_path):
    """The contracts can fail: a copy of the package with one upward import (the host importing
    the features) and one cycle inside a package (units <-> files) is refused, naming both."""
    src = tmp_path / "src"
    shutil.copytree(REPO / "src" / "biossd", src / "biossd", ignore=shutil.ignore_patterns("__pycache__"))
    with open(src / "biossd" / "host" / "devices.py", "a") as handle:
        handle.write("\nfrom biossd.features import blockstats  # noqa: E402,F401\n")
    with open(src / "biossd" / "core" / "files.py", "a") as handle:
        handle.write("\nfrom biossd.core import units  # noqa: E402,F401\n")
    with open(src / "biossd" / "core" / "units.py", "a") as handle:
        handle.write("\nfrom biossd.core import files  # noqa: E402,F401\n")
    done = lint_imports(src)
    assert done.returncode != 0
    assert "0 kept, 2 broken" in done.stdout, done.stdout
    assert "biossd.host.devices -> biossd.features.blockstats" in done.stdout


def test_the_readme_names_the_packages_in_the_contract_s_order():
    """The README's architecture section lists the packages in the order the contract enforces
    (the flow, first to last), each a real package."""
    layers = next(c for c in contracts() if c["type"] == "layers")["layers"]
    flow = list(reversed(layers))
    section = (REPO / "README.md").read_text().split("## How the code is laid out", 1)[1].split("\n## ", 1)[0]
    named = [m for m in re.findall(r"`biossd\.(\w+)`", section) if m in flow]
    assert list(dict.fromkeys(named)) == flow
    for package in flow:
        path = REPO / "src" / "biossd" / package
        assert (path / "__init__.py").is_file() or path.with_suffix(".py").is_file(), package
