"""Which plan a result folder holds: a study writes the parameters that decide its runs into
``OUTDIR/pipeline_info/plan.json``, and a later study into the same folder with other such
parameters is refused (naming them) unless it is told to replace it — so a result set never mixes
the runs of two plans without being asked. Resuming (Nextflow's ``-resume``) is no leave to change
the plan: the runs the earlier session published stay in the folder beside the new plan's, and
every reader of the folder would read both.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any, Mapping

PLAN_RECORD = Path("pipeline_info") / "plan.json"
#: The parameters that decide what a result set's runs are (study/nextflow.config): two studies
#: that differ in one of them measure different things (a related experiment, ``--experiment``, and
#: its sweep's size are a plan of their own). Where results go, how the report is made,
#: and where the devices' records come from do not.
PLAN_PARAMS = ("tools", "mem_caps", "tool_caps", "scales", "tool_scales", "repeats", "scaling_repeats", "input_size",
               "input_sizes", "tool_input_sizes", "inputs", "data_memory", "java_heaps", "time_limit", "chains",
               "chain_repeats", "cachegrind_divisor", "seed", "storage_classes", "emulate", "emulate_size", "cap_backend",
               "drop_caches", "swap", "container_engine", "host", "experiment", "experiment_size")


def record(params: Mapping[str, Any]) -> dict[str, str | None]:
    """The plan's parameters as the record keeps them (text, or None when unset)."""
    return {k: None if params.get(k) in (None, "") else str(params.get(k)) for k in PLAN_PARAMS}


def differences(old: Mapping[str, Any], new: Mapping[str, Any]) -> list[str]:
    """The plan parameters whose values differ, each as ``--name old -> new``."""
    return [f"--{k} {old.get(k)} -> {new.get(k)}" for k in PLAN_PARAMS if old.get(k) != new.get(k)]


def problem(outdir: Path | str, params: Mapping[str, Any], resumed: bool = False, replace: bool = False) -> str | None:
    """Why a study with ``params`` may not write into ``outdir``, or None: the folder holds the
    runs of another plan and the study does not replace it (--replace_results); ``resumed``
    (-resume) only changes what the refusal advises."""
    path = Path(outdir) / PLAN_RECORD
    if replace or not path.is_file():
        return None
    try:
        old = json.loads(path.read_text())
    except (OSError, ValueError) as err:
        return f"{path} cannot be read ({err}); give another --outdir, or --replace_results true"
    if not isinstance(old, dict):
        return f"{path} is not a plan record (a JSON {type(old).__name__}); give another --outdir, or --replace_results true"
    changed = differences(old, record(params))
    if not changed:
        return None
    if resumed:
        return (f"--outdir {outdir} holds the results of another plan ({'; '.join(changed)}) and -resume keeps them "
                "beside this one's: resume with that study's own parameters, give another --outdir, or replace "
                "its results (--replace_results true)")
    return (f"--outdir {outdir} holds the results of another plan ({'; '.join(changed)}): give another --outdir, "
            "resume that study (-resume) with its own parameters, or replace its results (--replace_results true)")
