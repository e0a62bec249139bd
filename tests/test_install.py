"""install/bootstrap.sh stops early with a message naming what is missing, and never leaves a
half-installed step looking complete."""

import os
import shutil
import subprocess
from pathlib import Path

import pytest

from conftest import REPO

BOOTSTRAP = REPO / "install" / "bootstrap.sh"
pytestmark = pytest.mark.integration


def run(args, env=None, **kw):
    return subprocess.run([str(BOOTSTRAP), *args], capture_output=True, text=True,
                          env={**os.environ, **(env or {})}, **kw)


def test_refuses_without_root(tmp_path, root_required):
    proc = subprocess.run(
        ["setpriv", "--reuid=65534", "--regid=65534", "--clear-groups", str(BOOTSTRAP), "check"],
        capture_output=True, text=True,
    )
    assert proc.returncode != 0
    assert "must run as root" in proc.stderr


def test_refuses_without_apt_get(tmp_path):
    fakebin = tmp_path / "bin"
    fakebin.mkdir()
    for tool in ("dirname", "id", "bash", "cat", "sha256sum", "cut"):
        os.symlink(shutil.which(tool), fakebin / tool)
    proc = subprocess.run([str(BOOTSTRAP), "check"], capture_output=True, text=True,
                          env={"PATH": str(fakebin)})
    assert proc.returncode != 0
    assert "apt-get not found" in proc.stderr


@pytest.mark.beside
def test_no_network_to_pypi_leaves_no_stamp_and_a_rerun_works(tmp_path):
    venv = tmp_path / "venv"
    offline = {"VENV": str(venv), "PIP_INDEX_URL": "http://127.0.0.1:9/simple", "PIP_NO_CACHE_DIR": "1",
               "PIP_RETRIES": "0", "PIP_TIMEOUT": "2"}
    proc = run(["python"], env=offline, timeout=300)
    assert proc.returncode != 0
    assert "no network to PyPI" in proc.stderr
    assert not (venv / ".stamps" / "python").exists(), "a failed install must not look complete"
    proc = run(["python"], env={"VENV": str(venv)}, timeout=600)
    assert proc.returncode == 0, proc.stderr
    assert (venv / ".stamps" / "python").exists()
    out = subprocess.run([str(venv / "bin" / "biossd"), "--version"], capture_output=True, text=True)
    assert out.returncode == 0 and out.stdout.startswith("biossd ")
    again = run(["python"], env={"VENV": str(venv)}, timeout=60)
    assert again.returncode == 0 and "creating" not in again.stderr, "a second call must skip the step"


def _fake(bin_dir, name, script):
    path = bin_dir / name
    path.write_text("#!/bin/sh\n" + script)
    path.chmod(0o755)


def test_an_interrupted_dpkg_is_finished_and_apt_s_own_error_is_shown(tmp_path, root_required):
    """dpkg left half-way is finished (dpkg --configure -a) before apt runs, apt waits for the
    dpkg lock, and a failing apt-get's own message reaches the user instead of a guess."""
    fakebin, calls = tmp_path / "bin", tmp_path / "calls"
    fakebin.mkdir()
    _fake(fakebin, "dpkg-query", "exit 1\n")
    _fake(fakebin, "dpkg", f'echo "dpkg $*" >> {calls}\n[ "$1" = --audit ] && echo "half-configured: fio"\nexit 0\n')
    _fake(fakebin, "apt-get", f'echo "apt-get $*" >> {calls}\ncase "$*" in *install*) '
                              'echo "E: Unable to locate package nosuchpkg" >&2; exit 100;; esac\nexit 0\n')
    proc = run(["system"], env={"VENV": str(tmp_path / "venv"), "PATH": f"{fakebin}:{os.environ['PATH']}"})
    assert proc.returncode != 0
    assert "E: Unable to locate package nosuchpkg" in proc.stderr and "apt's own words" in proc.stderr
    said = calls.read_text()
    assert "dpkg --configure -a" in said and said.index("dpkg --configure -a") < said.index("apt-get")
    assert "DPkg::Lock::Timeout=" in said


def _start_ticks(pid: int) -> str:
    return Path(f"/proc/{pid}/stat").read_text().rsplit(") ", 1)[1].split()[19]


def test_a_service_policy_a_killed_install_left_is_removed_and_no_other(tmp_path, root_required):
    """The docker install's policy-rc.d ("no service may start") outlives a SIGKILLed install; the
    next call removes it once its maker is gone — never while that install runs, never the host's."""
    policy = tmp_path / "policy-rc.d"
    env = {"BIOSSD_POLICY_RC": str(policy), "VENV": str(tmp_path / "venv")}
    mark = "# made by biossd install/bootstrap.sh (pid {pid}, started {ticks}) for the install of docker.io\nexit 101\n"
    gone = subprocess.Popen(["true"])
    gone.wait()
    policy.write_text("#!/bin/sh\n" + mark.format(pid=gone.pid, ticks=12345))
    proc = run(["check"], env=env)
    assert proc.returncode == 0, proc.stderr
    assert not policy.exists() and f"removed {policy}" in proc.stderr and str(gone.pid) in proc.stderr
    me = os.getpid()
    policy.write_text("#!/bin/sh\n" + mark.format(pid=me, ticks=_start_ticks(me)))
    assert run(["check"], env=env).returncode == 0 and policy.exists(), "its install still runs"
    policy.write_text("#!/bin/sh\n# the host's own policy\nexit 101\n")
    assert run(["check"], env=env).returncode == 0 and policy.read_text().endswith("exit 101\n")


def test_maven_jars_are_checked_against_their_pinned_sums(tmp_path):
    from biossd.study.catalogue import install

    (tmp_path / "a.jar").write_bytes(b"a")
    sums = tmp_path / "sums.txt"
    sums.write_text("ca978112ca1bbdcafac231b39a23dc4da786eff8147c4e72b9807785afee48bb  a.jar\n")
    install.check_sha256sums(tmp_path, sums)
    (tmp_path / "a.jar").write_bytes(b"b")
    with pytest.raises(install.InstallError, match="a.jar: its SHA-256"):
        install.check_sha256sums(tmp_path, sums)
    (tmp_path / "b.jar").write_bytes(b"b")
    with pytest.raises(install.InstallError, match="other jars"):
        install.check_sha256sums(tmp_path, sums)
    for name in ("gatk", "nextflow", "s3proxy"):
        assert (REPO / "install" / name / "sha256sums.txt").read_text().strip(), name


def test_a_component_s_sources_file_names_the_host_s_own_release(tmp_path):
    from biossd.study.catalogue import install

    release = tmp_path / "os-release"
    release.write_text('NAME="Debian GNU/Linux"\nVERSION_CODENAME=trixie\n')
    assert install.debian_suite(release) == "trixie"
    assert install.debian_suite(tmp_path / "none") == install.DEFAULT_DEBIAN_SUITE


def test_nextflow_starts_from_its_archived_classes(env, tool_required):
    """The install archives Nextflow's classes (install/bootstrap.sh, nextflow_classes) and the
    launcher maps them: its own class comes from the archive, not from its jar."""
    tool_required("nextflow")
    proc = subprocess.run(["nextflow", "-version"], env={**env, "NXF_OPTS": "-Xlog:class+load=info"},
                          capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr
    assert "nextflow.cli.Launcher source: shared objects file (top)" in proc.stdout, proc.stdout[:2000]
