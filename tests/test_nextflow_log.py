"""Which Nextflow run a profiled pipeline's report reads (its launch directory's history), and
that its task list is kept once the run has ended — without running Nextflow (the real
`nextflow log` is run by tests/test_own_pipeline.py)."""

from __future__ import annotations

import pandas as pd
import pytest

from biossd.analysis import own_pipeline

SESSION = "33a7ef74-9d9d-414c-a835-09d79245d7bc"
HISTORY = [
    f"2026-11-26 19:39:56\t9.9s\tirreverent_mercator\tOK\t4b5cb6cbc8\t{SESSION}\tnextflow run dnaseq",
    "2026-11-26 19:41:00\t3.0s\tother_run\tOK\t4b5cb6cbc8\t00000000-0000-0000-0000-000000000000\tnextflow run x",
    f"2026-11-26 19:42:10\t2.1s\tresumed_run\tOK\t4b5cb6cbc8\t{SESSION}\tnextflow run dnaseq -resume",
]


def _runs(launch) -> pd.DataFrame:
    return pd.DataFrame({"launch_dir": [str(launch)], "session_id": [SESSION]})


def test_the_latest_run_of_the_session_is_read_a_resumed_one_included(tmp_path):
    (tmp_path / ".nextflow").mkdir()
    (tmp_path / own_pipeline.HISTORY_FILE).write_text("\n".join(HISTORY) + "\n")
    assert own_pipeline.last_run(_runs(tmp_path)) == (tmp_path, "resumed_run", "OK")


def test_a_launch_directory_without_the_session_is_refused_naming_it(tmp_path):
    (tmp_path / ".nextflow").mkdir()
    (tmp_path / own_pipeline.HISTORY_FILE).write_text(HISTORY[1] + "\n")
    with pytest.raises(own_pipeline.PipelineReportError, match=SESSION):
        own_pipeline.last_run(_runs(tmp_path))
    with pytest.raises(own_pipeline.PipelineReportError, match="history"):
        own_pipeline.last_run(_runs(tmp_path / "gone"))


def test_a_finished_run_s_task_list_is_kept_and_a_running_one_s_is_not(tmp_path, monkeypatch):
    launch, outdir = tmp_path / "launch", tmp_path / "out"
    (launch / ".nextflow").mkdir(parents=True)
    line = "1\t8e/45a03e\t13118\tBWA_INDEX\tgenome.fa\tBWA_INDEX (genome.fa)\tCOMPLETED\t0\t1\t" \
           "2026-11-26 19:39:57.876\t2026-11-26 19:39:57.971\t2026-11-26 19:39:58.454\t/w/8e/45a03e6e\n"
    calls = []
    monkeypatch.setattr(own_pipeline, "nextflow_log", lambda d, name: calls.append(name) or line)
    (launch / own_pipeline.HISTORY_FILE).write_text(HISTORY[0].replace("\tOK\t", "\t-\t") + "\n")
    trace = own_pipeline.load_trace(outdir, _runs(launch))
    assert list(trace["hash_key"]) == ["8e45a03e"] and trace["start_s"].tolist() == [0.0]
    assert not (outdir / "pipeline_info").exists(), "a running run's list is not final"
    (launch / own_pipeline.HISTORY_FILE).write_text(HISTORY[0] + "\n")
    own_pipeline.load_trace(outdir, _runs(launch))
    own_pipeline.load_trace(outdir, _runs(launch))
    assert calls == ["irreverent_mercator"] * 2, "read once more when it ended, then kept"
    assert (outdir / own_pipeline.TASKS_FILE.format(run_name="irreverent_mercator")).read_text() == line


def test_an_older_config_s_trace_file_is_read_only_for_runs_that_name_no_session(tmp_path, monkeypatch):
    """An outdir profiled by an older config keeps its trace file; runs of the current config name
    their session, and their run's own list wins over that stale file."""
    outdir, launch = tmp_path / "out", tmp_path / "launch"
    (outdir / "pipeline_info").mkdir(parents=True)
    (outdir / own_pipeline.LEGACY_TRACE_FILE).write_text(
        "hash\tstatus\tattempt\tstart\tcomplete\nold/111111\tCOMPLETED\t1\t2026-01-01 00:00:00.000\t2026-01-01 00:00:01.000\n")
    old = own_pipeline.load_trace(outdir, pd.DataFrame({"launch_dir": [None], "session_id": [None]}))
    assert list(old["hash_key"]) == ["old111111"]
    (launch / ".nextflow").mkdir(parents=True)
    (launch / own_pipeline.HISTORY_FILE).write_text(HISTORY[0] + "\n")
    monkeypatch.setattr(own_pipeline, "nextflow_log", lambda d, name: "1\t8e/45a03e\t1\tP\tt\tP (t)\tCOMPLETED\t0\t1\t"
                        "2026-11-26 19:39:57.876\t2026-11-26 19:39:57.971\t2026-11-26 19:39:58.454\t/w\n")
    assert list(own_pipeline.load_trace(outdir, _runs(launch))["hash_key"]) == ["8e45a03e"]
