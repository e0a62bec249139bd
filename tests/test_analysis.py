"""The analysis library behind the notebooks: result sets, speedup, clustering and
tables, on synthetic result sets whose truth is known (biossd.analysis.synthresults)."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from biossd import analysis
from biossd.analysis import patterns, resultset, speedup, synthresults
from biossd.features import extract as features
from biossd.outputs import tables
from biossd.study import catalogue, layout

CAPS, SCALES = ("1G", "4G"), (1, 2, 8)


@pytest.fixture(scope="module")
def fixture(tmp_path_factory):
    out = tmp_path_factory.mktemp("synth")
    truth = synthresults.write(out, caps=CAPS, scales=SCALES, repeats=2, seed=3)
    return truth, analysis.open_results(truth["roots"])


def partition(labels: dict[str, str]) -> set[frozenset[str]]:
    groups: dict[str, set[str]] = {}
    for tool, label in labels.items():
        groups.setdefault(label, set()).add(tool)
    return {frozenset(g) for g in groups.values()}


def test_two_folders_make_one_result_set(fixture):
    truth, a = fixture
    assert a.rs.sides() == ["host-a-ssd", "host-b-hdd"] and a.pairs == [("host-a-ssd", "host-b-hdd")]
    n_tools = len(truth["patterns"]) - 1  # one is not run
    assert len(a.rs.runs) == n_tools * len(CAPS) * len(SCALES) * 2 * 2
    assert set(a.rs.devices) == {"host-a-ssd", "host-b-hdd"} and set(a.rs.hosts) == {"host-a", "host-b"}


def test_a_folder_given_twice_or_without_features_is_named(fixture, tmp_path):
    truth, _ = fixture
    with pytest.raises(resultset.ResultSetError, match="appears in more than one"):
        resultset.load([truth["roots"][0], truth["roots"][0]])
    with pytest.raises(resultset.ResultSetError, match=f"{tmp_path}.*no features table"):
        resultset.load([tmp_path])


def test_baseline_speedups_are_the_planted_ones(fixture):
    truth, a = fixture
    base = a.baseline
    assert set(base["mem"]) == {"1G"} and set(base["scale"]) == {1}
    for tool, planted in truth["baseline_speedup"].items():
        if tool == truth["not_run"]:
            assert tool not in base.index
            continue
        assert base.at[tool, "speedup"] == pytest.approx(planted, rel=0.1), tool
        assert base.at[tool, "group"] == ("G+" if planted >= 2 else "G0")


def test_missing_outcomes_have_a_status_not_a_number(fixture):
    truth, a = fixture
    oom = a.speedups[(a.speedups["tool"] == truth["oom"]["tool"]) & (a.speedups["scale"] == truth["oom"]["scale"])]
    assert len(oom) == len(CAPS) and oom["speedup"].isna().all()
    assert all(s == "oom 2 on host-b-hdd (of 2)" for s in oom["status"])
    table1 = tables.table1_tools(a).set_index("tool")
    assert table1.at[truth["not_run"], "status"].startswith("not run") and np.isnan(table1.at[truth["not_run"], "speedup"])
    assert "recipe-only here" in table1.at[truth["not_run"], "status"], "it says why it was not run"
    assert table1.at["lighter", "status"] == "not run", "a runnable tool the set lacks keeps its row"


def test_clustering_finds_the_planted_patterns_and_groups(fixture):
    truth, a = fixture
    c = a.clustering
    planted = {t: p for t, p in truth["patterns"].items() if t != truth["not_run"]}
    assert partition(c.pattern.to_dict()) == partition(planted)
    as_groups = {"C1": "G+", "C2": "G0"}  # the planted groups are split by features, as the paper's
    assert c.cluster.map(as_groups).to_dict() == {t: truth["groups"][t] for t in planted}
    inside_c1 = {p for t, p in c.pattern.items() if c.cluster[t] == "C1"}
    assert inside_c1 == {"P1", "P2", "P3"}, "patterns inside C1 are numbered first"
    agreement = patterns.cut_agreement(c, a.threshold)
    assert agreement["agrees"].all(), "the planted groups follow the speedup split"
    assert f"for {len(agreement)} of {len(agreement)} tools" in patterns.agreement_text(c, a.threshold)
    reps = patterns.representatives(c)
    assert all(c.pattern[tool] == p for p, tool in reps.items())


def test_each_side_says_how_its_runs_were_measured(fixture):
    """One sentence per side: the cap's enforcer, the trace, perf and where the tools ran."""
    _, a = fixture
    said = resultset.mechanisms(a.rs)
    assert set(said) == set(a.rs.runs["side"])
    assert all(text.startswith("memory caps by ") and "tools run native" in text for text in said.values())


