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
    assert "3 kept, 0 broken" in done.stdout


def test_an_upward_import_a_cycle_or_a_heavy_library_in_the_profiler_breaks_a_contract(tmp_path):
    """The contracts can fail: a copy of the package with one upward import (the host importing
    the features), one cycle inside a package (units <-> files) and a lazy NumPy import in the
    trace file's writer (which every profiled run loads) is refused, naming each."""
    src = tmp_path / "src"
    shutil.copytree(REPO / "src" / "biossd", src / "biossd", ignore=shutil.ignore_patterns("__pycache__"))
    with open(src / "biossd" / "host" / "devices.py", "a") as handle:
        handle.write("\nfrom biossd.features import blockstats  # noqa: E402,F401\n")
    with open(src / "biossd" / "core" / "files.py", "a") as handle:
        handle.write("\nfrom biossd.core import units  # noqa: E402,F401\n")
    with open(src / "biossd" / "core" / "units.py", "a") as handle:
        handle.write("\nfrom biossd.core import files  # noqa: E402,F401\n")
    with open(src / "biossd" / "measure" / "trace" / "tracefile.py", "a") as handle:
        handle.write("\ndef _later():\n    import numpy  # noqa: F401\n")
    done = lint_imports(src)
    assert done.returncode != 0
    assert "0 kept, 3 broken" in done.stdout, done.stdout
    assert "biossd.host.devices -> biossd.features.blockstats" in done.stdout
    assert "biossd.measure.trace.tracefile is not allowed to import numpy" in done.stdout


RUFF = Path(sys.executable).with_name("ruff")


def ruff_check(*paths: Path | str) -> subprocess.CompletedProcess:
    return subprocess.run([str(RUFF), "check", "--no-cache", "--config", str(REPO / "pyproject.toml"), *map(str, paths)],
                          cwd=REPO, capture_output=True, text=True, timeout=120)


#: Blank lines between definitions (pycodestyle's E301-E306): preview rules in ruff 0.17, checked on
#: their own so that preview does not change how the stable rules read (F401's submodule imports).
BLANK_LINE_RULES = "E301,E302,E303,E304,E305,E306"


def test_the_house_lint_is_clean():
    """``ruff check`` with the house's rules (pyproject's ``[tool.ruff]``: pyflakes, the house line,
    the banned APIs, sorted imports) and the blank lines between definitions finds nothing in the
    library, the tests or the benchmarks."""
    done = ruff_check(REPO / "src", REPO / "tests", REPO / "benchmarks")
    assert done.returncode == 0, done.stdout + done.stderr
    blank = ruff_check("--preview", "--select", BLANK_LINE_RULES, REPO / "src", REPO / "tests", REPO / "benchmarks")
    assert blank.returncode == 0, blank.stdout + blank.stderr


def test_a_banned_api_is_refused_with_the_house_way():
    """The banned APIs fail the lint, each naming the house's way, in a module of the library (given
    on stdin under a library module's name: nothing is written into the checkout)."""
    code = ("import os\nimport shutil\nimport signal\n\n\ndef f(p):\n    shutil.rmtree(p)\n"
            "    os.chdir(p)\n    signal.signal(signal.SIGTERM, signal.SIG_IGN)\n")
    done = subprocess.run([str(RUFF), "check", "--no-cache", "--config", str(REPO / "pyproject.toml"),
                           "--stdin-filename", str(REPO / "src" / "biossd" / "core" / "probe.py"), "-"],
                          input=code, cwd=REPO, capture_output=True, text=True, timeout=120)
    assert done.returncode != 0
    for house_way in ("biossd.core.files.remove_tree", "ProfileRequest.cwd", "biossd.core.signals"):
        assert house_way in done.stdout, done.stdout


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


