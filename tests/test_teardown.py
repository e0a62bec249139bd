"""What biossd brings up comes down, and nothing a dead run left is measured beside the next one:
mount and swap paths the kernel writes escaped, a daemon started but not yet recorded, an
emulation still being brought up by hand, and the swap area of a SIGKILLed run."""

from __future__ import annotations

import json
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from biossd.core.files import is_mount_point
from biossd.host import swap
from biossd.host.hdd import emulate
from biossd.host.slurm import cluster
from biossd.measure import manifest

pytestmark = pytest.mark.integration


@pytest.mark.parametrize("name, swap_size", [("back\\slash", None), ("with space", "16M"), ("tab\there", None)])
def test_a_disk_at_a_path_the_kernel_escapes_comes_down(biossd, tmp_path, root_required, name, swap_size):
    """The kernel's tables write a space, a tab and a backslash in a path as octal escapes: `down`
    still finds the mount and the swap area, and leaves nothing."""
    mount = tmp_path / name
    biossd("device", "emulate-hdd", "up", "--mount", str(mount), "--size", "64M", "--profile", "native",
           "--backing-dir", str(tmp_path), *(["--swap", swap_size] if swap_size else []))
    assert is_mount_point(mount)
    if swap_size:
        assert any(str(mount) in s for s in swap.active_swaps()), swap.active_swaps()
    biossd("device", "emulate-hdd", "down", "--mount", str(mount))
    assert not is_mount_point(mount) and not any(str(tmp_path) in s for s in swap.active_swaps())
    assert not emulate.all_states() and not list(tmp_path.glob(f"{emulate.BACKING_PREFIX}*"))
    assert "biossd" not in subprocess.run(["losetup", "-a"], capture_output=True, text=True).stdout


def test_cleanup_leaves_an_emulation_still_being_brought_up(biossd, env, tmp_path, root_required):
    """`cleanup` (and every study's reconcile) during a hand-made `up`: the emulation is the `up`'s
    until it is up, so it is not taken for a broken leftover."""
    mount = tmp_path / "race"
    up = subprocess.Popen([sys.executable, "-m", "biossd", "device", "emulate-hdd", "up", "--mount", str(mount),
                           "--size", "256M", "--backing-dir", str(tmp_path)], env=env, stderr=subprocess.PIPE, text=True)
    try:
        deadline = time.monotonic() + 30
        while not emulate.all_states() and time.monotonic() < deadline:
            time.sleep(0.02)
        assert emulate.all_states(), "up made no state"
        biossd("cleanup")
        _, err = up.communicate(timeout=120)
        assert up.returncode == 0, err
        assert emulate.status_of(emulate.all_states()[0])["healthy"]
    finally:
        if up.poll() is None:
            up.kill()
        biossd("device", "emulate-hdd", "down", "--mount", str(mount), check=False)
        biossd("cleanup", check=False)


#: Touches this many MiB and holds them: under a 64M cap with swap, most of it is swapped out.
HOG = "import time; b = bytearray({mib} << 20); [b.__setitem__(i, 1) for i in range(0, len(b), 4096)]; time.sleep(60)"


def _biossd_swaps() -> list[str]:
    return [s for s in swap.active_swaps() if s.startswith("/dev/loop")]