def test_breakeven_scale():
    s = pd.Series([1, 2, 4, 8, 16])
    assert speedup.breakeven_scale(s, pd.Series([1.0, 1.1, 3.0, 6.0, 9.0])) == 4
    assert speedup.breakeven_scale(s, pd.Series([3.0, 1.1, 3.0, np.nan, 9.0])) == 16, "a gap breaks the run"
    assert np.isnan(speedup.breakeven_scale(s, pd.Series([3.0, 3.0, 3.0, 3.0, 1.0])))
    assert speedup.breakeven_scale(s, pd.Series([2.0] * 5)) == 1


def test_fixture_breakeven_is_planted(fixture):
    truth, a = fixture
    amp = a.speedups[(a.speedups["tool"] == "ampliconnoise") & (a.speedups["mem"] == "1G")]
    expected = min(s for s in SCALES if s >= truth["breakeven_scale"])
    assert speedup.breakeven_scale(amp["scale"], amp["speedup"]) == expected
    table = a.breakevens.set_index("tool")  # Fig. 8's table, at each tool's smallest cap (1G here)
    assert table.at["ampliconnoise", "breakeven_scale"] == expected
    assert table.at["ampliconnoise", "scales"] == len(SCALES)


def test_pairs_of_several_fast_sides():
    runs = pd.DataFrame({"side": ["a-ssd", "b-ssd", "c-hdd", "c-ssd"], "storage": ["ssd", "ssd", "hdd", "ssd"]})
    assert speedup.pairs(runs, "ssd", "hdd") == [("a-ssd", "c-hdd"), ("b-ssd", "c-hdd"), ("c-ssd", "c-hdd")]
    assert speedup.pairs(runs, "b-ssd", "hdd") == [("b-ssd", "c-hdd")]


def test_host_differences_are_reported(tmp_path):
    truth = synthresults.write(tmp_path, caps=("1G",), scales=(1,), repeats=1, kernel_slow="5.4.0-other")
    a = analysis.open_results(truth["roots"])
    assert a.differences == ["kernel differs: host-a-ssd 6.1.0-synthetic; host-b-hdd 5.4.0-other"]
    assert "NOTE: kernel differs" in a.describe()


def test_no_pair_and_too_few_tools_are_said_not_raised(tmp_path):
    truth = synthresults.write(tmp_path, caps=("1G",), scales=(1,), repeats=1)
    only_ssd = analysis.open_results(truth["roots"][1])  # sorted: .../hdd, .../ssd
    assert only_ssd.pair is None and "no speedup pair" in only_ssd.describe()
    assert set(only_ssd.baseline["status"]) == {"not run on hdd"}
    runs = only_ssd.rs.runs
    only_ssd.rs.runs = runs[runs["tool"] == "bwa"]
    only_ssd.__dict__.pop("baseline_runs", None)
    assert only_ssd.clustering is None and "at least two tools" in only_ssd.clustering_note


def test_features_missing_everywhere_are_dropped_with_the_reason():
    means = pd.DataFrame({"Butil": [0.1, 0.5, 0.9], "Riops": [np.nan] * 3, "CAR": [0.2, np.nan, 0.8]},
                         index=["a", "b", "c"])
    matrix, _, excluded, dropped = patterns.feature_matrix(means)
    assert list(matrix.index) == ["a", "c"] and list(matrix.columns) == ["Butil", "CAR"]
    assert excluded == {"b": "lacks CAR"} and dropped == {"Riops": "not measured for any tool"}


def test_table2_is_made_from_the_feature_definitions():
    t2 = tables.table2_features().set_index("id")
    assert list(t2.index) == list(features.STORAGE_FEATURES)
    assert t2.at["CAR", "unit"].startswith("fraction 0–1") and "consecutive access ratio" in t2.at["CAR", "definition"]
    assert t2.at["Pfault", "when_high_low"] == "(in)frequent page swaps"


