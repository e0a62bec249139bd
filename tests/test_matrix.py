"""The experiment matrix and its parameter checks (src/biossd/study/plan/matrix.py), as `biossd study plan`
gives them to the workflow."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from biossd.core.units import format_size
from biossd.host import devices
from biossd.study import catalogue
from biossd.study.plan import matrix, parse, storage_classes

BASE = {"tools": "samtools_sort", "mem_caps": "1G,4G", "scales": "1,2", "repeats": 3, "storage_classes": "ssd"}


def plan(**changes):
    return matrix.plan({**BASE, **changes})


def test_the_plain_matrix():
    p = plan()
    assert p.problems == [] and p.tools == ["samtools_sort"]
    assert p.caps == {"samtools_sort": ["1G", "4G"]} and p.scales == [1, 2] and p.repeats == 3
    assert p.n_runs() == 1 * 2 * 2 * 3


def test_tool_caps_replace_mem_caps_for_the_tools_they_match():
    p = plan(tools="samtools_sort,gatk_printreads,gatk_baserecalibrator", tool_caps="gatk_*=4G,16G;samtools_sort=2G")
    assert p.problems == []
    assert p.caps == {"samtools_sort": ["2G"], "gatk_printreads": ["4G", "16G"], "gatk_baserecalibrator": ["4G", "16G"]}
    assert p.n_runs() == (1 + 2 + 2) * 2 * 3


def test_paper_defaults_give_gatk_its_own_caps():
    """study/nextflow.config's defaults: GATK at 4/16/32 GB (§3.5), the rest at 1/4/16/32 GB."""
    p = plan(tools="all", mem_caps="1G,4G,16G,32G", tool_caps="gatk_*=4G,16G,32G", scales="1,2,4,8,16")
    assert p.problems == []
    assert p.caps["gatk_baserecalibrator"] == ["4G", "16G", "32G"] and p.caps["bwa"] == ["1G", "4G", "16G", "32G"]
    recipe_only = {e.id for e in catalogue.load_all() if e.kind == "tool" and e.data["status"] != "runnable"}
    assert set(p.skipped) == recipe_only and not set(p.tools) & recipe_only
    assert all(p.skipped.values()), "every skipped tool says why"


def test_stub_takes_every_tool_entry():
    p = matrix.plan({**BASE, "tools": "all"}, stub=True)
    assert set(p.tools) == {e.id for e in catalogue.load_all() if e.kind == "tool"} and p.skipped == {}


def test_every_problem_is_listed_at_once():
    p = plan(tools="samtools_sort,bogus,pipeline_transcriptome,gatk_printreads", mem_caps="1G,1M,lots",
             tool_caps="gatk_*=128M;zz*=1G;broken", scales="0,2", repeats="x", emulate="nvme=seagate-barracuda-7200")
    text = "\n".join(p.problems)
    for needle in ("Unknown tool 'bogus'", "'pipeline_transcriptome' in --tools is a pipeline",
                   "'1M' in --mem_caps is below the 2M minimum", "'lots' in --mem_caps is not a size",
                   "'128M' in --tool_caps is below the 160M minimum of gatk_printreads",
                   "pattern 'zz*' matches no catalogue tool", "'broken' is not of that form",
                   "Scale '0'", "Parameter --repeats = 'x'", "--emulate names class 'nvme'"):
        assert needle in text, needle
    assert "bogus" not in p.caps


def test_recipe_only_tool_asked_for_by_name_is_a_problem_unless_stub():
    assert any("recipe-only" in x for x in plan(tools="tophat").problems)
    assert matrix.plan({**BASE, "tools": "tophat"}, stub=True).problems == []


def test_catalogue_min_mem_is_read():
    assert parse.min_cap_bytes(catalogue.get("gatk_baserecalibrator")) == 160 << 20
    assert parse.min_cap_bytes(catalogue.get("samtools_sort")) == parse.MIN_CAP_BYTES


