"""`nextflow run study -profile test` end to end on tiny data, then the notebooks over its
results: the walking skeleton from a tool run to a figure."""

import json
import os
import shutil
import subprocess
import tempfile
import time
from pathlib import Path

import pytest

from biossd.analysis import harness
from biossd.features import extract as features
from biossd.host import devices
from biossd.measure import manifest
from biossd.outputs import artefacts
from biossd.study import catalogue, layout
from conftest import REPO, STUDY_HOST, nextflow, pdf_text, squeezed

pytestmark = pytest.mark.integration


@pytest.fixture(scope="module")
def result_set(study_results):
    return study_results[1]


CLASSES = ("ssd", "hdd")
#: How far a run's block requests may stray from the same run's measured alone when another study
#: shares its device: the root disk's own traffic (journal, logs) lands in any window.
TWO_STUDIES_SLACK = 1.5


@pytest.mark.beside
@pytest.mark.parametrize("storage", CLASSES)
def test_every_expected_run_is_present_and_complete(result_set, storage):
    for rep in (1, 2, 3):
        labels = {"host": STUDY_HOST, "storage": storage, "tool": "samtools_sort", "mem": "64M", "scale": 1, "rep": rep}
        run = result_set / layout.run_relpath(labels)
        body = manifest.read_manifest(run)
        assert body["outcome"] == "ok"
        assert body["labels"]["tool_version"] == "1.16.1"
        assert {k: str(v) for k, v in labels.items()}.items() <= body["labels"].items()
        assert "merging from" in (run / "stderr.log").read_text()
        assert body["argv"][-1] == body["labels"]["scratch"] + "/reads.bam"
        assert body["cwd"] == body["labels"]["scratch"], "the tool runs in scratch, on the device under study"
        if storage == "ssd":
            assert body["labels"]["scratch"].startswith(str(result_set.parent / "scratch dir; with space"))
            assert body["devices"] == [devices.device_of_path(result_set.parent)]
            assert body["emulated_storage"]["cwd"] is None
        else:
            emulated = body["emulated_storage"]["cwd"]
            assert emulated["emulated"] and emulated["profile"] == "seagate-barracuda-7200"
            assert emulated["mechanism"] == "fuse-loop"
            assert body["labels"]["scratch"].startswith(str(result_set.parent / ".biossd-storage" / "hdd"))
            assert body["devices"] == [Path(emulated["loop_device"]).name], "the emulated disk is traced"
        assert body["tool_version"] == "1.16.1"
        # --publish_mode link: the run reached the results as hard links, nothing copied.
        assert (run / "run.json").stat().st_nlink == 2 and (run / "blocktrace.tsv.gz").stat().st_nlink == 2
        for collector in ("rusage", "sampler", "blocktrace", "perf"):
            assert body["collectors"][collector]["ran"] is True, (collector, body["collectors"][collector])
    assert harness.last_trace(result_set).name.startswith("trace-")
    provenance = json.loads((result_set / "pipeline_info" / "provenance.json").read_text())
    assert provenance["success"] is True and "-profile test" in provenance["command_line"]
    assert provenance["nextflow_version"] == "24.10.0" and provenance["params"]["storage_classes"] == "ssd,hdd"
    versions = (result_set / "pipeline_info" / "software_versions.yml").read_text()
    assert "samtools_sort: 1.16.1" in versions and "fio:" in versions
    assert (result_set / "report" / "figures" / "fig04_storage_features.png").is_file(), "the pipeline renders the report"


@pytest.mark.beside
def test_the_cachegrind_probe_is_kept_apart_from_the_timed_runs(result_set):
    """Fig. 10 without a PMU: one cachegrind run of the tool on a reduced input, on the first
    class only, published under probes/ and never counted as a timed run."""
    from biossd import analysis
    from biossd.analysis import resultset

    probe = result_set / f"{STUDY_HOST}-ssd" / "probes" / "cachegrind" / "samtools_sort"
    body = manifest.read_manifest(probe)
    assert body["outcome"] == "ok" and body["labels"]["probe"] == "cachegrind"
    assert body["collectors"]["cachegrind"]["ran"] and 0 < body["collectors"]["cachegrind"]["D1_miss_ratio"] < 1
    assert not (result_set / "testhost-hdd" / "probes").exists()
    table = features.read_table(result_set / "features.csv")
    assert len(table) == 6 and "probe" not in str(table["run_dir"].tolist())
    probes = resultset.probes(analysis.open_results([result_set]).rs)
    assert probes[["side", "tool", "outcome"]].values.tolist() == [["testhost-ssd", "samtools_sort", "ok"]]


