"""-profile slurm for real: a one-node SLURM cluster on this machine (`biossd slurm up`,
partitions fast and slow), the study submitted through it, the outcomes SLURM causes (its cgroup's
OOM kill, its time limit) recorded as oom and timeout, and the host as it was afterwards."""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pandas as pd
import pytest

from alone import made_alone
from biossd.features import extract
from biossd.host import hostlock
from biossd.host.cgroups import find_leftovers
from biossd.host.hdd import emulate
from biossd.host.slurm import cluster as slurm
from biossd.measure import manifest
from biossd.study.plan import matrix
from conftest import STUDY_HOST, nextflow

pytestmark = pytest.mark.integration

#: SLURM ends a job over its limit at the first check (every 30 s) after the limit, a whole minute:
#: 60 to 90 s after it started.
SLURM_LIMIT_EARLIEST_S, SLURM_LIMIT_LATEST_S = 60, 90
#: How far into the time-limit job its profile starts: LATE_PROFILE_MARGIN_S before SLURM can end
#: the job, room to wait for another run's host lock (the longest a test beside it holds is ~10 s).
LATE_PROFILE_MARGIN_S = 20
LATE_PROFILE_S = SLURM_LIMIT_EARLIEST_S - LATE_PROFILE_MARGIN_S
#: The time-limit job's memory: SLURM gives a job without --mem the whole node, and the memory job
#: would then wait for it.
LATE_JOB_MEMORY = "200M"
#: Nextflow polls SLURM every 5 s by default; once a second keeps the test short. No cachegrind
#: probe (the smallest study: one run per class).
FAST_POLL = "executor { pollInterval = '1 sec'; queueStatInterval = '2 sec' }\nparams.cachegrind_divisor = null\n"


@pytest.fixture(scope="module")
@made_alone
def cluster(env, root_required, tmp_path_factory):
    """The cluster, up for this module; afterwards no daemon, cgroup or file of it is left."""
    before = set(find_leftovers())
    cgroups_before = set(slurm.CGROUP_ROOT.glob("*/slurm*"))
    # In this process, so that its daemons are this process's children and are reaped at the end.
    from biossd.core.owners import ProcessRef

    slurm.up(owner=ProcessRef.current("pytest"))
    state = slurm.load()
    cluster_env = {**env, **slurm.env()}
    config = tmp_path_factory.mktemp("slurm-config") / "fast-poll.config"
    config.write_text(FAST_POLL)
    yield (handle := {"env": cluster_env, "state": state, "config": config, "down": None})
    # The module's last test may have taken it down itself (with scancel failing).
    said = handle["down"] if handle["down"] is not None else slurm.down()
    assert any("stopped slurmd" in step for step in said)
    assert not slurm.STATE_DIR.exists()
    for record in state["daemons"].values():
        assert not Path(f"/proc/{record['pid']}").exists() or not _same_process(record)
    assert set(slurm.CGROUP_ROOT.glob("*/slurm*")) == cgroups_before, "SLURM's cgroup directories stayed"
    assert set(find_leftovers()) == before


def _running(pid: int) -> bool:
    """Whether ``pid`` runs (a zombie waiting for its new parent to reap it does not)."""
    try:
        return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0] != "Z"
    except OSError:
        return False


def _same_process(record: dict) -> bool:
    from biossd.core.owners import ProcessRef

    ref = ProcessRef.from_record(record)
    return bool(ref and ref.alive())


def sbatch(cluster, script: str, *options: str, cwd: Path) -> str:
    """Submit a batch script and wait for the job to leave the queue; its id."""
    return wait_for(cluster, submit(cluster, script, *options, cwd=cwd))


def submit(cluster, script: str, *options: str, cwd: Path) -> str:
    """Submit a batch script (``cwd``/job.sh); the job's id."""
    path = cwd / "job.sh"
    path.write_text("#!/bin/bash\nset -eu\n" + script)
    out = subprocess.run(["sbatch", "--parsable", *options, str(path)], capture_output=True, text=True,
                         env=cluster["env"], cwd=cwd, timeout=60)
    assert out.returncode == 0, out.stderr
    return out.stdout.strip().split(";")[0]


