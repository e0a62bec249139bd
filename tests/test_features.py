import json
import math

import numpy as np
import pandas as pd
import pytest

from biossd.features import blockstats, definitions
from biossd.features import extract as features
from biossd.measure import manifest
from biossd.measure.trace import blkbinary
from biossd.study import layout
from conftest import measured_record

LABELS = {"host": "h", "storage": "ssd", "tool": "samtools_sort", "mem": "64M", "scale": "1", "rep": "1"}


def make_run(run_dir, *, wall_s=2.0, major_faults=50, outcome="ok", rusage_ran=True, labels=LABELS, swapped=(30, 20)):
    """A run directory without a block trace: its accounting, and a sampler's record of the host
    swapping ``swapped`` pages in and out over the run."""
    run_dir.mkdir(parents=True)
    collectors = {"blocktrace": {"ran": False, "why": "no tracer here", "files": []}}
    if swapped is not None:
        (run_dir / "sampler.csv").write_text(f"t_s,vmstat_pswpin,vmstat_pswpout\n0.0,100,7\n{wall_s},"
                                             f"{100 + swapped[0]},{7 + swapped[1]}\n")
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


def test_pfault_is_pages_swapped_in_and_out_per_second_and_major_faults_stand_beside_it():
    assert definitions.pfault_per_s(30, 20, 2.0) == 25.0
    assert math.isnan(definitions.pfault_per_s(5, 0, 0.0))
    assert definitions.major_faults_per_s(50, 2.0) == 25.0


def test_row_from_a_run(tmp_path):
    row = features.run_features(make_run(tmp_path / "r", major_faults=80))
    assert row["Pfault"] == 25.0 and row["swap_ins"] == 30 and row["swap_outs"] == 20
    assert row["major_faults_per_s"] == 40.0
    assert row["runtime_s"] == 2.0 and row["cpu_cores_used"] == pytest.approx(0.75)
    assert row["run_dir"] == str(layout.run_relpath(LABELS))
    for feat in features.BLOCK_TRACE_FEATURES:
        assert math.isnan(row[feat])
        assert features.parse_missing(row["missing_reason"])[feat] == "no tracer here"


def test_unmeasured_values_are_nan_with_reason_never_zero(tmp_path):
    row = features.run_features(make_run(tmp_path / "r", rusage_ran=False, outcome="failed"))
    assert math.isnan(row["Pfault"]) and math.isnan(row["runtime_s"])
    assert features.parse_missing(row["missing_reason"])["runtime_s"] == "the command did not start"
    assert "no sampler record" in features.parse_missing(row["missing_reason"])["Pfault"]


@pytest.mark.parametrize("outcome", ["timeout", "oom"])
def test_a_killed_tree_s_faults_are_unknown_not_counted_low(tmp_path, outcome):
    """A child killed under its launcher is never waited for: its faults never reach the
    accounting, so they are NaN with the reason; the host's swapping, sampled, still counts."""
    row = features.run_features(make_run(tmp_path / "r", outcome=outcome, major_faults=23))
    assert math.isnan(row["major_faults"]) and math.isnan(row["major_faults_per_s"])
    assert "killed" in features.parse_missing(row["missing_reason"])["major_faults"]
    assert row["Pfault"] == 25.0


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


def test_block_features_by_hand():
    """Four requests on one device, window 0–10 s: two 4 KiB reads back to back, a 1 MiB write
    elsewhere, then a write right after it; the writes are outstanding 2 s and 1 s."""
    requests = {
        "issue_s": np.array([1.0, 2.0, 3.0, 6.0]), "complete_s": np.array([1.5, 2.5, 5.0, 7.0]),
        "device": np.array([0, 0, 0, 0]), "op": np.array(["R", "R", "W", "W"]),
        "sector": np.array([100, 108, 5000, 5000 + 2048]), "bytes": np.array([4096, 4096, 1 << 20, 4096]),
    }
    tally = blockstats.tally_requests(requests, 0.0, 10.0)
    f = definitions.block_features(tally, 1.0, (100e6, 50e6))
    assert f["Riops"] == 0.2 and f["Wiops"] == 0.2
    assert f["Rsize"] == 4.0 and f["Wsize"] == (1024 + 4) / 2
    assert f["CAR"] == 2 / 4  # the second read, the second write
    assert f["WBlen"] == pytest.approx((2.0 + 1.0) / 10)
    # Butil as SAR's %util: busy 0.5 + 0.5 + 2 + 1 s of the 10 s window.
    assert f["Butil"] == pytest.approx(4.0 / 10)
    assert f["Butil_bytes"] == pytest.approx((8192 / 100e6 + ((1 << 20) + 4096) / 50e6) / 10)


def test_busy_time_is_the_union_of_outstanding_intervals():
    """Overlapping requests count once; a request still outstanding at the window's end counts
    to the end; one completing with nothing issued (issued before the trace) counts nothing."""
    requests = {
        "issue_s": np.array([1.0, 1.5, 4.0, 9.0]), "complete_s": np.array([3.0, 2.0, 4.5, np.nan]),
        "device": np.zeros(4, int), "op": np.array(["R", "W", "R", "W"]),
        "sector": np.array([0, 100, 200, 300]), "bytes": np.full(4, 4096),
    }
    tally = blockstats.tally_requests(requests, 0.0, 10.0)
    assert tally.busy_time == pytest.approx(2.0 + 0.5 + 1.0)
    assert definitions.butil(tally.busy_time, 10.0) == pytest.approx(0.35)


