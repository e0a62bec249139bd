"""The ``biossd`` command line: thin wrappers over the library modules."""

from __future__ import annotations

import signal
import sys


def _terminate_as_interrupt(signum: int, _frame: object) -> None:
    raise KeyboardInterrupt(signum)


# As early as the command allows: SIGINT and SIGTERM unwind like Ctrl-C, so every command's
# clean-up (finally, context managers) runs and it exits 128+signal; commands that measure
# install their own handlers. (A signal in the interpreter's own start, before this line, kills
# it by the signal, which a shell reports as the same 128+signal.)
signal.signal(signal.SIGTERM, _terminate_as_interrupt)
signal.signal(signal.SIGINT, _terminate_as_interrupt)

import argparse  # noqa: E402
import contextlib  # noqa: E402
import json  # noqa: E402
import logging  # noqa: E402
import os  # noqa: E402
import platform  # noqa: E402
from pathlib import Path  # noqa: E402
import time  # noqa: E402
from typing import Any  # noqa: E402

from biossd import __version__
from biossd.core.errors import BiossdError


class UsageError(BiossdError):
    """A command given what it cannot use (a missing option, a malformed value)."""


#: Container engines (biossd.study.containers.ENGINES, not imported here: the CLI starts fast).
_ENGINES = ("charliecloud", "apptainer", "docker")


def _labels(pairs: list[str]) -> dict[str, str]:
    labels = {}
    for pair in pairs:
        key, sep, value = pair.partition("=")
        if not sep or not key:
            raise UsageError(f"expected KEY=VALUE (as --label, --run, --device and --file take), got {pair!r}")
        if key in labels:
            raise UsageError(f"{key} is given twice ({labels[key]!r} and {value!r})")
        labels[key] = value
    return labels


def _owner(args: argparse.Namespace, what: str = "nothing was run"):
    """Who the command works for: ``--owner-pid`` (a process that must exist), else the owner a
    workflow hands its tasks in the environment (:data:`biossd.core.owners.OWNER_ENV`, this host
    and boot only), else nobody. An owner already gone refuses the command."""
    from biossd.core import owners

    if args.owner_pid:
        owner = owners.ProcessRef.of(args.owner_pid, args.owner_label or "")
        if owner.start_ticks is None:
            raise UsageError(f"--owner-pid {args.owner_pid}: no such process; {what}")
        return owner
    owner = owners.from_environment()
    if owner is not None and owner.start_ticks is None:
        raise UsageError(f"the owner in ${owners.OWNER_ENV} ({owner.describe()}) is gone; {what}")
    return owner


def _add_owner_options(p: argparse.ArgumentParser, works_for: str = "this work",
                       dies: str = "") -> None:
    """``--owner-pid`` and ``--owner-label``, declared once for every command that works for
    another process (:func:`_owner` validates them)."""
    p.add_argument("--owner-pid", type=int, metavar="PID", help=f"the process {works_for} is for{dies}")
    p.add_argument("--owner-label", metavar="TEXT", help="what the owner is, for records and messages")


def _profile_request(args: argparse.Namespace, command: list[str], mem_bytes: int | None, out: Path):
    """The profiler's request from the options :func:`_add_profile_options` declares."""
    from biossd.core.units import parse_size
    from biossd.measure import profile

    return profile.ProfileRequest(
        argv=command, out_dir=out, mem_bytes=mem_bytes, labels=_labels(args.label),
        cap_backend=args.cap_backend, drop_caches=args.drop_caches, overwrite=args.overwrite,
        devices=args.device, sample_interval_s=args.sample_interval,
        swap_bytes=parse_size(args.swap) if args.swap else None,
        swap_dir=Path(args.swap_dir) if args.swap_dir else None,
        blocktrace=args.blocktrace, perf=args.perf, cachegrind=args.cachegrind,
        timeout_s=args.timeout, tool_version=args.tool_version, image=args.image,
        device_record=Path(args.device_record).absolute() if args.device_record else None,
        wait_for_lock=args.wait, owner=_owner(args), no_swap=args.no_swap, group=args.group,
    )


def _parent_gone(args: argparse.Namespace, name: str) -> bool:
    """``--die-with-parent``: SIGTERM from the kernel when the process that started this one
    dies, even by SIGKILL (a concurrent group's leader); armed here, not in the parent's fork,
    and checked once armed: a parent already gone means no run."""
    if not args.die_with_parent:
        return False
    from biossd.core.owners import dies_with_parent

    parent = os.getppid()
    dies_with_parent(signal.SIGTERM)()
    if os.getppid() != parent or parent == 1:
        print(f"{name}: the process that started it is gone; nothing was run", file=sys.stderr)
        return True
    return False


def _profile(request, name: str) -> tuple[dict[str, Any] | None, int | None]:
    """Run the profiler: ``(manifest, None)``, or ``(None, signal)`` when a signal stopped the
    run (said on stderr)."""
    from biossd.measure import manifest, profile

    try:
        body = profile.run(request)
    except profile.Interrupted as intr:
        owner = request.owner
        why = f"its owner {owner.describe()} is gone" if owner is not None and not owner.alive() else intr
        print(f"{name}: {why}; the run was stopped and nothing of it was kept", file=sys.stderr)
        return None, intr.signum
    except KeyboardInterrupt:
        # A signal in the instant after the run was published: the run is complete, a result.
        if not manifest.is_complete(request.out_dir):
            raise
        body = manifest.read_manifest(request.out_dir)
    print(f"{name}: outcome {body['outcome']} (exit {body['exit_code']}) in "
          f"{body['wall_s']:.2f} s; manifest {request.out_dir / 'run.json'}", file=sys.stderr)
    return body, None


def _result_kept() -> None:
    """The run is complete: a signal from now until exit (Python restores the default handlers
    while it shuts down, where SIGINT would kill it) does not turn a result into a failure."""
    for signum in (signal.SIGINT, signal.SIGTERM):
        signal.signal(signum, signal.SIG_IGN)


def cmd_profile(args: argparse.Namespace) -> int:
    from biossd.measure import profile

    command = args.command[1:] if args.command[:1] == ["--"] else args.command
    if _parent_gone(args, "biossd profile"):
        return profile.signal_exit_code(signal.SIGTERM)
    request = _profile_request(args, command, _mem_bytes(args.mem), Path(args.out))
    _, signum = _profile(request, "biossd profile")
    if signum is not None:
        return profile.signal_exit_code(signum)
    _result_kept()
    return 0


def cmd_features(args: argparse.Namespace) -> int:
    from biossd.features import extract as features
    from biossd.features import normalize
    from biossd.measure import manifest

    run_dirs = features.find_run_dirs(Path(p) for p in args.run_dirs)
    if not run_dirs:
        print("biossd features: no complete run directory (with run.json) found", file=sys.stderr)
        return 1
    failures: list[tuple[Path, str]] = []
    devices = {**features.side_device_records(Path(p) for p in args.run_dirs),
               **{side: Path(f) for side, f in _labels(args.device).items()}}
    table = features.features_table(run_dirs, keep_going=args.keep_going, failures=failures, device_records=devices)
    for run_dir, why in failures:
        print(f"biossd features: skipped {run_dir}: {why}", file=sys.stderr)
    if args.skipped:
        manifest.atomic_write_text(Path(args.skipped), "run_dir\twhy\n" + "".join(
            f"{run_dir}\t{' '.join(why.split())}\n" for run_dir, why in failures))
    if args.output:
        features.write_table(table, Path(args.output))
        print(f"biossd features: {len(table)} runs -> {args.output}", file=sys.stderr)
    else:
        table.to_csv(sys.stdout, index=False)
    if args.normalized:
        normalized, rules = normalize.normalize(table, features.STORAGE_FEATURES)
        features.write_table(normalized, Path(args.normalized))
        manifest.atomic_write_text(normalize.rules_path(Path(args.normalized)), rules.to_csv(index=False))
        print(f"biossd features: normalized -> {args.normalized} (rules: "
              f"{normalize.rules_path(Path(args.normalized))})", file=sys.stderr)
    return 1 if failures else 0


