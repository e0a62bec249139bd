"""Randomized interrupts, the long version: at least 20 kill points of `biossd profile` (cap,
swap, block trace), 10 of `emulate-hdd up`/`down`, 3 of the pipeline with emulated storage (each
followed by -resume), 6 of the object-store and shared-device experiments' tasks (S3Proxy and
s3fs; nested emulated disks and a concurrent group) and 6 SIGKILLs of `biossd profile` followed,
with no cleanup between, by the next run, whose command looks around while its window is open
(the dead run's tool, swap area, cgroup and trace instance must be gone); SIGINT, SIGTERM, SIGHUP
and SIGKILL mixed, seeded; then (``--edges N``) N rounds of every *edge* — the moment just after
each step of `biossd profile` and of `emulate-hdd up` — with each of the four signals; then
(``--session N``) N sessions of a user's pipeline profiled by biossd, cut short in turn by
Nextflow SIGKILLed, a task killed by Nextflow's time limit and the session's leader SIGKILLed,
the host checked before any `biossd cleanup`.

    sudo .venv/bin/python benchmarks/interrupts.py [--seed 15] [--profile 20] [--emulate 10] [--pipeline 3]
        [--experiment 6] [--next 6] [--edges 3] [--session 30]

Prints one line per kill point (what was left: the answer must be "nothing") and a summary;
exits 1 if any point left something. `make test` runs a short version (tests/test_interrupts.py).
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))
import interrupts  # noqa: E402 (the tests' helpers, on the path set above)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--seed", type=int, default=15)
    ap.add_argument("--profile", type=int, default=20)
    ap.add_argument("--emulate", type=int, default=10)
    ap.add_argument("--pipeline", type=int, default=3)
    ap.add_argument("--experiment", type=int, default=6, help="experiment tasks (object store, shared device)")
    ap.add_argument("--next", type=int, default=6, help="SIGKILLs followed by the next run, no cleanup between")
    ap.add_argument("--edges", type=int, default=3, help="rounds of every edge with every signal")
    ap.add_argument("--session", type=int, default=30, help="sessions of a user's pipeline cut short")
    args = ap.parse_args()
    env = dict(os.environ)
    env["PATH"] = f"{Path(sys.executable).parent}{os.pathsep}{env.get('PATH', '')}"
    env["NXF_OFFLINE"] = "true"
    with tempfile.TemporaryDirectory(prefix="biossd-interrupts-") as work:
        env["NXF_TEMP"] = str(Path(work) / "nxf-temp")  # what a killed Nextflow leaves stays here
        Path(env["NXF_TEMP"]).mkdir()
        points = interrupts.run_points(args.seed, Path(work), env, args.profile, args.emulate, args.pipeline,
                                       report=lambda line: print(line, flush=True), n_experiment=args.experiment,
                                       n_next=args.next, signals=interrupts.SIGNALS_WITH_HANGUP)
        for i in range(args.edges):
            points += interrupts.edge_points(Path(work) / f"edges-{i}", env, interrupts.SIGNALS_WITH_HANGUP,
                                             interrupts.SIGNALS_WITH_HANGUP,
                                             report=lambda line: print(line, flush=True))
        points += interrupts.session_points(args.seed, Path(work) / "sessions", env, args.session,
                                            report=lambda line: print(line, flush=True))
    print(interrupts.summary(points))
    return 1 if any(p.left for p in points) else 0


if __name__ == "__main__":
    sys.exit(main())
