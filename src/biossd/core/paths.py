"""Where the package's checkout is: ``study/``, ``containers/``, ``notebooks/`` and ``paper/``
are read from it (the package is installed editable, ``pip install -e .``)."""

from __future__ import annotations

from pathlib import Path

#: The repository root: ``src/biossd/core/paths.py`` is three levels below it.
REPO_ROOT = Path(__file__).resolve().parents[3]
