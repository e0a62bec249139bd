"""Parsing and pairing of block-request events (units; the real trace is in test_collectors)."""

import math

import pytest

from biossd.core.errors import BiossdError
from biossd.measure.trace import blocktrace, traceevents, tracefile, tracereader
from biossd.measure.trace.traceevents import CanonicalWriter, Event, parse_blkparse_line, parse_tracefs_line

ISSUE = "              dd-19446   [001] ..... 10944.322984: block_rq_issue: 254,0 WS 1048576 () 30988288 + 2048 be,0,4 [dd]"
COMPLETE = "          <idle>-0       [001] ..s1. 10944.323772: block_rq_complete: 254,0 WS () 30988288 + 2048 be,0,4 [0]"


def test_tracefs_issue_and_complete_lines():
    issue = parse_tracefs_line(ISSUE)
    assert (issue.kind, issue.dev, issue.rwbs, issue.sector, issue.nr_sectors, issue.bytes, issue.pid, issue.comm) == (
        "issue", (254, 0), "WS", 30988288, 2048, 1 << 20, 19446, "dd")
    assert issue.time_s == pytest.approx(10944.322984)
    done = parse_tracefs_line(COMPLETE)
    assert (done.kind, done.sector, done.nr_sectors, done.error) == ("complete", 30988288, 2048, 0)


def test_tracefs_lines_of_older_kernels_and_odd_task_names():
    # Kernels before 6.x print no ioprio field; task names may hold spaces and dashes.
    line = "  kworker/u4:2 my-task-77  [000] d..1. 5.000001: block_rq_issue: 8,16 R 4096 () 100 + 8 [my task]"
    event = parse_tracefs_line(line)
    assert (event.pid, event.dev, event.bytes, event.comm) == (77, (8, 16), 4096, "my task")
    assert parse_tracefs_line("# tracer: nop") is None
    assert parse_tracefs_line("  sh-1 [000] ..... 1.0: sched_switch: prev=sh") is None
    with pytest.raises(ValueError, match="block_rq_issue"):
        parse_tracefs_line("  sh-1 [000] ..... 1.0: block_rq_issue: garbage")


def test_blkparse_lines():
    issue = parse_blkparse_line("D 8 0 W 2048 8 4096 0.000123456 321 samtools\n")
    assert (issue.kind, issue.dev, issue.sector, issue.bytes, issue.pid, issue.comm) == (
        "issue", (8, 0), 2048, 4096, 321, "samtools")
    assert issue.time_s == pytest.approx(0.000123456)
    assert parse_blkparse_line("C 8 0 W 2048 8 4096 0.000200000 0 \n").kind == "complete"
    assert parse_blkparse_line("Q 8 0 W 2048 8 4096 0.000100000 321 samtools\n") is None
    for action, kind in (("G", "getrq"), ("I", "insert"), ("F", "frontmerge")):
        event = parse_blkparse_line(f"{action} 8 0 R 2048 8 4096 0.000100000 321 samtools\n")
        assert (event.kind, event.pid, event.comm, event.sector) == (kind, 321, "samtools", 2048)


def _ev(kind, t, sector, nr, rwbs="R", **kw):
    return Event(kind=kind, time_s=t, dev=(7, 0), rwbs=rwbs, sector=sector, nr_sectors=nr,
                 bytes=nr * 512 if kind == "issue" else None, pid=5 if kind == "issue" else None,
                 comm="x" if kind == "issue" else None, error=0 if kind == "complete" else None, **kw)


