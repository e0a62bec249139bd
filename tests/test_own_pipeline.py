"""Profile your own pipeline, for real: two pipelines that are not biossd's study
(tests/pipelines/dnaseq: bwa, samtools, bcftools; tests/pipelines/spill: GNU sort spilling and a
task retried after its cap killed it) run under nextflow/conf/profile_pipeline.config, each with
its work directory on the native disk and on an emulated 7200 rpm HDD (brought up by biossd as
the study's are); `biossd pipeline report` names every process, and the prediction from the
native runs reproduces the HDD's measured per-process runtimes."""

from __future__ import annotations

import json
import shutil
import subprocess
from pathlib import Path

import pandas as pd
import pytest

from alone import made_alone
from biossd.analysis import own_pipeline
from biossd.core.owners import ProcessRef
from biossd.measure import manifest
from biossd.measure.own_pipeline import task as pipeline_task
from conftest import REPO

pytestmark = pytest.mark.integration

CONFIG = REPO / "nextflow" / "conf" / "profile_pipeline.config"
PIPELINES = REPO / "tests" / "pipelines"
#: How far the prediction from the native runs may be from the HDD's measured per-process runtime,
#: for a process whose tasks ran at least MIN_COMPARED_S on the HDD. Each side is measured once, and
#: a task shares the 2 cores with Nextflow's JVM and the task beside it: a fifth of a second of
#: scheduling was seen on a loaded CI host (one native MAKE_NUMBERS 0.2 s slower than its others),
#: which is a third of a half-second task's time; a shorter process's error is printed, not held.
MAX_PREDICTION_ERROR = 0.40
MIN_COMPARED_S = 1.0
#: How many numbers the spill pipeline sorts: enough that three of its processes run a second or more.
SPILL_COUNT = 6_000_000
#: The spill pipeline's size where only its tasks' order, memory or concurrency is looked at.
SMALL_COUNT = 200_000
#: How many read bytes each of the dnaseq pipeline's two samples holds: enough that three of its
#: processes (BWA_MEM, SAMTOOLS_SORT, BCFTOOLS_CALL) run past MIN_COMPARED_S on the HDD (at 12M
#: BCFTOOLS_CALL ran 0.99 s there and the comparison held only one process).
DNASEQ_READS_SIZE = "18M"
#: The emulated disk the HDD side runs on (the study's 7200 rpm profile).
HDD_PROFILE = "seagate-barracuda-7200"


def run_pipeline(env, name: str, work: Path, outdir: Path, *args: str, check: bool = True):
    exe = shutil.which("nextflow", path=env["PATH"])
    proc = subprocess.run([exe, "run", str(PIPELINES / name), "-w", str(work), "-c", str(CONFIG),
                           "--biossd_outdir", str(outdir), "--outdir", str(outdir / "published"), *args],
                          cwd=outdir, env=env, capture_output=True, text=True, timeout=900)
    if check:
        assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-1500:]
    return proc


@pytest.fixture(scope="module")
def inputs(biossd, tmp_path_factory):
    root = tmp_path_factory.mktemp("own-inputs")
    for sample, seed in (("s1", 3), ("s2", 4)):
        biossd("data", "synth", "reads", "--size", DNASEQ_READS_SIZE, "--seed", str(seed), "-o", str(root / sample))
        for mate in (1, 2):
            (root / sample / f"reads_{mate}.fq").rename(root / f"{sample}_{mate}.fq")
    shutil.copy(root / "s1" / "genome.fa", root / "genome.fa")
    return root


@pytest.fixture(scope="module")
@made_alone
def classes(biossd, root_required, tmp_path_factory):
    """The two classes as the study has them (biossd storage up): the native disk on a loop
    device of its own (its trace holds only the pipeline's requests) and an emulated HDD."""
    root = tmp_path_factory.mktemp("own-storage")
    out = root / "storage.json"
    biossd("storage", "up", "--root", str(root / "mnt"), "--classes", "native,hdd", "--emulate", "native=native",
           "--emulate", f"hdd={HDD_PROFILE}", "--size", "1G", "-o", str(out))
    resolved = json.loads(out.read_text())
    yield {side: Path(resolved[side]["scratch"]) for side in ("native", "hdd")}
    biossd("storage", "down", "--root", str(root / "mnt"))


