"""`biossd study`, `experiment` and `layout`: the study's plan and harness, the related experiments,
the result layout."""

from __future__ import annotations

import argparse
import json
import platform
import sys
import tempfile
from pathlib import Path

from biossd.cli import options
from biossd.cli.options import UsageError


def cmd_layout_assemble(args: argparse.Namespace) -> int:
    from biossd.study import layout

    runs, devices, extra = ({k: Path(v) for k, v in options.labels(pairs).items()}
                            for pairs in (args.run, args.device, args.file))
    made = layout.assemble(Path(args.dest), runs, devices, extra)
    print(f"{len(made)} runs laid out under {args.dest}")
    return 0


def _json_object(text: str, option: str, what: str) -> dict:
    """``text`` as a JSON object, else a usage error naming ``option``."""
    try:
        value = json.loads(text)
    except json.JSONDecodeError as err:
        raise UsageError(f"{option} is not JSON ({err})") from None
    if not isinstance(value, dict):
        raise UsageError(f"{option} is JSON but not an object of {what} (it is a {type(value).__name__}): "
                         "give {\"name\": value, ...}")
    return value


def cmd_study_plan(args: argparse.Namespace) -> int:
    from biossd.study.plan import matrix, parse

    params = _json_object(args.params, "--params", "parameters")
    result = matrix.plan(params, stub=args.stub, resumed=args.resumed, before_sizing=args.before_sizing)
    body = result.as_json()
    if args.estimate and not result.problems and not args.stub:
        from biossd.study.plan import estimate

        options.need_root("study plan --estimate")
        scratch = Path(args.scratch or params.get("scratch_dir") or tempfile.gettempdir())
        print(f"biossd study plan: probing {len(result.tools)} tools in {scratch} for the estimate "
              f"(each tool's ladder up to {estimate.PROBE_RUN_BUDGET_S:g} s past its start-up)", file=sys.stderr)
        from biossd.measure import rundir

        # Marked and recorded (a SIGKILLed probe's is found by `biossd cleanup`), removed however it ends.
        with rundir.scratch(scratch / "biossd-estimate", unique=True) as work:
            runs = estimate.probe(result.tools, work, int(params.get("seed") or 7), log=lambda line: None)
        emulate = parse.parse_pairs(params.get("emulate") or "", "emulate", [])
        body["estimate"] = estimate.of(result, runs, emulate)
        body["estimate"]["text"] = estimate.summary(body["estimate"], result.time_limit_s)
        print(f"biossd study plan: {body['estimate']['text']}", file=sys.stderr)
    print(json.dumps(body, indent=2))
    return 1 if result.problems else 0


def cmd_study_begin(args: argparse.Namespace) -> int:
    """A study's (or the experiments') begin in its result folder (:func:`biossd.study.lifecycle.begin`)."""
    from biossd.core.owners import ProcessRef
    from biossd.study import lifecycle, outdir

    if ProcessRef.of(args.launcher_pid).start_ticks is None:
        raise UsageError(f"--launcher-pid {args.launcher_pid}: no such process; give the pid of the running Nextflow "
                         "(the session's launcher), which owns its runs")
    record = _json_object(args.record, "--record", "the plan record's parameters")
    session = _json_object(args.session, "--session", "Nextflow's session (id, run_name, start, resumed)")
    provenance = _json_object(args.provenance, "--provenance", "the session's provenance") if args.provenance else None
    try:
        done = lifecycle.begin(Path(args.outdir), record, session, args.launcher_pid, replace=args.replace_results,
                               keep=tuple(Path(k) for k in args.keep), sizing=Path(args.sizing) if args.sizing else None,
                               provenance=provenance)
    except outdir.OutdirError as err:
        raise UsageError(f"--replace_results: {err}") from None
    if done["set_aside"]:
        print(f"biossd study begin: {args.outdir} held another plan's results: moved to {done['set_aside']}")
    return 0


