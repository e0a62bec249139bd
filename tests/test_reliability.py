"""Reliability: emulations are owned and reconciled with the host, a crash is
recovered by the next `up`, damaged run files are named and skipped, a full scratch is a harness
error, parameters are checked against the schema, and doctor/cleanup need root and say so."""

from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from biossd.core import files
from biossd.core.owners import ProcessRef
from biossd.features import extract as features
from biossd.host.hdd import emulate
from biossd.measure import manifest, storage
from biossd.study.plan import matrix, schema
from conftest import measured_record
from test_emulate import loop_filesystem

pytestmark = pytest.mark.integration
PROFILE = "seagate-barracuda-7200"


def _sleeper() -> subprocess.Popen:
    """A stand-in owner (a Nextflow session, say) that we can kill."""
    return subprocess.Popen(["sleep", "600"])


def test_an_owned_emulation_is_only_taken_down_by_its_owner(biossd, tmp_path, root_required):
    root = tmp_path / "storage"
    owner, other = _sleeper(), _sleeper()
    try:
        biossd("storage", "up", "--root", str(root), "--classes", "hdd", "--emulate", f"hdd={PROFILE}",
               "--size", "128M", "--owner-pid", str(owner.pid), "--owner-label", "pipeline A")
        mount = root / "hdd"
        assert os.path.ismount(mount)
        # A second pipeline (another owner) can neither bring up nor take down this disk.
        second = biossd("storage", "up", "--root", str(root), "--classes", "hdd", "--emulate", f"hdd={PROFILE}",
                        "--size", "128M", "--owner-pid", str(other.pid), check=False)
        assert second.returncode == 2 and "in use by pipeline A" in second.stderr
        left = biossd("storage", "down", "--root", str(root), "--owner-pid", str(other.pid)).stdout
        assert "left" in left and "in use by pipeline A" in left and os.path.ismount(mount)
        # doctor calls it in use, not a leftover; cleanup leaves it alone.
        doctor = biossd("doctor", check=False)
        assert doctor.returncode == 0 and f"emulated HDD {mount}" in doctor.stdout and "in use by pipeline A" in doctor.stdout
        biossd("cleanup")
        assert os.path.ismount(mount)
        # Its owner dies (SIGKILL of Nextflow): now it is a leftover, and cleanup removes it.
        owner.kill()
        owner.wait()
        doctor = biossd("doctor", check=False)
        assert doctor.returncode == 1 and "leftover emulated-hdd" in doctor.stdout and "is gone" in doctor.stdout
        assert "removed emulated-hdd" in biossd("cleanup").stdout
        assert not os.path.ismount(mount) and not emulate.all_states() and not list(root.glob("biossd-hdd-*"))
    finally:
        for p in (owner, other):
            p.kill()
            p.wait()
        biossd("cleanup", check=False)


def test_the_next_up_recovers_what_a_killed_up_left(biossd, env, tmp_path, root_required):
    """SIGKILL of `up` once the FUSE server and loop device exist, then `up` at the same mount:
    no FileExistsError — the stale emulation (broken, no owner) is reclaimed first."""
    mount = tmp_path / "hdd"
    argv = [sys.executable, "-m", "biossd", "device", "emulate-hdd", "up", "--mount", str(mount), "--size", "128M",
            "--backing-dir", str(tmp_path)]
    proc = subprocess.Popen(argv, env=env, stderr=subprocess.PIPE, text=True)
    deadline = time.monotonic() + 30
    while not any("loop_device" in emulate.status_of(d) for d in emulate.all_states()):
        assert proc.poll() is None and time.monotonic() < deadline, proc.communicate()
        time.sleep(0.01)
    proc.kill()
    proc.wait()
    assert emulate.all_states(), "the killed up left its state"
    again = biossd("device", "emulate-hdd", "up", "--mount", str(mount), "--size", "128M", "--backing-dir", str(tmp_path))
    assert "up at" in again.stdout
    states = emulate.all_states()
    assert len(states) == 1 and emulate.status_of(states[0])["healthy"]
    assert len(list(tmp_path.glob("biossd-hdd-*.img"))) == 1, "the stale backing file was removed"
    biossd("device", "emulate-hdd", "down", "--mount", str(mount))
    assert not emulate.all_states() and not list(tmp_path.glob("biossd-hdd-*"))