@pytest.mark.beside
@pytest.mark.parametrize("storage", CLASSES)
def test_the_chained_pipeline_ran_step_after_step_in_one_scratch(result_set, storage):
    """Fig. 3: the transcriptome pipeline chained on each class: every step a complete run under
    chains/, all in one scratch, each reading what the step before it wrote."""
    from biossd import analysis
    from biossd.analysis import resultset
    from biossd.study import chain

    c = chain.of(catalogue.get("pipeline_transcriptome"))
    bodies = [manifest.read_manifest(result_set / layout.chain_relpath(
        {"host": STUDY_HOST, "storage": storage, "chain": c.pipeline, "rep": 1, "step": s.name})) for s in c.steps]
    assert [b["outcome"] for b in bodies] == ["ok"] * len(c.steps)
    assert len({b["labels"]["scratch"] for b in bodies}) == 1
    for step, body in zip(c.steps, bodies):
        assert body["cwd"] == body["labels"]["scratch"] and all(rel in body["argv"] for rel in step.files.values())
    steps = resultset.chains(analysis.open_results([result_set]).rs)
    assert len(steps[steps["side"].eq(f"testhost-{storage}")]) == len(c.steps)
    assert not any("chains" in r for r in features.read_table(result_set / "features.csv")["run_dir"])


@pytest.mark.beside
def test_features_rows_match_the_runs(result_set):
    table = features.read_table(result_set / layout.FEATURES_FILE)
    runs = features.find_run_dirs([result_set])
    assert len(table) == len(runs) == 3 * len(CLASSES)
    assert sorted(table["storage"].unique()) == sorted(CLASSES)
    assert sorted(table["run_dir"]) == sorted(str(r.relative_to(result_set)) for r in runs)
    assert (table["runtime_s"] > 0).all() and table["Pfault"].notna().all()
    for feature in ("Butil", "Riops", "Wiops", "CAR", "Rsize", "Wsize", "WBlen"):
        assert table[feature].notna().all(), (feature, table["missing_reason"].tolist())
    assert (table["Wiops"] > 0).all() and table["CAR"].between(0, 1).all()
    for storage in CLASSES:  # the device record Butil divides by: published, and kept in each run
        device = json.loads((result_set / f"testhost-{storage}" / "device.json").read_text())
        assert device["storage_class"] == storage and device["spec_row"]["seq_read_mbs"] > 0


@pytest.mark.beside
def test_notebooks_render_the_real_result_set_deterministically(result_set, biossd):
    """The report of a real run (one tool: no clustering, said so) is byte-identical when
    rendered again: `biossd report` writes the same figures and tables as the pipeline's REPORT."""
    report_dir = result_set / "report"
    by_pipeline = {rel: (report_dir / rel).read_bytes() for x in artefacts.ARTEFACTS for rel in x.files
                   if not x.optional or (report_dir / rel).is_file()}
    for stem in ("fig02_speedup", "fig04_storage_features", "fig05_patterns", "figs1_prediction",
                 "fig02b_predicted_ssds"):
        for rel in artefacts.get(stem).files:
            magic = b"\x89PNG" if rel.suffix == ".png" else b"%PDF"
            assert by_pipeline[rel].startswith(magic) and len(by_pipeline[rel]) > 5000, rel
    biossd("report", str(result_set))
    for rel, data in by_pipeline.items():
        assert (report_dir / rel).read_bytes() == data, f"{rel} differs between the pipeline's REPORT and `biossd report`"
    table1 = (report_dir / "tables" / "table1_tools.csv").read_text()
    import csv
    import io

    row = next(r for r in csv.DictReader(io.StringIO(table1)) if r["tool"] == "samtools_sort")
    assert row["status"] == "ok" and row["mem"] == "64M" and row["scale"] == "1"
    # Set against the paper's group, unless its call falls between the groups or sits at an edge
    # (marginal): neither agrees nor disagrees.
    assert (row["agrees"] in ("True", "False") and row["call"] == row["group"]) or (
        row["call"] in ("between", "marginal") and row["agrees"] == ""), row
    assert (row["call"] == "marginal") == bool(row["marginal_edge"]), row
    executed = (report_dir / "notebooks" / "03_patterns.ipynb").read_text()
    assert "clustering needs at least two tools" in executed
    assert "emulated Seagate Barracuda" in (report_dir / "tables" / "table4_hdd_devices.csv").read_text()


