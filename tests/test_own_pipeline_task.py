"""Units of profiling a user's pipeline: the task's description, where its run is kept, the
critical path, and the cloud volumes as targets (the real pipelines: tests/test_own_pipeline.py)."""

from __future__ import annotations

import pandas as pd
import pytest

from biossd.analysis import own_pipeline
from biossd.host.models import devicemodels
from biossd.measure.own_pipeline import task as pipeline_task


def test_a_task_travels_as_one_shell_safe_word_and_back():
    task = {"process": "NFCORE_RNASEQ:ALIGN (x)", "tag": "sample 1; rm -rf /", "attempt": 2, "memory_bytes": 1 << 30}
    word = pipeline_task.encode(task)
    assert set(word) <= set("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/=")
    assert pipeline_task.decode(word) == {**task, "drop_caches": "once", "concurrency": "serial"}  # defaults filled in
    with pytest.raises(pipeline_task.PipelineTaskError, match="base64"):
        pipeline_task.decode("not base64 at all!")
    with pytest.raises(pipeline_task.PipelineTaskError, match="names no process"):
        pipeline_task.decode(pipeline_task.encode({"tag": "x"}))


def test_each_attempt_is_kept_by_process_tag_and_hash(tmp_path):
    task = {"process": "NFCORE:ALIGN", "tag": "../../etc sample/1", "attempt": 2}
    work = tmp_path / "work" / "ab" / "cdef0123456789"
    run = pipeline_task.run_dir(tmp_path / "out", task, work)
    assert run.relative_to(tmp_path / "out").parts == ("runs", "NFCORE.ALIGN", "etc_sample_1-abcdef01", "attempt-2")
    assert pipeline_task.labels(task, work)["task_hash"] == "abcdef0123456789"
    with pytest.raises(pipeline_task.PipelineTaskError, match="BIOSSD_PIPELINE_OUTDIR"):
        pipeline_task.outdir_from_env({})


def test_the_wall_time_follows_the_trace_not_a_sum():
    """A then B and C side by side (both released by A), then D after the later of them: the
    wall time is A + the slower of B and C + D; making the faster branch faster gains nothing."""
    tasks = pd.DataFrame({"start_s": [0.0, 10.0, 10.0, 40.0], "complete_s": [10.0, 40.0, 20.0, 50.0],
                          "realtime_s": [10.0, 30.0, 10.0, 10.0], "runtime_s": [10.0, 30.0, 10.0, 10.0]})
    assert own_pipeline.critical_path(tasks, tasks["runtime_s"]) == pytest.approx(50.0)
    faster_c = tasks["runtime_s"].where(tasks.index != 2, 1.0)
    assert own_pipeline.critical_path(tasks, faster_c) == pytest.approx(50.0)
    faster_b = tasks["runtime_s"].where(tasks.index != 1, 15.0)
    assert own_pipeline.critical_path(tasks, faster_b) == pytest.approx(35.0)


def test_every_default_target_loads_with_its_source_and_date():
    for name, row in devicemodels.drives().items():
        target = devicemodels.load_target(f"drive:{name}")
        assert target.name == name and row["retrieved"] in target.source and row["source"] in target.source
    assert devicemodels.load_target("nvme-pcie4").read_iops_qd32 == 1_000_000
    alone, behind = own_pipeline.default_targets(), own_pipeline.default_targets("m6id.large")
    for spec in alone + behind:
        devicemodels.load_target(spec)
    assert "cloud:aws-gp3-baseline" in alone and "cloud:aws-gp3-baseline@m6id.large" in behind
    assert "cloud:aws-m6id-large-nvme@m6id.large" in behind and not any("i4i-large-nvme" in t for t in behind), \
        "behind an instance, only its own instance-store drive"
    assert "cloud:azure-premium-ssd-v2" in behind, "another provider's volume alone, not behind an AWS instance"
    assert own_pipeline.on_instance(["cloud:aws-st1", "cloud:aws-sc1@m5.large", "x.json"], "m6id.large") == \
        ["cloud:aws-st1@m6id.large", "cloud:aws-sc1@m5.large", "x.json"]
    given = own_pipeline.on_instance(behind + ["cloud:gcp-hyperdisk-balanced"], "m6id.large")
    assert "cloud:azure-premium-ssd-v2" in given and not any(t.startswith("cloud:azure") and "@" in t for t in given), \
        "the report's list (the defaults and the user's) keeps another provider's volume alone"
    assert "cloud:gcp-hyperdisk-balanced" in given
    with pytest.raises(own_pipeline.PipelineReportError, match="--instance x9.huge: no instance .x9.huge.*known: m5.large"):
        own_pipeline.default_targets("x9.huge")
    with pytest.raises(devicemodels.DeviceModelError, match="no drive"):
        devicemodels.load_target("drive:floppy")