def test_pairing_partial_requeue_unmatched_and_incomplete(tmp_path):
    out = tmp_path / "t.tsv.gz"
    w = CanonicalWriter(out, {(7, 0): "loop0"}, t0_s=100.0)
    w.add(_ev("complete", 100.5, 999, 8))          # issued before the trace began
    w.add(_ev("issue", 101.0, 0, 16))
    w.add(_ev("complete", 101.2, 0, 8))            # half of it ...
    w.add(_ev("complete", 101.3, 8, 8))            # ... then the rest
    w.add(_ev("issue", 102.0, 64, 8, rwbs="WS"))
    w.add(_ev("requeue", 102.1, 64, 8, rwbs="WS"))  # handed back, issued again
    w.add(_ev("issue", 102.2, 64, 8, rwbs="WS"))
    w.add(_ev("complete", 102.5, 64, 8, rwbs="WS"))
    w.add(_ev("issue", 103.0, 128, 8))              # never completes
    assert not out.exists(), "the file appears only when complete"
    w.close()
    trace = tracereader.read_blocktrace(out)
    assert list(trace.sector) == [0, 64, 128]
    assert list(trace.op) == ["R", "W", "R"]
    assert trace.issue_s.tolist() == pytest.approx([1.0, 2.2, 3.0])
    assert trace.complete_s[0] == pytest.approx(1.3) and math.isnan(trace.complete_s[2])
    assert list(trace.bytes) == [8192, 4096, 4096] and set(trace.device) == {"loop0"}
    assert (w.unmatched_completions, w.incomplete_requests, w.requeues) == (1, 1, 1)


def test_rows_are_written_as_they_complete_not_held(tmp_path):
    w = CanonicalWriter(tmp_path / "t.tsv.gz", {}, 0.0)
    for i in range(35):
        w.add(_ev("issue", i, i * 8, 8))
        w.add(_ev("complete", i + 0.5, i * 8, 8))
    assert not w._pending, "every completed request went to the file"
    w.close()
    assert len(tracereader.read_blocktrace(tmp_path / "t.tsv.gz")) == 35


def test_op_of_rwbs():
    assert [traceevents.op_of(x) for x in ("R", "WS", "WFS", "FF", "DS", "N")] == ["R", "W", "W", "F", "D", "N"]


def test_the_text_table_reads_back_as_the_arrow_table_it_stands_for_nulls_and_all(tmp_path):
    """Exact floats, nulls, 64-bit sectors, non-ASCII and delimiter characters survive the file."""
    import pyarrow as pa

    cols = {"issue_s": [0.1, 1 / 3, 1e-9], "complete_s": [0.5, None, 0.7], "device": ["vda", "loop3", "vda"],
            "op": ["R", "W", "R"], "rwbs": ["RS", "W", "RA"], "sector": [1, 2**40, 3], "bytes": [4096, 512, 8],
            "pid": [1, None, 3], "comm": ["sam\ttools", 'é"x', None], "error": [0, None, 0]}
    path = tracefile.write_trace(tmp_path / "t.tsv.gz", cols)
    schema = pa.schema([(name, pa.type_for_alias(kind)) for name, kind in tracefile.COLUMNS])
    assert tracereader.read_table(path).equals(pa.table(cols, schema=schema))
    empty = tracefile.write_trace(tmp_path / "e.tsv.gz", {name: [] for name in tracefile.COLUMN_NAMES})
    assert tracereader.read_table(empty).num_rows == 0 and tracereader.read_table(empty).schema.equals(schema)
    with pytest.raises(ValueError, match="missing"):
        tracefile.write_trace(tmp_path / "m.tsv.gz", {"issue_s": [1.0]})
    assert not (tmp_path / "m.tsv.gz").exists() and not (tmp_path / "m.tsv.gz.part").exists()


def test_an_older_result_set_s_parquet_trace_is_read_and_a_damaged_file_named(tmp_path):
    import pyarrow.parquet as pq

    cols = {name: [] for name in tracefile.COLUMN_NAMES}
    tracefile.write_trace(tmp_path / "x.tsv.gz", {**cols, "issue_s": [2.0, 1.0], "complete_s": [2.5, 1.5],
                                                   "device": ["vda"] * 2, "op": ["R", "W"], "rwbs": ["R", "W"],
                                                   "sector": [8, 0], "bytes": [512, 512], "pid": [1, 1],
                                                   "comm": ["a", "b"], "error": [0, 0]})
    run = tmp_path / "run"
    run.mkdir()
    assert tracefile.trace_path(run) == run / tracefile.BLOCKTRACE_FILE
    pq.write_table(tracereader.read_table(tmp_path / "x.tsv.gz"), run / tracefile.LEGACY_BLOCKTRACE_FILE)
    assert tracefile.trace_path(run) == run / tracefile.LEGACY_BLOCKTRACE_FILE
    assert list(tracereader.request_arrays(tracefile.trace_path(run))["sector"]) == [0, 8]
    (run / tracefile.BLOCKTRACE_FILE).write_bytes(b"not gzip")
    assert tracefile.trace_path(run) == run / tracefile.BLOCKTRACE_FILE, "the current file wins"
    with pytest.raises(BiossdError, match="blocktrace.tsv.gz: not a readable block trace"):
        tracereader.read_table(run / tracefile.BLOCKTRACE_FILE)


