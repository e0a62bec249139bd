"""The two storage classes differ only in the device: each class's loop devices (file system and a
run's swap) carry one queue policy but for the rotational flag, which tells the class's truth;
every run checks that before its window opens, and a mismatch is a harness error."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from biossd.host import devices
from biossd.measure import devicecheck, manifest

PROGRAMS = Path(__file__).parent / "programs"
PROFILE = "seagate-barracuda-7200"


def fake_device(root: Path, name: str, **queue: object) -> None:
    """A block device in a fake /sys/block: its queue files, and a loop device's direct-I/O flag."""
    settings = {"rotational": "0", "read_ahead_kb": "128", "scheduler": "[none] mq-deadline", "wbt_lat_usec": "0",
                "dio": "1", **{k: str(v) for k, v in queue.items()}}
    (root / name / "queue").mkdir(parents=True)
    (root / name / "loop").mkdir()
    (root / name / "loop" / "dio").write_text(settings.pop("dio") + "\n")
    for key, value in settings.items():
        (root / name / "queue" / key).write_text(value + "\n")


def test_a_device_off_its_class_s_policy_is_named_and_a_real_disk_is_not_held(tmp_path, monkeypatch):
    monkeypatch.setattr(devices, "SYS_BLOCK", tmp_path)
    fake_device(tmp_path, "loop1", rotational=0)          # the emulated HDD reporting flash: today's inversion
    fake_device(tmp_path, "loop5", read_ahead_kb=2560)    # its swap, with another read-ahead
    fake_device(tmp_path, "vda", rotational=1)
    hdd = devices.queue_policy(rotational=True)
    expected = devicecheck.expected_policies({"loop_device": "/dev/loop1", "queue": hdd}, "loop5", hdd)
    record = devicecheck.check(["loop1", "loop5", "vda"], expected)
    assert not record["ok"] and record["not_held"] == ["vda"]
    assert record["problems"] == ["loop1 rotational is False, the class's is True",
                                  "loop5 rotational is False, the class's is True",
                                  "loop5 read_ahead_kb is 2560, the class's is 128"]
    assert "Nothing was measured" in devicecheck.problem_text(record)
    devices.apply_queue_policy("loop1", hdd)
    devices.apply_queue_policy("loop5", hdd)
    assert devicecheck.check(["loop1", "loop5", "vda"], expected)["ok"]


def test_a_loop_device_without_direct_io_fails_the_check(tmp_path, monkeypatch):
    monkeypatch.setattr(devices, "SYS_BLOCK", tmp_path)
    fake_device(tmp_path, "loop2", dio=0)
    record = devicecheck.check(["loop2"], {"loop2": devices.queue_policy(False)})
    assert record["problems"] == ["loop2 does not do direct I/O to its backing file"]
    assert devicecheck.expected_policies(None, None, None) == {}  # a real disk, no swap: nothing held


@pytest.mark.integration
def test_both_classes_differ_only_in_the_rotational_flag_and_a_changed_one_stops_the_run(biossd, tmp_path,
                                                                                         root_required):
    root = tmp_path / "mnt"
    biossd("storage", "up", "--root", str(root), "--classes", "ssd,hdd", "--emulate", "ssd=native",
           "--emulate", f"hdd={PROFILE}", "--size", "512M", "--data-memory", "16M", "-o", str(tmp_path / "s.json"))
    try:
        storage = json.loads((tmp_path / "s.json").read_text())
        assert storage["hdd"]["scale"] == 64 and storage["ssd"]["write_through"] and not storage["hdd"]["write_through"]
        facts = {}
        for name in ("ssd", "hdd"):
            run = tmp_path / f"run-{name}"
            biossd("profile", "--mem", "32M", "--swap", "64M", "--out", str(run), "--",
                   sys.executable, str(PROGRAMS / "memory_hog.py"), "8", cwd=Path(storage[name]["scratch"]))
            body = manifest.read_manifest(run)
            assert body["outcome"] == "ok" and body["device_check"]["ok"]
            assert len(body["device_check"]["checked"]) == 2  # the file system's loop and the swap's
            facts[name] = {f["name"]: f for f in body["device_facts"]}
        for name, rotational in (("ssd", False), ("hdd", True)):
            for fact in facts[name].values():  # file system and swap alike
                assert fact["rotational"] is rotational and fact["loop_direct_io"] is True
                assert {k: fact[k] for k in devices.EQUAL_QUEUE_SETTINGS} == devices.EQUAL_QUEUE_SETTINGS
        loop = Path(storage["hdd"]["device"]).name
        Path(f"/sys/block/{loop}/queue/rotational").write_text("0")  # what the kernel did before
        failed = biossd("profile", "--mem", "32M", "--out", str(tmp_path / "run-bad"), "--", "true",
                        cwd=Path(storage["hdd"]["scratch"]), check=False)
        assert failed.returncode == 2 and f"{loop} rotational is False, the class's is True" in failed.stderr
        assert not (tmp_path / "run-bad").exists()
    finally:
        biossd("storage", "down", "--root", str(root))
    assert not subprocess.run(["losetup", "-j", str(root)], capture_output=True, text=True).stdout