def test_down_reconciles_when_the_recorded_state_lies(biossd, tmp_path, root_required):
    """`down` trusts the host, not the record: with every flag and the loop device erased from
    state.json, it still finds the mount, the loop device by its backing file and the server."""
    mount = tmp_path / "hdd"
    biossd("device", "emulate-hdd", "up", "--mount", str(mount), "--size", "128M", "--swap", "16M",
           "--backing-dir", str(tmp_path))
    state_dir = emulate.all_states()[0]
    state = json.loads((state_dir / "state.json").read_text())
    server = ProcessRef.from_record(state["server"])
    for key in ("loop_device", "server", "stage"):
        state.pop(key)
    (state_dir / "state.json").write_text(json.dumps(state))
    done = biossd("device", "emulate-hdd", "down", "--mount", str(mount)).stdout
    for step in ("swapoff", "umount", "losetup -d"):
        assert step in done, done
    # The server, found by its command line, is stopped — or it ended by itself when its FUSE
    # mount went (a server on one thread ends its loop at once): either way it is gone.
    assert not server.alive() and not emulate._server_pids(state["fuse_dir"]), done
    assert not emulate.all_states() and not mount.exists() and not list(tmp_path.glob("biossd-hdd-*"))


def test_down_detaches_the_loop_device_of_a_disk_whose_fuse_mount_went_away(biossd, tmp_path, root_required):
    """A FUSE disk unmounted under its loop device (its server killed, the mount cleaned away)
    leaves the loop backed by what the kernel then calls `/disk.img`: `down` still detaches the
    recorded loop device, and only it."""
    mount = tmp_path / "hdd"
    biossd("device", "emulate-hdd", "up", "--mount", str(mount), "--size", "128M", "--backing-dir", str(tmp_path))
    status = emulate.status_of(emulate.all_states()[0])
    loop = status["loop_device"]
    subprocess.run(["umount", str(mount)], check=True)
    subprocess.run(["umount", "--lazy", status["fuse_dir"]], check=True)
    backing = subprocess.run(["losetup", "--noheadings", "--output", "BACK-FILE", loop], capture_output=True,
                             text=True).stdout.strip()
    assert backing == "/" + emulate.DISK_FILE, backing
    try:
        done = biossd("device", "emulate-hdd", "down", "--mount", str(mount)).stdout
        assert f"losetup -d {loop}" in done, done
        assert subprocess.run(["losetup", loop], capture_output=True).returncode != 0, "the loop device is still attached"
        assert not emulate.all_states()
    finally:  # if down missed it, this test's own loop device is not left on the host
        if subprocess.run(["losetup", "--noheadings", "--output", "BACK-FILE", loop], capture_output=True,
                          text=True).stdout.strip() == "/" + emulate.DISK_FILE:
            subprocess.run(["losetup", "--detach", loop])


def test_cleanup_takes_down_a_disk_whose_server_was_killed(biossd, tmp_path, root_required):
    """A disk server killed by SIGKILL leaves its FUSE mount disconnected (``stat`` fails with
    ENOTCONN, so it does not look like a mount to :func:`os.path.ismount`): `doctor` names it,
    and `cleanup` still unmounts it, detaches its loop device and removes its state."""
    mount = tmp_path / "hdd"
    biossd("device", "emulate-hdd", "up", "--mount", str(mount), "--size", "128M", "--backing-dir", str(tmp_path))
    state_dir = emulate.all_states()[0]
    status = emulate.status_of(state_dir)
    server = ProcessRef.from_record(status["server"])
    os.kill(server.pid, signal.SIGKILL)
    deadline = time.monotonic() + 10
    while server.alive():
        assert time.monotonic() < deadline, "the disk server outlived SIGKILL"
        time.sleep(0.05)
    while os.path.ismount(status["fuse_dir"]):  # until the kernel aborts the connection
        assert time.monotonic() < deadline, "the killed server's FUSE mount still answers stat"
        time.sleep(0.05)
    doctor = biossd("doctor", check=False)
    assert doctor.returncode == 1 and str(state_dir) in doctor.stdout, doctor.stdout
    assert biossd("cleanup", check=False).returncode == 0
    assert biossd("doctor", check=False).returncode == 0
    assert not files.mounts_under(state_dir) and not files.mounts_under(mount)
    assert subprocess.run(["losetup", status["loop_device"]], capture_output=True).returncode != 0
    assert not emulate.all_states()


