"""-profile docker for real: biossd's own Docker engine (biossd.host.dockerengine), the catalogue's
image loaded into it, a run in Docker under Docker's cap beside the same run native, and the
study through it (-profile test,docker); afterwards no daemon, mount, cgroup or state is left."""

from __future__ import annotations

import hashlib
import json
import os
import subprocess
from pathlib import Path

import pytest

from biossd.core.owners import ProcessRef
from biossd.host import dockerengine
from biossd.measure import manifest
from biossd.study import layout
from conftest import STUDY_HOST, nextflow

pytestmark = pytest.mark.integration


def test_an_engine_whose_owner_died_is_taken_down_by_cleanup(env, root_required, biossd):
    """(Before the module's engine is up: one engine at a time.) Its maker SIGKILLed, the engine is
    a leftover; `biossd cleanup` stops its dockerd and removes its state, nothing else."""
    import signal
    import sys
    import time

    script = ("import os, time; os.environ.pop('DOCKER_HOST', None)\n"
              "from biossd.core.owners import ProcessRef; from biossd.host import dockerengine\n"
              "s = dockerengine.up(owner=ProcessRef.current('test'))\n"
              "print(s['daemon']['pid'], flush=True); time.sleep(600)\n")
    maker = subprocess.Popen([sys.executable, "-c", script], stdout=subprocess.PIPE, text=True, env=env)
    pid = int(maker.stdout.readline())
    maker.send_signal(signal.SIGKILL)
    maker.wait()
    assert "docker-engine" in biossd("doctor", check=False).stdout
    said = biossd("cleanup").stdout
    assert "docker-engine" in said
    deadline = time.monotonic() + 30
    while Path(f"/proc/{pid}").exists() and time.monotonic() < deadline:
        time.sleep(0.2)
    assert not Path(f"/proc/{pid}").exists() and not dockerengine.STATE_DIR.exists()


@pytest.fixture(scope="module")
def engine(env, root_required):
    """biossd's engine, up for this module, with samtools_sort's image loaded into it."""
    if dockerengine.missing_features():
        pytest.fail("no Docker engine can run here: " + "; ".join(dockerengine.missing_features()) +
                    " (`make install` installs Debian's docker.io)")
    mounts_before = Path("/proc/self/mounts").read_text()
    saved = os.environ.pop("DOCKER_HOST", None)  # never the host's own engine
    try:
        state = dockerengine.up(owner=ProcessRef.current("pytest"))
    finally:
        if saved is not None:
            os.environ["DOCKER_HOST"] = saved
    docker_env = {**env, **dockerengine.env()}
    built = subprocess.run([env["PATH"].split(os.pathsep)[0] + "/biossd", "catalogue", "build", "--engine", "docker",
                            "samtools_sort"], env=docker_env, capture_output=True, text=True, timeout=1200)
    assert built.returncode == 0, built.stderr[-2000:]
    yield {"env": docker_env, "state": state}
    said = dockerengine.down()
    daemon = ProcessRef.from_record(state["daemon"])
    assert not daemon.alive(), said
    assert not dockerengine.STATE_DIR.exists()
    left = [m for m in Path("/proc/self/mounts").read_text().splitlines()
            if m not in mounts_before.splitlines() and ("biossd/docker" in m or "/var/lib/biossd" in m)]
    assert left == [], left
    assert not list(Path("/sys/fs/cgroup").glob(f"*/{dockerengine.CGROUP_PARENT}"))


def test_the_engine_is_private_and_says_what_it_runs(engine):
    state = engine["state"]
    assert state["healthy"] and state["driver"] in dockerengine.STORAGE_DRIVERS
    info = json.loads(subprocess.run(["docker", "info", "--format", "{{json .}}"], env=engine["env"],
                                     capture_output=True, text=True, check=True).stdout)
    assert info["DockerRootDir"] == str(dockerengine.DATA_ROOT) and info["Driver"] == state["driver"]
    assert info["CgroupDriver"] == "cgroupfs"
    argv = state["argv"]
    assert "--iptables=false" in argv and "--bridge=none" in argv
    # Its own daemon.json, never /etc/docker's: the config file is in its state directory.
    assert Path(argv[argv.index("--config-file") + 1]).parent == dockerengine.STATE_DIR
    assert json.loads((dockerengine.STATE_DIR / "daemon.json").read_text()) == {}


