"""Shared fixtures. Integration tests need root, the real tools and the installed environment
(`make test` installs them); they are not skipped silently: a missing piece fails the test."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

# pytest keeps the test modules it rewrites (for its assertions) as bytecode in tests/__pycache__
# (git-ignored) and reads them back in the next session, but writes none where PYTHONDONTWRITEBYTECODE
# is set: then each worker of each `make check` rewrites every module again (about 2 s). This
# process writes them, as install/bootstrap.sh compiles biossd's own; the commands it starts inherit
# the host's setting.
sys.dont_write_bytecode = False

# The plugin that says which tests run side by side, loaded here first (for its fixture markers):
# registered before its import, as pytest loads a plugin.
pytest.register_assert_rewrite("alone")
from alone import made_alone, once_per_session  # noqa: E402 (after its registration, above)

pytest_plugins = ["alone"]

REPO = Path(__file__).resolve().parents[1]
VENV_BIN = Path(sys.executable).parent


#: WfFormat 1.5's JSON Schema, a data file beside the project (never copied into it): WfCommons'
#: own validator checks `biossd export wfformat`'s instances against it.
WFFORMAT_SCHEMA = Path(os.environ.get("BIOSSD_WFFORMAT_SCHEMA")
                       or REPO.parent / "shared" / "reference" / "wfformat-1.5" / "wfcommons-schema.json")


def wfformat_validate(body: dict) -> None:
    """Check a WfFormat instance with WfCommons' SchemaValidator (syntax and semantics) against
    WFFORMAT_SCHEMA; skips, saying why, where the schema is absent."""
    import logging

    from wfcommons.wfinstances.schema import SchemaValidator

    if not WFFORMAT_SCHEMA.is_file():
        pytest.skip(f"{WFFORMAT_SCHEMA}: WfFormat 1.5's schema is absent (a shared data file, not part of the project; "
                    "set BIOSSD_WFFORMAT_SCHEMA to its path)")
    SchemaValidator(schema_file_path=WFFORMAT_SCHEMA, logger=logging.getLogger("wfformat")).validate_instance(body)


#: The fixtures that say a test needs what `make check` does not give: root, or a tool that
#: `make test` installs (the catalogue's programs, GNU time, GATK, Nextflow).
INTEGRATION_FIXTURES = ("root_required", "tool_required")


def pytest_collection_modifyitems(config, items):
    """`make check` runs what is not marked `integration`, without root and without the tools: a
    test that asks for either and is not marked would fail there, so it is refused here, by name."""
    unmarked = [item.nodeid for item in items
                if set(INTEGRATION_FIXTURES) & set(getattr(item, "fixturenames", ()))
                and item.get_closest_marker("integration") is None]
    if unmarked:
        raise pytest.UsageError("tests that need root or a tool must be marked @pytest.mark.integration: "
                                + ", ".join(unmarked))


@pytest.fixture(scope="session", autouse=True)
def _session_away_from_the_checkout(tmp_path_factory):
    """As :func:`_away_from_the_checkout`, for the module- and session-scoped fixtures too (they
    are made before any test's own folder is)."""
    with pytest.MonkeyPatch.context() as patch:
        patch.chdir(tmp_path_factory.mktemp("session-cwd"))
        yield


@pytest.fixture(autouse=True)
def _away_from_the_checkout(tmp_path_factory, monkeypatch):
    """Every test (and every command it starts without a cwd of its own) runs in a folder of its
    own, never the checkout: the README runs `make run` before `make test`, and nothing a test
    plans or reads may find that study's results/ there."""
    monkeypatch.chdir(tmp_path_factory.mktemp("cwd"))


@pytest.fixture(scope="session")
def repo() -> Path:
    return REPO


@pytest.fixture(scope="session")
def env(tmp_path_factory) -> dict[str, str]:
    """The environment the Makefile gives the study: the venv's bin first, Nextflow offline; the
    JVM's temporary files in the session's temporary directory (a Nextflow that a test kills
    leaves its compiled scripts there, not in /tmp)."""
    e = dict(os.environ)
    e["PATH"] = f"{VENV_BIN}{os.pathsep}{e.get('PATH', '')}"
    e["NXF_OFFLINE"] = "true"
    e["NXF_TEMP"] = str(tmp_path_factory.mktemp("nxf-temp"))
    return e


@pytest.fixture(scope="session")
def biossd(env):
    """Run the installed `biossd` command; returns the CompletedProcess."""
    exe = shutil.which("biossd", path=env["PATH"])
    assert exe, "the biossd command is not installed in this environment (run `make install`)"

    def run(*args: str, check: bool = True, cwd: Path | None = None, **kw):
        kw.setdefault("env", env)
        proc = subprocess.run([exe, *args], capture_output=True, text=True, cwd=cwd, **kw)
        if check and proc.returncode != 0:
            raise AssertionError(f"biossd {' '.join(args)} failed ({proc.returncode}):\n{proc.stderr}")
        return proc

    return run


@pytest.fixture(scope="session")
def root_required():
    assert os.geteuid() == 0, "integration tests of cgroups and caches need root"


@pytest.fixture(scope="session")
def tool_required(env):
    """``tool_required("samtools", ...)``: each program is on the study's PATH (the venv's bin
    first), or the test fails naming it and the command that installs it."""
    def need(*names: str) -> None:
        missing = [name for name in names if shutil.which(name, path=env["PATH"]) is None]
        assert not missing, f"{', '.join(missing)} not installed here: run `make tools` (or `make test`)"

    return need


def own_cgroups() -> list[Path]:
    from biossd.host.cgroups import find_leftovers

    return find_leftovers()


def pdf_text(pdf: Path) -> str:
    text = subprocess.run(["pdftotext", str(pdf), "-"], capture_output=True, text=True, check=True).stdout
    return " ".join(text.replace("\u2019", "'").split())


def squeezed(text: str) -> str:
    """Without white space and hyphens: LaTeX breaks lines at spaces and hyphens (its own
    hyphenation too), and pdftotext keeps the break; the words stay in order."""
    return re.sub(r"[\s\-]", "", text)


def nextflow(env, cwd, *args, check=True):
    """``nextflow run study ARGS`` in ``cwd``; fails the test with its output unless it succeeded."""
    exe = shutil.which("nextflow", path=env["PATH"])
    assert exe, "nextflow launcher not installed (run `make install`)"
    proc = subprocess.run([exe, "run", str(REPO / "study"), *args], cwd=cwd, env=env,
                          capture_output=True, text=True, timeout=900)
    if check and proc.returncode != 0:
        raise AssertionError(f"nextflow failed ({proc.returncode}):\n{proc.stdout[-4000:]}\n{proc.stderr[-2000:]}")
    return proc


#: The host name of the suite's study result set, under which its device records are published.
STUDY_HOST = "testhost"


@pytest.fixture(scope="session")
@made_alone
def study_results(env, tmp_path_factory, root_required):
    """`nextflow run study -profile test` with a chained pipeline, its scratch in a hostile path:
    the suite's one real result set (test_study_workflow.py checks it), made once for the session.
    Other workflow tests reuse its device records (--device_records) instead of measuring the same
    devices again. Returns (launch directory, result folder)."""
    return once_per_session(tmp_path_factory, "study_results", lambda: _run_the_study(env, tmp_path_factory))


def _run_the_study(env, tmp_path_factory) -> tuple[Path, Path]:
    from biossd.host.cgroups import find_leftovers
    from biossd.host.hdd import emulate

    launch = tmp_path_factory.mktemp("launch")
    outdir = launch / "results"
    scratch = launch / "scratch dir; with space"
    scratch.mkdir()
    before = set(find_leftovers())
    nextflow(env, launch, "-profile", "test", "--outdir", str(outdir), "--host", STUDY_HOST,
             "--scratch_dir", str(scratch), "--chains", "pipeline_transcriptome", "--chain_repeats", "1",
             "--characterize_budget", "3s", "--publish_mode", "link")
    assert set(find_leftovers()) == before, "the pipeline left cgroups behind"
    assert list(scratch.iterdir()) == [], "per-run scratch directories were not removed"
    ours = [d for d in emulate.all_states() if str(launch) in emulate.status_of(d)["mount"]]
    assert ours == [], "the emulated HDD was not taken down"
    assert not os.path.ismount(launch / ".biossd-storage" / "hdd")
    return launch, outdir


@pytest.fixture(scope="session")
def synthetic_study(biossd, tmp_path_factory):
    """A synthetic result set of every tool (planted speedups and patterns, two hosts) and its
    report, rendered once for the session by `biossd report` into the first folder's report/ (where
    `biossd paper` finds it): the notebooks' and the supplement's tests share it. Returns
    synthresults' truth."""
    def make() -> dict:
        from biossd.analysis import synthresults

        truth = synthresults.write(tmp_path_factory.mktemp("synth"), caps=("1G", "4G"), scales=(1, 2, 8), repeats=2,
                                   seed=5)
        biossd("report", *truth["roots"], timeout=600)
        return truth

    return once_per_session(tmp_path_factory, "synthetic_study", make)


#: The made-up figures of a measured device record (:func:`measured_record`).
SPEC_ROW = {"device": "vda", "seq_read_mbs": 500.0, "seq_write_mbs": 400.0, "rand_read_iops": 5000.0,
            "rand_write_iops": 8000.0, "rand_read_iops_qd32": 50000.0, "rand_write_iops_qd32": 40000.0}


def measured_record(facts: dict | None = None, **spec: object) -> dict:
    """A device record as `biossd device characterize` writes one (its schema:
    src/biossd/host/schemas/device.schema.json), of the device ``facts`` describe (default: a made-up
    one), its figures made up (``spec`` replaces some of :data:`SPEC_ROW`)."""
    row = {**SPEC_ROW, **spec}
    facts = facts or {"path": "/scratch", "device": {"name": row["device"]}, "mount": {"fstype": "ext4"},
                      "emulation": None}
    return {**facts, "file_bytes": 1 << 28, "job_s": 1.0, "fio_version": "fio-3.33",
            "results": {"direct_seq_read": {"mb_per_s": row["seq_read_mbs"]}}, "spec_row": row}
