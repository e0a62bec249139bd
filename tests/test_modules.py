"""The Nextflow modules' ``meta.yml`` (nf-core's anatomy): each says what its module reads and
writes, checked against the module's own ``main.nf``, ``conf/modules.config`` and the plan's records."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
import yaml

from biossd.experiments import planning
from biossd.study.plan import matrix
from test_matrix import _full_params

REPO = Path(__file__).resolve().parents[1]
MODULES = sorted((REPO / "nextflow" / "modules" / "local").glob("*/main.nf"))
#: Which of the plan's records each module's meta is (its keys are those records' keys).
PLAN_RECORDS = {"PROFILE": ("tasks", "firm_tasks", "floor_tasks"), "CHAIN": ("chain_tasks",), "STUDY_INPUT": ("inputs",)}


def _code(text: str) -> str:
    return re.sub(r"//[^\n]*", "", text)


def meta_keys_read(name: str, main_nf: Path) -> set[str]:
    """The ``meta.*`` keys a module reads: in its ``main.nf`` and in its ``conf/modules.config`` blocks."""
    keys = set(re.findall(r"\bmeta\.(\w+)", _code(main_nf.read_text())))
    conf = (REPO / "nextflow" / "conf" / "modules.config").read_text()
    for names, body in re.findall(r"withName: '([^']+)' \{(.*?)\n    \}", conf, re.S):
        if name in names.split("|"):
            keys |= set(re.findall(r"\bmeta\.(\w+)", _code(body)))
    return keys


@pytest.fixture(scope="module")
def plan_keys() -> dict[str, set[str]]:
    """The keys each of the plan's records can hold, over the full study (with its time limit and
    cachegrind probes) and every related experiment."""
    plan = matrix.plan({**_full_params("full"), "storage_classes": "ssd,hdd", "host": "h", "time_limit": "10m",
                        "cachegrind_divisor": 4}, stub=True).as_json()
    assert plan["problems"] == []
    keys = {name: set().union(*(set(r) for field in fields for r in plan[field])) for name, fields in PLAN_RECORDS.items()}
    keys["EXPERIMENT"] = set().union(*(set(t) for t in planning.plan("all", "tiny", ["ssd", "hdd"], "h")["tasks"]))
    return keys


@pytest.mark.parametrize("main_nf", MODULES, ids=[m.parent.name for m in MODULES])
def test_each_module_s_meta_yml_says_what_it_reads_and_writes(main_nf, plan_keys):
    text = main_nf.read_text()
    name = re.search(r"process (\w+)", text).group(1)
    meta = yaml.safe_load((main_nf.parent / "meta.yml").read_text())
    assert meta["name"] == name and len(meta["description"].split()) >= 8
    # The meta keys: exactly those the module reads; those said to come from the plan are in its records.
    read = meta_keys_read(name, main_nf)
    assert set(meta.get("meta_keys") or {}) == read, (name, sorted(read))
    if read:
        from_plan = {k for k, said in meta["meta_keys"].items() if said.startswith("from ") and " when " not in said}
        assert from_plan <= plan_keys[name], (name, sorted(from_plan - plan_keys[name]))
    # Inputs in order, outputs by their emit names.

    def block(label):
        return re.search(r"\n    " + label + r":\n(.*?)\n\n", text, re.S).group(1)
    inputs = [re.split(r"[,)\s]", arg.strip().strip("'\""))[0]
              for line in block("input").splitlines()
              for arg in re.findall(r"\b(?:val|path|env)[( ]\s*([^,)\n]+)", line)]
    assert [i["name"] for i in meta["input"]] == inputs, name
    assert [o["name"] for o in meta["output"]] == re.findall(r"emit:\s*(\w+)", block("output")), name


@pytest.mark.parametrize("main_nf", MODULES, ids=[m.parent.name for m in MODULES])
def test_a_module_file_keeps_one_line_of_comment(main_nf):
    """The prose is in meta.yml: main.nf opens with one line that points there, and says no more."""
    lines = main_nf.read_text().splitlines()
    comments = [line for line in lines if line.strip().startswith(("//", "/*", "*", "# "))]
    assert comments == [lines[0]] and "meta.yml" in lines[0], comments


def test_the_plan_s_records_are_read_whole(plan_keys):
    """The keys the check compares against: a profiled task's probe, a chain's partition but no
    job time limit (CHAIN's meta.yml says so), and an input's data folder only for a data set."""
    assert "partition" in plan_keys["CHAIN"] and "job_time_s" not in plan_keys["CHAIN"]
    assert "probe" in plan_keys["PROFILE"] and "data" not in plan_keys["STUDY_INPUT"]
