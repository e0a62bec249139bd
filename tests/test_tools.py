"""Every runnable catalogue tool, for real: its smoke test natively and in its container
(podman build + Charliecloud), and the status report computed from those checks."""

from __future__ import annotations

import json
import os

import pytest

from biossd.study import catalogue
from biossd.study.catalogue import containers, smoke, status

#: Nothing here measures: these tests run beside others (tests/alone.py).
pytestmark = [pytest.mark.integration, pytest.mark.beside]
RUNNABLE = sorted(e.id for e in catalogue.load_all() if e.kind == "tool" and e.data["status"] == "runnable")
#: The tools built and smoke-tested in their containers by the suite: one of each kind of image
#: (samtools, which the workflow tests also run in Charliecloud and Docker; a C aligner; a small
#: C program). Every runnable tool's image is built and smoke-tested by `make containers`
#: (BIOSSD_ALL_CONTAINERS=1; ~15 min on an empty image store here, over the suite's budget).
IN_CONTAINERS = RUNNABLE if os.environ.get("BIOSSD_ALL_CONTAINERS") else ("samtools_sort", "bwa", "clustalw")
#: The engine the container smoke tests use: Charliecloud, or Docker (`make containers
#: ENGINE=docker`, on the engine `biossd docker up` started).
ENGINE = os.environ.get("BIOSSD_CONTAINER_ENGINE", "charliecloud")


@pytest.fixture(scope="session")
def installed(biossd, root_required):
    biossd("catalogue", "install")


@pytest.fixture(scope="session")
def images(biossd, installed):
    """`biossd catalogue build` of every runnable tool (podman caches layers; a second run
    only checks)."""
    proc = biossd("catalogue", "build", "--engine", ENGINE, *IN_CONTAINERS, check=False)
    assert proc.returncode == 0, proc.stderr


@pytest.mark.parametrize("tool", RUNNABLE)
def test_smoke_natively(installed, tool, env, monkeypatch):
    monkeypatch.setenv("PATH", env["PATH"])
    entry = catalogue.get(tool)
    assert catalogue.version_matches(entry.installed_version(), str(entry.data["version"])), entry.installed_version()
    result = smoke.run(entry)
    assert result.passed, result.detail


@pytest.mark.parametrize("tool", IN_CONTAINERS)
def test_smoke_in_its_container(images, tool):
    entry = catalogue.get(tool)
    assert containers.built(entry, ENGINE)
    result = smoke.run(entry, lambda work, argv: containers.wrap_argv(ENGINE, entry, work, argv))
    assert result.passed, result.detail


def test_status_report_is_computed(biossd, images):
    rows = json.loads(biossd("catalogue", "status", "--json").stdout)
    assert [tuple(r) for r in rows] == [status.STATUS_KEYS] * len(rows)
    by_id = {r["id"]: r for r in rows}
    assert len([r for r in rows if r["substitute_of"] is None and r["native_installed"] is not None]) == 23
    for tool in RUNNABLE:
        row = by_id[tool]
        assert row["native_installed"] and row["smoke_native"], row
        assert row["smoke_container"] is row["container_built"], row  # a built image passes its smoke
    for tool in IN_CONTAINERS:
        assert by_id[tool]["container_built"] and by_id[tool]["smoke_container"], by_id[tool]
    assert by_id["weeder"]["container_recipe"] is True and by_id["weeder"]["container_built"] is False
    assert by_id["weeder"]["native_installed"] is False and by_id["weeder"]["smoke_native"] is None
    assert by_id["hisat2"]["substitute_of"] == "tophat"
    assert by_id["pipeline_transcriptome"]["native_installed"] is None
