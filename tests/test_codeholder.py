"""A warm-up's code held resident for as long as its owner runs (docs/study.md, "Code is not data",
amended 2026-11-29): the holder maps and locks the files, outlives the run that started it, ends
with its owner (even one killed), is replaced by a newer warm-up of the same tool, and is refused
where nothing would end it or the host's memory would not allow it."""

from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import sys
import time
from contextlib import contextmanager
from pathlib import Path

import pytest

from biossd.core.owners import ProcessRef
from biossd.host import codeholder, pagecache
from biossd.measure import leftovers
from test_codefiles import SHM

FILE_BYTES = 8 << 20
#: How long a holder may take to notice its owner's end.
EXIT_WAIT_S = 5.0


def _files(tmp_path: Path, n: int = 2) -> list[Path]:
    paths = []
    for i in range(n):
        path = tmp_path / f"lib{i}.so"
        path.write_bytes(os.urandom(FILE_BYTES))
        paths.append(path)
    os.sync()
    return paths


@contextmanager
def _opened(paths: list[Path]):
    fds = [os.open(p, os.O_RDONLY | os.O_CLOEXEC) for p in paths]
    try:
        yield [(fd, str(p), p.stat().st_size) for fd, p in zip(fds, paths)]
    finally:
        for fd in fds:
            os.close(fd)


@contextmanager
def _owner():
    proc = subprocess.Popen(["sleep", "300"])
    try:
        yield proc, ProcessRef.of(proc.pid, "test owner")
    finally:
        proc.kill()
        proc.wait()


def _locked_bytes(pid: int) -> int:
    status = Path(f"/proc/{pid}/status").read_text()
    return int(re.search(r"^VmLck:\s+(\d+) kB", status, re.M).group(1)) << 10


def _gone(ref: ProcessRef) -> bool:
    deadline = time.monotonic() + EXIT_WAIT_S
    while ref.alive() and time.monotonic() < deadline:
        time.sleep(0.05)
    return not ref.alive()


@pytest.mark.integration
def test_the_files_stay_resident_until_the_owner_ends_even_killed(tmp_path, root_required):
    paths = _files(tmp_path)
    with _owner() as (proc, owner), _opened(paths) as files:
        record = codeholder.hold(files, owner, "tool-a")
    assert record["held"] and record["why"] is None, record
    assert record["files"] == 2 and record["bytes"] == 2 * FILE_BYTES
    holder = ProcessRef.from_record(record["holder"])
    # The owner above was killed on leaving the block: the holder went with it.
    assert _gone(holder), "the holder outlived its owner"
    assert codeholder.holders() == [] and codeholder.leftovers() == []

    with _owner() as (proc, owner), _opened(paths) as files:
        record = codeholder.hold(files, owner, "tool-a")
        holder = ProcessRef.from_record(record["holder"])
        assert _locked_bytes(holder.pid) >= 2 * FILE_BYTES
        for path in paths:  # what a run's eviction does to its own files: locked pages stay
            pagecache.evict_file(path)
            assert pagecache.resident_bytes(path) == FILE_BYTES
        assert [r["key"] for r in codeholder.live()] == ["tool-a"]
        assert any("code of tool-a held resident (16 MiB" in line for line in leftovers.in_use())
        proc.send_signal(signal.SIGKILL)
        proc.wait()
        assert _gone(holder)
    assert codeholder.holders() == [] and not codeholder.STATE_DIR.exists(), "the last holder out removes its folder"


@pytest.mark.integration
def test_a_newer_warm_up_of_the_same_tool_replaces_its_holder_and_another_tool_keeps_its_own(tmp_path,
                                                                                             root_required):
    paths = _files(tmp_path)
    with _owner() as (_proc, owner):
        with _opened(paths) as files:
            first = codeholder.hold(files, owner, "tool-a")
            other = codeholder.hold(files[:1], owner, "tool-b")
            second = codeholder.hold(files, owner, "tool-a")
        assert first["held"] and other["held"] and second["held"]
        assert _gone(ProcessRef.from_record(first["holder"])), "the replaced holder still runs"
        assert sorted(r["key"] for r in codeholder.live()) == ["tool-a", "tool-b"]
        holders = [ProcessRef.from_record(r["holder"]) for r in (other, second)]
    assert all(_gone(h) for h in holders) and codeholder.holders() == []


