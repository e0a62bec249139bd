"""Bad input is bounded: every count and size a user gives has a range, malformed JSON of the
wrong shape is a message, and nothing ends in a traceback or exhausts the host. Each row is an
input a review found accepted silently, ending in a traceback, or growing without bound; the
command must refuse it with a message naming the option or field (exit 1 or 2), or accept it
because it means something (noted in the row)."""

from __future__ import annotations

import base64
import json
from pathlib import Path

import pytest
import yaml

from biossd.cli import options
from biossd.study.plan import schema

PLAN_BASE = {"tools": "samtools_sort", "storage_classes": "ssd", "mem_caps": "64M", "scales": "1", "outdir": "r"}


def _plan(**extra) -> list[str]:
    return ["study", "plan", "--stub", "--params", json.dumps({**PLAN_BASE, **extra})]


def _real_plan(**extra) -> list[str]:
    """A plan checked against the host (its free space), as a study's first step is."""
    return ["study", "plan", "--params", json.dumps({**PLAN_BASE, **extra})]


#: (id, argv, what the refusal names). `{tmp}` is the test's temporary directory.
REFUSED = [
    ("mem-zero", ["profile", "--mem", "0", "--out", "{tmp}/r", "--", "true"], "--mem 0"),
    ("mem-huge", ["profile", "--mem", "99999999T", "--out", "{tmp}/r", "--", "true"], "--mem 99999999T"),
    ("sample-interval-zero", ["profile", "--mem", "none", "--sample-interval", "0", "--out", "{tmp}/r", "--", "true"],
     "--sample-interval"),
    ("sample-interval-negative", ["profile", "--mem", "none", "--sample-interval", "-1", "--out", "{tmp}/r", "--",
                                  "true"], "--sample-interval"),
    ("sample-interval-nan", ["profile", "--mem", "none", "--sample-interval", "nan", "--out", "{tmp}/r", "--", "true"],
     "--sample-interval"),
    ("timeout-zero", ["profile", "--mem", "none", "--timeout", "0", "--out", "{tmp}/r", "--", "true"], "--timeout"),
    ("swap-zero", ["profile", "--mem", "none", "--swap", "0", "--out", "{tmp}/r", "--", "true"], "--swap"),
    ("label-newline", ["profile", "--mem", "none", "--label", "a=b\nc", "--out", "{tmp}/r", "--", "true"],
     "control character"),
    ("out-newline", ["profile", "--mem", "none", "--out", "{tmp}/r\nx", "--", "true"], "control character"),
    ("device-record-not-json", ["profile", "--mem", "none", "--device-record", "{tmp}/notes.txt", "--out", "{tmp}/r",
                                "--", "true"], "--device-record"),
    ("run-json-a-list", ["profile", "--mem", "none", "--overwrite", "--out", "{tmp}/listed", "--", "true"],
     "not a biossd run directory"),
    ("synth-size-zero", ["data", "synth", "reads", "--size", "0", "-o", "{tmp}/s"], "--size"),
    ("synth-size-huge", ["data", "synth", "reads", "--size", "1T", "-o", "{tmp}/s"], "--size 1T"),
    ("synth-scale-huge", ["data", "synth", "reads", "--size", "64M", "--scale", "100000000", "-o", "{tmp}/s"],
     "--scale 100000000"),
    ("synth-seed-huge", ["data", "synth", "reads", "--seed", str(2**70), "-o", "{tmp}/s"], "--seed"),
    ("params-a-list", ["study", "plan", "--params", "[1]"], "--params"),
    ("plan-repeats-huge", _plan(repeats=10_000_000), "--repeats"),
    ("plan-repeats-negative", _plan(repeats=-1), "--repeats"),
    ("plan-seed-huge", _plan(seed=2**70), "--seed"),
    ("plan-mem-caps-zero", _plan(mem_caps="0"), "--mem_caps"),
    ("plan-mem-caps-huge", _plan(mem_caps="99999999T"), "99999999T"),
    ("plan-input-size-zero", _plan(input_size="0"), "--input_size"),
    ("plan-swap-zero", _plan(swap="0"), "--swap"),
    ("plan-time-limit-zero", _plan(time_limit="0"), "--time_limit"),
    ("plan-characterize-budget-zero", _plan(characterize_budget="0"), "--characterize_budget"),
    ("plan-outdir-root", _plan(outdir="/"), "--outdir /"),
    ("plan-storage-root-root", _plan(storage_root="/"), "--storage_root /"),
    ("plan-storage-root-newline", _plan(storage_root="a\nb"), "control character"),
    ("plan-storage-root-up", _plan(storage_root="../../../../../../../.."), "--storage_root"),
    ("plan-outdir-is-storage-root", _plan(outdir="x", storage_root="x"), "overlap"),
    ("plan-record-a-list", _plan(outdir="{tmp}/held"), "not a plan record"),
    ("experiment-task-fields", ["experiment", "run", "--task", '{"experiment": "sort_memory"}', "--scratch",
                                "{tmp}/sc", "--out", "{tmp}/o"], "--task has no"),
    ("experiment-task-list", ["experiment", "run", "--task", "[]", "--scratch", "{tmp}/sc", "--out", "{tmp}/o"],
     "--task is a JSON list"),
    ("experiment-task-size", ["experiment", "run", "--task", json.dumps(
        {"experiment": "sort_memory", "point": "p", "values": {}, "size": "huge", "host": "h", "storage": "ssd",
         "rep": "1", "seed": 7, "input": {"kind": "bam", "size": "8M"}}), "--scratch", "{tmp}/sc", "--out", "{tmp}/o"],
     "--task size 'huge'"),
]


