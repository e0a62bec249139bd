"""blktrace binary traces: reading, writing, bad files, and agreement with Debian's blkparse and
btt on synthetic traces of known content (the independent check of the features' inputs)."""

from __future__ import annotations

import re
import subprocess
from pathlib import Path

import numpy as np
import pytest

from biossd.features import blockstats
from biossd.measure.trace import blkbinary as b

DEV_A, DEV_B = (8 << 20) | 16, (8 << 20) | 32
SCENARIOS = {
    "sequential": [dict(n=400, pattern="sequential", device=DEV_A)],
    "random": [dict(n=400, pattern="random", device=DEV_A)],
    "mixed-merges-depth": [dict(n=600, pattern="mixed", device=DEV_A, merge_share=0.3, depth=4, cpus=2)],
    "two-devices": [dict(n=300, pattern="mixed", device=DEV_A, seed=1, cpus=2),
                    dict(n=300, pattern="sequential", device=DEV_B, seed=2, merge_share=0.5, write_share=0.8)],
}


def test_round_trip_with_payloads(tmp_path):
    records = b.synthetic(50, "mixed", seed=3, cpus=2)
    b.write_trace(tmp_path / "t", records)
    back = b.read_trace(tmp_path / "t")
    data = back[(back["action"] >> b.TC_SHIFT & b.TC_NOTIFY) == 0]
    assert len(data) == len(records) and (np.sort(data["time"]) == np.sort(records["time"])).all()
    assert ((back["action"] >> b.TC_SHIFT & b.TC_NOTIFY) != 0).sum() == 2, "one process note per CPU file"


def test_truncated_and_corrupted_files_name_the_offset(tmp_path):
    path = b.write_records(tmp_path / "t.blktrace.0", [b.synthetic(10, "random")])
    data = path.read_bytes()
    path.write_bytes(data[:-7])
    with pytest.raises(b.TraceFormatError, match=rf"{path}: truncated record at byte offset {len(data) - 48}"):
        b.read_records(path)
    corrupt = bytearray(data)
    corrupt[5 * 48] ^= 0xFF
    path.write_bytes(bytes(corrupt[:5 * 48]) + b"\x00" * 3 + bytes(corrupt[5 * 48 + 3:]))
    with pytest.raises(b.TraceFormatError, match=f"byte offset {5 * 48} \\(bad magic\\)"):
        b.read_records(path)


def test_pairing_out_of_order_completions():
    records = b.synthetic(2000, "random", seed=5, depth=8)
    req = b.to_requests(records)
    assert (req["complete_ns"] > req["issue_ns"]).all()
    d = records[(records["action"] & 0xFFFF) == b.ACT_ISSUE]
    c = records[(records["action"] & 0xFFFF) == b.ACT_COMPLETE]
    expect = dict(zip(c["sector"].tolist(), c["time"].tolist()))  # random sectors: unique here
    assert all(expect[s] == t for s, t in zip(req["sector"].tolist(), req["complete_ns"].tolist()))
    assert len(req["sector"]) == len(d)


def _blkparse_totals(stem: Path) -> dict[str, tuple[int, int]]:
    out = subprocess.run(["blkparse", "-i", stem.name, "-D", str(stem.parent)],
                         capture_output=True, text=True, check=True, cwd=stem.parent).stdout
    # With several CPU files blkparse sums them under "Total"; with one, its CPU block is all.
    total = out[out.index("Total (") if "Total (" in out else out.index("\nCPU"):]
    counts = {}
    for kind in ("Read", "Write"):
        m = re.search(rf"{kind} Dispatches:\s+([\d,]+),\s+([\d,]+)KiB", total)
        counts[kind] = (int(m.group(1).replace(",", "")), int(m.group(2).replace(",", "")))
    return counts