def test_the_emulated_disk_is_root_only(biossd, tmp_path, root_required):
    mount = tmp_path / "hdd"
    biossd("device", "emulate-hdd", "up", "--mount", str(mount), "--size", "128M", "--backing-dir", str(tmp_path))
    try:
        status = emulate.status_of(emulate.all_states()[0])
        assert os.stat(status["backing_file"]).st_mode & 0o777 == 0o600
        fuse_mount = next(line for line in Path("/proc/self/mounts").read_text().splitlines()
                          if status["fuse_dir"] in line)
        assert "allow_other" not in fuse_mount and "default_permissions" in fuse_mount
        image = Path(status["fuse_dir"]) / emulate.DISK_FILE
        other = subprocess.run(["setpriv", "--reuid=65534", "--regid=65534", "--clear-groups", "head", "-c1",
                                str(image)], capture_output=True, text=True)
        assert other.returncode != 0 and "denied" in other.stderr.lower()
    finally:
        biossd("device", "emulate-hdd", "down", "--mount", str(mount))


def test_doctor_and_cleanup_as_a_user_say_they_need_root(env, root_required):
    for command in ("doctor", "cleanup"):
        proc = subprocess.run(["setpriv", "--reuid=65534", "--regid=65534", "--clear-groups", sys.executable, "-m",
                               "biossd", command], capture_output=True, text=True, env={**env, "HOME": "/tmp"})
        assert proc.returncode == 2 and "needs root" in proc.stderr and "Traceback" not in proc.stderr, proc.stderr


def test_a_full_scratch_is_a_harness_error_not_a_result(biossd, tmp_path, root_required):
    with loop_filesystem(tmp_path, 16 << 20) as small:
        run = tmp_path / "run"
        proc = biossd("profile", "--mem", "none", "--no-drop-caches", "--out", str(run), "--", "dd",
                      "if=/dev/zero", f"of={small}/fill", "bs=1M", "count=64", cwd=small, check=False)
        (small / "fill").unlink()
    assert proc.returncode == 2 and "ran out of space" in proc.stderr and "harness" in proc.stderr, proc.stderr
    assert not run.exists() and not list(tmp_path.glob(".run.*")), "no run was recorded"


@pytest.fixture(scope="module")
def good_run(biossd, tmp_path_factory, root_required):
    """One complete, real run directory (with a quality record beside it) to damage copies of."""
    base = tmp_path_factory.mktemp("good")
    run = base / "run"
    biossd("profile", "--mem", "64M", "--no-drop-caches", "--out", str(run), "--", "dd", "if=/dev/zero",
           f"of={base}/x", "bs=1M", "count=4", "oflag=direct", cwd=base)
    (run / "device.json").write_text(json.dumps(measured_record(seq_read_mbs=100.0, seq_write_mbs=100.0)))
    body = manifest.read_manifest(run)
    body["files"] = [manifest.file_record(run, p) for p in sorted(run.iterdir())
                     if p.is_file() and p.name != manifest.MANIFEST_NAME]
    manifest.write_manifest(run, {k: v for k, v in body.items() if k not in ("schema", "schema_version")})
    (run / "quality.json").write_text(json.dumps({"sensitivity": 1.0}))
    return run


@pytest.mark.parametrize("name, damage", [
    ("run.json", lambda p: p.write_text("{not json")),
    ("run.json", lambda p: p.write_text(json.dumps({"schema": "other"}))),
    ("rusage.json", lambda p: p.write_text("[]")),
    ("device.json", lambda p: p.write_text("{")),
    ("quality.json", lambda p: p.write_text("{")),
    ("blocktrace.tsv.gz", lambda p: p.write_bytes(b"\x1f\x8b garbage")),
    ("sampler.csv", lambda p: p.unlink()),
    ("perf_stat.csv", lambda p: p.write_text("1,2,3\n")),
])
def test_features_keep_going_names_any_damaged_run_file(biossd, good_run, tmp_path, name, damage):
    import shutil

    root = tmp_path / "results"
    shutil.copytree(good_run, root / "good")
    shutil.copytree(good_run, root / "bad")
    damage(root / "bad" / name)
    skipped = tmp_path / "skipped.tsv"
    proc = biossd("features", "--keep-going", "--skipped", str(skipped), str(root), "-o", str(tmp_path / "f.csv"),
                  check=False)
    assert proc.returncode == 1 and "Traceback" not in proc.stderr, proc.stderr
    assert str(root / "bad") in proc.stderr and name in proc.stderr, proc.stderr
    assert len(features.read_table(tmp_path / "f.csv")) == 1
    rows = skipped.read_text().splitlines()
    assert len(rows) == 2 and rows[1].startswith(str(root / "bad")) and name in rows[1]
    plain = biossd("features", str(root), check=False)
    assert plain.returncode == 2 and name in plain.stderr and "Traceback" not in plain.stderr


