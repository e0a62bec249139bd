"""The emulated HDD against its spec and against its own model: fio on the emulated device, job by
job, beside what the spec sheet says and what :class:`biossd.host.models.diskmodel.DiskModel` expects
of the same requests.

  .venv/bin/python benchmarks/emulated_hdd.py [--profile seagate-barracuda-7200] [--data-memory 6554K]
                                              [--job-s 15] [--out FILE.json]

The disk is scaled as the study scales it (D = 1 GB / --data-memory; the model's buffer / D, its
distances x D); a test file of capacity / D, laid out once on it, spans the whole stroke. Then,
with direct I/O at queue depth 1:

* sequential 1 MiB reads and writes (the spec's MB/s);
* random 4 KiB reads over the whole file (the spec's read IOPS), and random 4 KiB writes each
  written through (``O_DSYNC``: a write then a flush, so the buffer cannot hide it; the spec's
  write IOPS);
* random 4 KiB reads over 64 MiB (short seeks: no spec figure, the model's only);
* a burst of random 4 KiB writes that fits the buffer (each completes once it crossed the
  interface) and one 20 times the buffer (the buffer full: each waits for a destage).

"model" is the model's mean service for the same kind of request stream (seeded offsets over the
same span, served from a cold disk). fio's own turnaround and the FUSE path add a little to
every request, which the model does not see.
"""

from __future__ import annotations

import argparse
import json
import random
import subprocess
import tempfile
from pathlib import Path

from biossd.core.units import format_size, parse_size
from biossd.host.hdd import emulate
from biossd.host.models import diskmodel
from biossd.study.sizing import rule

KIB, MIB = 1 << 10, 1 << 20
#: The test file (the whole stroke) fills this share of the device (the file system needs the rest).
FILE_SHARE = 0.96
SMALL_SPAN = 64 * MIB
MODEL_REQUESTS = 20_000
#: The bursts: within the buffer (half of it), and far beyond it.
BURST_FACTORS = (0.5, 20.0)


def fio(path: Path, rw: str, bs: str, size: int, **extra) -> dict:
    argv = ["fio", "--name=t", f"--filename={path}", f"--rw={rw}", f"--bs={bs}", f"--size={size}", "--direct=1",
            "--ioengine=psync", "--output-format=json", "--randrepeat=1", "--norandommap", "--thread",
            *(f"--{k}={v}" for k, v in extra.items())]
    out = subprocess.run(argv, check=True, capture_output=True, text=True).stdout
    job = json.loads(out)["jobs"][0]
    side = job["read" if "read" in rw else "write"]
    return {"iops": side["iops"], "mb_per_s": side["bw_bytes"] / diskmodel.MB,
            "lat_ms": side["clat_ns"]["mean"] / 1e6 + side.get("slat_ns", {}).get("mean", 0) / 1e6, "ios": side["total_ios"]}


def model_ms(profile: diskmodel.DiskProfile, scale: float, ops: list[str], offsets: list[int], sizes: list[int]) -> float:
    """The model's mean time per data request of a stream (flushes' time charged to the write before)."""
    model = diskmodel.DiskModel(profile, seed=None, scale=scale)
    means, _ = model.stream_ms(ops, offsets, sizes, [0.0] * len(ops))
    data = sum(1 for op in ops if op != diskmodel.FLUSH)
    return sum(means) / data


