"""biossd.host.slurm.scheduler: whether a SIGTERM is SLURM's time limit (a ``timeout``, not an
interruption)."""

import datetime as dt

import pytest

from biossd.host.slurm import scheduler


@pytest.mark.parametrize("text, seconds", [("1-02:03:04", 93784), ("02:03:04", 7384), ("03:04", 184),
                                           ("UNLIMITED", None), ("", None)])
def test_slurm_time_limits_are_read_in_its_forms(text, seconds):
    assert scheduler.parse_time_limit_s(text) == seconds


def test_outside_a_slurm_job_no_time_limit_has_come(monkeypatch):
    monkeypatch.delenv("SLURM_JOB_ID", raising=False)
    assert scheduler.time_limit_reached() is False


def test_a_job_at_its_limit_within_the_slack_has_reached_it(monkeypatch):
    start = dt.datetime(2026, 1, 1, 12, 0, 0)
    monkeypatch.setenv("SLURM_JOB_ID", "7")
    monkeypatch.setattr(scheduler, "job_fields", lambda job: {"JobState": "RUNNING", "TimeLimit": "10:00",
                                                              "StartTime": start.isoformat()})
    slack = dt.timedelta(seconds=scheduler.TIME_LIMIT_SLACK_S)
    assert scheduler.time_limit_reached(start + dt.timedelta(minutes=10) - slack) is True
    assert scheduler.time_limit_reached(start + dt.timedelta(minutes=5)) is False
    monkeypatch.setattr(scheduler, "job_fields", lambda job: {"JobState": "TIMEOUT"})
    assert scheduler.time_limit_reached(start) is True
