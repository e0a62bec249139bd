"""Every folder of the checkout that the package reads, named once: ``study/``, ``containers/``,
``notebooks/``, ``paper/`` and the rest are read from the checkout (the package is installed
editable, ``pip install -e .``). Modules join file names onto these, never onto the root."""

from __future__ import annotations

from pathlib import Path

#: The repository root: ``src/biossd/core/paths.py`` is three levels below it.
REPO_ROOT = Path(__file__).resolve().parents[3]
#: *What* is studied: the entry workflow, its config and schema.
STUDY_DIR = REPO_ROOT / "study"
#: The tool catalogue, one YAML file per entry.
CATALOGUE_DIR = STUDY_DIR / "catalogue"
#: The related experiments, one YAML file each (their ids are the file names).
EXPERIMENTS_DIR = STUDY_DIR / "experiments"
#: The paper's published tables (CSV) and the cloud volumes' published limits.
REFERENCE_DIR = STUDY_DIR / "reference"
#: Disk models of the emulated hard disks.
DEVICE_PROFILES_DIR = STUDY_DIR / "devices"
#: Manifests of the published inputs.
DATA_MANIFESTS_DIR = REPO_ROOT / "data-manifests"
#: The analysis narrative, one notebook per figure group, and one per related experiment.
NOTEBOOKS_DIR = REPO_ROOT / "notebooks"
EXPERIMENT_NOTEBOOKS_DIR = NOTEBOOKS_DIR / "experiments"
#: The supplement's LaTeX sources.
PAPER_DIR = REPO_ROOT / "paper"
#: Where ``biossd paper`` builds the supplement by default.
PAPER_BUILD_DIR = PAPER_DIR / "build"
#: What ``make`` installs (package lists, Maven POMs and their checksums).
INSTALL_DIR = REPO_ROOT / "install"
#: The checkout's own environment (``make install``'s default ``VENV``).
DEFAULT_VENV = REPO_ROOT / ".venv"
