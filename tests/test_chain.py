"""Chained pipelines (Fig. 3, src/biossd/study/chain.py): the chain blocks of the catalogue, their
wiring run for real on a small input, the plan's chain runs and where their steps land."""

from __future__ import annotations

import subprocess

import pytest
import yaml

from biossd.features import extract as features
from biossd.study import catalogue, chain, layout
from biossd.study.inputs import data
from biossd.study.plan import matrix
from biossd.study.staging import StageError

PIPELINES = ("pipeline_gatk_variant_calling", "pipeline_transcriptome", "pipeline_assembly_annotation")


@pytest.mark.parametrize("pipeline", PIPELINES)
def test_every_pipeline_has_a_chain_that_names_each_paper_step(pipeline):
    entry = catalogue.get(pipeline)
    c = chain.of(entry)
    labels, not_run = chain.step_labels(entry)
    assert list(labels) == [s.name for s in c.steps] and c.steps[0].name.startswith("01-")
    subs = entry.data.get("substitute_steps") or {}
    for step in entry.data["steps"]:  # each paper step either runs (itself or its substitute) or says why not
        assert any(step in label or subs.get(step, step) in label for label in labels.values()) or not_run[step]


@pytest.mark.integration
def test_the_transcriptome_chain_runs_each_step_on_the_last_ones_output(tmp_path, tool_required):
    """Lighter's corrected reads -> HISAT2 -> samtools sort -> StringTie, in one scratch, on a
    small input: every step's argv names the previous step's output, and the last one writes
    transcripts."""
    tool_required("lighter", "hisat2", "samtools", "stringtie")
    data.synth("rnaseq", tmp_path / "in", 256 << 10, 3)
    c = chain.of(catalogue.get("pipeline_transcriptome"))
    scratch = tmp_path / "scratch"
    previous = None
    for step in c.steps:
        argv = chain.stage_step(c, step.index, tmp_path / "in" if step.index == 1 else None, scratch, 256 << 20)
        if previous is not None:
            assert any(rel in argv for rel in step.files.values()), (step.name, argv)
        proc = subprocess.run(argv, cwd=scratch, capture_output=True, text=True)
        assert proc.returncode == 0, (step.name, proc.stderr[-500:])
        previous = step
    assert "transcript" in (scratch / "out.gtf").read_text()


def test_a_step_whose_command_changes_directory_gets_its_paths_from_there(tmp_path):
    """abyss-pe -C asm reads its inputs from inside asm/ (stage.chdir): the chained step's
    corrected reads are ../corrected/..., not corrected/... (the make run of 2026-11-23 found
    ABySS failing in the chain on a path relative to scratch)."""
    c = chain.of(catalogue.get("pipeline_assembly_annotation"))
    scratch = tmp_path / "scratch"
    step = next(s for s in c.steps if s.tool == "abyss")
    for rel in ("corrected/reads_1.cor.fq", "reads_2.fq"):
        (scratch / rel).parent.mkdir(parents=True, exist_ok=True)
        (scratch / rel).write_text("@r\nACGT\n+\nIIII\n")
    argv = chain.stage_step(c, step.index, None, scratch, 256 << 20)
    assert argv[argv.index("-C") + 1] == "asm" and (scratch / "asm").is_dir()
    assert "in=../corrected/reads_1.cor.fq ../reads_2.fq" in argv


@pytest.mark.integration
def test_a_step_whose_input_is_missing_is_refused_with_the_file(tmp_path, tool_required):
    tool_required("hisat2-build")  # the chain prepares its steps' indexes before it looks for their inputs
    c = chain.of(catalogue.get("pipeline_transcriptome"))
    with pytest.raises(StageError, match=r"02-hisat2: the earlier steps left no reads \(corrected/reads.cor.fq\)"):
        data.synth("rnaseq", tmp_path / "in", 64 << 10, 3)
        chain.stage_step(c, 1, tmp_path / "in", tmp_path / "s", None)
        chain.stage_step(c, 2, None, tmp_path / "s", None)


@pytest.mark.parametrize("change, message", [
    ({"steps": [{"tool": "bwa", "files": {"nosuch": "x"}}]}, r"steps\[1\].files: bwa has no stage files \['nosuch'\]"),
    ({"prepare": [["samtools", "fastq", 0]]}, r"chain.prepare: a list of argvs of strings"),
    ({"steps": [{"tool": "bwa", "colour": 1}]}, r"steps\[1\]: unknown fields \['colour'\]"),
    ({"steps": []}, r"chain.steps: at least one step"),
])
def test_a_bad_chain_block_names_its_field(tmp_path, change, message):
    body = yaml.safe_load(catalogue.get("pipeline_gatk_variant_calling").source.read_text())
    body["chain"].update(change)
    path = tmp_path / "pipeline_gatk_variant_calling.yaml"
    path.write_text(yaml.safe_dump(body))
    with pytest.raises(chain.ChainError, match=message):
        chain.of(catalogue.Entry(body["id"], path, body))


def test_the_plan_runs_each_chain_with_its_steps_caps():
    p = matrix.plan({"tools": "samtools_sort", "mem_caps": "256M", "tool_caps": "gatk_*=1G,4G", "scales": "1",
                     "repeats": 3, "chain_repeats": 2, "chains": "all", "storage_classes": "ssd,hdd",
                     "input_sizes": "bam=8M,vcf=2M,rnaseq=4M,reads=1M"})
    assert p.problems == []
    runs = p.chain_runs()
    assert sorted({r["pipeline"] for r in runs}) == sorted(PIPELINES) and {r["rep"] for r in runs} == {1, 2}
    gatk = next(r for r in runs if r["pipeline"] == "pipeline_gatk_variant_calling")
    assert gatk["input"] == "vcf_x1" and {s["tool"]: s["mem"] for s in gatk["steps"]}["gatk_printreads"] == "1G"
    assert {s["tool"]: s["mem"] for s in gatk["steps"]}["bwa"] == "256M"
    assert {"vcf_x1", "rnaseq_x1", "reads_x1"} <= {i["id"] for i in p.inputs()}
    assert p.n_runs() == (3 + sum(len(r["steps"]) for r in runs)) * 2
    bad = matrix.plan({"tools": "samtools_sort", "mem_caps": "256M", "scales": "1", "repeats": 1,
                       "chains": "pipeline_nosuch", "storage_classes": "ssd"})
    assert any("Unknown pipeline 'pipeline_nosuch' in --chains" in x for x in bad.problems)


def test_a_chain_step_lands_under_chains_and_out_of_the_features_table(tmp_path):
    labels = {"host": "h", "storage": "ssd", "chain": "pipeline_transcriptome", "rep": 1, "step": "02-hisat2",
              "tool": "hisat2", "mem": "256M", "scale": 1}
    rel = layout.run_relpath(labels)
    assert str(rel) == "h-ssd/chains/pipeline_transcriptome/1/02-hisat2"
    run = tmp_path / rel
    run.mkdir(parents=True)
    (run / "run.json").write_text("{}")
    assert features.find_run_dirs([tmp_path]) == []
