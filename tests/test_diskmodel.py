"""The hard-disk service-time model against the spec sheets it is calibrated from, and its buffer."""

import random
import statistics

import pytest

from biossd.host.models import diskmodel
from biossd.host.models.diskmodel import FLUSH, READ, WRITE, DiskModel, DiskProfile, ProfileError

PROFILES = ("seagate-barracuda-7200", "wd-caviar-blue-7200", "wd-velociraptor-10000")
KIB, MIB = 1 << 10, 1 << 20


def barracuda(**kwargs) -> DiskModel:
    return DiskModel(diskmodel.load_profile("seagate-barracuda-7200"), **kwargs)


def full_stroke_offsets(model: DiskModel, n: int, seed: int = 4) -> list[int]:
    """Random 4 KiB-aligned offsets over the whole stroke of the (scaled) disk."""
    span = int(model.profile.capacity_bytes / model.scale) // 4096
    rng = random.Random(seed)
    return [rng.randrange(span) * 4096 for _ in range(n)]


@pytest.mark.parametrize("scale", (1.0, 160.0))
@pytest.mark.parametrize("name", PROFILES)
def test_random_4k_reads_and_written_through_writes_over_the_stroke_match_the_spec(name, scale):
    """Reads miss the buffer; each write followed by a flush cannot be hidden by it: both cost
    what the spec's IOPS say, on the disk as built and scaled down (its stroke D times shorter)."""
    profile = diskmodel.load_profile(name)
    model = DiskModel(profile, seed=3, scale=scale)
    reads = [model.service_ms(READ, x, 4096) for x in full_stroke_offsets(model, 20000)]
    assert 1000 / statistics.mean(reads) == pytest.approx(profile.rand_read_iops, rel=0.03)
    writes = [model.service_ms(WRITE, x, 4096) + model.service_ms(FLUSH, 0, 0) for x in full_stroke_offsets(model, 20000, 5)]
    assert 1000 / statistics.mean(writes) == pytest.approx(profile.rand_write_iops, rel=0.03)


@pytest.mark.parametrize("name", PROFILES)
def test_sequential_1m_reads_and_writes_run_at_the_spec(name):
    profile = diskmodel.load_profile(name)
    for op, spec in ((READ, profile.seq_read_mbs), (WRITE, profile.seq_write_mbs)):
        model = DiskModel(profile, scale=160)
        total_ms = sum(model.service_ms(op, i * MIB, MIB) for i in range(512)) + model.service_ms(FLUSH, 0, 0)
        assert 512 * MIB / diskmodel.MB / (total_ms / 1000) == pytest.approx(spec, rel=0.01)


def test_a_near_forward_gap_is_passed_over_and_a_seek_grows_with_its_distance():
    model = barracuda(seed=None)
    model.service_ms(READ, 0, 4096)
    near = model.service_ms(READ, 4096 + 8192, 4096)  # 8 KiB forward: the platter turns past it
    assert near == pytest.approx((8192 + 4096) / model.rate_bytes_per_ms[READ])
    short, long = (barracuda(seed=None) for _ in range(2))
    for m, distance in ((short, 64 * MIB), (long, 400_000 * MIB)):
        m.service_ms(READ, 0, 4096)
        m.cost = m.request(READ, 4096 + distance, 4096)
    assert short.profile.track_seek_ms < short.cost.ms < long.cost.ms
    assert short.cost.var_ms2 == pytest.approx(short.profile.revolution_ms ** 2 / 12)  # the rotation's


def test_the_disk_is_scaled_as_the_machine_its_buffer_smaller_its_distances_longer():
    plain, scaled = barracuda(), barracuda(scale=160)
    assert plain.buffer_bytes == 64 * MIB and scaled.buffer_bytes == 64 * MIB // 160
    assert scaled.segment_bytes == diskmodel.MIN_SEGMENT_BYTES  # a read-ahead window at least
    assert plain.segment_bytes == 4 * MIB
    assert scaled.stroke_fraction(1 << 30) == pytest.approx(160 * plain.stroke_fraction(1 << 30))
    with pytest.raises(ProfileError, match="D >= 1"):
        barracuda(scale=0.5)


