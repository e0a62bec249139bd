"""The four related experiments: their definitions and plans, the pieces
they are built from (inotify phases, the object store and its FUSE mount, a declared concurrent
group under the host lock), and each experiment run for real at its tiny size through the
workflow, with its table, notebook, figures and the supplement's section."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pandas as pd
import pytest

from alone import made_alone
from biossd import experiments
from biossd.core.owners import ProcessRef
from biossd.core.partial import INFIX as PARTIAL_INFIX
from biossd.core.units import parse_size
from biossd.experiments import kmer_io, object_store, planning, shared_device, sort_memory, spec, tables, task
from biossd.host import hostlock, objectstore
from biossd.host.cgroups import find_leftovers
from biossd.host.hdd import emulate
from biossd.measure import manifest, profile
from biossd.measure.filewatch import DirectoryWatch
from biossd.outputs import artefacts
from biossd.study import layout
from conftest import REPO, STUDY_HOST, nextflow

# -- definitions and plans (no run) ----------------------------------------------------------------


def test_every_experiment_is_defined_with_its_substitutes_named():
    for name in experiments.NAMES:
        spec = experiments.load_spec(name)
        assert spec["id"] == name and set(experiments.SIZES) <= set(spec["sizes"])
    assert experiments.substitutes(experiments.load_spec("object_store"))["megahit"] == "Trinity"
    assert experiments.substitutes(experiments.load_spec("sort_memory")) == {"sambamba_sort": "rocksort"}
    assert "rocksort" in experiments.load_spec("sort_memory")["not_available"]
    text = experiments.describe(experiments.load_spec("shared_device"))
    assert "SUBSTITUTE for SMUFIN" in text and "md" in text


def test_the_plan_puts_the_classes_side_by_side_with_layout_paths():
    plan = experiments.plan("sort_memory,shared_device", "tiny", ["ssd", "hdd"], "h1")
    tasks = plan["tasks"]
    assert [t["storage"] for t in tasks[:4]] == ["ssd", "hdd", "ssd", "hdd"]
    assert [t["order"] for t in tasks] == list(range(len(tasks)))
    first = tasks[0]
    assert first["publish"] == f"h1-ssd/experiments/sort_memory/{first['point']}/1"
    points = {t["point"] for t in tasks if t["experiment"] == "shared_device"}
    assert points == {"n2-two"}  # the tiny size names its allocation
    full = {p["id"] for p in experiments.module("shared_device").points({"instances": [1, 2, 4]})}
    assert full == {"n1-one", "n2-one", "n2-two", "n4-one", "n4-two", "n4-dedicated"}


def test_an_unknown_experiment_or_size_is_refused_with_the_choices(tmp_path):
    with pytest.raises(experiments.ExperimentError, match="unknown \\['bogus'\\].*sort_memory"):
        experiments.plan("bogus", "tiny", ["ssd"], "h")
    with pytest.raises(experiments.ExperimentError, match="--experiment_size 'huge'"):
        experiments.plan("kmer_io", "huge", ["ssd"], "h")
    (tmp_path / "kmer_io.yaml").write_text("id: kmer_io\norder: 3\nsource: a study\n")
    with pytest.raises(experiments.ExperimentError, match="kmer_io.yaml: field 'title' is missing"):
        experiments.load_spec("kmer_io", tmp_path)
    plan = experiments.plan_from_params({"experiment": "bogus", "storage_classes": "ssd"})
    assert plan["tasks"] == [] and any("--experiment" in p for p in plan["problems"])


@pytest.mark.parametrize("module", [sort_memory, object_store, kmer_io, shared_device],
                         ids=lambda m: m.__name__.rsplit(".", 1)[1])
def test_each_experiment_s_module_keeps_the_shared_contract(module):
    """Each experiment's logic is the module of its definition's name and has what the shared
    part calls: its points (distinct ids at every size), run, rows, summary, headline, COLUMNS."""
    name = module.__name__.rsplit(".", 1)[1]
    assert name in spec.NAMES and spec.module(name) is module
    for attr in ("points", "run", "rows", "summary", "headline", "COLUMNS"):
        assert callable(getattr(module, attr)) or attr == "COLUMNS", attr
    for size in spec.SIZES:
        points = module.points(spec.load_spec(name)["sizes"][size])
        assert points and len({p["id"] for p in points}) == len(points), size


def test_the_experiments_are_those_defined_in_seed_order():
    assert spec.NAMES == ("sort_memory", "object_store", "kmer_io", "shared_device")


def test_a_task_works_only_in_an_empty_scratch_of_its_own_and_writes_nothing_else(tmp_path):
    """The scratch is made and marked by its caller (biossd.measure.rundir.scratch); a task refuses
    a missing one or one holding anything but the mark, before it makes anything."""
    entry = planning.plan("sort_memory", "tiny", ["hdd"], "h1")["tasks"][0]
    with pytest.raises(spec.ExperimentError, match=r"--scratch .*/missing is not an empty directory"):
        task.run_task(entry, tmp_path / "missing", tmp_path / "out")
    (tmp_path / "used").mkdir()
    (tmp_path / "used" / "theirs").write_text("x")
    with pytest.raises(spec.ExperimentError, match=r"--scratch .*/used is not an empty directory"):
        task.run_task(entry, tmp_path / "used", tmp_path / "out")
    assert sorted(p.name for p in tmp_path.iterdir()) == ["used"] and (tmp_path / "used" / "theirs").read_text() == "x"


def test_a_task_s_runs_carry_the_study_s_labels_and_the_point_s(tmp_path):
    entry = planning.plan("sort_memory", "tiny", ["hdd"], "h1")["tasks"][0]
    ctx = task.Task(entry, spec.load_spec("sort_memory"), tmp_path / "scratch", tmp_path / "out")
    labels = ctx.labels("samtools_sort", phase="merge")
    assert {k: labels[k] for k in ("host", "storage", "tool", "experiment", "point", "rep", "phase")} == {
        "host": "h1", "storage": "hdd", "tool": "samtools_sort", "experiment": "sort_memory",
        "point": entry["point"], "rep": "1", "phase": "merge"}
    assert ctx.cap_bytes == parse_size(ctx.cap) and ctx.timeout_s > 0
    assert ctx.input_dir == tmp_path / "scratch" / task.INPUT_DIR
    request = ctx.request(["true"], "run1", "samtools_sort")
    assert request.out_dir == tmp_path / "out" / "run1" and request.mem_bytes == ctx.cap_bytes


def test_shared_device_placements():
    place = experiments.module("shared_device").placement
    assert place(4, "one") == ["A"] * 4
    assert place(4, "two") == ["A", "B", "A", "B"]
    assert place(4, "dedicated") == ["A", "B", "B", "B"]


# -- the pieces, for real ------------------------------------------------------------------------------


def test_the_inotify_watch_times_creation_writes_and_reads_in_subdirectories(tmp_path):
    with DirectoryWatch(tmp_path) as watch:
        (tmp_path / "a").write_text("x" * 100)
        sub = tmp_path / "sub"
        sub.mkdir()
        time.sleep(0.2)  # the subdirectory's watch is added by the watch's thread
        (sub / "b").write_text("y")
        time.sleep(0.05)
        assert (tmp_path / "a").read_text().startswith("x")
        (sub / "b").unlink()
        time.sleep(0.2)
    assert set(watch.files) == {"a", "sub/b"} and watch.peak_files == 2 and not watch.overflowed
    a = watch.files["a"]
    assert a.created_s is not None and a.last_close_write_s >= a.created_s and a.last_access_s is not None
    span = watch.read_span(["a"])
    assert span is not None and span[1] >= a.last_close_write_s
    assert watch.files["sub/b"].deleted_s is not None
    assert watch.read_span(["never"]) is None


@pytest.mark.integration
def test_a_group_member_runs_only_while_its_leader_holds_the_host_lock(tmp_path, root_required):
    """A run that names a concurrent group is refused unless that group's leader holds the lock;
    under it, two members run side by side and record the group."""
    request = profile.ProfileRequest(argv=["true"], out_dir=tmp_path / "r0", mem_bytes=None, group="g-test",
                                     blocktrace="off", perf="off", drop_caches=False)
    with pytest.raises(profile.ProfileError, match="concurrent group 'g-test'.*not by this group's leader"):
        profile.run(request)
    assert not (tmp_path / "r0").exists()
    with hostlock.HostLock("test leader", **{hostlock.GROUP_KEY: "g-test"}):
        members = [subprocess.Popen([sys.executable, "-m", "biossd", "profile", "--group", "g-test", "--mem", "none",
                                     "--blocktrace", "off", "--perf", "off", "--no-drop-caches", "--out",
                                     str(tmp_path / f"m{i}"), "--", "sleep", "1"]) for i in range(2)]
        assert [m.wait(timeout=60) for m in members] == [0, 0]
    bodies = [manifest.read_manifest(tmp_path / f"m{i}") for i in range(2)]
    assert max(b["started_at"] for b in bodies) < min(b["ended_at"] for b in bodies), "the members did not overlap"
    for body in bodies:
        assert body["host_lock"]["mode"] == "group-member" and body["host_lock"][hostlock.GROUP_KEY] == "g-test"


@pytest.mark.integration
def test_the_object_store_serves_a_mounted_bucket_and_leaves_nothing(tmp_path, root_required):
    data = tmp_path / "reads.fq"
    data.write_bytes(os.urandom(3 << 20))
    with objectstore.ObjectStore(tmp_path / "objects", tmp_path / "mnt") as store:
        store.put(data)
        mount = store.mount()
        assert os.path.ismount(mount) and (mount / "reads.fq").read_bytes() == data.read_bytes()
        server = store.server.pid
        assert (tmp_path / "objects" / "reads" / "reads.fq").is_file()  # on the class's device
    assert not os.path.ismount(tmp_path / "mnt")
    assert not Path(f"/proc/{server}").exists(), "the server was not stopped (and reaped)"
    assert not store.state_dir.exists()


@pytest.mark.integration
def test_the_object_store_answers_only_its_own_signed_requests(tmp_path, root_required):
    """The server takes only requests signed with its random key: another local user (nobody)
    gets 403 on its port, a name with '..' never reaches it, and its key files are private."""
    import stat

    (tmp_path / "x").write_bytes(b"data")
    with objectstore.ObjectStore(tmp_path / "objects", tmp_path / "mnt") as store:
        store.put(tmp_path / "x")
        assert stat.S_IMODE(store.state_dir.stat().st_mode) == 0o700
        assert stat.S_IMODE((store.state_dir / "s3proxy.conf").stat().st_mode) == 0o600
        for method, path in (("PUT", f"/{store.bucket}/intruder"), ("GET", f"/{store.bucket}/x")):
            probe = ("import sys, urllib.request, urllib.error\n"
                     f"req = urllib.request.Request({store.endpoint + path!r}, data=b'x' if {method!r} == 'PUT' else None,"
                     f" method={method!r})\n"
                     "try:\n    urllib.request.urlopen(req, timeout=10); print(200)\n"
                     "except urllib.error.HTTPError as e:\n    print(e.code)\n")
            code = subprocess.run(["setpriv", "--reuid=65534", "--regid=65534", "--clear-groups", "/usr/bin/python3", "-c",
                                   probe], capture_output=True, text=True, timeout=60).stdout.strip()
            assert code == "403", (method, code)
        with pytest.raises(objectstore.ObjectStoreError, match="no '..'"):
            store.put(tmp_path / "x", key="../../etc/passwd")
        mount = store.mount()
        assert stat.S_IMODE((store.state_dir / "s3fs.passwd").stat().st_mode) == 0o600
        assert (mount / "x").read_bytes() == b"data"
        assert not (tmp_path / "objects" / store.bucket / "intruder").exists()
    with pytest.raises(objectstore.ObjectStoreError, match="bucket '..'"):
        objectstore.ObjectStore(tmp_path / "o2", tmp_path / "m2", bucket="..")


@pytest.mark.integration
def test_an_object_store_whose_maker_was_killed_is_a_leftover_cleanup_removes(tmp_path, root_required, biossd):
    script = ("import sys, time; from pathlib import Path; from biossd.host.objectstore import ObjectStore\n"
              f"s = ObjectStore(Path({str(tmp_path / 'o')!r}), Path({str(tmp_path / 'm')!r})).__enter__(); s.mount()\n"
              "print(s.server.pid, flush=True); time.sleep(600)\n")
    maker = subprocess.Popen([sys.executable, "-c", script], stdout=subprocess.PIPE, text=True)
    server = int(maker.stdout.readline())
    maker.kill()
    maker.wait()
    assert os.path.ismount(tmp_path / "m") and Path(f"/proc/{server}").exists()
    assert "object-store" in biossd("doctor", check=False).stdout
    biossd("cleanup")
    assert not os.path.ismount(tmp_path / "m")
    assert not ProcessRef.of(server).alive() and objectstore.find_leftovers() == []


@pytest.mark.integration
def test_an_interrupted_task_leaves_nothing(tmp_path, root_required, biossd):
    """SIGTERM during a shared_device task (two emulated devices, nested loop devices, a group of
    members) removes every device, mount, cgroup and the partial task directory."""
    plan = experiments.plan("shared_device", "tiny", ["hdd"], "h")
    task = next(t for t in plan["tasks"] if t["point"] == "n2-two")
    (tmp_path / "task.json").write_text(json.dumps(task))
    before_loops = subprocess.run(["losetup", "-a"], capture_output=True, text=True).stdout
    before_cgroups = set(find_leftovers())
    proc = subprocess.Popen([sys.executable, "-m", "biossd", "experiment", "run",
                             "--task", f"@{tmp_path / 'task.json'}",
                             "--storage", '{"emulated": true, "profile": "seagate-barracuda-7200"}',
                             "--scratch", str(tmp_path / "scratch"), "--out", str(tmp_path / "out")],
                            stderr=subprocess.PIPE, text=True)
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline and not list(tmp_path.glob(".out" + PARTIAL_INFIX + "*/.inst2.log")):
        time.sleep(0.02)  # until the group's members are started
    assert proc.poll() is None, "the task ended before the group started"
    proc.send_signal(signal.SIGTERM)
    _, err = proc.communicate(timeout=120)
    assert proc.returncode == 128 + signal.SIGTERM, err
    assert "interrupted by signal 15" in err
    assert not (tmp_path / "out").exists() and not list(tmp_path.glob(".out" + PARTIAL_INFIX + "*"))
    assert not list(tmp_path.glob("scratch*")), "the scratch (named with the pid) is removed"
    assert subprocess.run(["losetup", "-a"], capture_output=True, text=True).stdout == before_loops
    assert set(find_leftovers()) == before_cgroups
    assert not [d for d in emulate.all_states() if str(tmp_path) in emulate.status_of(d)["mount"]]
    assert hostlock.held_by() is None


#: How soon a member stops after its leader died: its teardown, well under the sort's own time.
MEMBER_STOP_S = 1.0


@pytest.mark.integration
def test_a_killed_leader_s_members_die_with_it(tmp_path, root_required, biossd):
    """SIGKILL of a shared_device task while its group runs: no member (biossd profile --group)
    outlives it by a second, and `biossd cleanup` then removes the rest — nested emulated disks,
    the task's partial directory — and exits 0. (At the tiny size the members also end because
    their disks' servers die with the leader; tests/test_host_lock.py tests --die-with-parent
    itself with a member that would run on.)"""
    plan = experiments.plan("shared_device", "tiny", ["hdd"], "h")
    task = next(t for t in plan["tasks"] if t["point"] == "n2-two")
    (tmp_path / "task.json").write_text(json.dumps(task))
    before_loops = subprocess.run(["losetup", "-a"], capture_output=True, text=True).stdout
    proc = subprocess.Popen([sys.executable, "-m", "biossd", "experiment", "run",
                             "--task", f"@{tmp_path / 'task.json'}",
                             "--storage", '{"emulated": true, "profile": "seagate-barracuda-7200"}',
                             "--scratch", str(tmp_path / "scratch"), "--out", str(tmp_path / "out")],
                            stderr=subprocess.DEVNULL)
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline and not list(tmp_path.glob(".out" + PARTIAL_INFIX + "*/.inst2.log")):
        time.sleep(0.02)  # until the group's members are started
    assert proc.poll() is None, "the task ended before the group started"
    proc.kill()
    proc.wait()
    token = f"shared_device-{proc.pid}-"

    def members() -> list[int]:
        found = []
        for entry in Path("/proc").iterdir():
            try:
                if entry.name.isdigit() and token.encode() in (entry / "cmdline").read_bytes():
                    found.append(int(entry.name))
            except OSError:
                pass
        return found

    # Each member stops at once (SIGTERM from the kernel), not when its sort would have ended.
    deadline = time.monotonic() + MEMBER_STOP_S
    while members() and time.monotonic() < deadline:
        time.sleep(0.05)
    assert members() == [], f"a member outlived its leader by {MEMBER_STOP_S} s"
    cleanup = biossd("cleanup", check=False)
    assert cleanup.returncode == 0, cleanup.stdout + cleanup.stderr
    assert subprocess.run(["losetup", "-a"], capture_output=True, text=True).stdout == before_loops
    assert not [d for d in emulate.all_states() if str(tmp_path) in emulate.status_of(d)["mount"]]
    assert hostlock.held_by() is None and not list(tmp_path.glob(".out" + PARTIAL_INFIX + "*"))


# -- every experiment for real, through the workflow ------------------------------------------------------


@pytest.fixture(scope="module")
@made_alone
def experiment_results(env, tmp_path_factory, root_required, study_results):
    launch = tmp_path_factory.mktemp("experiments")
    outdir = launch / "results"
    before = set(find_leftovers())
    # The emulated HDD class only: the tiny size's purpose here is each experiment's whole path (the
    # emulated class is the harder one: disk servers, nested devices); `-profile test` at the test
    # size runs both classes (README). The report is rendered by the test below. The emulated
    # HDD's record is the suite's study's, checked and reused (--device_records), not measured again.
    nextflow(env, launch, "-profile", "test", "--experiment", "all", "--experiment_size", "tiny",
             "--storage_classes", "hdd", "--device_records", str(study_results[1]), "--skip_report", "true",
             "--outdir", str(outdir), "--host", STUDY_HOST)
    reused = json.loads((outdir / layout.device_record_relpath(STUDY_HOST, "hdd")).read_text())["reused"]
    assert reused["from"] == str(study_results[1] / layout.device_record_relpath(STUDY_HOST, "hdd"))
    assert set(find_leftovers()) == before, "the experiments left cgroups behind"
    assert not [d for d in emulate.all_states() if str(launch) in emulate.status_of(d)["mount"]]
    assert objectstore.find_leftovers() == [] and not list(objectstore.STATE_ROOT.glob("*"))
    return outdir


@pytest.mark.integration
def test_each_experiment_ran_every_planned_task_with_outcomes(experiment_results):
    plan = experiments.plan("all", "tiny", ["hdd"], STUDY_HOST)
    for planned in plan["tasks"]:
        record = json.loads((experiment_results / planned["publish"] / experiments.POINT_RECORD).read_text())
        assert record["task"]["point"] == planned["point"] and record["runs"], planned["publish"]
        for run in record["runs"]:
            body = manifest.read_manifest(experiment_results / planned["publish"] / run)
            assert body["outcome"] in manifest.OUTCOMES and body["labels"]["experiment"] == planned["experiment"]
            assert body["collectors"]["blocktrace"]["ran"], (planned["publish"], run)
    for name in experiments.NAMES:
        table = pd.read_csv(experiments.table_path(experiment_results, name))
        expected = sum(t["values"].get("instances", 1) for t in plan["tasks"] if t["experiment"] == name)
        assert len(table) == expected, name
        assert set(table["storage"]) == {"hdd"} and set(table["substitute_of"].dropna()) <= {
            "rocksort", "Trinity", "SMUFIN"}
    assert not (experiment_results / "features.csv").exists(), "experiment runs are not the study's run table"
    held = json.loads((experiment_results / "pipeline_info" / "plan.json").read_text())
    assert (held["experiment"], held["experiment_size"]) == ("all", "tiny"), "the folder names the plan it holds"


@pytest.mark.beside
@pytest.mark.integration
def test_the_experiments_measured_what_they_say(experiment_results):
    sort = pd.read_csv(experiments.table_path(experiment_results, "sort_memory"))
    # Each row carries its size, input and cap (sambamba's own cap: its runtime alone needs more).
    assert set(sort["size"]) == {"tiny"} and set(sort["input_size"]) == {"8M"}
    assert sort.groupby("sorter")["cap"].unique().map(list).to_dict() == {"samtools_sort": ["16M"],
                                                                          "sambamba_sort": ["96M"]}
    samtools = sort[sort["sorter"] == "samtools_sort"]
    assert (samtools["temp_files"] == samtools["reported_temp_files"]).all(), "inotify and samtools disagree"
    small, large = (samtools[samtools["sort_mem"] == m]["temp_files"].mean() for m in ("1M", "4M"))
    assert small > large > 0
    # (the table's CSV keeps 6 significant digits)
    assert (sort["split_s"] + sort["merge_s"] - sort["runtime_s"]).abs().max() < 1e-3
    store = pd.read_csv(experiments.table_path(experiment_results, "object_store"))
    assert store["read_mbs"].gt(0).all() and (store["read_phase_s"] < store["runtime_s"]).all()
    kmer = pd.read_csv(experiments.table_path(experiment_results, "kmer_io"))
    pages = kmer[kmer["table_fraction_of_cap"] > 1]
    fits = kmer[kmer["table_fraction_of_cap"] < 1]
    # Pages read back from swap (a run killed at its time limit has no trustworthy fault count, and
    # a table that fits may still be swapped out once while the input fills the cap).
    assert pages["swap_ins"].min() > fits["swap_ins"].max(), "the table above the cap did not page"
    shared = pd.read_csv(experiments.table_path(experiment_results, "shared_device"))
    pair = shared[shared["instances"] == 2]
    assert (pair["concurrent_with"] != "none").all() and shared["seq_write_ratio"].between(0, 1).all()
    for run_dir in pair["run_dir"]:
        body = manifest.read_manifest(experiment_results / run_dir)
        assert body["host_lock"]["mode"] == "group-member"
        assert body["labels"]["concurrent_group"] == body["host_lock"][hostlock.GROUP_KEY]


@pytest.mark.beside
@pytest.mark.integration
def test_the_experiments_report_is_deterministic_and_in_the_supplement(experiment_results, biossd, tmp_path):
    """papermill renders the four notebooks (and no study notebook: these results hold no study
    run); the same tables drawn again in this process give the same bytes; the supplement's
    section names the experiments, their substitutes and their floats."""
    from biossd.outputs import supplement

    biossd("report", str(experiment_results), timeout=600)
    report = experiment_results / "report"
    files = {f for name in experiments.NAMES for x in artefacts.of_experiment(name) for f in x.files}
    assert all((report / f).is_file() for f in files)
    assert not (report / "figures" / "fig02_speedup.png").exists(), "no study runs, no study figures"
    again = {"figures": tmp_path / "figures", "tables": tmp_path / "tables"}
    for name in experiments.NAMES:
        table = experiments.load_table([experiment_results], name)
        for x in artefacts.of_experiment(name):
            artefacts.make_experiment(x.stem, table, again)
    for f in files:
        assert (tmp_path / f).read_bytes() == (report / f).read_bytes(), f"{f} differs between two renders"
    tex = supplement.experiments_tex([experiment_results], report)
    for phrase in ("Sort memory and temporary files", "After DNAnexus, samtools rocksort",
                   "sambamba sort (a substitute for rocksort)",
                   "MEGAHIT (a substitute for Trinity)", "Fig. S5 (biossd)", "report/figures/figs2_sort_memory.pdf",
                   "report/tables/tables4_kmer_io.tex", "tc netem"):
        assert phrase in tex, phrase
    assert "Seed 00" not in tex, "a reader meets each study by its name, not the project's seed number"
    executed = json.loads((report / "notebooks" / "07_sort_memory.ipynb").read_text())
    text = "".join("".join(o.get("text", "")) for c in executed["cells"] for o in c.get("outputs", []))
    assert "samtools_sort on hdd: -m 1M spilled" in text and "SUBSTITUTE for rocksort" in text


@pytest.mark.beside
@pytest.mark.integration
def test_the_crate_of_an_experiments_result_set_lists_each_table_and_task(experiment_results, biossd):
    """An experiments-only result set (no features table) is citable: its RO-Crate lists each
    experiment's table and every task directory with the sha256 of its file listing."""
    from biossd.outputs import crate

    body = json.loads(Path(biossd("crate", str(experiment_results)).stdout.strip()).read_text())
    graph = {e["@id"]: e for e in body["@graph"]}
    action = next(e for e in body["@graph"] if e["@type"] == "CreateAction")
    for name in experiments.NAMES:
        table = f"{layout.EXPERIMENTS_DIR}/{name}.csv"
        assert graph[table]["sha256"] == crate.file_sha256(experiment_results / table)
        points = experiments.point_dirs([experiment_results], name)
        assert points, name
        for point in points:
            rel = point.relative_to(experiment_results).as_posix() + "/"
            assert graph[rel]["@type"] == "Dataset" and graph[rel]["sha256"] == crate.directory_sha256(point)
            assert {"@id": rel} in action["result"] and rel + experiments.POINT_RECORD in graph
    description = graph["./"]["description"]
    assert "related experiments sort_memory, object_store, kmer_io, shared_device" in description
    assert "features table" not in description and "no study runs" in description, description


