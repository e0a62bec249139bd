"""A result folder holds one plan: a study of another plan into it is refused, naming what differs,
unless it resumes or replaces (biossd.study.outdir)."""

from __future__ import annotations

import json

from biossd.study import matrix, outdir

PARAMS = {"tools": "samtools_sort", "mem_caps": "64M", "scales": "1", "repeats": 3, "seed": 7,
          "storage_classes": "ssd", "outdir": "r"}


def test_another_plan_into_a_folder_is_refused_naming_what_differs(tmp_path):
    (tmp_path / outdir.PLAN_RECORD).parent.mkdir(parents=True)
    (tmp_path / outdir.PLAN_RECORD).write_text(json.dumps(outdir.record(PARAMS)))
    assert outdir.problem(tmp_path, PARAMS) is None
    changed = {**PARAMS, "repeats": 2, "mem_caps": "128M"}
    why = outdir.problem(tmp_path, changed)
    assert "--mem_caps 64M -> 128M" in why and "--repeats 3 -> 2" in why and "-resume" in why
    assert outdir.problem(tmp_path, changed, resumed=True) is None
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
