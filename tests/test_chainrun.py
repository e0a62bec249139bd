"""A chained pipeline in one process (src/biossd/measure/chainrun.py, `biossd chain run`): the plan's
steps checked against the chain, each step staged and profiled in one marked scratch, the chain
ended by the first step not ok or by a signal, and the scratch removed however it ends."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from biossd.measure import chainrun, manifest, rundir, toolrun
from biossd.measure.request import ProfileRequest
from biossd.study import catalogue, chain

PIPELINE = "pipeline_transcriptome"


def plan_steps(mem: str = "256M", settings: dict | None = None) -> list[dict]:
    return [{"index": s.index, "name": s.name, "tool": s.tool, "mem": mem, "settings": dict(settings or {})}
            for s in chain.of(catalogue.get(PIPELINE)).steps]


def test_the_plan_s_steps_must_be_the_chain_s():
    ch = chain.of(catalogue.get(PIPELINE))
    steps = chainrun.planned_steps(ch, plan_steps())
    assert [s.name for s in steps] == [s.name for s in ch.steps] and steps[0].mem_bytes == 256 << 20
    with pytest.raises(chainrun.ChainRunError, match=r"--steps: the steps .* are not pipeline_transcriptome's chain"):
        chainrun.planned_steps(ch, plan_steps()[1:])
    with pytest.raises(chainrun.ChainRunError, match=r"--steps\[2\]: missing \['mem'\]"):
        chainrun.planned_steps(ch, [plan_steps()[0], {k: v for k, v in plan_steps()[1].items() if k != "mem"}])
    with pytest.raises(chainrun.ChainRunError, match=r"--steps: a list"):
        chainrun.planned_steps(ch, {})


class FakeProfiler:
    """Records each request and answers with the next outcome (``None``: a signal stopped it)."""

    def __init__(self, outcomes):
        self.outcomes = list(outcomes)
        self.requests: list[ProfileRequest] = []
        self.cwds: list[Path] = []

    def __call__(self, request, name):
        assert name == "biossd chain run"
        self.requests.append(request)
        self.cwds.append(request.cwd)
        assert (request.cwd / rundir.SCRATCH_MARKER).is_file(), "the step works in the marked scratch"
        outcome = self.outcomes.pop(0)
        return (None, 15) if outcome is None else ({"outcome": outcome}, None)


@pytest.fixture
def staged(monkeypatch):
    """Staging that only records where it was asked to stage (the real one runs the tools)."""
    calls = []

    def stage_step(ch, index, input_dir, scratch, mem_bytes, container, settings, create_scratch, cidfile):
        assert not create_scratch and (scratch / rundir.SCRATCH_MARKER).is_file()
        calls.append((index, scratch, mem_bytes, settings))
        return ["true", str(index)]

    monkeypatch.setattr(chain, "stage_step", stage_step)
    return calls


def _run(tmp_path, outcomes, staged_calls, settings=None):
    ch = chain.of(catalogue.get(PIPELINE))
    profiler = FakeProfiler(outcomes)
    base = ProfileRequest(argv=[], out_dir=tmp_path / "steps", mem_bytes=None, labels={"host": "h", "storage": "ssd"})
    here = Path.cwd()
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(toolrun, "profiled", profiler)
        result = chainrun.run(ch, chainrun.planned_steps(ch, plan_steps(settings=settings)), tmp_path / "in",
                              tmp_path / "scratch", tmp_path / "steps", base,
                              version_of=lambda entry, engine: f"v-{entry.id}")
    assert Path.cwd() == here, "the profiler's own directory is never changed"
    assert not list(tmp_path.glob("scratch*")), "the scratch is removed however the chain ends"
    return result, profiler


def test_each_step_is_profiled_in_the_scratch_under_its_cap_with_its_labels(tmp_path, staged):
    n = len(plan_steps())
    result, profiler = _run(tmp_path, ["ok"] * n, staged, settings={"threads": "1"})
    assert [r.outcome for r in result.steps] == ["ok"] * n and result.signum is None
    first = profiler.requests[0]
    assert first.argv == ["true", "1"] and first.mem_bytes == 256 << 20
    assert first.out_dir == tmp_path / "steps" / plan_steps()[0]["name"]
    assert first.labels["step"] == plan_steps()[0]["name"] and first.labels["host"] == "h"
    assert first.labels["tool_version"] == first.tool_version == f"v-{plan_steps()[0]['tool']}"
    assert first.labels["setting.threads"] == "1" and first.labels["scratch"] == str(profiler.cwds[0])
    assert set(profiler.cwds) == {staged[0][1]}, "every step in the one scratch"
    assert staged[0][1].name.startswith(f"scratch-{os.getpid()}"), "the scratch's name is this process's"
    assert "stage" in first.phases_before_s
    assert list(result.versions()) == [s["tool"] for s in plan_steps()]


def test_a_step_not_ok_ends_the_chain(tmp_path, staged, capsys):
    result, profiler = _run(tmp_path, ["ok", "oom"], staged)
    assert [r.outcome for r in result.steps] == ["ok", "oom"] and len(staged) == 2
    assert f"step {plan_steps()[1]['name']} ended oom; the steps after it have no input" in capsys.readouterr().err


def test_a_signal_ends_the_chain_and_says_which(tmp_path, staged):
    result, _ = _run(tmp_path, ["ok", None], staged)
    assert result.signum == 15 and result.steps[-1].outcome is None and len(staged) == 2


def test_a_scratch_that_is_not_biossd_s_is_never_touched(tmp_path, staged):
    """The scratch's name is made unique with the pid; one of that name without the mark is refused."""
    mine = tmp_path / f"scratch-{os.getpid()}"
    mine.mkdir()
    (mine / "precious").write_text("x")
    ch = chain.of(catalogue.get(PIPELINE))
    with pytest.raises(rundir.RunDirError, match="not a biossd scratch directory"):
        chainrun.run(ch, chainrun.planned_steps(ch, plan_steps()), tmp_path / "in", tmp_path / "scratch",
                     tmp_path / "steps", ProfileRequest(argv=[], out_dir=tmp_path, mem_bytes=None))
    assert (mine / "precious").read_text() == "x" and not staged
    from biossd.core import made

    assert not made._record_path(mine).exists(), "a refused scratch leaves no record for cleanup"