def wait_for(cluster, job: str) -> str:
    """Wait for the job to leave the queue; its id."""
    deadline = time.monotonic() + 300
    while time.monotonic() < deadline:
        q = subprocess.run(["squeue", "-h", "-j", job, "-o", "%T"], capture_output=True, text=True, env=cluster["env"])
        if not q.stdout.strip():
            return job
        time.sleep(1)
    raise AssertionError(f"job {job} did not end within 300 s")


def job_state(cluster, job: str) -> str:
    """The job's final state from the cluster's completion log (jobcomp/filetxt)."""
    log = Path(cluster["state"]["dir"]) / "jobcomp.log"
    for line in log.read_text().splitlines():
        fields = dict(part.split("=", 1) for part in line.split() if "=" in part)
        if fields.get("JobId") == job:
            return fields.get("JobState", "")
    return ""


def test_the_cluster_has_a_partition_per_class_and_enforces_memory(cluster):
    status = json.loads(subprocess.run([sys.executable, "-m", "biossd", "slurm", "status"], capture_output=True,
                                       text=True, env=cluster["env"], check=True).stdout)
    assert status["healthy"] and status["partitions"] == ["fast", "slow"]
    assert status["memory_enforced_by"].startswith("SLURM task/cgroup")
    sinfo = subprocess.run(["sinfo", "-h", "-o", "%P %N"], capture_output=True, text=True, env=cluster["env"]).stdout
    assert {line.split()[0].rstrip("*") for line in sinfo.splitlines()} == {"fast", "slow"}


@pytest.mark.beside
@pytest.mark.waits
def test_a_job_over_its_memory_is_recorded_oom_and_over_its_time_timeout(cluster, tmp_path):
    """SLURM's cgroup kills the tool of a profiled run over --mem: outcome oom (counted in the
    job's cgroup). SLURM's time limit ends a profiled run: outcome timeout, source SLURM."""
    biossd = f"{sys.executable} -m biossd"
    # The time-limit job first. SLURM ends it a whole minute after it starts (its limit, checked
    # every 30 s), so the memory job runs meanwhile, and its profile starts LATE_PROFILE_S in: it
    # holds the host lock, which the other worker's runs wait for, only for the job's last seconds.
    # exec: the batch shell would die of SLURM's SIGTERM first, and the job would end with it.
    (tmp_path / "late-job").mkdir()
    late = submit(cluster, f"sleep {LATE_PROFILE_S}\n"
                  f"exec {biossd} profile --mem none --blocktrace off --perf off --out {tmp_path}/late -- sleep 600\n",
                  "-p", "slow", "--time=0:20", f"--mem={LATE_JOB_MEMORY}", cwd=tmp_path / "late-job")
    hog = "import time; b = bytearray(600 << 20); b[::4096] = b'x' * len(b[::4096]); time.sleep(5)"
    oom = sbatch(cluster, textwrap.dedent(f"""\
        exec {biossd} profile --cap-backend external --mem 200M --blocktrace off --perf off --out {tmp_path}/oom \\
            -- {sys.executable} -c "{hog}"
        """), "-p", "fast", "--mem=300M", cwd=tmp_path)
    body = manifest.read_manifest(tmp_path / "oom")
    assert body["outcome"] == "oom", (body["outcome"], body["memory_cap"])
    cap = body["memory_cap"]
    assert cap["backend"] == "external" and cap["oom_kills"] >= 1
    assert cap["enforced_limit_bytes"] == 300 << 20, cap
    assert job_state(cluster, oom) in ("COMPLETED", "OUT_OF_MEMORY")
    wait_for(cluster, late)
    body = manifest.read_manifest(tmp_path / "late")
    assert body["outcome"] == "timeout" and body["timeout_source"] == "the SLURM job's time limit"
    assert 0 < body["wall_s"] <= SLURM_LIMIT_LATEST_S, body["wall_s"]  # started LATE_PROFILE_S in: room for delays
    assert job_state(cluster, late) == "TIMEOUT"