#: What the review found refused already, kept refused (each names the option or field).
REFUSED += [
    ("mem-negative", ["profile", "--mem", "-1", "--out", "{tmp}/r", "--", "true"], "--mem -1"),
    ("mem-malformed", ["profile", "--mem", "1.5.5G", "--out", "{tmp}/r", "--", "true"], "--mem 1.5.5G"),
    ("swap-tiny", ["profile", "--mem", "none", "--swap", "1", "--out", "{tmp}/r", "--", "true"], "--swap"),
    ("label-without-value", ["profile", "--mem", "none", "--label", "novalue", "--out", "{tmp}/r", "--", "true"],
     "novalue"),
    ("device-not-block", ["profile", "--mem", "none", "--device", "/dev/null", "--out", "{tmp}/r", "--", "true"],
     "/dev/null"),
    ("swap-dir-missing", ["profile", "--mem", "none", "--swap", "64M", "--swap-dir", "{tmp}/none", "--out", "{tmp}/r",
                          "--", "true"], "--swap-dir"),
    ("device-record-missing", ["profile", "--mem", "none", "--device-record", "{tmp}/none.json", "--out", "{tmp}/r",
                               "--", "true"], "--device-record"),
    ("no-command", ["profile", "--mem", "none", "--out", "{tmp}/r"], "no command"),
    ("owner-dead", ["profile", "--mem", "none", "--owner-pid", "999999", "--out", "{tmp}/r", "--", "true"],
     "--owner-pid 999999"),
    ("synth-size-negative", ["data", "synth", "reads", "--size", "-1", "-o", "{tmp}/s"], "--size -1"),
    ("synth-scale-zero", ["data", "synth", "reads", "--scale", "0", "-o", "{tmp}/s"], "--scale"),
    ("synth-seed-negative", ["data", "synth", "reads", "--seed", "-1", "-o", "{tmp}/s"], "--seed"),
    ("synth-kind-path", ["data", "synth", "../x", "-o", "{tmp}/s"], "unknown kind '../x'"),
    ("params-not-json", ["study", "plan", "--params", "notjson"], "--params"),
    ("plan-repeats-fraction", _plan(repeats=1.5), "--repeats"),
    ("plan-repeats-text", _plan(repeats="3"), "--repeats"),
    ("plan-scales-huge", _plan(scales="1000000"), "Scale '1000000' in --scales"),
    ("plan-host-dots", _plan(host=".."), "--host"),
    ("plan-host-unicode", _plan(host="hôte"), "--host"),
    ("plan-tools-unicode", _plan(tools="bwä"), "--tools"),
    ("plan-unknown-parameter", _plan(bogus=1), "--bogus"),
    ("plan-emulate-path", _plan(storage_classes="ssd,hdd", emulate="hdd=../../x"), "--emulate"),
    ("plan-experiment-size", _plan(experiment_size="huge"), "--experiment_size"),
    ("experiment-task-unreadable", ["experiment", "run", "--task", "@{tmp}/none.json", "--scratch", "{tmp}/sc", "--out",
                                    "{tmp}/o"], "--task"),
    ("pipeline-task-not-base64", ["pipeline", "task", "--task", "%%%", "--", "true"], "--task"),
    ("swap-huge", ["profile", "--mem", "none", "--swap", "100T", "--out", "{tmp}/r", "--", "true"], "--swap"),
    ("plan-repeats-large", _plan(repeats=100_000), "--repeats"),
    ("plan-input-size-huge", _real_plan(input_size="999999T"), "--input_size"),
    ("plan-emulate-size-zero", _plan(storage_classes="ssd,hdd", emulate="hdd=seagate-barracuda-7200",
                                     emulate_size="0"), "--emulate_size"),
    ("plan-emulate-size-huge", _real_plan(storage_classes="ssd,hdd", emulate="hdd=seagate-barracuda-7200",
                                          emulate_size="999T"), "--emulate_size"),
    ("plan-swap-huge", _real_plan(swap="999T"), "--swap 999T"),
    ("experiment-task-path", ["experiment", "run", "--task", json.dumps(
        {"experiment": "../../etc/x", "point": "p", "values": {}, "size": "tiny", "host": "h", "storage": "ssd",
         "rep": "1", "seed": 7, "input": {"kind": "bam", "size": "8M"}}), "--scratch", "{tmp}/sc", "--out", "{tmp}/o"],
     "../../etc/x"),
]


