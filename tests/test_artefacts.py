"""The registry of artefacts (src/biossd/outputs/artefacts.py) is the one list of the paper's
tables and figures: each notebook makes exactly its own, every drawing function is registered,
and a bad name or parameter is refused."""

from __future__ import annotations

import json
import re

import pytest

from biossd.outputs import artefacts, figures
from conftest import REPO

MAKE_CALL = re.compile(r'artefacts\.make\("(\w+)"')


def notebook_code(name: str) -> str:
    nb = json.loads((REPO / "notebooks" / f"{name}.ipynb").read_text())
    return "\n".join("".join(c["source"]) for c in nb["cells"] if c["cell_type"] == "code")


def test_each_notebook_makes_exactly_its_registered_artefacts():
    notebooks = sorted(p.stem for p in (REPO / "notebooks").glob("*.ipynb"))
    assert notebooks == sorted({x.notebook for x in artefacts.ARTEFACTS})
    for name in notebooks:
        made = MAKE_CALL.findall(notebook_code(name))
        assert sorted(made) == sorted(x.stem for x in artefacts.of_notebook(name)), name


def test_the_notebooks_share_one_setup_cell_and_one_parameters_cell():
    setups, parameters = set(), set()
    for path in sorted((REPO / "notebooks").glob("*.ipynb")):
        cells = [c for c in json.loads(path.read_text())["cells"] if c["cell_type"] == "code"]
        tagged = [c for c in cells if "parameters" in c.get("metadata", {}).get("tags", [])]
        assert len(tagged) == 1 and cells[0] is tagged[0], path.name
        parameters.add("".join(tagged[0]["source"]))
        setups.add("".join(cells[1]["source"]))
    assert len(parameters) == 1 and len(setups) == 1
    assert "artefacts.open_analysis(" in setups.pop()


def test_every_figure_function_is_registered_once():
    drawn = {name for name in dir(figures) if re.fullmatch(r"fig(\d\d[a-z]?|s\d+)_\w+", name)}
    registered = {x.function.__name__ for x in artefacts.ARTEFACTS if x.kind == artefacts.FIGURE}
    assert drawn == registered
    stems = [x.stem for x in artefacts.ARTEFACTS]
    assert len(stems) == len(set(stems))


def test_an_unknown_artefact_or_parameter_is_refused(tmp_path):
    with pytest.raises(KeyError, match="no artefact 'fig99'"):
        artefacts.get("fig99")
    with pytest.raises(TypeError, match="fig02_speedup takes the parameters none"):
        artefacts.make("fig02_speedup", None, {"figures": tmp_path}, focus_tool="x")
