"""What the batch scheduler a run is inside says about it (SLURM): whether the job's time limit
has come, so a profiled run that SLURM stops at its limit is recorded as ``timeout``, not lost as
an interruption. Outside a SLURM job everything here answers "no"."""

from __future__ import annotations

import datetime as dt
import os
import re
import shutil
import subprocess

#: A SIGTERM this close to the job's end (or after it) is SLURM's time limit.
TIME_LIMIT_SLACK_S = 5.0
_TIME_RE = re.compile(r"^(?:(\d+)-)?(?:(\d+):)?(\d+):(\d+)$")


def slurm_job_id() -> str | None:
    return os.environ.get("SLURM_JOB_ID") or None


def parse_time_limit_s(text: str) -> float | None:
    """SLURM's ``[days-][hours:]minutes:seconds`` as seconds; ``None`` for UNLIMITED or other."""
    match = _TIME_RE.match(text.strip())
    if not match:
        return None
    days, hours, minutes, seconds = (int(x) if x else 0 for x in match.groups())
    return ((days * 24 + hours) * 60 + minutes) * 60 + seconds


def job_fields(job_id: str) -> dict[str, str]:
    """``scontrol show job -o JOB`` as fields (empty when SLURM cannot be asked)."""
    if shutil.which("scontrol") is None:
        return {}
    proc = subprocess.run(["scontrol", "show", "job", "-o", job_id], capture_output=True, text=True, timeout=10)
    if proc.returncode != 0:
        return {}
    return dict(part.split("=", 1) for part in proc.stdout.split() if "=" in part)


def time_limit_reached(now: dt.datetime | None = None) -> bool:
    """Whether this process is in a SLURM job whose time limit has come (within the slack)."""
    job = slurm_job_id()
    if job is None:
        return False
    fields = job_fields(job)
    if fields.get("JobState") == "TIMEOUT":
        return True
    limit = parse_time_limit_s(fields.get("TimeLimit", ""))
    try:
        start = dt.datetime.fromisoformat(fields.get("StartTime", ""))
    except ValueError:
        return False
    if limit is None:
        return False
    now = now or dt.datetime.now()
    return (now - start).total_seconds() >= limit - TIME_LIMIT_SLACK_S
