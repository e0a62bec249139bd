"""The plan of ``--experiment NAME[,NAME]`` at ``--experiment_size``: one task per (point, storage
class, repeat), the classes side by side, each with its layout path
``<host>-<storage>/experiments/<id>/<point>/<rep>/`` (:func:`biossd.study.layout.experiment_relpath`)."""

from __future__ import annotations

from typing import Any, Mapping, Sequence

from biossd.experiments.spec import SIZES, ExperimentError, load_spec, module, names_of
from biossd.study import layout

#: The seed of the synthetic inputs (the study's default, nextflow.config's params.seed).
DEFAULT_SEED = 1


def plan(experiments: str | Sequence[str], size: str, classes: Sequence[str], host: str,
         seed: int = DEFAULT_SEED) -> dict[str, Any]:
    """Every task of the experiments at ``size`` on ``classes``, in run order: for each point and
    repeat, the classes side by side (a drift of the host's load falls on both alike)."""
    if size not in SIZES:
        raise ExperimentError(f"--experiment_size {size!r}: choose one of {', '.join(SIZES)}")
    tasks: list[dict[str, Any]] = []
    for name in names_of(experiments):
        spec = load_spec(name)
        settings = spec["sizes"][size]
        for point in module(name).points(settings):
            for rep in range(1, int(settings["repeats"]) + 1):
                for storage in classes:
                    kind, input_size = spec["input"]["kind"], str(settings["input_size"])
                    task = {"experiment": name, "point": point["id"], "values": point["values"], "size": size,
                            "host": host, "storage": storage, "rep": str(rep), "seed": seed,
                            "input": {"kind": kind, "size": input_size, "id": input_id(kind, input_size)},
                            "order": len(tasks)}
                    task["publish"] = str(layout.experiment_relpath(task))
                    tasks.append(task)
    inputs = {t["input"]["id"]: {**t["input"], "scale": 1} for t in tasks}
    return {"experiments": names_of(experiments), "size": size, "classes": list(classes), "tasks": tasks,
            "n_tasks": len(tasks), "inputs": list(inputs.values()), "seed": seed}


#: The fields of a planned task that ``biossd experiment run --task`` reads.
TASK_FIELDS = ("experiment", "point", "values", "size", "host", "storage", "rep", "seed", "input")


def check_task(task: Any) -> dict[str, Any]:
    """A task as :func:`plan` writes it, or :class:`ExperimentError` naming what is missing or wrong
    (a task is machine-written; one edited by hand is refused before anything runs)."""
    if not isinstance(task, dict):
        raise ExperimentError(f"--task is a JSON {type(task).__name__}, not a task object; give one of the tasks "
                              "`biossd experiment plan` lists")
    missing = [k for k in TASK_FIELDS if k not in task]
    if missing:
        raise ExperimentError(f"--task has no {', '.join(missing)}; give one of the tasks `biossd experiment plan` lists")
    if task["size"] not in SIZES:
        raise ExperimentError(f"--task size {task['size']!r} is not one of {', '.join(SIZES)}")
    given = task["input"]
    if not isinstance(given, dict) or not {"kind", "size"} <= set(given):
        raise ExperimentError("--task input must be {kind, size, ...} as `biossd experiment plan` writes it")
    return dict(task)


def input_id(kind: str, size: str) -> str:
    """The id of an experiment's synthetic input, shared by every task that reads it."""
    return f"experiment_{kind}_{size}"


def plan_from_params(params: Mapping[str, Any]) -> dict[str, Any]:
    """The plan of ``--experiment`` from the workflow's ``params`` (as ``biossd study plan``
    takes them): the study's checks of the parameters (schema, classes, emulations, devices,
    host) and the experiments' own, every problem listed (``problems``), nothing run."""
    from biossd.study.plan import matrix

    study = matrix.plan(params)
    problems = list(study.problems)
    try:
        out = plan(str(params.get("experiment") or ""), str(params.get("experiment_size") or "test"), study.classes,
                   study.host or "localhost", int(params.get("seed") or DEFAULT_SEED))
    except (ExperimentError, ValueError) as err:
        out = {"experiments": [], "size": params.get("experiment_size"), "classes": study.classes, "tasks": [],
               "n_tasks": 0}
        problems.append(str(err))
    out["problems"] = problems
    out["record"] = study.record
    return out