def test_parameters_are_checked_against_the_schema():
    problems = schema.schema_problems({"host": "../../x", "repeats": "three", "cap_backend": "magic",
                                       "storage_classes": "ssd,../hdd", "swap": "lots", "tols": "bwa",
                                       "scratchDir": "/x"})
    text = "\n".join(problems)
    for name in ("--host", "--repeats", "--cap_backend", "--storage_classes", "--swap", "Unknown parameter --tols"):
        assert name in text, text
    assert "scratchDir" not in text, "Nextflow's camelCase alias of a known parameter is not unknown"
    assert schema.schema_problems({"host": "node-01.lab", "repeats": 3, "storage_classes": "ssd,hdd"}) == []


def test_the_plan_checks_free_space_against_the_largest_input(tmp_path):
    params = {"tools": "samtools_sort", "mem_caps": "64M", "scales": "1,16", "repeats": 1, "input_size": "64M",
              "storage_classes": "ssd,hdd", "emulate": f"hdd={PROFILE}", "emulate_size": "1G",
              "scratch_dir": str(tmp_path), "storage_root": str(tmp_path)}
    problems = matrix.plan(params).problems
    assert any("--emulate_size 1G is too small for class 'hdd'" in p and "4G" in p for p in problems), problems
    params.update(input_size="1M", scales="1")
    assert matrix.plan(params).problems == []
    params.update(input_size="1T")
    assert any("The scratch of class 'ssd'" in p for p in matrix.plan(params).problems)


def test_a_study_that_sizes_first_checks_the_space_its_sizes_need_once_sized(tmp_path):
    """-profile full with --sizing auto: before the sizing, the defaults' inputs and emulated size
    are not the study's (the record sets them), so their space is not a problem yet; every other
    problem still is, and by hand --sizing auto is still the workflow's."""
    params = {"tools": "samtools_sort", "mem_caps": "64M", "scales": "1", "repeats": 1, "input_size": "1G", "sizing": "auto",
              "storage_classes": "ssd,hdd", "emulate": f"hdd={PROFILE}", "emulate_size": "4G",
              "scratch_dir": str(tmp_path), "storage_root": str(tmp_path)}
    assert matrix.plan(params, before_sizing=True).problems == []
    assert any("--sizing auto is the workflow's" in p for p in matrix.plan(params).problems)
    unsized = matrix.plan({**params, "sizing": "none"}).problems
    assert any("--emulate_size 4G is too small for class 'hdd'" in p for p in unsized), unsized
    assert any("--tools: " in p or "bogus" in p for p in matrix.plan({**params, "tools": "bogus"}, before_sizing=True).problems)


def test_storage_down_stops_its_owners_orphaned_run_first(biossd, env, tmp_path, root_required):
    """Nextflow interrupted while a run was going: its storage down ends that run (which
    cleans up) instead of failing on a busy disk."""
    root = tmp_path / "storage"
    owner = _sleeper()
    try:
        biossd("storage", "up", "--root", str(root), "--classes", "hdd", "--emulate", f"hdd={PROFILE}",
               "--size", "128M", "--owner-pid", str(owner.pid))
        work = root / "hdd" / "scratch"
        work.mkdir()
        run = subprocess.Popen([sys.executable, "-m", "biossd", "profile", "--mem", "64M", "--no-drop-caches",
                                "--owner-pid", str(owner.pid), "--out", str(tmp_path / "run"), "--", "sleep", "120"],
                               env=env, cwd=work, stderr=subprocess.PIPE, text=True)
        deadline = time.monotonic() + 20
        while "host lock" not in biossd("doctor", check=False).stdout:
            assert time.monotonic() < deadline and run.poll() is None
            time.sleep(0.05)
        done = biossd("storage", "down", "--root", str(root), "--owner-pid", str(owner.pid)).stdout
        assert "stopped interrupted run" in done and "umount" in done, done
        assert run.wait(timeout=30) == 128 + signal.SIGTERM
        assert not (tmp_path / "run").exists() and not emulate.all_states()
    finally:
        owner.kill()
        owner.wait()
        biossd("cleanup", check=False)


