"""Every runnable tool staged from its synthetic input and profiled for real: the path a study
run takes, natively here; the output the entry declares is written."""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

import pytest

from biossd.measure import manifest
from biossd.study import catalogue, staging

#: Nothing here measures: these tests run beside others (tests/alone.py).
pytestmark = [pytest.mark.integration, pytest.mark.beside]
RUNNABLE = sorted(e.id for e in catalogue.load_all() if e.kind == "tool" and e.data["status"] == "runnable")
#: Small inputs, but enough for each tool to do real work (assemblers need coverage; ClustalW
#: and all-against-all BLAST grow with the square of the sequence count).
SIZES = {"reads": "1M", "proteins": "32K"}
DEFAULT_SIZE = "128K"


@pytest.fixture(scope="module")
def inputs(biossd, tmp_path_factory):
    root = tmp_path_factory.mktemp("inputs")
    for kind in sorted({catalogue.get(t).data["input"] for t in RUNNABLE}):
        biossd("data", "synth", kind, "--size", SIZES.get(kind, DEFAULT_SIZE), "--seed", "3", "-o", str(root / kind))
    return root


@pytest.mark.parametrize("tool", RUNNABLE)
def test_staged_run_profiles_ok(biossd, env, inputs, tool, tmp_path):
    entry = catalogue.get(tool)
    scratch = tmp_path / "scratch"  # (hisat2's and blast's wrappers split paths on spaces)
    argv = biossd("catalogue", "stage", tool, "--input", str(inputs / entry.data["input"]), "--scratch", str(scratch),
                  "--mem", "1G", "--print0").stdout.split("\0")[:-1]
    run = tmp_path / "run"
    host_tmp = tmp_path / "host-tmp"  # the profiler's own temporary directory: the tool's is in scratch
    host_tmp.mkdir()
    biossd("profile", "--mem", "1G", "--no-drop-caches", "--blocktrace", "off", "--label", f"tool={tool}",
           "--out", str(run), "--", *argv, cwd=scratch, env={**env, "TMPDIR": str(host_tmp)})
    body = manifest.read_manifest(run)
    assert body["outcome"] == "ok", (run / "stderr.log").read_text()[-2000:]
    assert list(host_tmp.iterdir()) == [] and (scratch / staging.TOOL_TMP_NAME).is_dir()
    main_output = next(iter(entry.data["outputs"]))
    produced = scratch / entry.data["stage"]["files"][main_output]
    assert produced.exists() or list(scratch.glob(produced.name + "*")), f"{produced} was not written"


def test_a_tool_s_temporary_files_go_to_its_scratch(tmp_path, monkeypatch):
    """What a tool writes "to /tmp" (TMPDIR, a JVM's java.io.tmpdir, OpenMPI's session directory)
    is on the device under study, and removed with the scratch: natively and in a container."""
    entry = catalogue.get("samtools_sort")
    values = {"in_bam": "in.bam", "out_bam": "out.bam", "tmp_prefix": "t"}
    scratch = tmp_path / "a scratch"
    scratch.mkdir()
    native = staging.command_argv(entry, values, scratch, None)
    tmp = scratch / staging.TOOL_TMP_NAME
    assert native[:3] == ["env", f"TMPDIR={tmp}", f'JAVA_TOOL_OPTIONS=-Djava.io.tmpdir="{tmp}"'] and tmp.is_dir()
    assert native[3:] == entry.render(values)
    from biossd.study.catalogue import containers

    monkeypatch.setattr(staging, "check_image", lambda entry, engine: None)  # no image needed to compose the argv
    docker = staging.command_argv(entry, values, scratch, None, "docker")
    image = docker.index(containers.image_ref(entry))
    inside_tmp = f"{containers.BIND_POINT}/{staging.TOOL_TMP_NAME}"
    assert docker[image + 1:image + 4] == ["env", f"TMPDIR={inside_tmp}",
                                           f'JAVA_TOOL_OPTIONS=-Djava.io.tmpdir="{inside_tmp}"']
    printed = staging.command_argv(entry, values, tmp_path / "elsewhere", None, tmp_in_scratch=False)
    assert printed == entry.render(values) and not (tmp_path / "elsewhere").exists()


