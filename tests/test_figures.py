"""The figures' rooms: one module of biossd.outputs.figures per notebook, drawing only."""

from __future__ import annotations

import ast
from pathlib import Path

from biossd.outputs import artefacts
from biossd.outputs.figures import _style, patterns, prediction, scaling, speedup, storage_features

#: Each notebook's figure module (the notebook's name without its number).
MODULE_OF_NOTEBOOK = {"01_speedup": speedup, "02_storage_features": storage_features, "03_patterns": patterns,
                      "04_scaling": scaling, "06_prediction": prediction}


def test_each_figure_is_drawn_by_the_module_of_the_notebook_that_makes_it():
    figures = [a for a in artefacts.ARTEFACTS if a.kind == artefacts.FIGURE]
    assert figures
    for artefact in figures:
        module = MODULE_OF_NOTEBOOK[artefact.notebook]
        assert artefact.function.__module__ == module.__name__, (artefact.stem, artefact.function.__module__)


def test_the_figure_modules_only_draw_and_write_nothing():
    """Drawing only: no figure module writes a file or a table (the report saves what they return)."""
    for module in (_style, patterns, prediction, scaling, speedup, storage_features):
        tree = ast.parse(Path(module.__file__).read_text())
        calls = {node.func.attr for node in ast.walk(tree) if isinstance(node, ast.Call)
                 and isinstance(node.func, ast.Attribute)}
        assert not calls & {"to_csv", "to_parquet", "savefig", "write_text", "write_frame"}, module.__name__
