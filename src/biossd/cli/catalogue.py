"""`biossd catalogue`, `chain` and `quality`: a tool's command, its staged input, one study run, a
chained pipeline's steps, a run's quality score."""

from __future__ import annotations

import argparse
import json
import signal
import sys
from pathlib import Path

from biossd.cli import options
from biossd.cli.options import UsageError
from biossd.core import signals


def cmd_catalogue_command(args: argparse.Namespace) -> int:
    from biossd.study import catalogue, staging

    if args.container and not args.bind:
        raise UsageError("--container needs --bind DIR (the run's scratch)")
    argv = staging.command_argv(catalogue.get(args.tool), options.labels(args.values), Path(args.bind or "."),
                                options.mem_bytes(args.mem), args.container, options.settings(args.tool, args.set),
                                tmp_in_scratch=False)  # prints the tool's command; no scratch is made
    options.print_argv(argv, args.print0)
    return 0


def cmd_catalogue_stage(args: argparse.Namespace) -> int:
    from biossd.study import catalogue, staging

    entry = catalogue.get(args.tool)
    mem = options.mem_bytes(args.mem)
    with options.held_host_lock(args, f"biossd catalogue stage {entry.id} (copying its input into {args.scratch})"):
        argv = staging.stage(entry, Path(args.input), Path(args.scratch), mem, args.container,
                             options.settings(entry.id, args.set), create_scratch=not args.existing_scratch)
    options.print_argv(argv, args.print0)
    return 0


def cmd_catalogue_prepare(args: argparse.Namespace) -> int:
    from biossd.study import catalogue, staging

    with options.held_host_lock(args, f"biossd catalogue prepare {args.tool} (writing {args.out})"):
        record = staging.prepare(catalogue.get(args.tool), Path(args.input), Path(args.out))
    print(record["input_bytes"])
    return 0


def cmd_chain_run(args: argparse.Namespace) -> int:
    """A chained pipeline in one process (:mod:`biossd.measure.chainrun`): its scratch made, marked
    and removed here, each step staged (under the host lock) and profiled in it."""
    # Imported under the host lock, as `biossd catalogue run`'s: cold after a cache drop, they
    # read from a disk another run may be measuring.
    with options.held_host_lock(args, "biossd chain run (starting)"):
        from biossd.measure import chainrun, profile
        from biossd.study import catalogue, chain

        ch = chain.of(catalogue.get(args.pipeline))
    steps = chainrun.planned_steps(ch, options.json_arg(args.steps, "--steps"))
    for step in steps:  # every setting is one its tool declares
        options.settings(step.tool, [f"{k}={v}" for k, v in step.settings.items()])
    if options.parent_gone(args, "biossd chain run"):
        return profile.signal_exit_code(signal.SIGTERM)
    base = options.profile_request(args, [], None, Path(args.out).absolute())
    result = chainrun.run(ch, steps, Path(args.input), Path(args.scratch), Path(args.out), base,
                          container=args.container, staging_lock=lambda what: options.held_host_lock(args, what))
    if args.versions:
        from biossd.core.files import atomic_write_text

        atomic_write_text(Path(args.versions), "".join(f"{tool}: {version}\n"
                                                       for tool, version in result.versions().items()))
    if result.signum is not None:
        return profile.signal_exit_code(result.signum)
    signals.ignored_until_exit()
    ran = ", ".join(f"{r.step.name} {r.outcome}" for r in result.steps)
    print(f"biossd chain run: {ch.pipeline}: {ran} -> {args.out}", file=sys.stderr)
    return 0


def cmd_catalogue_image(args: argparse.Namespace) -> int:
    from biossd.study import catalogue
    from biossd.study.catalogue import containers

    entry = catalogue.get(args.tool)
    if not containers.built(entry, args.engine):
        print(f"biossd catalogue image: {entry.id}'s {args.engine} image is not built here", file=sys.stderr)
        return 1
    print(containers.image_record(entry, args.engine))
    return 0


def cmd_catalogue_version(args: argparse.Namespace) -> int:
    from biossd.study import catalogue
    from biossd.study.catalogue import containers

    entry = catalogue.get(args.tool)
    try:
        version = containers.installed_version(entry, args.container)
    except containers.ContainerError as err:
        print(f"biossd catalogue version: {err}", file=sys.stderr)
        return 1
    if version != str(entry.data["version"]):
        print(f"biossd catalogue version: warning: {args.tool} is {version} here, the catalogue "
              f"pins {entry.data['version']}", file=sys.stderr)
    print(version)
    return 0


def cmd_catalogue_status(args: argparse.Namespace) -> int:
    from biossd.study.catalogue import status

    rows = status.status_table(run_smoke=not args.no_smoke)
    if args.json:
        print(json.dumps([{k: r.get(k) for k in status.STATUS_KEYS} for r in rows], indent=2))
    else:
        print(status.format_table(rows))
    return 0