def cmd_predict(args: argparse.Namespace) -> int:
    from biossd.analysis import predict
    from biossd.features import extract as features
    from biossd.host import devicemodels

    targets = [devicemodels.load_target(t) for t in args.device]
    run_dirs = features.find_run_dirs(Path(p) for p in args.run_dirs)
    if not run_dirs:
        raise UsageError(f"no complete run directory (with run.json) under {', '.join(args.run_dirs)}")
    table = predict.predict_runs(run_dirs, targets)
    if args.output:
        predict.write_table(table, Path(args.output))
    if args.json:
        predict.write_json(table, targets, Path(args.json))
    if not args.output and not args.json:
        table.to_csv(sys.stdout, index=False, float_format="%.6g")
    unpredicted = table["why"].astype(bool)
    print(f"biossd predict: {len(run_dirs)} runs x {len(targets)} targets; {int(unpredicted.sum())} rows not "
          "predicted (see 'why')" if unpredicted.any() else f"biossd predict: {len(run_dirs)} runs x {len(targets)} "
          "targets", file=sys.stderr)
    return 0


def cmd_data_synth(args: argparse.Namespace) -> int:
    from biossd.core.units import parse_size
    from biossd.study import data

    if args.list:
        for kind in data.KINDS.values():
            print(f"{kind.name}\t{kind.description}")
        return 0
    if not args.kind or not args.output:
        raise UsageError("give KIND and -o DIR (or --list)")
    with _held_host_lock(args, f"biossd data synth {args.kind} (writing {args.output})"):
        record = data.synth(args.kind, Path(args.output), parse_size(args.size), args.seed, args.scale)
    print(json.dumps(record, indent=2, sort_keys=True))
    return 0


def cmd_data_fetch(args: argparse.Namespace) -> int:
    from biossd.study import datasets

    record = datasets.fetch(args.dataset, Path(args.output or f"data/{args.dataset}"), args.accept_unverified)
    print(json.dumps(record, indent=2))
    return 0


def cmd_data_manifests(args: argparse.Namespace) -> int:
    from biossd.study import datasets

    for m in datasets.load_all():
        pinned = sum(1 for f in m["files"] if f.get("sha256"))
        print(f"{m['id']}\t{m['name']}\t{len(m['files'])} files ({pinned} with sha256)\t"
              f"used by {', '.join(m['used_by'])}\tsynthetic: {m['synthetic']['kind']}")
    return 0


def _mem_bytes(text: str | None) -> int | None:
    """A --mem value: ``None`` for none or absent, else bytes."""
    from biossd.core.units import parse_size

    return None if text is None or text.lower() == "none" else parse_size(text)


def _settings(tool: str, pairs: list[str] | None) -> dict[str, str]:
    """--set NAME=VALUE: a tool's memory settings (the sizing rule's), each a name its catalogue
    entry declares under memory_options."""
    from biossd.study import catalogue

    given = _labels(pairs or [])
    known = {opt["name"] for opt in catalogue.get(tool).memory_options()}
    unknown = sorted(set(given) - known)
    if unknown:
        raise UsageError(f"--set {', '.join(unknown)}: {tool}'s catalogue entry declares no such memory setting "
                         f"(it has: {', '.join(sorted(known)) or 'none'})")
    return given


def _print_argv(argv: list[str], print0: bool) -> None:
    """An argv for a script: NUL-separated (``mapfile -d ''``), or one shell-quoted line."""
    from biossd.study import catalogue

    if print0:
        sys.stdout.write("".join(f"{arg}\0" for arg in argv))
    else:
        print(catalogue.shell_command(argv))


def cmd_catalogue_command(args: argparse.Namespace) -> int:
    from biossd.study import catalogue, staging

    if args.container and not args.bind:
        raise UsageError("--container needs --bind DIR (the run's scratch)")
    argv = staging.command_argv(catalogue.get(args.tool), _labels(args.values), Path(args.bind or "."),
                                _mem_bytes(args.mem), args.container, _settings(args.tool, args.set))
    _print_argv(argv, args.print0)
    return 0


def _held_host_lock(args: argparse.Namespace, what: str):
    """The host lock for an unmeasured write to a device under study (``--hold-host-lock``), so
    it never falls inside another run's measured window; else nothing."""
    import contextlib

    from biossd.host import hostlock

    if not getattr(args, "hold_host_lock", False):
        return contextlib.nullcontext()
    return hostlock.HostLock(what, owner=_owner(args, "nothing was staged"))


def cmd_catalogue_stage(args: argparse.Namespace) -> int:
    from biossd.study import catalogue, staging

    entry = catalogue.get(args.tool)
    mem = _mem_bytes(args.mem)
    with _held_host_lock(args, f"biossd catalogue stage {entry.id} (copying its input into {args.scratch})"):
        argv = staging.stage(entry, Path(args.input), Path(args.scratch), mem, args.container,
                             _settings(entry.id, args.set), create_scratch=not args.existing_scratch)
    _print_argv(argv, args.print0)
    return 0


def cmd_catalogue_prepare(args: argparse.Namespace) -> int:
    from biossd.study import catalogue, staging

    with _held_host_lock(args, f"biossd catalogue prepare {args.tool} (writing {args.out})"):
        record = staging.prepare(catalogue.get(args.tool), Path(args.input), Path(args.out))
    print(record["input_bytes"])
    return 0


def cmd_chain_steps(args: argparse.Namespace) -> int:
    from biossd.study import catalogue, chain

    steps = chain.of(catalogue.get(args.pipeline)).steps
    for step in steps:
        print(step.index, step.name, step.tool)
    return 0


def cmd_chain_stage(args: argparse.Namespace) -> int:
    from biossd.study import catalogue, chain

    ch = chain.of(catalogue.get(args.pipeline))
    tool = ch.steps[args.step - 1].tool if 1 <= args.step <= len(ch.steps) else args.pipeline
    with _held_host_lock(args, f"biossd chain stage {args.pipeline} step {args.step} (into {args.scratch})"):
        argv = chain.stage_step(ch, args.step, Path(args.input) if args.input else None, Path(args.scratch),
                                _mem_bytes(args.mem), args.container, _settings(tool, args.set),
                                create_scratch=not args.existing_scratch)
    _print_argv(argv, args.print0)
    return 0


def cmd_catalogue_image(args: argparse.Namespace) -> int:
    from biossd.study import catalogue, containers

    entry = catalogue.get(args.tool)
    if not containers.built(entry, args.engine):
        print(f"biossd catalogue image: {entry.id}'s {args.engine} image is not built here", file=sys.stderr)
        return 1
    print(containers.image_record(entry, args.engine))
    return 0


