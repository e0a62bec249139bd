"""What the commands share: the error a user can act on, the options declared once (owner,
profiler), and the helpers that read them."""

from __future__ import annotations

import argparse
import json
import os
import signal
import sys
from pathlib import Path
from typing import Any, Callable

from biossd.core.errors import BiossdError

#: Container engines (biossd.study.catalogue.containers.ENGINES, not imported here: the CLI starts fast).
ENGINES = ("charliecloud", "apptainer", "docker")


class UsageError(BiossdError):
    """A command given what it cannot use (a missing option, a malformed value)."""


def labels(pairs: list[str]) -> dict[str, str]:
    labels = {}
    for pair in pairs:
        key, sep, value = pair.partition("=")
        if not sep or not key:
            raise UsageError(f"expected KEY=VALUE (as --label, --run, --device and --file take), got {pair!r}")
        if key in labels:
            raise UsageError(f"{key} is given twice ({labels[key]!r} and {value!r})")
        if any(ord(c) < 0x20 or ord(c) == 0x7f for c in pair):
            raise UsageError(f"{pair!r} holds a control character (a newline or a tab): labels are one line of the "
                             "run's record and of every table made from it")
        labels[key] = value
    return labels


def owner(args: argparse.Namespace, what: str = "nothing was run"):
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


def add_owner_options(p: argparse.ArgumentParser, works_for: str = "this work",
                       dies: str = "") -> None:
    """``--owner-pid`` and ``--owner-label``, declared once for every command that works for
    another process (:func:`owner` validates them)."""
    p.add_argument("--owner-pid", type=int, metavar="PID", help=f"the process {works_for} is for{dies}")
    p.add_argument("--owner-label", metavar="TEXT", help="what the owner is, for records and messages")


def add_set_option(p: argparse.ArgumentParser) -> None:
    """``--set NAME=VALUE``: a tool's memory setting under the sizing rule (read by :func:`settings`)."""
    p.add_argument("--set", action="append", default=[], metavar="NAME=VALUE",
                   help="a memory setting of the tool (its catalogue memory_options; the study's sizing rule)")


def add_scratch_option(p: argparse.ArgumentParser, whose: str) -> None:
    """``--scratch``: where the command makes, marks and removes its scratch directory
    (:func:`biossd.measure.rundir.scratch`; its name gets the process's id)."""
    p.add_argument("--scratch", required=True,
                   help=f"the {whose}'s scratch directory on the device under study (made, marked and removed "
                        "here; its name gets this process's id)")


def add_hold_host_lock_option(p: argparse.ArgumentParser, verb: str = "write") -> None:
    """``--hold-host-lock``: the command's ``verb`` (its writes to a device under study) happens under
    the host lock (:func:`held_host_lock`)."""
    p.add_argument("--hold-host-lock", action="store_true",
                   help=f"{verb} under the host lock, never inside another run's measured window (the workflow does)")


def profile_request(args: argparse.Namespace, command: list[str], mem_bytes: int | None, out: Path):
    """The profiler's request from the options :func:`add_profile_options` declares."""
    from biossd.measure import profile

    return profile.ProfileRequest(
        argv=command, out_dir=out, mem_bytes=mem_bytes, labels=labels(args.label),
        cap_backend=args.cap_backend, drop_caches=args.drop_caches, evict=args.evict, overwrite=args.overwrite,
        read_code=args.read_code,
        devices=args.device, sample_interval_s=args.sample_interval,
        swap_bytes=args.swap,
        swap_dir=Path(args.swap_dir) if args.swap_dir else None,
        blocktrace=args.blocktrace, perf=args.perf, cachegrind=args.cachegrind,
        timeout_s=args.timeout, tool_version=args.tool_version, image=args.image,
        device_record=Path(args.device_record).absolute() if args.device_record else None,
        wait_for_lock=args.wait, owner=owner(args), no_swap=args.no_swap, group=args.group,
    )


def parent_gone(args: argparse.Namespace, name: str) -> bool:
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


def size_of(text: str, option: str) -> int:
    """A size given to ``option``; a malformed one is refused naming the option."""
    from biossd.core.units import parse_size

    try:
        return parse_size(text)
    except ValueError as err:
        raise ValueError(f"{option} {text}: {err}") from None