@pytest.fixture(scope="module")
@made_alone
def profiled(env, inputs, classes, tmp_path_factory):
    """Each pipeline, profiled with its work directory on the native disk and on the HDD."""
    base = tmp_path_factory.mktemp("own-runs")
    args = {"dnaseq": ["--genome", str(inputs / "genome.fa"), "--reads", str(inputs / "s*_{1,2}.fq")],
            "spill": ["--count", str(SPILL_COUNT)]}
    out = {}
    for name in ("dnaseq", "spill"):
        for side in ("native", "hdd"):
            work = classes[side] / name / "work"
            outdir = base / name / side
            outdir.mkdir(parents=True)
            run_pipeline(env, name, work, outdir, *args[name])
            out[(name, side)] = outdir
    out["args"] = args
    out["work"] = {side: classes[side] for side in classes}
    return out


@pytest.mark.parametrize("name, processes", [
    ("dnaseq", {"BWA_INDEX", "BWA_MEM", "SAMTOOLS_SORT", "SAMTOOLS_INDEX", "BCFTOOLS_CALL"}),
    ("spill", {"MAKE_NUMBERS", "SORT_CHUNK", "MERGE_SORTED", "GROW_TABLE"}),
])
def test_every_task_is_profiled_and_every_process_reported(profiled, biossd, name, processes):
    outdir = profiled[(name, "native")]
    trace = own_pipeline.load_trace(outdir)
    assert set(trace["process"]) == processes
    runs, skipped = own_pipeline.load_runs(outdir)
    assert skipped == []
    assert len(runs) == len(trace), "one run per task attempt"
    for run in runs.itertuples():
        body = manifest.read_manifest(Path(run.run_path))
        assert body["collectors"]["blocktrace"]["ran"] and body["labels"]["process"] == run.process
    said = biossd("pipeline", "report", str(outdir)).stdout
    for process in processes:
        assert process in said
    table = pd.read_csv(outdir / own_pipeline.REPORT_DIR / "processes.csv")
    assert set(table["process"]) == processes and table["Riops"].notna().all()
    assert (outdir / own_pipeline.REPORT_DIR / "pipeline_speedup.png").stat().st_size > 0


@pytest.mark.beside
def test_the_report_names_the_storage_to_rent_behind_an_instance(profiled, biossd):
    """On the real dnaseq runs, behind an m6id.large: every cloud volume is predicted behind the
    instance (its own NVMe drive among them, no other instance's), and choices.csv names for the
    pipeline and each process the cheapest within a tenth of the fastest, with what it rests on."""
    from biossd.analysis import cost

    outdir = profiled[("dnaseq", "native")]
    said = biossd("pipeline", "report", str(outdir), "--instance", "m6id.large",
                  "--instance_usd_per_hour", "0.2").stdout
    report = outdir / own_pipeline.REPORT_DIR
    pipeline = pd.read_csv(report / "pipeline_predictions.csv")
    clouds = pipeline[pipeline["target_kind"].str.startswith("cloud")]
    aws = clouds[clouds["target"].str.startswith("aws-")]
    assert aws["target"].str.endswith("@m6id.large").all() and "aws-m6id-large-nvme@m6id.large" in set(aws["target"])
    assert not clouds["target"].str.contains("i4i").any()
    choices = pd.read_csv(report / "choices.csv").set_index("scope")
    print(choices[["choice", "choice_s", "fastest", "fastest_s", "volume_usd_per_run", "unpriced_within"]].to_string())
    assert {"pipeline", "BWA_MEM", "SAMTOOLS_SORT"} <= set(choices.index)
    whole = choices.loc["pipeline"]
    chosen = clouds.set_index("target").loc[whole["choice"]]
    assert chosen["predicted_wall_s"] <= clouds["predicted_wall_s"].min() * (1 + cost.CHEAPEST_WITHIN)
    near = clouds[clouds["predicted_wall_s"] <= clouds["predicted_wall_s"].min() * (1 + cost.CHEAPEST_WITHIN)]
    assert chosen["total_usd_per_run"] == near["total_usd_per_run"].min()
    assert whole["ranked_by"] == "total_usd_per_run" and "730-hour month" in whole["assumes"]
    assert f"rent for pipeline: {whole['choice']}" in said
    assert "## What to rent" in (report / "README.md").read_text() and "Unpriced" in (report / "README.md").read_text()