def cmd_catalogue_version(args: argparse.Namespace) -> int:
    from biossd.study import catalogue

    entry = catalogue.get(args.tool)
    prefix: list[str] = []
    if args.container:
        import tempfile

        from biossd.study import containers

        if not containers.built(entry, args.container):
            print(f"biossd catalogue version: {args.tool}'s {args.container} image is not built here", file=sys.stderr)
            return 1
        prefix = containers.wrap_argv(args.container, entry, Path(tempfile.gettempdir()), [])
    version = entry.installed_version(prefix)
    if version is None:
        print(f"biossd catalogue version: {args.tool} is not installed here"
              + (" (in its container)" if args.container else ""), file=sys.stderr)
        return 1
    if version != str(entry.data["version"]):
        print(f"biossd catalogue version: warning: {args.tool} is {version} here, the catalogue "
              f"pins {entry.data['version']}", file=sys.stderr)
    print(version)
    return 0


def cmd_catalogue_status(args: argparse.Namespace) -> int:
    from biossd.study import toolstatus

    rows = toolstatus.status_table(run_smoke=not args.no_smoke)
    if args.json:
        print(json.dumps([{k: r.get(k) for k in toolstatus.STATUS_KEYS} for r in rows], indent=2))
    else:
        print(toolstatus.format_table(rows))
    return 0


def cmd_catalogue_install(args: argparse.Namespace) -> int:
    from biossd.study import catalogue, toolinstall

    entries = catalogue.load_all() if not args.tools else [catalogue.get(t) for t in args.tools]
    result = toolinstall.install(entries)
    print(f"installed: {', '.join(result['installed']) or 'nothing new'}")
    for line in result["skipped"]:
        print(f"not installable here: {line}", file=sys.stderr)
    return 0


def cmd_catalogue_build(args: argparse.Namespace) -> int:
    from biossd.study import catalogue, containers

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


def cmd_report(args: argparse.Namespace) -> int:
    from biossd.outputs import report

    params = {"fast": args.fast, "slow": args.slow}
    done = report.render([Path(r) for r in args.results], Path(args.out) if args.out else None, parameters=params,
                         html=not args.no_html, experiments_only=args.experiments_only)
    for path in done:
        print(path)
    return 0


def cmd_paper(args: argparse.Namespace) -> int:
    from biossd.outputs import supplement

    print(supplement.build([Path(r) for r in args.results], Path(args.out), render=not args.no_render,
                           fast=args.fast, slow=args.slow))
    return 0


def cmd_crate(args: argparse.Namespace) -> int:
    from biossd.outputs import crate

    print(crate.write(Path(args.results)))
    return 0


def cmd_layout_assemble(args: argparse.Namespace) -> int:
    from biossd.study import layout

    runs, devices, extra = ({k: Path(v) for k, v in _labels(pairs).items()} for pairs in (args.run, args.device, args.file))
    made = layout.assemble(Path(args.dest), runs, devices, extra)
    print(f"{len(made)} runs laid out under {args.dest}")
    return 0


def cmd_data_synth_results(args: argparse.Namespace) -> int:
    from biossd.analysis import synthresults

    truth = synthresults.write(Path(args.output), caps=tuple(args.caps.split(",")),
                               scales=tuple(int(s) for s in args.scales.split(",")), repeats=args.repeats,
                               seed=args.seed, twins=not args.one_host)
    print("\n".join(truth["roots"]))
    return 0


def _duration(text: str) -> float:
    from biossd.core.units import parse_duration_s

    try:
        return parse_duration_s(text)
    except ValueError as err:
        raise argparse.ArgumentTypeError(str(err)) from None


def _need_root(command: str) -> None:
    """Refuse ``command`` when not run as root (cgroups, tracefs, loop devices and /run/biossd
    are root's to see and change)."""
    import os

    if os.geteuid() != 0:
        raise UsageError("needs root to see and remove cgroups, tracefs instances, loop devices, "
                         f"swap areas and emulated disks; run `sudo biossd {command}`")


def cmd_doctor(args: argparse.Namespace) -> int:
    from biossd.measure import leftovers

    _need_root("doctor")
    for line in leftovers.in_use():
        print(f"in use: {line}")
    found = leftovers.find_all()
    for kind, what, _ in found:
        print(f"leftover {kind}: {what}")
    if not found:
        print("biossd doctor: no leftovers of earlier runs")
    else:
        print("biossd doctor: `biossd cleanup` removes them", file=sys.stderr)
    return 1 if found else 0


def cmd_cleanup(args: argparse.Namespace) -> int:
    from biossd.measure import leftovers

    _need_root("cleanup")
    failed = 0
    for line in leftovers.stop_orphans():
        print(line)
    for kind, what, remove in leftovers.find_all():
        try:
            remove()
            print(f"removed {kind} {what}")
        except (OSError, RuntimeError, ValueError) as err:
            print(f"biossd cleanup: could not remove {kind} {what}: {err}", file=sys.stderr)
            failed += 1
    return 1 if failed else 0


def cmd_device_characterize(args: argparse.Namespace) -> int:
    from biossd.core.units import parse_duration_s
    from biossd.host import characterize
    from biossd.measure import manifest

    record = characterize.characterize(Path(args.path), parse_duration_s(args.budget))
    text = json.dumps(record, indent=2) + "\n"
    if args.output:
        manifest.atomic_write_text(Path(args.output), text)
    print(text if not args.output else json.dumps(record["spec_row"]))
    return 0


def cmd_device_profiles(args: argparse.Namespace) -> int:
    from biossd.host import diskmodel

    for path in sorted(diskmodel.profiles_dir().glob("*.yaml")):
        p = diskmodel.DiskProfile.load(path)
        print(f"{path.stem}\t{p.name}: {p.rpm:.0f} rpm, {p.seq_read_mbs:g} MB/s, "
              f"{p.rand_read_iops:g}/{p.rand_write_iops:g} random read/write IOPS")
    return 0


def cmd_emulate_hdd(args: argparse.Namespace) -> int:
    from biossd.core.units import parse_size
    from biossd.host import emulate

    if args.action == "up":
        if not args.mount or not args.size:
            raise UsageError("give --mount DIR and --size SIZE")
        state = emulate.up(Path(args.mount), args.profile, parse_size(args.size),
                           parse_size(args.swap) if args.swap else None, Path(args.backing_dir))
        print(f"emulated HDD ({state['profile_name']}) up at {state['mount']} on {state['loop_device']}"
              + (f", swap {state['swap_file']}" if state.get("swap_file") else ""))
    elif args.action == "down":
        if not args.mount:
            raise UsageError("give --mount DIR")
        done = emulate.down(Path(args.mount))
        print(f"no emulated HDD at {args.mount}" if done is None else "; ".join(done) or "removed")
    else:
        states = emulate.all_states()
        if not states:
            print("no emulated HDD is up", file=sys.stderr)
        print(json.dumps([emulate.status_of(d) for d in states], indent=2))
    return 0


