"""A warm-up's code read whole into its own cgroup (docs/study.md, "Code is not data"): the files
its processes map or read outside the class's file systems, each read from its start to its end by a
process in the cgroup once the command has ended."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

from biossd.host import codefiles, pagecache
from biossd.host.cgroups import MemoryCap
from conftest import own_cgroups

#: A "library" the test's program maps one page of and a "jar" it reads one block of: the rest of
#: each is what a larger input would need (larger than a disk's read-ahead: 8 MiB on this VM).
CODE_BYTES = 32 << 20
#: A tmpfs on every Linux host: the class's file system of the end-to-end test.
SHM = Path("/dev/shm")
#: A program that maps one page of argv[1], reads 4 KiB of argv[2], opens argv[3] to write, then
#: waits for a line on stdin (so the files are seen while it runs).
TOUCH = ("import mmap,sys\nlib=open(sys.argv[1],'rb');m=mmap.mmap(lib.fileno(),4096,prot=mmap.PROT_READ);m[0]\n"
         "jar=open(sys.argv[2],'rb');jar.read(4096)\nout=open(sys.argv[3],'wb')\nsys.stdin.readline()\n")


def _code_file(path: Path) -> Path:
    path.write_bytes(os.urandom(CODE_BYTES))
    os.sync()
    pagecache.evict_file(path)
    return path


def _wait_seen(code: codefiles.CodeFiles, pid: int, paths: set[str]) -> None:
    deadline = time.monotonic() + 10
    while not paths <= {path for _fd, path, _size in code.held.values()} and time.monotonic() < deadline:
        code.see(pid)
        time.sleep(0.05)


@pytest.mark.integration
def test_the_files_a_process_maps_or_reads_are_read_whole_into_the_given_cgroup(tmp_path, root_required):
    lib, jar = _code_file(tmp_path / "lib.so"), _code_file(tmp_path / "tool.jar")
    written = tmp_path / "out.log"
    assert pagecache.resident_bytes(lib) < CODE_BYTES // 2
    proc = subprocess.Popen([sys.executable, "-c", TOUCH, str(lib), str(jar), str(written)], stdin=subprocess.PIPE,
                            text=True)
    code = codefiles.CodeFiles(excluded_devices=())
    try:
        _wait_seen(code, proc.pid, {str(lib), str(jar)})
    finally:
        proc.communicate("done\n")
    held = {path for _fd, path, _size in code.held.values()}
    assert {str(lib), str(jar)} <= held
    assert str(written) not in held, "a file opened for writing is not code"
    resident_before = pagecache.resident_bytes(lib) + pagecache.resident_bytes(jar)
    assert resident_before < CODE_BYTES, "the program read only a little of each"
    with MemoryCap(None, account=True) as cap:
        record = code.read_into(cap.join)
        charged = cap.usage_bytes()
    assert record["why"] is None and record["files"] == len(held) and record["bytes"] >= 2 * CODE_BYTES
    assert {"path": str(jar), "bytes": CODE_BYTES} in record["largest"]
    assert pagecache.resident_bytes(lib) == CODE_BYTES and pagecache.resident_bytes(jar) == CODE_BYTES
    assert charged >= 2 * CODE_BYTES - resident_before, "what was not resident was charged to the warm-up's cgroup"
    assert code.held == {}, "the descriptors were closed"
    assert own_cgroups() == []


@pytest.mark.integration
def test_files_on_the_class_s_own_file_systems_are_data_and_not_read(tmp_path, root_required):
    jar = _code_file(tmp_path / "tool.jar")
    proc = subprocess.Popen([sys.executable, "-c", TOUCH, str(jar), str(jar), os.devnull], stdin=subprocess.PIPE,
                            text=True)
    code = codefiles.CodeFiles(excluded_devices=[jar.stat().st_dev])
    try:
        code.see(proc.pid)
        time.sleep(0.2)
        code.see(proc.pid)
    finally:
        proc.communicate("done\n")
    assert str(jar) not in {path for _fd, path, _size in code.held.values()}
    code.close()


@pytest.mark.integration
def test_a_warm_up_run_records_the_code_it_read_whole_and_a_run_not_asked_reads_none(tmp_path, biossd, root_required):
    """`biossd profile --read-code`, its class's device a tmpfs (/dev/shm): the code file on the
    host's disk is read whole, and the record says so."""
    jar = _code_file(tmp_path / "tool.jar")
    cwd = SHM / f"biossd-test-codefiles-{os.getpid()}"
    cwd.mkdir()
    try:
        touch = [sys.executable, "-c", "import sys,time\nf=open(sys.argv[1],'rb');f.read(4096);time.sleep(0.5)\n",
                 str(jar)]
        biossd("profile", "--mem", "none", "--read-code", "--blocktrace", "off", "--perf", "off",
               "--out", str(tmp_path / "warm"), "--", *touch, cwd=cwd)
        biossd("profile", "--mem", "none", "--blocktrace", "off", "--perf", "off",
               "--out", str(tmp_path / "plain"), "--", *touch, cwd=cwd)
    finally:
        cwd.rmdir()
    warm = json.loads((tmp_path / "warm" / "run.json").read_text())
    read = warm["code_read"]
    assert read["asked"] and read["why"] is None and read["bytes"] >= CODE_BYTES, read
    assert str(jar) in [f["path"] for f in read["largest"]]
    assert "read_code" in warm["harness_s"]
    assert json.loads((tmp_path / "plain" / "run.json").read_text())["code_read"] == {"asked": False}
    assert own_cgroups() == []


@pytest.mark.integration
def test_a_fifo_the_program_reads_neither_blocks_nor_counts(tmp_path, root_required):
    """A named pipe a tool reads from is not code, and opening it to see must not wait for a
    writer (the resident memory's reader would hang with it)."""
    fifo = tmp_path / "fifo"
    os.mkfifo(fifo)
    proc = subprocess.Popen([sys.executable, "-c", "import os,sys\nfd=os.open(sys.argv[1],os.O_RDONLY|os.O_NONBLOCK)\n"
                             "sys.stdin.readline()\n", str(fifo)], stdin=subprocess.PIPE, text=True)
    code = codefiles.CodeFiles(excluded_devices=())
    seeing = threading.Thread(target=code.see, args=(proc.pid,), daemon=True)
    try:
        time.sleep(0.3)
        seeing.start()
        seeing.join(timeout=5)
    finally:
        proc.communicate("done\n")
    assert not seeing.is_alive(), "opening the FIFO waited for a writer"
    assert str(fifo) not in {path for _fd, path, _size in code.held.values()}
    code.close()