def cmd_study_finish(args: argparse.Namespace) -> int:
    """A study's finish, however it ended: its provenance, its session's row, its outcomes
    (:func:`biossd.study.lifecycle.finish`), then the emulated storage classes of its launcher
    taken down (:func:`biossd.measure.storage.down`). Each step is tried whatever the one before did."""
    from biossd.core.owners import ProcessRef
    from biossd.measure import storage
    from biossd.study import lifecycle

    provenance = _json_object(args.provenance, "--provenance", "the session's provenance")
    failed = []
    try:
        for line in lifecycle.finish(Path(args.outdir), provenance, args.launcher_pid):
            print(f"biossd: {line}")
    except (OSError, lifecycle.LifecycleError) as err:
        failed.append(f"writing the provenance or the session's row failed: {err}")
    try:
        done = storage.down(Path(args.storage_root), ProcessRef.of(args.launcher_pid))
        print("biossd storage down: " + ("; ".join(done) if done else f"no emulated storage under {args.storage_root}"))
    except Exception as err:  # reported, and the exit status says so: a disk may still be mounted
        failed.append(f"biossd storage down failed ({err}); emulated storage may still be mounted: run `biossd cleanup`")
    for line in failed:
        print(f"biossd study finish: {line}", file=sys.stderr)
    return 1 if failed else 0


def cmd_study_firm_up(args: argparse.Namespace) -> int:
    """Of the planned extra repeats (``--tasks``), those of the baseline configurations whose
    speedup is not firm after the runs given (:func:`biossd.analysis.speedup.unfirm`)."""
    import pandas as pd

    from biossd.analysis import speedup
    from biossd.measure import manifest

    tasks = options.json_arg(args.tasks, "--tasks")
    rows = []
    for run in args.runs:
        body = manifest.read_manifest(Path(run))
        labels = body.get("labels") or {}
        if labels.get("probe"):
            continue
        rows.append({"tool": labels.get("tool"), "mem": labels.get("mem"), "scale": int(labels.get("scale", 1)),
                     "storage": labels.get("storage"), "side": labels.get("storage"), "rep": labels.get("rep"),
                     "outcome": body.get("outcome"), "runtime_s": body.get("wall_s"), "flush_s": body.get("flush_s")})
    chosen: set[tuple[str, str, int]] = set()
    if rows:
        table = speedup.speedup_table(pd.DataFrame(rows), args.fast, args.slow)
        unfirm = table[speedup.unfirm(table)]
        chosen = {(r.tool, r.mem, int(r.scale)) for r in unfirm.itertuples()}
    picked = [t for t in tasks if (t["tool"], t["mem"], int(t["scale"])) in chosen]
    for tool, mem, scale in sorted(chosen):
        print(f"biossd study firm-up: {tool} {mem} x{scale}: its speedup's interval straddles a group's bound; "
              f"{sum(1 for t in picked if t['tool'] == tool)} more runs", file=sys.stderr)
    print(json.dumps(picked))
    return 0


def cmd_study_repeats(args: argparse.Namespace) -> int:
    """Of the planned repeats (``--tasks``), those to run after the first repeats given
    (:mod:`biossd.study.repeats`), as JSON; the others listed in ``--not-run``."""
    from biossd.core.files import atomic_write_text
    from biossd.measure import manifest
    from biossd.study import repeats

    planned = options.json_arg(args.tasks, "--tasks")
    if not isinstance(planned, list) or not all(isinstance(m, dict) for m in planned):
        raise options.UsageError("--tasks: a list of the plan's task metas (its repeats after the first)")
    first = []
    for run in args.runs:
        body = manifest.read_manifest(Path(run))
        first.append((body.get("labels") or {}, body.get("outcome")))
    run, not_run = repeats.split(planned, repeats.censored(first))
    atomic_write_text(Path(args.not_run), repeats.not_run_tsv(not_run))
    for meta in not_run:
        print(f"biossd study repeats: {meta.get('tool')} on {meta.get('storage')} at {meta.get('mem')}, scale "
              f"{meta.get('scale')}: repeat {meta.get('rep')} not run ({repeats.NOT_RUN_WHY})", file=sys.stderr)
    print(json.dumps(run))
    return 0


def cmd_study_caps(args: argparse.Namespace) -> int:
    """The plan's tasks with their caps, each tool's floor F (from its floor runs) plus its data
    memory (:mod:`biossd.measure.floors`)."""
    from biossd.measure import floors
    from biossd.study import catalogue
    from biossd.study.plan import parse

    planned = options.json_arg(args.plan, "--plan")
    if not isinstance(planned, dict):
        raise options.UsageError("--plan: an object of the plan's task lists (tasks, firm_tasks, chain_tasks)")
    measured = floors.floors_of(Path(r) for r in args.runs)
    for tool, f in measured.items():
        print(f"biossd study caps: {tool}: F = {f['floor_bytes']:,} bytes (sd {f['floor_sd_bytes']:,.0f}, "
              f"median of {f['floor_runs']} runs)", file=sys.stderr)
    entries = {e.id: e for e in catalogue.load_all()}

    def least(tool: str) -> int:
        return parse.min_cap_bytes(entries[tool]) if tool in entries else parse.MIN_CAP_BYTES

    print(json.dumps({name: floors.with_caps(list(tasks or []), measured, least) for name, tasks in planned.items()}))
    return 0


