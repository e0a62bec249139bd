"""The paper's data as study inputs: a manifest's recipe as code, run by ``biossd data prepare``
on the files ``biossd data fetch`` verified, into an input the study plans, stages and profiles.
Offline, the files are real-format FASTQ/FASTA served by an HTTP server on 127.0.0.1."""

from __future__ import annotations

import functools
import gzip
import hashlib
import http.server
import json
import threading
from pathlib import Path

import pytest
import yaml

from biossd.measure import manifest
from biossd.study.inputs import data, datasets, formats, kinds, recipes, sources
from biossd.study.plan import matrix

READS_SIZE = 96 << 10
#: How often a test's HTTP server looks for its shutdown (http.server's default, 0.5 s, is waited
#: out in full at every teardown).
SHUTDOWN_POLL_S = 0.02


def serve(directory: Path) -> tuple[str, http.server.ThreadingHTTPServer]:
    """An HTTP server on 127.0.0.1 for the files of ``directory`` (its URL, and it to shut down)."""
    handler = functools.partial(_QuietHandler, directory=str(directory))
    httpd = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    threading.Thread(target=httpd.serve_forever, args=(SHUTDOWN_POLL_S,), daemon=True).start()
    return f"http://127.0.0.1:{httpd.server_address[1]}", httpd


def publish(served: Path, made: dict[Path, str]) -> None:
    """Each made file under its published name, gzipped when the name says so (as sources serve them)."""
    served.mkdir(parents=True, exist_ok=True)
    for src, name in made.items():
        body = src.read_bytes()
        (served / name).write_bytes(gzip.compress(body, mtime=0) if name.endswith(".gz") else body)


def pinned(served: Path, url: str, name: str) -> dict:
    """A manifest's file entry for a served file: its URL, size and sha256."""
    body = (served / name).read_bytes()
    return {"name": name, "url": f"{url}/{name}", "size_bytes": len(body), "sha256": hashlib.sha256(body).hexdigest()}


def write_manifest(manifests: Path, dataset: str, kind: str, used_by: list[str], files: list[dict],
                   prepare: dict) -> None:
    manifests.mkdir(parents=True, exist_ok=True)
    (manifests / f"{dataset}.yaml").write_text(yaml.safe_dump({
        "id": dataset, "name": dataset, "description": "served here", "source": {"url": files[0]["url"]},
        "licence": "test", "recipe": "as code", "used_by": used_by, "files": files, "synthetic": {"kind": kind},
        "prepare": prepare}))


@pytest.fixture(scope="module")
def published(tmp_path_factory):
    """A 'published' paired library with its genome and a protein database, gzipped as sources
    serve them, behind a local HTTP server; the manifests that pin them (sizes, sha256)."""
    root = tmp_path_factory.mktemp("published")
    made = root / "made"
    data.synth("reads", made / "reads", 256 << 10, seed=11)
    data.synth("proteins", made / "proteins", 64 << 10, seed=12)
    served = root / "served"
    publish(served, {made / "reads/reads_1.fq": "frag_1.fastq.gz", made / "reads/reads_2.fq": "frag_2.fastq.gz",
                     made / "reads/genome.fa": "genome.fasta", made / "proteins/proteins.fa": "db.fasta.gz"})
    url, httpd = serve(served)
    manifests = root / "manifests"
    write_manifest(manifests, "lib", "reads", ["bwa", "bowtie2"],
                   [pinned(served, url, n) for n in ("frag_1.fastq.gz", "frag_2.fastq.gz", "genome.fasta")],
                   {"recipe": "fastq_pairs",
                    "files": {"reads_1": "frag_1.fastq.gz", "reads_2": "frag_2.fastq.gz", "genome": "genome.fasta"}})
    write_manifest(manifests, "db", "proteins", ["blast"], [pinned(served, url, "db.fasta.gz")],
                   {"recipe": "fasta_database", "files": {"database": "db.fasta.gz"}, "args": {"queries": 8}})
    yield {"url": url, "manifests": manifests, "root": root}
    httpd.shutdown()


class _QuietHandler(http.server.SimpleHTTPRequestHandler):
    def log_message(self, *args):
        pass


@pytest.fixture(scope="module")
def fetched(published):
    out = published["root"] / "data"
    for dataset in ("lib", "db"):
        datasets.fetch(dataset, out / dataset, manifest_dir=published["manifests"])
    return out