@pytest.fixture(scope="module")
def prepared(biossd, tmp_path_factory) -> Path:
    """samtools sort's input (an 8 MiB BAM), prepared once for every run of this module."""
    root = tmp_path_factory.mktemp("docker-input")
    biossd("data", "synth", "bam", "--size", "8M", "--seed", "3", "-o", str(root / "bam"))
    biossd("catalogue", "prepare", "samtools_sort", "--input", str(root / "bam"), "--out", str(root / "prepared"))
    return root / "prepared"


def _biossd(engine, *args: str, cwd: Path | None = None) -> subprocess.CompletedProcess[str]:
    """biossd with the engine's DOCKER_HOST."""
    exe = Path(engine["env"]["PATH"].split(os.pathsep)[0]) / "biossd"
    return subprocess.run([str(exe), *args], env=engine["env"], capture_output=True, text=True, cwd=cwd)


def test_a_run_in_docker_is_capped_by_docker_and_matches_the_native_run(engine, prepared, tmp_path):
    """The same samtools sort, native and in its container under Docker's --memory: Docker's
    limit and the container's peak in the record, the container removed, the block trace
    holding the run's requests; the runtime ratio is printed for the note."""
    bodies = {}
    for name in ("native", "docker"):
        run = tmp_path / f"{name}-run"
        extra = ["--container", "docker", "--cap-backend", "external"] if name == "docker" else []
        proc = _biossd(engine, "catalogue", "run", "samtools_sort", "--input", str(prepared), "--scratch",
                       str(tmp_path / f"{name}-s"), "--out", str(run), "--mem", "64M", "--set", "sort_mem=12M", *extra)
        assert proc.returncode == 0, proc.stderr[-2000:]
        bodies[name] = manifest.read_manifest(run)
    native, docker = bodies["native"], bodies["docker"]
    assert native["outcome"] == docker["outcome"] == "ok", (tmp_path / "docker-run" / "stderr.log").read_text()
    cap = docker["memory_cap"]
    assert cap["backend"] == "external" and cap["enforced_by"] == "docker"
    assert cap["enforced_limit_bytes"] == 64 * 2**20 and cap["container"]["memory_swap_bytes"] == -1
    assert cap["oom_kills"] == 0 and 0 < cap["peak_usage_bytes"] <= 64 * 2**20
    gone = subprocess.run(["docker", "inspect", cap["container"]["container_id"]], env=engine["env"],
                          capture_output=True, text=True)
    assert gone.returncode != 0, "the container was not removed"
    assert docker["argv"][:2] == ["docker", "run"] and "--network" in docker["argv"]
    assert docker["collectors"]["blocktrace"]["ran"] and docker["collectors"]["blocktrace"]["requests"] > 0
    assert "merging from" in (tmp_path / "docker-run" / "stderr.log").read_text(), "sort spilled in Docker too"
    # The tool's CPU time, not the docker client's: read from the container's cgroup.
    acct = {name: json.loads((tmp_path / f"{name}-run" / "rusage.json").read_text()) for name in bodies}
    assert acct["docker"]["accounting_source"].startswith("the container's cgroup")
    cpu = {name: a["user_s"] + a["sys_s"] for name, a in acct.items()}
    client = acct["docker"]["client_user_s"] + acct["docker"]["client_sys_s"]
    assert 0.5 < cpu["docker"] / cpu["native"] < 2.0, (cpu, client)
    print(f"CPU s: native {cpu['native']:.2f}, docker {cpu['docker']:.2f} (its client {client:.2f})")
    print(f"docker/native wall time: {docker['wall_s']:.2f} s / {native['wall_s']:.2f} s = "
          f"{docker['wall_s'] / native['wall_s']:.2f}")


def test_a_killed_run_s_container_is_removed_before_the_next_run_measures(engine, biossd, tmp_path):
    """The container is the engine's child, in no session or cgroup of the run: a profiler
    SIGKILLed while its tool runs in Docker leaves it running, and the next run (no cleanup
    between) removes it before it measures, and says so."""
    import signal
    import sys
    import time

    made = tmp_path / "bam"
    biossd("data", "synth", "bam", "--size", "96M", "--seed", "4", "-o", str(made))
    biossd("catalogue", "prepare", "samtools_sort", "--input", str(made), "--out", str(tmp_path / "prepared"))
    exe = Path(engine["env"]["PATH"].split(os.pathsep)[0]) / "biossd"
    killed = subprocess.Popen([str(exe), "catalogue", "run", "samtools_sort", "--input", str(tmp_path / "prepared"),
                               "--scratch", str(tmp_path / "s1"), "--out", str(tmp_path / "r1"), "--mem", "64M",
                               "--set", "sort_mem=1M", "--container", "docker", "--cap-backend", "external"],
                              env=engine["env"], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)

    def containers() -> list[str]:
        return subprocess.run(["docker", "ps", "-q"], env=engine["env"], capture_output=True, text=True).stdout.split()

    try:
        deadline = time.monotonic() + 60
        while not containers() and time.monotonic() < deadline:
            time.sleep(0.1)
        assert containers(), "the run's container never started"
        killed.send_signal(signal.SIGKILL)
        killed.wait()
        assert containers(), "the container ended with its profiler: nothing for the next run to reap"
        nxt = _biossd(engine, "profile", "--mem", "none", "--blocktrace", "off", "--out", str(tmp_path / "r2"), "--",
                      sys.executable, "-c", "pass")
        assert nxt.returncode == 0, nxt.stderr[-2000:]
        reaped = manifest.read_manifest(tmp_path / "r2")["host_lock"]["reaped_stale_holder"]
        assert containers() == [] and any("removed its container" in line for line in reaped), reaped
    finally:
        for cid in containers():
            subprocess.run(["docker", "rm", "-f", cid], env=engine["env"], capture_output=True)
        biossd("cleanup", check=False)