def cmd_study_sizing_place(args: argparse.Namespace) -> int:
    """Where a study's --sizing auto record lives and whether it is reused (JSON)."""
    from biossd.study.sizing import record as sizing_record

    print(json.dumps(sizing_record.study_place(Path(args.outdir), Path(args.work_dir), args.session,
                                               args.replace_results)))
    return 0


def cmd_study_size(args: argparse.Namespace) -> int:
    """Measure the sizing rule on this host and write its record (:mod:`biossd.study.sizing.procedure`)."""
    from biossd.study import catalogue
    from biossd.study.sizing import procedure, rule
    from biossd.study.sizing import record as sizing_record
    from biossd.study.sizing import reference as sizing_reference

    options.need_root("study size")
    runnable = sorted(e.id for e in catalogue.load_all() if e.kind == "tool" and e.data["status"] == "runnable")
    tools = runnable if args.tools == "all" else [t.strip() for t in args.tools.split(",") if t.strip()]
    if (args.budget is None) == (args.run_budget is None):
        raise UsageError("give the study's budget (--budget 8h: the baseline matrix's worst case on the pair of "
                         "hosts) or the per-run input budget (--run-budget 5s), one of them")
    run_budget_s = args.run_budget if args.run_budget is not None else rule.input_budget_s(args.budget, len(tools))
    which = "--run-budget" if args.run_budget is not None else f"--budget {args.budget:g}s (over {len(tools)} tools)"
    if not rule.MIN_RUN_BUDGET_S <= run_budget_s <= rule.MAX_RUN_BUDGET_S:
        raise UsageError(f"{which}: {run_budget_s:g} s a run is outside {rule.MIN_RUN_BUDGET_S:g} s (below it a "
                         f"run's own start-up jitter decides) to {rule.MAX_RUN_BUDGET_S:g} s (the paper's 72 hours "
                         "a program); give a budget within them")
    scratch = Path(args.scratch)
    if not scratch.is_dir():
        raise UsageError(f"--scratch {scratch}: not a directory; give a directory on the fast class's disk")
    out = Path(args.out)
    if out.is_dir() or (out.exists() and not out.is_file()):
        raise UsageError(f"--out {out} is a directory (or not a file): the record is one JSON file; give its path, "
                         f"e.g. {out / 'sizing.json'}")
    if out.exists() and not args.replace:
        raise UsageError(f"--out {out} exists; give another path or --replace")
    if not out.parent.is_dir():
        raise UsageError(f"--out {out}: its folder {out.parent} does not exist; make it first")
    reference = None
    if args.reference:
        try:
            reference = sizing_reference.of_record(procedure.load(Path(args.reference), "--reference"),
                                                   Path(args.reference), run_budget_s)
        except sizing_record.SizingError as err:
            raise UsageError(str(err)) from None
    print(f"biossd study size: {len(tools)} tools, {run_budget_s:.2f} s a run "
          f"(time limit {rule.time_limit_s(run_budget_s):g} s), in {scratch}", file=sys.stderr)
    try:
        from biossd.measure import rundir

        # Marked and recorded (a SIGKILLed sizing's is found by `biossd cleanup`), removed however it ends.
        with rundir.scratch(scratch / "biossd-sizing", unique=True) as work:
            measured = procedure.measure(tools, run_budget_s, work, args.seed, args.ladder_max or rule.LADDER_MAX,
                                     log=lambda line: print(line, file=sys.stderr, flush=True), reference=reference)
    except sizing_record.SizingError as err:
        raise UsageError(str(err)) from None
    rec = procedure.record(measured, scratch, args.budget, Path(args.reference) if args.reference else None)
    from biossd.study.plan import parse

    entries = {e.id: e for e in catalogue.load_all()}
    too_small = sizing_record.cap_problems(rec, lambda tool: parse.min_cap_bytes(entries[tool]))
    if too_small:
        raise UsageError("biossd study size: " + "; ".join(too_small) + f" (nothing written to {out})")
    sizing_record.write(rec, out)
    print(sizing_record.summary(rec))
    print(f"biossd study size: wrote {out}; a study takes it with --sizing {out}", file=sys.stderr)
    return 0


