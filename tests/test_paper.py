"""paper/: the supplement builds from a result set with every figure and table of
Lee, Min and Yoon 2015 captioned in it; CITATION.cff validates; the RO-Crate of a result set is valid JSON-LD
and lists every run directory with its checksum."""

from __future__ import annotations

import json
import re
import shutil
import subprocess
from pathlib import Path

import pytest

from biossd.features import extract as features
from biossd.outputs import artefacts, crate, supplement
from conftest import REPO, pdf_text, squeezed

#: Nothing here measures: these tests run beside others (tests/alone.py).
pytestmark = [pytest.mark.integration, pytest.mark.beside]


@pytest.fixture(scope="module")
def synthetic(synthetic_study):
    """The suite's synthetic result set, its report already rendered (conftest.py)."""
    return synthetic_study


def test_citation_cff_validates(env):
    proc = subprocess.run([shutil.which("cffconvert", path=env["PATH"]), "--validate", "-i", str(REPO / "CITATION.cff")],
                          capture_output=True, text=True)
    assert proc.returncode == 0 and "valid" in proc.stdout, proc.stdout + proc.stderr
    zenodo = json.loads((REPO / ".zenodo.json").read_text())
    assert {"title", "upload_type", "creators", "license", "version"} <= set(zenodo)


def test_supplement_builds_with_every_caption_and_generated_methods(biossd, synthetic, tmp_path):
    out = tmp_path / "build"
    pdf = Path(biossd("paper", *synthetic["roots"], "--no-render", "--out", str(out), timeout=900).stdout.strip())
    assert pdf == out / "supplement.pdf" and pdf.read_bytes().startswith(b"%PDF")
    text = squeezed(pdf_text(pdf))
    printed = [x for x in artefacts.ARTEFACTS if x.in_supplement]
    for artefact in printed:
        label = f"{artefact.supplement_label}. {' '.join(artefact.caption.split()[:4])}"
        assert squeezed(label) in text, label
    for phrase in ("This result set is synthetic", "Not run:", "HISAT2 (substitute for Tophat)",
                   "Memory caps 1G and 4G; input scales (replication factors) 1, 2 and 8; 2 repeats"):
        assert squeezed(phrase) in text, phrase
    pages = subprocess.run(["pdfinfo", str(pdf)], capture_output=True, text=True).stdout
    assert int(next(l.split()[-1] for l in pages.splitlines() if l.startswith("Pages:"))) >= 1 + len(printed)


def test_supplement_without_latex_says_how_to_get_it(monkeypatch, synthetic):
    monkeypatch.setattr(shutil, "which", lambda name, *a, **k: None)
    with pytest.raises(supplement.SupplementError, match="make paper"):
        supplement.build(synthetic["roots"], render=False)


@pytest.mark.parametrize("success, status", [(True, "Completed"), ("false", "Failed"), (None, "Active")])
def test_the_crate_s_action_status_follows_the_session_s_success(success, status):
    # None: the provenance begun at the session's start (the study's own report is made then).
    assert crate.action_status(success) == f"http://schema.org/{status}ActionStatus"


def test_the_crate_never_writes_through_a_link_in_the_result_set(synthetic, tmp_path):
    """A result set whose workflow/main.nf is a link out of it: the link is replaced by the copy,
    its target untouched; a workflow/ that is itself a link is refused, naming it, and nothing
    is written through it."""
    root = tmp_path / "rs"
    shutil.copytree(synthetic["roots"][0], root, symlinks=True)
    victim = tmp_path / "victim.txt"
    victim.write_text("precious\n")
    (root / "workflow").mkdir(exist_ok=True)
    (root / "workflow" / "main.nf").unlink(missing_ok=True)
    (root / "workflow" / "main.nf").symlink_to(victim)
    crate.write(root)
    assert victim.read_text() == "precious\n"
    assert not (root / "workflow" / "main.nf").is_symlink()
    assert (root / "workflow" / "main.nf").read_text() == (REPO / "study" / "main.nf").read_text()
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    shutil.rmtree(root / "workflow")
    (root / "workflow").symlink_to(elsewhere)
    with pytest.raises(crate.CrateError, match="workflow.*symbolic link"):
        crate.write(root)
    assert list(elsewhere.iterdir()) == []