@pytest.mark.beside
def test_a_retried_task_counts_once_and_its_failed_attempt_is_listed(profiled):
    """GROW_TABLE asks for 40 MB at first: biossd's cap kills it (oom), Nextflow retries it with
    80 MB; the report counts one task and one failed attempt."""
    outdir = profiled[("spill", "native")]
    runs, _ = own_pipeline.load_runs(outdir)
    grow = runs[runs["process"] == "GROW_TABLE"].sort_values("attempt")
    assert list(grow["outcome"]) == ["oom", "ok"]
    rep = own_pipeline.report(outdir)
    row = rep.processes.set_index("process").loc["GROW_TABLE"]
    assert row["tasks"] == 1 and row["failed_attempts"] == 1


def test_another_session_s_failed_attempts_in_the_same_outdir_are_not_counted():
    """An outdir that holds a killed session's runs beside the reported one's: only the reported
    session's failed attempts count (and a resumed run keeps its session's id)."""
    runs = pd.DataFrame({"process": ["GROW_TABLE"] * 3, "outcome": ["oom", "oom", "ok"],
                         "session_id": ["killed", "reported", "reported"]})
    tasks = pd.DataFrame({"process": ["GROW_TABLE"], "session_id": ["reported"]})
    assert list(own_pipeline.reported_runs(runs, tasks)["session_id"]) == ["reported", "reported"]
    legacy = runs.drop(columns="session_id")
    assert len(own_pipeline.reported_runs(legacy, tasks.drop(columns="session_id"))) == 3


def test_a_run_that_did_not_finish_says_so_and_lists_what_never_completed(tmp_path):
    """A killed or failed session: the README says so first, and a process OOM-killed on every
    attempt (no row in the tables) is listed with its attempts' outcomes."""
    from biossd.outputs import own_pipeline_report

    runs = pd.DataFrame({"process": ["MAKE_NUMBERS", "GROW_TABLE", "GROW_TABLE", "SORT"],
                         "outcome": ["oom", "oom", "failed", "ok"], "session_id": ["s"] * 4})
    tasks = pd.DataFrame({"process": ["SORT"], "session_id": ["s"]})
    never = own_pipeline.never_completed(runs, tasks)
    assert never.to_dict("records") == [{"process": "GROW_TABLE", "attempts": 2, "outcomes": "oom 1, failed 1"},
                                        {"process": "MAKE_NUMBERS", "attempts": 1, "outcomes": "oom 1"}]
    rep = own_pipeline.Report(runs=runs, tasks=tasks, processes=pd.DataFrame(), predictions=pd.DataFrame(),
                              pipeline=pd.DataFrame(), status="ERR", never_completed=never)
    assert not rep.finished and own_pipeline.Report(runs, tasks, *[pd.DataFrame()] * 3, status="OK").finished
    lines = own_pipeline_report._ending_lines(rep)
    assert lines[0].startswith("**This Nextflow run did not finish** (status `ERR`")
    assert "- `MAKE_NUMBERS`: 1 attempt(s): oom 1" in lines


@pytest.mark.beside
def test_findings_name_what_to_change_and_the_next_run_config_does_it(profiled, env, biossd, tmp_path):
    """On real runs: GROW_TABLE's first attempt was killed at its 40 MB (BIOSSD-M02, and no other
    process gets it); every finding is a documented rule with its evidence; and the report's
    next-run.config, passed with -c, runs GROW_TABLE's first attempt to its end."""
    from biossd.analysis import findings

    outdir = profiled[("spill", "native")]
    said = biossd("pipeline", "report", str(outdir)).stdout
    table = pd.read_csv(outdir / own_pipeline.REPORT_DIR / "findings.csv")
    codes = {rule.code for rule in findings.RULES}
    assert set(table["code"]) <= codes and table["evidence"].str.contains("=").all()
    m02 = table[table["code"] == "BIOSSD-M02"]
    assert list(m02["process"]) == ["GROW_TABLE"], table.to_string()
    assert "killed at 40 MB" in m02.iloc[0]["finding"] and "BIOSSD-M02" in said
    for process, fired in table.groupby("process")["code"]:
        assert not {"BIOSSD-C01", "BIOSSD-D01"} <= set(fired), f"{process}: CPU-bound and device-bound at once"
    config = outdir / own_pipeline.REPORT_DIR / "next-run.config"
    assert "withName: 'GROW_TABLE'" in config.read_text()
    again = tmp_path / "again"
    again.mkdir()
    # Only GROW_TABLE's memory matters here: the numbers are few.
    run_pipeline(env, "spill", profiled["work"]["native"] / "spill-again" / "work", again, "--count", str(SMALL_COUNT),
                 "-c", str(config))
    runs, _ = own_pipeline.load_runs(again)
    assert list(runs[runs["process"] == "GROW_TABLE"]["outcome"]) == ["ok"], "the suggested memory ran it the first time"
    assert "BIOSSD-M02" not in set(own_pipeline.report(again).findings["code"])