def _fastq_names(path: Path) -> list[str]:
    return path.read_text().splitlines()[::4]


def test_fetch_then_prepare_makes_an_input_with_its_provenance(biossd, published, fetched, tmp_path):
    """The CLI path: the prepared input holds the kind's files under the catalogue's names, mates in
    step, about the size asked; its record names every source with URL and sha256, the recipe,
    the seed and each file made."""
    out = tmp_path / "input"
    proc = biossd("data", "prepare", "lib", "--data", str(fetched / "lib"), "--size", str(READS_SIZE), "--seed", "3",
                  "-o", str(out), "--manifests", str(published["manifests"]))
    record = json.loads((out / kinds.PREPARED_RECORD).read_text())
    assert json.loads(proc.stdout) == record
    assert sorted(p.name for p in out.iterdir()) == ["genome.fa", "prepared.json", "reads_1.fq", "reads_2.fq"]
    assert record["dataset"] == "lib" and record["recipe"] == "fastq_pairs" and record["kind"] == "reads"
    assert record["seed"] == 3 and record["requested_size_bytes"] == READS_SIZE
    fetched_record = json.loads((fetched / "lib" / datasets.FETCH_RECORD).read_text())
    assert {s["name"]: s["sha256"] for s in record["sources"]} == {f["name"]: f["sha256"] for f in fetched_record["files"]}
    assert all(s["verified"] and s["url"].startswith(published["url"]) for s in record["sources"])
    assert record["manifest_sha256"] == hashlib.sha256((published["manifests"] / "lib.yaml").read_bytes()).hexdigest()
    for name, info in record["files"].items():
        assert hashlib.sha256((out / name).read_bytes()).hexdigest() == info["sha256"]
    one, two = _fastq_names(out / "reads_1.fq"), _fastq_names(out / "reads_2.fq")
    assert [n[:-2] for n in one] == [n[:-2] for n in two] and len(one) == record["records"] < record["source_records"]
    reads_bytes = record["files"]["reads_1.fq"]["size_bytes"] + record["files"]["reads_2.fq"]["size_bytes"]
    assert READS_SIZE <= reads_bytes < READS_SIZE * 1.1
    assert (out / "genome.fa").read_text().startswith(">chr1\n")


def test_the_same_seed_gives_the_same_input_and_scale_replicates_it(published, fetched, tmp_path):
    """Prepared inputs are reproducible, and grow by replicating the baseline under new names
    (the paper's input-size axis), the queries of a database staying fixed."""
    def prep(name, dataset, seed, scale=1, size=READS_SIZE):
        return datasets.prepare(dataset, fetched / dataset, tmp_path / name, size, seed, scale, published["manifests"])

    a, b, c = prep("a", "lib", 5), prep("b", "lib", 5), prep("c", "lib", 6)
    assert a["files"] == b["files"] and a["files"]["reads_1.fq"] != c["files"]["reads_1.fq"]
    prep("twice", "lib", 5, scale=2)
    names = _fastq_names(tmp_path / "twice/reads_1.fq")
    assert len(names) == 2 * a["records"] == len(set(names)) and names[a["records"]].startswith("@x1_")
    small, grown = prep("db1", "db", 1, 1, 16 << 10), prep("db2", "db", 1, 2, 16 << 10)
    assert small["files"]["queries.fa"] == grown["files"]["queries.fa"]
    assert (tmp_path / "db1/queries.fa").read_text().count(">") == 8
    assert grown["records"] == 2 * small["records"]


def test_a_fetched_file_changed_since_is_refused(published, fetched, tmp_path):
    copy = tmp_path / "lib"
    copy.mkdir()
    for p in (fetched / "lib").iterdir():
        (copy / p.name).write_bytes(p.read_bytes())
    (copy / "genome.fasta").write_text(">chr1\nACGT\n")
    with pytest.raises(datasets.DatasetError, match=r"genome\.fasta: its sha256 .* is not the file `biossd data fetch` verified"):
        datasets.prepare("lib", copy, tmp_path / "out", READS_SIZE, 1, 1, published["manifests"])
    assert not (tmp_path / "out").exists()
    with pytest.raises(datasets.DatasetError, match=r"fetch\.json is missing: fetch the data set first"):
        datasets.prepare("lib", tmp_path / "nothing", tmp_path / "out", READS_SIZE, 1, 1, published["manifests"])