def cmd_study_harness(args: argparse.Namespace) -> int:
    from biossd.analysis import harness

    try:
        print(harness.summary_text(Path(args.results)))
    except harness.HarnessError as err:
        raise UsageError(str(err)) from None
    return 0


def cmd_experiment_plan(args: argparse.Namespace) -> int:
    from biossd import experiments

    if args.params:
        plan = experiments.plan_from_params(options.json_arg(args.params, "--params"))
    elif not args.experiment:
        raise UsageError("give --experiment NAME[,NAME] (or --params, as the workflow does)")
    else:
        classes = [c.strip() for c in args.classes.split(",") if c.strip()]
        plan = experiments.plan(args.experiment, args.size, classes, args.host, args.seed)
    print(json.dumps(plan, indent=2))
    return 0


def cmd_experiment_run(args: argparse.Namespace) -> int:
    from biossd import experiments

    task = options.json_arg(args.task, "--task")
    storage = options.json_arg(args.storage, "--storage") if args.storage else {}
    owner = options.owner(args)
    from biossd.measure import rundir

    try:
        with rundir.scratch(Path(args.scratch), unique=True) as scratch:
            record = experiments.run_task(task, scratch, Path(args.out),
                                          Path(args.device_record) if args.device_record else None, storage, owner,
                                          Path(args.input) if args.input else None)
    except experiments.Interrupted as intr:
        print(f"biossd experiment run: interrupted by signal {intr.signum}; the task's partial results, "
              "servers, mounts and devices were removed", file=sys.stderr)
        return 128 + intr.signum
    print(f"biossd experiment run: {task['experiment']} {task['point']} {task['storage']} #{task['rep']}: "
          f"{len(record['runs'])} runs -> {args.out}", file=sys.stderr)
    return 0


def cmd_experiment_table(args: argparse.Namespace) -> int:
    from biossd import experiments
    from biossd.core.files import write_frame

    roots = [Path(p) for p in args.results]
    names = experiments.names_of(args.experiment) if args.experiment else [
        n for n in experiments.NAMES if experiments.point_dirs(roots, n)]
    if not names:
        print("biossd experiment table: no experiment's task directory found", file=sys.stderr)
        return 1
    for name in names:
        frame = experiments.table(name, roots)
        path = experiments.table_path(Path(args.out or roots[0]), name)
        path.parent.mkdir(parents=True, exist_ok=True)
        write_frame(frame, path)
        print(f"biossd experiment table: {name}: {len(frame)} runs -> {path}", file=sys.stderr)
    return 0


def cmd_experiment_list(args: argparse.Namespace) -> int:
    from biossd import experiments

    for name in experiments.NAMES:
        spec = experiments.load_spec(name)
        subs = ", ".join(f"{t} for {s}" for t, s in experiments.substitutes(spec).items()) or "none"
        print(f"{name}\t{spec['title']}\tafter {spec['source']}\tsubstitutes: {subs}")
    return 0


def _register_repeats(study_p: argparse._SubParsersAction) -> None:
    p = study_p.add_parser("repeats", help="of the planned repeats, those to run after the first repeats (a "
                                           "configuration whose first repeat reached the time limit is not repeated)")
    p.add_argument("--tasks", required=True, metavar="JSON|@FILE", help="the plan's repeats after the first (metas)")
    p.add_argument("--not-run", required=True, metavar="FILE", help="where the repeats not run are listed (TSV)")
    p.add_argument("runs", nargs="*", help="the first repeats' run directories")
    p.set_defaults(func=cmd_study_repeats)