def cmd_catalogue_install(args: argparse.Namespace) -> int:
    from biossd.study import catalogue
    from biossd.study.catalogue import install

    entries = catalogue.load_all() if not args.tools else [catalogue.get(t) for t in args.tools]
    result = install.install(entries)
    print(f"installed: {', '.join(result['installed']) or 'nothing new'}")
    for line in result["skipped"]:
        print(f"not installable here: {line}", file=sys.stderr)
    return 0


def cmd_catalogue_build(args: argparse.Namespace) -> int:
    from biossd.study import catalogue
    from biossd.study.catalogue import containers

    entries = [catalogue.get(t) for t in args.tools] if args.tools else [
        e for e in catalogue.load_all() if e.kind == "tool" and e.data["status"] == "runnable"]
    failed = 0
    for entry in entries:
        try:
            path = containers.build(entry, args.engine)
            print(f"{entry.id}: {containers.image_ref(entry)} -> {path}")
        except containers.ContainerError as err:
            print(f"biossd catalogue build: {entry.id}: {err}", file=sys.stderr)
            failed += 1
    return 1 if failed else 0


def cmd_quality(args: argparse.Namespace) -> int:
    from biossd.measure import toolrun
    from biossd.study import catalogue

    print(f"biossd quality: {toolrun.score(catalogue.get(args.tool), Path(args.scratch), Path(args.run))}")
    return 0


def cmd_catalogue_run(args: argparse.Namespace) -> int:
    """One study run in one process (:func:`biossd.measure.toolrun.run`)."""
    # Imported under the host lock: cold after the last run's cache drop, they read Python's
    # libraries from disk, which on a shared disk must not fall inside another run's window.
    with options.held_host_lock(args, "biossd catalogue run (starting)"):
        from biossd.measure import profile, toolrun
        from biossd.study import catalogue

        entry = catalogue.get(args.tool)
    mem = options.mem_bytes(args.mem)
    settings = options.settings(entry.id, args.set)
    if options.parent_gone(args, "biossd catalogue run"):
        return profile.signal_exit_code(signal.SIGTERM)
    base = options.profile_request(args, [], mem, Path(args.out).absolute())
    done = toolrun.run(entry, Path(args.input), Path(args.scratch), base, mem_bytes=mem, settings=settings,
                       container=args.container, capped=not args.uncapped, record_start=True,
                       staging_lock=lambda what: options.held_host_lock(args, what), redo_if_busy=args.redo_if_busy)
    if done.signum is not None:
        return profile.signal_exit_code(done.signum)
    print(f"biossd catalogue run: quality: {done.quality}", file=sys.stderr)
    signals.ignored_until_exit()
    return 0


def register(sub: argparse._SubParsersAction) -> None:
    """This room's commands and their options."""
    chain_p = sub.add_parser("chain", help="a pipeline's steps run chained (Fig. 3)").add_subparsers(
        dest="chain_cmd", required=True)
    p = chain_p.add_parser("run", help="a chained pipeline in one process: its steps staged one after another "
                                       "in one marked scratch, each profiled; the scratch removed")
    p.add_argument("pipeline")
    p.add_argument("--input", required=True, help="directory of the chain's input kind (biossd data synth)")
    options.add_scratch_option(p, "chain")
    p.add_argument("--out", required=True, help="directory to write the steps' run directories into (<NN-tool>/)")
    p.add_argument("--steps", required=True, metavar="JSON|@FILE",
                   help="the plan's steps: [{index, name, tool, mem, settings}, ...] (`biossd study tasks`)")
    p.add_argument("--container", choices=options.ENGINES, help="run each step's tool in its container")
    p.add_argument("--versions", metavar="FILE", help="write each tool's version there, one `tool: version` a line")
    options.add_hold_host_lock_option(p, "stage each step")
    options.add_profile_options(p, evict_default="run")
    p.set_defaults(func=cmd_chain_run)

    _register_catalogue(sub)


