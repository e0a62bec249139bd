import errno
import importlib
import os
import subprocess
import sys

import pytest

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


def _commands(parser, prefix=()):
    """Every command of ``parser`` as its words (``("data", "synth")``)."""
    import argparse

    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            for name, sub in action.choices.items():
                yield from _commands(sub, (*prefix, name)) if any(
                    isinstance(a, argparse._SubParsersAction) for a in sub._actions) else [(*prefix, name)]


def test_every_room_registers_its_commands_and_each_answers_help(capsys):
    """The command line is assembled from its rooms (one module per command group): each adds
    commands, no two add the same, and every command parses ``--help``."""
    import argparse

    import pytest

    from biossd.cli import analysis, catalogue, data, host, pipeline, profile, study
    from biossd.cli.main import ROOMS, build_parser, main

    seen = []
    for room in (profile, analysis, data, catalogue, study, host, pipeline):
        assert room.__name__.rsplit(".", 1)[1] in ROOMS
        sub = argparse.ArgumentParser().add_subparsers()
        room.register(sub)
        assert sub.choices, room.__name__
        seen += list(sub.choices)
    assert len(seen) == len(set(seen)) and len(ROOMS) == 7
    commands = list(_commands(build_parser()))
    assert ("catalogue", "run") in commands and ("slurm", "up") in commands and ("profile",) in commands
    for words in commands:
        with pytest.raises(SystemExit) as done:
            main([*words, "--help"])
        assert done.value.code == 0, words
        assert "usage: biossd " + " ".join(words) in capsys.readouterr().out


#: Libraries a profiled run's process must not import: it starts right after the previous run's
#: cache drop, so each is read from disk again in every run (NumPy and PyArrow: 0.2 s a run).
HEAVY_LIBRARIES = ("numpy", "pyarrow", "pandas", "scipy", "matplotlib")


def test_a_profiled_run_s_process_imports_no_heavy_library():
    """The library's side is a contract (pyproject's ``lean-run``: the profiler, the trace writer,
    the staging and the catalogue never import NumPy, PyArrow or pandas). The command line imports
    its rooms' libraries lazily, per command, which only a run can see: ``biossd catalogue run``'s
    path (the CLI, its room, the catalogue entry) loads none of them."""
    probe = ("import sys\n"
             "from biossd.cli import main\n"
             "from biossd.cli import catalogue as room\n"
             "from biossd.measure import profile\n"
             "from biossd.study import catalogue\n"
             "catalogue.get('samtools_sort')\n"
             f"print(sorted({{m.split('.')[0] for m in sys.modules}} & set({HEAVY_LIBRARIES!r})))\n")
    out = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, check=True).stdout
    assert out.strip() == "[]"
    # The probe can fail: a reader of the trace imports them.
    failing = probe.replace("catalogue.get('samtools_sort')\n", "import biossd.features.extract\n")
    out = subprocess.run([sys.executable, "-c", failing], capture_output=True, text=True, check=True).stdout
    assert "numpy" in out


def test_every_input_kind_has_a_description_and_a_generator():
    from biossd.study.inputs import data, kinds

    assert set(data.KINDS) == set(kinds.DESCRIPTIONS) and all(k.description for k in data.KINDS.values())


@pytest.mark.parametrize("err, said", [(errno.ENOSPC, "the disk is full"), (errno.EACCES, "no permission")])
def test_a_full_disk_or_a_refused_write_is_said_not_a_traceback(monkeypatch, capsys, tmp_path, err, said):
    cli = importlib.import_module("biossd.cli.main")
    from biossd.outputs import crate

    def full(results):
        raise OSError(err, os.strerror(err), str(tmp_path / "rs" / "ro-crate-metadata.json"))

    monkeypatch.setattr(crate, "write", full)
    assert cli.main(["crate", str(tmp_path / "rs")]) == 2
    text = capsys.readouterr().err
    assert text.startswith("biossd crate: ") and said in text and "ro-crate-metadata.json" in text
    assert "Traceback" not in text


def test_another_os_error_is_not_dressed_up(monkeypatch, tmp_path):
    cli = importlib.import_module("biossd.cli.main")
    from biossd.outputs import crate

    def broken(results):
        raise OSError(errno.EIO, os.strerror(errno.EIO))

    monkeypatch.setattr(crate, "write", broken)
    with pytest.raises(OSError):
        cli.main(["crate", str(tmp_path)])
