"""A recorded stream replayed on a cloud volume's own clock: which request each followed, a
burst's latencies overlapping, the union of waited-for requests, and runs that overlapped keeping
their own dependencies (biossd.analysis.replay, biossd.host.requeststream.followed)."""

from __future__ import annotations

import numpy as np
import pytest

from biossd.analysis import predict, replay
from biossd.host import requeststream
from biossd.host.models import devicemodels

KIB = 1024
GP3_LATENCY_S, GP3_IOPS = 0.0055, 3000.0


def random_reads(n: int, nbytes: int = 4 * KIB) -> requeststream.Stream:
    offsets = (np.arange(n) * 7919 % 100_003) * (1 << 20)
    return requeststream.Stream(is_write=np.zeros(n, bool), offset=offsets.astype(np.int64), nbytes=np.full(n, nbytes),
                                depth=np.arange(1, n + 1), idle_ms=np.zeros(n), new_stream=np.zeros(n, bool))


def test_each_request_follows_the_last_that_completed_before_it_was_issued():
    issue = np.array([0.0, 0.0, 0.5, 0.6, 2.0])
    complete = np.array([0.4, 0.3, 1.0, 0.7, 2.1])
    after, think = requeststream.followed(issue, complete)
    assert after.tolist() == [-1, -1, 0, 0, 2]
    assert think == pytest.approx([0.0, 0.0, 0.1, 0.2, 1.0])
    empty = requeststream.followed(np.array([]), np.array([]))
    assert empty[0].size == 0 and empty[1].size == 0


def test_the_union_counts_only_the_counted_requests_and_each_stretch_once():
    start, finish = np.array([0.0, 0.1, 0.2, 1.0]), np.array([0.5, 0.3, 0.9, 1.5])
    inc = requeststream.union_increments(start, finish, np.array([True, True, False, True]))
    assert inc == pytest.approx([0.5, 0.0, 0.0, 0.5])
    assert inc.sum() == pytest.approx(predict.busy_s(start[[0, 1, 3]], finish[[0, 1, 3]]))


def test_a_burst_overlaps_its_latencies_where_issue_order_charges_each_its_share():
    """32 random reads issued together on gp3 at its baseline: replayed, the burst ends after
    its IOPS allow 32 (10.7 ms), not after 1 + 1/2 + ... + 1/32 latencies (22 ms) as served in
    issue order with the depth each met."""
    gp3 = devicemodels.load_target("cloud:aws-gp3-baseline")
    n = 32
    s = random_reads(n)
    timeline = gp3.replay(s, np.full(n, -1), np.zeros(n))
    busy = replay.service(timeline, np.ones(n, bool), np.arange(n)).mean_ms.sum() / 1000
    assert busy == pytest.approx(max(GP3_LATENCY_S, n / GP3_IOPS), rel=0.02)
    in_order = gp3.serve(s).mean_ms.sum() / 1000
    assert in_order > 2 * busy
    low, high = (replay.service(timeline, np.ones(n, bool), np.arange(n)).low_ms.sum() / 1000,
                 replay.service(timeline, np.ones(n, bool), np.arange(n)).high_ms.sum() / 1000)
    assert low <= busy <= high and high == pytest.approx(0.010 + 1 / GP3_IOPS, rel=0.05)


def test_a_request_waits_for_the_one_it_followed_and_the_time_between():
    """Two reads one after the other, 1 ms of computing between: on gp3 the second starts 1 ms
    after the first completes there (5.5 ms), so the volume is busy two latencies, not one."""
    gp3 = devicemodels.load_target("cloud:aws-gp3-baseline")
    s = random_reads(2)
    after, think = requeststream.followed(np.array([0.0, 0.0011]), np.array([0.0001, 0.0012]))
    start, finish = gp3.replay(s, after, think)["mean"]
    assert start[1] == pytest.approx(finish[0] + 0.001)
    assert replay.service(gp3.replay(s, after, think), np.ones(2, bool), np.arange(2)).mean_ms.sum() == pytest.approx(11.0)


def test_runs_that_overlapped_follow_only_their_own_requests():
    """Run b's request was issued after run a's completed on the host's clock, but b never waited
    for a: merged, it follows none of a's and keeps its time on the shared clock."""
    def run(epoch, issue, complete):
        return predict.RunStream(random_reads(len(issue)), runtime_s=1.0, cpu_s=0.1, busy_s=0.1,
                                 issue_s=np.array(issue), started_epoch_s=epoch, complete_s=np.array(complete))
    a, b = run(100.0, [0.0, 0.2], [0.1, 0.3]), run(100.15, [0.0], [0.05])
    assert replay.replays(devicemodels.load_target("cloud:aws-gp3-baseline"), [a, b])
    assert not replay.replays(devicemodels.paper_target("Seagate Barracuda"), [a, b])
    owner = np.array([0, 0, 1])
    back = np.array([0, 2, 1])  # merged by issue time: a0 (100.0), b0 (100.15), a1 (100.2)
    after, think = replay.merged_followed([a, b], back, owner)
    assert after.tolist() == [-1, -1, 0]
    assert think == pytest.approx([0.0, 0.15, 0.1])
    assert replay.waited(a).tolist() == [True, True]
