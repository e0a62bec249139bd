"""The four related experiments, run the way the study re-runs Lee, Min and Yoon 2015.

Each experiment is *what* in ``study/experiments/<id>.yaml`` (its question, the seed's finding,
its tools and substitutes, and its sweep at three sizes: ``tiny`` for the test suite, ``test``
for this machine, ``full`` for a real host pair) and *how* in ``biossd.experiments.<id>``: the
sweep's points, how one point is run (every run a profiled run, :mod:`biossd.measure.profile`,
with its raw traces), and the rows of its table. What they share lives in four modules,
re-exported here (this module holds no logic):

* :mod:`~biossd.experiments.spec`: the definitions, found, loaded and checked;
* :mod:`~biossd.experiments.planning`: :func:`plan`, the tasks of an experiment at a size;
* :mod:`~biossd.experiments.task`: :func:`run_task`, one task run, all or nothing;
* :mod:`~biossd.experiments.tables`: :func:`table`, the experiment's table, and the helpers of
  its rows, summary and headline.
"""

from biossd.experiments.planning import DEFAULT_SEED, input_id, plan, plan_from_params
from biossd.experiments.spec import (
                                     EXPERIMENTS_DIR,
                                     NAMES,
                                     SIZE_KEYS,
                                     SIZES,
                                     ExperimentError,
                                     describe,
                                     load_spec,
                                     module,
                                     names_of,
                                     substitutes,
                                     tool_version,
)
from biossd.experiments.tables import (
                                     CLASS_ORDER,
                                     FAILURE_CHARS,
                                     SCALE_COLUMNS,
                                     TASK_COLUMNS,
                                     by_class,
                                     headline,
                                     last_words,
                                     load_table,
                                     not_ok,
                                     point_dirs,
                                     run_rows,
                                     scale_keys,
                                     since_start_s,
                                     table,
                                     table_path,
                                     window_features,
)
from biossd.experiments.task import INPUT_DIR, POINT_RECORD, Interrupted, Task, Teardown, run_task

__all__ = [
    "CLASS_ORDER", "DEFAULT_SEED", "EXPERIMENTS_DIR", "FAILURE_CHARS", "INPUT_DIR", "NAMES",
    "POINT_RECORD", "SCALE_COLUMNS", "SIZES", "SIZE_KEYS", "TASK_COLUMNS", "ExperimentError", "Interrupted", "Task",
    "Teardown", "by_class", "describe", "headline", "input_id", "last_words", "load_spec", "load_table", "module",
    "names_of", "not_ok", "plan", "plan_from_params", "point_dirs", "run_rows", "run_task", "scale_keys",
    "since_start_s", "substitutes", "table", "table_path", "tool_version", "window_features",
]