def test_a_killed_run_s_swap_area_is_down_before_the_next_run_measures(biossd, env, tmp_path, root_required):
    """A run SIGKILLed while its tool is swapped out leaves its swap area on at the run's priority:
    the next run (no cleanup between) takes it down before it measures, and says so; during the
    next run only its own swap area is on."""
    before = _biossd_swaps()
    first = subprocess.Popen([sys.executable, "-m", "biossd", "profile", "--mem", "64M", "--swap", "256M",
                              "--swap-dir", str(tmp_path), "--blocktrace", "off", "--out", str(tmp_path / "r1"), "--",
                              sys.executable, "-c", HOG.format(mib=160)], env=env, cwd=tmp_path,
                             stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        deadline = time.monotonic() + 60
        used = 0
        while used == 0 and time.monotonic() < deadline:
            lines = Path("/proc/swaps").read_text().splitlines()[1:]
            used = sum(int(line.split()[3]) for line in lines if line.startswith("/dev/loop"))
            time.sleep(0.2)
        assert used > 0, "the first run never swapped"
        first.send_signal(signal.SIGKILL)
        first.wait()
        assert len(_biossd_swaps()) == len(before) + 1, "the killed run's swap area is still on"
        second = tmp_path / "r2"
        biossd("profile", "--mem", "64M", "--swap", "64M", "--swap-dir", str(tmp_path), "--blocktrace", "off",
               "--out", str(second), "--", "cat", "/proc/swaps", cwd=tmp_path)
        during = [line.split()[0] for line in (second / "stdout.log").read_text().splitlines()[1:]
                  if line.startswith("/dev/loop")]
        body = manifest.read_manifest(second)
        reaped = body["host_lock"]["reaped_stale_holder"]
        assert len(during) == len(before) + 1, (during, reaped)
        assert any("took down its swap area" in line for line in reaped), reaped
    finally:
        if first.poll() is None:
            first.kill()
        biossd("cleanup", check=False)
    assert _biossd_swaps() == before


def test_a_daemon_started_but_not_yet_recorded_is_stopped_by_the_rollback(tmp_path, monkeypatch, root_required):
    """An interrupt between a daemon's start and its record (here: the save that records munged
    fails): the rollback finds it by its command line, which names the cluster's directory, and
    removes the directory it made."""
    if cluster.missing_features():
        pytest.fail("SLURM is not installed: " + "; ".join(cluster.missing_features()))
    real_save = cluster._save
    state_dir = tmp_path / "slurm-b"

    def save(state):
        if "munged" in state.get("daemons", {}):
            monkeypatch.setattr(cluster, "_save", real_save)
            raise KeyboardInterrupt(signal.SIGTERM)
        real_save(state)

    monkeypatch.setattr(cluster, "_save", save)
    with pytest.raises(KeyboardInterrupt):
        cluster.up(state_dir=state_dir)
    assert cluster._daemons_of(state_dir) == []
    assert not state_dir.exists()
    assert json.dumps(cluster.foreign_daemons()) == "[]"


def _running(fragment: str) -> list[str]:
    return subprocess.run(["pgrep", "-f", fragment], capture_output=True, text=True).stdout.split()


def _started(fragment: str, within_s: float = 30) -> bool:
    deadline = time.monotonic() + within_s
    while not _running(fragment) and time.monotonic() < deadline:
        time.sleep(0.1)
    return bool(_running(fragment))


def test_what_a_run_leaves_running_is_stopped_with_or_without_a_cap(biossd, env, tmp_path, root_required):
    """Every run, capped or not, is in a cgroup of its own: a background child still running when
    the command ends normally is stopped with the run; a `setsid` grandchild of a SIGKILLed run
    (outside its session) is stopped by the next run before it measures."""
    biossd("profile", "--mem", "none", "--blocktrace", "off", "--out", str(tmp_path / "r3"), "--",
           "sh", "-c", "sleep 92 >/dev/null 2>&1 &")
    assert _running("^sleep 92$") == []
    killed = subprocess.Popen([sys.executable, "-m", "biossd", "profile", "--mem", "none", "--blocktrace", "off",
                               "--out", str(tmp_path / "r5"), "--", "sh", "-c", "setsid sleep 93 & sleep 60"],
                              env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        assert _started("^sleep 93$"), "the grandchild never started"
        killed.send_signal(signal.SIGKILL)
        killed.wait()
        biossd("profile", "--mem", "none", "--blocktrace", "off", "--out", str(tmp_path / "r6"), "--", "true")
        assert _running("^sleep 93$") == []
    finally:
        for pid in _running("^sleep 9[23]$"):
            subprocess.run(["kill", "-9", pid])
        biossd("cleanup", check=False)


def test_a_run_without_a_cgroup_of_its_own_leaves_nothing_running(biossd, env, tmp_path, root_required):
    """A run whose cap someone else enforces (`--cap-backend external`: no cgroup of its own, as a
    user without root has none): what its command leaves running — a `setsid` grandchild, outside
    its session — is found by the run's tag in its environment and stopped: at the run's end, and
    after a SIGKILL by the next run before it measures (which records what it reaped)."""
    from biossd.measure import manifest

    external = ["profile", "--cap-backend", "external", "--mem", "1G", "--blocktrace", "off"]
    biossd(*external, "--out", str(tmp_path / "r1"), "--", "sh", "-c", "setsid sleep 94 >/dev/null 2>&1 &")
    try:
        assert _running("^sleep 94$") == []
        left = manifest.read_manifest(tmp_path / "r1")["left_running"]
        assert left["tag_variable"] == "BIOSSD_RUN" and [k["command"] for k in left["killed"]] == ["sleep 94"]
        from biossd.features import extract

        table = extract.features_table([tmp_path / "r1"])
        assert table[extract.LEFT_RUNNING_COLUMN].tolist() == [1], "the run table counts what the run left running"
        killed = subprocess.Popen([sys.executable, "-m", "biossd", *external, "--out", str(tmp_path / "r2"), "--",
                                   "sh", "-c", "setsid sleep 95 & sleep 60"],
                                  env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        assert _started("^sleep 95$"), "the grandchild never started"
        killed.send_signal(signal.SIGKILL)
        killed.wait()
        biossd(*external, "--out", str(tmp_path / "r3"), "--", "true")
        assert _running("^sleep 95$") == []
        reaped = manifest.read_manifest(tmp_path / "r3")["host_lock"]["reaped_stale_holder"]
        assert any("carrying its run's tag" in line for line in reaped), reaped
    finally:
        for pid in _running("^sleep 9[45]$"):
            subprocess.run(["kill", "-9", pid])
        biossd("cleanup", check=False)