def test_table_files_are_deterministic_and_escaped(tmp_path):
    table = pd.DataFrame({"tool": ["gatk_x", "a&b"], "speedup": [1.23456789, np.nan]})
    first = tables.write(table, tmp_path / "t")
    data = [p.read_bytes() for p in first]
    tables.write(table, tmp_path / "t")
    assert [p.read_bytes() for p in first] == data
    assert data[0] == b"tool,speedup\ngatk_x,1.235\na&b,\n"
    assert b"gatk\\_x & 1.235" in data[1] and b"a\\&b & --" in data[1]


def test_assemble_lays_staged_runs_out_as_a_result_set(fixture, tmp_path):
    """What the pipeline's REPORT does with the run directories it is handed."""
    truth, a = fixture
    rows = a.rs.runs.head(3)
    staged = []
    for i, (_, row) in enumerate(rows.iterrows()):  # staged under arbitrary names, as Nextflow does
        link = tmp_path / "staged" / f"run{i + 1}"
        link.parent.mkdir(exist_ok=True)
        link.symlink_to(a.rs.run_dir(row))
        staged.append(link)
    device = tmp_path / "d.json"
    device.write_text("{}")
    runs = dict(zip(rows["run_dir"], staged))
    made = layout.assemble(tmp_path / "out", runs, {"h-ssd": device}, {"features.csv": device})
    assert [str(m) for m in made] == list(rows["run_dir"])
    assert all((tmp_path / "out" / m / "run.json").is_file() for m in made)
    assert (tmp_path / "out" / "h-ssd" / "device.json").read_text() == "{}"
    with pytest.raises(FileExistsError, match="two runs have the layout path"):
        layout.assemble(tmp_path / "out", dict(list(runs.items())[:1]))
    with pytest.raises(ValueError, match="not a result-layout path"):
        layout.assemble(tmp_path / "other", {"../escape": staged[0]})


@pytest.mark.parametrize("path", sorted((catalogue.REPO_ROOT / "notebooks").glob("*.ipynb")), ids=lambda p: p.name)
def test_notebooks_in_git_are_clean_with_one_parameters_cell(path):
    """papermill's convention: one cell tagged `parameters`; kept without outputs; analysis by
    calling biossd (no function defined in a notebook)."""
    import json

    nb = json.loads(path.read_text())
    tagged = [c for c in nb["cells"] if "parameters" in c.get("metadata", {}).get("tags", [])]
    assert len(tagged) == 1 and "results_dirs" in "".join(tagged[0]["source"])
    code = [c for c in nb["cells"] if c["cell_type"] == "code"]
    assert all(not c.get("outputs") and c.get("execution_count") is None for c in code)
    assert not any("def " in "".join(c["source"]) for c in code), "logic belongs in src/biossd"


def test_agreement_with_the_paper_compares_only_known_groups():
    ours = pd.Series({"a": "G+", "b": "G0", "c": "", "d": "G0"})
    paper = pd.Series({"a": "G+", "b": "G+", "c": "G0", "d": None})
    agrees = speedup.agreement(ours, paper)
    assert bool(agrees["a"]) and not bool(agrees["b"]) and pd.isna(agrees["c"]) and pd.isna(agrees["d"])


def test_table1_says_whether_each_tool_agrees_with_the_paper(fixture):
    table = tables.table1_tools(fixture[1])
    compared = table.dropna(subset=["agrees"])
    assert len(compared) >= 10, "every tool with a speedup and a paper group is compared"
    assert (compared["agrees"] == (compared["group"] == compared["paper_group"])).all()