def test_issuers_outside_the_run_are_foreign_and_left_out_of_its_requests(tmp_path):
    """With fork events, the run is its leader's tree: another process (alive or ended) and the
    profiler itself are foreign, kernel threads are not. Without them, only a process alive in
    another session (and the profiler) can be told apart; one that ended is kept."""
    import os
    import subprocess

    from biossd.measure.trace import tracereader

    other = subprocess.Popen(["sleep", "30"], start_new_session=True)
    mine = subprocess.Popen(["sleep", "30"], start_new_session=True)
    ended = subprocess.Popen(["true"])
    ended.wait()
    writer = CanonicalWriter(tmp_path / "t.tsv.gz", {(7, 0): "loop0"}, t0_s=0.0)
    writer.issuers = {other.pid: ["java", 5], mine.pid: ["samtools", 7], 99999999: ["gzip", 2],
                      ended.pid: ["dd", 4], 2: ["kthreadd", 1], 99999998: ["kworker/u8:3", 6],
                      os.getpid(): ["biossd", 3]}
    writer.forks, writer.forks_traced = [(mine.pid, 99999999), (99999999, 99999997)], True
    try:
        traced = blocktrace.foreign_issuers(writer, leader=mine.pid)
        writer.forks_traced = False
        alive_only = blocktrace.foreign_issuers(writer, leader=mine.pid)
    finally:
        for p in (other, mine):
            p.kill()
            p.wait()
        writer.abort()
    assert set(traced["pids"]) == {str(other.pid), str(ended.pid), str(os.getpid())}
    assert traced["requests"] == 5 + 4 + 3 and "fork events" in traced["attributed_by"]
    assert set(alive_only["pids"]) == {str(other.pid), str(os.getpid())}
    body = {"collectors": {"blocktrace": {"foreign": traced}}}
    assert sorted(tracereader.excluded_pids(body)) == sorted([other.pid, ended.pid, os.getpid()])


def test_fork_lines_are_read_and_other_lines_are_not():
    from biossd.measure.trace.blocktrace import descendants
    from biossd.measure.trace.traceevents import parse_fork_line

    line = ("            bash-1234    [001] d..2.  5123.456789: sched_process_fork: comm=bash pid=1234 "
            "child_comm=bash child_pid=1240")
    assert parse_fork_line(line) == (1234, 1240)
    assert parse_fork_line("  dd-7 [000] ..... 1.0: block_rq_issue: 254,0 R 4096 () 8 + 8 [dd]") is None
    assert descendants(1, [(1, 2), (2, 3), (9, 4), (3, 5)]) == {1, 2, 3, 5}


def test_the_writer_tallies_issuers_and_a_run_s_requests_leave_out_the_foreign(tmp_path):
    out = tmp_path / "t.tsv.gz"
    w = CanonicalWriter(out, {(7, 0): "loop0"}, t0_s=0.0)
    for i, pid in enumerate((10, 10, 20)):
        w.add(Event(kind="issue", time_s=float(i), dev=(7, 0), rwbs="R", sector=8 * i, nr_sectors=8, bytes=4096,
                    pid=pid, comm=f"task{pid}", error=None))
        w.add(Event(kind="complete", time_s=i + 0.5, dev=(7, 0), rwbs="R", sector=8 * i, nr_sectors=8, bytes=None,
                    pid=None, comm=None, error=0))
    w.close()
    assert w.issuers == {10: ["task10", 2], 20: ["task20", 1]}
    assert len(tracereader.request_arrays(out)["issue_s"]) == 3
    kept = tracereader.request_arrays(out, exclude_pids=[20])
    assert kept["sector"].tolist() == [0, 8] and kept["issue_s"].tolist() == [0.0, 1.0]


