"""The study's parameter schema (study/nextflow_schema.json) is JSON Schema 2020-12, checked as
such: its parameters grouped under `$defs` and joined by `allOf` as nf-core pipelines' are, each
with a type, a description and the default nextflow.config gives it (as Nextflow reads it)."""

from __future__ import annotations

import json
import subprocess

import jsonschema
import pytest

from biossd.study.plan import schema

SCHEMA = json.loads(schema.SCHEMA_PATH.read_text())


def test_the_schema_is_json_schema_2020_12_in_nf_core_s_layout():
    assert SCHEMA["$schema"] == "https://json-schema.org/draft/2020-12/schema"
    jsonschema.Draft202012Validator.check_schema(SCHEMA)
    assert "properties" not in SCHEMA, "every parameter belongs to a group under $defs"
    groups = SCHEMA["$defs"]
    assert [ref["$ref"] for ref in SCHEMA["allOf"]] == [f"#/$defs/{name}" for name in groups]
    names = [name for group in groups.values() for name in group["properties"]]
    assert len(names) == len(set(names)), "a parameter is in one group only"
    for name, group in groups.items():
        assert group["type"] == "object" and group.get("title") and group.get("description"), name
    for name, spec in schema.schema_parameters(SCHEMA).items():
        assert spec.get("type") and spec.get("description") and "default" in spec, name


def test_a_grouped_parameter_is_checked_through_its_group():
    """A parameter's rules live in its group (reached by `allOf` and `$ref`): they are applied."""
    problems = schema.schema_problems({"repeats": "three", "publish_mode": "move", "seed": -1})
    assert any(p.startswith("Parameter --repeats = 'three' is not of type integer") for p in problems), problems
    assert any(p.startswith("Parameter --publish_mode = 'move' is not one of") for p in problems), problems
    assert any(p.startswith("Parameter --seed = -1 is below the minimum") for p in problems), problems
    assert schema.schema_problems({"repeats": 3, "publish_mode": "link"}) == []


@pytest.mark.beside
@pytest.mark.integration
def test_every_default_is_the_one_nextflow_config_gives(env, tmp_path, repo):
    """`nextflow config -output json` of the study: the same parameters, each default as the schema
    says (a path default relative to the launch directory, resolved there)."""
    proc = subprocess.run(["nextflow", "config", "-output", "json", str(repo / "study")], cwd=tmp_path, env=env,
                          capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr
    params = json.loads(proc.stdout)["params"]
    known = schema.schema_parameters(SCHEMA)
    assert sorted(params) == sorted(known)
    for name, spec in known.items():
        default, value = spec["default"], params[name]
        if spec.get("format") == "directory-path" and isinstance(default, str) and value != default:
            default = str(tmp_path / default)
        assert value == default, f"--{name}: nextflow.config gives {value!r}, the schema {default!r}"


#: What `nf-core pipelines schema lint` says beyond "valid", each explained in docs/hosts.md.
LINT_WARNINGS = ("Default parameter '{}' is empty, null, or False", "Schema `$id` should be")


@pytest.mark.beside
@pytest.mark.integration
def test_nf_core_s_schema_linter_finds_it_valid_and_says_only_what_the_docs_explain(env, repo):
    proc = subprocess.run(["nf-core", "pipelines", "schema", "lint", "nextflow_schema.json"], cwd=repo / "study",
                          env={**env, "NFCORE_NO_VERSION_CHECK": "1", "COLUMNS": "400"},
                          capture_output=True, text=True, timeout=300)
    said = proc.stdout + proc.stderr
    assert proc.returncode == 0, said
    known = schema.schema_parameters(SCHEMA)
    assert f"[✓] Pipeline schema looks valid (found {len(known)} params)" in said, said
    assert "[✓] Default parameters match schema validation" in said, said
    false_defaults = [name for name, spec in known.items() if spec.get("default") is False]
    expected = [LINT_WARNINGS[0].format(name) for name in false_defaults] + [LINT_WARNINGS[1]]
    warnings = [line for line in said.splitlines() if line.startswith("WARNING")]
    unexplained = [w for w in warnings if not any(e in w for e in expected)]
    assert unexplained == [], unexplained