def test_scratch_must_be_on_the_named_device(tmp_path):
    here = devices.device_of_path(tmp_path)
    assert plan(devices=f"ssd={here}", scratch_dir=str(tmp_path)).problems == []
    assert plan(devices=f"ssd=/dev/{devices.whole_disk(here)}", scratch_dir=str(tmp_path)).problems == []
    other = next(d for d in ("zram0", "loop0", "sr0", "ram0") if d != here and (devices.SYS_BLOCK / d).exists())
    wrong = plan(devices=f"ssd={other}", scratch_dir=str(tmp_path)).problems
    assert len(wrong) == 1 and f"is on {here}, not on {other}" in wrong[0]
    missing = plan(devices="ssd=/dev/nosuchdisk", scratch_dir=str(tmp_path)).problems
    assert missing == ["--devices: the device of class 'ssd' is missing: /dev/nosuchdisk: no such device"]
    assert "no --scratch_dir on it" in plan(devices=f"ssd={here}").problems[0]
    assert "emulated" in plan(storage_classes="ssd,hdd", emulate="hdd=seagate-barracuda-7200",
                              devices=f"hdd={here}", scratch_dir=str(tmp_path)).problems[0]


def test_device_records_must_hold_a_record_for_every_class_of_this_host(tmp_path):
    (tmp_path / "h-ssd").mkdir()
    (tmp_path / "h-ssd" / "device.json").write_text("{}")
    assert plan(device_records=str(tmp_path), host="h").problems == []
    missing = plan(device_records=str(tmp_path), host="other", storage_classes="ssd,hdd").problems
    assert missing == [f"--device_records {tmp_path} has no device record other-ssd/device.json, other-hdd/device.json: "
                       "give a result folder of an earlier run with --host other and these classes, or leave it out "
                       "to measure the devices"]
    assert "is not a directory" in plan(device_records=str(tmp_path / "nope"), host="h").problems[0]


def test_cli_prints_the_plan_and_fails_on_problems(biossd):
    ok = biossd("study", "plan", "--params", json.dumps(BASE))
    assert json.loads(ok.stdout)["n_runs"] == 12
    bad = biossd("study", "plan", "--params", json.dumps({**BASE, "tools": "bogus"}), check=False)
    assert bad.returncode == 1 and json.loads(bad.stdout)["problems"]
    assert biossd("study", "plan", "--params", "{not json", check=False).returncode == 2


@pytest.mark.parametrize("spec", ["a", "=1G", "x="])
def test_bad_tool_caps_items(spec):
    problems: list[str] = []
    assert parse.parse_tool_caps(spec, problems) == [] and problems


def test_slurm_partitions_must_exist_share_their_nodes_and_hold_this_host_for_emulation():
    sp = storage_classes.slurm_problems
    one_node = {"fast": ["vm"], "slow": ["vm"]}
    both = {"ssd": "fast", "hdd": "slow"}
    assert sp(["ssd", "hdd"], {"hdd"}, both, None, one_node, "vm") == []
    twins = sp(["ssd", "hdd"], {"hdd"}, both, None, {"fast": ["n1"], "slow": ["n2"]}, "vm")
    assert any("different nodes" in p and "ssd=fast" in p for p in twins)
    assert any("class 'hdd' is emulated on this host (vm)" in p for p in twins)
    assert any("partition 'bogus' does not exist; the cluster has fast, slow" in p
               for p in sp(["ssd"], set(), {"ssd": "bogus"}, None, one_node, "vm"))
    assert any("class 'ssd' has no partition" in p for p in sp(["ssd"], set(), {}, None, one_node, "vm"))
    assert sp(["ssd"], set(), {}, "fast", one_node, "vm") == []
    assert any("cannot be asked" in p for p in sp(["ssd"], set(), {"ssd": "fast"}, None, None, "vm"))