def test_crate_is_json_ld_and_lists_every_run_with_its_checksum(biossd, synthetic):
    import rdflib

    root = Path(synthetic["roots"][0])
    path = Path(biossd("crate", str(root)).stdout.strip())
    body = json.loads(path.read_text())
    graph = {e["@id"]: e for e in body["@graph"]}
    runs = features.find_run_dirs([root])
    assert runs
    for run in runs:
        entity = graph[run.relative_to(root).as_posix() + "/"]
        assert entity["@type"] == "Dataset" and entity["sha256"] == crate.directory_sha256(run)
    assert graph["features.csv"]["sha256"] == crate.file_sha256(root / "features.csv")
    action = next(e for e in body["@graph"] if e["@type"] == "CreateAction")
    assert action["instrument"] == {"@id": "workflow/main.nf"} and len(action["result"]) >= len(runs)
    assert any(o["@id"].startswith("#value-mem_caps") for o in action["object"])
    assert graph["./"]["mainEntity"] == {"@id": "workflow/main.nf"}
    # JSON-LD, offline: the RO-Crate context as ro-crate-py ships it stands in for the URL.
    import rocrate

    local = json.loads((Path(rocrate.__file__).parent / "data" / "ro-crate.jsonld").read_text())["@context"]
    body["@context"] = [local, crate.SHA256_TERM]
    g = rdflib.Graph().parse(data=json.dumps(body), format="json-ld", base="arcp://uuid,biossd/")
    sha = rdflib.URIRef(crate.SHA256_TERM["sha256"])
    assert len(list(g.triples((None, sha, None)))) >= len(runs) + 1
    # roc-validator, offline: a result set made outside Nextflow (no provenance) is a valid crate too.
    from biossd.outputs import crate_validate

    verdict = crate_validate.validate(root)
    assert verdict.ok, verdict.summary()
    # A result folder that is not one is refused, naming it.
    bad = biossd("crate", str(root / "pipeline_info"), check=False)
    assert bad.returncode == 2 and "no features table" in bad.stderr


def test_a_validator_report_with_a_skipped_or_failed_check_is_not_a_pass():
    """The report's shape as roc-validator 0.13 writes it (``-f json``): a check it could not run
    (its context not in the offline cache) fails the verdict as a failed one does."""
    from biossd.outputs import crate_validate

    stats = {"profiles": ["ro-crate-1.1"], "total_checks": 57, "total_skipped_checks": 0}
    assert crate_validate.verdict_of({"statistics": stats, "issues": []}).ok
    skipped = {"statistics": {**stats, "total_skipped_checks": 1},
               "skipped_check_details": [{"identifier": "ro-crate-1.1_3.1", "message": "Deferred SHACL validation"}]}
    assert crate_validate.verdict_of(skipped).skipped == ["ro-crate-1.1_3.1"]
    assert not crate_validate.verdict_of(skipped).ok
    failed = {"statistics": stats, "issues": [{"severity": "REQUIRED", "message": "no date", "violatingEntity": "./",
                                               "check": {"identifier": "ro-crate-1.1_8.4"}},
                                              {"severity": "RECOMMENDED", "message": "no author",
                                               "check": {"identifier": "ro-crate-1.1_22.2"}}]}
    verdict = crate_validate.verdict_of(failed)
    assert verdict.failed == ["ro-crate-1.1_8.4: no date (./)"] and not verdict.ok
    assert not crate_validate.verdict_of({"statistics": {}}).ok, "no check run is no pass"


def test_a_result_set_without_start_times_or_runs_is_refused_by_the_wfformat_export(synthetic, tmp_path):
    from biossd.outputs import wfformat

    with pytest.raises(wfformat.WfFormatError, match="started_at"):
        wfformat.instance(Path(synthetic["roots"][0]))
    with pytest.raises(wfformat.WfFormatError, match="neither a study's result folder"):
        wfformat.instance(tmp_path)
    assert wfformat.file_id("/data/s 1/reads#1.fq") == "/data/s_1/reads_1.fq"
    assert wfformat.task_id("h-ssd/runs/bwa/6554K/1/2") == "h-ssd.runs.bwa.6554K.1.2"


def test_methods_state_the_sizing_rule_and_the_answer_without_stray_escapes(synthetic):
    """The one-machine study's methods: per-kind sizes, the time limit, swap and the sizing rule
    from biossd.study.sizing.rule; the results open with the answer. No Python escape (a tab from "\\t")
    reaches the LaTeX."""
    from biossd import analysis
    from biossd.study.sizing import rule

    a = analysis.open_results(synthetic["roots"])
    a.rs.provenance[0].setdefault("params", {}).update(input_sizes="bam=64M,reads=8M", time_limit="120s", swap="1G",
                                                       data_memory="6M")
    text = supplement.methods_tex(a)
    assert "\t" not in text and "\x07" not in text and "\x08" not in text
    # A bare % starts a LaTeX comment: the rest of the paragraph's line would vanish from the PDF.
    assert re.search(r"(?<!\\)%", text) is None, re.search(r".{60}(?<!\\)%.{20}", text)
    assert r"\texttt{biossd.study.sizing.rule}" in text and r"\texttt{benchmarks/sizing.py}" in text
    assert "bam=64M, reads=8M" in text and "stopped after 120s" in text and "1G of swap" in text
    assert "M = 6M for every tool" in text and f"over\n{rule.INPUT_PER_MEMORY}" not in text
    assert f"median per-program input over {rule.INPUT_PER_MEMORY}" in text
    assert "fraction of the cap" in text and "hash-table assembler" in text
    answer = supplement.answer_tex(a)
    assert answer.startswith(r"\paragraph{The answer.}") and "\t" not in answer and "a firm call (G+ or G0)" in answer
