"""Cloud volumes and instances as data, one model: the provider's I/O-size accounting, burst
buckets that drain and refill, the instance's limits in front of the volume, latency over depth,
and every figure with its source and dates (unknown where not published)."""

from __future__ import annotations

import numpy as np
import pytest

from biossd.host import requeststream
from biossd.host.models import cloudmodel, devicemodels

KIB = 1024


def stream(n: int, nbytes: int, depth: int = 1, sequential: bool = False, idle_ms=None, write: bool = False):
    offsets = np.arange(n) * nbytes if sequential else (np.arange(n) * 7919 % 100_003) * (1 << 20)
    return requeststream.Stream(is_write=np.full(n, write), offset=offsets.astype(np.int64), nbytes=np.full(n, nbytes),
                               depth=np.full(n, depth), idle_ms=np.zeros(n) if idle_ms is None else np.asarray(idle_ms, float),
                               new_stream=np.zeros(n, bool))


def test_every_row_has_its_source_and_dates_and_names_what_is_unknown():
    volumes, instances = cloudmodel.volumes(), cloudmodel.instances()
    assert {"aws-gp3-baseline", "aws-gp3-provisioned", "aws-io2-block-express", "aws-st1", "aws-sc1",
            "aws-m6id-large-nvme", "gcp-hyperdisk-balanced", "azure-premium-ssd-v2"} <= set(volumes)
    assert {"m6id.large", "i4i.large"} <= set(instances)
    for v in [*volumes.values(), *instances.values()]:
        assert v.source and v.retrieved >= "2026-11-28" and (not v.published or v.published <= v.retrieved)
    # gp3's limits as published since 2025, not 2023's 16,000 IOPS / 1,000 MiB/s
    assert volumes["aws-gp3-provisioned"].published >= "2025" and "80,000" in volumes["aws-gp3-provisioned"].note
    assert volumes["aws-m6id-large-nvme"].unknown == ["throughput", "latency"]
    assert "publication date" in volumes["gcp-hyperdisk-balanced"].unknown


def test_a_row_without_its_source_is_refused_naming_it(tmp_path, monkeypatch):
    text = cloudmodel.STORAGE.read_text().splitlines()
    header, row = text[0].split(","), text[1]
    bad = tmp_path / "cloud_storage.csv"
    bad.write_text(",".join(header) + "\n" + row.split(',"')[0] + ",,,\n")
    monkeypatch.setattr(cloudmodel, "STORAGE", bad)
    with pytest.raises(cloudmodel.CloudModelError, match="row aws-gp3-baseline: field 'source' is empty"):
        cloudmodel.volumes()


def test_io_size_accounting_is_the_providers_ssd_256_kib_hdd_1_mib_and_sequential_merged():
    assert cloudmodel.operations(1 << 20, 256 * KIB, sequential=False) == 4
    assert cloudmodel.operations(1 << 20, 1024 * KIB, sequential=False) == 1
    assert cloudmodel.operations(4 * KIB, 1024 * KIB, sequential=False) == 1, "a small random I/O is a whole 1 MiB credit"
    assert cloudmodel.operations(4 * KIB, 1024 * KIB, sequential=True) == pytest.approx(1 / 256)
    assert cloudmodel.operations(4 * KIB, None, sequential=False) == 1
    st1 = devicemodels.load_target("cloud:aws-st1")
    random_ms = st1.serve(stream(1000, 4 * KIB)).mean_ms.sum()
    sequential_ms = st1.serve(stream(1000, 4 * KIB, sequential=True)).mean_ms.sum()
    assert random_ms == pytest.approx(1000 / 500 * 1000)  # 500 IOPS of 1 MiB credits
    assert sequential_ms < random_ms / 50


def test_latency_overlaps_with_depth_and_its_range_is_the_interval():
    gp3 = devicemodels.load_target("cloud:aws-gp3-baseline")
    one = gp3.serve(stream(100, 4 * KIB, depth=1))
    assert one.mean_ms.mean() == pytest.approx(5.5) and one.low_ms.mean() == 1 and one.high_ms.mean() == 10
    deep = gp3.serve(stream(100, 4 * KIB, depth=32))
    assert deep.mean_ms.mean() == pytest.approx(1000 / 3000), "at depth 32 the volume's 3,000 IOPS binds"


