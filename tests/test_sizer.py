"""`biossd study size`: the sizing rule measured on this host, written as a record that a study
takes whole (--sizing), checked against its own measurements, and compared between twins."""

from __future__ import annotations

import copy
import json

import pytest

from biossd import analysis
from biossd.analysis import regime, resultset
from biossd.core.units import format_size, parse_duration_s, parse_size
from biossd.study import catalogue
from biossd.study.inputs import data, datasets
from biossd.study.plan import matrix, parse
from biossd.study.sizing import procedure, rule
from biossd.study.sizing import record as sizing_record
from conftest import STUDY_HOST, nextflow
from test_prepare import pinned, publish, serve, write_manifest

TOOLS = ("samtools_sort", "stringtie")
#: A budget that sizes the two quickly: 0.28 s an input may add to a run, a 3.3 s limit (far enough
#: from a run's start-up that the study's runs end within the limit the sizing left them).
STUDY_BUDGET_S = 30
#: The published data set StringTie reads in the pair (tests/test_prepare.py serves it the same way).
RNASEQ = "rna"


def test_a_study_budget_gives_a_run_budget_and_a_limit_in_the_rules_proportion():
    run_s = rule.input_budget_s(8 * 3600, 17)
    # The worst case of the baseline matrix (each repeat: a fast run at half the limit, a slow one
    # censored at it) spends the whole budget.
    worst = 17 * rule.BUDGET_REPEATS * (rule.time_limit_s(run_s) / rule.CENSORED_MIN_SPEEDUP
                                           + rule.time_limit_s(run_s))
    assert worst == pytest.approx(8 * 3600)
    assert rule.time_limit_s(rule.INPUT_BUDGET_S) == rule.TIME_LIMIT_S
    with pytest.raises(ValueError, match="positive"):
        rule.input_budget_s(3600, 0)


@pytest.fixture(scope="module")
def sized(env, tmp_path_factory, study_results):
    """A host of a pair as a user runs it: -profile ssd sizes on this host first (--sizing auto,
    within --budget; two quick tools), then runs by the record. Returns the record's path, the
    record, the first session's output and the arguments to resume it with."""
    tmp = tmp_path_factory.mktemp("size")
    outdir, scratch = tmp / "out", tmp / "scratch"
    scratch.mkdir()
    # StringTie reads a published RNA-seq data set (served here, fetched, prepared by its recipe in
    # the study's input stage); samtools sort its synthetic input.
    made, served = tmp / "made", tmp / "served"
    data.synth("rnaseq", made, 256 << 10, seed=5)
    publish(served, {made / "reads.fq": "reads.fastq.gz", made / "genome.fa": "genome.fa", made / "genes.gtf": "genes.gtf"})
    url, httpd = serve(served)
    files = [pinned(served, url, n) for n in ("reads.fastq.gz", "genome.fa", "genes.gtf")]
    write_manifest(tmp / "manifests", RNASEQ, "rnaseq", ["stringtie"], files, {"recipe": "fastq_rnaseq", "files": {
        "reads": "reads.fastq.gz", "genome": "genome.fa", "annotation": "genes.gtf"}})
    datasets.fetch(RNASEQ, tmp / "data" / RNASEQ, manifest_dir=tmp / "manifests")
    httpd.shutdown()
    inputs = ["--inputs", f"stringtie={RNASEQ}", "--data_dir", str(tmp / "data"), "--data_manifests", str(tmp / "manifests")]
    args = ["-profile", "ssd", "--tools", ",".join(TOOLS), "--budget", f"{STUDY_BUDGET_S}s", "--scales", "1",
            "--repeats", "1", "--skip_report", "--scratch_dir", str(scratch), "--device_records", str(study_results[1]),
            "--host", STUDY_HOST, "--outdir", str(outdir), *inputs]
    first = nextflow(env, tmp, *args)
    path = outdir / "pipeline_info" / "sizing.json"
    return path, json.loads(path.read_text()), first.stdout, (tmp, args)