@pytest.mark.integration
def test_biossd_chain_run_profiles_each_step_for_real(tmp_path, biossd, root_required):
    """The transcriptome chain on a small input, each step a profiled run of its own (its manifest,
    labels and block trace), the versions written, the scratch gone."""
    biossd("data", "synth", "rnaseq", "--size", "256K", "--seed", "3", "-o", str(tmp_path / "in"))
    (tmp_path / "steps.json").write_text(json.dumps(plan_steps()))
    proc = biossd("chain", "run", PIPELINE, "--input", str(tmp_path / "in"), "--scratch", str(tmp_path / "scratch"),
                  "--out", str(tmp_path / "steps"), "--steps", f"@{tmp_path / 'steps.json'}", "--label", "host=h",
                  "--versions", str(tmp_path / "versions.txt"), "--perf", "off", cwd=tmp_path)
    assert "biossd chain run: pipeline_transcriptome:" in proc.stderr
    names = [s["name"] for s in plan_steps()]
    assert sorted(p.name for p in (tmp_path / "steps").iterdir()) == names
    for step in plan_steps():
        body = manifest.read_manifest(tmp_path / "steps" / step["name"])
        assert body["outcome"] == "ok", (step["name"], body.get("why"))
        assert body["labels"]["step"] == step["name"] and body["labels"]["tool"] == step["tool"]
        assert body["labels"]["host"] == "h" and body["labels"]["tool_version"]
    versions = (tmp_path / "versions.txt").read_text().splitlines()
    assert [line.split(":")[0] for line in versions] == list(dict.fromkeys(s["tool"] for s in plan_steps()))
    assert not list(tmp_path.glob("scratch*")), "the scratch is removed"