def mem_bytes(text: str | None) -> int | None:
    """A --mem value: ``None`` for none or absent, else bytes, between the smallest cap a run can
    start under and one no host has (:data:`biossd.host.cgroups.MIN_CAP_BYTES`, ``MAX_CAP_BYTES``)."""
    from biossd.core.units import format_size
    from biossd.host.cgroups import MAX_CAP_BYTES, MIN_CAP_BYTES

    if text is None or text.lower() == "none":
        return None
    value = size_of(text, "--mem")
    if not MIN_CAP_BYTES <= value <= MAX_CAP_BYTES:
        raise ValueError(f"--mem {text}: a cap is between {format_size(MIN_CAP_BYTES)} and {format_size(MAX_CAP_BYTES)}; "
                         "for no cap say --mem none")
    return value


#: --swap: the smallest swap area worth making (mkswap needs a few pages; a smaller one is a typo).
MIN_SWAP_BYTES = 1 << 20


def swap_bytes(text: str) -> int:
    """A --swap size: at least :data:`MIN_SWAP_BYTES` (leave --swap out for no swap)."""
    from biossd.core.units import format_size, parse_size

    try:
        value = parse_size(text)
    except ValueError as err:
        raise argparse.ArgumentTypeError(str(err)) from None
    if value < MIN_SWAP_BYTES:
        raise argparse.ArgumentTypeError(f"{text}: a swap area is at least {format_size(MIN_SWAP_BYTES)} "
                                         "(leave --swap out for none)")
    return value


def seconds_between(low_s: float, high_s: float, what: str) -> Callable[[str], float]:
    """An argparse type: a finite number of seconds in [``low_s``, ``high_s``]."""
    def parse(text: str) -> float:
        import math

        try:
            value = float(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"{text!r} is not a number of seconds") from None
        if not math.isfinite(value) or not low_s <= value <= high_s:
            raise argparse.ArgumentTypeError(f"{text}: {what} is between {low_s:g} and {high_s:g} s")
        return value
    return parse


def settings(tool: str, pairs: list[str] | None) -> dict[str, str]:
    """--set NAME=VALUE: a tool's memory settings (the sizing rule's), each a name its catalogue
    entry declares under memory_options."""
    from biossd.study import catalogue

    given = labels(pairs or [])
    known = {opt["name"] for opt in catalogue.get(tool).memory_options()}
    unknown = sorted(set(given) - known)
    if unknown:
        raise UsageError(f"--set {', '.join(unknown)}: {tool}'s catalogue entry declares no such memory setting "
                         f"(it has: {', '.join(sorted(known)) or 'none'})")
    return given


def print_argv(argv: list[str], print0: bool) -> None:
    """An argv for a script: NUL-separated (``mapfile -d ''``), or one shell-quoted line."""
    from biossd.study import catalogue

    if print0:
        sys.stdout.write("".join(f"{arg}\0" for arg in argv))
    else:
        print(catalogue.shell_command(argv))


def held_host_lock(args: argparse.Namespace, what: str):
    """The host lock for an unmeasured write to a device under study (``--hold-host-lock``), so
    it never falls inside another run's measured window; else nothing."""
    import contextlib

    from biossd.host import hostlock

    if not getattr(args, "hold_host_lock", False):
        return contextlib.nullcontext()
    return hostlock.HostLock(what, owner=owner(args, "nothing was staged"))


#: Seeds are what the study's schema allows (``seed``: 0 to 2**32 - 1).
MAX_SEED = 2**32 - 1


def seed(text: str) -> int:
    """A --seed: a whole number from 0 to :data:`MAX_SEED`."""
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a whole number") from None
    if not 0 <= value <= MAX_SEED:
        raise argparse.ArgumentTypeError(f"{text}: a seed is from 0 to {MAX_SEED}")
    return value


def duration(text: str) -> float:
    """A --timeout: a duration longer than nothing (a zero timeout would end every run at once)."""
    from biossd.core.units import parse_duration_s

    try:
        value = parse_duration_s(text)
    except ValueError as err:
        raise argparse.ArgumentTypeError(str(err)) from None
    if not value > 0:
        raise argparse.ArgumentTypeError(f"{text}: a timeout is longer than 0 s (leave it out for none)")
    return value


def need_root(command: str) -> None:
    """Refuse ``command`` when not run as root (cgroups, tracefs, loop devices and /run/biossd
    are root's to see and change)."""
    import os

    if os.geteuid() != 0:
        raise UsageError("needs root to see and remove cgroups, tracefs instances, loop devices, "
                         f"swap areas and emulated disks; run `sudo biossd {command}`")


