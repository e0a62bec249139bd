"""From runs to results: the run table, predictions, the report, the supplement and the RO-Crate."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from biossd.cli import options
from biossd.cli.options import UsageError
from biossd.core import paths


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
               **{side: Path(f) for side, f in options.labels(args.device).items()}}
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
    from biossd.host.models import devicemodels

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


def _pair(args: argparse.Namespace) -> tuple[str, str]:
    """``--fast`` and ``--slow``, each where not given the study's own (its first two storage
    classes: :func:`biossd.analysis.resultset.study_pair`)."""
    from biossd.analysis import resultset

    fast, slow = resultset.study_pair(Path(r) for r in args.results)
    return args.fast or fast, args.slow or slow


def cmd_report(args: argparse.Namespace) -> int:
    from biossd.outputs import report

    fast, slow = _pair(args)
    params = {"fast": fast, "slow": slow}
    done = report.render([Path(r) for r in args.results], Path(args.out) if args.out else None, parameters=params,
                         html=not args.no_html, experiments_only=args.experiments_only)
    for path in done:
        print(path)
    return 0


def cmd_paper(args: argparse.Namespace) -> int:
    from biossd.outputs import supplement

    fast, slow = _pair(args)
    print(supplement.build([Path(r) for r in args.results], Path(args.out), render=not args.no_render,
                           fast=fast, slow=slow))
    return 0


def cmd_crate(args: argparse.Namespace) -> int:
    from biossd.outputs import crate

    print(crate.write(Path(args.results)))
    if not args.validate:
        return 0
    from biossd.outputs import crate_validate

    verdict = crate_validate.validate(Path(args.results))
    print(verdict.summary(), file=sys.stdout if verdict.ok else sys.stderr)
    return 0 if verdict.ok else 1


def cmd_export(args: argparse.Namespace) -> int:
    from biossd.outputs import wfformat

    print(wfformat.write(Path(args.results), Path(args.out) if args.out else None))
    return 0


def register(sub: argparse._SubParsersAction) -> None:
    """This room's commands and their options."""
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
                        "study/devices/), a device of the paper's tables (paper:NAME) or a cloud volume behind an "
                        "instance (cloud:VOLUME[@INSTANCE], docs/cloud.md); repeatable")
    p.add_argument("-o", "--output", help="the table: .csv or .parquet (default: CSV on stdout)")
    p.add_argument("--json", metavar="PATH", help="also write the predictions and the targets as JSON")
    p.set_defaults(func=cmd_predict)

    p = sub.add_parser("report", help="run the notebooks over one or more result sets (papermill)")
    p.add_argument("results", nargs="+", help="result folders (--outdir of study runs; e.g. one per host)")
    p.add_argument("--out", help="report directory (default: the first result folder's report/)")
    p.add_argument("--fast", help="fast side of the speedup pair (class or <host>-<class>; default: the study's "
                   "first storage class, else ssd)")
    p.add_argument("--slow", help="slow side of the speedup pair (default: the study's second class, else hdd)")
    p.add_argument("--no-html", action="store_true", help="keep the executed notebooks as .ipynb only")
    p.add_argument("--experiments-only", action="store_true",
                   help="only the related experiments' notebooks (notebooks/experiments/)")
    p.set_defaults(func=cmd_report)

    p = sub.add_parser("paper", help="build the supplement (paper/) from one or more result sets")
    p.add_argument("results", nargs="+", help="result folders (the report of the first is used or made)")
    p.add_argument("--out", default=str(paths.PAPER_BUILD_DIR),
                   help="build directory (default paper/build)")
    p.add_argument("--no-render", action="store_true", help="use the existing report instead of rendering it again")
    p.add_argument("--fast", help="as for report")
    p.add_argument("--slow", help="as for report")
    p.set_defaults(func=cmd_paper)

    p = sub.add_parser("crate", help="write an RO-Crate (ro-crate-metadata.json) for a result set")
    p.add_argument("results", help="a result folder (--outdir of a study run)")
    p.add_argument("--validate", action="store_true",
                   help="then check it with roc-validator, offline, against the profiles it claims (exit 1 if it fails)")
    p.set_defaults(func=cmd_crate)

    export_p = sub.add_parser("export", help="a result set in another project's format").add_subparsers(
        dest="export_cmd", required=True)
    p = export_p.add_parser("wfformat", help="a WfFormat 1.5 instance (WfCommons; simulate it in WRENCH) of a study "
                                             "session or a profiled pipeline")
    p.add_argument("results", help="the --outdir of a study run or of a pipeline profiled with biossd")
    p.add_argument("--out", help="where to write it (default RESULTS/pipeline_info/wfformat.json)")
    p.set_defaults(func=cmd_export)