def _register_catalogue(sub: argparse._SubParsersAction) -> None:
    """``biossd catalogue`` and ``biossd quality``."""
    cat_p = sub.add_parser("catalogue", help="the tool catalogue").add_subparsers(dest="cat_cmd", required=True)
    p = cat_p.add_parser("command", help="print a tool's command line, shell-quoted")
    p.add_argument("tool")
    p.add_argument("values", nargs="*", metavar="NAME=VALUE")
    p.add_argument("--mem", help="the run's memory cap (a container engine enforces it)")
    options.add_set_option(p)
    p.add_argument("--print0", action="store_true",
                   help="print the arguments NUL-separated (for `mapfile -d ''`), not shell-quoted")
    p.add_argument("--container", choices=options.ENGINES,
                   help="run the tool in its container (paths under --bind are rewritten for it)")
    p.add_argument("--bind", metavar="DIR", help="the host directory the container sees at /mnt/0")
    p.set_defaults(func=cmd_catalogue_command)
    p = cat_p.add_parser("stage", help="stage a run: copy its input into scratch, prepare, print the argv")
    p.add_argument("tool")
    p.add_argument("--input", required=True, help="directory of the input kind (biossd data synth)")
    p.add_argument("--scratch", required=True, help="the run's scratch directory, on the device under study")
    p.add_argument("--existing-scratch", action="store_true",
                   help="the scratch must exist (a workflow made and marked it); never make it here")
    p.add_argument("--mem", help="the run's memory cap (a container engine enforces it)")
    options.add_set_option(p)
    p.add_argument("--container", choices=options.ENGINES, help="run the tool in its container")
    p.add_argument("--print0", action="store_true", help="NUL-separated argv (for `mapfile -d ''`)")
    options.add_hold_host_lock_option(p, "copy")
    options.add_owner_options(p, "this staging")
    p.set_defaults(func=cmd_catalogue_stage)
    p = cat_p.add_parser("run", help="one run of a tool in one process: stage its prepared input into a "
                                     "marked scratch, profile it there, score it, remove the scratch")
    p.add_argument("tool")
    p.add_argument("--input", required=True, help="the input, prepared for the tool (biossd catalogue prepare)")
    options.add_scratch_option(p, "run")
    p.add_argument("--out", required=True, help="run directory to write")
    p.add_argument("--mem", required=True, help="the run's memory: the tool's settings follow it, and it is the cap")
    p.add_argument("--uncapped", action="store_true",
                   help="no memory cap (a probe under valgrind); the tool's settings still follow --mem")
    options.add_set_option(p)
    p.add_argument("--container", choices=options.ENGINES, help="run the tool in its container")
    p.add_argument("--no-redo-if-busy", dest="redo_if_busy", action="store_false",
                   help="keep a run whose host was busy outside it (by default it is run again once, and the busy "
                        "attempt's manifest kept in the new run: docs/study.md, 'A quiet host, checked')")
    options.add_hold_host_lock_option(p, "stage")
    options.add_profile_options(p, evict_default="run")
    p.set_defaults(func=cmd_catalogue_run)
    p = cat_p.add_parser("prepare", help="prepare an input for a tool once (links + its indexes), for every run "
                                         "of it to stage; print the input's bytes")
    p.add_argument("tool")
    p.add_argument("--input", required=True, help="directory of the input kind (biossd data synth)")
    p.add_argument("--out", required=True, help="the prepared directory to write (must not exist)")
    options.add_hold_host_lock_option(p, "write")
    options.add_owner_options(p, "this work")
    p.set_defaults(func=cmd_catalogue_prepare)
    p = cat_p.add_parser("image", help="print a tool's image reference and id (for the run record)")
    p.add_argument("tool")
    p.add_argument("--engine", choices=options.ENGINES, default="charliecloud")
    p.set_defaults(func=cmd_catalogue_image)
    p = cat_p.add_parser("status", help="what this machine can do with each entry (checked)")
    p.add_argument("--json", action="store_true", help="a list of objects instead of a table")
    p.add_argument("--no-smoke", action="store_true", help="skip the smoke tests (their columns are null)")
    p.set_defaults(func=cmd_catalogue_status)
    p = cat_p.add_parser("install", help="install the runnable tools natively (apt, Maven)")
    p.add_argument("tools", nargs="*", help="catalogue ids (default: all)")
    p.set_defaults(func=cmd_catalogue_install)
    p = cat_p.add_parser("build", help="build the runnable tools' containers (here: podman + Charliecloud)")
    p.add_argument("tools", nargs="*", help="catalogue ids (default: every runnable tool)")
    p.add_argument("--engine", choices=options.ENGINES, default="charliecloud",
                   help="charliecloud (podman build, unpacked), docker (podman's image loaded into the engine; docker "
                        "build where podman is missing) or apptainer (apptainer build)")
    p.set_defaults(func=cmd_catalogue_build)
    p = cat_p.add_parser("version", help="print the installed version of a tool")
    p.add_argument("tool")
    p.add_argument("--container", choices=options.ENGINES, help="ask the tool in its container")
    p.set_defaults(func=cmd_catalogue_version)

    p = sub.add_parser("quality", help="score a run's output against its input's truth (Fig. 1(b))")
    p.add_argument("tool")
    p.add_argument("--scratch", required=True, help="the run's scratch directory (its output and truth)")
    p.add_argument("--run", required=True, help="the run directory (gets quality.json)")
    p.set_defaults(func=cmd_quality)

