"""The profiler's collectors on this machine, for real: swap on a loop device under a cgroup cap,
tracefs block traces checked against known O_DIRECT requests, and perf counters."""

from __future__ import annotations

import csv
import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path

import pytest

from biossd.core.owners import owned_name
from biossd.core.units import SECTOR_BYTES
from biossd.host import swap, tracefs
from biossd.host.cgroups import find_leftovers as cgroup_leftovers
from biossd.measure import manifest
from biossd.measure.trace import tracereader
from biossd.measure.trace.tracereader import read_blocktrace

pytestmark = pytest.mark.integration
PROGRAMS = Path(__file__).parent / "programs"
sys.path.insert(0, str(PROGRAMS))
from odirect_io import OPERATIONS  # noqa: E402 (the test programs, on the path set above)

HOG_MIB = 160
CAP = "64M"
SWAP = "320M"


def _host_state() -> tuple:
    return (set(cgroup_leftovers(include_live=True)), set(tracefs.find_leftovers(include_live=True)),
            tuple(swap.active_swaps()), subprocess.run(["losetup", "-l", "-n"], capture_output=True,
                                                       text=True).stdout)


@pytest.fixture
def no_host_swap():
    if swap.active_swaps():
        pytest.skip(f"this host already has swap ({swap.active_swaps()}): the no-swap case cannot OOM")


def _vmstat_delta(run: Path, key: str) -> int:
    rows = list(csv.DictReader(open(run / "sampler.csv")))
    return int(rows[-1][f"vmstat_{key}"]) - int(rows[0][f"vmstat_{key}"])


def test_hog_with_swap_pages_and_finishes(biossd, tmp_path, root_required, no_host_swap):
    before = _host_state()
    run = tmp_path / "run"
    biossd("profile", "--mem", CAP, "--swap", SWAP, "--swap-dir", str(tmp_path), "--out", str(run),
           "--", sys.executable, str(PROGRAMS / "memory_hog.py"), str(HOG_MIB))
    body = manifest.read_manifest(run)
    assert body["outcome"] == "ok", (run / "stderr.log").read_text()
    assert body["swap"]["size_bytes"] == 320 << 20
    loop = Path(body["swap"]["loop_device"]).name
    assert loop in body["devices"], "the swap device is traced"
    acct = json.loads((run / "rusage.json").read_text())
    assert acct["major_faults"] > 0, "pages came back from swap"
    assert _vmstat_delta(run, "pswpout") > 0 and _vmstat_delta(run, "pswpin") > 0
    requests = read_blocktrace(run / "blocktrace.tsv.gz")
    on_swap = requests[requests.device.eq(loop)]
    assert on_swap[on_swap.op.eq("W")].bytes.sum() > (HOG_MIB - 64) << 20 // 2, "swap-out writes traced"
    assert not on_swap[on_swap.op.eq("R")].empty, "swap-in reads traced"
    assert _host_state() == before, "swap, loop device, cgroup or tracefs instance left behind"
    assert not Path(body["swap"]["backing_file"]).exists()


def test_hog_without_swap_ends_as_oom(biossd, tmp_path, root_required):
    """Memory and swap capped together (--no-swap), so this holds on a host with swap too."""
    run = tmp_path / "run"
    biossd("profile", "--mem", CAP, "--no-swap", "--blocktrace", "off", "--out", str(run),
           "--", sys.executable, str(PROGRAMS / "memory_hog.py"), str(HOG_MIB))
    body = manifest.read_manifest(run)
    assert body["outcome"] == "oom", body["outcome"]
    assert body["memory_cap"]["oom_kills"] >= 1
    assert body["signal"] == 9
    assert body["memory_cap"]["swap_capped"] is True


@pytest.fixture
def loop_device(tmp_path, root_required):
    backing = tmp_path / "disk.img"
    with open(backing, "wb") as f:
        f.truncate(64 << 20)
    device = subprocess.run(["losetup", "--find", "--show", str(backing)], check=True,
                            capture_output=True, text=True).stdout.strip()
    yield device
    subprocess.run(["losetup", "--detach", device], check=True)