def cmd_storage(args: argparse.Namespace) -> int:
    from biossd.core.units import parse_size
    from biossd.measure import storage

    if args.action in ("up", "down") and not args.root:
        raise UsageError("give --root DIR")
    owner = _owner(args, "nothing was done")
    if args.action == "up":
        for line in storage.reconcile():
            print(f"biossd storage up: reconciled: {line}", file=sys.stderr)
        classes = [c.strip() for c in args.classes.split(",") if c.strip()]
        resolved = storage.up(classes, Path(args.root), storage.parse_emulate(args.emulate),
                              parse_size(args.size), Path(args.scratch_dir) if args.scratch_dir else None,
                              owner=owner)
        if args.output:
            storage.write(resolved, Path(args.output))
        print(json.dumps(resolved, indent=2))
    elif args.action == "characterize":
        from biossd.core.units import parse_duration_s

        if not args.input or not args.output:
            raise UsageError("give --input storage.json and -o DIR")
        resolved = json.loads(Path(args.input).read_text())
        written = storage.characterize_all(resolved, parse_duration_s(args.budget), Path(args.output),
                                           Path.cwd() / "scratch", owner,
                                           Path(args.reuse) if args.reuse else None, args.host)
        for name, path in written.items():
            print(f"{name}: {path}")
    else:
        done = storage.down(Path(args.root), owner)
        print("; ".join(done) if done else f"no emulated storage under {args.root}")
    return 0


def cmd_host(args: argparse.Namespace) -> int:
    from biossd.core.files import atomic_write_text
    from biossd.host.hostfacts import host_facts

    text = json.dumps(host_facts(), indent=2) + "\n"
    if args.output:
        atomic_write_text(Path(args.output), text)
    print(text, end="")
    return 0


def _quality(tool: str, scratch: Path, run: Path) -> str:
    """Score a run's output against its input's truth (Fig. 1(b)); what was done, in a line."""
    from biossd.measure import manifest
    from biossd.study import catalogue

    entry = catalogue.get(tool)
    if not entry.data.get("quality"):  # most tools: decided before pandas is imported (a second per run)
        return f"{entry.id} has no quality check; nothing written"
    from biossd.features import quality

    outcome = manifest.read_manifest(run).get("outcome")
    if outcome != "ok":
        return f"the run ended {outcome}; not scored"
    try:
        result = quality.evaluate(entry, scratch)
    except quality.QualityError as err:  # recorded, not fatal: the run itself is a result
        result = {"tool": entry.id, "error": str(err)}
        print(f"biossd quality: {err}", file=sys.stderr)
    path = quality.write(run, result)
    return f"{path}: " + ", ".join(f"{c} {result.get(c, float('nan')):.4f}" for c in quality.QUALITY_COLUMNS)


def cmd_quality(args: argparse.Namespace) -> int:
    print(f"biossd quality: {_quality(args.tool, Path(args.scratch), Path(args.run))}")
    return 0


def cmd_catalogue_run(args: argparse.Namespace) -> int:
    """One study run in one process: scratch made and marked on the device under study, the
    prepared input staged into it (under the host lock), the tool profiled there, its output
    scored, and the scratch removed however the run ends."""
    from biossd.core import owners
    from biossd.host import emulate
    from biossd.measure import profile, rundir
    from biossd.study import catalogue, containers, staging

    entry = catalogue.get(args.tool)
    mem = _mem_bytes(args.mem)
    settings = _settings(entry.id, args.set)
    out = Path(args.out).absolute()
    if _parent_gone(args, "biossd catalogue run"):
        return profile.signal_exit_code(signal.SIGTERM)
    with rundir.scratch(Path(args.scratch), unique=True) as scratch:
        # On a class of biossd's own loop device, one copy of the prepared input for every run.
        shared_root = emulate.mount_of(scratch)
        # In Docker, the container is the profiler's to inspect (cap, OOM kill, peak) and remove.
        cidfile = scratch / containers.CIDFILE_NAME if args.container == "docker" else None
        # Python's start, the imports, the catalogue and the scratch: this process's age now.
        started_s = owners.age_s()
        staged_at = time.monotonic()
        with _held_host_lock(args, f"biossd catalogue run {entry.id} (copying its input into {scratch})"):
            argv = staging.stage(entry, Path(args.input), scratch, mem, args.container, settings,
                                 create_scratch=False, shared_root=shared_root, cidfile=cidfile)
        request = _profile_request(args, argv, None if args.uncapped else mem, out)
        request.container_id_file = cidfile
        request.phases_before_s.update(start=round(started_s or 0.0, 4), stage=round(time.monotonic() - staged_at, 4))
        request.labels.setdefault("scratch", str(scratch))
        here = Path.cwd()
        os.chdir(scratch)  # the tool's working directory: its relative writes land on the device
        try:
            _, signum = _profile(request, "biossd catalogue run")
        finally:
            os.chdir(here)
        if signum is not None:
            return profile.signal_exit_code(signum)
        print(f"biossd catalogue run: quality: {_quality(entry.id, scratch, out)}", file=sys.stderr)
    _result_kept()
    return 0


def cmd_study_plan(args: argparse.Namespace) -> int:
    from biossd.study import matrix

    try:
        params = json.loads(args.params)
    except json.JSONDecodeError as err:
        raise UsageError(f"--params is not JSON ({err})") from None
    from biossd.study import outdir

    result = matrix.plan(params, stub=args.stub, resumed=args.resumed)
    print(json.dumps({**result.as_json(), "record": outdir.record(params)}, indent=2))
    return 1 if result.problems else 0


def cmd_study_harness(args: argparse.Namespace) -> int:
    from biossd.analysis import harness

    try:
        print(harness.summary_text(Path(args.results)))
    except harness.HarnessError as err:
        raise UsageError(str(err)) from None
    return 0


def _add_profile_options(p: argparse.ArgumentParser) -> None:
    """The profiler's options (`biossd profile`, `biossd catalogue run`), declared once."""
    p.add_argument("--device", action="append", default=[], help="block device to trace")
    p.add_argument("--label", action="append", default=[], metavar="KEY=VALUE")
    p.add_argument("--cap-backend", default="auto",
                   choices=("auto", "cgroup-v1", "cgroup-v2", "systemd", "external", "none"))
    p.add_argument("--no-drop-caches", dest="drop_caches", action="store_false",
                   help="do not sync and drop the page cache before the run")
    p.add_argument("--overwrite", action="store_true", help="replace a complete run directory")
    p.add_argument("--sample-interval", type=float, default=1.0, metavar="SECONDS",
                   help="interval of the SAR-like sampler (default 1 s)")
    p.add_argument("--swap", metavar="SIZE",
                   help="give the run SIZE of swap on a loop device (removed afterwards)")
    p.add_argument("--swap-dir", metavar="DIR",
                   help="directory for the swap file, on the storage under test (default: cwd)")
    p.add_argument("--blocktrace", default="auto", choices=("auto", "blktrace", "tracefs", "off"),
                   help="block-request tracer (auto: blktrace where allowed, else tracefs)")
    p.add_argument("--perf", default="auto", choices=("auto", "off"),
                   help="perf stat counters (hardware events where a PMU exists)")
    p.add_argument("--cachegrind", action="store_true",
                   help="run under valgrind cachegrind for simulated cache misses (slow)")
    p.add_argument("--timeout", type=_duration, metavar="DURATION",
                   help="kill the command after this long, e.g. 300, 300s or 5m (outcome timeout)")
    p.add_argument("--tool-version", help="the tool's version, recorded in the manifest")
    p.add_argument("--image", help="container image reference or digest, recorded in the manifest")
    p.add_argument("--device-record", metavar="JSON",
                   help="`biossd device characterize` record of the storage, kept in the run")
    p.add_argument("--no-swap", action="store_true",
                   help="cap memory + swap at --mem: the run may not swap (an over-sized program is killed)")
    p.add_argument("--no-wait", dest="wait", action="store_false",
                   help="refuse (exit 75) instead of waiting when another measured run holds the host lock")
    _add_owner_options(p, "this run", " (e.g. Nextflow): if it dies, the run is stopped")
    p.add_argument("--die-with-parent", action="store_true",
                   help="stop (SIGTERM) when the process that started this one dies, even by SIGKILL")
    p.add_argument("--group", metavar="TOKEN",
                   help="run as a member of a declared concurrent group whose leader holds the host lock")



