"""A run's process accounting and outcome (biossd.measure.accounting), from real wait4 usages."""

from __future__ import annotations

import os
import signal
import subprocess

from biossd.measure import accounting, gnutime


def _usage_of(argv):
    proc = subprocess.Popen(argv)
    _, status, usage = os.wait4(proc.pid, 0)
    return status, usage


def test_a_process_s_accounting_has_the_fields_of_gnu_time_with_units():
    status, usage = _usage_of(["dd", "if=/dev/zero", "of=/dev/null", "bs=1M", "count=8", "status=none"])
    record = accounting.rusage_record([usage], wall_s=0.5)
    assert record["wall_s"] == 0.5 and record["user_s"] + record["sys_s"] > 0
    assert record["max_rss_kib"] == usage.ru_maxrss and "wait4" in record["max_rss_source"]
    assert record["read_bytes"] == usage.ru_inblock * accounting.RUSAGE_BLOCK_BYTES
    assert accounting.outcome_of(status, 0, False) == ("ok", 0, None)


def test_the_outcome_says_oom_timeout_failed_or_signal():
    status, _ = _usage_of(["sh", "-c", "exit 3"])
    assert accounting.outcome_of(status, 0, False) == ("failed", 3, None)
    assert accounting.outcome_of(status, 1, False)[0] == "oom"
    killed, _ = _usage_of(["sh", "-c", "kill -KILL $$"])
    assert accounting.outcome_of(killed, 0, True) == ("timeout", None, signal.SIGKILL)


def test_gnu_time_s_peak_is_the_command_s_own():
    _, usage = _usage_of(["true"])
    record = accounting.rusage_record([usage], 0.1, gnutime.Report(max_rss_kib=12345, wait_status=0))
    assert record["max_rss_kib"] == 12345 and record["max_rss_source"] == gnutime.SOURCE_GNU_TIME


def test_a_docker_run_s_cpu_and_faults_are_its_container_s():
    base = {"user_s": 0.01, "sys_s": 0.02, "major_faults": 0, "minor_faults": 10, "wall_s": 1.0}
    out = accounting.container_accounting(base, {"user_s": 3.0, "sys_s": 1.0, "major_faults": 5, "minor_faults": 900,
                                                 "read_interval_s": 0.5})
    assert (out["user_s"], out["client_user_s"], out["minor_faults"]) == (3.0, 0.01, 900)
    assert "container's cgroup" in out["accounting_source"]
    assert "could not be read" in accounting.container_accounting(base, None)["accounting_source"]


def test_a_failed_run_on_a_full_scratch_is_the_harness_s_fault(tmp_path):
    log = tmp_path / "stderr.log"
    log.write_text("write failed\n")
    assert accounting.scratch_full(tmp_path, log) is None
    log.write_text(f"samtools: {os.strerror(28)}\n")
    assert "ran out of space" in accounting.scratch_full(tmp_path, log)
    assert accounting.last_line(log).startswith("samtools")