def test_slurm_tasks_ask_for_the_cap_plus_the_profiler_and_a_time_grace():
    tasks = plan(time_limit="10m", host="h").tasks()
    assert tasks and all(t["job_mem_bytes"] == t["mem_bytes"] + matrix.PROFILER_JOB_OVERHEAD_BYTES for t in tasks)
    assert {t["job_time_s"] for t in tasks} == {600 + matrix.JOB_TIME_GRACE_S}
    assert {t["job_time_s"] for t in plan(host="h").tasks()} == {None}


def test_one_machine_study_sizes_scales_and_repeats():
    """-profile full: per-kind input sizes, AmpliconNoise's own scales (Fig. 8), GATK's three
    caps (Fig. 9), and the scaling runs repeated fewer times than the baseline."""
    p = plan(tools="ampliconnoise,gatk_printreads,samtools_sort", mem_caps="256M", tool_caps="gatk_*=1G,4G",
             scales="1", tool_scales="ampliconnoise=1,2,4", repeats=3, scaling_repeats=1,
             input_sizes="flowgrams=8M,bam=64M", input_size="1M", time_limit="5m")
    assert p.problems == []
    assert p.scales_of == {"ampliconnoise": [1, 2, 4], "gatk_printreads": [1], "samtools_sort": [1]}
    assert p.input_sizes == {"flowgrams": "8M", "bam": "64M", "vcf": "1M"} and p.time_limit_s == 300
    runs = p.runs()
    count = {}
    for r in runs:
        count[(r["tool"], r["mem"], r["scale"])] = count.get((r["tool"], r["mem"], r["scale"]), 0) + 1
    assert count == {("ampliconnoise", "256M", 1): 3, ("ampliconnoise", "256M", 2): 1, ("ampliconnoise", "256M", 4): 1,
                     ("gatk_printreads", "1G", 1): 3, ("gatk_printreads", "4G", 1): 1, ("samtools_sort", "256M", 1): 3}
    assert p.n_runs() == len(runs) == 12 and p.as_json()["runs"] == runs


@pytest.mark.parametrize("changes, problem", [
    ({"tool_scales": "nosuch*=2"}, "--tool_scales pattern 'nosuch*' matches no catalogue tool"),
    ({"tool_scales": "samtools_sort=0"}, "Scale '0' in --tool_scales is not a whole number >= 1"),
    ({"input_sizes": "bricks=4M"}, "--input_sizes names 'bricks', which is not an input kind"),
    ({"time_limit": "soon"}, "--time_limit"),
    ({"scaling_repeats": 0}, "--scaling_repeats"),
])
def test_bad_sizing_parameters_are_named(changes, problem):
    assert any(problem in text for text in plan(**changes).problems), plan(**changes).problems


def _config_params(path: Path) -> dict[str, Any]:
    """The ``params { }`` block of a Nextflow config file, as Nextflow would read it."""
    import re

    text = path.read_text()
    body = text[text.index("params {"):]
    body = body[:re.search(r"^}", body, re.M).end()]
    pairs = re.findall(r"^\s+(\w+)\s*=\s*('[^']*'|[\w.]+)", body, re.M)
    words = {"null": None, "true": True, "false": False}
    out = {k: v.strip("'") if v.startswith("'") else int(v) if v.isdigit() else
           float(v) if re.fullmatch(r"\d+\.\d+", v) else words.get(v, v) for k, v in pairs}
    # A Groovy string naming a file beside the study: "${projectDir}/../benchmarks/..."
    for k, v in re.findall(r'^\s+(\w+)\s*=\s*"([^"]*)"', body, re.M):
        out[k] = v.replace("${projectDir}", str(catalogue.REPO_ROOT / "study"))
    return out


def _full_params(name: str = "full") -> dict[str, Any]:
    """The study's parameters under ``-profile NAME``: study/nextflow.config's, then the profile's."""
    return {**_config_params(catalogue.REPO_ROOT / "study" / "nextflow.config"),
            **_config_params(catalogue.REPO_ROOT / "nextflow" / "conf" / f"{name}.config")}


