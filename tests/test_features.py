import json
import math

import pandas as pd
import pytest

from biossd import features, layout, manifest

LABELS = {"host": "h", "storage": "ssd", "tool": "samtools_sort", "mem": "64M", "scale": "1", "rep": "1"}


def make_run(run_dir, *, wall_s=2.0, major_faults=50, outcome="ok", rusage_ran=True, labels=LABELS):
    run_dir.mkdir(parents=True)
    collectors = {"blocktrace": {"ran": False, "why": "no tracer here", "files": []}}
    if rusage_ran:
        (run_dir / "rusage.json").write_text(json.dumps({
            "wall_s": wall_s, "user_s": 1.0, "sys_s": 0.5, "max_rss_kib": 1000,
            "major_faults": major_faults, "minor_faults": 7, "read_bytes": 4096, "write_bytes": 8192,
        }))
        collectors["rusage"] = {"ran": True, "why": None, "files": ["rusage.json"]}
    else:
        collectors["rusage"] = {"ran": False, "why": "the command did not start", "files": []}
    manifest.write_manifest(run_dir, {"outcome": outcome, "labels": labels, "collectors": collectors})
    return run_dir


def test_pfault_is_major_faults_per_second():
    assert features.pfault_per_s(50, 2.0) == 25.0
    assert math.isnan(features.pfault_per_s(5, 0.0))


def test_row_from_a_run(tmp_path):
    row = features.run_features(make_run(tmp_path / "r"))
    assert row["Pfault"] == 25.0
    assert row["runtime_s"] == 2.0 and row["cpu_cores_used"] == pytest.approx(0.75)
    assert row["run_dir"] == str(layout.run_relpath(LABELS))
    for feat in features.BLOCK_TRACE_FEATURES:
        assert math.isnan(row[feat])
        assert features.parse_missing(row["missing_reason"])[feat] == "no tracer here"


def test_unmeasured_values_are_nan_with_reason_never_zero(tmp_path):
    row = features.run_features(make_run(tmp_path / "r", rusage_ran=False, outcome="failed"))
    assert math.isnan(row["Pfault"]) and math.isnan(row["runtime_s"])
    assert features.parse_missing(row["missing_reason"])["Pfault"] == "the command did not start"


def test_table_skips_incomplete_runs_and_round_trips(tmp_path, caplog):
    make_run(tmp_path / "a" / "1")
    make_run(tmp_path / "a" / "2", labels={**LABELS, "rep": "2"}, major_faults=10)
    incomplete = tmp_path / "a" / "3"
    incomplete.mkdir()
    (incomplete / "rusage.json").write_text("{}")
    dirs = features.find_run_dirs([tmp_path])
    assert [d.name for d in dirs] == ["1", "2"]
    assert "incomplete" in caplog.text
    table = features.features_table(dirs)
    assert list(table["rep"]) == ["1", "2"]
    for suffix in (".csv", ".parquet"):
        out = features.write_table(table, tmp_path / f"features{suffix}")
        back = features.read_table(out)
        assert len(back) == 2 and list(back.columns) == list(table.columns)
        pd.testing.assert_series_equal(back["Pfault"], table["Pfault"])


def test_read_table_refuses_a_foreign_csv(tmp_path):
    (tmp_path / "x.csv").write_text("a,b\n1,2\n")
    with pytest.raises(ValueError, match="missing columns"):
        features.read_table(tmp_path / "x.csv")


def test_format_and_parse_missing_are_inverse():
    missing = {"Butil": "no trace", "CAR": "no trace", "Pfault": "no accounting"}
    assert features.parse_missing(features.format_missing(missing)) == missing