@pytest.mark.beside
def test_multiqc_shows_the_per_process_table_and_the_findings(profiled, biossd, env, tmp_path):
    """MultiQC (its own environment, from PyPI), run over the report folder as an nf-core
    pipeline's MultiQC step would be, finds biossd's two sections and shows every process and finding."""
    from biossd.outputs import own_pipeline_report

    outdir = profiled[("spill", "native")]
    biossd("pipeline", "report", str(outdir))
    exe = shutil.which("multiqc", path=env["PATH"])
    assert exe, "MultiQC is not installed (install/bootstrap.sh multiqc)"
    proc = subprocess.run([exe, str(outdir / own_pipeline.REPORT_DIR), "-o", str(tmp_path), "--no-ansi"], env=env,
                          capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stdout[-2000:] + proc.stderr[-2000:]
    html = (tmp_path / "multiqc_report.html").read_text()
    for section in (own_pipeline_report.MQC_PROCESSES, own_pipeline_report.MQC_FINDINGS):
        assert f'id="{section}"' in html, f"MultiQC did not show the section {section}"
    data = json.loads((tmp_path / "multiqc_data" / "multiqc_data.json").read_text())
    text = json.dumps(data)
    for process in ("MAKE_NUMBERS", "SORT_CHUNK", "MERGE_SORTED", "GROW_TABLE"):
        assert process in text
    assert "GROW_TABLE BIOSSD-M02" in text


@pytest.mark.beside
def test_tasks_run_side_by_side_under_one_leader_and_their_overlaps_are_shown(profiled, tmp_path):
    """The spill pipeline's tasks ran as Nextflow scheduled them (its two SORT_CHUNK tasks at
    once), members of one concurrent group whose leader held the host lock and ended with
    Nextflow; the report names each overlap and what of it no run can tell apart."""
    from biossd.core import runtime
    from biossd.host import hostlock
    from biossd.measure.own_pipeline import handoff

    outdir = profiled[("spill", "native")]
    runs, _ = own_pipeline.load_runs(outdir)
    modes = {manifest.read_manifest(Path(p))["host_lock"]["mode"] for p in runs["run_path"]}
    leaders = {manifest.read_manifest(Path(p))["host_lock"].get("leader_pid") for p in runs["run_path"]}
    assert modes == {"group-member"} and len(leaders) == 1
    for path in runs["run_path"]:  # each task's requests are its own: the others' are foreign to it
        foreign = manifest.read_manifest(Path(path))["collectors"]["blocktrace"]["foreign"]
        assert "process tree" in foreign.get("attributed_by", ""), foreign
    assert not ProcessRef.of(leaders.pop()).alive(), "the session's leader ended with Nextflow"
    assert hostlock.held_by() is None or "pipeline lead" not in str(hostlock.held_by())
    assert not list((outdir / "pipeline_info").glob(".biossd-leader-*")), "the leader removed its mark"
    # The first task ran in its own process and started the leader; the tasks after it were
    # handed to the leader (biossd.measure.own_pipeline.handoff), whose socket went with it.
    bodies = sorted((manifest.read_manifest(Path(p)) for p in runs["run_path"]), key=lambda b: b["started_at"])
    launched = [b["labels"].get("launched_by") for b in bodies]
    assert launched[0] == handoff.LAUNCHED_BY[False] and handoff.LAUNCHED_BY[True] in launched, launched
    # The tasks that started beside the leader (MAKE_NUMBERS, GROW_TABLE) waited for its pool: one of
    # them at least claimed a ready instance rather than making its own.
    first_wave = [b["collectors"]["blocktrace"].get("instance") for b in bodies
                  if b["labels"].get("launched_by") == handoff.LAUNCHED_BY[False]]
    assert "pooled" in first_wave, first_wave
    assert not list((outdir / "pipeline_info").glob(".biossd-tracepool-*")), "the pool's list went with the leader"
    assert not list(runtime.runtime_dir().glob(handoff.SOCKET_NAME.format(owner_pid="*")))
    rep = own_pipeline.report(outdir, [HDD_PROFILE])
    sorts = rep.tasks[rep.tasks["process"] == "SORT_CHUNK"]
    assert sorts["overlap_group"].nunique() == 1 and (sorts["overlap_s"] > 0).all()
    assert sorts["overlapped_with"].str.contains("SORT_CHUNK").all()
    assert (rep.tasks["kernel_requests_unattributed"] <= rep.tasks["kernel_requests"]).all()


def test_serial_runs_one_task_at_a_time(profiled, env, tmp_path):
    outdir = tmp_path / "serial"
    outdir.mkdir()
    run_pipeline(env, "spill", profiled["work"]["native"] / "spill-serial" / "work", outdir,
                 "--count", str(SMALL_COUNT), "--biossd_concurrency", "serial")
    runs, _ = own_pipeline.load_runs(outdir)
    assert {manifest.read_manifest(Path(p))["host_lock"]["mode"] for p in runs["run_path"]} == {"exclusive"}
    tasks = own_pipeline.report(outdir, []).tasks
    assert (tasks["overlap_s"] == 0).all() and tasks["overlap_group"].is_unique


def test_a_resumed_pipeline_counts_its_cached_tasks_once(profiled, env):
    outdir = profiled[("dnaseq", "native")]
    before = own_pipeline.report(outdir).processes.set_index("process")["tasks"]
    run_pipeline(env, "dnaseq", profiled["work"]["native"] / "dnaseq" / "work", outdir, *profiled["args"]["dnaseq"],
                 "-resume")
    trace = own_pipeline.load_trace(outdir)
    assert set(trace["status"]) == {"CACHED"}
    after = own_pipeline.report(outdir).processes.set_index("process")
    assert after["tasks"].equals(before) and (after["cached_tasks"] == after["tasks"]).all()


@pytest.mark.beside
def test_a_run_of_another_biossd_version_is_named_and_skipped(profiled, tmp_path):
    """A copy of the spill pipeline's results with one run written by another manifest schema:
    the report counts the rest, names that run and says why."""
    outdir = tmp_path / "spill"
    shutil.copytree(profiled[("spill", "native")], outdir, symlinks=True)
    run = next(iter(sorted((outdir / pipeline_task.RUNS_DIR / "SORT_CHUNK").glob("*/attempt-1"))))
    body = json.loads((run / manifest.MANIFEST_NAME).read_text())
    (run / manifest.MANIFEST_NAME).write_text(json.dumps({**body, "schema_version": manifest.SCHEMA_VERSION + 1}))
    rep = own_pipeline.report(outdir)
    assert [Path(d) for d, _ in rep.skipped] == [run]
    assert "schema_version" in rep.skipped[0][1]
    assert rep.processes.set_index("process").loc["SORT_CHUNK", "tasks"] == 1  # of its two
    from biossd.outputs import own_pipeline_report

    own_pipeline_report.write(rep, tmp_path / "report")
    assert str(run) in (tmp_path / "report" / "README.md").read_text()


@pytest.mark.beside
@pytest.mark.parametrize("name", ["dnaseq", "spill"])
def test_the_native_runs_predict_the_hdd_s_runtimes(profiled, name):
    """Each process's runtime on the emulated HDD, predicted from its native runs (the HDD's
    profile as the target), against what the HDD side measured: within 40% (printed)."""
    native = own_pipeline.report(profiled[(name, "native")], [HDD_PROFILE])
    measured = own_pipeline.report(profiled[(name, "hdd")], []).processes.set_index("process")["runtime_s"]
    predicted = native.predictions.set_index("process")["predicted_runtime_s"]
    error = (predicted / measured.reindex(predicted.index) - 1.0)
    print(f"\n{name}: native -> {HDD_PROFILE} per-process prediction error:\n"
          + pd.DataFrame({"measured_hdd_s": measured, "predicted_s": predicted, "error": error}).to_string())
    held = error[measured.reindex(error.index) >= MIN_COMPARED_S]
    assert len(held) >= 2, "too few processes long enough to compare"
    assert held.abs().max() <= MAX_PREDICTION_ERROR, held.to_dict()


@pytest.mark.beside
def test_a_profiled_pipeline_is_a_wfformat_instance_with_its_dependencies(profiled, biossd, tmp_path):
    """`biossd export wfformat` of a profiled pipeline: each task that ended ok, its parents the
    tasks whose outputs it staged, its files with their sizes; WfCommons' own validator accepts it."""
    from conftest import wfformat_validate

    outdir = profiled[("dnaseq", "native")]
    body = json.loads(Path(biossd("export", "wfformat", str(outdir), "--out", str(tmp_path / "wf.json"))
                           .stdout.strip()).read_text())
    wfformat_validate(body)
    tasks = {t["id"]: t for t in body["workflow"]["specification"]["tasks"]}
    name = {i: t["name"] for i, t in tasks.items()}
    parents = {(name[i], name[p]) for i, t in tasks.items() for p in t["parents"]}
    assert {("BWA_MEM", "BWA_INDEX"), ("SAMTOOLS_SORT", "BWA_MEM"), ("BCFTOOLS_CALL", "SAMTOOLS_SORT")} <= parents, parents
    assert all(i in tasks[p]["children"] for i, t in tasks.items() for p in t["parents"])
    sizes = {f["id"]: f["sizeInBytes"] for f in body["workflow"]["specification"]["files"]}
    sort = next(t for t in tasks.values() if t["name"] == "SAMTOOLS_SORT")
    assert sort["inputFiles"] and sort["outputFiles"] and all(sizes[f] > 0 for f in sort["outputFiles"])
    assert len(body["workflow"]["execution"]["machines"]) == 1


@pytest.mark.beside
def test_a_pipeline_with_its_own_shell_is_refused(env, tmp_path, inputs):
    own = tmp_path / "own-shell"
    shutil.copytree(PIPELINES / "dnaseq", own)
    (own / "nextflow.config").write_text((own / "nextflow.config").read_text()
                                        + "process.shell = ['/bin/bash', '-euo', 'pipefail']\n")
    exe = shutil.which("nextflow", path=env["PATH"])
    proc = subprocess.run([exe, "run", str(own), "-c", str(CONFIG), "--biossd_outdir", str(tmp_path / "p"),
                           "--genome", str(inputs / "genome.fa"), "--reads", str(inputs / "s*_{1,2}.fq")],
                          cwd=tmp_path, env=env, capture_output=True, text=True, timeout=600)
    assert proc.returncode != 0
    assert "sets its own task shell" in proc.stdout + proc.stderr and "nextflow.config" in proc.stdout + proc.stderr
    assert not (tmp_path / "p" / pipeline_task.RUNS_DIR).exists()


def test_a_report_cut_short_leaves_the_one_before_it_whole(tmp_path, monkeypatch):
    """A full disk half way through a report: the earlier report's files are as they were, and
    nothing of the new one (not even its folder beside) is left."""
    import errno

    from biossd.outputs import own_pipeline_report

    out = tmp_path / "report"
    out.mkdir()
    (out / "processes.csv").write_text("the earlier report\n")

    def half(rep, folder):
        (folder / "processes.csv").write_text("half of a new one\n")
        raise OSError(errno.ENOSPC, "No space left on device")

    monkeypatch.setattr(own_pipeline_report, "_write_all", half)
    with pytest.raises(OSError):
        own_pipeline_report.write(None, out)
    assert (out / "processes.csv").read_text() == "the earlier report\n"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["report"]
    monkeypatch.setattr(own_pipeline_report, "_write_all",
                        lambda rep, folder: [folder / "a.csv"] if (folder / "a.csv").write_text("new\n") else [])
    assert own_pipeline_report.write(None, out) == [out / "a.csv"] and (out / "a.csv").read_text() == "new\n"