def test_the_page_cache_is_dropped_once_per_session_by_default(tmp_path):
    from biossd.measure.own_pipeline import task as pipeline_task

    first = pipeline_task.decode(pipeline_task.encode({"process": "A", "session": "s-1"}))
    assert first["drop_caches"] == "once"
    assert pipeline_task.drops_caches(first, tmp_path) == (True, "")
    again, why = pipeline_task.drops_caches(first, tmp_path)
    assert not again and "first task" in why
    assert pipeline_task.drops_caches({**first, "session": "s-2"}, tmp_path)[0], "another session starts cold"
    every = pipeline_task.decode(pipeline_task.encode({"process": "A", "session": "s-1", "drop_caches": "task"}))
    assert pipeline_task.drops_caches(every, tmp_path) == (True, "")
    for given, mode in ((True, "task"), (False, "never"), ("true", "task"), ("false", "never")):
        assert pipeline_task.decode(pipeline_task.encode({"process": "A", "drop_caches": given}))["drop_caches"] == mode
    assert not pipeline_task.drops_caches({"process": "A", "drop_caches": "never"}, tmp_path)[0]
    with pytest.raises(pipeline_task.PipelineTaskError, match="drop_caches 'sometimes'"):
        pipeline_task.decode(pipeline_task.encode({"process": "A", "drop_caches": "sometimes"}))


def test_tasks_run_side_by_side_unless_asked_serial_and_never_drop_the_cache_under_each_other():
    from biossd.measure.own_pipeline import task as pipeline_task

    assert pipeline_task.decode(pipeline_task.encode({"process": "A", "concurrency": "side-by-side"}))["concurrency"] \
        == "side-by-side"
    with pytest.raises(pipeline_task.PipelineTaskError, match="drops the page cache under tasks that run beside it"):
        pipeline_task.decode(pipeline_task.encode({"process": "A", "concurrency": "side-by-side", "drop_caches": "task"}))
    assert pipeline_task.decode(pipeline_task.encode({"process": "A", "concurrency": "serial",
                                                    "drop_caches": "task"}))["drop_caches"] == "task"
    with pytest.raises(pipeline_task.PipelineTaskError, match="concurrency 'parallel'"):
        pipeline_task.decode(pipeline_task.encode({"process": "A", "concurrency": "parallel"}))


def test_a_session_is_its_nextflow_process_and_a_task_without_one_cannot_join(tmp_path):
    import os

    from biossd.measure.own_pipeline import session as pipeline_session

    me = pipeline_session.session_of(os.getpid())
    assert me and me.startswith(f"{os.getpid()}-") and pipeline_session.token(me).endswith(me)
    assert pipeline_session.session_of(None) is None and pipeline_session.nextflow_of(None) is None
    with pytest.raises(pipeline_session.SessionError, match="names no Nextflow session"):
        pipeline_session.join("", None, tmp_path)
    assert not any(tmp_path.iterdir()), "nothing was started or marked"


@pytest.mark.integration
def test_a_container_launch_is_wrapped_and_an_engine_this_host_lacks_is_named(tmp_path, tool_required):
    from biossd.measure.own_pipeline import task as pipeline_task

    docker = {"process": "A", "engine": "docker", "container": "img:1"}
    (tmp_path / pipeline_task.CIDFILE).write_text("an earlier attempt's")
    tool_required("docker")
    argv, cidfile = pipeline_task.container_launch(docker, ["docker", "run", "-i", "img:1", "true"], tmp_path)
    assert argv == ["docker", "run", "--cidfile", str(tmp_path / pipeline_task.CIDFILE), "-i", "img:1", "true"]
    assert cidfile == tmp_path / pipeline_task.CIDFILE and not cidfile.exists(), "Docker refuses an existing one"
    with pytest.raises(pipeline_task.PipelineTaskError, match="is not `docker run"):
        pipeline_task.container_launch(docker, ["docker", "rm", "x"], tmp_path)
    with pytest.raises(pipeline_task.PipelineTaskError, match="apptainer is not installed on this host"):
        pipeline_task.container_launch({**docker, "engine": "apptainer"},
                                      ["/no/such/bin/apptainer", "exec", "img.sif", "true"], tmp_path)
    with pytest.raises(pipeline_task.PipelineTaskError, match="podman"):
        pipeline_task.container_launch({**docker, "engine": "podman"}, ["podman", "run"], tmp_path)
    assert pipeline_task.container_launch({"process": "A"}, ["/bin/bash", "-ue"], tmp_path) == (["/bin/bash", "-ue"], None)


def test_a_task_s_status_is_its_command_s_its_signal_s_or_the_cap_s_kill():
    from biossd.measure.own_pipeline import run

    assert run.exit_status({"outcome": "ok", "exit_code": 0}) == 0
    assert run.exit_status({"outcome": "failed", "exit_code": 3}) == 3
    assert run.exit_status({"outcome": "failed", "signal": 15, "exit_code": None}) == 128 + 15
    assert run.exit_status({"outcome": "oom", "exit_code": None}) == 128 + 9


def test_a_task_with_no_command_is_refused_before_anything_runs(tmp_path, monkeypatch):
    from biossd.measure.own_pipeline import run

    monkeypatch.chdir(tmp_path)
    encoded = pipeline_task.encode({"process": "P", "tag": "t", "hash": "ab/cd", "attempt": 1,
                                    "concurrency": "serial", "outdir": str(tmp_path / "out")})
    with pytest.raises(run.TaskRefused, match="no command after `--`"):
        run.run_task(encoded, [], None)
    assert not (tmp_path / "out").exists()
