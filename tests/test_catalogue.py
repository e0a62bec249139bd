import shlex
import subprocess

import pytest

from biossd import catalogue


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


@pytest.mark.parametrize(
    "text,field",
    [
        ("id: broken\npaper_name: x\nversion: 1\nversion_command: [x]\nversion_regex: x\n", "command"),
        ("id: other\npaper_name: x\nversion: 1\nversion_command: [x]\nversion_regex: x\ncommand: [x]\n", "id"),
        ("id: broken\npaper_name: x\nversion: 1\nversion_command: [x]\nversion_regex: x\ncommand: x y\n", "command"),
        ("[unclosed", "YAML"),
    ],
)
def test_broken_entry_names_file_and_field(tmp_path, text, field):
    path = tmp_path / "broken.yaml"
    path.write_text(text)
    with pytest.raises(catalogue.CatalogueError) as err:
        catalogue.load_entry(path)
    assert str(path) in str(err.value) and field in str(err.value)


def test_every_entry_in_the_catalogue_loads():
    entries = sorted(catalogue.CATALOGUE_DIR.glob("*.yaml"))
    assert entries, "the catalogue is empty"
    for path in entries:
        catalogue.load_entry(path)
