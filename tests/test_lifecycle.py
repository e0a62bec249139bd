"""A study's begin and finish in its result folder (biossd.study.lifecycle, `biossd study begin` and
`biossd study finish`), as the Nextflow lifecycle calls them."""

from __future__ import annotations

import json
import os

import pytest

from biossd.core.owners import ProcessRef
from biossd.study import lifecycle, outdir

SESSION = {"id": "5f0c-1", "run_name": "tiny_turing", "start": "2026-11-27T10:00:00Z", "resumed": False}
RECORD = outdir.record({"tools": "bwa", "mem_caps": "1G"})


def _provenance(success=True, stub=False, session_id="5f0c-1"):
    return {"session_id": session_id, "run_name": "tiny_turing", "start": SESSION["start"],
            "complete": "2026-11-27T11:00:00Z", "success": success, "resumed": False, "stub_run": stub,
            "command_line": "nextflow run study", "params": {"tools": "bwa"}}


def test_a_session_s_row_is_written_at_its_begin_and_completed_at_its_finish(tmp_path):
    out = tmp_path / "results"
    begun = {"command_line": "nextflow run study", "profile": "test", "params": {"tools": "bwa"}}
    done = lifecycle.begin(out, RECORD, SESSION, os.getpid(), provenance=begun)
    info = out / "pipeline_info"
    assert done == {"info": str(info), "set_aside": None}
    assert json.loads((info / "plan.json").read_text()) == RECORD
    # The provenance is begun with the session (the report made meanwhile reads it), and whole at the finish.
    assert json.loads((info / "provenance.json").read_text()) == {
        **begun, "session_id": "5f0c-1", "run_name": "tiny_turing", "start": SESSION["start"], "resumed": False,
        "complete": None, "success": None}
    me = ProcessRef.current()
    [row] = lifecycle.read_sessions(info / "sessions.tsv")
    assert (row["pid"], row["start_ticks"], row["complete"], row["success"]) == (str(me.pid), str(me.start_ticks), "", "")
    (out / "features.csv").write_text("tool,outcome,runtime_s\nbwa,ok,1\nbwa,oom,2\nbwa,ok,3\n")
    said = lifecycle.finish(out, _provenance(), os.getpid())
    assert said[-1] == "3 runs; outcomes: ok 2, oom 1"
    [row] = lifecycle.read_sessions(info / "sessions.tsv")
    assert (row["complete"], row["success"], row["resumed"]) == ("2026-11-27T11:00:00Z", "true", "false")
    assert json.loads((info / "provenance.json").read_text()) == _provenance()


def test_a_session_that_never_began_gets_its_whole_row_and_no_outcomes_unless_it_succeeded(tmp_path):
    out = tmp_path / "results"
    lifecycle.begin(out, RECORD, SESSION, os.getpid())
    (out / "features.csv").write_text("tool,outcome\nbwa,ok\n")
    said = lifecycle.finish(out, _provenance(success=False, session_id="9e9e-2"), os.getpid())
    rows = lifecycle.read_sessions(out / "pipeline_info" / "sessions.tsv")
    assert [r["session_id"] for r in rows] == ["5f0c-1", "9e9e-2"] and rows[1]["success"] == "false"
    assert rows[0]["complete"] == "" and not any("outcomes" in line for line in said)


def test_the_sizing_record_is_kept_and_another_plan_s_results_are_moved_aside(tmp_path):
    out = tmp_path / "results"
    lifecycle.begin(out, outdir.record({"tools": "maq"}), SESSION, os.getpid())
    (out / "features.csv").write_text("tool,outcome\nmaq,ok\n")
    sizing = tmp_path / "sizing.json"
    sizing.write_text('{"format": "biossd-sizing/1"}\n')
    done = lifecycle.begin(out, RECORD, SESSION, os.getpid(), replace=True, keep=(tmp_path / "work",), sizing=sizing)
    assert done["set_aside"] and (tmp_path / done["set_aside"].split("/")[-1] / "features.csv").is_file()
    assert (out / "pipeline_info" / "sizing.json").read_text() == sizing.read_text()
    assert not (out / "features.csv").exists() and len(lifecycle.read_sessions(out / "pipeline_info/sessions.tsv")) == 1


def test_bad_input_is_refused_naming_the_field_or_file(tmp_path):
    with pytest.raises(lifecycle.LifecycleError, match="--session: missing resumed"):
        lifecycle.begin(tmp_path, RECORD, {k: v for k, v in SESSION.items() if k != "resumed"}, os.getpid())
    with pytest.raises(lifecycle.LifecycleError, match="--provenance: missing stub_run"):
        lifecycle.finish(tmp_path, {k: v for k, v in _provenance().items() if k != "stub_run"}, os.getpid())
    (tmp_path / "pipeline_info").mkdir()
    (tmp_path / "pipeline_info" / "sessions.tsv").write_text("who\twhen\n")
    with pytest.raises(lifecycle.LifecycleError, match="not biossd's sessions record"):
        lifecycle.begin(tmp_path, RECORD, SESSION, os.getpid())
    (tmp_path / "features.csv").write_text("tool\nbwa\n")
    with pytest.raises(lifecycle.LifecycleError, match="no outcome column"):
        lifecycle.outcome_counts(tmp_path / "features.csv")


def test_biossd_study_finish_takes_down_nothing_but_its_own_and_says_what_it_wrote(biossd, tmp_path):
    out = tmp_path / "results"
    biossd("study", "begin", "--outdir", str(out), "--record", json.dumps(RECORD), "--session", json.dumps(SESSION),
           "--launcher-pid", str(os.getpid()))
    done = biossd("study", "finish", "--outdir", str(out), "--provenance", json.dumps(_provenance(stub=True)),
                  "--launcher-pid", str(os.getpid()), "--storage-root", str(tmp_path / "storage"))
    assert "provenance:" in done.stdout and "no emulated storage under" in done.stdout
    bad = biossd("study", "finish", "--outdir", str(out), "--provenance", "[1]", "--launcher-pid", "1",
                 "--storage-root", str(tmp_path), check=False)
    assert bad.returncode == 2 and "--provenance is JSON but not an object" in bad.stderr