def test_the_experiment_notebooks_are_clean_and_make_their_registered_artefacts():
    import re

    made_call = re.compile(r'artefacts\.make_experiment\("(\w+)"')
    for name, notebook in artefacts.EXPERIMENT_NOTEBOOKS.items():
        nb = json.loads((REPO / "notebooks" / "experiments" / f"{notebook}.ipynb").read_text())
        code = [c for c in nb["cells"] if c["cell_type"] == "code"]
        assert "parameters" in code[0]["metadata"].get("tags", []) and "results_dirs" in "".join(code[0]["source"])
        assert all(not c.get("outputs") and c.get("execution_count") is None for c in code)
        assert not any("def " in "".join(c["source"]) for c in code)
        made = made_call.findall("\n".join("".join(c["source"]) for c in code))
        assert sorted(made) == sorted(x.stem for x in artefacts.of_experiment(name))


def test_runs_that_were_not_ok_are_named_with_what_the_tool_said(tmp_path):
    """A failed run's row keeps the last line its tool wrote to stderr; the headline's sentence
    groups the runs that were not ok and quotes it (sambamba refuses -m below its buffer size)."""
    log = tmp_path / "stderr.log"
    log.write_text("sambamba 1.0.0\n\nsambamba-sort: Buffer size must be >= 4096 bytes\n\n")
    said = tables.last_words(log)
    assert said == "sambamba-sort: Buffer size must be >= 4096 bytes"
    table = pd.DataFrame({"sorter": ["a", "a", "a", "b"], "sort_mem": ["1M", "1M", "4M", "1M"],
                          "storage": ["hdd", "ssd", "hdd", "hdd"], "outcome": ["failed", "failed", "ok", "timeout"],
                          "failure": [said, said, None, None]})
    assert experiments.not_ok(table, ["sorter", "sort_mem"]) == (
        f"Not ok: a 1M on hdd, ssd (2 run(s) failed: '{said}'); b 1M on hdd (1 run(s) timeout).")
    assert experiments.not_ok(table[table["outcome"] == "ok"], ["sorter"]) == ""


