import subprocess
import sys

from biossd import __version__


def test_version(biossd):
    assert biossd("--version").stdout.strip() == f"biossd {__version__}"


def test_module_entry_point_matches():
    out = subprocess.run([sys.executable, "-m", "biossd", "--version"], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == f"biossd {__version__}"


def test_doctor_reports_a_clean_host(biossd):
    proc = biossd("doctor", check=False)
    assert proc.returncode == 0, proc.stdout