@pytest.mark.beside
def test_prediction_is_validated_on_the_real_result_set(result_set):
    """The prediction's validation on a small real set: the emulated HDD's samtools sort runs (traced on a loop
    device of their own) replayed on the native disk's record come within the issue's per-tool
    bound of what was measured there; the native side of -profile test is the shared root disk,
    whose trace holds other processes' requests: those predictions say so in ``note``."""
    from biossd import analysis
    from biossd.analysis import predict

    a = analysis.open_results([result_set])
    val = a.cross_prediction
    assert sorted(val["direction"]) == ["testhost-hdd -> testhost-ssd", "testhost-ssd -> testhost-hdd"]
    assert (val["why"] == "").all() and val["predicted_target_s"].notna().all()
    print(val[["direction", "measured_source_s", "measured_target_s", "predicted_target_s", "error"]].to_string())
    own = val[val["source_side"] == "testhost-hdd"]
    assert (own["note"] == "").all() and (own["error"].abs() <= predict.TARGET_MAX_ERROR).all(), val.to_string()
    shared = val[val["source_side"] == "testhost-ssd"]
    assert (shared["note"] == predict.SHARED_DEVICE_NOTE).all(), val.to_string()
    facts = a.rs.runs[["tool_version", "cap_mechanism", "trace_mechanism", "storage_mechanism", "device_source"]]
    assert facts.notna().all().all() and set(facts["device_source"]) == {"run record"}


@pytest.mark.beside
def test_the_paper_s_tools_on_today_s_storage_on_the_real_result_set(result_set):
    """The panel of today's storage on a small real set: every tool's fast-side runs predicted on
    every volume on offer with the instance, each with its interval and a run's cost where the
    volume is priced, and for each tool one storage to rent, priced, within a tenth of the fastest."""
    from biossd import analysis
    from biossd.analysis import cost, today
    from biossd.host.models import cloudmodel

    table = analysis.open_results([result_set]).today_storage
    assert set(table["storage"]) == set(cloudmodel.storage_behind(today.INSTANCE))
    done = table[table["runtime_s"].notna()]
    assert len(done) and (done["basis"] == today.PREDICTED).all() and (done["why"] == "").all()
    assert ((done["low_s"] <= done["runtime_s"]) & (done["runtime_s"] <= done["high_s"])).all()
    for tool, rows in done.groupby("tool"):
        rent = rows[rows["rent"]]
        assert len(rent) == 1 and rent["volume_usd_per_run"].notna().all(), rows.to_string()
        assert float(rent["runtime_s"].iloc[0]) <= rows["runtime_s"].min() * (1 + cost.CHEAPEST_WITHIN)
    unpriced = done[done["storage"].str.startswith("aws-sc1")]
    assert unpriced["volume_usd_per_run"].isna().all() and not unpriced["rent"].any()


@pytest.mark.beside
def test_supplement_and_crate_of_the_real_result_set(result_set, biossd, tmp_path):
    """The supplement says plainly what was emulated; the crate lists the synthetic input with
    the checksums its generator recorded, and every run record (probes and chained steps too)."""
    pdf = biossd("paper", str(result_set), "--no-render", "--out", str(tmp_path / "paper"), timeout=600).stdout.strip()
    text = squeezed(pdf_text(Path(pdf)))
    for phrase in ("Emulated: testhost-hdd is an emulated Seagate Barracuda (profile seagate-barracuda-7200) via fuse-loop",
                   "memory caps by cgroup-v1", "Samtools 1.16.1"):
        assert squeezed(phrase) in text, phrase
    body = json.loads(Path(biossd("crate", str(result_set)).stdout.strip()).read_text())
    ids = {e["@id"]: e for e in body["@graph"]}
    record = json.loads((result_set / "inputs" / "bam_x1" / "synth.json").read_text())
    assert ids["#input-bam_x1-reads.bam"]["sha256"] == record["files"]["reads.bam"]["sha256"]
    assert sum(1 for i in ids if i.endswith("/") and "/runs/" in i) == 3 * len(CLASSES)
    # Every run record a table or figure reads is in the crate: the probes' and chained steps' too.
    records = {p.parent.relative_to(result_set).as_posix() + "/" for p in result_set.rglob(manifest.MANIFEST_NAME)}
    assert any("/probes/" in r for r in records) and any("/chains/" in r for r in records), sorted(records)
    assert records <= set(ids), sorted(records - set(ids))