@pytest.mark.parametrize("profile, factor", [("memory_x4", 4), ("memory_div4", 0.25)])
def test_the_sensitivity_profiles_change_m_alone(profile, factor):
    """-profile full,memory_x4 / memory_div4: the same inputs, M four times or a quarter of the
    full profile's as each tool's data memory (its cap its floor, measured in the session, plus
    that M), settings / the D that follows; the GATK steps' Fig. 9 points as measured."""
    from biossd.core.units import parse_size
    from biossd.study.sizing import rule

    full, side = _full_params(), _config_params(catalogue.REPO_ROOT / "nextflow" / "conf" / f"{profile}.config")
    p_full = matrix.plan(full, stub=True)
    p = matrix.plan({**full, **side}, stub=True)
    assert p.problems == [] and p.floors_in_session
    m_full, m = parse_size(p_full.data_memory), parse_size(p.data_memory)
    assert abs(m - factor * m_full) <= 1024 and p.sizing["memory_factor"] == factor
    for tool in p.tools:
        expected = p_full.caps[tool] if rule.is_gatk(tool) else [p.data_memory]
        assert p.caps[tool] == expected, tool
        assert p.tool_input_sizes[tool] == p_full.tool_input_sizes[tool]
    assert p.settings["samtools_sort"] == rule.settings(catalogue.get("samtools_sort").memory_options(), rule.memory_divisor(m))


def test_the_full_profile_follows_the_sizing_rule():
    """-profile full takes a committed record of `biossd study size` whole (checked against its
    own measurements): every runnable tool with its own input, one data memory M (the GATK steps
    Fig. 9's 0.2/0.8/1.6 x their input), the record's limit; and its caps are left to the floors
    the study measures in its session (a warm-up and three floor runs per tool first, uncapped on
    1/64 of its input, on the first class)."""
    from biossd.core.units import parse_size
    from biossd.study.sizing import procedure, rule
    from biossd.study.sizing import record as sizing_record

    params = _full_params()
    rec = procedure.load(Path(params["sizing"]))
    assert rec["format"] == sizing_record.FORMAT and procedure.check(rec) == []
    assert set(sizing_record.PARAMETERS).isdisjoint(_config_params(catalogue.REPO_ROOT / "nextflow/conf/full.config"))
    p = matrix.plan({**params, "host": "h"}, stub=True)
    assert p.problems == [] and p.sizing["sha256"] == sizing_record.digest(Path(params["sizing"]))
    assert p.time_limit_s == rec["budget"]["time_limit_s"] and p.floors_in_session
    m = parse_size(p.data_memory)
    assert m == rec["chose"]["data_memory"]
    runnable = {e.id for e in catalogue.load_all() if e.kind == "tool" and e.data["status"] == "runnable"}
    assert runnable <= set(p.tools) and set(p.tool_input_sizes) == runnable == set(rec["tools"])
    for tool in runnable:
        memories = sorted(parse_size(x) for x in p.caps[tool])
        if rule.is_gatk(tool):
            gatk_input = parse_size(p.tool_input_sizes[tool])
            assert memories == [rule.round_kib(share * gatk_input) for share in rule.FIG9_MEMORY_PER_INPUT], tool
        else:
            assert memories == [m], (tool, memories, m)
    floors = [f for f in p.floor_tasks() if f["tool"] in runnable]  # a stub plan has every tool entry
    assert len(floors) == len(runnable) * (rule.FLOOR_WARMUPS + rule.FLOOR_REPEATS)
    assert {t["storage"] for t in floors} == {p.classes[0]} and all(t["mem_bytes"] is None for t in p.tasks())
    # The warm-up (rep 0) reads its tool's code whole into its cgroup, and no other run does.
    assert [t["rep"] for t in floors if t.get("read_code")] == [0] * len(runnable)
    assert not any(t.get("read_code") for t in p.tasks())
    # One input per shared data set, as in the paper: the GATK steps, and Fig. 1's aligners.
    assert len({p.tool_input_sizes[t] for t in runnable if rule.is_gatk(t)}) == 1
    assert len({p.tool_input_sizes[t] for t in rule.FIG1_TOOLS}) == 1
    # No tool's option is a fraction of its cap: D = 1 GB / M for every tool alike.
    d = rule.memory_divisor(m)
    sort_mem = rule.settings(catalogue.get("samtools_sort").memory_options(), d)["sort_mem"]
    assert p.settings["samtools_sort"]["sort_mem"] == sort_mem