def test_writes_complete_into_the_buffer_until_it_is_full_and_a_flush_destages_them():
    model = barracuda(seed=None, scale=160)
    interface_ms = 4096 / model.interface_bytes_per_ms
    fits = model.buffer_bytes // 4096
    burst = [model.service_ms(WRITE, x, 4096) for x in full_stroke_offsets(model, fits)]
    assert burst == pytest.approx([interface_ms] * fits)  # immediate reporting
    assert model.dirty_bytes == fits * 4096
    over = model.service_ms(WRITE, 12345 * 4096, 4096)  # no room: one extent is destaged first
    assert over > model.profile.track_seek_ms
    flush = model.service_ms(FLUSH, 0, 0)
    assert model.dirty_bytes == 0 and flush > (fits - 1) * model.profile.track_seek_ms
    assert model.service_ms(FLUSH, 0, 0) == 0.0  # nothing left to destage


def test_destaging_in_idle_time_leaves_room_and_a_read_of_buffered_data_is_a_hit():
    model = barracuda(seed=None, scale=160)
    model.service_ms(WRITE, 10 * MIB, 64 * KIB)
    assert model.service_ms(READ, 10 * MIB + 4096, 4096) == pytest.approx(4096 / model.interface_bytes_per_ms)
    model.service_ms(READ, 0, 4096, idle_ms=1000.0)  # a second idle: the write went to the platter
    assert model.dirty_bytes == 0


def test_an_idle_disk_reads_ahead_into_the_segment_of_the_last_read():
    model = barracuda(seed=None, scale=160)
    model.service_ms(READ, 0, 128 * KIB)
    media_ms = 128 * KIB / model.rate_bytes_per_ms[READ]
    hit_ms = 128 * KIB / model.interface_bytes_per_ms
    # After 2 ms idle, the next 128 KiB were read ahead: a hit at the interface's rate.
    assert model.service_ms(READ, 128 * KIB, 128 * KIB, idle_ms=2.0) == pytest.approx(hit_ms)
    # Without idle time only the media can serve it, sequentially.
    assert model.service_ms(READ, 256 * KIB, 128 * KIB) == pytest.approx(media_ms)


def test_interleaved_streams_keep_their_read_ahead_in_segments_of_their_own():
    model = barracuda(seed=None)  # 16 segments of 4 MiB
    hit_ms = 64 * KIB / model.interface_bytes_per_ms
    a, b = 0, 300_000 * MIB
    for x in (a, b):
        model.service_ms(READ, x, 64 * KIB, idle_ms=100.0)
    model.service_ms(READ, a + 64 * KIB, 64 * KIB, idle_ms=100.0)  # hit: stream a's segment read ahead
    assert model.service_ms(READ, a + 128 * KIB, 64 * KIB) == pytest.approx(hit_ms)
    assert model.service_ms(READ, b + 64 * KIB, 64 * KIB) == pytest.approx(hit_ms)  # b's segment kept


def test_a_write_drops_the_read_segments_it_overlaps():
    model = barracuda(seed=None, scale=160)
    model.service_ms(READ, 0, 128 * KIB, idle_ms=0.0)
    model.service_ms(WRITE, 64 * KIB, 4096)
    model.service_ms(FLUSH, 0, 0)
    assert model.service_ms(READ, 0, 4096) > model.profile.track_seek_ms  # the segment is gone


def test_a_stream_costs_what_its_requests_cost_one_by_one():
    ops = [READ, WRITE, READ, FLUSH, READ, READ]
    offsets = [0, 5 * MIB, 900 * MIB, 0, 900 * MIB + 4096, 20 * MIB]
    sizes = [4096, 8192, 4096, 0, 4096, 65536]
    idle = [0.0, 0.5, 3.0, 0.0, 0.0, 10.0]
    means, variances = barracuda(seed=None, scale=160).stream_ms(ops, offsets, sizes, idle)
    one = barracuda(seed=None, scale=160)
    expected = [one.request(*args) for args in zip(ops, offsets, sizes, idle)]
    assert means == pytest.approx([c.ms for c in expected])
    assert variances == pytest.approx([c.var_ms2 for c in expected])
    assert sum(variances) > 0


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
