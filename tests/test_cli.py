import pytest
import subprocess
import sys

from biossd import __version__


def test_version(biossd):
    assert biossd("--version").stdout.strip() == f"biossd {__version__}"


def test_module_entry_point_matches():
    out = subprocess.run([sys.executable, "-m", "biossd", "--version"], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == f"biossd {__version__}"


@pytest.mark.integration
def test_doctor_reports_a_clean_host(biossd):
    proc = biossd("doctor", check=False)
    assert proc.returncode == 0, proc.stdout


def test_catalogue_command_print0_keeps_hostile_paths_whole(biossd):
    hostile = "my reads; $(touch x).bam"
    out = biossd("catalogue", "command", "--print0", "--mem", "1G", "samtools_sort",
                 f"in_bam={hostile}", "out_bam=o.bam", "tmp_prefix=t").stdout
    argv = out.split("\0")
    assert argv[-1] == "" and argv[-2] == hostile
    assert argv[:2] == ["samtools", "sort"]