def test_a_run_stops_when_its_owner_dies(biossd, env, tmp_path, root_required):
    owner = _sleeper()
    run = subprocess.Popen([sys.executable, "-m", "biossd", "profile", "--mem", "64M", "--no-drop-caches",
                            "--owner-pid", str(owner.pid), "--owner-label", "nextflow X", "--out",
                            str(tmp_path / "run"), "--", "sleep", "120"], env=env, stderr=subprocess.PIPE, text=True)
    deadline = time.monotonic() + 20
    while not list(tmp_path.glob(".run.biossd-partial-*/sampler.csv")):
        assert time.monotonic() < deadline and run.poll() is None
        time.sleep(0.05)
    owner.kill()
    owner.wait()
    _, err = run.communicate(timeout=30)
    assert run.returncode == 128 + signal.SIGTERM and "its owner nextflow X" in err, err
    assert not list(tmp_path.iterdir())
    assert ProcessRef.of(owner.pid).start_ticks is None


def test_storage_down_with_nothing_up_touches_nothing(tmp_path):
    """`storage.down` of a root with nothing says so (and touches nothing else)."""
    (tmp_path / "keep").write_text("x")
    assert storage.down(tmp_path) == [] and (tmp_path / "keep").read_text() == "x"


def test_install_never_rebuilds_a_directory_it_did_not_make(tmp_path, repo):
    """VENV pointing at a directory of the user's (VENV=/usr by mistake) is refused, untouched."""
    theirs = tmp_path / "usr"
    (theirs / "bin").mkdir(parents=True)
    (theirs / "bin" / "tool").write_text("keep")
    proc = subprocess.run(["bash", str(repo / "install" / "bootstrap.sh"), "python"], capture_output=True, text=True,
                          env={**os.environ, "VENV": str(theirs)})
    assert proc.returncode == 1 and "is not an environment biossd made" in proc.stderr
    assert (theirs / "bin" / "tool").read_text() == "keep" and not (theirs / ".stamps").exists()


def test_install_never_rebuilds_the_environment_of_another_checkout(tmp_path, repo):
    """A .venv made for another clone (linked into this one) is that clone's: refused, untouched."""
    theirs = tmp_path / "other-clone" / ".venv"
    (theirs / "bin").mkdir(parents=True)
    (theirs / "bin" / "biossd").write_text("keep")
    (theirs / ".stamps").mkdir()
    (theirs / ".stamps" / "checkout").write_text(f"{tmp_path / 'other-clone'}\n")
    proc = subprocess.run(["bash", str(repo / "install" / "bootstrap.sh"), "python"], capture_output=True, text=True,
                          env={**os.environ, "VENV": str(theirs)})
    assert proc.returncode == 1 and f"the environment of the checkout {tmp_path / 'other-clone'}" in proc.stderr
    assert (theirs / "bin" / "biossd").read_text() == "keep"


def test_the_supplement_replaces_only_its_own_report_copy(tmp_path):
    from biossd.outputs import supplement

    report = tmp_path / "report"
    for sub in ("figures", "tables"):
        (report / sub).mkdir(parents=True)
        (report / sub / "a.txt").write_text(sub)
    out = tmp_path / "thesis"
    (out / "report").mkdir(parents=True)
    (out / "report" / "chapter.tex").write_text("mine")
    with pytest.raises(supplement.SupplementError, match="not a report copy biossd made"):
        supplement._replace_report_copy(report, out / "report")
    assert (out / "report" / "chapter.tex").read_text() == "mine"
    fresh = tmp_path / "build" / "report"
    supplement._replace_report_copy(report, fresh)
    supplement._replace_report_copy(report, fresh)  # its own copy is replaced
    assert (fresh / "figures" / "a.txt").read_text() == "figures"


