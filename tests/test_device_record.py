"""The device record's schema (src/biossd/host/schemas/device.schema.json): a measured record, a
stub-run's and a synthetic one follow it; a record that does not is refused when written and when
read, naming the file and the field."""

from __future__ import annotations

import json
from pathlib import Path

import jsonschema
import pytest

from biossd.analysis import synthresults
from biossd.host import characterize, devicerecord

MEASURED = {
    "path": "/scratch", "device": {"name": "nvme0n1", "disk": "nvme0n1", "size_bytes": 10**12, "rotational": False},
    "mount": {"fstype": "ext4"}, "emulation": None, "file_bytes": 1 << 28, "job_s": 2.0, "fio_version": "fio-3.33",
    "results": {"direct_seq_read": {"mb_per_s": 2000.0}},
    "spec_row": {"device": "nvme0n1", "seq_read_mbs": 2000.0, "seq_write_mbs": 1500.0, "rand_read_iops": 12000.0,
                 "rand_write_iops": 40000.0, "rand_read_iops_qd32": 300000.0, "rand_write_iops_qd32": 200000.0},
}


def test_the_schema_is_json_schema_2020_12():
    jsonschema.Draft202012Validator.check_schema(json.loads(devicerecord.SCHEMA_PATH.read_text()))


def test_measured_stub_and_synthetic_records_follow_it(tmp_path):
    assert devicerecord.problems(MEASURED) == []
    assert devicerecord.problems({"stub": True, "spec_row": {"seq_read_mbs": 1, "seq_write_mbs": 1}}) == []
    roots = synthresults.write(tmp_path, caps=("1G",), scales=(1,), repeats=1, seed=3)["roots"]
    records = sorted(p for root in roots for p in Path(root).glob("*/device.json"))
    assert len(records) == 2 and all(devicerecord.read(p)["synthetic"] for p in records)


@pytest.mark.parametrize("change, field", [
    ({"spec_row": {**MEASURED["spec_row"], "seq_read_mbs": 0}}, "spec_row.seq_read_mbs"),
    ({"spec_row": {k: v for k, v in MEASURED["spec_row"].items() if k != "rand_read_iops_qd32"}}, "spec_row"),
    ({"job_s": "2s"}, "job_s"),
    ({"device": {"disk": "sda"}}, "device"),
    ({"results": {}}, "results"),
])
def test_a_wrong_record_is_refused_naming_the_file_and_the_field(tmp_path, change, field):
    path = tmp_path / "device.json"
    with pytest.raises(devicerecord.DeviceRecordError, match=rf"{path}: .*field {field}: "):
        devicerecord.write(path, {**MEASURED, **change})
    assert not path.exists(), "nothing is written"
    path.write_text(json.dumps({**MEASURED, **change}))
    with pytest.raises(devicerecord.DeviceRecordError, match=rf"{path}: .*field {field}: "):
        devicerecord.read(path)


def test_a_measured_record_is_missing_nothing_a_stub_may_leave_out():
    lacking = {k: v for k, v in MEASURED.items() if k not in ("results", "fio_version")}
    said = " ".join(devicerecord.problems(lacking))
    assert "'results' is a required property" in said and "'fio_version' is a required property" in said


def test_a_stub_record_cannot_stand_for_a_device(tmp_path):
    path = tmp_path / "device.json"
    devicerecord.write(path, {"stub": True, "spec_row": {"seq_read_mbs": 1, "seq_write_mbs": 1}})
    with pytest.raises(characterize.CharacterizeError, match="stub-run device record, not a measurement"):
        characterize.reuse(path, tmp_path)