def test_a_tool_without_writes_is_clustered_with_the_documented_values():
    means = pd.DataFrame({"Butil": [0.9, 0.1, 0.5], "Riops": [50.0, 900.0, 10.0], "Wiops": [40.0, 5.0, 0.0],
                          "Pfault": [1.0, 0.0, 0.0], "CAR": [0.9, 0.2, 0.8], "Rsize": [256.0, 4.0, 64.0],
                          "Wsize": [512.0, 8.0, np.nan], "WBlen": [2.0, 0.1, 0.0]}, index=["a", "b", "quiet"])
    c = patterns.cluster(means, pd.Series({"a": 1.0, "b": 5.0, "quiet": 1.0}))
    assert "quiet" in c.tools and not c.excluded
    # Neutral: the median of the tools that wrote, not the smallest (P1's random-read mark).
    assert c.filled == {"quiet": "Wsize = 260 (no writes)"}
    silent = means.assign(Riops=[50.0, 900.0, 0.0], Rsize=[256.0, 4.0, np.nan], CAR=[0.9, 0.2, np.nan])
    assert (patterns.fill_no_requests(silent)[1]["quiet"]
            == "Rsize = 130 (no reads), Wsize = 260 (no writes), CAR = 0.55 (no requests)")


def test_speedup_with_the_flush_is_shown_beside_it():
    """Wall time plus the post-exit flush: a write-heavy run whose writes land after exit."""
    runs = _runs([("w", "ssd", "ok", 1.0), ("w", "hdd", "ok", 1.2)]).assign(flush_s=[0.1, 2.0])
    table = speedup.speedup_table(runs, "ssd", "hdd").set_index("tool")
    assert table.at["w", "speedup"] == pytest.approx(1.2)
    assert table.at["w", "speedup_with_flush"] == pytest.approx(3.2 / 1.1)


def _runs(rows):
    return pd.DataFrame([{"side": f"h-{st}", "storage": st, "tool": t, "mem": "256M", "scale": 1, "outcome": o,
                          "runtime_s": r} for t, st, o, r in rows])


def test_a_slow_side_that_always_timed_out_gives_a_lower_bound():
    """The time limit censors a run: every hdd run timed out at 120 s and the ssd took 10 s, so
    the speedup is at least 12x (G+); a bound below the threshold decides no group; with one
    repeat finished and one timed out, the timed-out one counts at its time to the limit (the
    mean of the finished repeats alone, 1.5x, would be biased low)."""
    runs = _runs([("a", "ssd", "ok", 10.0), ("a", "ssd", "ok", 10.0), ("a", "hdd", "timeout", 120.0),
                  ("a", "hdd", "timeout", 120.0), ("b", "ssd", "ok", 100.0), ("b", "hdd", "timeout", 120.0),
                  ("c", "ssd", "ok", 1.0), ("c", "hdd", "ok", 1.5), ("c", "hdd", "timeout", 120.0)])
    table = speedup.speedup_table(runs, "ssd", "hdd").set_index("tool")
    assert table.at["a", "speedup"] == pytest.approx(12.0) and table.at["a", "speedup_is_lower_bound"]
    assert table.at["a", "status"].startswith("at least 12x")
    assert table.at["b", "speedup"] == pytest.approx(1.2) and table.at["b", "speedup_is_lower_bound"]
    assert table.at["c", "speedup"] == pytest.approx((1.5 + 120.0) / 2) and table.at["c", "speedup_is_lower_bound"]
    assert table.at["c", "status"].startswith("at least 60.8x: 1 of 2 runs on hdd")
    groups = speedup.group_of(table["speedup"], 2.0, table["speedup_is_lower_bound"])
    assert groups.to_dict() == {"a": "G+", "b": "", "c": "G+"}


def test_the_answer_and_each_disagreement_come_from_the_features(fixture):
    from biossd.analysis import verdict

    a = fixture[1]
    table1 = tables.table1_tools(a)
    explained = verdict.explain(a, table1)
    assert explained["reason"].str.len().gt(0).all()
    ran = explained[explained["group"] != ""]
    for _, row in ran.iterrows():
        assert row["reason"].startswith("it paged" if verdict.paged(row) else "no paging"), row
    text = verdict.answer_text(a, explained)
    plus = (ran["group"] == "G+").sum()
    assert f"accelerated {plus} of the {len(ran)} tools" in text
    agree = int(explained["agrees"].eq(True).sum())
    called = explained["agrees"].notna().sum()
    assert f"{called} have a firm call (G+ or G0), of which {agree} agree with the paper" in text.replace(
        " has a firm", " have a firm").replace(" agrees with", " agree with")
    paper = explained[explained["paper_group"].ne("") & explained["substitute_of"].eq("")]
    assert f"Of the paper's {len(paper)} tools, {paper['mem'].ne('').sum()} ran here" in text
    lines = verdict.disagreements_text(explained)
    assert len(lines) == int(explained["agrees"].eq(False).sum())