def test_odirect_requests_match_the_block_trace(biossd, tmp_path, loop_device):
    run = tmp_path / "run"
    biossd("profile", "--mem", "none", "--blocktrace", "tracefs", "--device", loop_device,
           "--out", str(run), "--", sys.executable, str(PROGRAMS / "odirect_io.py"), loop_device)
    body = manifest.read_manifest(run)
    assert body["outcome"] == "ok", (run / "stderr.log").read_text()
    record = body["collectors"]["blocktrace"]
    assert record["source"] == "tracefs" and record["lost_total"] == 0
    trace = read_blocktrace(run / "blocktrace.tsv.gz")
    assert set(trace.device) <= {Path(loop_device).name}
    # The program's own requests (its pid is GNU time's child's, not the manifest's pid).
    mine = trace[trace.comm.str.startswith("python") & trace.op.isin(["R", "W"])]
    seen = list(zip(mine.op, mine.sector * SECTOR_BYTES, mine.bytes))
    assert seen == list(OPERATIONS), f"trace {seen} != program {OPERATIONS}"
    assert mine.complete_s.notna().all() and (mine.complete_s >= mine.issue_s).all()
    assert (mine.error == 0).all()
    assert (mine.issue_s >= body["command_started_s"]).all()


def test_cachegrind_gives_simulated_miss_ratios(biossd, tmp_path):
    run = tmp_path / "run"
    biossd("profile", "--mem", "none", "--no-drop-caches", "--blocktrace", "off", "--cachegrind",
           "--out", str(run), "--", "sh", "-c", "ls / >/dev/null; exit 3")
    body = manifest.read_manifest(run)
    assert body["outcome"] == "failed" and body["exit_code"] == 3, "the command's status survives valgrind"
    cg = body["collectors"]["cachegrind"]
    assert cg["ran"] is True, cg
    assert cg["totals"]["I_refs"] > 0 and 0 <= cg["D1_miss_ratio"] <= 1
    assert any(name.startswith("cachegrind.out.") for name in cg["files"])


def test_signal_death_is_not_reported_as_success(biossd, tmp_path):
    """perf is attached, not wrapped around the command, so a signal still shows."""
    run = tmp_path / "run"
    biossd("profile", "--mem", "none", "--no-drop-caches", "--out", str(run), "--", "sh", "-c", "kill -KILL $$")
    body = manifest.read_manifest(run)
    assert body["outcome"] == "failed" and body["signal"] == 9
    assert body["collectors"]["perf"]["ran"] is True


def test_timeout_kills_and_is_recorded(biossd, tmp_path):
    run = tmp_path / "run"
    biossd("profile", "--mem", "none", "--no-drop-caches", "--timeout", "0.5", "--out", str(run),
           "--", "sleep", "30")
    body = manifest.read_manifest(run)
    assert body["outcome"] == "timeout" and body["wall_s"] < 10


def test_features_of_a_traced_run_match_what_the_program_did(biossd, tmp_path, loop_device):
    """Riops, Wiops, Rsize, Wsize and CAR of a real traced run, against the program's own list
    of O_DIRECT requests (the loop device carries nothing else)."""
    run = tmp_path / "run"
    biossd("profile", "--mem", "none", "--blocktrace", "tracefs", "--device", loop_device,
           "--label", "tool=odirect", "--out", str(run), "--", sys.executable, str(PROGRAMS / "odirect_io.py"), loop_device)
    out = tmp_path / "features.csv"
    biossd("features", str(run), "-o", str(out))
    row = __import__("pandas").read_csv(out).iloc[0]
    wall = manifest.read_manifest(run)["wall_s"]
    reads = [n for op, _, n in OPERATIONS if op == "R"]
    writes = [n for op, _, n in OPERATIONS if op == "W"]
    assert row["Riops"] * wall == pytest.approx(len(reads), rel=1e-4)  # the CSV keeps 6 digits
    assert row["Wiops"] * wall == pytest.approx(len(writes), rel=1e-4)
    assert row["Rsize"] == pytest.approx(sum(reads) / len(reads) / 1024, rel=1e-4)
    assert row["Wsize"] == pytest.approx(sum(writes) / len(writes) / 1024, rel=1e-4)
    assert row["CAR"] == 0.0, "no request starts where the previous one ended"
    assert 0 <= row["WBlen"] < len(writes)


