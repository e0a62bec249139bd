"""`biossd pipeline`: profile every task of your own Nextflow pipeline, and report on it."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from biossd.cli import options
from biossd.cli.options import UsageError


def cmd_pipeline_task(args: argparse.Namespace) -> int:
    """One task of a user's pipeline under the profiler (the profiling config's task shell); exits
    with the task's own status (:func:`biossd.measure.own_pipeline.run.run_task`)."""
    from biossd.measure.own_pipeline import run

    command = args.command[1:] if args.command[:1] == ["--"] else args.command
    try:
        return run.run_task(args.task, command, options.owner(args), getattr(args, "run_handed_off", None))
    except run.TaskRefused as err:
        raise UsageError(str(err)) from None


def cmd_pipeline_lead(args: argparse.Namespace) -> int:
    """Hold the host lock for a Nextflow session's tasks, side by side, until Nextflow ends
    (started by the session's first task: biossd.measure.own_pipeline.session)."""
    from biossd.measure.own_pipeline import session as pipeline_session

    owner = options.owner(args, "no session was led")
    if owner is None:
        raise UsageError("biossd pipeline lead: --owner-pid (the Nextflow process) is required")
    return pipeline_session.run_leader(args.session, owner, Path(args.mark) if args.mark else None,
                                      getattr(args, "run_handed_off", None))


def cmd_pipeline_report(args: argparse.Namespace) -> int:
    from biossd.analysis import own_pipeline
    from biossd.outputs import own_pipeline_report

    targets = own_pipeline.default_targets(args.instance) + list(args.target)
    rep = own_pipeline.report(Path(args.outdir), targets, [Path(args.study)] if args.study else None,
                              args.instance_usd_per_hour, args.instance)
    written = own_pipeline_report.write(rep, Path(args.outdir) / own_pipeline.REPORT_DIR)
    for run_dir, why in rep.skipped:
        print(f"biossd pipeline report: skipped {run_dir}: {why}", file=sys.stderr)
    cols = ["process", "tasks", "runtime_s", "cpu_share", "peak_rss_kib", *("Riops", "Wiops", "Pfault", "CAR"), "pattern"]
    print(rep.processes[cols].to_string(index=False, float_format=lambda v: f"{v:.3g}"))
    print()
    money = [c for c in ("volume_usd_per_run", "total_usd_per_run") if c in rep.pipeline]
    print(rep.pipeline[["target", "measured_wall_s", "predicted_wall_s", "speedup_vs_measured", *money]].to_string(
        index=False, float_format=lambda v: f"{v:.3g}", na_rep="-"))
    print()
    for c in rep.choices.itertuples():
        said = (f"{c.choice} ({c.choice_s:.3g} s; fastest {c.fastest}, {c.fastest_s:.3g} s)" if isinstance(c.choice, str)
                else f"none: {c.why}")
        print(f"rent for {c.scope}: {said}")
    print()
    if rep.findings.empty:
        print("findings: none (no rule fired)")
    for f in rep.findings.itertuples():
        print(f"{f.process}  {f.code} [{f.severity}] {f.name}: {f.finding}\n    do: {f.advice}")
    print(f"biossd pipeline report: {len(written)} files in {Path(args.outdir) / own_pipeline.REPORT_DIR}", file=sys.stderr)
    return 0


#: This room's command (the first word of its command lines).
COMMAND = "pipeline"


def register(sub: argparse._SubParsersAction) -> None:
    """This room's commands and their options."""
    pipe_p = sub.add_parser(COMMAND, help="profile your own Nextflow pipeline (nextflow/conf/profile_pipeline.config)")
    pipe_sub = pipe_p.add_subparsers(dest="pipeline_cmd", required=True)
    p = pipe_sub.add_parser("task", help="run one task's .command.sh under the profiler (the config's task shell)")
    p.add_argument("--task", required=True, help="the task's description, base64 JSON (the config writes it)")
    options.add_owner_options(p, "the task")
    p.add_argument("command", nargs=argparse.REMAINDER, help="-- /bin/bash -ue .command.sh")
    p.set_defaults(func=cmd_pipeline_task)
    p = pipe_sub.add_parser("lead", help="hold the host lock for a Nextflow session's tasks side by side "
                            "(the session's first task starts it)")
    p.add_argument("--session", required=True, help="the Nextflow session (its process: pid-start)")
    p.add_argument("--mark", help="the session's leader mark, removed when the leader ends")
    options.add_owner_options(p, "the session", " (the Nextflow process: the lock is let go when it ends)")
    p.set_defaults(func=cmd_pipeline_lead)
    p = pipe_sub.add_parser("report", help="per process: features, I/O pattern, predicted speedup on target devices, "
                                           "and findings: what to change")
    p.add_argument("outdir", help="the --biossd_outdir of a profiled pipeline run")
    p.add_argument("--study", help="a study result set: its pattern centroids instead of the paper's")
    p.add_argument("--target", action="append", default=[], metavar="DEVICE",
                   help="a target device besides the default ones (the paper's SSD and HDD, an NVMe drive, every "
                        "cloud volume of study/reference/cloud_storage.csv)")
    p.add_argument("--instance_usd_per_hour", type=float, metavar="USD",
                   help="your machine's price per hour: each target's cost per run adds the machine's time "
                        "(without it, only the cloud volume's own cost, from study/reference/cloud_prices.csv)")
    p.add_argument("--instance", metavar="TYPE",
                   help="the instance the cloud volumes are attached to (study/reference/cloud_instances.csv, e.g. "
                        "m6id.large): its limits in front of every volume, and its own NVMe drive among the choices")
    p.set_defaults(func=cmd_pipeline_report)