def _register_size(study_p: argparse._SubParsersAction) -> None:
    from biossd.study.sizing import rule

    p = study_p.add_parser("size", help="measure the sizing rule on this host (inputs, heaps, M, D, floors for its own "
                                        "capped runs, time limit) and write sizing.json for --sizing")
    p.add_argument("--tools", default="all", help="catalogue ids, comma-separated, or all (the runnable ones)")
    p.add_argument("--budget", type=options.duration, help="the study's budget on the pair of hosts, e.g. 8h")
    p.add_argument("--run-budget", type=options.duration, help="or the time an input may add to a run, e.g. 5s")
    p.add_argument("--scratch", default="/var/tmp", help="a directory on the fast class's disk (default: /var/tmp)")
    p.add_argument("--out", required=True, help="the sizing record to write (JSON)")
    p.add_argument("--replace", action="store_true", help="replace --out if it exists")
    p.add_argument("--seed", type=int, default=7, help="seed of the synthetic inputs")
    p.add_argument("--ladder-max", help="the largest input the ladder tries (default: the rule's, 256M)")
    p.add_argument("--reference", metavar="RECORD", help="a record of the same budget whose inputs a tool run within "
                   f"{rule.SAME_SPEED_WITHIN:g}x of its speed keeps (docs/study.md, 'A sizing that jitter cannot move')")
    p.set_defaults(func=cmd_study_size)


def _register_sizing_place(study_p: argparse._SubParsersAction) -> None:
    p = study_p.add_parser("sizing-place", help="where a study's --sizing auto record lives, and whether an "
                                                 "earlier session's is reused (JSON: record, log, reuse)")
    p.add_argument("--outdir", required=True, help="the study's result folder")
    p.add_argument("--work-dir", required=True, help="Nextflow's work directory")
    p.add_argument("--session", required=True, help="Nextflow's session id")
    p.add_argument("--replace-results", action="store_true", help="the study replaces the folder's results")
    p.set_defaults(func=cmd_study_sizing_place)


def register(sub: argparse._SubParsersAction) -> None:
    """This room's commands and their options."""
    layout_p = sub.add_parser("layout", help="the result layout").add_subparsers(dest="layout_cmd", required=True)
    p = layout_p.add_parser("assemble", help="lay run directories out as a result set (links)")
    p.add_argument("dest")
    p.add_argument("--run", action="append", default=[], metavar="RELPATH=DIR",
                   help="a run directory and its layout path (the study plan's publish)")
    p.add_argument("--device", action="append", default=[], metavar="SIDE=FILE", help="<host>-<class>=device.json")
    p.add_argument("--file", action="append", default=[], metavar="RELPATH=FILE", help="another file to copy in")
    p.set_defaults(func=cmd_layout_assemble)

    study_p = sub.add_parser("study", help="the study's experiment matrix").add_subparsers(dest="study_cmd", required=True)
    p = study_p.add_parser("plan", help="the runs the study's parameters ask for, and every problem with them (JSON)")
    p.add_argument("--params", required=True, help="the study's params as a JSON object (study/nextflow.config)")
    p.add_argument("--stub", action="store_true", help="a -stub-run: every tool entry, no device checks")
    p.add_argument("--resumed", action="store_true",
                   help="the study resumes an earlier session (-resume): its --outdir may hold another plan's runs")
    p.add_argument("--estimate", action="store_true",
                   help="probe each tool briefly on this host (root) and estimate the study's duration per class")
    p.add_argument("--before-sizing", action="store_true",
                   help="the check of a --sizing auto study before it sizes: the space its sizes need is checked "
                        "once the record has them")
    p.add_argument("--scratch", help="where the probe runs (default: --params' scratch_dir, else the temporary directory)")
    p.set_defaults(func=cmd_study_plan)
    _register_lifecycle(study_p)
    p = study_p.add_parser("firm-up", help="of the planned extra repeats, those of the baseline configurations whose "
                                           "speedup's interval straddles a group's bound after the runs given (JSON)")
    p.add_argument("--tasks", required=True, metavar="JSON|@FILE", help="the plan's firm_tasks")
    p.add_argument("--fast", required=True, help="the fast storage class")
    p.add_argument("--slow", required=True, help="the slow storage class")
    p.add_argument("runs", nargs="*", help="run directories of the baseline configurations")
    p.set_defaults(func=cmd_study_firm_up)
    p = study_p.add_parser("caps", help="the plan's tasks with their caps: each tool's floor, the median of its floor "
                                        "runs in this session, plus its data memory (JSON)")
    p.add_argument("--plan", required=True, metavar="JSON|@FILE",
                   help="the plan's task lists to cap: {\"tasks\": [...], \"firm_tasks\": [...], \"chain_tasks\": [...]}")
    p.add_argument("runs", nargs="*", help="the floor runs' directories (the plan's floor_tasks)")
    p.set_defaults(func=cmd_study_caps)
    _register_sizing_place(study_p)
    _register_size(study_p)
    _register_repeats(study_p)
    p = study_p.add_parser("harness", help="the profiled tasks' time: the tools' own and the harness around them")
    p.add_argument("results", help="the study's --outdir (its pipeline_info/trace-*.txt, one per session)")
    p.set_defaults(func=cmd_study_harness)

    exp_p = sub.add_parser("experiment", help="the four related experiments").add_subparsers(
        dest="exp_cmd", required=True)
    p = exp_p.add_parser("plan", help="the tasks of one or more experiments at a size (JSON)")
    p.add_argument("--experiment", help="NAME[,NAME] or all")
    p.add_argument("--size", default="test", help="tiny, test or full (study/experiments/<id>.yaml sizes)")
    p.add_argument("--params", help="the workflow's params (JSON or @FILE): checked as the study's, then planned")
    p.add_argument("--classes", default="ssd,hdd", help="storage classes, comma-separated")
    p.add_argument("--host", default=platform.node(), help="host name of the result layout")
    p.add_argument("--seed", type=int, default=1, help="seed of the synthetic inputs")
    p.set_defaults(func=cmd_experiment_plan)
    p = exp_p.add_parser("run", help="run one planned task in a scratch directory of its own (made, marked, removed)")
    p.add_argument("--task", required=True, help="the task (JSON, or @FILE) from `biossd experiment plan`")
    options.add_scratch_option(p, "task")
    p.add_argument("--out", required=True, help="the task directory to write (must not exist)")
    p.add_argument("--device-record", help="`biossd device characterize` record of the class's device")
    p.add_argument("--storage", help="the class's entry of `biossd storage up` (JSON or @FILE)")
    p.add_argument("--input", help="the task's input made by `biossd data synth` (default: synthesized in scratch)")
    options.add_owner_options(p, "this task")
    p.set_defaults(func=cmd_experiment_run)
    p = exp_p.add_parser("table", help="each experiment's table from result folders (experiments/<id>.csv)")
    p.add_argument("results", nargs="+", help="result folders")
    p.add_argument("--experiment", help="NAME[,NAME] (default: every experiment found)")
    p.add_argument("--out", help="result folder to write experiments/<id>.csv into (default: the first)")
    p.set_defaults(func=cmd_experiment_table)
    exp_p.add_parser("list", help="the experiments, their seeds and substitutes").set_defaults(func=cmd_experiment_list)