def test_a_source_that_is_not_its_format_is_named_with_its_line(tmp_path):
    bad = tmp_path / "r.fq"
    bad.write_text("@r1\nACGT\n+\nIIII\nr2\nACGT\n+\nIIII\n")
    with pytest.raises(formats.RecipeError, match=r"r\.fq: line 5 does not begin a FASTQ record"):
        list(formats.fastq_records(bad))
    genome = tmp_path / "g.fa"
    genome.write_text("ACGT\n>chr1\nACGT\n")
    with pytest.raises(formats.RecipeError, match=r"g\.fa: line 1: sequence before the first '>'"):
        list(formats.fasta_records(genome))


@pytest.mark.parametrize("prepare, message", [
    ({"recipe": "nope", "files": {}}, r"prepare\.recipe' 'nope' is not one of"),
    ({"recipe": "fasta_database", "files": {"database": "x.fa"}}, r"makes a proteins input, the manifest's synthetic"),
    ({"recipe": "fastq_pairs", "files": {"reads_1": "x.fa"}}, r"prepare\.files' has roles \['reads_1'\]"),
    ({"recipe": "fastq_pairs", "files": {"reads_1": "x.fa", "reads_2": None, "genome": "x.fa"}},
     r"prepare\.files\.reads_2' is null: say why"),
    ({"recipe": "fastq_pairs", "files": {"reads_1": "x.fa", "reads_2": "y.fa", "genome": "x.fa"}},
     r"prepare\.files\.reads_2' names 'y\.fa', which is not in 'files'"),
])
def test_a_broken_prepare_block_is_named(tmp_path, prepare, message):
    doc = {"id": "m", "name": "n", "description": "d", "source": {}, "licence": "l", "recipe": "r",
           "files": [{"name": "x.fa", "url": "http://127.0.0.1/x.fa", "sha256": None, "checksum_note": "test"}],
           "used_by": ["bwa"], "synthetic": {"kind": "reads"}, "prepare": prepare}
    (tmp_path / "m.yaml").write_text(yaml.safe_dump(doc))
    with pytest.raises(datasets.DatasetError, match=message):
        datasets.load(tmp_path / "m.yaml")


def test_the_plan_reads_a_data_set_per_tool_or_kind(published, fetched):
    """--inputs: the planned inputs name their source and folder; 'paper' takes each tool's own
    data set and names a tool whose data set cannot be prepared; a kind that does not fit is refused."""
    base = {"tools": "bwa,samtools_sort", "mem_caps": "1G", "scales": "1,2", "repeats": 1, "storage_classes": "ssd",
            "data_dir": str(fetched), "data_manifests": str(published["manifests"]), "host": "h"}
    plan = matrix.plan({**base, "inputs": "reads=lib"}, stub=True)
    assert not plan.problems, plan.problems
    by_id = {i["id"]: i for i in plan.inputs()}
    assert by_id["reads_lib_x2"] == {"id": "reads_lib_x2", "kind": "reads", "scale": 2, "size": plan.size_of("bwa"),
                                     "source": "lib", "data": str(fetched / "lib"),
                                     "manifests": str(published["manifests"])}
    assert by_id["bam_x1"]["source"] == "synthetic"
    assert {t["input"] for t in plan.tasks() if t["tool"] == "bwa"} == {"reads_lib_x1", "reads_lib_x2"}
    assert matrix.plan({**base, "inputs": "bwa=lib", "tools": "bwa"}).sources == {"bwa": "lib"}
    paper = matrix.plan({**base, "inputs": "paper"})
    assert paper.sources.get("bwa") == "lib"
    assert any("--inputs paper: samtools_sort reads a bam input, and no data manifest lists it" in p for p in paper.problems)
    wrong = matrix.plan({**base, "inputs": "bwa=db"})
    assert any("db makes a proteins input, bwa reads reads" in p for p in wrong.problems)
    unfetched = matrix.plan({**base, "inputs": "bwa=lib", "data_dir": str(fetched.parent / "elsewhere")})
    assert any("fetch.json is missing: fetch the data set first (`biossd data fetch lib" in p for p in unfetched.problems)


