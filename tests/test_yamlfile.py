"""biossd.core.yamlfile: the study's YAML files read and checked, errors naming file and field."""

import pytest

from biossd.core.yamlfile import check_fields, read_mapping


class Bad(Exception):
    pass


SCHEMA = {"name": ((str,), "what it is called"), "size": ((int,), "how big"), "on": ((bool,), "whether")}


def test_a_mapping_is_read(tmp_path):
    (tmp_path / "a.yaml").write_text("name: disk\nsize: 3\n")
    assert read_mapping(tmp_path / "a.yaml", "device profile", Bad) == {"name": "disk", "size": 3}


@pytest.mark.parametrize("text, said", [("- a\n- b\n", "device profile is a mapping of fields"),
                                        ("name: [unclosed\n", "not valid YAML")])
def test_what_is_not_a_mapping_is_refused_naming_the_file(tmp_path, text, said):
    (tmp_path / "a.yaml").write_text(text)
    with pytest.raises(Bad, match=f"a.yaml: {said}"):
        read_mapping(tmp_path / "a.yaml", "device profile", Bad)


def test_a_missing_file_is_named(tmp_path):
    with pytest.raises(Bad, match="gone.yaml: cannot read device profile"):
        read_mapping(tmp_path / "gone.yaml", "device profile", Bad)


@pytest.mark.parametrize("data, said", [
    ({"name": "x", "colour": "red"}, "field 'colour' is not a profile field"),
    ({"name": "x", "size": "3"}, "field 'size' must be int, not str"),
    ({"name": "x", "size": True}, "field 'size' must be int, not bool"),
    ({"size": 3}, "field 'name' is missing"),
])
def test_each_field_is_checked_by_name(data, said):
    with pytest.raises(Bad, match=said):
        check_fields("p.yaml", data, SCHEMA, {"name"}, "profile", Bad)
    check_fields("p.yaml", {"name": "x", "size": 3, "on": True}, SCHEMA, {"name"}, "profile", Bad)