def test_a_request_a_worker_issues_is_the_submitter_s(tmp_path):
    """The block layer's worker (kworker/1:1H) issues queued requests: the request is the task's
    that queued it (block_rq_insert), so the run's requests are told from another study's."""
    lines = ["       samtools-77    [001] ..... 5.000001: block_rq_insert: 254,0 R 4096 () 800 + 8 be,0,4 [samtools]",
             "   kworker/1:1H-12    [001] ..... 5.000100: block_rq_issue: 254,0 R 4096 () 800 + 8 be,0,4 [kworker/1:1H]",
             "   kworker/1:1H-12    [001] ..... 5.000200: block_rq_issue: 254,0 W 4096 () 900 + 8 be,0,4 [kworker/1:1H]"]
    events = [parse_tracefs_line(line) for line in lines]
    assert events[0].kind == "insert" and (events[0].pid, events[0].comm) == (77, "samtools")
    w = CanonicalWriter(tmp_path / "t.tsv.gz", {(254, 0): "vda"}, t0_s=0.0)
    for event in events:
        w.add(event)
    w.close()
    trace = tracereader.read_blocktrace(tmp_path / "t.tsv.gz")
    assert list(zip(trace.sector, trace.pid, trace.comm)) == [(800, 77, "samtools"), (900, 12, "kworker/1:1H")]


def test_a_request_no_one_queued_is_the_task_s_that_allocated_it(tmp_path):
    """On a busy device the block layer puts a request that could not be issued at once on its
    dispatch list (no block_rq_insert) and a worker issues it later: the request is the task's that
    allocated it (block_getrq, in that task's context) — another study's reads are not the run's
    because a worker issued them. A requeued request stays its submitter's; a front merge moves a
    request's first sector and keeps its submitter."""
    lines = ["            bwa-81    [000] ..... 7.000001: block_getrq: 254,0 R 800 + 8 [bwa]",
             "       samtools-77    [001] ..... 7.000002: block_getrq: 254,0 R 1600 + 8 [samtools]",
             "       samtools-77    [001] ..... 7.000003: block_bio_frontmerge: 254,0 R 1592 + 8 [samtools]",
             "   kworker/1:2H-12    [001] ..... 7.000100: block_rq_insert: 254,0 R 4096 () 800 + 8 be,0,4 [kworker/1:2H]",
             "   kworker/1:2H-12    [001] ..... 7.000200: block_rq_issue: 254,0 R 4096 () 800 + 8 be,0,4 [kworker/1:2H]",
             "   kworker/1:2H-12    [001] ..... 7.000300: block_rq_issue: 254,0 R 8192 () 1592 + 16 be,0,4 [kworker/1:2H]",
             "   kworker/1:2H-12    [001] ..... 7.000400: block_rq_requeue: 254,0 R () 1592 + 16 be,0,4 [0]",
             "   kworker/1:2H-12    [001] ..... 7.000500: block_rq_issue: 254,0 R 8192 () 1592 + 16 be,0,4 [kworker/1:2H]",
             "   kworker/1:2H-12    [001] ..... 7.000600: block_rq_issue: 254,0 W 4096 () 900 + 8 be,0,4 [kworker/1:2H]"]
    events = [parse_tracefs_line(line) for line in lines]
    assert [e.kind for e in events[:3]] == ["getrq", "getrq", "frontmerge"]
    assert (events[0].pid, events[0].comm, events[0].bytes) == (81, "bwa", 4096)
    w = CanonicalWriter(tmp_path / "t.tsv.gz", {(254, 0): "vda"}, t0_s=0.0)
    for event in events:
        w.add(event)
    w.close()
    trace = tracereader.read_blocktrace(tmp_path / "t.tsv.gz")
    assert sorted(zip(trace.sector, trace.pid, trace.comm)) == [
        (800, 81, "bwa"), (900, 12, "kworker/1:2H"), (1592, 77, "samtools")]
    assert w.requeues == 1 and w.submitters_forgotten == 0


