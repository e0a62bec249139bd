"""Storage classes: bad input is refused before anything is brought up."""

import pytest

from biossd.host.hdd import emulate
from biossd.measure import storage
from conftest import measured_record


def test_parse_emulate():
    assert storage.parse_emulate(["hdd=seagate-barracuda-7200"]) == {"hdd": "seagate-barracuda-7200"}
    with pytest.raises(storage.StorageError, match="CLASS=PROFILE"):
        storage.parse_emulate(["hdd"])


def test_emulating_a_class_not_in_the_run_is_refused(tmp_path):
    with pytest.raises(storage.StorageError, match=r"not in --classes: \['nvme'\]"):
        storage.up(["ssd"], tmp_path, {"nvme": "seagate-barracuda-7200"}, 1 << 30)
    with pytest.raises(storage.StorageError, match="lower-case"):
        storage.up(["SSD!"], tmp_path, {}, 1 << 30)


def test_real_classes_keep_the_scratch_dir(tmp_path):
    resolved = storage.up(["ssd", "nvme"], tmp_path / "root", {}, 1 << 30, tmp_path)
    assert resolved == {name: {"scratch": str(tmp_path), "emulated": False} for name in ("ssd", "nvme")}
    assert storage.down(tmp_path / "root") == []


@pytest.mark.integration
def test_unknown_profile_names_the_known_ones(biossd, tmp_path):
    proc = biossd("storage", "up", "--root", str(tmp_path), "--classes", "ssd,hdd", "--emulate", "hdd=nosuch",
                  check=False)
    assert proc.returncode == 2 and "seagate-barracuda-7200" in proc.stderr
    assert not [d for d in emulate.all_states() if str(tmp_path) in emulate.status_of(d)["mount"]]


def _record_of(path, **changes):
    """A device record of the device holding ``path`` as characterize writes one (its measured
    numbers made up: only the device's identity is checked on reuse)."""
    from biossd.host import characterize

    record = measured_record(characterize._facts(path), seq_read_mbs=1.0, seq_write_mbs=1.0)
    for dotted, value in changes.items():
        part, key = dotted.split(".")
        record[part] = {**(record[part] or {}), key: value}
    return record


def test_a_record_of_the_same_device_is_reused_and_another_devices_refused(biossd, tmp_path):
    """--device_records: each class's record of an earlier run (HOST-CLASS/device.json) stands
    for its device when disk, model, serial, size and file system agree; otherwise the class is
    refused, naming the record and each difference."""
    import json

    scratch, earlier = tmp_path / "scratch", tmp_path / "earlier"
    scratch.mkdir()
    (earlier / "h-ssd").mkdir(parents=True)
    # Measured at another path of the same file system, its device then under another name.
    measured = {**_record_of(scratch), "path": "/elsewhere"}
    measured["spec_row"]["device"] = "sdz"
    (earlier / "h-ssd" / "device.json").write_text(json.dumps(measured))
    classes = tmp_path / "storage.json"
    classes.write_text(json.dumps({"ssd": {"scratch": str(scratch), "emulated": False}}))
    out = tmp_path / "out"
    biossd("storage", "characterize", "--input", str(classes), "--reuse", str(earlier), "--host", "h", "-o", str(out))
    reused = json.loads((out / "ssd.json").read_text())
    assert reused["storage_class"] == "ssd" and reused["spec_row"]["seq_read_mbs"] == 1.0
    assert reused["reused"]["from"] == str((earlier / "h-ssd" / "device.json").resolve())
    assert "device.serial" in reused["reused"]["matched_on"]
    assert reused["path"] == str(scratch.resolve()) and reused["reused"]["measured_on"]["path"] == "/elsewhere"
    assert reused["spec_row"]["device"] == reused["device"]["name"] != "sdz", "the device as it is now"
    assert [p.name for p in scratch.iterdir()] == [], "nothing was measured"

    for changes, says in (({"device.size_bytes": 1}, "device.size_bytes 1 there"),
                          ({"emulation.profile": "seagate-barracuda-7200"},
                           "emulation seagate-barracuda-7200 there, none (a real disk) here")):
        (earlier / "h-ssd" / "device.json").write_text(json.dumps(_record_of(scratch, **changes)))
        proc = biossd("storage", "characterize", "--input", str(classes), "--reuse", str(earlier), "--host", "h",
                      "-o", str(tmp_path / "refused"), check=False)
        assert proc.returncode == 2, proc.stderr
        assert says in proc.stderr and "h-ssd/device.json" in proc.stderr and "Measure it again" in proc.stderr
        assert not list((tmp_path / "refused").glob("*.json"))
