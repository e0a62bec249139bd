"""Seeded random interrupts (the short version of benchmarks/interrupts.py): `biossd profile`
with a cap, swap and a block trace, `emulate-hdd up`/`down`, and the pipeline with emulated
storage followed by -resume. Each kill point must leave nothing of biossd's on the host."""

import signal

import pytest

from interrupts import EMULATE_EDGES, PROFILE_EDGES, SIGNALS, KillPoint, _profile, edge_points, run_points, summary

pytestmark = pytest.mark.integration

SEED = 14  # profile points spread over 0.8-2.0 s, all three signals


def test_random_kill_points_leave_nothing(env, tmp_path, root_required):
    """The commands that change the host, killed at random. The pipeline's points (Nextflow
    killed, then -resume) are the benchmark's: here test_study_workflow's interrupted study and the
    owner-death tests of test_reliability stand for them, within the suite's time."""
    lines: list[str] = []
    points = run_points(SEED, tmp_path, env, n_profile=4, n_emulate=4, n_pipeline=0, report=lines.append,
                        n_experiment=2, n_next=1)
    assert {p.signal for p in points} == {"SIGINT", "SIGTERM", "SIGKILL"}, "all three signals are tried"
    assert sum(not p.completed for p in points) >= 8, "most points interrupt the command, not its end"
    bad = [p.line() for p in points if p.left]
    assert not bad, "\n".join(bad) + "\n" + summary(points)


def test_a_signal_just_after_each_step_leaves_nothing(env, tmp_path, root_required):
    """The moments a random delay rarely hits: right after each step of `biossd profile` and of
    `emulate-hdd up`, the signals in turn (SIGKILL right after the swap file is made; SIGTERM
    right after up's state directory, which once stayed). benchmarks/interrupts.py tries every
    edge with every signal."""
    lines: list[str] = []
    points = edge_points(tmp_path, env, SIGNALS, (signal.SIGTERM, signal.SIGKILL, signal.SIGINT), rotate=True,
                         report=lines.append)
    assert len(points) == len(PROFILE_EDGES) + len(EMULATE_EDGES)
    assert {(p.target, p.signal) for p in points} >= {("profile @swap file", "SIGKILL"),
                                                      ("up @state directory", "SIGTERM")}
    assert not any(p.completed for p in points), "\n".join(lines)
    bad = [p.line() for p in points if p.left]
    assert not bad, "\n".join(bad) + "\n" + summary(points)


@pytest.mark.parametrize("signum", [signal.SIGHUP, signal.SIGQUIT])
def test_a_closed_terminal_or_ctrl_backslash_tears_down_as_term_does(env, tmp_path, root_required, signum):
    """SIGHUP (a closed terminal, a dropped ssh) and SIGQUIT, sent while the tool runs: the run is
    torn down (cap, swap, trace, partial, lock, the tool) and the command exits 128+signal."""
    name = signal.Signals(signum).name
    point = _profile(KillPoint("profile", name, 0.0), signum, tmp_path / name, env, edge=PROFILE_EDGES[-1])
    assert not point.completed and point.exit_code == 128 + signum, point.line()
    assert not point.left, point.line()