def test_trace_durations_are_read_as_nextflow_writes_them():
    from biossd.analysis import harness

    assert harness.trace_duration_s("1m 2s") == 62.0
    assert harness.trace_duration_s("9.4s") == pytest.approx(9.4)
    assert harness.trace_duration_s("500ms") == pytest.approx(0.5)
    assert np.isnan(harness.trace_duration_s("-"))


def test_harness_is_task_time_minus_the_tool_s_wall_time(tmp_path):
    from biossd.analysis import harness

    work = tmp_path / "work" / "ab"
    (work / "run").mkdir(parents=True)
    (work / "run" / "run.json").write_text('{"wall_s": 30.0, "harness_s": {"stage": 0.6, "start_collectors": 1.5}}')
    (tmp_path / "pipeline_info").mkdir()
    (tmp_path / "pipeline_info" / "trace.txt").write_text(
        "task_id\tname\tstatus\trealtime\tworkdir\n"
        f"1\tBIOSSD:PROFILE (bwa ssd 1G x1 #1)\tCOMPLETED\t33s\t{work}\n"
        f"2\tBIOSSD:PROFILE_REPEAT (bwa ssd 1G x1 #2)\tCACHED\t40s\t{tmp_path / 'gone'}\n"
        f"3\tBIOSSD:FEATURES (2 runs)\tCOMPLETED\t2s\t{work}\n")
    tasks = harness.profiled_tasks(tmp_path)
    assert list(tasks["harness_s"].round(6).fillna(-1)) == [3.0, -1]
    text = harness.summary_text(tmp_path)
    assert "profiled tasks completed: 1; task 0.6 min = tools 0.5 min + harness 0.1 min (10%" in text
    assert "1 profiled task(s) without a run" in text
    by_phase = harness.phases(tasks) * 60.0
    assert by_phase.round(6).to_dict() == {"start_collectors": 1.5, harness.OUTSIDE: 0.9, "stage": 0.6}
    assert "by phase: start_collectors 0.0 min, outside the profiler 0.0 min, stage 0.0 min" in text


def test_repeats_not_run_and_the_sessions_behind_the_runs_are_read(fixture, tmp_path):
    truth, a = fixture
    root = a.rs.roots[0]
    info = root / resultset.PIPELINE_INFO
    info.mkdir(exist_ok=True)
    (info / resultset.REPEATS_NOT_RUN_FILE).write_text(
        "tool\tstorage\tmem\tscale\trep\twhy\ntool_a\thdd\t1G\t1\t2\tthe first repeat reached the time limit\n"
        "tool_a\thdd\t1G\t1\t3\tthe first repeat reached the time limit\n")
    try:
        table = resultset.repeats_not_run(a.rs)
        assert list(table["rep"]) == ["2", "3"]
        assert "tool_a on hdd at 1G, scale 1: repeat(s) 2, 3 not run" in resultset.repeats_not_run_text(table)
        sessions = resultset.run_sessions(a.rs)
        assert sessions["runs"].sum() == len(a.rs.runs) and set(sessions["session_id"]) == {"unknown"}
    finally:
        (info / resultset.REPEATS_NOT_RUN_FILE).unlink()
    assert "Every planned repeat ran" in resultset.repeats_not_run_text(resultset.repeats_not_run(a.rs))


def test_a_pipeline_s_speedup_is_a_lower_bound_only_when_the_slow_side_ran_out_of_time():
    from biossd.analysis.speedup import pipeline_speedup

    totals = {"ssd": 10.0, "hdd": 30.0}
    assert pipeline_speedup(totals, "ssd", "hdd").value == pytest.approx(3.0)
    censored = pipeline_speedup(totals, "ssd", "hdd", incomplete=["hdd"])
    assert censored.lower_bound and censored.value == pytest.approx(3.0) and "time limit" in censored.why
    failed = pipeline_speedup(totals, "ssd", "hdd", incomplete=["hdd"], failed=["hdd"])
    assert failed.value is None and "did not complete on hdd" in failed.why
    assert pipeline_speedup(totals, "ssd", "hdd", incomplete=["ssd"]).value is None
    assert pipeline_speedup({"hdd": 30.0}, "ssd", "hdd").value is None