def random_offsets(span: int, n: int, block: int = 4 * KIB, seed: int = 1) -> list[int]:
    rng = random.Random(seed)
    return [rng.randrange(span // block) * block for _ in range(n)]


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--profile", default="seagate-barracuda-7200")
    ap.add_argument("--data-memory", default="6554K", help="the study's M: the disk is scaled by D = 1 GB / M")
    ap.add_argument("--job-s", type=float, default=15.0, help="seconds per timed fio job")
    ap.add_argument("--out", help="write the table as JSON here")
    args = ap.parse_args()
    profile = diskmodel.load_profile(args.profile)
    scale = rule.memory_divisor(parse_size(args.data_memory))
    stroke = int(profile.capacity_bytes / scale) // MIB * MIB
    device = int(stroke / FILE_SHARE) // MIB * MIB
    rows = []
    with tempfile.TemporaryDirectory(dir="/var/tmp", prefix="biossd-emulated-hdd-") as tmp:
        mount = Path(tmp) / "hdd"
        state = emulate.up(mount, args.profile, device, backing_dir=Path(tmp), scale=scale)
        try:
            model = diskmodel.DiskModel(profile, scale=scale)
            span = stroke  # the test file: the whole stroke
            test = mount / "fio.dat"
            print(f"{profile.name} scaled by D = {scale:.1f} ({format_size(device)} device on {state['loop_device']}, "
                  f"buffer {format_size(model.buffer_bytes)}, read segment {format_size(model.segment_bytes)}); "
                  f"laying out {format_size(span)} ...", flush=True)
            lay = fio(test, "write", "1M", span, end_fsync=1)
            timed = {"runtime": f"{int(args.job_s)}s", "time_based": 1}

            def row(job: str, measured: dict, key: str, spec: float | None, expected: float) -> None:
                value = measured[key]
                rows.append({"job": job, "unit": key, "measured": value, "spec": spec, "model": expected,
                             "vs_spec": value / spec - 1 if spec else None, "vs_model": value / expected - 1})
                print(f"{job:44} {value:10.1f} {key:8} spec {spec if spec else '-':>8} model {expected:9.1f}  "
                      + (f"vs spec {value / spec - 1:+.1%}  " if spec else " " * 18) + f"vs model {value / expected - 1:+.1%}",
                      flush=True)

            n_seq = 512
            seq_r = model_ms(profile, scale, ["read"] * n_seq, [i * MIB for i in range(n_seq)], [MIB] * n_seq)
            row("sequential read, 1 MiB", fio(test, "read", "1M", span, **timed), "mb_per_s", profile.seq_read_mbs,
                MIB / diskmodel.MB / (seq_r / 1000))
            seq_w = model_ms(profile, scale, ["write"] * n_seq + ["flush"], [i * MIB for i in range(n_seq)] + [0],
                             [MIB] * n_seq + [0])
            row("sequential write, 1 MiB", fio(test, "write", "1M", span, **timed, end_fsync=1), "mb_per_s",
                profile.seq_write_mbs, MIB / diskmodel.MB / (seq_w / 1000))
            offs = random_offsets(span, MODEL_REQUESTS)
            row("random read 4 KiB, whole stroke", fio(test, "randread", "4k", span, **timed), "iops",
                profile.rand_read_iops, 1000 / model_ms(profile, scale, ["read"] * len(offs), offs, [4096] * len(offs)))
            through_ops = [op for _ in offs[:5000] for op in ("write", "flush")]
            through_offs = [x for o in offs[:5000] for x in (o, 0)]
            row("random write 4 KiB written through (O_DSYNC)", fio(test, "randwrite", "4k", span, **timed, sync="dsync"),
                "iops", profile.rand_write_iops,
                1000 / model_ms(profile, scale, through_ops, through_offs, [4096, 0] * 5000))
            small = random_offsets(SMALL_SPAN, MODEL_REQUESTS)
            row(f"random read 4 KiB over {format_size(SMALL_SPAN)}", fio(test, "randread", "4k", SMALL_SPAN, **timed),
                "iops", None, 1000 / model_ms(profile, scale, ["read"] * len(small), small, [4096] * len(small)))
            for factor in BURST_FACTORS:
                n = max(1, int(model.buffer_bytes * factor) // 4096)
                subprocess.run(["sync"], check=True)
                burst = offs[:n]
                label = f"random write burst 4 KiB, {factor:g} x the buffer ({n})"
                row(label, fio(test, "randwrite", "4k", span, number_ios=n, randseed=7), "iops", None,
                    1000 / model_ms(profile, scale, ["write"] * n, burst, [4096] * n))
            print(f"(laid out at {lay['mb_per_s']:.1f} MB/s)")
        finally:
            print("down:", "; ".join(emulate.down(mount) or []))
    if args.out:
        Path(args.out).write_text(json.dumps({"profile": args.profile, "scale": scale, "device_bytes": device,
                                              "job_s": args.job_s, "rows": rows}, indent=2) + "\n")


if __name__ == "__main__":
    main()