@pytest.mark.beside
def test_the_crate_of_the_real_result_set_passes_roc_validator_offline(result_set, biossd):
    """roc-validator, pinned and offline (its RO-Crate 1.1 context from the rocrate package, seeded
    at install), on the real result set's crate, with the profile it claims: every REQUIRED check
    run, none failed, none skipped."""
    from biossd.outputs import crate

    proc = biossd("crate", "--validate", str(result_set), check=False, timeout=900)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    line = next(ln for ln in proc.stdout.splitlines() if ln.startswith("roc-validator"))
    assert ", 0 failed, 0 skipped" in line and " 0 REQUIRED" not in line, line
    claimed = json.loads((result_set / crate.METADATA_FILE).read_text())
    root = next(e for e in claimed["@graph"] if e["@id"] == "./")
    assert {c["@id"] for c in root["conformsTo"]} == set(crate.PROFILES)
    for profile in ("process-run-crate-0.5", "workflow-run-crate-0.5", "workflow-ro-crate-1.0", "ro-crate-1.1"):
        assert profile in line, (profile, line)


@pytest.mark.beside
def test_the_real_result_set_is_a_wfformat_instance_that_wfcommons_accepts(result_set, biossd, tmp_path):
    """`biossd export wfformat`: every profiled run and chained step that ended ok is a task, a
    chained step's parent the step before it, each side a machine; WfCommons' own validator
    accepts it, and refuses it with WfCommons 1.6's schema version."""
    from conftest import wfformat_validate

    path = Path(biossd("export", "wfformat", str(result_set), "--out", str(tmp_path / "wf.json")).stdout.strip())
    body = json.loads(path.read_text())
    wfformat_validate(body)
    spec, execution = body["workflow"]["specification"], body["workflow"]["execution"]
    ok_runs = [p.parent for p in result_set.rglob(manifest.MANIFEST_NAME)
               if "/probes/" not in str(p) and "/experiments/" not in str(p) and json.loads(p.read_text())["outcome"] == "ok"]
    from biossd.outputs import wfformat

    assert {t["id"] for t in spec["tasks"]} == {wfformat.task_id(r.relative_to(result_set).as_posix()) for r in ok_runs}
    chained = [t for t in spec["tasks"] if ".chains." in t["id"]]
    assert chained and any(t["parents"] for t in chained) and all(
        not t["parents"] or t["parents"][0].rsplit(".", 1)[0] == t["id"].rsplit(".", 1)[0] for t in chained)
    assert {m["nodeName"] for m in execution["machines"]} == {f"testhost-{c}" for c in CLASSES}
    assert all(t["runtimeInSeconds"] > 0 and t["memoryInBytes"] > 0 for t in execution["tasks"])
    assert execution["makespanInSeconds"] >= max(t["runtimeInSeconds"] for t in execution["tasks"])
    with pytest.raises(RuntimeError, match="syntax errors"):
        wfformat_validate({**body, "schemaVersion": "1.6"})


@pytest.mark.beside
def test_unknown_profile_fails_with_nextflows_error(env, tmp_path):
    proc = nextflow(env, tmp_path, "-profile", "nosuch", "--outdir", str(tmp_path / "r"), check=False)
    assert proc.returncode != 0
    assert "Unknown configuration profile: 'nosuch'" in proc.stdout + proc.stderr


@pytest.mark.beside
def test_unknown_tool_fails_before_any_run(env, tmp_path):
    proc = nextflow(env, tmp_path, "-profile", "test", "--tools", "samtools_sort,bogus",
                    "--outdir", str(tmp_path / "r"), check=False)
    assert proc.returncode != 0
    assert "Unknown tool 'bogus'" in proc.stdout + proc.stderr
    assert not list((tmp_path / "r").glob("*/runs"))