def test_a_burst_bucket_drains_then_refills_while_idle():
    gp2 = devicemodels.load_target("cloud:aws-gp2-100").scaled(5400)  # 1,000 credits
    served = gp2.serve(stream(4000, 16 * KIB, depth=32)).mean_ms
    assert served[0] == pytest.approx(1000 / 3000) and served[-1] == pytest.approx(1000 / 300)
    drained = int(np.argmax(served > 1000 / 3000 + 1e-9))
    # 1,000 credits spent at 3,000 - 300 a second: 1000 / 2700 s at 3,000 IOPS
    assert drained == pytest.approx(1000 / 2700 * 3000, abs=2)
    idle = np.zeros(4000)
    idle[3000] = 1000 / 300 * 1000  # 3.3 s idle refills the 1,000 credits at 300 a second
    again = gp2.serve(stream(4000, 16 * KIB, depth=32, idle_ms=idle)).mean_ms
    assert again[3000] == pytest.approx(1000 / 3000)


def test_the_instance_cap_binds_below_the_volume_once_its_daily_burst_is_spent():
    alone = devicemodels.load_target("cloud:aws-gp3-provisioned")
    behind = devicemodels.load_target("cloud:aws-gp3-provisioned@m6id.large")
    deep = stream(20_000, 16 * KIB, depth=256)  # deep enough that 5.5 ms of latency overlaps below 1/16,000 s
    assert alone.serve(deep).mean_ms[-1] == pytest.approx(1000 / 16000)
    assert behind.serve(deep).mean_ms[0] == pytest.approx(1000 / 16000), "the instance's 40,000 burst is above it"
    spent = behind.scaled(30 * 60 * 36400 / 200)  # 200 I/Os of burst budget left
    assert spent.serve(deep).mean_ms[-1] == pytest.approx(1000 / 3600), "m6id.large's 3,600 IOPS baseline binds"


def test_instance_store_nvme_has_its_read_and_write_iops_and_no_network_limit():
    nvme = devicemodels.load_target("cloud:aws-m6id-large-nvme@m6id.large")
    assert nvme.serve(stream(10, 4 * KIB, depth=32)).mean_ms[0] == pytest.approx(1000 / 33542)
    assert nvme.serve(stream(10, 4 * KIB, depth=32, write=True)).mean_ms[0] == pytest.approx(1000 / 16771)
    with pytest.raises(devicemodels.DeviceModelError, match="no instance 'x9.huge'"):
        devicemodels.load_target("cloud:aws-gp3-baseline@x9.huge")


def test_the_device_on_the_hosts_clock_overlaps_latency_until_a_limit_binds():
    """CloudDevice, which the emulated disk's server runs: at depth 1 each request waits its
    latency; 64 arriving at once pass at the volume's IOPS; a drained gp2 bucket refills while idle."""
    gp3 = cloudmodel.CloudDevice(cloudmodel.target("aws-gp3-baseline"))
    t = 0.0
    for k in range(5):
        done = gp3.finish_at(False, k * 7 << 20, 4 * KIB, t)
        assert done - t == pytest.approx(0.0055)
        t = done
    burst = cloudmodel.CloudDevice(cloudmodel.target("aws-gp3-baseline"))
    ends = [burst.finish_at(False, k * 7 << 20, 4 * KIB, 100.0) for k in range(64)]
    assert max(ends) - 100.0 == pytest.approx(64 / 3000) and min(ends) - 100.0 == pytest.approx(0.0055)
    gp2 = cloudmodel.CloudDevice(cloudmodel.target("aws-gp2-100").scaled(5400))  # 1,000 credits
    ends = [gp2.finish_at(False, k * 7 << 20, 16 * KIB, 0.0) for k in range(2000)]
    gaps = np.diff(ends)
    assert gaps[100] == pytest.approx(1 / 3000) and gaps[-1] == pytest.approx(1 / 300), "drained: the baseline"
    later = ends[-1] + 1000 / 300  # idle long enough to earn the 1,000 credits back
    again = [gp2.finish_at(False, k * 7 << 20, 16 * KIB, later) for k in range(100)]
    assert np.diff(again)[50] == pytest.approx(1 / 3000)