@pytest.mark.integration
def test_a_prepared_input_is_profiled_as_a_study_run_reads_it(biossd, published, fetched, tmp_path, root_required,
                                                              tool_required):
    """The rest of the path: the workflow's steps on the prepared input — the tool's own
    preparation (bwa index), then one profiled, capped run of it (root, for its cgroup)."""
    tool_required("bwa")
    made, prepared = tmp_path / "input", tmp_path / "prepared"
    biossd("data", "prepare", "lib", "--data", str(fetched / "lib"), "--size", str(READS_SIZE), "-o", str(made),
           "--manifests", str(published["manifests"]))
    biossd("catalogue", "prepare", "bwa", "--input", str(made), "--out", str(prepared))
    run = tmp_path / "run"
    proc = biossd("catalogue", "run", "bwa", "--input", str(prepared), "--scratch", str(tmp_path / "scratch"),
                  "--out", str(run), "--mem", "256M", "--no-drop-caches", "--blocktrace", "off", "--label", "tool=bwa")
    body = manifest.read_manifest(run)
    assert body["outcome"] == "ok" and body["exit_code"] == 0, body.get("outcome")
    assert [Path(a).name for a in body["argv"][-2:]] == ["genome.fa", "reads_1.fq"]
    # Published reads carry no truth: the aligner's quality is not scored, and the run says why.
    assert "truth.tsv is missing; nothing to score" in proc.stderr


@pytest.mark.parametrize("kind, recipe, role, source, made", [
    ("expression", "matrix_rows", "matrix", "expression.txt", "expression.txt"),
    ("promoters", "fasta_sequences", "sequences", "promoters.fa", "promoters.fa"),
    ("flowgrams", "flowgrams_dat", "flowgrams", "flows.dat", "flows.dat"),
])
def test_each_recipe_keeps_its_format_and_subsamples_whole_records(tmp_path, kind, recipe, role, source, made):
    """A source in the kind's own format (a synthetic one, written as a source would be) comes out
    in that format, cut to about the size asked in whole records, replicated under new names."""
    data.synth(kind, tmp_path / "src", 64 << 10, seed=3)
    out = tmp_path / "out"
    out.mkdir()
    r = recipes.RECIPES[recipe]
    assert r.kind == kind and r.roles == (role,)
    got = r.make({role: tmp_path / "src" / source}, out, 16 << 10, 1, 2, {})
    assert got["files"] == [made] and 0 < got["records"] < 2 * got["source_records"]
    text = (out / made).read_text()
    assert (16 << 10) <= len(text) < 2 * (16 << 10) * 1.2
    assert "x0_" in text and "x1_" in text
    # The kind's synthetic generator and the recipe agree on the format: made again from the made file.
    again = tmp_path / "again"
    again.mkdir()
    r.make({role: out / made}, again, 1 << 30, 1, 1, {})
    assert (again / made).read_text().count("x0_x1_") == (again / made).read_text().count("x0_x0_") > 0


def test_a_matrix_row_short_of_the_header_s_columns_is_named(tmp_path):
    bad = tmp_path / "m.txt"
    bad.write_text("ID\tNAME\tGWEIGHT\ts1\ts2\ng1\tg1\t1\t0.5\n")
    with pytest.raises(recipes.RecipeError, match=r"m\.txt: line 2 has not the header's 5 columns"):
        recipes.matrix_rows({"matrix": bad}, tmp_path, 10, 1, 1, {})


def test_inputs_name_a_tool_or_kind_and_a_data_set_or_synthetic(published, fetched):
    """--inputs KEY=SOURCE: a key that is neither a tool of the study nor a kind it reads, or an item
    without '=', is a problem naming it; 'synthetic' leaves a tool on its stand-in."""
    problems: list[str] = []
    tools, kinds = sources.resolve("bwa=synthetic,reads=lib", {"bwa": "reads", "bowtie2": "reads"}, {}, fetched,
                                   published["manifests"], False, problems)
    assert problems == [] and tools == {"bowtie2": "lib"} and kinds == {"reads": "lib"}
    sources.resolve("nope=lib,bwa", {"bwa": "reads"}, {}, fetched, published["manifests"], False, problems)
    assert any("'nope' is neither a tool" in p for p in problems) and any("'bwa' is not KEY=SOURCE" in p for p in problems)
    assert sources.resolve(sources.SYNTHETIC, {"bwa": "reads"}, {}, fetched, published["manifests"], False, []) == ({}, {})