def test_features_keep_going_past_a_corrupt_trace(biossd, tmp_path):
    runs = []
    for name in ("good", "bad"):
        run = tmp_path / name
        biossd("profile", "--mem", "none", "--no-drop-caches", "--label", f"rep={name}", "--out", str(run),
               "--", "sh", "-c", f"dd if=/dev/zero of={tmp_path / name}.dat bs=64k count=4 oflag=direct 2>/dev/null")
        runs.append(run)
    trace = runs[1] / "blocktrace.tsv.gz"
    trace.write_bytes(trace.read_bytes()[:100])
    proc = biossd("features", *map(str, runs), check=False)
    assert proc.returncode == 2 and str(trace) in proc.stderr
    out = tmp_path / "f.csv"
    proc = biossd("features", *map(str, runs), "-o", str(out), "--keep-going", check=False)
    assert proc.returncode == 1 and f"skipped {runs[1]}" in proc.stderr
    table = __import__("pandas").read_csv(out, dtype={"rep": str})
    assert list(table["rep"]) == ["good"]


def test_a_dead_run_s_tracefs_mount_is_removed_without_a_live_run_s_instance(tmp_path, root_required):
    """Every tracefs mount shows the same instances: removing a killed run's private mount must
    not remove, through it, the instance of a run that is still going (here: this process's)."""
    gone = subprocess.Popen(["true"])
    gone.wait()
    dead_pid = gone.pid
    point = Path(tempfile.gettempdir()) / f"{tracefs.MOUNT_PREFIX}{dead_pid}-1-deadbeef"
    point.mkdir()
    subprocess.run(["mount", "-t", "tracefs", "nodev", str(point)], check=True)
    live = point / "instances" / owned_name(tracefs.PREFIX)
    try:
        live.mkdir()
        assert point in tracefs.find_leftovers() and live not in tracefs.find_leftovers()
        tracefs.remove_leftover(point)
        assert not point.exists()
        assert any((m / "instances" / live.name).is_dir() for m in tracefs.tracefs_mounts()) or \
            _instance_seen_in_a_new_mount(live.name), "the live run's instance was removed"
    finally:
        _remove_everywhere(live.name, point)


def _instance_seen_in_a_new_mount(name: str) -> bool:
    with tempfile.TemporaryDirectory() as where:
        subprocess.run(["mount", "-t", "tracefs", "nodev", where], check=True)
        try:
            return (Path(where) / "instances" / name).is_dir()
        finally:
            subprocess.run(["umount", where], check=True)


def _remove_everywhere(name: str, point: Path) -> None:
    """The test's own instance and mount, whatever the test's outcome."""
    with tempfile.TemporaryDirectory() as where:
        subprocess.run(["mount", "-t", "tracefs", "nodev", where], check=True)
        try:
            instance = Path(where) / "instances" / name
            if instance.is_dir():
                instance.rmdir()
        finally:
            subprocess.run(["umount", where], check=True)
    if point.exists():
        subprocess.run(["umount", str(point)], capture_output=True)
        point.rmdir()