def test_an_unknown_partition_or_a_class_without_one_fails_before_any_job(cluster):
    """The workflow's gate (`biossd study plan`, whose problems stop it before any task:
    test_study_workflow.py), asked with the cluster's SLURM_CONF: nothing is submitted."""
    log = Path(cluster["state"]["dir"]) / "jobcomp.log"
    jobs_before = log.read_text() if log.exists() else ""
    base = {"executor": "slurm", "storage_classes": "ssd,hdd", "emulate": "hdd=seagate-barracuda-7200",
            "tools": "samtools_sort", "mem_caps": "64M", "scales": "1", "repeats": 1, "host": "shost"}
    for partitions, problem in (("ssd=fast,hdd=bogus", "partition 'bogus' does not exist; the cluster has fast, slow"),
                                ("ssd=fast", "class 'hdd' has no partition")):
        out = subprocess.run([sys.executable, "-m", "biossd", "study", "plan", "--params",
                              json.dumps({**base, "slurm_partitions": partitions})],
                             capture_output=True, text=True, env=cluster["env"], timeout=120)
        plan = json.loads(out.stdout)
        assert any(problem in p for p in plan["problems"]) and plan["tasks"] == [], plan["problems"]
    ok = subprocess.run([sys.executable, "-m", "biossd", "study", "plan", "--params",
                         json.dumps({**base, "slurm_partitions": "ssd=fast,hdd=slow"})],
                        capture_output=True, text=True, env=cluster["env"], timeout=120)
    assert not [p for p in json.loads(ok.stdout)["problems"] if "slurm" in p]
    assert (log.read_text() if log.exists() else "") == jobs_before, "a job was submitted"


def test_the_study_runs_through_slurm_like_the_local_executor(cluster, tmp_path, study_results):
    """-profile test,slurm at the smallest size: every profiled run is a SLURM job on its class's
    partition, capped by SLURM (recorded external with the limit its cgroup enforced); the result
    set has every run the plan has, as the local executor's does, and the same run table. The
    devices' records are the local study's, checked and reused by a SLURM job."""
    outdir = tmp_path / "results"
    args = ("--repeats", "1", "--device_records", str(study_results[1]), "--host", STUDY_HOST,
            "--skip_report", "true")
    nextflow(cluster["env"], tmp_path, "-profile", "test,slurm", "-c", str(cluster["config"]),
             "--slurm_partitions", "ssd=fast,hdd=slow", "--outdir", str(outdir), *args)
    plan = matrix.plan({"tools": "samtools_sort", "mem_caps": "64M", "scales": "1", "repeats": 1,
                        "storage_classes": "ssd,hdd", "emulate": "hdd=seagate-barracuda-7200", "host": STUDY_HOST,
                        "input_size": "8M", "tool_caps": "gatk_*=512M"}, stub=True)
    expected = {t["publish"] for t in plan.tasks()}
    found = {str(p.relative_to(outdir)) for p in extract.find_run_dirs([outdir])}
    assert found == expected
    table = pd.read_csv(outdir / "features.csv")
    assert list(table.columns) == list(extract.TABLE_COLUMNS) and len(table) == len(expected)
    assert set(table["outcome"]) == {"ok"} and set(table["cap_mechanism"]) == {"external"}
    jobs = [dict(p.split("=", 1) for p in line.split() if "=" in p)
            for line in (Path(cluster["state"]["dir"]) / "jobcomp.log").read_text().splitlines()]
    profiled = [j for j in jobs if "PROFILE" in j.get("Name", "")]
    measured = [j for j in jobs if "CHARACTERIZE" in j.get("Name", "")]
    assert [(j["Partition"], j["JobState"]) for j in measured] == [("fast", "COMPLETED")], "the devices' job"
    assert {(("hdd" if "hdd" in j["Name"] else "ssd"), j["Partition"]) for j in profiled} == {("ssd", "fast"),
                                                                                              ("hdd", "slow")}
    for rel in expected:
        body = manifest.read_manifest(outdir / rel)
        cap = body["memory_cap"]
        assert cap["backend"] == "external" and cap["limit_bytes"] == 64 << 20
        assert cap["enforced_limit_bytes"] == (64 << 20) + matrix.PROFILER_JOB_OVERHEAD_BYTES
    assert not [d for d in emulate.all_states() if str(tmp_path) in emulate.status_of(d)["mount"]]