def test_a_failing_preparation_is_named(biossd, tmp_path):
    empty = tmp_path / "empty"
    empty.mkdir()
    proc = biossd("catalogue", "stage", "bwa", "--input", str(empty), "--scratch", str(tmp_path / "s"), check=False)
    assert proc.returncode == 2 and "bwa index genome.fa" in proc.stderr


def test_a_workflow_s_staging_never_makes_its_scratch(biossd, tmp_path):
    """--existing-scratch (PROFILE, CHAIN): when the scratch is gone — an emulated disk taken down
    under a study interrupted while this run was staging — the copy fails and makes nothing in the
    bare mount point, where it would otherwise recreate the scratch without its mark."""
    source = tmp_path / "in"
    source.mkdir()
    (source / "reads.bam").write_bytes(b"x")
    gone = tmp_path / "mountpoint" / "biossd-3"
    (tmp_path / "mountpoint").mkdir()
    proc = biossd("catalogue", "stage", "samtools_sort", "--input", str(source), "--scratch", str(gone),
                  "--existing-scratch", check=False)
    assert proc.returncode == 2 and "does not exist" in proc.stderr and "nothing was staged" in proc.stderr
    assert list((tmp_path / "mountpoint").iterdir()) == []


def test_an_input_prepared_once_stages_without_preparing_again(biossd, env, inputs, tmp_path):
    """PREPARE runs a tool's preparation once per input; each run copies the prepared directory:
    real files (no links into the prepared one), the index kept newer than its file, and no
    preparation command run again (bwa is not on PATH when the run stages)."""
    prepared = tmp_path / "prepared"
    out = biossd("catalogue", "prepare", "bwa", "--input", str(inputs / "reads"), "--out", str(prepared)).stdout
    assert int(out) == sum(p.stat().st_size for p in (inputs / "reads").iterdir() if p.name != "synth.json")
    assert (prepared / "genome.fa").is_symlink() and (prepared / "genome.fa.bwt").is_file()
    scratch = tmp_path / "scratch"
    scratch.mkdir()
    no_bwa = {**env, "PATH": os.pathsep.join(p for p in env["PATH"].split(os.pathsep) if not (Path(p) / "bwa").exists())}
    staged_run = subprocess.run([shutil.which("biossd", path=env["PATH"]), "catalogue", "stage", "bwa", "--input",
                                 str(prepared), "--scratch", str(scratch)], env=no_bwa, capture_output=True, text=True)
    assert staged_run.returncode == 0, staged_run.stderr
    staged = {p.name for p in scratch.iterdir()}
    assert {"genome.fa", "genome.fa.bwt", "reads_1.fq"} <= staged and "prepared.json" not in staged
    assert not any(p.is_symlink() for p in scratch.iterdir())
    assert (scratch / "genome.fa.bwt").stat().st_mtime >= (scratch / "genome.fa").stat().st_mtime
    again = biossd("catalogue", "prepare", "bwa", "--input", str(inputs / "reads"), "--out", str(prepared), check=False)
    assert again.returncode == 2 and "replaces nothing" in again.stderr
    wrong = biossd("catalogue", "stage", "bowtie2", "--input", str(prepared), "--scratch", str(tmp_path / "s2"),
                   check=False)
    assert wrong.returncode == 2 and "was prepared for 'bwa'" in wrong.stderr


def test_an_input_changed_since_it_was_made_is_refused_before_any_run(biossd, tmp_path):
    source = tmp_path / "in"
    biossd("data", "synth", "proteins", "--size", "16K", "-o", str(source))
    (source / "proteins.fa").write_text(">changed\nMK\n")
    proc = biossd("catalogue", "prepare", "blast", "--input", str(source), "--out", str(tmp_path / "p"), check=False)
    assert proc.returncode == 2 and "proteins.fa is not the file" in proc.stderr and "sha256" in proc.stderr
    assert not (tmp_path / "p").exists()