def test_layout_labels_must_be_path_components():
    from biossd.study import layout

    good = {"host": "vm", "storage": "ssd", "tool": "bwa", "mem": "1G", "scale": 1, "rep": 1}
    assert str(layout.run_relpath(good)) == "vm-ssd/runs/bwa/1G/1/1"
    for key, value in (("host", "../../x"), ("tool", "a/b"), ("rep", ".."), ("storage", "")):
        with pytest.raises(ValueError):
            layout.run_relpath({**good, key: value})


def test_a_helper_dies_with_the_process_that_started_it_even_by_sigkill(tmp_path):
    """perf, blktrace and fio are started with dies_with_parent: a SIGKILLed profiler leaves
    none of them running (a perf stat once outlived its profiler)."""
    pid_file = tmp_path / "helper.pid"
    parent = subprocess.Popen([sys.executable, "-c", (
        "import subprocess, sys, time\n"
        "from biossd.core.owners import dies_with_parent\n"
        "helper = subprocess.Popen(['sleep', '60'], preexec_fn=dies_with_parent())\n"
        f"open({str(pid_file)!r}, 'w').write(str(helper.pid))\n"
        "time.sleep(60)\n")])
    deadline = time.monotonic() + 20
    while not pid_file.exists() or not pid_file.read_text():
        assert time.monotonic() < deadline and parent.poll() is None, "the parent did not start its helper"
        time.sleep(0.05)
    helper = ProcessRef.of(int(pid_file.read_text()))
    assert helper.alive()
    parent.kill()
    parent.wait()
    deadline = time.monotonic() + 5
    while helper.alive() and time.monotonic() < deadline:
        time.sleep(0.05)
    assert not helper.alive(), "the helper outlived its SIGKILLed parent"


def test_a_disk_whose_server_died_is_named_not_taken_for_the_tool(monkeypatch, tmp_path):
    """The emulated disk's server gone during a run: the run is refused with why (its device went
    away), where a live server, a native class and a path on no emulation say nothing."""
    dead = subprocess.Popen(["true"])
    dead.wait()
    state = {"mount": str(tmp_path), "profile": "seagate-barracuda-7200",
             "server": ProcessRef.of(os.getpid(), "pytest").record()}
    monkeypatch.setattr(emulate, "_state_holding", lambda path: state)
    assert emulate.server_gone(tmp_path) is None
    state["server"] = {**state["server"], "pid": dead.pid}
    said = emulate.server_gone(tmp_path)
    assert said and f"pid {dead.pid}" in said and "not the tool's" in said and "biossd cleanup" in said
    state["profile"] = emulate.NATIVE_PROFILE
    assert emulate.server_gone(tmp_path) is None
    monkeypatch.setattr(emulate, "_state_holding", lambda path: None)
    assert emulate.server_gone(tmp_path) is None


def test_an_interrupted_up_whose_rollback_fails_says_what_remains(monkeypatch, tmp_path, capsys):
    """An ``up`` interrupted mid-way takes down what it made; where that fails, its state is kept
    for `biossd cleanup` and the error says what remains, not silence."""
    monkeypatch.setattr(emulate, "STATE_ROOT", tmp_path / "states")
    monkeypatch.setattr(emulate, "missing_features", lambda fuse=True: [])

    def interrupted(*args):
        raise KeyboardInterrupt

    def busy(state_dir, grace_s=0):
        raise emulate.EmulateError("the emulated HDD at /x is not fully down: umount /x: busy")

    monkeypatch.setattr(emulate, "_bring_up", interrupted)
    monkeypatch.setattr(emulate, "down_state", busy)
    with pytest.raises(KeyboardInterrupt):
        emulate.up(tmp_path / "ssd", emulate.NATIVE_PROFILE, 128 << 20, backing_dir=tmp_path)
    assert "not fully down: umount /x: busy" in capsys.readouterr().err


