import csv
import shutil
import tempfile
import time

import pytest

from biossd.host import devices
from biossd.measure import manifest, sampler


def test_parsers_read_the_kernel_formats(tmp_path):
    (tmp_path / "vmstat").write_text("nr_free_pages 1\npgpgin 10\npgpgout 20\npswpin 3\npswpout 4\npgmajfault 5\n")
    assert sampler.read_vmstat(tmp_path / "vmstat") == {
        "vmstat_pgpgin": 10, "vmstat_pgpgout": 20, "vmstat_pswpin": 3, "vmstat_pswpout": 4, "vmstat_pgmajfault": 5,
    }
    (tmp_path / "diskstats").write_text(
        " 254       0 vda 1 2 3 4 5 6 7 8 9 10 11 0 0 0 0 0 0\n   7       0 loop0 9 9 9 9 9 9 9 9 9 9 9\n"
    )
    disk = sampler.read_diskstats(["vda"], tmp_path / "diskstats")
    assert disk["disk_vda_reads"] == 1 and disk["disk_vda_write_sectors"] == 7
    assert disk["disk_vda_weighted_io_ms"] == 11 and not any("loop0" in k for k in disk)
    (tmp_path / "psi").mkdir()
    (tmp_path / "psi" / "io").write_text("some avg10=0.00 avg60=0.00 avg300=0.00 total=7\n"
                                         "full avg10=0.00 avg60=0.00 avg300=0.00 total=3\n")
    assert sampler.read_psi(tmp_path / "psi") == {"psi_io_some_total_us": 7, "psi_io_full_total_us": 3}
    (tmp_path / "stat").write_text("cpu  1 2 3 4 5 6 7 8 9 10\ncpu0 1 1 1 1 1 1 1 1\n")
    assert sampler.read_cpu(tmp_path / "stat")["cpu_iowait_ticks"] == 5


def test_sampler_samples_on_schedule(tmp_path):
    dev = devices.device_of_path(tmp_path)
    s = sampler.Sampler(tmp_path / "s.csv", [dev], interval_s=0.1)
    s.start()
    time.sleep(0.55)
    s.stop()
    rows = list(csv.DictReader(open(tmp_path / "s.csv")))
    assert len(rows) == s.samples and 5 <= len(rows) <= 9
    times = [float(r["t_s"]) for r in rows]
    assert times == sorted(times) and times[0] < 0.05
    assert f"disk_{dev}_write_sectors" in rows[0]


def test_an_error_mid_run_is_recorded_not_hidden(tmp_path):
    calls = []

    def usage():
        calls.append(1)
        if len(calls) > 2:
            raise OSError("cgroup vanished")
        return 1

    s = sampler.Sampler(tmp_path / "s.csv", [], usage, interval_s=0.05)
    s.start()
    time.sleep(0.4)
    s.stop()
    record = s.record()
    assert record["error"] == "OSError: cgroup vanished" and record["complete"] is False
    assert record["samples"] == 2


def test_resolve_devices():
    with pytest.raises(devices.DeviceError, match="no such device"):
        devices.resolve("/dev/nosuchdisk")
    with pytest.raises(devices.DeviceError, match="not a block device"):
        devices.resolve("/dev/null")


@pytest.mark.integration
def test_profiled_writes_show_in_the_devices_counters(biossd, tmp_path, root_required):
    run = tmp_path / "run"
    target = tmp_path / "data.bin"
    biossd("profile", "--mem", "64M", "--no-drop-caches", "--sample-interval", "0.2", "--out", str(run), "--",
           "dd", "if=/dev/zero", f"of={target}", "bs=1M", "count=16", "conv=fsync")
    body = manifest.read_manifest(run)
    dev = devices.device_of_path(tmp_path)
    assert body["devices"] == [dev]
    assert body["collectors"]["sampler"]["ran"] is True
    rows = list(csv.DictReader(open(run / "sampler.csv")))
    assert len(rows) == body["collectors"]["sampler"]["samples"] >= 2
    written = int(rows[-1][f"disk_{dev}_write_sectors"]) - int(rows[0][f"disk_{dev}_write_sectors"])
    assert written * 512 >= 16 << 20, f"only {written} sectors written to {dev} during the run"
    assert any(r["cgroup_mem_bytes"] not in ("", "0") for r in rows)


@pytest.mark.integration
def test_runs_from_a_directory_on_no_block_device_and_says_so(biossd, tmp_path):
    shm = tempfile.mkdtemp(dir="/dev/shm")  # tmpfs: its st_dev is no block device
    try:
        run = tmp_path / "run"
        biossd("profile", "--mem", "none", "--no-drop-caches", "--out", str(run), "--", "true", cwd=shm)
        body = manifest.read_manifest(run)
        assert body["outcome"] == "ok" and body["devices"] == []
        assert "no device traced" in body["devices_note"]
        assert body["collectors"]["sampler"]["ran"] is True
    finally:
        shutil.rmtree(shm)