def _btt_zero_seeks(stems: list[Path], work: Path) -> dict[str, tuple[int, int]]:
    args = ["blkparse", "-q", "-O", "-d", "all.bin", "-D", str(stems[0].parent)]
    for stem in stems:
        args += ["-i", stem.name]
    subprocess.run(args, check=True, capture_output=True, cwd=work)
    subprocess.run(["btt", "-i", "all.bin", "-s", "seek"], check=True, capture_output=True, cwd=work)
    out = {}
    for path in work.glob("seek_*_d2d_c.dat"):
        distances = [int(line.split()[1]) for line in path.read_text().splitlines() if line.strip()]
        dev = path.name.split("_")[1]
        out[dev] = (sum(1 for d in distances[1:] if d == 0), len(distances))  # first: seek from 0
    return out


@pytest.mark.integration
@pytest.mark.parametrize("scenario", sorted(SCENARIOS))
def test_counts_sizes_and_consecutive_share_agree_with_blkparse_and_btt(tmp_path, scenario, tool_required):
    tool_required("blkparse", "btt")
    stems, all_records = [], []
    for i, spec in enumerate(SCENARIOS[scenario]):
        records = b.synthetic(**spec)
        stem = tmp_path / f"dev{i}"
        b.write_trace(stem, records)
        stems.append(stem)
        all_records.append(records)
    for stem in stems:  # request counts and KiB per direction, per device
        req = b.to_requests(b.read_trace(stem))
        theirs = _blkparse_totals(stem)
        for kind, mask in (("Read", ~req["is_write"]), ("Write", req["is_write"])):
            assert (int(mask.sum()), int(req["bytes"][mask].sum()) // 1024) == theirs[kind], (stem, kind)
    records = np.concatenate([b.read_trace(s) for s in stems])
    records = records[np.argsort(records["time"], kind="stable")]
    btt = _btt_zero_seeks(stems, tmp_path)
    whole = [0, float(records["time"].max())]
    for dev in np.unique(records["device"]):
        tally = blockstats.tally_records([records[records["device"] == dev]], *whole)
        assert (tally.n_consecutive, tally.n_requests) == btt[f"{dev >> 20},{dev & 0xFFFFF}"]
    both = blockstats.tally_records(np.array_split(records, 7), *whole)  # chunked, devices interleaved
    assert both.n_consecutive == sum(v[0] for v in btt.values())


@pytest.mark.parametrize("chunk", [1, 7, 1000])
def test_streaming_equals_reading_whole(tmp_path, chunk):
    records = b.synthetic(500, "mixed", seed=4, cpus=3, merge_share=0.2, depth=3)
    b.write_trace(tmp_path / "t", records)
    whole = b.read_trace(tmp_path / "t")
    chunks = list(b.iter_trace(tmp_path / "t", chunk_records=chunk))
    streamed = {k: np.concatenate([c[k] for c in chunks]) for k in b.EVENT_COLUMNS}
    expected = b.compact(whole)
    assert len(streamed["time"]) == 1000, "a D and a C per request"
    for k in b.EVENT_COLUMNS:
        assert (np.sort(streamed[k]) == np.sort(expected[k])).all(), k
    assert (np.diff(streamed["time"].astype(np.int64)) >= 0).all()
    a = blockstats.tally_records([whole])
    s = blockstats.tally_records(b.iter_trace(tmp_path / "t", chunk_records=chunk))
    assert (a.n_requests, a.n_consecutive, a.t0, a.t1) == (s.n_requests, s.n_consecutive, s.t0, s.t1)
    assert a.write_queue_integral == pytest.approx(s.write_queue_integral)


def test_streaming_reports_truncation_with_offset(tmp_path):
    path = b.write_records(tmp_path / "t.blktrace.0", [b.synthetic(100, "random")])
    size = path.stat().st_size
    with open(path, "r+b") as f:
        f.truncate(size - 10)
    with pytest.raises(b.TraceFormatError, match=f"byte offset {size - 48}"):
        list(b.iter_trace(tmp_path / "t", chunk_records=16))