def test_the_same_records_come_out_of_the_container(engine, prepared, tmp_path):
    """Staged and run by hand (the scratch kept): the sorted BAM's records in Docker are the
    native run's, byte for byte (the headers differ only by the command line samtools records)."""
    digests = {}
    for name in ("native", "docker"):
        scratch = tmp_path / name
        staged = _biossd(engine, "catalogue", "stage", "samtools_sort", "--input", str(prepared), "--scratch",
                         str(scratch), "--mem", "64M", "--set", "sort_mem=12M", "--print0",
                         *(["--container", "docker"] if name == "docker" else []))
        assert staged.returncode == 0, staged.stderr
        subprocess.run(staged.stdout.split("\0")[:-1], env=engine["env"], cwd=scratch, check=True, capture_output=True)
        records = subprocess.run(["samtools", "view", str(scratch / "sorted.bam")], capture_output=True,
                                 check=True).stdout
        digests[name] = hashlib.sha256(records).hexdigest()
    assert digests["native"] == digests["docker"]


def test_a_container_docker_refuses_is_a_harness_error_not_a_result(engine, prepared, tmp_path):
    """docker run refuses a cap below its minimum (exit 125): that is no tool's failure, and
    nothing is published."""
    proc = _biossd(engine, "catalogue", "run", "samtools_sort", "--input", str(prepared), "--scratch",
                   str(tmp_path / "s"), "--out", str(tmp_path / "run"), "--mem", "4M", "--set", "sort_mem=1M",
                   "--container", "docker", "--cap-backend", "external")
    assert proc.returncode == 2 and "exit 125" in proc.stderr, proc.stderr
    assert not (tmp_path / "run").exists() and not (tmp_path / "s").exists()


@pytest.fixture
def result_set(study_results):
    return study_results[1]


def test_the_study_runs_in_docker(env, engine, tmp_path, result_set):
    """`-profile test,docker`: the profiler on the host, samtools in its image on biossd's engine,
    the scratch bind-mounted, Docker's cap recorded (the native disk's record reused)."""
    only_ssd = tmp_path / "only-ssd.config"
    only_ssd.write_text("params { storage_classes = 'ssd'; emulate = null; repeats = 1; skip_report = true }\n")
    outdir = tmp_path / "results"
    nextflow(engine["env"], tmp_path, "-profile", "test,docker", "-c", str(only_ssd), "--outdir", str(outdir),
             "--host", STUDY_HOST, "--device_records", str(result_set))
    run = outdir / layout.run_relpath({"host": STUDY_HOST, "storage": "ssd", "tool": "samtools_sort", "mem": "64M",
                                       "scale": 1, "rep": 1})
    body = manifest.read_manifest(run)
    assert body["outcome"] == "ok", (run / "stderr.log").read_text()
    assert body["labels"]["container_engine"] == "docker"
    assert body["container_image"].startswith("localhost/biossd/samtools_sort:1.16.1@sha256:")
    assert body["memory_cap"]["enforced_by"] == "docker" and body["memory_cap"]["enforced_limit_bytes"] == 64 * 2**20
    assert body["collectors"]["blocktrace"]["requests"] > 0


def test_no_engine_answering_is_named_before_any_run(tmp_path, monkeypatch):
    """A docker client with no engine behind DOCKER_HOST: the plan's check says so and what to run."""
    from biossd.study import catalogue
    from biossd.study.plan import resources

    monkeypatch.setenv("DOCKER_HOST", f"unix://{tmp_path / 'no-engine.sock'}")
    problems = resources.image_problems("docker", [catalogue.get("samtools_sort")])
    assert len(problems) == 1 and "no Docker engine answers" in problems[0] and "biossd docker up" in problems[0]


