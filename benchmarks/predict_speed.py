"""Prediction speed: how fast the prediction replays request streams, and how long a whole
result set takes.

  .venv/bin/python benchmarks/predict_speed.py [--requests 2000000] [--rounds 5] [RESULTS ...]

Part 1 replays a synthetic stream (half reads, half writes, a mix of sequential runs and random
jumps, queue depths 1–32) on each kind of target, one core (NumPy, no threads), and prints the
median requests per second over ``--rounds``. Part 2, for each result folder given, times the
notebook-level calls over all its runs: the validation (each side on the other's record) and the
prediction on the paper's nine devices (Fig. 2(b)), and prints the validation's figures (median
and largest error, group agreement: the targets of biossd.analysis.predict's validation).
"""

from __future__ import annotations

import argparse
import os
import statistics
import time

os.environ.setdefault("OMP_NUM_THREADS", "1")
os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")

import numpy as np  # noqa: E402 (after the thread counts are set)

from biossd import analysis  # noqa: E402 (after the thread counts are set)
from biossd.analysis import predict  # noqa: E402 (after the thread counts are set)
from biossd.host.models import devicemodels  # noqa: E402 (after the thread counts are set)

TARGET_REQUESTS_PER_S = 1_000_000
TARGET_RESULT_SET_S = 10.0


def synthetic_stream(n: int, seed: int = 0) -> devicemodels.Stream:
    rng = np.random.default_rng(seed)
    nbytes = rng.choice([4096, 8192, 65536, 131072, 1 << 20], n)
    jump = rng.random(n) < 0.3
    offset = np.cumsum(nbytes) - nbytes
    offset = np.where(jump, rng.integers(0, 1 << 40, n) // 4096 * 4096, offset)
    return devicemodels.Stream(is_write=rng.random(n) < 0.5, offset=offset.astype(np.int64), nbytes=nbytes.astype(np.int64),
                               depth=rng.integers(1, 33, n), idle_ms=rng.exponential(0.1, n),
                               new_stream=np.zeros(n, bool))


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--requests", type=int, default=2_000_000)
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("results", nargs="*")
    args = ap.parse_args()
    stream = synthetic_stream(args.requests)
    targets = [devicemodels.paper_target("Seagate Barracuda"), devicemodels.paper_target("Samsung 840 Pro"),
               devicemodels.FlashTarget("record-like", 1200, 2400, 54000, 62000, 11000, 8500, "synthetic")]
    print(f"{'target':24} {'kind':6} {'median Mreq/s':>14} {'min':>6} {'max':>6}")
    for target in targets:
        rates = []
        for _ in range(args.rounds):
            t0 = time.perf_counter()
            target.serve(stream)
            rates.append(args.requests / (time.perf_counter() - t0) / 1e6)
        print(f"{target.name:24} {target.kind:6} {statistics.median(rates):14.2f} {min(rates):6.2f} {max(rates):6.2f}")
    print(f"target: at least {TARGET_REQUESTS_PER_S / 1e6:g} M requests/s")

    for root in args.results:
        times, n_req = [], 0
        for _ in range(args.rounds):
            t0 = time.perf_counter()
            a = analysis.open_results([root])
            validation = a.cross_prediction
            paper = a.paper_device_predictions
            times.append(time.perf_counter() - t0)
            n_req = int(validation.shape[0]), int(paper["requests"].fillna(0).sum())
        print(f"{root}: {len(a.rs.runs)} runs; validation rows {n_req[0]}, paper-device rows {len(paper)} "
              f"({n_req[1]:,} requests replayed); median {statistics.median(times):.2f} s "
              f"(min {min(times):.2f}, max {max(times):.2f}); target under {TARGET_RESULT_SET_S:g} s")
        print(f"  validation: {predict.validation_summary(validation, a.predicted_speedups)}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
