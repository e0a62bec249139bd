"""Who a task works for, handed in the environment (src/biossd/core/owners.py): a workflow's tasks
get their owner from ``BIOSSD_OWNER``, not from their scripts, so ``-resume`` finds them cached;
the boot id keeps a pid from meaning anything on another host or after a reboot."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest

from biossd.core import owners


def _env(text: str) -> dict[str, str]:
    return {owners.OWNER_ENV: text}


def test_the_owner_in_the_environment_is_this_host_s_process():
    me = owners.from_environment(_env(f"{owners.boot_id()} {os.getpid()} nextflow (the study's launcher)"))
    assert me is not None and me.pid == os.getpid() and me.alive()
    assert me.label == "nextflow (the study's launcher)"


def test_another_boot_or_a_malformed_value_names_nobody():
    assert owners.from_environment({}) is None
    assert owners.from_environment(_env(f"not-this-boot {os.getpid()} x")) is None
    assert owners.from_environment(_env(f"{owners.boot_id()} notapid")) is None
    assert owners.from_environment(_env("")) is None


def test_a_command_whose_environment_owner_is_gone_refuses(tmp_path):
    gone = subprocess.Popen(["true"])
    gone.wait()
    env = {**os.environ, owners.OWNER_ENV: f"{owners.boot_id()} {gone.pid} nextflow"}
    proc = subprocess.run([sys.executable, "-m", "biossd", "profile", "--mem", "none", "--out", str(tmp_path / "r"),
                           "--", "true"], env=env, capture_output=True, text=True)
    assert proc.returncode == 2 and "BIOSSD_OWNER" in proc.stderr and "is gone" in proc.stderr
    assert not (tmp_path / "r").exists()


def test_a_name_s_owner_is_known_by_pid_and_start_time():
    """cgroups, tracefs instances and swap files are named <prefix><pid>-<start ticks>-<hex>: a
    name whose pid now belongs to another process (reused) is a leftover, not a live run's."""
    from biossd.core import owners

    name = owners.owned_name("biossd-")
    assert owners.owner_alive(name, "biossd-")
    pid, ticks, _ = name[len("biossd-"):].split("-")
    assert int(pid) == os.getpid() and int(ticks) == owners.start_ticks(os.getpid())
    reused = f"biossd-{pid}-{int(ticks) - 1}-abcdef12"
    assert not owners.owner_alive(reused, "biossd-")
    assert owners.owner_alive(f"biossd-{pid}-abcdef12", "biossd-"), "an older name: by pid alone"


def test_only_names_biossd_gives_are_taken_for_leftovers():
    """A cgroup, tracefs instance or swap file is biossd's leftover only by the name it gives
    (pid, start ticks, a random part): `biossd-docker` (the Docker engine's cgroup parent) and a
    user's `biossd-notes` are never reaped."""
    from biossd.core import owners

    assert owners.is_owned_name(owners.owned_name("biossd-"), "biossd-")
    assert owners.is_owned_name(owners.owned_name("biossd-swap-") + ".img", "biossd-swap-")
    assert owners.is_owned_name("biossd-123-ab12cd34", "biossd-")  # an older biossd's
    for other in ("biossd-docker", "biossd-notes", "biossd-1-2", "biossd-12-34-abc"):
        assert not owners.is_owned_name(other, "biossd-"), other


def test_a_service_is_claimed_only_from_a_dead_owner(tmp_path):
    """A service's state directory (SLURM cluster, Docker engine): one up and owned is refused,
    one whose owner died is taken down first, a directory without a record is never touched."""
    import subprocess
    import sys

    from biossd.core import owners, servicestate

    taken: list[object] = []
    live = tmp_path / "live"
    live.mkdir()
    servicestate.save({"dir": str(live), "owner": owners.ProcessRef.current().record()})
    with pytest.raises(RuntimeError, match="already up .*owned by"):
        servicestate.claim(live, "thing", "biossd thing down", taken.append, RuntimeError)
    dead = tmp_path / "dead"
    dead.mkdir()
    gone = subprocess.Popen([sys.executable, "-c", "pass"])
    ref = owners.ProcessRef.of(gone.pid).record()
    gone.wait()
    servicestate.save({"dir": str(dead), "owner": ref})
    assert servicestate.leftover(dead) is not None
    servicestate.claim(dead, "thing", "biossd thing down", taken.append, RuntimeError)
    assert taken == [dead]
    foreign = tmp_path / "foreign"
    foreign.mkdir()
    with pytest.raises(RuntimeError, match="holds no thing record"):
        servicestate.claim(foreign, "thing", "biossd thing down", taken.append, RuntimeError)