def test_a_summary_never_averages_points_of_different_sizes():
    """Rows of two sizes of one experiment (two result sets read together) stay apart in the
    summary, and the headline speaks of each size on its own."""
    def rows(size, input_size, runtime_s):
        return [{"size": size, "input_size": input_size, "cap": "32M", "storage": "hdd", "location": loc,
                 "outcome": "ok", "runtime_s": runtime_s * k, "read_phase_s": 0.5 * k, "rest_s": 0.5, "read_mbs": 10.0,
                 "Riops": 1.0, "Rsize": 4.0} for loc, k in (("local", 1.0), ("object_store", 2.0))]
    table = pd.DataFrame(rows("tiny", "8M", 1.0) + rows("test", "48M", 10.0))
    summary = experiments.module("object_store").summary(table)
    assert len(summary) == 4 and sorted(summary["runtime_s"]) == [1.0, 2.0, 10.0, 20.0]
    assert summary["vs_local"].tolist() == [1.0, 2.0, 1.0, 2.0]
    said = experiments.headline("object_store", table)
    assert said.count("At size") == 2 and "size tiny, input_size 8M" in said and "20.00 s" in said


@pytest.mark.integration
def test_a_second_sigterm_while_the_object_store_closes_leaves_nothing(tmp_path, root_required):
    """The teardown holds signals: a SIGTERM that arrives while the mount is gone but the server
    still stops does not cut the teardown short — no s3proxy, no s3fs mount, no state."""
    script = ("import signal, sys, time; from pathlib import Path; from biossd.host.objectstore import ObjectStore\n"
              "def stop(signum, frame): raise KeyboardInterrupt(signum)\n"
              "signal.signal(signal.SIGTERM, stop)\n"
              f"with ObjectStore(Path({str(tmp_path / 'o')!r}), Path({str(tmp_path / 'm')!r})) as s:\n"
              "    s.mount(); print(s.server.pid, s.state_dir, flush=True); time.sleep(600)\n")
    maker = subprocess.Popen([sys.executable, "-c", script], stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
    pid, state_dir = maker.stdout.readline().split()
    server = ProcessRef.of(int(pid))
    maker.send_signal(signal.SIGTERM)
    deadline = time.monotonic() + 30
    while os.path.ismount(tmp_path / "m") and time.monotonic() < deadline:
        time.sleep(0.005)
    server_was_up = server.alive()
    maker.send_signal(signal.SIGTERM)  # mid-teardown: the mount is gone, the server not yet
    maker.wait(timeout=60)
    assert server_was_up, "the teardown ended before the second signal; the test proved nothing"
    assert not os.path.ismount(tmp_path / "m") and not server.alive() and not Path(state_dir).exists()
    assert objectstore.find_leftovers() == []