@pytest.mark.integration
def test_the_record_holds_what_chose_each_parameter(sized):
    path, rec, _, _ = sized
    assert rec["format"] == sizing_record.FORMAT and procedure.check(rec) == []
    run_s = rule.input_budget_s(STUDY_BUDGET_S, len(TOOLS))
    assert rec["budget"]["study_s"] == STUDY_BUDGET_S and rec["budget"]["run_s"] == pytest.approx(run_s)
    assert rec["budget"]["time_limit_s"] == round(rule.time_limit_s(run_s), procedure.TIME_LIMIT_DECIMALS)
    assert rec["host"]["scratch_device"]["name"] and rec["host"]["mem_total_bytes"] > 0
    chose = rec["chose"]
    assert sorted(chose["inputs"]) == sorted(TOOLS)
    for tool in TOOLS:
        steps = {r["step"] for r in rec["runs"] if r["tool"] == tool}
        assert {"input", "warmup", "floor", "capped", "data"} <= steps, steps
        assert 0 < chose["floors"][tool] < 512 << 20
        # Measured at the tool's final input (again, when the time limit stepped it down).
        size = procedure.floor_size(chose["inputs"][tool], parse_size(procedure.SMALLEST_INPUT))
        floors = [r["resident_peak_bytes"] for r in rec["runs"]
                  if r["tool"] == tool and r["step"] == "floor" and r["size_bytes"] == size]
        assert len(floors) >= rule.FLOOR_REPEATS
        assert chose["floors"][tool] == rule.floor_of(floors[-rule.FLOOR_REPEATS:])[0]
        assert parse_size(rule.LADDER_MIN) <= chose["inputs"][tool] <= parse_size(rule.LADDER_MAX)
    # M from the ladder's inputs; an input stepped down for the time limit after that keeps its
    # data memory: each size capped but the last was over the limit / CENSORED_MIN_SPEEDUP (the
    # median of its timings), and each step is FINE_STEP below the one before.
    assert chose["data_memory"] == rule.data_memory_bytes(chose["ladder_inputs"].values())
    limit_s = rec["budget"]["time_limit_s"]
    for tool in TOOLS:
        capped = [r for r in rec["runs"] if r["tool"] == tool and r["step"] == "capped"]
        sizes = list(dict.fromkeys(r["size_bytes"] for r in capped))
        assert sizes[0] == chose["ladder_inputs"][tool] and sizes[-1] == chose["inputs"][tool], (tool, capped)
        assert all(b == rule.fine_step(a) for a, b in zip(sizes, sizes[1:])), sizes
        for size in sizes[:-1]:
            walls = [float("inf") if r["outcome"] == "timeout" else r["wall_s"] for r in capped if r["size_bytes"] == size]
            assert not rule.fits_time_limit(sorted(walls)[len(walls) // 2], limit_s), (tool, size, walls)
    memories = dict(pair.split("=") for pair in rec["parameters"]["tool_data_memory"].split(";"))
    assert parse_size(memories["stringtie"]) == chose["data_memory"] and "tool_caps" not in rec["parameters"]
    log = (path.parent / "sizing.log").read_text()
    assert "samtools_sort" in log and "M =" in log
    # No scratch left behind in the directory it sized in.
    assert not list((path.parent.parent.parent / "scratch").glob("biossd-sizing-*"))


def _plan(path, **more):
    return matrix.plan(_plan_params(path, **more), stub=True)


def _plan_params(path, **more):
    return {"tools": ",".join(TOOLS), "storage_classes": "ssd", "repeats": 1, "mem_caps": "1G", "scales": "1",
            "outdir": str(path.parent / "out"), "sizing": str(path), **more}


@pytest.mark.integration
def test_a_study_takes_the_record_whole(sized):
    path, rec, _, _ = sized
    plan = _plan(path, tool_caps="samtools_sort=1G", time_limit="1h")
    assert not plan.problems, plan.problems
    caps = dict(pair.split("=") for pair in rec["parameters"]["tool_data_memory"].split(";"))
    assert plan.caps == {t: [caps[t]] for t in TOOLS}  # the record's data memories, not the hand-given 1G
    assert plan.floors_in_session  # each cap is the floor measured in the session plus these
    assert plan.time_limit_s == rec["budget"]["time_limit_s"]
    assert plan.tool_input_sizes == dict(pair.split("=") for pair in rec["parameters"]["tool_input_sizes"].split(";"))
    assert plan.sizing["sha256"] == sizing_record.digest(path) and plan.sizing["host"] == rec["host"]["hostname"]
    wider = matrix.plan({**_plan_params(path), "tools": "samtools_sort,stringtie,bwa"})
    assert any("not bwa" in p and "biossd study size --tools" in p for p in wider.problems), wider.problems
    chose = rec["chose"]
    for tool in TOOLS:
        assert plan.input_over_cap[tool] == round(chose["inputs"][tool] / parse_size(caps[tool]), 3)
    # The rule's regime: the median input is INPUT_PER_MEMORY times M (Fig. 9's 20 GB on 4 GB).
    median = sorted(chose["ladder_inputs"].values())
    assert (median[0] + median[1]) / 2 / chose["data_memory"] == pytest.approx(rule.INPUT_PER_MEMORY, rel=0.01)


def test_a_budget_too_small_for_a_runs_minimum_cap_is_refused():
    # Measured at a one-second budget: cluster3's 64K input and samtools sort's 4M give M = 436K,
    # and cluster3 (a floor of 224K, its code outside it) a cap of 660K.
    rec = {"parameters": {"tool_data_memory": "cluster3=436K;samtools_sort=436K", "data_memory": "436K"},
           "chose": {"floors": {"cluster3": 224 << 10, "samtools_sort": 2264 << 10}}}
    entries = {e.id: e for e in catalogue.load_all()}
    problems = sizing_record.cap_problems(rec, lambda tool: parse.min_cap_bytes(entries[tool]))
    assert len(problems) == 1 and "cluster3's cap 660K is below the 2M" in problems[0] and "larger budget" in problems[0]


def test_without_a_record_the_plan_states_input_over_cap():
    params = {"tools": ",".join(TOOLS), "storage_classes": "ssd", "repeats": 1, "scales": "1", "outdir": "/nonexistent/out",
              "sizing": "none", "input_size": "64M", "mem_caps": "1G"}
    plan = matrix.plan(params, stub=True)
    assert plan.sizing is None and plan.input_over_cap == {t: 0.062 for t in TOOLS}


@pytest.mark.integration
def test_a_record_edited_by_hand_or_from_another_rule_is_refused(sized, tmp_path):
    path, rec, _, _ = sized
    edited = copy.deepcopy(rec)
    edited["parameters"]["tool_data_memory"] = edited["parameters"]["tool_data_memory"].replace("stringtie=", "stringtie=9")
    (tmp_path / "edited.json").write_text(json.dumps(edited))
    problems = _plan(tmp_path / "edited.json").problems
    assert any("edited.json" in p and "parameters.tool_data_memory" in p and "edited by hand" in p for p in problems), problems
    other_rule = copy.deepcopy(rec)
    other_rule["rule"]["INPUT_PER_MEMORY"] = 4
    assert any("rule.INPUT_PER_MEMORY" in p for p in procedure.check(other_rule))
    floor = copy.deepcopy(rec)
    floor["chose"]["floors"]["stringtie"] += 1024
    assert any("not the median of its floor runs" in p for p in procedure.check(floor))
    legacy = {"inputs": {"cluster3": "128K"}, "runs": []}  # benchmarks/sizing.py's record
    assert "size again" in procedure.check(legacy)[0]
    (tmp_path / "broken.json").write_text("{")
    assert any("broken.json" in p and "not JSON" in p for p in _plan(tmp_path / "broken.json").problems)


@pytest.mark.integration
def test_result_sets_sized_differently_are_not_compared(sized, biossd, tmp_path):
    path, rec, _, _ = sized
    biossd("data", "synth-results", str(tmp_path / "twins"), "--repeats", "1", "--scales", "1", "--caps", "1G")
    roots = [tmp_path / "twins" / "ssd", tmp_path / "twins" / "hdd"]
    doubled = format_size(2 * parse_size(rec["parameters"]["data_memory"]))
    for root, params in zip(roots, (rec["parameters"], {**rec["parameters"], "data_memory": doubled})):
        (root / "pipeline_info").mkdir(exist_ok=True)
        (root / "pipeline_info" / "sizing.json").write_text(json.dumps({**rec, "parameters": params}))
    with pytest.raises(resultset.ResultSetError, match="sized differently.*data_memory"):
        resultset.load(roots)
    (roots[1] / "pipeline_info" / "sizing.json").write_text(json.dumps(rec))
    assert resultset.load(roots).sizing["parameters"] == rec["parameters"]
    a = analysis.open_results(roots)
    assert a.rs.study_param("data_memory") == rec["parameters"]["data_memory"]  # the record's, not the params'
    assert regime.sizing_text(a).startswith(f"Sized by the rule (`biossd study size` on {rec['host']['hostname']}")
    for root in roots:
        (root / "pipeline_info" / "sizing.json").unlink()
    unsized = regime.sizing_text(analysis.open_results(roots))
    assert unsized.startswith("Not sized by a measurement of the rule") and "Input over cap per tool: " in unsized


@pytest.mark.integration
def test_a_host_of_a_pair_sizes_first_and_runs_by_the_record(sized, env):
    """The study ran the record's data memories, inputs, swap and time limit, which -profile ssd's
    own parameters do not set, on the floors it measured in its session first (a warm-up and three
    floor runs per tool; each cap that floor plus the data memory); a resumed study reuses the
    record."""
    path, rec, stdout, (launch, args) = sized
    assert "measuring the sizing rule on this host" in stdout, stdout
    outdir = path.parent.parent
    plan = json.loads((outdir / "pipeline_info" / "plan.json").read_text())
    assert plan["tool_data_memory"] == rec["parameters"]["tool_data_memory"]
    assert plan["time_limit"] == rec["parameters"]["time_limit"]
    memories = dict(pair.split("=") for pair in rec["parameters"]["tool_data_memory"].split(";"))
    runs = sorted(outdir.glob("*/runs/*/*/*/*/run.json"))
    assert {(r.parts[-5], r.parts[-4]) for r in runs} == {(t, memories[t]) for t in TOOLS}, runs
    for tool in TOOLS:
        floor_runs = sorted(outdir.glob(f"*-ssd/probes/floor/{tool}/*/run.json"))
        assert [r.parent.name for r in floor_runs] == [str(i) for i in range(rule.FLOOR_REPEATS + 1)]
        peaks = [json.loads(r.read_text())["memory_cap"]["resident"]["peak_bytes"] for r in floor_runs[1:]]
        floor = rule.floor_of(peaks)[0]
        for run in (r for r in runs if r.parts[-5] == tool):
            body = json.loads(run.read_text())
            assert int(body["labels"]["floor_bytes"]) == floor and int(body["labels"]["floor_runs"]) == len(peaks)
            assert body["memory_cap"]["limit_bytes"] == max(rule.cap_bytes(floor, parse_size(memories[tool])),
                                                            parse.MIN_CAP_BYTES)
    for run in runs:
        body = json.loads(run.read_text())
        assert body["timeout_s"] == pytest.approx(parse_duration_s(rec["parameters"]["time_limit"])), body["timeout_s"]
        assert body["swap"] and body["swap"]["size_bytes"] == parse_size(rule.SWAP_SIZE), body["swap"]
        assert body["page_cache"]["policy"] == "run" and body["host_load"]["measured"], body["page_cache"]
    again = nextflow(env, launch, *args, "-resume")
    assert "measured by an earlier session of this study" in again.stdout and "measuring" not in again.stdout


@pytest.mark.integration
def test_the_twin_runs_by_the_first_host_s_record_and_one_report_combines_them(sized, env, study_results):
    """The pair on this machine: the sized host's record given to its twin (the emulated Barracuda,
    `-profile emulated_hdd --sizing`), which runs the same inputs, caps, settings and limit; the two
    result sets make one Table 1 with the regime's columns."""
    from biossd.outputs import artefacts

    path, rec, _, (launch, args) = sized
    twin = launch / "twin"
    scratch = launch / "twin-scratch"
    scratch.mkdir()
    inputs = args[args.index("--inputs"):args.index("--inputs") + 6]
    nextflow(env, launch, "-profile", "emulated_hdd", "--sizing", str(path), "--tools", ",".join(TOOLS),
             "--scales", "1", "--repeats", "1", "--skip_report", "--scratch_dir", str(scratch),
             "--device_records", str(study_results[1]), "--host", STUDY_HOST, "--outdir", str(twin), *inputs)
    assert json.loads((twin / "pipeline_info" / "sizing.json").read_text()) == rec
    # Both hosts read the same prepared data set: its record, and so every byte, is the same.
    records = [sorted((root / "inputs").glob("*/prepared.json")) for root in (path.parent.parent, twin)]
    size = dict(pair.split("=") for pair in rec["parameters"]["tool_input_sizes"].split(";"))["stringtie"]
    ids = sorted([matrix.input_id("rnaseq", 1, size, RNASEQ), matrix.probe_input_id("rnaseq", rule.FLOOR_DIVISOR, size,
                                                                                       RNASEQ)])
    assert [[p.parent.name for p in r] for r in records] == [ids] * 2  # the input and its floor runs' 1/64
    fast_record, slow_record = (json.loads(r[0].read_text()) for r in records)
    assert fast_record == slow_record and fast_record["dataset"] == RNASEQ and fast_record["recipe"] == "fastq_rnaseq"
    assert all(s["verified"] for s in fast_record["sources"])
    plan = json.loads((twin / "pipeline_info" / "plan.json").read_text())
    assert {k: plan[k] for k in procedure.PARAMETERS} == {k: rec["parameters"][k] for k in procedure.PARAMETERS}
    a = analysis.open_results([path.parent.parent, twin])
    table = artefacts.make("table1_tools", a, {"tables": twin / "report", "figures": twin / "report"})
    assert {"data_over_m", "input_over_m", "floor_bytes", "data_memory_bytes"} <= set(table.columns)
    ran = table[table["tool"].isin(TOOLS)].set_index("tool")
    # Each tool has a speedup: measured, or a lower bound where the slow run reached the record's limit.
    assert (ran["n_ok_fast"] > 0).all() and ran["speedup"].notna().all(), ran[["speedup", "speedup_is_lower_bound"]]
    for tool in TOOLS:  # each side measured its own floor; the table shows the fast side's, and its call
        fast = json.loads(next(path.parent.parent.glob(f"*/runs/{tool}/*/*/*/run.json")).read_text())
        assert ran.loc[tool, "floor_bytes"] == int(fast["labels"]["floor_bytes"])
        assert ran.loc[tool, "call"] in ("G+", "G0", "between", "marginal") and ran.loc[tool, "band_bytes"] > 0
    # The twin's class is a loop device of its own: the code its runs read from the host's disk is
    # counted, and stays small — the warm-up read it, charged to its own cgroup, out of every cap.
    twin_runs = [json.loads(r.read_text()) for r in twin.glob("*/runs/*/*/*/*/run.json")]
    code = [b["collectors"]["blocktrace"]["page_cache"] for b in twin_runs]
    assert all(c["traced"] for c in code) and max(c["bytes"] for c in code) < 8 << 20, code
    # samtools sort's synthetic BAM is the size asked, to its compression; StringTie's data set is
    # smaller than the size asked, and the prepared input is all of it.
    assert ran.loc["samtools_sort", "input_bytes"] == pytest.approx(rec["chose"]["inputs"]["samtools_sort"], rel=0.05)


def test_where_a_study_keeps_its_sizing_record_and_when_it_reuses_one(tmp_path, biossd):
    out, work = tmp_path / "results", tmp_path / "work"
    fresh = json.loads(biossd("study", "sizing-place", "--outdir", str(out), "--work-dir", str(work), "--session",
                              "s1").stdout)
    assert fresh == {"record": str(out / "pipeline_info" / "sizing.json"),
                     "log": str(out / "pipeline_info" / "sizing.log"), "reuse": False}
    (out / "pipeline_info").mkdir(parents=True)
    (out / "pipeline_info" / "sizing.json").write_text("{}")
    assert sizing_record.study_place(out, work, "s1", replacing=False)["reuse"] is True, "a resumed study reuses it"
    replacing = sizing_record.study_place(out, work, "s1", replacing=True)
    assert replacing["record"] == str(work / "biossd-sizing-s1" / "sizing.json") and replacing["reuse"] is False
