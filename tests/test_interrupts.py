"""Seeded random interrupts (the short version of benchmarks/interrupts.py): `biossd profile`
with a cap, swap and a block trace, `emulate-hdd up`/`down`, and the pipeline with emulated
storage followed by -resume. Each kill point must leave nothing of biossd's on the host."""

import pytest
from interrupts import run_points, summary

pytestmark = pytest.mark.integration

SEED = 14  # profile points spread over 0.8-2.0 s, all three signals; the pipeline SIGKILLed mid-PROFILE


def test_random_kill_points_leave_nothing(env, tmp_path, root_required):
    lines: list[str] = []
    points = run_points(SEED, tmp_path, env, n_profile=6, n_emulate=4, n_pipeline=1, report=lines.append)
    assert {p.signal for p in points} == {"SIGINT", "SIGTERM", "SIGKILL"}, "all three signals are tried"
    assert sum(not p.completed for p in points) >= 8, "most points interrupt the command, not its end"
    bad = [p.line() for p in points if p.left]
    assert not bad, "\n".join(bad) + "\n" + summary(points)