def _register_lifecycle(study_p: argparse._SubParsersAction) -> None:
    """``biossd study begin`` and ``biossd study finish``, which the Nextflow lifecycle calls."""
    p = study_p.add_parser("begin", help="a study's begin in its result folder: the plan record (another plan's results "
                                         "moved aside with --replace-results), the sizing record, the session's row")
    p.add_argument("--outdir", required=True, help="the study's result folder")
    p.add_argument("--record", required=True, help="the plan's record as JSON (what pipeline_info/plan.json holds)")
    p.add_argument("--session", required=True, help="Nextflow's session as JSON: {id, run_name, start, resumed}")
    p.add_argument("--launcher-pid", type=int, required=True, help="the Nextflow process (its runs' owner)")
    p.add_argument("--replace-results", action="store_true", help="move another plan's results aside first")
    p.add_argument("--keep", action="append", default=[],
                   help="a folder the move must not carry away (the launch or work directory); repeatable")
    p.add_argument("--sizing", help="the sizing record the plan took, kept as pipeline_info/sizing.json")
    p.add_argument("--provenance", help="the session's provenance as JSON, as far as it is known at the start "
                                        "(command line, profile, params): pipeline_info/provenance.json, begun")
    p.set_defaults(func=cmd_study_begin)
    p = study_p.add_parser("finish", help="a study's finish, however it ended: provenance, the session's row, the "
                                          "outcomes, and its emulated storage taken down")
    p.add_argument("--outdir", required=True, help="the study's result folder")
    p.add_argument("--provenance", required=True, help="the session's provenance as JSON (Nextflow's workflow fields)")
    p.add_argument("--launcher-pid", type=int, required=True, help="the Nextflow process (its runs' owner)")
    p.add_argument("--storage-root", required=True, help="--storage_root: where its emulated classes are mounted")
    p.set_defaults(func=cmd_study_finish)