def _prepared_dir(tmp_path: Path) -> Path:
    """A prepared directory as PREPARE leaves it: the input, an index newer than it, the record."""
    prepared = tmp_path / "prepared"
    (prepared / "index").mkdir(parents=True)
    (prepared / "reads.bam").write_bytes(b"r" * 4096)
    (prepared / "index" / "part.1").write_bytes(b"i" * 512)
    (prepared / staging.PREPARED_RECORD).write_text('{"tool": "samtools_sort"}\n')
    return prepared


def test_a_class_s_shared_copy_is_made_once_and_linked_into_each_scratch(tmp_path):
    """On biossd's own loop device each prepared input is copied once and every run's scratch
    links it: the same inode (no second write), and no record or prepared.json in the scratch."""
    prepared = _prepared_dir(tmp_path)
    shared_root = tmp_path / "mount"
    shared_root.mkdir()
    inodes = []
    for rep in (1, 2):
        scratch = tmp_path / f"scratch{rep}"
        scratch.mkdir()
        staging.link_tree(staging.shared_copy(prepared, shared_root), scratch)
        assert sorted(str(p.relative_to(scratch)) for p in scratch.rglob("*")) == ["index", "index/part.1", "reads.bam"]
        inodes.append((scratch / "reads.bam").stat().st_ino)
        assert not (scratch / "reads.bam").is_symlink()
    assert inodes[0] == inodes[1] and (tmp_path / "scratch1" / "reads.bam").stat().st_nlink == 3
    assert (tmp_path / "scratch1" / "reads.bam").stat().st_ino != (prepared / "reads.bam").stat().st_ino


def test_a_shared_copy_a_run_wrote_into_is_made_again_never_linked(tmp_path):
    prepared = _prepared_dir(tmp_path)
    shared = staging.shared_copy(prepared, tmp_path / "mount")
    scratch = tmp_path / "scratch"
    scratch.mkdir()
    staging.link_tree(shared, scratch)
    with open(scratch / "reads.bam", "ab") as f:  # a tool appending to its input, through the link
        f.write(b"changed")
    again = staging.shared_copy(prepared, tmp_path / "mount")
    assert (again / "reads.bam").read_bytes() == b"r" * 4096
    assert (again / "reads.bam").stat().st_ino != (scratch / "reads.bam").stat().st_ino


def test_a_directory_biossd_did_not_make_where_a_shared_copy_goes_is_refused(tmp_path):
    prepared = _prepared_dir(tmp_path)
    shared = staging.shared_copy(prepared, tmp_path / "mount")
    (shared / staging.SHARED_RECORD).unlink()
    (shared / "users-file").write_text("keep me")
    with pytest.raises(staging.StageError, match="not a shared copy biossd made"):
        staging.shared_copy(prepared, tmp_path / "mount")
    assert (shared / "users-file").read_text() == "keep me"


def test_shared_copies_are_evicted_before_they_fill_half_the_disk(tmp_path, monkeypatch):
    first, second = _prepared_dir(tmp_path / "a"), _prepared_dir(tmp_path / "b")
    root = tmp_path / "mount"
    kept = staging.shared_copy(first, root)
    real = os.statvfs(root)

    class Full:  # what statvfs says of a disk all but full
        f_frsize, f_blocks, f_bavail = real.f_frsize, real.f_blocks, 1

    monkeypatch.setattr(staging.os, "statvfs", lambda path: Full)
    made = staging.shared_copy(second, root)
    assert made.is_dir() and not kept.exists()


def test_the_least_recently_used_shared_copies_are_evicted_and_only_as_many_as_needed(tmp_path, monkeypatch):
    """A copy used again is the last to go: the study runs every tool's first repeat before any
    second, so evicting every copy at once would copy each input again for each repeat."""
    a, b, c = (_prepared_dir(tmp_path / n) for n in "abc")
    root = tmp_path / "mount"

    class Disk:  # 100 blocks of 4 KiB, each copy taking 30: a third copy would leave too little free
        f_frsize, f_blocks = 4096, 100

        @property
        def f_bavail(self):
            return 100 - 30 * len(list((root / staging.SHARED_DIR).glob(f"*/{staging.SHARED_RECORD}")))

    monkeypatch.setattr(staging.os, "statvfs", lambda path: Disk())
    kept, dropped = staging.shared_copy(a, root), staging.shared_copy(b, root)
    os.utime(kept / staging.SHARED_RECORD, (1, 1))
    os.utime(dropped / staging.SHARED_RECORD, (2, 2))
    assert staging.shared_copy(a, root) == kept  # used again now: b is the older
    made = staging.shared_copy(c, root)
    assert made.is_dir() and kept.is_dir() and not dropped.exists()