def test_a_pool_lists_each_instance_as_it_is_ready_and_the_first_task_claims_the_first(tmp_path):
    """The leader lists its pool as each instance is ready (the first task claims the first while
    the others are made): an empty list where it cannot make one, and the list gone before them."""
    import contextlib

    from biossd.measure.own_pipeline import session as pipeline_session

    told = []
    with tracefs.InstancePool(size=2, on_ready=lambda paths: told.append(list(paths))) as pool:
        assert told == [pool.paths[:1], pool.paths]
    pool_file = tmp_path / "pool.json"
    seen = []
    with contextlib.ExitStack() as stack:
        pipeline_session._open_pool(stack, pool_file)
        seen = pipeline_session.trace_pool_file(pool_file)
        assert seen and all(p.is_dir() for p in seen)
    assert not pool_file.exists() and not any(p.exists() for p in seen)


def test_a_pooled_instance_serves_one_run_at_a_time_traces_as_its_own_and_goes_with_its_pool(tmp_path, loop_device):
    """A pipeline session's ready instances: a run claims a free one (a second run at the same
    time makes its own), records exactly its program's requests as on an instance of its own, lets
    it go for the next run, and the pool removes them all."""
    from biossd.measure import profile

    before = set(tracefs.find_leftovers(include_live=True))
    rdev = Path(loop_device).stat().st_rdev
    device = [(os.major(rdev), os.minor(rdev))]
    with tracefs.InstancePool(size=1) as pool:
        (ready,) = pool.paths
        with tracefs.BlockTraceInstance(device, pooled=pool.paths) as first:
            assert first.path == ready and first.claim_fd is not None
            with tracefs.BlockTraceInstance(device, pooled=pool.paths) as second:
                assert second.path != ready and second.claim_fd is None, "a claimed instance is not shared"
                own = second.path
            assert not own.exists(), "the instance a run made is removed with it"
        assert ready.is_dir(), "a pooled instance outlives its run"
        runs = []
        for n in range(2):  # the same instance twice: the second run sees only its own requests
            run = tmp_path / f"run{n}"
            request = profile.ProfileRequest(argv=[sys.executable, str(PROGRAMS / "odirect_io.py"), loop_device],
                                             out_dir=run, mem_bytes=None, devices=[loop_device], blocktrace="tracefs",
                                             drop_caches=False, trace_pool=pool.paths)
            profile.run(request)
            runs.append(run)
        for run in runs:
            body = manifest.read_manifest(run)
            assert body["outcome"] == "ok", (run / "stderr.log").read_text()
            record = body["collectors"]["blocktrace"]
            assert record["instance"] == "pooled" and record["lost_total"] == 0
            trace = read_blocktrace(run / "blocktrace.tsv.gz")
            mine = trace[trace.comm.str.startswith("python") & trace.op.isin(["R", "W"])]
            assert list(zip(mine.op, mine.sector * SECTOR_BYTES, mine.bytes)) == list(OPERATIONS)
    assert not ready.exists()
    assert set(tracefs.find_leftovers(include_live=True)) == before


@pytest.fixture
def strict_dirty_limit(loop_device):
    """The loop device's write-back capped at 4 MiB of dirty pages, strictly (its own limit, not
    the host's): a writer past it is paused by the kernel. Restored after."""
    rdev = Path(loop_device).stat().st_rdev
    bdi = Path(f"/sys/class/bdi/{os.major(rdev)}:{os.minor(rdev)}")
    if not (bdi / "strict_limit").exists() or not (bdi / "max_bytes").exists():
        pytest.skip(f"{bdi}: this kernel has no per-device strict dirty limit (strict_limit, max_bytes)")
    saved = {name: (bdi / name).read_text().strip() for name in ("max_ratio", "strict_limit")}
    (bdi / "max_bytes").write_text(str(4 << 20))
    (bdi / "strict_limit").write_text("1")
    try:
        yield loop_device
    finally:
        (bdi / "strict_limit").write_text(saved["strict_limit"])
        (bdi / "max_ratio").write_text(saved["max_ratio"])  # the kernel keeps max_bytes as this ratio