def test_charliecloud_profile_runs_the_tool_in_its_container(env, biossd, tmp_path, root_required, result_set):
    """`-profile test,charliecloud`: the profiler on the host, samtools in its image via ch-run
    (the native disk's record reused from the suite's study: --device_records)."""
    biossd("catalogue", "build", "samtools_sort")
    outdir = tmp_path / "results"
    only_ssd = tmp_path / "only-ssd.config"
    only_ssd.write_text("params { storage_classes = 'ssd'; emulate = null; repeats = 1; skip_report = true }\n")
    nextflow(env, tmp_path, "-profile", "test,charliecloud", "-c", str(only_ssd), "--outdir", str(outdir),
             "--host", STUDY_HOST, "--device_records", str(result_set))
    run = outdir / layout.run_relpath({"host": STUDY_HOST, "storage": "ssd", "tool": "samtools_sort", "mem": "64M",
                                       "scale": 1, "rep": 1})
    body = manifest.read_manifest(run)
    assert body["outcome"] == "ok", (run / "stderr.log").read_text()
    assert "ch-run" in body["executed_argv"] and "/mnt/0/reads.bam" in body["executed_argv"]
    assert body["container_image"].startswith("localhost/biossd/samtools_sort:1.16.1@sha256:")
    assert body["tool_version"] == "1.16.1"
    assert "merging from" in (run / "stderr.log").read_text(), "sort spilled inside the container too"
    reused = json.loads((run / layout.DEVICE_RECORD).read_text())["reused"]
    assert reused["from"] == str(result_set / layout.device_record_relpath(STUDY_HOST, "ssd"))


@pytest.mark.beside
def test_stub_run_of_the_full_matrix_lists_every_profiled_task(env, tmp_path):
    """Every catalogue tool (runnable here or not) x the paper's 4 caps at one scale, once: the
    workflow's shape, checked without the tools (more scales and repeats only multiply the same
    tasks: the default 5 scales x 3 repeats took three minutes of the suite, 2 scales 33 s)."""
    outdir = tmp_path / "out"
    t0 = time.monotonic()
    nextflow(env, tmp_path, "-profile", "ssd", "-stub-run", "--tools", "all", "--scales", "16",
             "--repeats", "1", "--chains", "all", "--chain_repeats", "1", "--outdir", str(outdir))
    elapsed = time.monotonic() - t0
    tools = [e.id for e in catalogue.load_all() if e.kind == "tool"]
    gatk = [t for t in tools if t.startswith("gatk_")]
    trace = harness.last_trace(outdir).read_text().splitlines()
    profiled = [line for line in trace if ":PROFILE " in line]
    # The paper's caps: 1/4/16/32 GB, GATK at 4/16/32 GB (--tool_caps default).
    assert len(profiled) == (len(tools) - len(gatk)) * 4 + len(gatk) * 3
    assert any("gatk_printreads ssd 32G x16 #1" in line for line in profiled)
    assert not any(line for line in profiled if "gatk_printreads ssd 1G " in line)
    assert all("COMPLETED" in line for line in profiled)
    chained = [line for line in trace if ":CHAIN " in line]
    assert len(chained) == sum(1 for e in catalogue.load_all() if e.kind == "pipeline" and e.data.get("chain"))
    print(f"stub-run of {len(profiled)} profiled tasks in {elapsed:.0f} s")


@pytest.mark.beside
def test_bad_parameters_are_all_listed_before_anything_runs(env, tmp_path):
    proc = nextflow(env, tmp_path, "-profile", "test", "--tools", "samtools_sort,bogus", "--mem_caps", "1G,1M",
                    "--scales", "0", "--outdir", str(tmp_path / "r"), check=False)
    text = proc.stdout + proc.stderr
    assert proc.returncode != 0 and "nothing was run" in text
    for problem in ("Unknown tool 'bogus'", "'1M' in --mem_caps is below", "Scale '0'"):
        assert problem in text
    assert not (tmp_path / "r").exists() or not list((tmp_path / "r").glob("*/runs"))