def test_the_regime_table_has_a_row_per_baseline_tool_and_controls_are_judged(fixture):
    from biossd.analysis import regime

    truth, a = fixture
    table = regime.regime_table(a)
    assert list(table.columns) == ["tool", *regime.REGIME_COLUMNS]
    assert set(table.index) == set(a.baseline_runs["tool"])
    controls = regime.controls(a)
    assert set(controls["tool"]) <= set(regime.CONTROLS)
    assert (controls["held"] == (controls["speedup"] < speedup.NEGLIGIBLE_BELOW)).all()  # judged by speedup
    assert all(note for note in controls.loc[~controls["held"], "note"])
    text = regime.controls_text(a)
    assert text.startswith("No pre-registered control ran") if controls.empty else (
        f"{int(controls['held'].sum())} of {len(controls)} that ran" in text)


def test_groups_have_a_between_band_counted_as_neither_agreement_nor_disagreement():
    values = pd.Series([3.0, 1.5, 1.1, 1.5], index=list("abcd"))
    bound = pd.Series([False, False, False, True], index=list("abcd"))
    groups = speedup.group_of(values, 2.0, bound)
    assert list(groups) == ["G+", "between", "G0", ""]  # a lower bound below 2x decides nothing
    agrees = speedup.agreement(groups, pd.Series(["G+", "G0", "G0", "G0"], index=list("abcd")))
    assert agrees["a"] is True or agrees["a"] == True  # noqa: E712 (numpy's True is not True itself)
    assert pd.isna(agrees["b"]) and pd.isna(agrees["d"]) and agrees["c"] == True  # noqa: E712 (numpy's True is not True itself)


def test_a_speedup_s_bootstrap_interval_and_whether_it_is_firm():
    low, high = speedup.bootstrap_interval([1.0, 1.1, 0.9], [2.0, 2.4, 1.6])
    assert low < 2.0 < high  # straddles the threshold: not firm
    tight = speedup.bootstrap_interval([1.0, 1.0, 1.0], [3.0, 3.0, 3.0])
    assert tight == pytest.approx((3.0, 3.0))
    assert np.isnan(speedup.bootstrap_interval([1.0], [2.0, 3.0])[0])  # one run has no spread
    assert speedup.bootstrap_interval([1.0, 1.1, 0.9], [2.0, 2.4, 1.6]) == (low, high)  # seeded
    table = pd.DataFrame({"speedup": [2.0, 2.5, 1.1, 1.6, 3.0], "speedup_low": [1.8, 2.2, 1.0, np.nan, np.nan],
                          "speedup_high": [2.3, 2.9, 1.3, np.nan, np.nan],
                          "speedup_is_lower_bound": [False, False, False, False, True]})
    assert list(speedup.unfirm(table)) == [True, False, True, True, False]


def test_the_speedup_table_carries_intervals_and_oom_counts():
    rows = []
    for storage, times, oom in (("ssd", [1.0, 1.2, 0.9], 1), ("hdd", [3.0, 2.6, 3.3], 0)):
        for rep, t in enumerate(times, 1):
            rows.append({"tool": "x", "mem": "1G", "scale": 1, "storage": storage, "side": f"h-{storage}", "rep": rep,
                         "outcome": "ok", "runtime_s": t, "flush_s": 0.0})
        rows += [{"tool": "x", "mem": "1G", "scale": 1, "storage": storage, "side": f"h-{storage}", "rep": 9 + i,
                  "outcome": "oom", "runtime_s": 0.5, "flush_s": 0.0} for i in range(oom)]
    table = speedup.speedup_table(pd.DataFrame(rows), "ssd", "hdd").iloc[0]
    assert table["n_oom_fast"] == 1 and table["n_oom_slow"] == 0
    assert table["speedup_low"] < table["speedup"] < table["speedup_high"]