def test_your_pipeline_on_slurm_is_profiled_on_the_node_that_runs_each_task(cluster, tmp_path):
    """tests/pipelines/spill with the slurm executor under the profiling config: every task a SLURM
    job, profiled on its node side by side with the run's other tasks there (holding the host lock
    shared: no leader outlives a job), capped by SLURM at its memory directive (recorded external),
    its run kept under --biossd_outdir; the report names every process."""
    import shutil

    from biossd.analysis import own_pipeline
    from conftest import REPO

    outdir = tmp_path / "profiled"
    outdir.mkdir()
    exe = shutil.which("nextflow", path=cluster["env"]["PATH"])
    proc = subprocess.run([exe, "run", str(REPO / "tests" / "pipelines" / "spill"), "-w", str(tmp_path / "work"),
                           "-c", str(REPO / "nextflow" / "conf" / "profile_pipeline.config"), "-c", str(cluster["config"]),
                           "-process.executor", "slurm", "-process.queue", "fast", "--count", "200000",
                           "--table_mib", "8", "--biossd_outdir", str(outdir), "--outdir", str(outdir / "published")],
                          cwd=tmp_path, env=cluster["env"], capture_output=True, text=True, timeout=900)
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-1000:]
    runs, skipped = own_pipeline.load_runs(outdir)
    assert skipped == [] and set(runs["process"]) == {"MAKE_NUMBERS", "SORT_CHUNK", "MERGE_SORTED", "GROW_TABLE"}
    joined = []
    for path in runs["run_path"]:
        body = manifest.read_manifest(Path(path))
        assert body["memory_cap"]["backend"] == "external" and body["host_lock"]["mode"] == "shared-group"
        joined.append(body["host_lock"]["members_at_start"])
        assert body["memory_cap"]["limit_bytes"] in (40 << 20, 80 << 20, 256 << 20), body["memory_cap"]
        assert "process tree" in body["collectors"]["blocktrace"]["foreign"]["attributed_by"]
    jobs = (Path(cluster["state"]["dir"]) / "jobcomp.log").read_text()
    assert "nf-MAKE_NUMBERS" in jobs and "nf-GROW_TABLE" in jobs, "each task was a SLURM job"
    assert max(joined) >= 2, f"no task joined another one's group on the node: {joined}"
    assert not hostlock.holder_path().exists(), "the last task let go of the host lock"
    assert "GROW_TABLE" in own_pipeline.report(outdir, []).processes["process"].tolist()


def test_a_node_without_biossd_is_refused_at_the_task_s_start_naming_the_node(cluster, tmp_path):
    """The jobs get the submit side's environment: with biossd off its PATH (Nextflow run by its
    full path), the task's first step on the node stops it, naming the node and what is missing."""
    import os
    import shutil
    import socket

    from conftest import REPO

    exe = shutil.which("nextflow", path=cluster["env"]["PATH"])
    venv_bin = str(Path(exe).parent)
    path = os.pathsep.join(d for d in cluster["env"]["PATH"].split(os.pathsep) if d != venv_bin)
    env = {**cluster["env"], "PATH": path}
    assert shutil.which("biossd", path=path) is None
    proc = subprocess.run([exe, "run", str(REPO / "tests" / "pipelines" / "spill"), "-w", str(tmp_path / "work"),
                           "-c", str(REPO / "nextflow" / "conf" / "profile_pipeline.config"), "-c", str(cluster["config"]),
                           "-process.executor", "slurm", "-process.queue", "fast", "--count", "1000",
                           "--biossd_outdir", str(tmp_path / "profiled"), "--outdir", str(tmp_path / "published")],
                          cwd=tmp_path, env=env, capture_output=True, text=True, timeout=600)
    said = proc.stdout + proc.stderr + "".join(p.read_text(errors="replace") for p in (tmp_path / "work").glob("*/*/.command.*")
                                               if p.name in (".command.log", ".command.err"))
    assert proc.returncode != 0
    assert f"biossd is not installed on node {socket.gethostname()}" in said, said[-3000:]


