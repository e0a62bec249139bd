"""`biossd data`: the inputs, synthetic or published, and synthetic result sets."""

from __future__ import annotations

import argparse
import json
from pathlib import Path

from biossd.cli import options
from biossd.cli.options import UsageError


def cmd_data_synth(args: argparse.Namespace) -> int:
    from biossd.study.inputs import data

    if args.list:
        for kind in data.KINDS.values():
            print(f"{kind.name}\t{kind.description}")
        return 0
    if not args.kind or not args.output:
        raise UsageError("give KIND and -o DIR (or --list)")
    with options.held_host_lock(args, f"biossd data synth {args.kind} (writing {args.output})"):
        record = data.synth(args.kind, Path(args.output), options.size_of(args.size, "--size"), args.seed, args.scale)
    print(json.dumps(record, indent=2, sort_keys=True))
    return 0


def cmd_data_fetch(args: argparse.Namespace) -> int:
    from biossd.study.inputs import datasets

    record = datasets.fetch(args.dataset, Path(args.output or f"data/{args.dataset}"), args.accept_unverified,
                            Path(args.manifests))
    print(json.dumps(record, indent=2))
    return 0


def cmd_data_prepare(args: argparse.Namespace) -> int:
    from biossd.study.inputs import datasets

    with options.held_host_lock(args, f"biossd data prepare {args.dataset} (writing {args.output})"):
        record = datasets.prepare(args.dataset, Path(args.data or f"data/{args.dataset}"), Path(args.output),
                                  options.size_of(args.size, "--size"), args.seed, args.scale, Path(args.manifests))
    print(json.dumps(record, indent=2, sort_keys=True))
    return 0


def cmd_data_manifests(args: argparse.Namespace) -> int:
    from biossd.study.inputs import datasets

    for m in datasets.load_all(Path(args.manifests)):
        prepare = m.get("prepare")
        recipe = f"recipe {prepare['recipe']}" if prepare else "no recipe as code"
        pinned = sum(1 for f in m["files"] if f.get("sha256"))
        print(f"{m['id']}\t{m['name']}\t{len(m['files'])} files ({pinned} with sha256)\t"
              f"used by {', '.join(m['used_by'])}\tsynthetic: {m['synthetic']['kind']}\t{recipe}")
    return 0


def cmd_data_synth_results(args: argparse.Namespace) -> int:
    from biossd.analysis import synthresults

    truth = synthresults.write(Path(args.output), caps=tuple(args.caps.split(",")),
                               scales=tuple(int(s) for s in args.scales.split(",")), repeats=args.repeats,
                               seed=args.seed, twins=not args.one_host)
    print("\n".join(truth["roots"]))
    return 0


def register(sub: argparse._SubParsersAction) -> None:
    """This room's commands and their options."""
    data_p = sub.add_parser("data", help="input data").add_subparsers(dest="data_cmd", required=True)
    p = data_p.add_parser("synth", help="generate a synthetic input")
    p.add_argument("kind", nargs="?")
    p.add_argument("--list", action="store_true", help="list the kinds")
    p.add_argument("--size", default="4M")
    p.add_argument("--seed", type=options.seed, default=7)
    p.add_argument("--scale", type=int, default=1, help="replicate the baseline k times")
    p.add_argument("-o", "--output")
    options.add_hold_host_lock_option(p, "write")
    options.add_owner_options(p, "this work")
    p.set_defaults(func=cmd_data_synth)
    p = data_p.add_parser("fetch", help="download a data set of data-manifests/, verified (needs network)")
    p.add_argument("dataset")
    p.add_argument("-o", "--output", help="directory (default data/DATASET)")
    p.add_argument("--accept-unverified", action="store_true",
                   help="take files whose sha256 the manifest does not know (recorded as unverified)")
    _manifests_option(p)
    p.set_defaults(func=cmd_data_fetch)
    p = data_p.add_parser("prepare", help="make a study input from a fetched data set by its manifest's recipe")
    p.add_argument("dataset")
    p.add_argument("--data", help="the fetched files (default data/DATASET, where `biossd data fetch` puts them)")
    p.add_argument("--size", default="4M", help="the input's baseline size (its main files' bytes)")
    p.add_argument("--seed", type=options.seed, default=7, help="the subsample's seed")
    p.add_argument("--scale", type=int, default=1, help="replicate the baseline k times")
    p.add_argument("-o", "--output", required=True, help="the input's directory (gets prepared.json)")
    _manifests_option(p)
    options.add_hold_host_lock_option(p, "write")
    options.add_owner_options(p, "this work")
    p.set_defaults(func=cmd_data_prepare)
    p = data_p.add_parser("synth-results", help="a synthetic result set with planted patterns (tests, demos)")
    p.add_argument("output", help="directory (gets ssd/ and hdd/ result folders and truth.json)")
    p.add_argument("--caps", default="1G,4G,16G,32G")
    p.add_argument("--scales", default="1,2,4,8,16")
    p.add_argument("--repeats", type=int, default=3)
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--one-host", action="store_true", help="one result folder with both classes")
    p.set_defaults(func=cmd_data_synth_results)

    p = data_p.add_parser("manifests", help="list the data manifests")
    _manifests_option(p)
    p.set_defaults(func=cmd_data_manifests)


def _manifests_option(p: argparse.ArgumentParser) -> None:
    from biossd.core.paths import DATA_MANIFESTS_DIR

    p.add_argument("--manifests", default=str(DATA_MANIFESTS_DIR), help="the manifests' directory (default: %(default)s)")