def _write_through_cache(tmp_path: Path, device: str) -> dict:
    from biossd.measure import profile

    run = tmp_path / f"run-{len(list(tmp_path.glob('run-*')))}"
    request = profile.ProfileRequest(argv=["dd", "if=/dev/zero", f"of={device}", "bs=1M", "count=48"],
                                     out_dir=run, mem_bytes=None, devices=[device], blocktrace="tracefs",
                                     drop_caches=False)
    profile.run(request)
    body = manifest.read_manifest(run)
    assert body["outcome"] == "ok", (run / "stderr.log").read_text()
    return body["collectors"]["blocktrace"]["throttle"]


def test_write_back_throttling_of_the_run_is_measured_and_none_without_it(tmp_path, loop_device):
    unthrottled = _write_through_cache(tmp_path, loop_device)
    assert unthrottled["traced"] is True and unthrottled["paused_s"] == 0 and unthrottled["pauses"] == 0


def test_a_writer_past_its_device_s_dirty_limit_is_paused_and_the_pauses_are_its(tmp_path, strict_dirty_limit):
    throttle = _write_through_cache(tmp_path, strict_dirty_limit)
    assert throttle["traced"] is True
    assert throttle["pauses"] > 0 and throttle["paused_s"] > 0, throttle


@pytest.fixture
def ext4_on_loop(tmp_path, loop_device):
    """An ext4 file system on the loop device, mounted under ``tmp_path``; unmounted after."""
    subprocess.run(["mkfs.ext4", "-q", "-F", loop_device], check=True, capture_output=True)
    point = tmp_path / "mnt"
    point.mkdir()
    subprocess.run(["mount", loop_device, str(point)], check=True)
    try:
        yield loop_device, point
    finally:
        subprocess.run(["umount", str(point)], check=True)


SYNCING_WRITER = """
import os, sys
fd = os.open(sys.argv[1], os.O_WRONLY | os.O_CREAT)
for _ in range(int(sys.argv[2])):
    os.write(fd, b"x" * (1 << 20))
    if sys.argv[3] == "sync":
        os.fdatasync(fd)
os.close(fd)
"""


def _sync_record(tmp_path: Path, device: str, target: Path, how: str) -> tuple[dict, Path]:
    from biossd.measure import profile

    run = tmp_path / f"sync-{how}"
    request = profile.ProfileRequest(argv=[sys.executable, "-c", SYNCING_WRITER, str(target), "3", how],
                                     out_dir=run, mem_bytes=None, devices=[device], blocktrace="tracefs",
                                     drop_caches=False)
    profile.run(request)
    body = manifest.read_manifest(run)
    assert body["outcome"] == "ok", (run / "stderr.log").read_text()
    return body, run


def test_a_run_s_fsync_calls_are_traced_and_the_flushes_they_waited_for_count_as_waited(tmp_path, ext4_on_loop):
    """Three fdatasync calls on ext4: each is recorded with how long it took, every flush of the
    device's cache gets its completion (a flush completes at the kernel's sector -1), and the
    flushes the kernel's threads issued inside the calls count as the run's waits; the same
    writes without fdatasync record no call."""
    device, point = ext4_on_loop
    body, run = _sync_record(tmp_path, device, point / "synced", "sync")
    record = body["collectors"]["blocktrace"]["sync"]
    assert record["traced"] is True and record["calls"] == 3 and record["waited_s"] > 0, record
    assert len(record["windows_s"]) == 3 and all(b >= a for a, b in record["windows_s"])
    trace = read_blocktrace(run / "blocktrace.tsv.gz")
    flushes = trace[trace.op == "F"]
    assert len(flushes) >= 3 and flushes.complete_s.notna().all(), flushes
    requests = tracereader.run_requests(run, body)
    in_a_call = tracereader.inside(requests["issue_s"], record["windows_s"]) & (requests["op"] == "F")
    assert in_a_call.sum() >= 3 and requests["waited"][in_a_call].all()
    assert (requests["complete_s"][in_a_call] <= max(b for _, b in record["windows_s"]) + 1e-6).all()
    unsynced, _ = _sync_record(tmp_path, device, point / "unsynced", "none")
    assert unsynced["collectors"]["blocktrace"]["sync"]["calls"] == 0
