"""The hard-disk service-time model against the spec sheets it is calibrated from."""

import random
import statistics

import pytest

from biossd.host.hdd import diskmodel
from biossd.host.hdd.diskmodel import DiskModel, DiskProfile, ProfileError

PROFILES = ("seagate-barracuda-7200", "wd-caviar-blue-7200", "wd-velociraptor-10000")


@pytest.mark.parametrize("name", PROFILES)
def test_random_4k_iops_match_the_spec(name):
    profile = diskmodel.load_profile(name)
    model = DiskModel(profile, seed=3)
    offsets = random.Random(4)
    for op, spec in (("read", profile.rand_read_iops), ("write", profile.rand_write_iops)):
        costs = [model.service_ms(op, offsets.randrange(1 << 18) * 4096 + (64 << 30), 4096) for _ in range(20000)]
        assert 1000 / statistics.mean(costs) == pytest.approx(spec, rel=0.03)


@pytest.mark.parametrize("name", PROFILES)
def test_sequential_1m_throughput_matches_the_spec(name):
    profile = diskmodel.load_profile(name)
    model = DiskModel(profile)
    total_ms = sum(model.service_ms("read", i << 20, 1 << 20) for i in range(512))
    mb_per_s = 512 * (1 << 20) / diskmodel.MB / (total_ms / 1000)
    assert mb_per_s == pytest.approx(profile.seq_read_mbs, rel=0.01)


def test_a_forward_gap_is_passed_over_a_backward_one_sought():
    model = DiskModel(diskmodel.load_profile("seagate-barracuda-7200"), seed=1)
    model.service_ms("read", 0, 4096)
    near = model.service_ms("read", 4096 + 8192, 4096)  # skip 8 KiB forward
    far = model.service_ms("read", 0, 4096)              # back to the start
    assert near < 0.2 and far > model.profile.track_seek_ms


def test_an_idle_disk_reads_ahead_for_a_sequential_request_only():
    """The look-ahead credit: a sequential request after the host's turnaround costs only the
    media time the idle disk had not already spent; a random one pays its seek in full; and the
    credit is bounded by one cache segment at media rate."""
    model = DiskModel(diskmodel.load_profile("seagate-barracuda-7200"), seed=1)
    model.service_ms("read", 0, 1 << 20)
    full = (1 << 20) / model.rate_bytes_per_ms["read"]
    assert model.service_ms("read", 1 << 20, 1 << 20, idle_ms=1.0) == pytest.approx(full - 1.0)
    assert model.service_ms("read", 2 << 20, 1 << 20, idle_ms=60_000.0) == 0.0
    segment_ms = model.lookahead_bytes / model.rate_bytes_per_ms["read"]
    big = 64 << 20
    assert model.service_ms("read", 3 << 20, big, idle_ms=60_000.0) == pytest.approx(
        big / model.rate_bytes_per_ms["read"] - segment_ms)
    far = [model.service_ms("read", (i + 1) * (40 << 30), 4096, idle_ms=50.0) for i in range(200)]
    assert statistics.mean(far) > model.profile.track_seek_ms + model.profile.revolution_ms / 4


def test_bad_profiles_are_refused(tmp_path):
    path = tmp_path / "x.yaml"
    path.write_text("name: X\nkind: HDD\nrpm: 7200\n")
    with pytest.raises(ProfileError, match="missing fields"):
        DiskProfile.load(path)
    good = diskmodel.load_profile("seagate-barracuda-7200")
    ssd = DiskProfile(**{**good.__dict__, "rand_read_iops": 80000.0})
    with pytest.raises(ProfileError, match="not a hard-disk profile"):
        DiskModel(ssd)
    with pytest.raises(ProfileError, match="known: seagate-barracuda-7200"):
        diskmodel.load_profile("no-such-disk")
