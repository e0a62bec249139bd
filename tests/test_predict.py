"""Prediction of a run's runtime on another device: the device models, the stream a
run recorded, the runtime model, and its refusals."""

import json
import math
import os

import numpy as np
import pytest

from biossd.analysis import predict
from biossd.cli import main
from biossd.host.models import devicemodels, diskmodel
from biossd.measure import manifest
from biossd.measure.trace import tracefile
from conftest import measured_record

KIB = 1024


def stream(n, *, write=False, sequential=True, size=4 * KIB, depth=1, span=10**12):
    """``n`` requests one after another, or at random over ``span`` bytes (a 1 TB disk's stroke)."""
    offset = (np.arange(n, dtype=np.int64) * size if sequential else
              np.random.default_rng(7).integers(0, span // size, n, dtype=np.int64) * size)
    return devicemodels.Stream(is_write=np.full(n, write), offset=offset, nbytes=np.full(n, size, np.int64),
                               depth=np.full(n, depth), idle_ms=np.zeros(n), new_stream=np.zeros(n, bool))


def test_busy_time_is_the_union_of_request_intervals():
    issue = np.array([0.0, 0.5, 2.0, 2.1])
    complete = np.array([1.0, 1.5, 2.2, 3.0])
    assert predict.busy_s(issue, complete) == pytest.approx(1.5 + 1.0)
    assert predict.busy_s(np.array([]), np.array([])) == 0.0


def test_hdd_target_serves_random_4k_at_its_spec_iops_and_a_stream_at_media_rate():
    """The HDD target is the emulator's model (biossd.host.models.diskmodel): its mean random 4 KiB
    read over the whole stroke costs the spec's 1 / IOPS, a sequential stream moves at the spec's
    MB/s; scaled by a study's D, its stroke is D times shorter."""
    barracuda = devicemodels.paper_target("Seagate Barracuda")
    random = barracuda.serve(stream(10_000, sequential=False))
    assert np.sum(random.mean_ms) / 1000 == pytest.approx(10_000 / 79.0, rel=0.02)
    scaled = barracuda.scaled(160.0).serve(stream(10_000, sequential=False, span=10**12 // 160))
    assert np.sum(scaled.mean_ms) == pytest.approx(np.sum(random.mean_ms), rel=0.02)  # the same stroke
    assert barracuda.scaled(160.0).scale == 160.0 and barracuda.scale == 1.0
    assert np.all(random.var_ms2[1:] > 0)  # the first starts where the head rests
    seq = barracuda.serve(stream(4096, size=1 << 20))
    assert np.sum(seq.mean_ms) / 1000 == pytest.approx(4096 * (1 << 20) / (156 * diskmodel.MB), rel=0.01)
    assert np.all(seq.var_ms2 == 0)


def test_flash_target_gains_from_queue_depth_up_to_its_saturated_iops(tmp_path):
    record = tmp_path / "device.json"
    record.write_text(json.dumps(measured_record(device="nvme0n1", seq_read_mbs=2000, seq_write_mbs=1500,
                                                 rand_read_iops=10_000, rand_write_iops=20_000,
                                                 rand_read_iops_qd32=200_000, rand_write_iops_qd32=150_000)))
    flash = devicemodels.load_target(record)
    qd1 = np.sum(flash.serve(stream(1000, sequential=False)).mean_ms) / 1000
    qd4 = np.sum(flash.serve(stream(1000, sequential=False, depth=4)).mean_ms) / 1000
    qd64 = np.sum(flash.serve(stream(1000, sequential=False, depth=64)).mean_ms) / 1000
    assert qd1 == pytest.approx(1000 / 10_000) and qd4 == pytest.approx(1000 / 40_000)
    assert qd64 == pytest.approx(1000 / 200_000)


def test_paper_ssds_without_depth_1_iops_get_an_interval():
    ssd = devicemodels.paper_target("samsung-840-pro")
    assert ssd.kind == "SSD" and ssd.read_iops_qd1 is None
    served = ssd.serve(stream(1000, sequential=False))
    assert np.all(served.low_ms < served.mean_ms) and np.all(served.mean_ms < served.high_ms)
    assert [t.name for t in devicemodels.paper_targets("SSD")][:2] == ["Samsung 830", "Samsung 840 Pro"]
    assert len(devicemodels.paper_targets("HDD")) == 3


def test_a_device_file_missing_a_field_is_refused_with_its_name(tmp_path):
    (tmp_path / "my.yaml").write_text("name: mine\nkind: SSD\nseq_read_mbs: 500\nseq_write_mbs: 400\n"
                                      "read_iops_qd32: 90000\n")
    with pytest.raises(devicemodels.DeviceModelError, match="missing field 'write_iops_qd32'"):
        devicemodels.load_target(tmp_path / "my.yaml")
    (tmp_path / "r.json").write_text(json.dumps({"spec_row": {"seq_read_mbs": 1, "seq_write_mbs": 1}}))
    with pytest.raises(devicemodels.DeviceModelError, match="r.json: .*field spec_row: 'rand_read_iops' is a required"):
        devicemodels.load_target(tmp_path / "r.json")
    with pytest.raises(devicemodels.DeviceModelError, match="no device 'floppy'"):
        devicemodels.load_target("floppy")


def make_run(run_dir, requests, *, wall_s, cpu_s, trace=True):
    """A run directory with a canonical block trace of ``requests`` (issue, complete, op,
    sector, bytes[, rwbs: the kernel's flags, else the op]) starting at t = 10 s, and its accounting."""
    run_dir.mkdir(parents=True)
    (run_dir / "rusage.json").write_text(json.dumps({"wall_s": wall_s, "user_s": cpu_s, "sys_s": 0.0}))
    collectors = {"rusage": {"ran": True}, "blocktrace": {"ran": trace, "why": None if trace else "no tracer here"}}
    if trace:
        rwbs = [r[5] if len(r) > 5 else r[2] for r in requests]
        issue, complete, op, sector, nbytes = (np.array(c) for c in zip(*(r[:5] for r in requests)))
        n = len(issue)
        tracefile.write_trace(run_dir / tracefile.BLOCKTRACE_FILE, {
            "issue_s": 10.0 + issue, "complete_s": 10.0 + complete, "device": ["loop0"] * n, "op": op, "rwbs": rwbs,
            "sector": sector.astype(np.int64), "bytes": nbytes.astype(np.int64), "pid": np.ones(n, np.int32),
            "comm": ["t"] * n, "error": np.zeros(n, np.int32)})
    manifest.write_manifest(run_dir, {"outcome": "ok", "command_started_s": 10.0, "wall_s": wall_s,
                                      "labels": {"host": "h", "storage": "ssd", "tool": "t", "mem": "1G",
                                                 "scale": "1", "rep": "1"}, "collectors": collectors})
    return run_dir


def test_runtime_is_time_off_the_device_plus_the_targets_busy_time(tmp_path):
    """A run of 10 s whose device was busy 4 s with 100 random 4 KiB reads (one at a time), and
    that computed 6 s: on the Barracuda the reads take what its model says they take."""
    sectors = np.random.default_rng(3).integers(0, 10**12 // 512, 100)
    reqs = [(i * 0.04, i * 0.04 + 0.04, "R", int(sectors[i]), 4096) for i in range(100)]
    run = make_run(tmp_path / "r", reqs, wall_s=10.0, cpu_s=6.0)
    barracuda = devicemodels.paper_target("Seagate Barracuda")
    table = predict.predict_runs([run], [barracuda])
    row = table.iloc[0]
    assert row["requests"] == 100 and row["busy_s"] == pytest.approx(4.0)
    assert row["off_device_s"] == pytest.approx(6.0) and row["overlap_s"] == 0.0
    alone, _ = diskmodel.DiskModel(barracuda.profile, seed=None).stream_ms(
        ["read"] * 100, (sectors * 512).tolist(), [4096] * 100, [0.0] * 100)
    assert row["predicted_runtime_s"] == pytest.approx(6.0 + sum(alone) / 1000)
    assert sum(alone) / 1000 == pytest.approx(100 / 79.0, rel=0.15)  # random over the whole stroke
    assert row["predicted_low_s"] < row["predicted_runtime_s"] < row["predicted_high_s"]
    assert row["predicted_speedup"] == pytest.approx(row["predicted_runtime_s"] / 10.0)


def test_compute_that_overlapped_the_io_bounds_the_busy_stretch_from_below(tmp_path):
    """A CPU-bound run (10 s of CPU in 10 s) writing synchronously as it computes: a faster device
    cannot shorten it."""
    reqs = [(i * 0.5, i * 0.5 + 0.4, "W", i * 2048, 1 << 20, "WS") for i in range(10)]
    run = make_run(tmp_path / "r", reqs, wall_s=10.0, cpu_s=10.0)
    row = predict.predict_runs([run], [devicemodels.paper_target("Intel 520")]).iloc[0]
    assert row["overlap_s"] == pytest.approx(4.0)
    assert row["predicted_runtime_s"] == pytest.approx(10.0)


def test_background_writeback_is_served_but_not_waited_for(tmp_path):
    """A run of 2 s that wrote 100 MiB through the page cache (writes without the kernel's
    synchronous flag, as the flusher issues them) and read 10 random blocks itself: its predicted
    runtime is that of its reads alone; the same writes made synchronous (fsync) are waited for."""
    writes = [(0.1 + i * 0.01, 0.1 + i * 0.01 + 0.001, "W", i * 2048, 1 << 20) for i in range(100)]
    reads = [(1.5 + i * 0.02, 1.5 + i * 0.02 + 0.01, "R", (i * 7919 % 1000) * (1 << 21), 4096) for i in range(10)]
    targets = [devicemodels.paper_target("Seagate Barracuda"), devicemodels.paper_target("Intel 520")]

    def predicted(name, reqs):
        return predict.predict_runs([make_run(tmp_path / name, reqs, wall_s=2.0, cpu_s=1.0)], targets)

    background, synced, alone = (predicted("bg", writes + reads),
                                 predicted("fs", [w + ("WS",) for w in writes] + reads), predicted("r", reads))
    assert list(background["requests"]) == [110, 110] and list(alone["requests"]) == [10, 10]
    assert list(background["busy_s"]) == pytest.approx([0.1, 0.1])
    assert list(synced["busy_s"]) == pytest.approx([0.2, 0.2])
    assert list(background["predicted_runtime_s"]) == pytest.approx(list(alone["predicted_runtime_s"]), rel=0.01)
    assert (synced["target_busy_s"] > background["target_busy_s"]).all()


def test_a_run_without_a_block_trace_is_nan_with_the_reason(tmp_path, capsys):
    run = make_run(tmp_path / "r", [], wall_s=1.0, cpu_s=1.0, trace=False)
    row = predict.predict_runs([run], [devicemodels.paper_target("Intel 520")]).iloc[0]
    assert math.isnan(row["predicted_runtime_s"]) and row["why"] == "no block trace (no tracer here)"
    out = tmp_path / "p.parquet"
    assert main(["predict", str(run), "--device", "paper:Intel 520", "--device", "seagate-barracuda-7200",
                 "-o", str(out), "--json", str(tmp_path / "p.json")]) == 0
    assert "2 rows not predicted" in capsys.readouterr().err
    body = json.loads((tmp_path / "p.json").read_text())
    assert body["predictions"][0]["predicted_runtime_s"] is None and len(body["targets"]) == 2
    assert main(["predict", str(run), "--device", "nosuch"]) == 2


@pytest.mark.integration
def test_the_io_throttle_is_made_for_this_process_and_removed_on_an_error(root_required):
    """The third device's throttle (biossd.host.iothrottle): a cgroup of its own with the limits,
    this process in it while it lasts, and nothing left afterwards, also after an exception."""
    from biossd.host import iothrottle

    if iothrottle.backend() == "none":
        pytest.skip("no cgroup I/O throttle on this host")
    disk = next(p.name for p in sorted(__import__("pathlib").Path("/sys/block").iterdir())
                if not p.name.startswith(("loop", "ram", "zram")))
    with pytest.raises(RuntimeError, match="inside"):
        with iothrottle.IoThrottle(f"/dev/{disk}", read_bps=10**12, read_iops=10**9) as throttle:
            made = throttle.path
            assert made.name.startswith(f"{iothrottle.NAME_PREFIX}{os.getpid()}-") and made.is_dir()
            from biossd.host import cgroups
            assert made not in cgroups.find_leftovers()  # its process lives
            assert made in cgroups.find_leftovers(include_live=True)
            assert str(os.getpid()) in (made / "cgroup.procs").read_text().split()
            if iothrottle.backend() == "v1":
                assert (made / "blkio.throttle.read_iops_device").read_text().split()[1] == str(10**9)
            assert throttle.record()["read_bps"] == 10**12
            raise RuntimeError("inside")
    assert not made.exists()


def test_runs_side_by_side_are_served_interleaved_on_the_device_they_share():
    """Two sequential readers far apart on one disk, overlapping in time: served interleaved, the
    head moves between them at every request, so each costs more than alone; on flash (no head)
    interleaving costs nothing. Each keeps its own requests' service."""
    n, size = 400, 64 * KIB

    def reader(start_byte, epoch):
        s = stream(n, size=size)
        s = devicemodels.Stream(is_write=s.is_write, offset=s.offset + start_byte, nbytes=s.nbytes, depth=s.depth,
                                idle_ms=s.idle_ms, new_stream=s.new_stream)
        return predict.RunStream(s, runtime_s=10.0, cpu_s=0.1, busy_s=9.0, issue_s=np.arange(n) * 0.02,
                                 started_epoch_s=epoch)

    a, b = reader(0, 1000.0), reader(500 * 10**9, 1000.01)  # interleaved request by request
    hdd = devicemodels.paper_target("Seagate Barracuda")
    alone = [predict.predict_stream(r, hdd)["target_busy_s"] for r in (a, b)]
    together = [p["target_busy_s"] for p in predict.predict_overlapping([a, b], hdd)]
    assert all(t > 3 * s for t, s in zip(together, alone)), (alone, together)
    apart = [p["target_busy_s"] for p in predict.predict_overlapping([a, reader(500 * 10**9, 2000.0)], hdd)]
    assert apart == pytest.approx(alone, rel=0.05), "runs one after the other seek once, not at every request"
    ssd = devicemodels.paper_target("Samsung 840 Pro")
    assert [p["target_busy_s"] for p in predict.predict_overlapping([a, b], ssd)] == pytest.approx(
        [predict.predict_stream(r, ssd)["target_busy_s"] for r in (a, b)])


def test_a_run_is_predicted_on_a_cloud_volume_behind_its_instance(tmp_path):
    """The cloud model (biossd.host.models.cloudmodel) serves a recorded trace as any target does: 100
    random 4 KiB reads one at a time on gp3 wait its stated latency each (1-10 ms, middle 5.5)."""
    sectors = np.random.default_rng(4).integers(0, 10**12 // 512, 100)
    run = make_run(tmp_path / "r", [(i * 0.01, i * 0.01 + 0.001, "R", int(sectors[i]), 4096) for i in range(100)],
                   wall_s=2.0, cpu_s=1.9)
    gp3 = devicemodels.load_target("cloud:aws-gp3-baseline@m6id.large")
    row = predict.predict_runs([run], [gp3]).iloc[0]
    assert row["target_kind"] == "cloud SSD" and row["predicted_runtime_s"] == pytest.approx(1.9 + 100 * 0.0055, rel=0.01)
    assert row["predicted_low_s"] == pytest.approx(1.9 + 0.1, rel=0.01)
    assert row["predicted_high_s"] == pytest.approx(2.9, rel=0.01)


def test_a_run_whose_trace_cannot_be_read_is_left_unpredicted_not_the_whole_table(tmp_path):
    """A collector that failed half way leaves a trace file no reader can parse: that run has no
    prediction, with the reason; the others keep theirs (a pipeline's report is not refused)."""
    good = make_run(tmp_path / "good", [(0.0, 0.01, "R", 8, 4096)], wall_s=1.0, cpu_s=0.9)
    bad = make_run(tmp_path / "bad", [(0.0, 0.01, "R", 8, 4096)], wall_s=1.0, cpu_s=0.9)
    tracefile.trace_path(bad).write_bytes(b"\x00\x01 half a line\n")
    table = predict.predict_runs([good, bad], [devicemodels.paper_target("Seagate Barracuda")]).set_index("run_dir")
    assert table.loc[str(good), "predicted_runtime_s"] > 0
    assert math.isnan(table.loc[str(bad), "predicted_runtime_s"]) and "cannot be read" in table.loc[str(bad), "why"]


def test_a_burst_predicted_on_a_cloud_volume_overlaps_its_latencies(tmp_path):
    """A run that read 64 random 4 KiB blocks in two bursts of 32 (each issued at once, the
    second after the first completed): on gp3 at its baseline each burst takes what its IOPS
    allow (32 / 3,000 s), as the emulated volume serves it, not 1 + 1/2 + ... + 1/32 latencies."""
    sectors = np.random.default_rng(5).integers(0, 10**12 // 512, 64)
    reqs = [(0.0 if i < 32 else 0.5, (0.0 if i < 32 else 0.5) + 0.002, "R", int(sectors[i]), 4096) for i in range(64)]
    run = make_run(tmp_path / "r", reqs, wall_s=1.0, cpu_s=0.9)
    gp3 = devicemodels.load_target("cloud:aws-gp3-baseline")
    row = predict.predict_runs([run], [gp3]).iloc[0]
    assert row["target_busy_s"] == pytest.approx(2 * 32 / 3000, rel=0.03)
    assert row["predicted_runtime_s"] == pytest.approx(1.0 - 0.004 + 2 * 32 / 3000, rel=0.01)