def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="biossd", description=__doc__)
    parser.add_argument("--version", action="version", version=f"biossd {__version__}")
    sub = parser.add_subparsers(dest="cmd", required=True)

    p = sub.add_parser("profile", help="run one command under a memory cap and record it")
    p.add_argument("--mem", required=True, help="memory cap, e.g. 1G, or 'none'")
    p.add_argument("--out", required=True, help="run directory to write")
    _add_profile_options(p)
    p.add_argument("command", nargs=argparse.REMAINDER, help="-- CMD [ARGS...]")
    p.set_defaults(func=cmd_profile)

    p = sub.add_parser("features", help="the run table (labels, outcome, features, facts) from run directories")
    p.add_argument("run_dirs", nargs="+", help="run directories or result folders holding them")
    p.add_argument("--device", action="append", default=[], metavar="SIDE=FILE",
                   help="<host>-<class>=device.json, for Butil of runs without their own record "
                        "(default: each result folder's <side>/device.json)")
    p.add_argument("-o", "--output", help="features.csv or features.parquet")
    p.add_argument("--keep-going", action="store_true",
                   help="skip runs whose traces cannot be read, list them, exit 1")
    p.add_argument("--skipped", metavar="TSV", help="with --keep-going: list the runs left out, and why, here")
    p.add_argument("--normalized", metavar="PATH",
                   help="also write the storage features normalized to [0, 1] (and PATH's .rules.csv)")
    p.set_defaults(func=cmd_features)

    p = sub.add_parser("predict", help="predict runs' runtimes and speedups on other devices from their block traces")
    p.add_argument("run_dirs", nargs="+", metavar="RUN_DIR", help="run directories or result folders holding them")
    p.add_argument("--device", action="append", required=True, metavar="TARGET",
                   help="a `biossd device characterize` record (.json), a device profile (.yaml, or a name under "
                        "study/devices/) or a device of the paper's tables (paper:NAME); repeatable")
    p.add_argument("-o", "--output", help="the table: .csv or .parquet (default: CSV on stdout)")
    p.add_argument("--json", metavar="PATH", help="also write the predictions and the targets as JSON")
    p.set_defaults(func=cmd_predict)

    data_p = sub.add_parser("data", help="input data").add_subparsers(dest="data_cmd", required=True)
    p = data_p.add_parser("synth", help="generate a synthetic input")
    p.add_argument("kind", nargs="?")
    p.add_argument("--list", action="store_true", help="list the kinds")
    p.add_argument("--size", default="4M")
    p.add_argument("--seed", type=int, default=7)
    p.add_argument("--scale", type=int, default=1, help="replicate the baseline k times")
    p.add_argument("-o", "--output")
    p.add_argument("--hold-host-lock", action="store_true",
                   help="write under the host lock, never inside another run's measured window (the workflow does)")
    _add_owner_options(p, "this work")
    p.set_defaults(func=cmd_data_synth)
    p = data_p.add_parser("fetch", help="download a data set of data-manifests/, verified (needs network)")
    p.add_argument("dataset")
    p.add_argument("-o", "--output", help="directory (default data/DATASET)")
    p.add_argument("--accept-unverified", action="store_true",
                   help="take files whose sha256 the manifest does not know (recorded as unverified)")
    p.set_defaults(func=cmd_data_fetch)
    p = data_p.add_parser("synth-results", help="a synthetic result set with planted patterns (tests, demos)")
    p.add_argument("output", help="directory (gets ssd/ and hdd/ result folders and truth.json)")
    p.add_argument("--caps", default="1G,4G,16G,32G")
    p.add_argument("--scales", default="1,2,4,8,16")
    p.add_argument("--repeats", type=int, default=3)
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--one-host", action="store_true", help="one result folder with both classes")
    p.set_defaults(func=cmd_data_synth_results)

    data_p.add_parser("manifests", help="list the data manifests").set_defaults(func=cmd_data_manifests)

    chain_p = sub.add_parser("chain", help="a pipeline's steps run chained (Fig. 3)").add_subparsers(
        dest="chain_cmd", required=True)
    p = chain_p.add_parser("steps", help="the chain's steps: index, step name, tool")
    p.add_argument("pipeline")
    p.set_defaults(func=cmd_chain_steps)
    p = chain_p.add_parser("stage", help="prepare one step in the chain's scratch and print its argv")
    p.add_argument("pipeline")
    p.add_argument("--step", type=int, required=True, help="1-based; step 1 copies --input into scratch first")
    p.add_argument("--input", help="directory of the chain's input kind (step 1)")
    p.add_argument("--scratch", required=True, help="the chain's scratch directory, on the device under study")
    p.add_argument("--existing-scratch", action="store_true",
                   help="the scratch must exist (a workflow made and marked it); never make it here")
    p.add_argument("--mem", help="the step's memory cap (a container engine enforces it)")
    p.add_argument("--set", action="append", default=[], metavar="NAME=VALUE",
                   help="a memory setting of the tool (its catalogue memory_options; the study's sizing rule)")
    p.add_argument("--container", choices=_ENGINES, help="run the step's tool in its container")
    p.add_argument("--print0", action="store_true", help="NUL-separated argv (for `mapfile -d ''`)")
    p.add_argument("--hold-host-lock", action="store_true",
                   help="stage under the host lock, never inside another run's measured window (the workflow does)")
    _add_owner_options(p, "this staging")
    p.set_defaults(func=cmd_chain_stage)

    cat_p = sub.add_parser("catalogue", help="the tool catalogue").add_subparsers(dest="cat_cmd", required=True)
    p = cat_p.add_parser("command", help="print a tool's command line, shell-quoted")
    p.add_argument("tool")
    p.add_argument("values", nargs="*", metavar="NAME=VALUE")
    p.add_argument("--mem", help="the run's memory cap (a container engine enforces it)")
    p.add_argument("--set", action="append", default=[], metavar="NAME=VALUE",
                   help="a memory setting of the tool (its catalogue memory_options; the study's sizing rule)")
    p.add_argument("--print0", action="store_true",
                   help="print the arguments NUL-separated (for `mapfile -d ''`), not shell-quoted")
    p.add_argument("--container", choices=_ENGINES,
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
    p.add_argument("--set", action="append", default=[], metavar="NAME=VALUE",
                   help="a memory setting of the tool (its catalogue memory_options; the study's sizing rule)")
    p.add_argument("--container", choices=_ENGINES, help="run the tool in its container")
    p.add_argument("--print0", action="store_true", help="NUL-separated argv (for `mapfile -d ''`)")
    p.add_argument("--hold-host-lock", action="store_true",
                   help="copy under the host lock, never inside another run's measured window (the workflow does)")
    _add_owner_options(p, "this staging")
    p.set_defaults(func=cmd_catalogue_stage)
    p = cat_p.add_parser("run", help="one run of a tool in one process: stage its prepared input into a "
                                     "marked scratch, profile it there, score it, remove the scratch")
    p.add_argument("tool")
    p.add_argument("--input", required=True, help="the input, prepared for the tool (biossd catalogue prepare)")
    p.add_argument("--scratch", required=True,
                   help="the run's scratch directory on the device under study (made, marked and removed here)")
    p.add_argument("--out", required=True, help="run directory to write")
    p.add_argument("--mem", required=True, help="the run's memory: the tool's settings follow it, and it is the cap")
    p.add_argument("--uncapped", action="store_true",
                   help="no memory cap (a probe under valgrind); the tool's settings still follow --mem")
    p.add_argument("--set", action="append", default=[], metavar="NAME=VALUE",
                   help="a memory setting of the tool (its catalogue memory_options; the study's sizing rule)")
    p.add_argument("--container", choices=_ENGINES, help="run the tool in its container")
    p.add_argument("--hold-host-lock", action="store_true",
                   help="stage under the host lock, never inside another run's measured window (the workflow does)")
    _add_profile_options(p)
    p.set_defaults(func=cmd_catalogue_run)
    p = cat_p.add_parser("prepare", help="prepare an input for a tool once (links + its indexes), for every run "
                                         "of it to stage; print the input's bytes")
    p.add_argument("tool")
    p.add_argument("--input", required=True, help="directory of the input kind (biossd data synth)")
    p.add_argument("--out", required=True, help="the prepared directory to write (must not exist)")
    p.add_argument("--hold-host-lock", action="store_true",
                   help="write under the host lock, never inside another run's measured window (the workflow does)")
    _add_owner_options(p, "this work")
    p.set_defaults(func=cmd_catalogue_prepare)
    p = cat_p.add_parser("image", help="print a tool's image reference and id (for the run record)")
    p.add_argument("tool")
    p.add_argument("--engine", choices=_ENGINES, default="charliecloud")
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
    p.add_argument("--engine", choices=_ENGINES, default="charliecloud",
                   help="charliecloud (podman build, unpacked), docker (podman's image loaded into the engine; docker "
                        "build where podman is missing) or apptainer (apptainer build)")
    p.set_defaults(func=cmd_catalogue_build)
    p = cat_p.add_parser("version", help="print the installed version of a tool")
    p.add_argument("tool")
    p.add_argument("--container", choices=_ENGINES, help="ask the tool in its container")
    p.set_defaults(func=cmd_catalogue_version)

    p = sub.add_parser("report", help="run the notebooks over one or more result sets (papermill)")
    p.add_argument("results", nargs="+", help="result folders (--outdir of study runs; e.g. one per host)")
    p.add_argument("--out", help="report directory (default: the first result folder's report/)")
    p.add_argument("--fast", default="ssd", help="fast side of the speedup pair (class or <host>-<class>)")
    p.add_argument("--slow", default="hdd", help="slow side of the speedup pair")
    p.add_argument("--no-html", action="store_true", help="keep the executed notebooks as .ipynb only")
    p.add_argument("--experiments-only", action="store_true",
                   help="only the related experiments' notebooks (notebooks/experiments/)")
    p.set_defaults(func=cmd_report)

    p = sub.add_parser("paper", help="build the supplement (paper/) from one or more result sets")
    p.add_argument("results", nargs="+", help="result folders (the report of the first is used or made)")
    p.add_argument("--out", default=str(Path(__file__).resolve().parents[2] / "paper" / "build"),
                   help="build directory (default paper/build)")
    p.add_argument("--no-render", action="store_true", help="use the existing report instead of rendering it again")
    p.add_argument("--fast", default="ssd")
    p.add_argument("--slow", default="hdd")
    p.set_defaults(func=cmd_paper)

    p = sub.add_parser("crate", help="write an RO-Crate (ro-crate-metadata.json) for a result set")
    p.add_argument("results", help="a result folder (--outdir of a study run)")
    p.set_defaults(func=cmd_crate)

    layout_p = sub.add_parser("layout", help="the result layout").add_subparsers(dest="layout_cmd", required=True)
    p = layout_p.add_parser("assemble", help="lay run directories out as a result set (links)")
    p.add_argument("dest")
    p.add_argument("--run", action="append", default=[], metavar="RELPATH=DIR",
                   help="a run directory and its layout path (the study plan's publish)")
    p.add_argument("--device", action="append", default=[], metavar="SIDE=FILE", help="<host>-<class>=device.json")
    p.add_argument("--file", action="append", default=[], metavar="RELPATH=FILE", help="another file to copy in")
    p.set_defaults(func=cmd_layout_assemble)

    dev_p = sub.add_parser("device", help="storage devices").add_subparsers(dest="dev_cmd", required=True)
    p = dev_p.add_parser("characterize", help="measure a device with fio, as the paper's spec tables")
    p.add_argument("path", help="a directory on the device")
    p.add_argument("--budget", default="120s", help="total time for all fio jobs (e.g. 120s, 5m)")
    p.add_argument("-o", "--output", help="write the JSON record here")
    p.set_defaults(func=cmd_device_characterize)
    dev_p.add_parser("profiles", help="list the device profiles").set_defaults(func=cmd_device_profiles)
    p = dev_p.add_parser("emulate-hdd", help="make a directory behave like a hard disk")
    p.add_argument("action", choices=("up", "down", "status"))
    p.add_argument("--mount", help="the directory to make a mount point")
    p.add_argument("--profile", default="seagate-barracuda-7200", help="name in study/devices/ or a YAML path")
    p.add_argument("--size", help="size of the emulated disk, e.g. 20G")
    p.add_argument("--swap", help="also a swap area of this size on it")
    p.add_argument("--backing-dir", default="/var/tmp", help="where the disk's data is kept")
    p.set_defaults(func=cmd_emulate_hdd)

    p = sub.add_parser("storage", help="the storage classes of a study run")
    p.add_argument("action", choices=("up", "down", "characterize"))
    p.add_argument("--root", help="directory under which emulated classes are mounted (up, down)")
    p.add_argument("--input", help="storage.json from `storage up` (characterize)")
    p.add_argument("--budget", default="120s", help="fio time budget per class (characterize)")
    p.add_argument("--reuse", metavar="DIR",
                   help="characterize: take each class's record from this result folder of an earlier run "
                   "(HOST-CLASS/device.json), checked to be of the same device, instead of measuring")
    p.add_argument("--host", help="characterize --reuse: the host name the records were published under")
    p.add_argument("--classes", default="ssd", help="class names, comma-separated")
    p.add_argument("--emulate", action="append", default=[], metavar="CLASS=PROFILE",
                   help="emulate this class as an HDD of this profile (study/devices/)")
    p.add_argument("--size", default="4G", help="size of each emulated disk")
    p.add_argument("--scratch-dir", help="scratch directory of the real classes (default: task dir)")
    p.add_argument("-o", "--output", help="up: write the resolved classes (JSON) here; "
                   "characterize: directory for <class>.json")
    _add_owner_options(p, "the emulations", " (the Nextflow session): only it takes them down")
    p.set_defaults(func=cmd_storage)

    p = sub.add_parser("quality", help="score a run's output against its input's truth (Fig. 1(b))")
    p.add_argument("tool")
    p.add_argument("--scratch", required=True, help="the run's scratch directory (its output and truth)")
    p.add_argument("--run", required=True, help="the run directory (gets quality.json)")
    p.set_defaults(func=cmd_quality)

    p = sub.add_parser("host", help="this host's facts (kernel, OS, CPU, memory, swap) as JSON")
    p.add_argument("-o", "--output", help="also write them here")
    p.set_defaults(func=cmd_host)

    study_p = sub.add_parser("study", help="the study's experiment matrix").add_subparsers(dest="study_cmd", required=True)
    p = study_p.add_parser("plan", help="the runs the study's parameters ask for, and every problem with them (JSON)")
    p.add_argument("--params", required=True, help="the study's params as a JSON object (study/nextflow.config)")
    p.add_argument("--stub", action="store_true", help="a -stub-run: every tool entry, no device checks")
    p.add_argument("--resumed", action="store_true",
                   help="the study resumes an earlier session (-resume): its --outdir may hold another plan's runs")
    p.set_defaults(func=cmd_study_plan)
    p = study_p.add_parser("harness", help="the profiled tasks' time: the tools' own and the harness around them")
    p.add_argument("results", help="the study's --outdir (its pipeline_info/trace.txt)")
    p.set_defaults(func=cmd_study_harness)

    exp_p = sub.add_parser("experiment", help="the related experiments of seeds 001-004").add_subparsers(
        dest="exp_cmd", required=True)
    p = exp_p.add_parser("plan", help="the tasks of one or more experiments at a size (JSON)")
    p.add_argument("--experiment", help="NAME[,NAME] or all")
    p.add_argument("--size", default="test", help="tiny, test or full (study/experiments/<id>.yaml sizes)")
    p.add_argument("--params", help="the workflow's params (JSON or @FILE): checked as the study's, then planned")
    p.add_argument("--classes", default="ssd,hdd", help="storage classes, comma-separated")
    p.add_argument("--host", default=platform.node(), help="host name of the result layout")
    p.add_argument("--seed", type=int, default=1, help="seed of the synthetic inputs")
    p.set_defaults(func=cmd_experiment_plan)
    p = exp_p.add_parser("run", help="run one planned task in an empty scratch directory")
    p.add_argument("--task", required=True, help="the task (JSON, or @FILE) from `biossd experiment plan`")
    p.add_argument("--scratch", required=True, help="an empty directory on the storage class's device")
    p.add_argument("--out", required=True, help="the task directory to write (must not exist)")
    p.add_argument("--device-record", help="`biossd device characterize` record of the class's device")
    p.add_argument("--storage", help="the class's entry of `biossd storage up` (JSON or @FILE)")
    p.add_argument("--input", help="the task's input made by `biossd data synth` (default: synthesized in scratch)")
    _add_owner_options(p, "this task")
    p.set_defaults(func=cmd_experiment_run)
    p = exp_p.add_parser("table", help="each experiment's table from result folders (experiments/<id>.csv)")
    p.add_argument("results", nargs="+", help="result folders")
    p.add_argument("--experiment", help="NAME[,NAME] (default: every experiment found)")
    p.add_argument("--out", help="result folder to write experiments/<id>.csv into (default: the first)")
    p.set_defaults(func=cmd_experiment_table)
    exp_p.add_parser("list", help="the experiments, their seeds and substitutes").set_defaults(func=cmd_experiment_list)

    slurm_p = sub.add_parser("slurm", help="a one-node SLURM cluster on this host (tests, trying -profile slurm)")
    slurm_sub = slurm_p.add_subparsers(dest="slurm_cmd", required=True)
    p = slurm_sub.add_parser("up", help="bring up munged, slurmctld and slurmd with a partition per storage class")
    p.add_argument("--partitions", default="fast,slow", help="partition names, comma-separated (default fast,slow)")
    _add_owner_options(p, "the cluster")
    p.set_defaults(func=cmd_slurm)
    for name, text in (("down", "cancel its jobs, stop its daemons, remove its state"),
                       ("status", "the cluster's record and health (JSON)"),
                       ("env", "print the SLURM_CONF that reaches the cluster (for eval)")):
        slurm_sub.add_parser(name, help=text).set_defaults(func=cmd_slurm)

    pipe_p = sub.add_parser("pipeline", help="profile your own Nextflow pipeline (nextflow/conf/profile_pipeline.config)")
    pipe_sub = pipe_p.add_subparsers(dest="pipeline_cmd", required=True)
    p = pipe_sub.add_parser("task", help="run one task's .command.sh under the profiler (the config's task shell)")
    p.add_argument("--task", required=True, help="the task's description, base64 JSON (the config writes it)")
    _add_owner_options(p, "the task")
    p.add_argument("command", nargs=argparse.REMAINDER, help="-- /bin/bash -ue .command.sh")
    p.set_defaults(func=cmd_pipeline_task)
    p = pipe_sub.add_parser("report", help="per process: features, I/O pattern, predicted speedup on target devices")
    p.add_argument("outdir", help="the --biossd_outdir of a profiled pipeline run")
    p.add_argument("--study", help="a study result set: its pattern centroids instead of the paper's")
    p.add_argument("--target", action="append", default=[], metavar="DEVICE",
                   help="a target device (default: the paper's, this host's records, NVMe and cloud volumes)")
    p.set_defaults(func=cmd_pipeline_report)

    docker_p = sub.add_parser("docker", help="a Docker engine of biossd's own on this host (-profile docker)")
    docker_sub = docker_p.add_subparsers(dest="docker_cmd", required=True)
    p = docker_sub.add_parser("up", help="start dockerd with a private socket, data root and exec root "
                                         "(with DOCKER_HOST set: use that engine)")
    _add_owner_options(p, "the engine")
    p.set_defaults(func=cmd_docker)
    for name, text in (("down", "stop the engine biossd started, remove its state (its images are kept)"),
                       ("status", "the engine's record and whether it answers (JSON)"),
                       ("env", "print the DOCKER_HOST that reaches the engine (for eval)")):
        docker_sub.add_parser(name, help=text).set_defaults(func=cmd_docker)

    sub.add_parser("doctor", help="list leftovers of earlier runs").set_defaults(func=cmd_doctor)
    sub.add_parser("cleanup", help="remove leftovers of earlier runs").set_defaults(func=cmd_cleanup)
    return parser


def _name_commands(parser: argparse.ArgumentParser) -> None:
    """Give every (sub)command its full name (``biossd data synth``) for its messages."""
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            for sub in action.choices.values():
                sub.set_defaults(command_name=sub.prog)
                _name_commands(sub)


def _json_arg(text: str, what: str) -> Any:
    """A JSON value given inline or as ``@FILE``."""
    try:
        return json.loads(Path(text[1:]).read_text() if text.startswith("@") else text)
    except (OSError, ValueError) as err:
        raise UsageError(f"{what}: not valid JSON or not readable ({err})") from None


def cmd_experiment_plan(args: argparse.Namespace) -> int:
    from biossd import experiments

    if args.params:
        plan = experiments.plan_from_params(_json_arg(args.params, "--params"))
    elif not args.experiment:
        raise UsageError("give --experiment NAME[,NAME] (or --params, as the workflow does)")
    else:
        classes = [c.strip() for c in args.classes.split(",") if c.strip()]
        plan = experiments.plan(args.experiment, args.size, classes, args.host, args.seed)
    print(json.dumps(plan, indent=2))
    return 0


def cmd_experiment_run(args: argparse.Namespace) -> int:
    from biossd import experiments

    task = _json_arg(args.task, "--task")
    storage = _json_arg(args.storage, "--storage") if args.storage else {}
    owner = _owner(args)
    try:
        record = experiments.run_task(task, Path(args.scratch), Path(args.out),
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
        print(f"{name}\tseed {spec['seed']}\t{spec['title']}\tsubstitutes: {subs}")
    return 0


def cmd_slurm(args: argparse.Namespace) -> int:
    from biossd.host import slurmcluster

    if args.slurm_cmd == "up":
        owner = _owner(args, "nothing was brought up")
        partitions = tuple(p.strip() for p in args.partitions.split(",") if p.strip())
        state = slurmcluster.up(partitions, owner)
        print(f"biossd slurm: one-node cluster up on {state['host']}, partitions {', '.join(state['partitions'])}; "
              f"memory enforced by {state['memory_enforced_by']}", file=sys.stderr)
        print(f"export SLURM_CONF={slurmcluster.env()['SLURM_CONF']}")
    elif args.slurm_cmd == "down":
        done = slurmcluster.down()
        print("biossd slurm down: " + ("; ".join(done) if done else "no cluster was up"), file=sys.stderr)
    elif args.slurm_cmd == "env":
        if slurmcluster.load() is None:
            raise UsageError("no biossd SLURM cluster is up: `biossd slurm up` (or `make slurm-up`) brings one up")
        print(f"export SLURM_CONF={slurmcluster.env()['SLURM_CONF']}")
    else:
        print(json.dumps(slurmcluster.status(), indent=2))
    return 0


def cmd_pipeline_task(args: argparse.Namespace) -> int:
    """One task of a user's pipeline under the profiler (the profiling config's task shell); exits
    with the task's own status, and passes its output on to Nextflow's .command.out/.err."""
    from biossd.measure import pipelinetask, profile

    task = pipelinetask.decode(args.task)
    command = args.command[1:] if args.command[:1] == ["--"] else args.command
    if not command:
        raise UsageError("biossd pipeline task: no command after `--` (Nextflow gives /bin/bash -ue .command.sh)")
    workdir = Path.cwd()
    out = pipelinetask.run_dir(pipelinetask.outdir_from_env(), task, workdir)
    request = profile.ProfileRequest(argv=command, out_dir=out, mem_bytes=task.get("memory_bytes"),
                                     labels=pipelinetask.labels(task, workdir), overwrite=True,
                                     drop_caches=bool(task.get("drop_caches", True)), owner=_owner(args))
    body, signum = _profile(request, "biossd pipeline task")
    if signum is not None:
        return profile.signal_exit_code(signum)
    _result_kept()
    for name, stream in (("stdout.log", sys.stdout.buffer), ("stderr.log", sys.stderr.buffer)):
        with contextlib.suppress(OSError):
            stream.write((out / name).read_bytes())
            stream.flush()
    if body["outcome"] == "oom":
        return 128 + signal.SIGKILL
    if body.get("signal"):
        return 128 + int(body["signal"])
    return int(body.get("exit_code") or 0)


def cmd_pipeline_report(args: argparse.Namespace) -> int:
    from biossd.analysis import pipeline
    from biossd.outputs import pipeline_report

    targets = list(pipeline.DEFAULT_TARGETS) + list(args.target)
    rep = pipeline.report(Path(args.outdir), targets, [Path(args.study)] if args.study else None)
    written = pipeline_report.write(rep, Path(args.outdir) / pipeline.REPORT_DIR)
    for run_dir, why in rep.skipped:
        print(f"biossd pipeline report: skipped {run_dir}: {why}", file=sys.stderr)
    cols = ["process", "tasks", "runtime_s", "cpu_share", "peak_rss_kib", *("Riops", "Wiops", "Pfault", "CAR"), "pattern"]
    print(rep.processes[cols].to_string(index=False, float_format=lambda v: f"{v:.3g}"))
    print()
    print(rep.pipeline[["target", "measured_wall_s", "predicted_wall_s", "speedup_vs_measured"]].to_string(
        index=False, float_format=lambda v: f"{v:.3g}"))
    print(f"biossd pipeline report: {len(written)} files in {Path(args.outdir) / pipeline.REPORT_DIR}", file=sys.stderr)
    return 0


def cmd_docker(args: argparse.Namespace) -> int:
    from biossd.host import dockerengine

    if args.docker_cmd == "up":
        state = dockerengine.up(_owner(args, "nothing was brought up"))
        if state.get("external"):
            print(f"biossd docker: using the Docker engine at {state['docker_host']} (Docker {state['version']}); "
                  "it is never started, stopped or changed by biossd", file=sys.stderr)
        else:
            print(f"biossd docker: engine up (Docker {state['version']}, storage driver {state['driver']}, "
                  f"data root {state['data_root']})", file=sys.stderr)
        print(f"export DOCKER_HOST={dockerengine.env()['DOCKER_HOST']}")
    elif args.docker_cmd == "down":
        done = dockerengine.down()
        print("biossd docker down: " + ("; ".join(done) if done else "no engine was up"), file=sys.stderr)
    elif args.docker_cmd == "env":
        if dockerengine.load() is None:
            raise UsageError("no biossd Docker engine is up: `biossd docker up` brings one up")
        print(f"export DOCKER_HOST={dockerengine.env()['DOCKER_HOST']}")
    else:
        print(json.dumps(dockerengine.status(), indent=2))
    return 0


def main(argv: list[str] | None = None) -> int:
    """Run one command. Every error a user can act on (:class:`biossd.core.errors.BiossdError`,
    or a bad value — a size, a path — that the library refuses with ``ValueError`` or
    ``FileNotFoundError``) ends here: its message, prefixed by the command's name, on stderr,
    and the error's exit status (2; 75 for a busy host); anything else is a bug and keeps its
    traceback."""
    logging.basicConfig(level=logging.WARNING, format="biossd: %(message)s")
    parser = build_parser()
    _name_commands(parser)
    try:
        args = parser.parse_args(argv)
    except KeyboardInterrupt as intr:
        return 128 + (intr.args[0] if intr.args and isinstance(intr.args[0], int) else signal.SIGINT)
    name = getattr(args, "command_name", "biossd")
    try:
        return args.func(args)
    except KeyboardInterrupt as intr:
        signum = intr.args[0] if intr.args and isinstance(intr.args[0], int) else signal.SIGINT
        print(f"{name}: interrupted by signal {signum}; what it had made was removed", file=sys.stderr)
        return 128 + signum
    except (BiossdError, ValueError, FileNotFoundError) as err:
        print(f"{name}: {err}", file=sys.stderr)
        return getattr(err, "exit_status", 2)


if __name__ == "__main__":
    sys.exit(main())