def modules_without_a_test(src: Path, tests: Path) -> list[str]:
    """The modules of the package under ``src`` that no test names: none has the module's name
    (``tests/test_<name>.py``), imports it, or names its dotted path. Faces (``__init__``) and
    ``__main__`` only re-export and are left out."""
    texts = [p.read_text() for p in Path(tests).rglob("*.py")]
    names = {p.stem for p in Path(tests).rglob("test_*.py")}
    missing = []
    for path in sorted(Path(src).rglob("*.py")):
        if path.name in ("__init__.py", "__main__.py"):
            continue
        dotted = ".".join(path.relative_to(src).with_suffix("").parts)
        package, name = dotted.rsplit(".", 1)
        named = re.compile(rf"\b{re.escape(dotted)}\b|from {re.escape(package)} import [^\n]*\b{name}\b")
        if f"test_{name}" not in names and not any(named.search(text) for text in texts):
            missing.append(dotted)
    return missing


def test_every_module_has_a_test_that_names_it():
    assert modules_without_a_test(REPO / "src", REPO / "tests") == []


def test_a_module_no_test_names_is_found(tmp_path):
    (tmp_path / "src" / "pkg").mkdir(parents=True)
    for name in ("__init__", "covered", "named", "orphan"):
        (tmp_path / "src" / "pkg" / f"{name}.py").write_text("")
    (tmp_path / "tests").mkdir()
    (tmp_path / "tests" / "test_other.py").write_text("from pkg import covered\n")
    (tmp_path / "tests" / "test_named.py").write_text("")
    assert modules_without_a_test(tmp_path / "src", tmp_path / "tests") == ["pkg.orphan"]


def test_a_test_that_needs_root_or_a_tool_and_is_not_marked_is_refused(tmp_path):
    """`make check` runs the unmarked tests without root or tools: the conftest refuses, by name,
    an unmarked test that asks for either (a copy of the real conftest over a throwaway test)."""
    for name in ("conftest.py", "alone.py"):  # the conftest and the plugin it loads
        shutil.copy(REPO / "tests" / name, tmp_path / name)
    (tmp_path / "test_probe.py").write_text(
        "import pytest\n\n\ndef test_unmarked(tool_required):\n    tool_required('samtools')\n\n\n"
        "@pytest.mark.integration\ndef test_marked(tool_required, root_required):\n    pass\n")
    done = subprocess.run([sys.executable, "-m", "pytest", "--collect-only", "-q", "-p", "no:cacheprovider",
                           "-c", os.devnull, "--rootdir", str(tmp_path), str(tmp_path)],
                          capture_output=True, text=True, timeout=120)
    assert done.returncode != 0
    said = done.stdout + done.stderr
    assert "must be marked @pytest.mark.integration" in said and "test_unmarked" in said
    assert "test_marked" not in said.split("must be marked", 1)[1], said