def test_up_refuses_beside_another_slurm(tmp_path, root_required):
    """A slurmctld that is not biossd's (here a stand-in with that process name) makes `up`
    refuse before it writes anything."""
    import shutil as _shutil

    fake = tmp_path / "slurmctld"
    _shutil.copy("/bin/sleep", fake)
    other = subprocess.Popen([str(fake), "30"])
    try:
        # Popen may return before the child has exec'd (its name is still python's): wait for it.
        deadline = time.monotonic() + 10
        while Path(f"/proc/{other.pid}/comm").read_text().strip() != "slurmctld" and time.monotonic() < deadline:
            time.sleep(0.01)
        assert ("slurmctld", other.pid) in slurm.foreign_daemons()
        with pytest.raises(slurm.SlurmError, match=f"another SLURM runs on this host \\(.*slurmctld pid {other.pid}"):
            slurm.up(state_dir=tmp_path / "cluster")
        assert not (tmp_path / "cluster").exists()
    finally:
        other.kill()
        other.wait()


def _task_started(argv: list[str], timeout_s: float = 60) -> bool:
    """Whether a process running ``argv`` is in this cluster's cgroups within ``timeout_s``. Until
    the job's task has exec'd, slurmstepd's fork of it still carries the name slurmstepd."""
    want = "\0".join(argv).encode() + b"\0"
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        for pid in slurm._cgroup_pids(slurm.load()):
            try:
                if Path(f"/proc/{pid}/cmdline").read_bytes() == want:
                    return True
            except OSError:
                continue
        time.sleep(0.2)
    return False


def test_a_job_s_step_daemon_is_found_by_the_cluster_s_cgroup(cluster, tmp_path):
    """slurmstepd names no spool path: `down` finds this cluster's by the cgroups its slurmd made,
    so none outlives the cluster even when scancel fails."""
    job = subprocess.run(["sbatch", "-p", "fast", "--parsable", "--wrap", "sleep 60"], cwd=tmp_path,
                         env=cluster["env"], capture_output=True, text=True, check=True).stdout.strip()
    try:
        assert _task_started(["sleep", "60"]), "the job's task never started"
        stepds = slurm._stepds(slurm.load())
        assert stepds, "the running job's slurmstepd was not found"
        assert all(Path(f"/proc/{pid}/comm").read_text().strip() == "slurmstepd" for pid in stepds)
        assert slurm.foreign_daemons() == []
    finally:
        subprocess.run(["scancel", job], env=cluster["env"], capture_output=True)


def test_down_leaves_no_job_and_no_step_daemon_when_scancel_fails(cluster, tmp_path, monkeypatch):
    """The module's last test: `down` with a scancel that fails (a stand-in first on PATH) still
    stops the running job — its slurmstepd and its task — by the cgroups this cluster made."""
    job = subprocess.run(["sbatch", "-p", "fast", "--parsable", "--wrap", "sleep 97"], cwd=tmp_path,
                         env=cluster["env"], capture_output=True, text=True, check=True).stdout.strip()
    assert job
    assert _task_started(["sleep", "97"]), "the job's task never started"
    stepds = slurm._stepds(slurm.load())
    assert stepds, "the running job's slurmstepd was not found"
    failing = tmp_path / "bin"
    failing.mkdir()
    (failing / "scancel").write_text("#!/bin/sh\necho 'scancel: error: stand-in' >&2\nexit 1\n")
    (failing / "scancel").chmod(0o755)
    monkeypatch.setenv("PATH", f"{failing}:{__import__('os').environ['PATH']}")
    cluster["down"] = slurm.down()
    assert any("scancel failed" in line and "stand-in" in line for line in cluster["down"]), cluster["down"]
    assert not any(_running(pid) for pid in stepds), cluster["down"]
    sleepers = subprocess.run(["pgrep", "-f", "^sleep 97$"], capture_output=True, text=True).stdout.split()
    assert sleepers == [], cluster["down"]