def test_per_program_inputs_and_the_rule_s_tool_settings():
    """--tool_input_sizes gives a tool its own input (its own SYNTH_INPUT); --data_memory sets D
    = 1 GB / M for every tool's paper-era memory defaults; --java_heaps fixes a JVM's heap."""
    p = plan(tools="samtools_sort,igvtools,bwa,gatk_printreads", mem_caps="512M", scales="1", repeats=1,
             input_size="1M", input_sizes="bam=8M", tool_input_sizes="igvtools=2M;bwa,gatk_*=4M",
             data_memory="8M", java_heaps="gatk_*=384M", host="h")
    assert p.problems == []
    assert {r["tool"]: r["input"] for r in p.runs()} == {
        "samtools_sort": "bam_x1", "igvtools": "bam_2M_x1", "bwa": "reads_4M_x1", "gatk_printreads": "vcf_4M_x1"}
    assert {i["id"]: i["size"] for i in p.inputs()} == {
        "bam_x1": "8M", "bam_2M_x1": "2M", "reads_4M_x1": "4M", "vcf_4M_x1": "4M"}
    # D = 1G / 8M = 128: samtools sort -m 768M / 128 = 6M, bwa -K 10,000,000 / 128, igvtools 500,000 / 128.
    assert p.settings["samtools_sort"] == {"sort_mem": "6M"}
    assert p.settings["bwa"] == {"batch_bases": "78125"}
    assert p.settings["igvtools"] == {"java_mem": "256M", "sort_records": "3906"}
    assert p.settings["gatk_printreads"] == {"java_mem": "384M"}
    tasks = {t["tool"]: t for t in p.as_json()["tasks"]}
    assert tasks["samtools_sort"]["settings"] == {"sort_mem": "6M"}
    assert plan(tools="samtools_sort").settings["samtools_sort"] == {"sort_mem": "768M"}, "no M: the defaults"


@pytest.mark.parametrize("changes, problem", [
    ({"tool_input_sizes": "nosuch=1M"}, "matches no catalogue tool"),
    ({"tool_input_sizes": "bwa=big"}, "needs one size"),
    ({"data_memory": "lots"}, "--data_memory"),
    ({"java_heaps": "gatk_*=1G,2G"}, "needs one size"),
])
def test_bad_rule_parameters_are_named(changes, problem):
    assert any(problem in text for text in plan(**changes).problems), plan(**changes).problems


def test_cachegrind_probes_read_a_reduced_input_of_their_kind():
    p = plan(tools="samtools_sort,blast", mem_caps="256M", scales="1", repeats=1, input_sizes="bam=64M,proteins=64K",
             input_size="1M", cachegrind_divisor=16)
    assert p.problems == []
    assert p.probes() == [
        {"tool": "samtools_sort", "mem": "256M", "scale": 1, "rep": 1, "probe": "cachegrind", "input": "bam_div16"},
        {"tool": "blast", "mem": "256M", "scale": 1, "rep": 1, "probe": "cachegrind", "input": "proteins_div16"}]
    sizes = {i["id"]: i["size"] for i in p.inputs()}
    assert sizes == {"bam_x1": "64M", "proteins_x1": "64K", "bam_div16": "4M",
                     "proteins_div16": format_size(matrix.MIN_PROBE_INPUT_BYTES)}
    assert {r["input"] for r in p.runs()} == {"bam_x1", "proteins_x1"}
    assert plan().probes() == [], "no probes unless asked for"


