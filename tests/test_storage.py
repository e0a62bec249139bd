"""Storage classes: bad input is refused before anything is brought up."""

import pytest

from biossd.host import emulate
from biossd.measure import storage


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


def test_unknown_profile_names_the_known_ones(biossd, tmp_path):
    proc = biossd("storage", "up", "--root", str(tmp_path), "--classes", "ssd,hdd", "--emulate", "hdd=nosuch",
                  check=False)
    assert proc.returncode == 2 and "seagate-barracuda-7200" in proc.stderr
    assert not [d for d in emulate.all_states() if str(tmp_path) in emulate.status_of(d)["mount"]]