def test_catalogue_run_stages_profiles_and_removes_its_marked_scratch(biossd, inputs, tmp_path):
    """PROFILE's one process: the scratch is made with its mark, the prepared input staged, the
    tool profiled in it (its outputs land there), and the scratch removed once the run is kept."""
    prepared = tmp_path / "prepared"
    biossd("catalogue", "prepare", "samtools_sort", "--input", str(inputs / "bam"), "--out", str(prepared))
    scratch, run = tmp_path / "scratch", tmp_path / "run"
    proc = biossd("catalogue", "run", "samtools_sort", "--input", str(prepared), "--scratch", str(scratch),
                  "--out", str(run), "--mem", "256M", "--no-drop-caches", "--blocktrace", "off",
                  "--label", "tool=samtools_sort")
    body = manifest.read_manifest(run)
    assert body["outcome"] == "ok" and body["memory_cap"]["limit_bytes"] == 256 * 2**20
    # The scratch is the name given plus the process's pid: two studies' alike tasks never share one.
    assert body["cwd"].startswith(f"{scratch}-") and body["labels"]["scratch"] == body["cwd"]
    assert "has no quality check" in proc.stderr
    assert not scratch.exists() and not list(tmp_path.glob("scratch-*"))


def test_catalogue_run_never_touches_a_directory_it_did_not_make(biossd, inputs, tmp_path):
    """A directory of the user's at the scratch's name is left as it is: the run works in one of its
    own (the name and its pid), which it removes."""
    mine = tmp_path / "mine"
    mine.mkdir()
    (mine / "thesis.tex").write_text("keep")
    biossd("catalogue", "run", "samtools_sort", "--input", str(inputs / "bam"), "--scratch", str(mine),
           "--out", str(tmp_path / "run"), "--mem", "256M", "--no-drop-caches", "--blocktrace", "off")
    assert [p.name for p in mine.iterdir()] == ["thesis.tex"] and (mine / "thesis.tex").read_text() == "keep"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["mine", "run"]


def test_one_study_run_is_one_library_call_scored_in_its_scratch(inputs, tmp_path):
    """:func:`biossd.measure.toolrun.run`: scratch made and removed, the prepared input staged into
    it, the tool working there (the run's ``cwd``; the caller's own directory unchanged), the
    output scored against the truth beside the run's other records."""
    from biossd.measure import toolrun
    from biossd.measure.request import ProfileRequest

    entry = catalogue.get("bwa")
    prepared = tmp_path / "prepared"
    staging.prepare(entry, inputs / entry.data["input"], prepared)
    before = os.getcwd()
    base = ProfileRequest(argv=[], out_dir=tmp_path / "run", mem_bytes=None, labels={"tool": "bwa"},
                          drop_caches=False, blocktrace="off", perf="off")
    done = toolrun.run(entry, prepared, tmp_path / "scratch", base, mem_bytes=1 << 30, settings={}, record_start=True)
    body = manifest.read_manifest(done.out_dir)
    assert done.signum is None and body["outcome"] == "ok" and os.getcwd() == before
    assert Path(body["cwd"]).name.startswith("scratch") and not Path(body["cwd"]).exists(), "worked in a removed scratch"
    assert body["labels"]["scratch"] == body["cwd"] and body["memory_cap"]["limit_bytes"] == 1 << 30
    assert {"start", "stage"} <= set(body["harness_s"]) and "sensitivity" in done.quality
    assert (done.out_dir / "quality.json").is_file()