def unresolved_imports(roots: list[Path]) -> list[str]:
    """Every ``from biossd... import name`` and ``import biossd...`` in the files under ``roots``,
    at module level or inside a function (which only a run reaches), that names nothing."""
    import ast
    import importlib
    import types

    bad = []
    for path in sorted(p for root in roots for p in Path(root).rglob("*.py")):
        tree = ast.parse(path.read_text())
        modules = {}  # a name this file binds to a biossd module -> the module
        for node in ast.walk(tree):
            if isinstance(node, ast.ImportFrom) and (node.module or "").startswith("biossd"):
                module = importlib.import_module(node.module)
                for alias in node.names:
                    if not hasattr(module, alias.name):
                        try:
                            importlib.import_module(f"{node.module}.{alias.name}")
                        except ModuleNotFoundError:
                            bad.append(f"{path}:{node.lineno}: {node.module}.{alias.name}")
                            continue
                    bound = getattr(module, alias.name, None) or importlib.import_module(f"{node.module}.{alias.name}")
                    if isinstance(bound, types.ModuleType):
                        modules[alias.asname or alias.name] = bound
            elif isinstance(node, ast.Import):
                for alias in (a for a in node.names if a.name.startswith("biossd")):
                    try:
                        importlib.import_module(alias.name)
                    except ModuleNotFoundError:
                        bad.append(f"{path}:{node.lineno}: {alias.name}")
        # A function that imports a module and assigns its name (``cluster = cluster.load()``):
        # the import is then a local that the assignment replaces.
        for func in (n for n in ast.walk(tree) if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef))):
            imported = {a.asname or a.name for n in ast.walk(func) if isinstance(n, ast.ImportFrom)
                        and (n.module or "").startswith("biossd") for a in n.names}
            for n in ast.walk(func):
                if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Store) and n.id in imported:
                    bad.append(f"{path}:{n.lineno}: {n.id} is imported and assigned in {func.name}")
        # ``module.name`` of a module imported above: the name must be the module's (a local
        # variable that shadows the module's name in one function is told apart by being assigned).
        assigned = {n.id for n in ast.walk(tree) if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Store)}
        assigned |= {a.arg for n in ast.walk(tree) if isinstance(n, ast.arguments)
                     for a in (*n.args, *n.kwonlyargs, *n.posonlyargs)}
        for node in ast.walk(tree):
            if (isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name) and node.value.id in modules
                    and node.value.id not in assigned and not hasattr(modules[node.value.id], node.attr)):
                try:
                    importlib.import_module(f"{modules[node.value.id].__name__}.{node.attr}")
                except ModuleNotFoundError:
                    bad.append(f"{path}:{node.lineno}: {modules[node.value.id].__name__}.{node.attr}")
    return bad


def test_every_import_of_biossd_names_something_that_exists():
    """A name moved to another module is found at every import of it, the lazy ones included."""
    assert unresolved_imports([REPO / "src", REPO / "tests", REPO / "benchmarks"]) == []


def test_an_import_or_a_use_of_a_moved_name_is_found(tmp_path):
    (tmp_path / "uses.py").write_text("from biossd.study.sizing import procedure\n\n\ndef later(path):\n"
                                      "    from biossd.study.plan.matrix import schema_parameters\n"
                                      "    return procedure.digest(path)\n\n\ndef state():\n"
                                      "    from biossd.host.slurm import cluster\n\n"
                                      "    cluster = cluster.load()\n    return cluster\n")
    assert unresolved_imports([tmp_path]) == [f"{tmp_path / 'uses.py'}:5: biossd.study.plan.matrix.schema_parameters",
                                              f"{tmp_path / 'uses.py'}:12: cluster is imported and assigned in state",
                                              f"{tmp_path / 'uses.py'}:6: biossd.study.sizing.procedure.digest"]


#: The house's room sizes (CONTRIBUTING, "Rooms"): a module that grows past these is split at its seams.
MAX_MODULE_LINES = 500
MAX_FUNCTION_LINES = 80


def oversized(src: Path) -> list[str]:
    """The modules over :data:`MAX_MODULE_LINES` lines and the functions over :data:`MAX_FUNCTION_LINES`."""
    import ast

    found = []
    for path in sorted(Path(src).rglob("*.py")):
        text = path.read_text()
        if len(text.splitlines()) > MAX_MODULE_LINES:
            found.append(f"{path}: {len(text.splitlines())} lines")
        for node in ast.walk(ast.parse(text)):
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
                length = node.end_lineno - node.lineno + 1
                if length > MAX_FUNCTION_LINES:
                    found.append(f"{path}:{node.lineno}: {node.name} is {length} lines")
    return found


def test_no_room_outgrew_the_house_s_sizes():
    assert oversized(REPO / "src" / "biossd") == []


def test_an_oversized_function_is_found(tmp_path):
    (tmp_path / "big.py").write_text("def f():\n" + "    x = 1\n" * MAX_FUNCTION_LINES)
    assert oversized(tmp_path) == [f"{tmp_path / 'big.py'}:1: f is {MAX_FUNCTION_LINES + 1} lines"]