def test_a_probe_lands_under_probes_not_runs():
    from biossd.study import layout

    labels = {"host": "vm", "storage": "ssd", "tool": "bwa", "mem": "256M", "scale": 1, "rep": 1, "probe": "cachegrind"}
    assert str(layout.run_relpath(labels)) == "vm-ssd/probes/cachegrind/bwa"
    with pytest.raises(ValueError, match="single path components"):
        layout.run_relpath({**labels, "probe": "../x"})


def test_the_plan_hands_each_task_its_whole_meta_in_the_order_they_start():
    """The workflow's hand-off: every PROFILE task with its labels, cap in bytes, input and
    publish path (the layout, computed here), the classes side by side and the first class
    alternating with the repeat; probes on the first class only."""
    p = plan(storage_classes="ssd,hdd", mem_caps="1G", scales="1", repeats=2, cachegrind_divisor=4, host="h1",
             input_size="8M")
    tasks = p.as_json()["tasks"]
    assert [(t["storage"], t["rep"], t.get("probe")) for t in tasks] == [
        ("ssd", 1, None), ("hdd", 1, None), ("hdd", 2, None), ("ssd", 2, None), ("ssd", 1, "cachegrind")]
    assert [t["order"] for t in tasks] == list(range(len(tasks)))
    first = tasks[0]
    assert first["labels"] == {"host": "h1", "storage": "ssd", "tool": "samtools_sort", "mem": "1G", "scale": 1, "rep": 1}
    assert first["mem_bytes"] == 1 << 30 and first["kind"] == "bam" and first["input"] == "bam_x1"
    assert first["publish"] == "h1-ssd/runs/samtools_sort/1G/1/1"
    assert tasks[-1]["publish"] == "h1-ssd/probes/cachegrind/samtools_sort"


def test_chain_tasks_carry_each_step_s_cap_in_bytes_and_publish_path():
    p = matrix.plan({**BASE, "mem_caps": "1G", "chains": "pipeline_transcriptome", "chain_repeats": 1,
                     "storage_classes": "ssd,hdd", "host": "h1", "input_size": "8M"}, stub=True)
    chained = p.chain_tasks()
    assert [c["storage"] for c in chained] == ["ssd", "hdd"]
    assert chained[0]["publish"] == "h1-ssd/chains/pipeline_transcriptome/1"
    assert all(s["publish"].startswith(chained[0]["publish"] + "/") and s["mem_bytes"] == 1 << 30
               for s in chained[0]["steps"])


def test_without_a_host_the_plan_lists_no_tasks_and_a_bad_host_is_a_problem():
    assert plan().as_json()["tasks"] == []
    assert any("--host '../x' is not a single path component" in q for q in plan(host="../x").problems)


