import shlex
import subprocess

import pytest

from biossd.study import catalogue
from biossd.study.sizing import rule


def test_samtools_sort_memory_is_its_paper_era_default_divided_by_d():
    """The sizing rule: a tool's memory-sized default / D, never a fraction of the cap."""
    entry = catalogue.get("samtools_sort")
    values = {"in_bam": "a.bam", "out_bam": "b.bam", "tmp_prefix": "t/s"}
    argv = entry.render(values, rule.settings(entry.memory_options(), divisor=48))
    assert argv[:2] == ["samtools", "sort"]
    assert argv[argv.index("-m") + 1] == "16M"  # 768M / 48
    default = entry.render(values)
    assert default[default.index("-m") + 1] == entry.memory_options()[0]["default"] == "768M"


def test_counts_scale_and_heaps_stay_fixed():
    bwa = catalogue.get("bwa")
    assert rule.settings(bwa.memory_options(), divisor=160) == {"batch_bases": "62500"}
    igv = catalogue.get("igvtools")
    igv_settings = rule.settings(igv.memory_options(), divisor=100, heaps={"java_mem": "192M"})
    assert igv_settings == {"java_mem": "192M", "sort_records": "5000"}
    gatk = catalogue.get("gatk_baserecalibrator").render(
        {"in_bam": "r.bam", "reference": "g.fa", "known_sites": "k.vcf", "out_table": "t"}, {"java_mem": "300M"})
    assert "-Xms300M -Xmx300M -XX:+UseParallelGC" in gatk  # sized, not pre-touched


def test_abyss_runs_its_hash_table_assembler():
    """No B=: abyss-pe's Bloom-filter assembler (ABySS >= 2.0) is not the paper's hash-table ABySS."""
    argv = catalogue.get("abyss").render({"out_dir": "asm", "reads_1": "a", "reads_2": "b", "k": "25"})
    assert not any(a.startswith("B=") for a in argv)


def test_memory_option_rules_are_checked(tmp_path):
    src = (catalogue.CATALOGUE_DIR / "samtools_sort.yaml").read_text()
    bad = tmp_path / "samtools_sort.yaml"
    bad.write_text(src.replace("rule: scaled", "rule: fraction_of_cap"))
    with pytest.raises(catalogue.CatalogueError, match=r"memory_options\[0\]\.rule"):
        catalogue.load_entry(bad)


@pytest.mark.parametrize("hostile", ["my reads.bam", "x.bam; rm -rf /", "$(touch pwned)", "a'b\"c.bam"])
def test_hostile_paths_stay_one_argument(hostile, tmp_path):
    entry = catalogue.get("samtools_sort")
    argv = entry.render({"in_bam": hostile, "out_bam": "o.bam", "tmp_prefix": "t"})
    assert argv[-1] == hostile
    line = catalogue.shell_command(argv)
    assert shlex.split(line) == argv
    # the shell sees the same argv: echo each argument on its own line
    out = subprocess.run(["bash", "-c", f"printf '%s\\n' {line}"], capture_output=True, text=True, cwd=tmp_path)
    assert out.stdout.splitlines() == argv
    assert not (tmp_path / "pwned").exists()


def test_missing_values_are_named():
    with pytest.raises(catalogue.CatalogueError, match=r"\['out_bam', 'tmp_prefix'\]"):
        catalogue.get("samtools_sort").render({"in_bam": "a"})


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


def test_the_catalogue_package_re_exports_its_entries_api():
    from biossd.study.catalogue import entries

    public = [n for n in dir(entries) if not n.startswith("_")
              and (n.isupper() or getattr(getattr(entries, n), "__module__", None) == entries.__name__)]
    assert public and all(getattr(catalogue, n) is getattr(entries, n) for n in public), public