def test_what_keeps_a_tool_from_paging_is_read_from_the_sizing_record():
    """A tool whose data fits in M says so, and that the rule halved its input where the sizing
    record shows a capped run past half the time limit."""
    from types import SimpleNamespace

    from biossd.analysis import regime, verdict

    record = {"runs": [{"tool": "cluster3", "step": "capped", "size": 262144, "outcome": "timeout"},
                       {"tool": "cluster3", "step": "capped", "size": 131072, "outcome": "ok"},
                       {"tool": "cluster3", "step": "input", "size": 524288, "outcome": "timeout"}]}
    a = SimpleNamespace(rs=SimpleNamespace(sizing=record))
    assert regime.halved_from(a, "cluster3") == [262144] and regime.halved_from(a, "maq") == []
    text = verdict.kept_from_paging(a, "cluster3", {"data_over_m": 0.45})
    assert "0.45 x M uncapped, so it fits in M" in text and "256 KiB ran capped" in text
    assert verdict.kept_from_paging(a, "cluster3", {"data_over_m": float("nan")}) == ""
    code = {"data_over_m": float("nan"), "code_read_bytes": 60.0 * (1 << 20), "band_bytes": 1.0 * (1 << 20),
            "code_read_device": "vda"}
    said = verdict.kept_from_paging(a, "cluster3", code)
    assert "read 60.0 MiB of code again from vda a run" in said and "DAMON" not in said
    assert "pages out memory left idle for 60 s itself" in verdict.kept_from_paging(
        a, "cluster3", {**code, "host_pageout_idle_s": 60.0})


def test_a_chained_pipeline_s_steps_are_its_runs_means_and_a_stop_is_named():
    """Fig. 3's numbers (analysis, not the figure): a chained step's bar is its mean over the
    repeats; a step that timed out makes the slow side's total a lower bound; a step the slow
    side never reached is named."""
    from biossd.study import catalogue, chain

    entry = next(e for e in catalogue.load_all() if e.kind == "pipeline" and e.data.get("chain"))
    steps = list(chain.step_labels(entry)[0])
    rows = []
    for rep in ("1", "2"):
        for i, step in enumerate(steps):
            rows.append({"side": "h-ssd", "pipeline": entry.id, "rep": rep, "step": step, "outcome": "ok",
                         "runtime_s": 10.0 * (i + 1) + (1.0 if rep == "2" else 0.0)})
    rows.append({"side": "h-hdd", "pipeline": entry.id, "rep": "1", "step": steps[0], "outcome": "timeout",
                 "runtime_s": 100.0})
    chains = pd.DataFrame(rows)
    got = speedup.pipeline_runtimes(entry, chains, pd.DataFrame(), [("fast", "ssd"), ("slow", "hdd")])
    fast = [b for b in got.bars if b.side_index == 0]
    assert [b.runtime_s for b in fast] == [10.5 + 10.0 * i for i in range(len(steps))]
    assert [b.left_s for b in fast][1] == 10.5 and all(b.label for b in fast)
    slow = [b for b in got.bars if b.side_index == 1]
    assert len(slow) == 1 and slow[0].bad == ["timeout"] and "timeout on hdd" in slow[0].label
    assert got.totals_s["hdd"] == 100.0 and "hdd" in got.incomplete and got.failed == []
    assert got.speedup.lower_bound or got.speedup.value is None
    assert any("not reached" in n for n in got.notes) and got.what.startswith("chained, 2 repeat")


def test_the_pair_is_the_study_s_first_two_classes_unless_it_has_none(tmp_path):
    import json

    cloud, paper, none = tmp_path / "cloud", tmp_path / "paper", tmp_path / "none"
    for root, classes in ((cloud, "ssd,gp3,st1"), (paper, "ssd,hdd")):
        (root / "pipeline_info").mkdir(parents=True)
        (root / "pipeline_info" / "provenance.json").write_text(json.dumps({"params": {"storage_classes": classes}}))
    none.mkdir()
    assert resultset.study_pair([cloud]) == ("ssd", "gp3")
    assert resultset.study_pair([paper, cloud]) == ("ssd", "hdd")
    assert resultset.study_pair([none]) == resultset.DEFAULT_PAIR == ("ssd", "hdd")
    (none / "pipeline_info").mkdir()
    (none / "pipeline_info" / "provenance.json").write_text("{not json")
    assert resultset.study_pair([none, cloud]) == ("ssd", "gp3"), "an unreadable record is passed over"
