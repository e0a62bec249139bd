"""A result folder holds one plan: a study of another plan into it is refused, naming what differs,
unless it replaces them; resuming is no leave to change the plan (biossd.study.outdir)."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from biossd.study import outdir
from biossd.study.plan import matrix

PARAMS = {"tools": "samtools_sort", "mem_caps": "64M", "scales": "1", "repeats": 3, "seed": 7,
          "storage_classes": "ssd", "outdir": "r"}


def test_another_plan_into_a_folder_is_refused_naming_what_differs(tmp_path):
    (tmp_path / outdir.PLAN_RECORD).parent.mkdir(parents=True)
    (tmp_path / outdir.PLAN_RECORD).write_text(json.dumps(outdir.record(PARAMS)))
    assert outdir.problem(tmp_path, PARAMS) is None
    changed = {**PARAMS, "repeats": 2, "mem_caps": "128M"}
    why = outdir.problem(tmp_path, changed)
    assert "--mem_caps 64M -> 128M" in why and "--repeats 3 -> 2" in why and "-resume" in why
    assert outdir.problem(tmp_path, PARAMS, resumed=True) is None
    resumed = outdir.problem(tmp_path, changed, resumed=True)
    assert "--repeats 3 -> 2" in resumed and "-resume keeps them" in resumed, "a resumed study may not change the plan"
    assert outdir.problem(tmp_path, changed, replace=True) is None
    assert outdir.problem(tmp_path / "empty", changed) is None
    assert outdir.problem(tmp_path, {**PARAMS, "outdir": "elsewhere", "skip_report": True}) is None


def test_the_plan_lists_the_refusal_before_anything_runs(tmp_path):
    held = tmp_path / "r"
    (held / outdir.PLAN_RECORD).parent.mkdir(parents=True)
    (held / outdir.PLAN_RECORD).write_text(json.dumps(outdir.record({**PARAMS, "seed": 8})))
    plan = matrix.plan({**PARAMS, "outdir": str(held)}, stub=True)
    assert any("holds the results of another plan (--seed 8 -> 7)" in p for p in plan.problems)
    assert not any("another plan" in p for p in matrix.plan({**PARAMS, "outdir": str(held), "replace_results": True},
                                                             stub=True).problems)


@pytest.mark.integration
def test_a_refused_study_leaves_the_held_folder_s_trace(env, tmp_path):
    """A study refused for another plan's --outdir starts Nextflow, which opens its trace before the
    refusal: the held study's trace is another session's file, kept as it was."""
    from conftest import nextflow

    held = tmp_path / "held"
    (held / outdir.PLAN_RECORD).parent.mkdir(parents=True)
    (held / outdir.PLAN_RECORD).write_text(json.dumps(outdir.record({**PARAMS, "seed": 8})))
    # The held study's traces: an older biossd's one name, and this one's per session.
    earlier = [held / "pipeline_info" / name for name in ("trace.txt", "trace-20260101-000000-1.txt")]
    for path in earlier:
        path.write_text("task_id\tname\n1\tBIOSSD:PROFILE (x)\n")
    proc = nextflow(env, tmp_path, "-profile", "test", "-stub-run", "--outdir", str(held), check=False)
    assert proc.returncode != 0 and "holds the results of another plan" in proc.stdout + proc.stderr
    assert [p.read_text() for p in earlier] == ["task_id\tname\n1\tBIOSSD:PROFILE (x)\n"] * 2


def test_tests_run_outside_the_checkout():
    """`make run` leaves results/ in the checkout and the README runs `make test` after it: no test
    plans or reads in the checkout (conftest moves each into a folder of its own)."""
    from conftest import REPO

    here = Path.cwd().resolve()
    assert here != REPO and REPO not in here.parents


def test_an_experiment_of_another_size_into_a_folder_is_refused(tmp_path):
    """The related experiments keep a plan record too: another sweep size, or the study, into
    their folder is refused naming what differs."""
    from biossd.experiments import planning

    params = {**PARAMS, "experiment": "sort_memory", "experiment_size": "tiny", "outdir": str(tmp_path / "x")}
    first = planning.plan_from_params(params)
    assert first["problems"] == [] and first["record"]["experiment_size"] == "tiny"
    (tmp_path / "x" / outdir.PLAN_RECORD).parent.mkdir(parents=True)
    (tmp_path / "x" / outdir.PLAN_RECORD).write_text(json.dumps(first["record"]))
    assert planning.plan_from_params(params)["problems"] == []
    bigger = planning.plan_from_params({**params, "experiment_size": "test"})
    assert any("--experiment_size tiny -> test" in p for p in bigger["problems"]), bigger["problems"]
    study = matrix.plan({**PARAMS, "outdir": str(tmp_path / "x")}, stub=True)
    assert any("--experiment sort_memory -> None" in p for p in study.problems), study.problems


def _hold(folder: Path, params: dict) -> None:
    (folder / outdir.PLAN_RECORD).parent.mkdir(parents=True)
    (folder / outdir.PLAN_RECORD).write_text(json.dumps(outdir.record(params)))


def test_replacing_another_plan_s_results_sets_the_folder_aside_whole(tmp_path):
    held = tmp_path / "r"
    _hold(held, {**PARAMS, "seed": 8})
    (held / "runs").mkdir()
    (held / "runs" / "run.json").write_text("{}")
    (held / "notes.txt").write_text("the user's own")
    (held / "README.md").write_text("what this folder is for")
    aside = outdir.set_aside(held, outdir.record(PARAMS))
    assert aside is not None and aside.parent == tmp_path and aside.name.startswith("r.replaced-")
    assert sorted(p.name for p in held.iterdir()) == ["README.md"], "no reader meets the other plan's runs"
    assert (aside / "notes.txt").read_text() == "the user's own" and (aside / "runs" / "run.json").is_file()
    assert (aside / outdir.PLAN_RECORD).is_file()
    # The same plan (a fresh session of it), no record, a folder that is not there: nothing moves.
    _hold(held, PARAMS)
    assert outdir.set_aside(held, outdir.record(PARAMS)) is None and (held / outdir.PLAN_RECORD).is_file()
    assert outdir.set_aside(tmp_path / "none", outdir.record(PARAMS)) is None


def test_the_new_session_s_open_trace_and_log_stay_when_the_old_plan_is_set_aside(tmp_path):
    """Nextflow opens the session's trace and log in pipeline_info/ before the workflow sets the
    other plan's results aside: the files its launcher holds open stay (the new session's), the
    rest of pipeline_info/ moves, its plan record with it."""
    import subprocess

    held = tmp_path / "r"
    _hold(held, {**PARAMS, "seed": 8})
    info = held / "pipeline_info"
    (info / "trace-old-1.txt").write_text("the old plan's tasks\n")
    (held / "runs").mkdir()
    with open(info / "trace-new-2.txt", "w") as trace, open(info / "nextflow.log", "w") as log:
        launcher = subprocess.Popen(["sleep", "30"], stdout=trace, stderr=log)
    try:
        aside = outdir.set_aside(held, outdir.record(PARAMS), held_by=launcher.pid)
    finally:
        launcher.kill()
        launcher.wait()
    assert sorted(p.name for p in info.iterdir()) == ["nextflow.log", "trace-new-2.txt"]
    assert sorted(p.name for p in (aside / "pipeline_info").iterdir()) == ["plan.json", "trace-old-1.txt"]
    assert (aside / "runs").is_dir() and outdir.problem(held, PARAMS) is None


def test_a_result_folder_holding_the_launch_or_work_directory_is_refused(tmp_path):
    import pytest

    held = tmp_path / "r"
    _hold(held, {**PARAMS, "seed": 8})
    (held / "work").mkdir()
    with pytest.raises(outdir.OutdirError, match="would carry with them"):
        outdir.set_aside(held, outdir.record(PARAMS), keep=(held / "work",))
    with pytest.raises(outdir.OutdirError, match="would carry with them"):
        outdir.set_aside(held, outdir.record(PARAMS), keep=(held,))
    assert (held / outdir.PLAN_RECORD).is_file() and (held / "work").is_dir()


def test_a_set_aside_cut_short_leaves_the_folder_refused(tmp_path, monkeypatch):
    """The plan record moves last: whatever an interrupted move left still says it is another plan's."""
    import pytest

    held = tmp_path / "r"
    _hold(held, {**PARAMS, "seed": 8})
    (held / "runs").mkdir()
    moved = []
    real = Path.rename

    def rename_then_fail(self, target):
        if moved:
            raise OSError(28, "No space left on device")
        moved.append(self.name)
        return real(self, target)

    monkeypatch.setattr(Path, "rename", rename_then_fail)
    with pytest.raises(outdir.OutdirError, match="move the rest yourself"):
        outdir.set_aside(held, outdir.record(PARAMS))
    assert moved == ["runs"] and outdir.problem(held, PARAMS) is not None
    os.rename(next(tmp_path.glob("r.replaced-*")), tmp_path / "first")  # Path.rename fails from here on
    with pytest.raises(outdir.OutdirError, match="move the rest yourself"):
        outdir.set_aside(held, outdir.record(PARAMS))  # its first move fails
    assert list(tmp_path.glob("r.replaced-*")) == [], "a set-aside that moved nothing left an empty folder"