#: The sampler's interval: finer would busy the sampler thread beside the measured tool, coarser
#: would miss a run; (low, high) in seconds.
SAMPLE_INTERVAL_RANGE_S = (0.05, 3600.0)


def add_profile_options(p: argparse.ArgumentParser, evict_default: str = "all") -> None:
    """The profiler's options (`biossd profile`, `biossd catalogue run`), declared once; a catalogue
    tool's run evicts only its own data (``evict_default="run"``, docs/study.md "Code is not data")."""
    p.add_argument("--device", action="append", default=[], help="block device to trace")
    p.add_argument("--label", action="append", default=[], metavar="KEY=VALUE")
    p.add_argument("--cap-backend", default="auto",
                   choices=("auto", "cgroup-v1", "cgroup-v2", "systemd", "external", "none"))
    p.add_argument("--no-drop-caches", dest="drop_caches", action="store_false",
                   help="do not sync and drop the page cache before the run")
    p.add_argument("--evict", choices=("all", "run"), default=evict_default,
                   help="what the drop evicts: the whole page cache (all), or only the files of the run's working "
                        "directory and class device and the device's buffers, so that code read by earlier runs "
                        f"stays resident and outside the cap (run; default {evict_default})")
    p.add_argument("--read-code", action="store_true",
                   help="a warm-up: once the command has ended, read whole into its cgroup every file its processes "
                        "mapped or read outside the class's file systems, so no later capped run is charged for "
                        "the tool's code, then held resident (mapped and locked) until the run's owner ends "
                        "(needs root)")
    p.add_argument("--overwrite", action="store_true", help="replace a complete run directory")
    p.add_argument("--sample-interval", type=seconds_between(*SAMPLE_INTERVAL_RANGE_S, "the sampler's interval"),
                   default=1.0, metavar="SECONDS",
                   help=f"interval of the SAR-like sampler (default 1 s; {SAMPLE_INTERVAL_RANGE_S[0]:g} to "
                        f"{SAMPLE_INTERVAL_RANGE_S[1]:g} s)")
    p.add_argument("--swap", metavar="SIZE", type=swap_bytes,
                   help="give the run SIZE of swap on a loop device (removed afterwards)")
    p.add_argument("--swap-dir", metavar="DIR",
                   help="directory for the swap file, on the storage under test (default: cwd)")
    p.add_argument("--blocktrace", default="auto", choices=("auto", "blktrace", "tracefs", "off"),
                   help="block-request tracer (auto: blktrace where allowed, else tracefs)")
    p.add_argument("--perf", default="auto", choices=("auto", "pmu", "off"),
                   help="perf stat counters (auto: hardware events where a PMU exists, else software ones; "
                        "pmu: only where a PMU exists)")
    p.add_argument("--cachegrind", action="store_true",
                   help="run under valgrind cachegrind for simulated cache misses (slow)")
    p.add_argument("--timeout", type=duration, metavar="DURATION",
                   help="kill the command after this long, e.g. 300, 300s or 5m (outcome timeout)")
    p.add_argument("--tool-version", help="the tool's version, recorded in the manifest")
    p.add_argument("--image", help="container image reference or digest, recorded in the manifest")
    p.add_argument("--device-record", metavar="JSON",
                   help="`biossd device characterize` record of the storage, kept in the run")
    p.add_argument("--no-swap", action="store_true",
                   help="cap memory + swap at --mem: the run may not swap (an over-sized program is killed)")
    p.add_argument("--no-wait", dest="wait", action="store_false",
                   help="refuse (exit 75) instead of waiting when another measured run holds the host lock")
    add_owner_options(p, "this run", " (e.g. Nextflow): if it dies, the run is stopped")
    p.add_argument("--die-with-parent", action="store_true",
                   help="stop (SIGTERM) when the process that started this one dies, even by SIGKILL")
    p.add_argument("--group", metavar="TOKEN",
                   help="run as a member of a declared concurrent group whose leader holds the host lock")


def json_arg(text: str, what: str) -> Any:
    """A JSON value given inline or as ``@FILE``."""
    try:
        return json.loads(Path(text[1:]).read_text() if text.startswith("@") else text)
    except (OSError, ValueError) as err:
        raise UsageError(f"{what}: not valid JSON or not readable ({err})") from None