def test_submitters_of_requests_never_issued_are_forgotten_past_a_bound(tmp_path, monkeypatch):
    """A request merged into another is allocated and never issued: its submitter is forgotten
    once more than MAX_UNISSUED_REQUESTS wait, oldest first, and counted."""
    monkeypatch.setattr(traceevents, "MAX_UNISSUED_REQUESTS", 4)
    w = CanonicalWriter(tmp_path / "t.tsv.gz", {(7, 0): "loop0"}, t0_s=0.0)
    for i in range(10):
        w.add(Event(kind="getrq", time_s=float(i), dev=(7, 0), rwbs="R", sector=8 * i, nr_sectors=8, pid=100 + i,
                    comm="cat"))
    w.add(Event(kind="issue", time_s=11.0, dev=(7, 0), rwbs="R", sector=72, nr_sectors=8, bytes=4096, pid=12,
                comm="kworker/0:1H"))
    w.add(Event(kind="issue", time_s=11.0, dev=(7, 0), rwbs="R", sector=0, nr_sectors=8, bytes=4096, pid=12,
                comm="kworker/0:1H"))
    w.close()
    trace = tracereader.read_blocktrace(tmp_path / "t.tsv.gz")
    assert sorted(zip(trace.sector, trace.pid)) == [(0, 12), (72, 109)]
    assert w.submitters_forgotten == 6 and len(w._submitted) == 3


def test_a_swap_request_is_counted_once_below_and_its_issuer_named_above(tmp_path):
    """A run's swap is a loop device over a file on the class's traced file system: each swap
    request is traced on both. The features count it once, on the device below; who paged is
    read from the swap device, where the faulting process submitted it."""
    rows = {  # on loop5 (the swap) as perl and time submitted them, on loop0 (below) as the loop's worker
        "issue_s": [1.0, 1.0, 2.0, 2.0, 3.0, 3.0, 4.0], "complete_s": [1.1, 1.1, 2.1, 2.1, 3.1, 3.1, 4.1],
        "device": ["loop5", "loop0", "loop5", "loop0", "loop5", "loop0", "loop0"],
        "op": ["R", "R", "R", "R", "W", "W", "W"], "rwbs": ["R", "R", "R", "R", "W", "W", "WS"],
        "sector": [8, 4104, 16, 4112, 24, 4120, 90], "bytes": [4096] * 7, "pid": [7, 40, 8, 40, 9, 40, 7],
        "comm": ["perl", "loop5", "time", "loop5", "kswapd0", "loop5", "perl"], "error": [0] * 7}
    tracefile.write_trace(tmp_path / tracefile.BLOCKTRACE_FILE, rows)
    body = {"devices": ["loop0", "loop5"],
            "swap": {"loop_device": "/dev/loop5", "backing_device": "loop0", "backing_file": "/mnt/ssd/s.img"}}
    assert tracereader.stacked_devices(body) == ["loop5"]
    requests = tracereader.run_requests(tmp_path, body)
    assert len(requests["issue_s"]) == 4 and set(requests["sector"]) == {4104, 4112, 4120, 90}
    paged = tracereader.swap_issuers(tmp_path, body)
    assert paged == {"reads": 2, "writes": 1, "read_comms": {"perl": 1, "time": 1}}
    # A result set from before the swap recorded its device: its file on the run's directory's mount.
    older = {"devices": ["loop0", "loop5"], "mounts": {"cwd": {"mount_point": "/mnt/ssd"}},
             "swap": {"loop_device": "/dev/loop5", "backing_file": "/mnt/ssd/s.img"}}
    assert tracereader.stacked_devices(older) == ["loop5"]
    elsewhere = {**body, "swap": {**body["swap"], "backing_device": "vda"}}  # below it, nothing traced
    assert tracereader.stacked_devices(elsewhere) == [] and len(tracereader.run_requests(tmp_path, elsewhere)["bytes"]) == 7