def test_firm_repeats_are_planned_for_the_baselines_only_after_the_others(tmp_path, biossd):
    """--firm_repeats: each baseline configuration's repeats after --repeats are planned as tasks
    of their own (after every other task); `biossd study firm-up` picks those of the
    configurations whose speedup's interval straddles 1.2x or 2x after the runs given."""
    from biossd.measure import manifest

    p = plan(tools="bwa,clustalw", mem_caps="1G,4G", scales="1", storage_classes="ssd,hdd", firm_repeats=5,
             host="h")
    tasks, firm = p.tasks(), p.firm_tasks()
    assert {(t["tool"], t["mem"], t["rep"]) for t in firm} == {(t, "1G", r) for t in ("bwa", "clustalw") for r in (4, 5)}
    assert len(firm) == 8 and min(t["order"] for t in firm) == len(tasks)
    assert plan(tools="bwa", firm_repeats=0, host="h").firm_tasks() == []
    runs = []
    for tool, times in (("bwa", {"ssd": [1.0, 1.1, 0.9], "hdd": [2.2, 1.8, 2.0]}),      # straddles 2x
                        ("clustalw", {"ssd": [1.0, 1.0, 1.0], "hdd": [1.02, 1.01, 1.0]})):  # negligible, firm
        for cls, walls in times.items():
            for rep, wall in enumerate(walls, 1):
                run = tmp_path / f"{tool}-{cls}-{rep}"
                run.mkdir()
                manifest.write_manifest(run, {"outcome": "ok", "wall_s": wall, "labels": {
                    "tool": tool, "mem": "1G", "scale": 1, "storage": cls, "rep": rep}})
                runs.append(str(run))
    (tmp_path / "firm.json").write_text(json.dumps(firm))
    out = biossd("study", "firm-up", "--tasks", f"@{tmp_path / 'firm.json'}", "--fast", "ssd", "--slow", "hdd", *runs)
    picked = json.loads(out.stdout)
    assert {(t["tool"], t["storage"], t["rep"]) for t in picked} == {("bwa", s, r) for s in ("ssd", "hdd") for r in (4, 5)}
    assert "bwa 1G x1" in out.stderr and "clustalw" not in out.stderr


def test_a_number_on_the_command_line_for_a_text_parameter_is_its_text():
    """Nextflow reads `--scales 1` as the number 1; the schema takes scales as text."""
    p = matrix.plan({"tools": "samtools_sort", "scales": 1, "mem_caps": "1G", "repeats": 2, "storage_classes": "ssd",
                     "outdir": "/nonexistent/out"}, stub=True)
    assert p.problems == [] and p.scales == [1] and p.repeats == 2
    assert matrix.plan({"tools": "samtools_sort", "scales": "1", "mem_caps": "1G", "repeats": "2",
                        "storage_classes": "ssd", "outdir": "/nonexistent/out"}, stub=True).problems


def test_a_configuration_whose_first_repeat_timed_out_is_not_repeated_and_is_listed():
    from biossd.analysis import resultset
    from biossd.study import repeats

    meta = {"tool": "bwa", "storage": "hdd", "mem": "64M", "scale": 1}
    planned = [{**meta, "rep": 2}, {**meta, "rep": 3}, {**meta, "storage": "ssd", "rep": 2}]
    first = [({**meta, "rep": 1}, "timeout"), ({**meta, "storage": "ssd", "rep": 1}, "ok"),
             ({**meta, "storage": "ssd", "rep": 1, "probe": True}, "timeout")]
    run, not_run = repeats.split(planned, repeats.censored(first))
    assert run == [planned[2]] and not_run == planned[:2], "the ssd's probe reached the limit: not a repeat"
    text = repeats.not_run_tsv(not_run)
    assert text.splitlines() == ["\t".join(resultset.REPEATS_NOT_RUN_COLUMNS),
                                 f"bwa\thdd\t64M\t1\t2\t{repeats.NOT_RUN_WHY}", f"bwa\thdd\t64M\t1\t3\t{repeats.NOT_RUN_WHY}"]
    assert repeats.not_run_tsv([]).splitlines() == ["\t".join(resultset.REPEATS_NOT_RUN_COLUMNS)]


def test_a_chain_of_tools_left_out_of_tools_is_refused_when_floors_are_measured_in_the_session():
    """-profile full --tools gatk_baserecalibrator: the chains run tools with no floor runs, so
    their caps could not be set once the floors are in (CAPS would fail an hour in); the plan says
    so before anything runs, and --chains none leaves the chains out."""
    params = {**_full_params(), "host": "h", "tools": "gatk_baserecalibrator"}
    said = [p for p in matrix.plan(params).problems if p.startswith("--chains")]
    assert len(said) == 1 and "lighter" in said[0] and "--chains none" in said[0], said
    plan_none = matrix.plan({**params, "chains": "none"})
    assert plan_none.chains == [] and not [p for p in plan_none.problems if p.startswith("--chains")]