def nextflow_config(env, cwd, profiles):
    exe = shutil.which("nextflow", path=env["PATH"])
    proc = subprocess.run([exe, "config", "-profile", profiles, str(REPO / "study")], cwd=cwd, env=env,
                          capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr
    return proc.stdout


@pytest.mark.beside
@pytest.mark.parametrize("profiles, expected", [
    ("emulated_hdd", ["storage_classes = 'hdd'", "emulate = 'hdd=seagate-barracuda-7200'"]),
    ("emulated_cloud", ["storage_classes = 'gp3'", "emulate = 'gp3=cloud:aws-gp3-baseline@m6id.large'"]),
    ("ssd,apptainer", ["container_engine = 'apptainer'", "storage_classes = 'ssd'"]),
    ("hdd,docker", ["container_engine = 'docker'", "cap_backend = 'external'"]),
    ("ssd,conda", ["enabled = true", "environment.yml"]),
    ("ssd,local", ["executor = 'local'"]),
])
def test_profiles_resolve_and_combine(env, tmp_path, profiles, expected):
    out = nextflow_config(env, tmp_path, profiles)
    for text in expected:
        assert text in out, (text, out)


@pytest.mark.beside
def test_a_scratch_dir_off_the_named_device_stops_the_study(env, tmp_path):
    from biossd.host import devices

    here = devices.device_of_path(tmp_path)
    other = next(d for d in ("zram0", "loop0", "sr0", "ram0") if d != here and (devices.SYS_BLOCK / d).exists())
    proc = nextflow(env, tmp_path, "-profile", "ssd", "--tools", "samtools_sort", "--scratch_dir", str(tmp_path),
                    "--devices", f"ssd={other},hdd=/dev/nosuch", "--outdir", str(tmp_path / "r"), check=False)
    text = proc.stdout + proc.stderr
    assert proc.returncode != 0 and "nothing was run" in text
    assert f"is on {here}, not on {other}" in text and "class 'hdd', which is not in --storage_classes" in text
    assert not (tmp_path / "r").exists() or not list((tmp_path / "r").glob("*/runs"))


@pytest.mark.beside
def test_slurm_profile_resolves(env, tmp_path):
    """-profile ssd,slurm: the config resolves to the SLURM executor, SLURM-enforced caps recorded
    as external, and each run's partition from its meta (tests/test_slurm.py runs it for real)."""
    exe = shutil.which("nextflow", path=env["PATH"])
    out = subprocess.run([exe, "config", "-profile", "ssd,slurm", str(REPO / "study")], cwd=tmp_path, env=env,
                         capture_output=True, text=True, timeout=120).stdout
    assert "executor = 'slurm'" in out and "cap_backend = 'external'" in out and "meta.partition" in out
    assert "withName:CHARACTERIZE" in out.replace(" ", "")


def _profile_statuses(outdir: Path) -> dict[str, str]:
    """Each PROFILE task of the last session's trace: its name and status (COMPLETED, CACHED...)."""
    lines = harness.last_trace(outdir).read_text().splitlines()
    head = lines[0].split("\t")
    rows = [dict(zip(head, line.split("\t"))) for line in lines[1:]]
    return {r["name"]: r["status"] for r in rows if ":PROFILE" in r["name"]}


def test_an_interrupted_study_resumes_where_it_stopped(env, tmp_path, study_results):
    """SIGINT after the first profiled runs, then -resume: the finished tasks are CACHED (no task
    script holds a session's pid), the rest run, every planned run is there exactly once, and the
    host is as before; a second -resume caches everything. The emulated disk comes up again."""
    import signal

    from interrupts import differences, host_snapshot

    outdir = tmp_path / "results"
    args = ["-profile", "test", "--outdir", str(outdir), "--skip_report",
            "--device_records", str(study_results[1]), "--host", STUDY_HOST, "--repeats", "2"]
    before = host_snapshot()
    exe = shutil.which("nextflow", path=env["PATH"])
    proc = subprocess.Popen([exe, "run", str(REPO / "study"), *args], cwd=tmp_path, env=env,
                            stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, start_new_session=True)
    deadline = time.monotonic() + 300
    while time.monotonic() < deadline and proc.poll() is None:
        if len(list(outdir.glob(f"{STUDY_HOST}-*/runs/*/*/*/*/run.json"))) >= 2:
            break
        time.sleep(0.5)
    assert proc.poll() is None, "the study ended before it could be interrupted"
    published = {p.parent for p in outdir.glob(f"{STUDY_HOST}-*/runs/*/*/*/*/run.json")}
    proc.send_signal(signal.SIGINT)
    said, _ = proc.communicate(timeout=300)
    storage_root = tmp_path / ".biossd-storage"

    def left_behind() -> dict[str, object]:
        found = differences(before, host_snapshot())
        files = sorted(str(p.relative_to(storage_root)) for p in storage_root.rglob("*")) if storage_root.exists() else []
        if files not in ([], ["hdd"]):
            found["files under the storage root"] = files
        return found

    # A task's profiler may still be taking its run down when Nextflow has exited: give it a moment.
    settle = time.monotonic() + 20
    while left_behind() and time.monotonic() < settle:
        time.sleep(0.5)
    assert left_behind() == {}, f"the interrupted study left something on the host:\n{said[-3000:]}"
    assert 2 <= len(published) < 4 + 1, published

    resumed = nextflow(env, tmp_path, *args, "-resume")
    statuses = _profile_statuses(outdir)
    assert len(statuses) == 2 * 2 + 1, statuses  # two repeats on two classes, one cachegrind probe
    assert list(statuses.values()).count("CACHED") >= len(published), (statuses, resumed.stdout[-3000:])
    assert set(statuses.values()) <= {"CACHED", "COMPLETED"}
    runs = features.find_run_dirs([outdir])
    assert sorted((manifest.read_manifest(r)["labels"]["storage"], manifest.read_manifest(r)["labels"]["rep"])
                  for r in runs) == [("hdd", "1"), ("hdd", "2"), ("ssd", "1"), ("ssd", "2")]
    assert len(features.read_table(outdir / layout.FEATURES_FILE)) == 4
    assert differences(before, host_snapshot()) == {}, "the resumed study left something on the host"

    nextflow(env, tmp_path, *args, "-resume")
    assert set(_profile_statuses(outdir).values()) == {"CACHED"}, "a second resume measured again"
    assert differences(before, host_snapshot()) == {}


def test_a_configuration_censored_at_its_first_repeat_is_not_repeated(env, tmp_path, study_results):
    """A time limit every run reaches: each configuration's first repeat is measured (and censored),
    its other repeats are listed as not run instead of spending the limit again, the features
    table holds the first repeats only, and the report says which repeats were not run (one class:
    the rule is per configuration; the report's first notebook only, where it says so)."""
    from biossd.outputs import report

    outdir = tmp_path / "out"
    only_ssd = tmp_path / "only-ssd.config"
    only_ssd.write_text("params { storage_classes = 'ssd'; emulate = null; skip_report = true; cachegrind_divisor = null }\n")
    nextflow(env, tmp_path, "-profile", "test", "-c", str(only_ssd), "--outdir", str(outdir), "--time_limit", "0.1s",
             "--repeats", "3", "--device_records", str(study_results[1]), "--host", STUDY_HOST)
    table = (outdir / "features.csv").read_text().splitlines()
    head = table[0].split(",")
    rows = [dict(zip(head, line.split(","))) for line in table[1:]]
    assert {(r["storage"], r["rep"], r["outcome"]) for r in rows} == {("ssd", "1", "timeout")}
    not_run = (outdir / "pipeline_info" / "repeats_not_run.tsv").read_text().splitlines()
    assert sorted(line.split("\t")[1] + line.split("\t")[4] for line in not_run[1:]) == ["ssd2", "ssd3"]
    assert not any(":PROFILE_REPEAT " in name for name in _profile_statuses(outdir))
    report.render(outdir, notebooks=[report.NOTEBOOKS_DIR / "01_speedup.ipynb"],
                  parameters={"fast": "ssd", "slow": "ssd"}, html=False)
    notebook = (outdir / "report" / "notebooks" / "01_speedup.ipynb").read_text()
    assert "repeat(s) 2, 3 not run (the first repeat reached the time limit)" in notebook


@pytest.mark.beside
def test_hard_links_into_another_file_system_are_refused_before_any_run(env, tmp_path):
    outdir = Path("/dev/shm") / f"biossd-test-{os.getpid()}"
    try:
        proc = nextflow(env, tmp_path, "-profile", "test", "--outdir", str(outdir), "--publish_mode", "link",
                        check=False)
        assert proc.returncode != 0 and "is not on the file system of the work directory" in proc.stdout + proc.stderr
        assert not (outdir / "vm-ssd").exists() and not list((tmp_path / "work").glob("*/*/.command.run"))
    finally:
        shutil.rmtree(outdir, ignore_errors=True)  # Nextflow's own trace files, made at its start


def test_two_studies_on_one_device_measure_as_one_does_alone(env, tmp_path, result_set):
    """Two `-profile test` studies at once with their scratch on one device: their measured runs
    take turns (the host lock), and every write of theirs to the device — inputs, preparation,
    staging, publishing (hard links) — happens under the lock or outside any window. What the
    other study does on the device meanwhile (its Nextflow, its tasks starting) is named in each
    run's record as foreign and not counted: the requests a run counts (its own and the kernel's
    writeback) stay within the spread of the same run measured alone (the suite's study),
    widened by TWO_STUDIES_SLACK for the device's other traffic."""
    def counted(run_dir: Path) -> int:
        trace = manifest.read_manifest(run_dir)["collectors"]["blocktrace"]
        return trace["requests"] - trace["foreign"]["requests"]

    solo = [counted(result_set / layout.run_relpath(
        {"host": STUDY_HOST, "storage": "ssd", "tool": "samtools_sort", "mem": "64M", "scale": 1, "rep": rep}))
        for rep in (1, 2, 3)]
    only_ssd = tmp_path / "only-ssd.config"
    only_ssd.write_text("params { storage_classes = 'ssd'; emulate = null; repeats = 2; skip_report = true; "
                        "cachegrind_divisor = null }\n")
    scratch = tmp_path / "shared scratch"
    scratch.mkdir()
    exe = shutil.which("nextflow", path=env["PATH"])
    procs = []
    for name in ("a", "b"):
        (tmp_path / name).mkdir()
        procs.append(subprocess.Popen([exe, "run", str(REPO / "study"), "-profile", "test", "-c", str(only_ssd),
                                       "--outdir", str(tmp_path / name / "results"), "--host", STUDY_HOST,
                                       "--device_records", str(result_set), "--scratch_dir", str(scratch),
                                       "--publish_mode", "link"],
                                      cwd=tmp_path / name, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                                      text=True))
    outs = [p.communicate(timeout=900)[0] for p in procs]
    assert [p.returncode for p in procs] == [0, 0], "\n".join(o[-2000:] for o in outs)
    both = [counted(r) for name in ("a", "b") for r in features.find_run_dirs([tmp_path / name / "results"])]
    assert len(both) == 4
    low, high = min(solo) / TWO_STUDIES_SLACK, max(solo) * TWO_STUDIES_SLACK
    print(f"block requests alone {solo}, two studies at once {both}")
    assert all(low <= n <= high for n in both), (solo, both)
    assert list(scratch.iterdir()) == []


@pytest.mark.beside
def test_make_judges_a_results_link_by_the_folder_it_points_to(tmp_path):
    """`make run` publishes by hard link only into the work directory's file system; a RESULTS
    that is a symbolic link to another file system is judged by where it points (copies), not
    by the link itself (which would pick links the workflow then refuses)."""
    shm = Path("/dev/shm")
    if not shm.is_dir() or os.stat(shm).st_dev == os.stat(tmp_path).st_dev:
        pytest.fail("this test needs /dev/shm on a file system other than the temporary directory's")
    elsewhere = Path(tempfile.mkdtemp(dir=shm))
    try:
        (tmp_path / "away").symlink_to(elsewhere)
        (tmp_path / "real").mkdir()
        (tmp_path / "near").symlink_to(tmp_path / "real")
        mode = {name: subprocess.run(["make", "-s", "-f", str(REPO / "Makefile"), "--eval",
                                      f"show: ; @echo $(call publish_mode,{name})", "show"], cwd=tmp_path,
                                     capture_output=True, text=True, check=True).stdout.strip()
                for name in ("away", "near")}
        assert mode == {"away": "copy", "near": "link"}
    finally:
        shutil.rmtree(elsewhere)
