"""Container engines other than Charliecloud (apptainer, docker): their command lines and their
refusals (Apptainer runs on users' hosts only; Docker runs for real in tests/test_docker.py)."""

from __future__ import annotations

import shutil

import pytest

from biossd.cli import options
from biossd.study import catalogue, staging
from biossd.study.catalogue import containers

ENTRY = catalogue.get("samtools_sort")


def test_cli_offers_exactly_the_engines_the_library_has():
    assert options.ENGINES == containers.ENGINES


def test_apptainer_runs_the_sif_with_scratch_bound(tmp_path, monkeypatch):
    monkeypatch.setenv("BIOSSD_CONTAINER_DIR", str(tmp_path))
    argv = containers.wrap_argv("apptainer", ENTRY, tmp_path / "s", ["samtools", "sort", "/mnt/0/x.bam"], 1 << 30)
    assert argv[:2] == ["apptainer", "exec"] and f"{tmp_path / 's'}:/mnt/0" in argv
    assert str(tmp_path / "samtools_sort-1.16.1.sif") in argv and argv[-3:] == ["samtools", "sort", "/mnt/0/x.bam"]
    assert not any("memory" in a for a in argv), "apptainer runs as the profiler's child: its cgroup caps it"


def test_docker_is_given_the_cap_because_it_runs_outside_the_profilers_cgroup(tmp_path):
    argv = containers.wrap_argv("docker", ENTRY, tmp_path, ["samtools", "--version"], 64 << 20)
    assert argv[:3] == ["docker", "run", "--rm"] and f"--memory={64 << 20}b" in argv and "--memory-swap=-1" in argv
    assert argv[argv.index(containers.image_ref(ENTRY))+1:] == ["samtools", "--version"]
    assert f"type=bind,source={tmp_path},target=/mnt/0" in argv and argv[argv.index("--network") + 1] == "none"


def test_a_profiled_docker_run_keeps_its_container_for_the_profiler(tmp_path):
    """With a cidfile the container is not removed at its end: the profiler reads Docker's
    state (the OOM kill) and then removes it."""
    argv = containers.wrap_argv("docker", ENTRY, tmp_path, ["true"], 64 << 20, cidfile=tmp_path / "cid")
    assert "--rm" not in argv and argv[argv.index("--cidfile") + 1] == str(tmp_path / "cid")


def test_build_commands_use_the_entrys_recipes():
    dockerfile = catalogue.REPO_ROOT / "containers/samtools_sort/Dockerfile"
    assert containers.build_command(ENTRY, "docker")[-3:-1] == ["-f", str(dockerfile)]
    assert containers.build_command(ENTRY, "apptainer")[-1].endswith("containers/samtools_sort/apptainer.def")


def _engine_works(engine: str) -> bool:
    try:
        containers.check_engine(engine)
        return True
    except containers.ContainerError:
        return False


@pytest.mark.parametrize("engine", ["docker", "apptainer"])
def test_an_engine_that_cannot_run_here_is_refused_loudly(engine, tmp_path):
    """This VM has no Apptainer and a docker client with no engine: both say so, by name."""
    if _engine_works(engine):
        pytest.skip(f"{engine} works on this host")
    expect = ("no Docker engine answers" if engine == "docker" and shutil.which("docker")
              else f"needs `{containers.ENGINE_PROGRAMS[engine]}`, which is not installed")
    with pytest.raises(staging.StageError, match=expect):
        staging.stage(ENTRY, tmp_path, tmp_path / "scratch", 1 << 30, engine)
    with pytest.raises(containers.ContainerError, match=expect):
        containers.build(ENTRY, engine)


def test_unknown_engine():
    with pytest.raises(containers.ContainerError, match="unknown container engine"):
        containers.check_engine("lxc")