def test_a_tool_without_its_image_is_refused_by_name_with_the_build_command(engine, monkeypatch):
    """The engine answers and holds samtools_sort's image; an entry whose pinned image is not in
    it (samtools_sort at a version never built) is named, with the command that builds it. Nothing
    is removed from the engine's image store."""
    import dataclasses

    from biossd.study import catalogue
    from biossd.study.plan import resources

    monkeypatch.setenv("DOCKER_HOST", engine["env"]["DOCKER_HOST"])
    entry = catalogue.get("samtools_sort")
    unbuilt = dataclasses.replace(entry, data={**entry.data, "container": {
        **entry.data["container"], "image": "localhost/biossd/samtools_sort:0.0-never-built"}})
    problems = resources.image_problems("docker", [entry, unbuilt])
    assert problems == ["samtools_sort's docker image is not built here: run "
                        "`biossd catalogue build --engine docker samtools_sort`"]


def test_an_nf_core_style_pipeline_in_docker_is_profiled_task_by_task_from_the_host(engine, biossd, tmp_path):
    """tests/pipelines/incontainers (modules, meta, containers, publishDir, versions) with
    -profile docker under the profiling config, two samples side by side: every task's tool ran in
    its container and was measured from the host — Docker's cap at the task's memory directive,
    the image by id, the container's cgroup for CPU and faults, its process tree for the block
    requests — and the report names every process; no container is left."""
    from biossd.analysis import own_pipeline
    from conftest import REPO

    for sample, seed in (("s1", 1), ("s2", 2)):
        biossd("data", "synth", "bam", "--size", "8M", "--seed", str(seed), "-o", str(tmp_path / sample))
        (tmp_path / sample / "reads.bam").rename(tmp_path / f"{sample}.bam")
    outdir = tmp_path / "profiled"
    proc = subprocess.run([str(Path(engine["env"]["PATH"].split(os.pathsep)[0]) / "nextflow"), "run",
                           str(REPO / "tests" / "pipelines" / "incontainers"), "-profile", "docker",
                           "--bams", str(tmp_path / "s*.bam"), "--outdir", str(tmp_path / "out"),
                           "-c", str(REPO / "nextflow" / "conf" / "profile_pipeline.config"),
                           "--biossd_outdir", str(outdir), "-w", str(tmp_path / "work")],
                          cwd=tmp_path, env=engine["env"], capture_output=True, text=True, timeout=600)
    assert proc.returncode == 0, proc.stdout[-3000:]
    assert sorted(p.name for p in (tmp_path / "out" / "bam").iterdir()) == [
        "s1.sorted.bam", "s1.sorted.bam.bai", "s2.sorted.bam", "s2.sorted.bam.bai"]
    runs, skipped = own_pipeline.load_runs(outdir)
    assert skipped == [] and len(runs) == 4
    for path, process in zip(runs["run_path"], runs["process"]):
        body = manifest.read_manifest(Path(path))
        cap = body["memory_cap"]
        assert cap["enforced_by"] == "docker" and cap["enforced_limit_bytes"] == 256 << 20, cap
        assert cap["container"]["image_id"].startswith("sha256:") and body["container_image"].endswith(":1.16.1")
        assert body["host_lock"]["mode"] == "group-member"
        source = json.loads((Path(path) / "rusage.json").read_text())["accounting_source"]
        foreign = body["collectors"]["blocktrace"]["foreign"]
        if process == "SAMTOOLS_SORT":  # a second or more in its container: seen running
            assert source.startswith("the container's cgroup") and "the container's first process" in foreign["attributed_by"]
        else:  # an index of a small BAM may end before its container is seen: then the record says so
            assert source.startswith("the container's cgroup") == ("the container's first process"
                                                                    in (foreign["attributed_by"] or "")), (source, foreign)
            assert foreign["attributed_by"] or "was not seen running" in foreign["why"]
    said = biossd("pipeline", "report", str(outdir)).stdout
    assert "SAMTOOLS_SORT" in said and "SAMTOOLS_INDEX" in said
    sorts = own_pipeline.report(outdir, []).tasks.query("process == 'SAMTOOLS_SORT'")
    assert sorts["overlap_s"].gt(0).all(), "the two samples' sorts ran side by side"
    left = subprocess.run(["docker", "ps", "-aq"], env=engine["env"], capture_output=True, text=True).stdout.split()
    assert left == [], f"containers left: {left}"