def test_both_feeders_give_the_same_totals():
    """The canonical file (paired rows) and blktrace records (unpaired) count the same."""
    records = blkbinary.synthetic(3000, "mixed", seed=9, merge_share=0.2, depth=4, cpus=2)
    req = blkbinary.to_requests(records)
    t0, t1 = float(records["time"].min()), float(records["time"].max())
    rows = {"issue_s": req["issue_ns"].astype(float),
            "complete_s": np.where(req["complete_ns"] < 0, np.nan, req["complete_ns"]).astype(float),
            "device": req["device"], "op": np.where(req["is_write"], "W", "R"), "sector": req["sector"], "bytes": req["bytes"]}
    a = blockstats.tally_requests(rows, t0, t1)
    b = blockstats.tally_records(np.array_split(records, 5), t0, t1)
    for name in ("n_reads", "n_writes", "n_requests", "read_bytes", "write_bytes", "n_consecutive"):
        assert getattr(a, name) == getattr(b, name), name
    assert a.write_queue_integral == pytest.approx(b.write_queue_integral)
    # Little's law: one write per 20 µs on average, each outstanding 20 µs on average.
    assert b.write_queue_integral / (t1 - t0) == pytest.approx(1.0, rel=0.1)


def test_normalize_logs_wide_columns_and_records_the_rule():
    from biossd.features import normalize

    table = pd.DataFrame({"Riops": [1.0, 10.0, 10000.0], "CAR": [0.2, 0.5, 0.8], "Wiops": [0.0, 5.0, 5000.0],
                          "Rsize": [4.0, 4.0, 4.0]})
    out, rules = normalize.normalize(table, ["Riops", "CAR", "Wiops", "Rsize"])
    assert out["Riops"].tolist() == pytest.approx([0.0, 0.25, 1.0])  # log10: 0, 1, 4
    assert out["CAR"].tolist() == pytest.approx([0.0, 0.5, 1.0])
    assert out["Rsize"].tolist() == [0.0, 0.0, 0.0]
    assert out["Wiops"].min() == 0.0 and out["Wiops"].max() == 1.0
    r = rules.set_index("column")
    assert bool(r.loc["Riops", "log10"]) and not bool(r.loc["CAR", "log10"])
    assert r.loc["Wiops", "shift"] == 5.0 and r.loc["Riops", "log_ratio_threshold"] == normalize.LOG_RATIO
    with pytest.raises(ValueError, match="negative"):
        normalize.normalize(pd.DataFrame({"x": [-1.0, 1.0]}), ["x"])


def test_the_row_carries_the_runs_facts_and_the_side_record_it_was_given(tmp_path):
    """The run table holds how and where a run ran, so nothing downstream reopens it;
    a side's device record is handed in, never looked for above the run directory."""
    run = make_run(tmp_path / "h-ssd" / "runs" / "r")
    body = manifest.read_manifest(run)
    body.update(tool_version="1.16.1", memory_cap={"backend": "cgroup-v1"},
                host={"cpu_model": "X", "cpu_count": 2, "mem_total_bytes": 1 << 34, "kernel": "6.1"},
                collectors={**body["collectors"], "perf": {"ran": False, "why": "no perf here"}})
    manifest.write_manifest(run, body)
    (tmp_path / "h-ssd" / layout.DEVICE_RECORD).write_text(json.dumps(measured_record(
        device="vda", seq_read_mbs=500.0, seq_write_mbs=400.0)))
    alone = features.run_features(run)
    assert math.isnan(alone["device_seq_read_mbs"]) and alone["device_source"] == ""
    (tmp_path / "run1").mkdir()  # a staged run's own record (Nextflow's runs/run1/) is not a side's
    (tmp_path / "run1" / layout.DEVICE_RECORD).write_text("{}")
    records = features.side_device_records([tmp_path])
    assert records == {"h-ssd": tmp_path / "h-ssd" / layout.DEVICE_RECORD}
    row = features.run_features(run, records)
    assert (row["device_name"], row["device_seq_read_mbs"], row["device_source"]) == ("vda", 500.0, "side record")
    assert (row["tool_version"], row["cap_mechanism"], row["trace_mechanism"], row["perf_mechanism"],
            row["storage_mechanism"], row["container_engine"]) == ("1.16.1", "cgroup-v1", "none", "none",
                                                                    "native", "native")
    assert (row["cpu_count"], row["kernel"]) == (2, "6.1")
    table = features.features_table([run], device_records=records)
    back = features.read_table(features.write_table(table, tmp_path / "f.csv"))
    assert back.loc[0, "mem_total_bytes"] == 1 << 34 and back.loc[0, "device_name"] == "vda"


def test_the_device_s_time_splits_into_reads_and_writes_served_one_at_a_time():
    """Two reads issued together are served one after the other: the second's service starts at
    the first's completion; a write after an idle gap is served from its issue."""
    requests = {"issue_s": np.array([0.0, 0.0, 5.0, 9.0]), "complete_s": np.array([1.0, 3.0, 5.5, np.nan]),
                "op": np.array(["R", "R", "W", "R"])}
    assert blockstats.service_split(requests, 0.0, 10.0) == (3.0, 0.5)