@pytest.mark.integration
def test_a_study_that_replaces_another_plan_s_results_reads_only_its_own(env, tmp_path):
    """`--replace_results true` (`make run FRESH=1`) into a folder of another plan: the study runs,
    the held folder is beside it whole, and the new folder holds this plan alone."""
    from conftest import nextflow

    held = tmp_path / "held"
    _hold(held, {**PARAMS, "seed": 8})
    (held / "runs").mkdir()
    (held / "runs" / "kept.txt").write_text("another plan's")
    proc = nextflow(env, tmp_path, "-profile", "test", "-stub-run", "--outdir", str(held), "--replace_results", "true",
                    check=False)
    assert proc.returncode == 0, proc.stdout[-2000:] + proc.stderr[-2000:]
    aside = [p for p in tmp_path.iterdir() if p.name.startswith("held.replaced-")]
    assert len(aside) == 1 and (aside[0] / "runs" / "kept.txt").read_text() == "another plan's"
    assert not (held / "runs" / "kept.txt").exists()
    assert json.loads((held / outdir.PLAN_RECORD).read_text())["seed"] != "8"


def test_a_set_aside_cut_short_is_finished_into_the_same_folder(tmp_path, monkeypatch):
    """The next set-aside moves the rest where the first moved some: the other plan's results stay
    in one folder, not split over two."""
    import pytest

    held = tmp_path / "r"
    _hold(held, {**PARAMS, "seed": 8})
    (held / "runs").mkdir()
    (held / "features.csv").write_text("x\n")
    real, moved = Path.rename, []

    def rename_once(self, target):
        if moved:
            raise OSError(28, "No space left on device")
        moved.append(self.name)
        return real(self, target)

    monkeypatch.setattr(Path, "rename", rename_once)
    with pytest.raises(outdir.OutdirError):
        outdir.set_aside(held, outdir.record(PARAMS))
    monkeypatch.setattr(Path, "rename", real)
    aside = outdir.set_aside(held, outdir.record(PARAMS))
    assert list(tmp_path.glob("r.replaced-*")) == [aside]
    assert sorted(p.name for p in aside.iterdir()) == ["features.csv", "pipeline_info", "runs"]
    assert not (aside / "pipeline_info" / outdir.SET_ASIDE_MARK).exists() and outdir.problem(held, PARAMS) is None