def test_a_journal_s_flush_is_not_waited_for_and_the_run_s_own_fsync_is():
    """A flush the journal's kernel thread issues waits behind the file system's writes for as
    long as they take; the run did not wait for it. One its own process issued (fsync) it did."""
    waited = tracereader.waited_for(["R", "W", "W", "F", "F"], ["R", "W", "WS", "FF", "FF"],
                                   ["bcftools", "kworker/u4:1", "bcftools", "jbd2/loop0-8", "bcftools"])
    assert list(waited) == [True, False, True, False, True]
    assert list(tracereader.waited_for(["F"], ["FF"])) == [True]  # issuer unknown: taken as waited for


def test_a_write_back_throttling_line_gives_its_task_and_pause():
    line = ("              dd-4242    [001] ..... 81234.567890: balance_dirty_pages: bdi 7:0: limit=1024 "
            "setpoint=768 dirty=1100 wb_setpoint=512 wb_dirty=1100 dirty_ratelimit=100 task_ratelimit=40 "
            "dirtied=32 dirtied_pause=32 paused=0 pause=12 period=12 think=0 cgroup_ino=1")
    assert traceevents.parse_throttle_line(line) == (4242, 0.012)
    assert traceevents.parse_throttle_line(line.replace("pause=12 ", "pause=-4 ")) == (4242, 0.0)
    assert traceevents.parse_throttle_line("  dd-1 [000] ..... 1.0: block_rq_issue: 7,0 W 4096 () 0 + 8 [dd]") is None


def test_a_flush_is_paired_with_its_completion_at_the_kernel_s_last_sector(tmp_path):
    """The kernel issues a flush at sector 0 and completes it at (sector_t)-1: paired in order,
    and not with a data request at sector 0."""
    writer = traceevents.CanonicalWriter(tmp_path / "t.tsv.gz", {(7, 1): "loop1"}, 0.0)
    last = 18446744073709551615
    for kind, t, rwbs, sector, nr in (("issue", 1.0, "FF", 0, 0), ("issue", 1.1, "WS", 0, 8),
                                      ("issue", 1.2, "FF", 0, 0), ("complete", 1.3, "WS", 0, 8),
                                      ("complete", 1.5, "FF", last, 0), ("complete", 1.6, "FF", last, 0)):
        writer.add(traceevents.Event(kind=kind, time_s=t, dev=(7, 1), rwbs=rwbs, sector=sector, nr_sectors=nr,
                                    bytes=nr * 512, pid=9, comm="kworker/1:1H", error=0))
    writer.close()
    trace = tracereader.read_blocktrace(tmp_path / "t.tsv.gz")
    assert writer.unmatched_completions == 0 and writer.incomplete_requests == 0
    assert list(zip(trace.op, trace.issue_s, trace.complete_s)) == [("F", 1.0, 1.5), ("W", 1.1, 1.3), ("F", 1.2, 1.6)]


def test_an_fsync_line_gives_its_task_and_whether_it_entered_or_returned():
    enter = "         python3-5594    [001] ..... 80162.254441: ext4_sync_file_enter: dev 7,1 ino 14 parent 2 datasync 1 "
    leave = "         python3-5594    [001] ..... 80162.286138: ext4_sync_file_exit: dev 7,1 ino 14 ret 0"
    assert traceevents.parse_sync_line(enter) == (5594, "enter", 80162.254441)
    assert traceevents.parse_sync_line(leave) == (5594, "exit", 80162.286138)
    assert traceevents.parse_sync_line("  dd-1 [000] ..... 1.0: block_rq_issue: 7,0 W 4096 () 0 + 8 [dd]") is None


def test_a_kernel_thread_s_flush_inside_the_run_s_fsync_is_waited_for_and_one_outside_is_not():
    waited = tracereader.waited_for(["F", "F", "W"], ["FF", "FF", "W"], ["kworker/1:1H"] * 3,
                                   issue_s=[0.5, 2.0, 0.6], windows=[[0.4, 0.9]])
    assert list(waited) == [True, False, False]
    assert list(tracereader.window_ends([0.5, 2.0], [[0.4, 0.9], [0.45, 0.7]])) == [0.7, pytest.approx(float("nan"), nan_ok=True)]