@pytest.mark.integration
def test_the_host_s_share_counts_a_file_two_holders_lock_once(tmp_path, monkeypatch, root_required):
    """GATK's three steps lock the same JDK and jar: the second tool's holder adds no memory."""
    shared, other = _files(tmp_path)
    monkeypatch.setattr(codeholder, "MAX_HELD_SHARE", 1.5 * FILE_BYTES / codeholder._mem_total_bytes())
    with _owner() as (_proc, owner):
        with _opened([shared]) as files:
            first = codeholder.hold(files, owner, "gatk_a")
            second = codeholder.hold(files, owner, "gatk_b")
        with _opened([other]) as files:
            third = codeholder.hold(files, owner, "tool-c")
        assert first["held"] and second["held"], second
        assert not third["held"] and "8 MiB beside 8 MiB already held" in third["why"], third
        holders = [ProcessRef.from_record(r["holder"]) for r in (first, second)]
    assert all(_gone(h) for h in holders) and codeholder.holders() == []


@pytest.mark.integration
def test_a_killed_holder_s_state_is_a_leftover_that_cleanup_removes(tmp_path, root_required):
    paths = _files(tmp_path, 1)
    with _owner() as (_proc, owner):
        with _opened(paths) as files:
            record = codeholder.hold(files, owner, "tool-a")
        holder = ProcessRef.from_record(record["holder"])
        os.kill(holder.pid, signal.SIGKILL)  # no chance to remove its state file
        assert _gone(holder)
        found = codeholder.leftovers()
        assert [r["key"] for r in found] == ["tool-a"]
        assert any(kind == "code holder" and "tool-a" in what for kind, what, _ in leftovers.find_all())
        for r in found:
            codeholder.remove_leftover(r)
    assert codeholder.holders() == []


def test_nothing_is_held_without_an_owner_in_a_slurm_job_or_beyond_the_host_s_share(tmp_path, monkeypatch):
    paths = _files(tmp_path, 1)
    monkeypatch.setattr(codeholder.os, "geteuid", lambda: 0)
    me = ProcessRef.current("this test")
    with _opened(paths) as files:
        none = codeholder.hold(files, None, "tool-a", environ={})
        slurm = codeholder.hold(files, me, "tool-a", environ={codeholder.SLURM_JOB_VAR: "7"})
        monkeypatch.setattr(codeholder, "MAX_HELD_SHARE", FILE_BYTES / 2 / codeholder._mem_total_bytes())
        over = codeholder.hold(files, me, "tool-a", environ={})
    assert not none["held"] and "no owner outlives the run" in none["why"]
    assert not slurm["held"] and "SLURM job" in slurm["why"]
    assert not over["held"] and "of the host's memory" in over["why"]
    assert codeholder.holders() == []


def test_a_file_deleted_since_it_was_read_is_not_held(tmp_path, monkeypatch):
    """A container's copy of its image (Docker's vfs driver) is gone with the container: holding it
    would keep the deleted file's blocks and help no later run."""
    paths = _files(tmp_path, 1)
    monkeypatch.setattr(codeholder.os, "geteuid", lambda: 0)
    with _opened(paths) as files:
        paths[0].unlink()
        record = codeholder.hold(files, ProcessRef.current("this test"), "tool-a", environ={})
    assert not record["held"] and record["files_deleted"] == 1 and "no file of it still exists" in record["why"]


@pytest.mark.integration
def test_a_warm_up_run_hands_its_code_to_a_holder_of_its_owner(tmp_path, biossd, root_required):
    """`biossd profile --read-code` for an owner: the code read whole is held after the run has
    ended, and goes when the owner does."""
    (lib,) = _files(tmp_path, 1)
    touch = [sys.executable, "-c", "import sys,time\nf=open(sys.argv[1],'rb');f.read(4096);time.sleep(0.5)\n", str(lib)]
    cwd = SHM / f"biossd-test-codeholder-{os.getpid()}"  # the class's file system: not the code's
    cwd.mkdir()
    with _owner() as (proc, owner):
        try:
            biossd("profile", "--mem", "none", "--read-code", "--blocktrace", "off", "--perf", "off", "--owner-pid",
                   str(owner.pid), "--label", "tool=touch", "--out", str(tmp_path / "warm"), "--", *touch, cwd=cwd)
        finally:
            cwd.rmdir()
        held = json.loads((tmp_path / "warm" / "run.json").read_text())["code_read"]["held"]
        assert held["held"] and held["key"] == "touch" and held["bytes"] >= FILE_BYTES, held
        holder = ProcessRef.from_record(held["holder"])
        assert holder.alive(), "the holder ended with the run instead of its owner"
        assert pagecache.resident_bytes(lib) == FILE_BYTES
    assert _gone(holder) and codeholder.holders() == []