def _task(**fields) -> str:
    return base64.b64encode(json.dumps({"process": "P", **fields}).encode()).decode()


REFUSED += [(f"pipeline-task-memory-{name}", ["pipeline", "task", "--task", _task(memory_bytes=value), "--", "true"],
             "memory_bytes") for name, value in (("negative", -5), ("zero", 0), ("text", "x"))]
REFUSED += [("pipeline-task-attempt-text", ["pipeline", "task", "--task", _task(attempt="x"), "--", "true"],
             "--task attempt 'x'")]


@pytest.fixture
def bad_places(tmp_path):
    (tmp_path / "notes.txt").write_text("not json")
    (tmp_path / "listed").mkdir()
    (tmp_path / "listed" / "run.json").write_text("[1, 2]")
    (tmp_path / "held" / "pipeline_info").mkdir(parents=True)
    (tmp_path / "held" / "pipeline_info" / "plan.json").write_text("[1]")
    return tmp_path


@pytest.mark.parametrize("argv, names", [pytest.param(a, n, id=i) for i, a, n in REFUSED])
def test_a_bad_input_is_refused_naming_it(bad_places, capsys, argv, names):
    """In the command's own entry point (a traceback would fail the test with it)."""
    from biossd.cli.main import main

    argv = [a.replace("{tmp}", str(bad_places)) for a in argv]
    try:
        status = main(argv)
    except SystemExit as done:  # argparse's refusal of an option's value
        status = done.code
    said = capsys.readouterr()
    said = said.out + said.err
    assert status in (1, 2), (status, said[-1000:])
    assert names.replace("{tmp}", str(bad_places)) in said, said[-1000:]
    assert not (bad_places / "s").exists() and not (bad_places / "r").exists()
    assert (bad_places / "listed" / "run.json").read_text() == "[1, 2]"


