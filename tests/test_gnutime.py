"""GNU time's report, as the profiler reads it (the command's own peak RSS and how it ended)."""

import os
import signal
import subprocess

import pytest

from biossd.measure import gnutime


@pytest.mark.integration
@pytest.mark.parametrize(("script", "exit_code"), [("exit 0", 0), ("exit 3", 3), ("kill -9 $$", -9),
                                                   ("kill -TERM $$", -15)])
def test_the_report_says_how_the_command_ended(tmp_path, script, exit_code, tool_required):
    tool_required("time")
    path, why = gnutime.find()
    assert path is not None, why
    report_file = tmp_path / gnutime.REPORT_FILE
    done = subprocess.run(gnutime.wrap(path, report_file, ["sh", "-c", script]))
    assert done.returncode == (exit_code if exit_code >= 0 else 128 - exit_code), "GNU time's own exit status"
    report = gnutime.read(report_file)
    assert report is not None and os.waitstatus_to_exitcode(report.wait_status) == exit_code
    assert 0 < report.max_rss_kib < 16 << 10


def test_a_report_gnu_time_did_not_finish_is_none(tmp_path):
    report_file = tmp_path / gnutime.REPORT_FILE
    assert gnutime.read(report_file) is None
    report_file.write_text("Command terminated by signal 9\n")
    assert gnutime.read(report_file) is None
    report_file.write_text("Command terminated by signal 9\n1234 0\n")
    assert gnutime.read(report_file) == gnutime.Report(max_rss_kib=1234, wait_status=signal.SIGKILL)