# -- bad input: refused before anything is done, naming the option and what to give ------------------------------------
def test_bad_sizing_arguments_are_refused_before_the_sizing(biossd, tmp_path, root_required):
    def refused(*args):
        proc = biossd("study", "size", "--tools", "bwa", "--scratch", str(tmp_path), *args, check=False, timeout=60)
        assert proc.returncode == 2 and "Traceback" not in proc.stderr, proc.stderr
        return proc.stderr

    assert "is a directory" in refused("--run-budget", "5s", "--out", str(tmp_path))
    assert "does not exist" in refused("--run-budget", "5s", "--out", str(tmp_path / "no" / "sizing.json"))
    assert "outside 0.05 s" in refused("--run-budget", "0.000001s", "--out", str(tmp_path / "s.json"))
    assert "--budget" in refused("--budget", "999999999999h", "--out", str(tmp_path / "s.json"))
    committed = Path(__file__).resolve().parents[1] / "nextflow" / "conf" / "full.config"
    reference = re.search(r'sizing\s*=\s*"\$\{projectDir\}/\.\./(\S+)"', committed.read_text()).group(1)
    other_budget = refused("--run-budget", "3s", "--out", str(tmp_path / "s.json"), "--reference",
                           str(committed.parents[2] / reference))
    assert "--reference" in other_budget and "5 s a run" in other_budget and "3 s" in other_budget
    assert "--reference" in refused("--run-budget", "5s", "--out", str(tmp_path / "s.json"), "--reference",
                                    str(committed))
    assert not list(tmp_path.iterdir()), "nothing was made"


def test_a_sizing_record_whose_runs_are_not_objects_is_named():
    from biossd.study.sizing import procedure

    rec = json.loads((Path(__file__).resolve().parents[1] / "benchmarks" / "sizing-2026-11-27.json").read_text())
    rec["runs"] = [1, *rec["runs"]]
    assert any("runs is not a list of run objects" in p for p in procedure.check(rec))


def test_study_begin_refuses_a_dead_launcher_and_a_folder_where_its_record_goes(biossd, tmp_path):
    from test_lifecycle import RECORD, SESSION

    out = tmp_path / "out"
    dead = subprocess.Popen(["true"])
    dead.wait()
    proc = biossd("study", "begin", "--outdir", str(out), "--record", json.dumps(RECORD), "--session",
                  json.dumps(SESSION), "--launcher-pid", str(dead.pid), check=False)
    assert proc.returncode == 2 and "no such process" in proc.stderr and not out.exists(), proc.stderr
    (out / "pipeline_info" / "plan.json").mkdir(parents=True)
    proc = biossd("study", "begin", "--outdir", str(out), "--record", json.dumps(RECORD), "--session",
                  json.dumps(SESSION), "--launcher-pid", str(os.getpid()), "--replace-results", check=False)
    assert proc.returncode == 2 and "plan.json is not a file" in proc.stderr and "Traceback" not in proc.stderr, proc.stderr


def test_out_of_range_values_are_refused_naming_the_option(biossd, tmp_path, monkeypatch):
    import pandas as pd

    from biossd.analysis import cost
    from biossd.study.inputs import datasets

    with pytest.raises(cost.CostError, match="--instance_usd_per_hour 1e\\+308"):
        cost.per_run(pd.DataFrame({"target": ["nvme"], "predicted_wall_s": [1.0]}), 1e308)
    with pytest.raises(datasets.DatasetError, match="--size must be at least 1 byte"):
        datasets.prepare("any", tmp_path, tmp_path / "out", 0, 1)
    assert any("root directory" in p for p in schema.path_problems({"scratch_dir": "/"}))
    assert schema.path_problems({"scratch_dir": str(tmp_path)}) == []
    proc = biossd("device", "emulate-hdd", "up", "--mount", str(tmp_path / "m"), "--size", "64M", "--scale", "nan",
                  check=False)
    assert proc.returncode == 2 and "--scale nan: give a positive number" in proc.stderr, proc.stderr
    assert not (tmp_path / "m").exists()


def test_a_prepared_input_that_cannot_fit_is_refused_before_it_is_made(tmp_path, monkeypatch):
    import shutil
    from collections import namedtuple

    from biossd.study.inputs import datasets

    usage = namedtuple("usage", "total used free")
    monkeypatch.setattr(shutil, "disk_usage", lambda where: usage(1 << 30, 1 << 30, 1 << 20))
    with pytest.raises(datasets.DatasetError, match="takes at least 8M"):
        datasets._check_room(tmp_path / "out", 8 << 20)
    assert not (tmp_path / "out").exists()


