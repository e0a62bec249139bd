import shlex
import subprocess

import pytest

from biossd.study import catalogue


def test_samtools_entry_renders_with_the_cap_derived_sort_memory():
    entry = catalogue.get("samtools_sort")
    argv = entry.render({"in_bam": "a.bam", "out_bam": "b.bam", "tmp_prefix": "t/s"}, mem_bytes=64 << 20)
    assert argv[:2] == ["samtools", "sort"]
    assert argv[argv.index("-m") + 1] == "16M"  # a quarter of the cap
    uncapped = entry.render({"in_bam": "a.bam", "out_bam": "b.bam", "tmp_prefix": "t/s"})
    assert uncapped[uncapped.index("-m") + 1] == entry.data["memory_option"]["default"]


@pytest.mark.parametrize("hostile", ["my reads.bam", "x.bam; rm -rf /", "$(touch pwned)", "a'b\"c.bam"])
def test_hostile_paths_stay_one_argument(hostile, tmp_path):
    entry = catalogue.get("samtools_sort")
    argv = entry.render({"in_bam": hostile, "out_bam": "o.bam", "tmp_prefix": "t"}, mem_bytes=1 << 30)
    assert argv[-1] == hostile
    line = catalogue.shell_command(argv)
    assert shlex.split(line) == argv
    # the shell sees the same argv: echo each argument on its own line
    out = subprocess.run(["bash", "-c", f"printf '%s\\n' {line}"], capture_output=True, text=True, cwd=tmp_path)
    assert out.stdout.splitlines() == argv
    assert not (tmp_path / "pwned").exists()


def test_missing_values_are_named():
    with pytest.raises(catalogue.CatalogueError, match=r"\['out_bam', 'tmp_prefix'\]"):
        catalogue.get("samtools_sort").render({"in_bam": "a"}, mem_bytes=None)


def test_unknown_tool_lists_the_catalogue():
    with pytest.raises(catalogue.CatalogueError, match="samtools_sort"):
        catalogue.get("no_such_tool")


GOOD = (REPO_PATH := __import__("pathlib").Path(__file__).resolve().parents[1]) / "study" / "catalogue" / "bwa.yaml"


def _broken(tmp_path, edit):
    """A copy of a valid entry with one thing broken, named like the entry."""
    import yaml

    data = yaml.safe_load(GOOD.read_text())
    edit(data)
    path = tmp_path / "bwa.yaml"
    path.write_text(yaml.safe_dump(data))
    return path


@pytest.mark.parametrize("edit,field,problem", [
    (lambda d: d.pop("command"), "command", "is missing"),
    (lambda d: d.update(command="bwa mem x"), "command", "must be list"),
    (lambda d: d.update(id="other"), "id", "file is named"),
    (lambda d: d.update(citation="not a doi"), "citation", "not a DOI"),
    (lambda d: d.update(paper_group="G-"), "paper_group", "G+"),
    (lambda d: d.update(status="maybe"), "status", "runnable"),
    (lambda d: d.update(install={}), "install", "debian, maven or pypi_build pin"),
    (lambda d: d["install"].update(debian="bwa"), "install.debian", "NAME=VERSION"),
    (lambda d: d.update(command=["bwa", "{undeclared}"]), "command", "undeclared"),
    (lambda d: d.update(substitute_of="x"), "paper_speedup", "must be null for a substitute"),
    (lambda d: d.update(colour="blue"), "colour", "not a catalogue field"),
    (lambda d: d.update(smoke={"commands": []}), "smoke.commands", "argv lists"),
])
def test_broken_entry_names_file_field_and_problem(tmp_path, edit, field, problem):
    path = _broken(tmp_path, edit)
    with pytest.raises(catalogue.CatalogueError) as err:
        catalogue.load_entry(path)
    message = str(err.value)
    assert str(path) in message and f"'{field}'" in message and problem in message, message


def test_unreadable_yaml_is_named(tmp_path):
    path = tmp_path / "x.yaml"
    path.write_text("[unclosed")
    with pytest.raises(catalogue.CatalogueError, match="not valid YAML"):
        catalogue.load_entry(path)


def test_the_whole_catalogue_is_consistent():
    entries = catalogue.load_all()
    ids = {e.id for e in entries}
    papers = [e for e in entries if e.kind == "tool" and not e.data["substitute_of"]]
    assert len(papers) == 23, sorted(e.id for e in papers)
    assert {e.data["paper_name"] for e in papers} == set(
        __import__("pandas").read_csv(REPO_PATH / "study" / "reference" / "paper_table1_tools.csv")["tool"]
)
    substitutes = {e.id: e.data["substitute_of"] for e in entries if e.kind == "tool" and e.data["substitute_of"]}
    assert substitutes == {"hisat2": "tophat", "stringtie": "scripture", "gatk_haplotypecaller": "gatk_unifiedgenotyper",
                           "lighter": "reptile"}
    for sub in substitutes:
        entry = catalogue.get(sub)
        assert "substitute" in entry.data["paper_name"].lower() and entry.data["paper_speedup"] is None
    pipelines = [e for e in entries if e.kind == "pipeline"]
    assert sorted(p.data["paper_figure"] for p in pipelines) == ["3a", "3b", "3c"]
    assert all(set(p.data["steps"]) <= ids for p in pipelines)


def test_a_missing_recipe_file_is_named(tmp_path):
    import shutil

    shutil.copy(GOOD, tmp_path / "bwa.yaml")
    text = (tmp_path / "bwa.yaml").read_text().replace("containers/bwa/Dockerfile", "containers/bwa/Nope")
    (tmp_path / "bwa.yaml").write_text(text)
    with pytest.raises(catalogue.CatalogueError, match="container.dockerfile.*Nope.*does not exist"):
        catalogue.load_all(tmp_path)