@pytest.mark.integration
def test_accepted_because_it_means_something(biossd, tmp_path, tool_required):
    """A 1K BAM is a small input (a tool's start-up); a pipeline task's tag with '/' and '..'
    becomes one safe path component."""
    tool_required("samtools")
    from biossd.measure.own_pipeline import task as pipeline_task

    biossd("data", "synth", "bam", "--size", "1K", "-o", str(tmp_path / "tiny"))
    assert (tmp_path / "tiny" / "reads.bam").stat().st_size > 0
    kept = pipeline_task.run_dir(tmp_path / "out", {"process": "../..", "tag": "../../x"}, tmp_path / "work/ab/cdef")
    assert kept.resolve().is_relative_to((tmp_path / "out").resolve()) and ".." not in kept.parts


def test_the_bounds_are_one_definition():
    """The CLI's seed bound is the schema's, and the schema bounds every count the plan multiplies."""
    known = schema.schema_parameters(json.loads(schema.SCHEMA_PATH.read_text()))
    assert known["seed"]["maximum"] == options.MAX_SEED
    for name in ("repeats", "firm_repeats", "scaling_repeats", "chain_repeats"):
        assert "maximum" in known[name], name


def test_a_definition_or_manifest_out_of_range_is_refused(tmp_path):
    from biossd.experiments import spec
    from biossd.study.inputs import datasets

    definition = yaml.safe_load((spec.EXPERIMENTS_DIR / "sort_memory.yaml").read_text())
    for field, value, message in (("repeats", -3, "repeats is -3"), ("repeats", 10**8, "repeats is 100000000"),
                                  ("input_size", "-8M", "input_size")):
        changed = {**definition, "sizes": {**definition["sizes"], "tiny": {**definition["sizes"]["tiny"], field: value}}}
        (tmp_path / "sort_memory.yaml").write_text(yaml.safe_dump(changed))
        with pytest.raises(spec.ExperimentError, match=message):
            spec.load_spec("sort_memory", tmp_path)
    manifest = yaml.safe_load((datasets.MANIFEST_DIR / "uniref50.yaml").read_text())
    for entry, message in (({"size_bytes": -5}, "size_bytes' is -5"), ({"size_bytes": 1e23}, "size_bytes"),
                           ({"url": "file:///etc/shadow"}, "is not an http/https/ftp URL")):
        changed = {**manifest, "files": [{**manifest["files"][0], **entry}]}
        path = tmp_path / "uniref50.yaml"
        path.write_text(yaml.safe_dump(changed))
        with pytest.raises(datasets.DatasetError, match=message):
            datasets.load(Path(path))