def test_a_report_over_a_damaged_run_record_says_which_before_any_notebook(tmp_path):
    from biossd.analysis import synthresults
    from biossd.outputs import report

    root = Path(synthresults.write(tmp_path, caps=("1G",), scales=(1,), repeats=1, seed=3, twins=False)["roots"][0])
    damaged = sorted(root.glob("*/runs/*/*/*/*/run.json"))[0]
    damaged.write_text("[1]")
    with pytest.raises(report.ReportError, match=f"{damaged}: a JSON list"):
        report.render([root])
    assert not (root / "report").exists()


# -- what a pipeline's tasks read as root comes only from a folder no one else can write ---------------------------------
def test_a_session_folder_others_can_write_is_refused_and_a_listed_path_off_tracefs_is_never_claimed(tmp_path):
    from biossd.core.files import private_folder
    from biossd.host import tracefs
    from biossd.measure.own_pipeline import task as pipeline_task

    outdir = tmp_path / "out"
    folder = pipeline_task.session_folder(outdir)
    assert folder == outdir / "pipeline_info" and private_folder(folder) is None
    os.chmod(folder, 0o777)
    with pytest.raises(pipeline_task.PipelineTaskError, match="writable by its group or by others.*chmod go-w"):
        pipeline_task.drops_caches({"drop_caches": "once", "session": "s1"}, outdir)
    assert not list(folder.iterdir()), "no mark was made in it"
    os.chmod(folder, 0o755)
    (tmp_path / "elsewhere").mkdir()
    linked = tmp_path / "linked"
    (linked / "pipeline_info").parent.mkdir()
    (linked / "pipeline_info").symlink_to(tmp_path / "elsewhere")
    assert "not a folder" in private_folder(linked / "pipeline_info")
    # A pool list naming a folder that looks like an instance but is not on a tracefs mount.
    fake = tmp_path / "instances" / "biossd-1234-5678-abcdef12"
    fake.mkdir(parents=True)
    assert not tracefs.is_pooled_instance(fake) and not tracefs.is_pooled_instance(tmp_path / "victim.txt")


def test_the_session_leader_is_no_descendant_of_the_task_that_started_it(tmp_path, monkeypatch):
    """Nextflow stops a task (its time limit, a retry) by killing every descendant of the task's
    process: the leader the first task started must not be one, or every task handed to it dies."""
    from biossd.measure.own_pipeline import session as pipeline_session

    said = tmp_path / "leader.txt"

    def leader_says(session, owner, mark, run_task):
        said.write_text(f"{os.getpid()} {os.getppid()}")
        return 0

    monkeypatch.setattr(pipeline_session, "run_leader", leader_says)
    pid = pipeline_session._fork_leader("s", os.getpid(), tmp_path / "mark", None)
    deadline = time.monotonic() + 10
    while not said.exists() or not said.read_text():
        assert time.monotonic() < deadline, "the leader never ran"
        time.sleep(0.01)
    leader, parent = map(int, said.read_text().split())
    assert leader == pid and parent != os.getpid()


def test_a_task_whose_leader_died_alone_starts_a_new_one(tmp_path, monkeypatch):
    """The leader killed alone (its workers may still hold the host lock): the next task does not
    fail; it starts a new leader, which takes the lock once they are done."""
    from biossd.measure.own_pipeline import session as pipeline_session

    dead = subprocess.Popen(["true"])
    dead.wait()
    alive = _sleeper()
    started = []

    def fork_leader(session, owner_pid, mark, run_task):
        started.append(mark.read_text() if mark.exists() else "")
        return dead.pid if len(started) == 1 else alive.pid

    monkeypatch.setattr(pipeline_session, "_fork_leader", fork_leader)
    monkeypatch.setattr(pipeline_session, "_leader_holds", lambda group: len(started) == 2)
    try:
        group = pipeline_session.join("s1", os.getpid(), tmp_path / "out")
        assert group == pipeline_session.token("s1") and len(started) == 2
        mark = tmp_path / "out" / "pipeline_info" / ".biossd-leader-s1.json"
        assert json.loads(mark.read_text())["pid"] == alive.pid
    finally:
        alive.kill()
        alive.wait()