def test_a_cloud_class_is_a_parameter_the_study_takes_and_not_rotational():
    from biossd.measure import storage
    from biossd.study.plan import schema

    spec = "gp3=cloud:aws-gp3-baseline@m6id.large,st1=cloud:aws-st1"
    assert schema.schema_problems({"storage_classes": "gp3,st1", "emulate": spec}) == []
    assert storage.parse_emulate(spec.split(","))["gp3"] == "cloud:aws-gp3-baseline@m6id.large"
    assert not storage.rotational("gp3", "cloud:aws-gp3-baseline") and storage.rotational("hdd", "seagate-barracuda-7200")


def test_a_run_on_an_emulated_cloud_volume_has_the_model_s_sequential_rate_for_butil(tmp_path):
    """A user's pipeline on an emulated cloud class has no characterized device record: its runs'
    Butil divides by the volume's baseline throughput under the instance's bandwidth (gp3 at its
    125 MiB/s behind an m6id.large's 81.25 MB/s), not a hard disk's profile (none by that name)."""
    from biossd.features import extract

    body = {"emulated_storage": {"cwd": {"emulated": True, "profile": "cloud:aws-gp3-baseline@m6id.large"}},
            "labels": {"host": "h", "storage": "gp3"}}
    record = extract.device_record(tmp_path, body)
    assert (record.seq_read_mbs, record.seq_write_mbs) == (81.25, 81.25) and record.source == "cloud model"
    alone = cloudmodel.sequential_mbs("aws-gp3-baseline")
    assert alone == pytest.approx(125 * cloudmodel.MIB / cloudmodel.MB)


def test_the_instance_counts_a_request_as_one_io_so_its_published_bandwidth_is_reached():
    """m6id.large at its baseline, 128 KiB reads at depth 32 (the I/O size its 81.25 MB/s is
    published at): the bandwidth binds, not 3,600 IOPS counted in 16 KiB units (59 MB/s)."""
    behind = devicemodels.load_target("cloud:aws-gp3-provisioned@m6id.large").scaled(30 * 60 * 36400 / 200)
    served = behind.serve(stream(5000, 128 * KIB, depth=32, sequential=True)).mean_ms
    assert 128 * KIB / (served[-1] / 1000) == pytest.approx(81.25e6, rel=0.001)


def test_an_instance_whose_daily_burst_is_spent_starts_at_its_baseline():
    """``+spent``: 128 KiB reads behind m6id.large pass at its 81.25 MB/s from the first one,
    where a fresh instance bursts; on the emulated device, sustained, at that plus what the
    day's budget refills each second; a bad state is refused."""
    fresh = devicemodels.load_target("cloud:aws-gp3-provisioned@m6id.large")
    spent = devicemodels.load_target("cloud:aws-gp3-provisioned@m6id.large+spent")
    assert spent.instance_spent and not fresh.instance_spent and "daily burst spent" in spent.source
    reads = stream(100, 128 * KIB, depth=32, sequential=True)
    assert 128 * KIB / (spent.serve(reads).mean_ms[0] / 1000) == pytest.approx(81.25e6, rel=0.001)
    assert fresh.serve(reads).mean_ms[0] < spent.serve(reads).mean_ms[0] / 4
    device = cloudmodel.CloudDevice(spent)
    ends = [device.finish_at(False, k * 128 * KIB, 128 * KIB, 0.0) for k in range(100)]
    refill = 30 * 60 * (1250e6 - 81.25e6) / 86_400  # the day's budget earned back, second by second
    assert 128 * KIB / np.diff(ends)[-1] == pytest.approx(81.25e6 + refill, rel=0.001)
    assert 81.25e6 + refill < 125 * (1 << 20), "below gp3's baseline throughput: the instance binds"
    assert spent.scaled(160).instance_spent
    with pytest.raises(cloudmodel.CloudModelError, match=r"only '\+spent'"):
        cloudmodel.target("aws-gp3-baseline@m6id.large+full")
