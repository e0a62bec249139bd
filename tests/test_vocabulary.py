"""One vocabulary: readers meet the paper by name (Lee, Min and Yoon 2015) and each related study
by its source, never by the project's seed numbers; an experiment's definition says its place
with `order`, and `seed` is the random seed only."""

from __future__ import annotations

import re

import yaml

from conftest import REPO

#: Where a reader (or a user of --help, the report, the catalogue) meets the project's words.
READ_BY_USERS = ("src", "docs", "README.md", "CONTRIBUTING.md", "Makefile", "nextflow", "study", "data-manifests",
                 "notebooks", "benchmarks", "paper")
SEED_NUMBER = re.compile(r"\bseeds? 00\d", re.IGNORECASE)
TEXT_SUFFIXES = {".py", ".md", ".nf", ".config", ".json", ".yaml", ".yml", ".ipynb", ".tex", ".txt", ".csv", ""}


def _texts():
    for name in READ_BY_USERS:
        root = REPO / name
        for path in [root] if root.is_file() else sorted(root.rglob("*")):
            if path.is_file() and path.suffix in TEXT_SUFFIXES and "__pycache__" not in path.parts \
                    and "build" not in path.relative_to(REPO).parts:
                yield path


def test_no_seed_number_is_read_by_users():
    found = [f"{p.relative_to(REPO)}:{n}: {line.strip()[:80]}" for p in _texts()
             for n, line in enumerate(p.read_text(errors="replace").splitlines(), 1) if SEED_NUMBER.search(line)]
    assert found == [], "\n".join(found)


def test_an_experiment_s_definition_has_an_order_and_a_source_not_a_seed():
    for path in sorted((REPO / "study" / "experiments").glob("*.yaml")):
        spec = yaml.safe_load(path.read_text())
        assert isinstance(spec["order"], int) and spec["source"] and spec["source_finding"], path.name
        assert "seed" not in spec and "seed_finding" not in spec, path.name