@pytest.mark.integration
def test_a_damaged_experiment_input_is_refused_not_run(tmp_path, tool_required):
    """An experiment task's --input whose file no longer matches its synth.json (a byte changed)
    is refused before any run reads it: the damage never becomes the tool failing."""
    tool_required("samtools")
    from biossd.experiments import task as experiment_task
    from biossd.study import staging
    from biossd.study.inputs import data

    made = tmp_path / "in"
    data.synth("bam", made, 64 << 10, seed=1)
    body = bytearray((made / "reads.bam").read_bytes())
    body[len(body) // 2] ^= 0xFF
    (made / "reads.bam").write_bytes(bytes(body))
    want = {"input": {"kind": "bam", "size": "64K"}, "seed": 1}
    with pytest.raises(staging.StageError, match=r"reads\.bam is not the file .* records"):
        experiment_task._stage_input(want, tmp_path / "scratch-input", made)


def _entry(**changed) -> str:
    from biossd.study.catalogue import entries

    # libyaml's dumper where PyYAML has it: one case writes a 3 MiB field
    return yaml.dump({**yaml.safe_load((entries.CATALOGUE_DIR / "samtools_sort.yaml").read_text()), **changed},
                     Dumper=getattr(yaml, "CSafeDumper", yaml.SafeDumper))


def _disk(**changed) -> str:
    from biossd.host.models import diskmodel

    path = diskmodel.profiles_dir() / "seagate-barracuda-7200.yaml"
    return yaml.safe_dump({**yaml.safe_load(path.read_text()), **changed})


def _manifest_file(**changed) -> str:
    from biossd.study.inputs import datasets

    manifest = yaml.safe_load((datasets.MANIFEST_DIR / "uniref50.yaml").read_text())
    return yaml.safe_dump({**manifest, "files": [{**manifest["files"][0], **changed}]})


#: (id, which loader, the file's name, its text (a callable: read when the test runs), what the
#: refusal names). The files a user writes: catalogue entries, data manifests, experiment
#: definitions and device profiles.
BAD_FILES = [
    ("entry-invalid-yaml", "entry", "samtools_sort.yaml", lambda: "id: [unclosed", "not valid YAML"),
    ("entry-a-list", "entry", "samtools_sort.yaml", lambda: "- 1\n- 2\n", "a mapping of fields"),
    ("entry-empty", "entry", "samtools_sort.yaml", lambda: "", "a mapping of fields"),
    ("entry-int-version", "entry", "samtools_sort.yaml", lambda: _entry(version=3), "field 'version' must be str"),
    ("entry-min-mem-negative", "entry", "samtools_sort.yaml", lambda: _entry(min_mem="-5G"), "field 'min_mem'"),
    ("entry-id-unicode", "entry", "bwä.yaml", lambda: _entry(id="bwä"), "an id is lowercase ASCII"),
    ("entry-huge-unknown-field", "entry", "samtools_sort.yaml", lambda: _entry(xxxxxxxx="y" * (3 << 20)),
     "field 'xxxxxxxx' is not a catalogue field"),
    ("entry-recursive-alias", "entry", "samtools_sort.yaml", lambda: "a: &a [*a]\n", "field 'a'"),
    ("manifest-invalid-yaml", "manifest", "uniref50.yaml", lambda: "files: [", "not valid YAML"),
    ("manifest-file-name-up", "manifest", "uniref50.yaml", lambda: _manifest_file(name="../../x"), "files[0].name"),
    ("definition-invalid-yaml", "definition", "sort_memory.yaml", lambda: "sizes: [", "not valid YAML"),
    ("disk-rpm-negative", "disk", "d.yaml", lambda: _disk(rpm=-7200), "['rpm'] must be positive"),
    ("disk-rpm-huge", "disk", "d.yaml", lambda: _disk(rpm=1e308), "rpm 1e+308"),
    ("disk-invalid-yaml", "disk", "d.yaml", lambda: "rpm: [", "not valid YAML"),
    ("disk-a-directory", "disk", "/etc", None, "no device profile '/etc'"),
]


@pytest.mark.parametrize("loader, name, text, names", [pytest.param(*row[1:], id=row[0]) for row in BAD_FILES])
def test_a_bad_file_is_refused_naming_it(tmp_path, loader, name, text, names):
    """Each loader refuses with its own error (a message, never a traceback), naming the file."""
    from biossd.experiments import spec
    from biossd.host.models import diskmodel
    from biossd.study.catalogue import entries
    from biossd.study.inputs import datasets

    path = tmp_path / name
    if text is not None:
        path.write_text(text())
    load, error = {"entry": (entries.load_entry, entries.CatalogueError),
                   "manifest": (datasets.load, datasets.DatasetError),
                   "definition": (lambda p: spec.load_spec(p.stem, p.parent), spec.ExperimentError),
                   "disk": (lambda p: diskmodel.load_profile(str(p)), diskmodel.ProfileError)}[loader]
    with pytest.raises(error) as refused:
        load(path if text is not None else Path(name))
    assert names in str(refused.value)
    if text is not None:
        assert str(path) in str(refused.value)
