"""The emulated HDD against its profile: fio's four spec numbers (direct and buffered I/O), and a
memory-capped program's swap traffic, on the emulated disk and on the native disk side by side.

  .venv/bin/python benchmarks/emulated_hdd.py [--profile seagate-barracuda-7200] [--budget 60s]
                                              [--pairs 3] [--hog-mib 160] [--cap 64M]
  .venv/bin/python benchmarks/emulated_hdd.py --records NATIVE/device.json EMULATED/device.json

The second form only reads two device records (e.g. a study's ``<host>-ssd/device.json`` and
``<host>-hdd/device.json``, measured side by side in one study) and prints the host-path table.

Swap service times come from the block trace of the emulated disk's loop device. The disk serves
one request at a time, so a request's service time is its completion minus the later of its
issue and the previous completion. "Random" means what the model seeks for: a request that does
not start within diskmodel.NEAR_BYTES after the end of the previous one. The implied IOPS is
1000 / mean random service time in ms.
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import tempfile
from pathlib import Path

from biossd.core.units import parse_duration_s, parse_size
from biossd.host import characterize
from biossd.host.devices import SECTOR_BYTES
from biossd.host.hdd import emulate
from biossd.host.hdd.diskmodel import MB, NEAR_BYTES, load_profile
from biossd.measure import profile
from biossd.measure.blocktrace import read_blocktrace

HOG = Path(__file__).resolve().parents[1] / "tests" / "programs" / "memory_hog.py"
BAND = 0.20
#: Writeback of a sequential file comes in pieces of at least this size; smaller writes are metadata.
SEQ_PIECE_BYTES = 128 << 10


def spec_table(record: dict, prof) -> None:
    r = record["results"]
    rows = (("seq read MB/s", prof.seq_read_mbs, "seq_read", "mb_per_s"),
            ("seq write MB/s", prof.seq_write_mbs, "seq_write", "mb_per_s"),
            ("rand read IOPS", prof.rand_read_iops, "rand_read_qd1", "iops"),
            ("rand write IOPS", prof.rand_write_iops, "rand_write_qd1", "iops"))
    print(f"{'':16} {'profile':>8} {'direct':>8} {'ratio':>6} {'buffered':>9} {'ratio':>6} {'buf. eff.':>9}")
    for label, spec, job, key in rows:
        d, b = r[f"direct_{job}"][key], r[f"buffered_{job}"][key]
        eff_key = "effective_mb_per_s" if key == "mb_per_s" else "effective_iops"
        eff = r[f"buffered_{job}"].get(eff_key)
        print(f"{label:16} {spec:8.1f} {d:8.1f} {d / spec:6.2f} {b:9.1f} {b / spec:6.2f} "
              f"{'' if eff is None else f'{eff:9.1f}'}")


def service_times(trace, device: str):
    t = trace[trace.device.eq(device) & trace.op.isin(["R", "W"]) & trace.complete_s.notna()]
    t = t.sort_values("complete_s").reset_index(drop=True)
    prev_done = t.complete_s.shift(1).fillna(-1.0)
    start = t.issue_s.where(t.issue_s > prev_done, prev_done)
    t = t.assign(service_ms=(t.complete_s - start) * 1000.0)
    gap = t.sector * SECTOR_BYTES - (t.sector * SECTOR_BYTES + t.bytes).shift(1)
    t = t.assign(random=~gap.between(0, NEAR_BYTES))
    return t


def buffered_write_disk_side(mount: Path, loop: str, work: Path, size_bytes: int, budget_s: float, spec_mbs: float) -> None:
    """fio's buffered sequential write counts the page-cache fill before the flush and the
    file system's journal commit at ``end_fsync``, which a real disk pays as well (on a host with
    this much memory, writeback starts only at ``end_fsync``). So beside fio's number, the disk's
    side: the bytes written back over the writeback's span on the loop device."""
    test_file = mount / "buffered-write.dat"
    characterize.lay_out(test_file, size_bytes)
    run = work / "buffered-write"
    argv = characterize.fio_argv(test_file, "write", characterize.SEQ_BLOCK, 1, False, budget_s, size_bytes, "bw")
    body = profile.run(profile.ProfileRequest(argv=argv, out_dir=run, mem_bytes=None, devices=[loop], overwrite=True))
    test_file.unlink()
    assert body["outcome"] == "ok", body["outcome"]
    job = json.loads((run / "stdout.log").read_text())["jobs"][0]["write"]
    fio_mbs = job["bw_bytes"] / MB
    t = read_blocktrace(run / "blocktrace.tsv.gz")
    t = t[t.device.eq(loop) & t.op.eq("W") & t.complete_s.notna()]
    fill_s = t.issue_s.min()
    disk_mbs = t.bytes.sum() / (t.complete_s.max() - t.issue_s.min()) / MB
    print(f"  fio: {job['io_bytes'] / MB:.0f} MB in {job['runtime'] / 1000:.2f} s of fio's runtime, "
          f"{body['wall_s']:.2f} s wall; writeback {t.bytes.sum() / MB:.0f} MB from {fill_s:.2f} s to "
          f"{t.complete_s.max():.2f} s of the run ({int((t.bytes < SEQ_PIECE_BYTES).sum())} writes under "
          f"{SEQ_PIECE_BYTES >> 10} KiB: the journal's)")
    print(f"buffered seq write: fio {fio_mbs:.1f} MB/s (ratio {fio_mbs / spec_mbs:.2f}); the disk's side: "
          f"{disk_mbs:.1f} MB/s (ratio {disk_mbs / spec_mbs:.2f})")


def host_path_table(native: dict, emulated: dict, prof) -> None:
    """fio's buffered sequential write is the host's page-cache fill, writeback and ``end_fsync``
    as much as the disk: on the native device of the same host it runs far below that device's
    direct rate. The host's share is the native device's buffered time less its direct time for
    the same bytes; an ideal disk at the profile's rate, on this host, would take the profile's
    time for those bytes plus that share. The emulated disk is compared with that ideal disk."""
    n, e = native["results"], emulated["results"]
    size_mb = native["file_bytes"] / MB
    host_s = n["buffered_seq_write"]["runtime_s"] - size_mb / n["direct_seq_write"]["mb_per_s"]
    ideal_mbs = emulated["file_bytes"] / MB / (emulated["file_bytes"] / MB / prof.seq_write_mbs + host_s)
    measured = e["buffered_seq_write"]["mb_per_s"]
    print(f"buffered seq write, host path: the native device {n['buffered_seq_write']['mb_per_s']:.1f} MB/s buffered "
          f"against {n['direct_seq_write']['mb_per_s']:.1f} direct (ratio "
          f"{n['buffered_seq_write']['mb_per_s'] / n['direct_seq_write']['mb_per_s']:.2f}): the host adds "
          f"{host_s:.2f} s to {size_mb:.0f} MB")
    print(f"  an ideal {prof.seq_write_mbs:.0f} MB/s disk on this host: {ideal_mbs:.1f} MB/s "
          f"(ratio to the profile {ideal_mbs / prof.seq_write_mbs:.2f}); the emulated disk {measured:.1f} MB/s, "
          f"ratio to the ideal disk {measured / ideal_mbs:.2f}")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--profile", default="seagate-barracuda-7200")
    ap.add_argument("--budget", default="60s", help="fio time budget")
    ap.add_argument("--pairs", type=int, default=3)
    ap.add_argument("--hog-mib", type=int, default=160)
    ap.add_argument("--cap", default="64M")
    ap.add_argument("--records", nargs=2, metavar=("NATIVE", "EMULATED"),
                    help="only compare two device records of one characterize session")
    args = ap.parse_args()
    prof = load_profile(args.profile)
    if args.records:
        native, emulated = (json.loads(Path(r).read_text()) for r in args.records)
        print(f"{args.records[1]} against the profile {prof.name}:")
        spec_table(emulated, prof)
        host_path_table(native, emulated, prof)
        return
    with tempfile.TemporaryDirectory(dir="/var/tmp") as tmp:
        work = Path(tmp)
        mount = work / "hdd"
        state = emulate.up(mount, args.profile, 2 << 30, backing_dir=work)
        loop = Path(state["loop_device"]).name
        try:
            record = characterize.characterize(mount, parse_duration_s(args.budget))
            print(f"fio on the emulated {prof.name} ({state['loop_device']}), {record['job_s']:.1f} s per job:")
            spec_table(record, prof)
            buffered_write_disk_side(mount, loop, work, record["file_bytes"], record["job_s"], prof.seq_write_mbs)
            walls: dict[str, list[float]] = {"native": [], "emulated": []}
            random_reads, random_writes = [], []
            for i in range(args.pairs):
                for where in (("native", "emulated") if i % 2 == 0 else ("emulated", "native")):
                    swap_dir = work if where == "native" else mount
                    run = work / f"run-{where}"
                    body = profile.run(profile.ProfileRequest(
                        argv=[sys.executable, str(HOG), str(args.hog_mib)], out_dir=run,
                        mem_bytes=parse_size(args.cap), swap_bytes=parse_size(args.cap) * 5,
                        swap_dir=swap_dir, devices=[loop] if where == "emulated" else [], overwrite=True))
                    assert body["outcome"] == "ok", body["outcome"]
                    walls[where].append(body["wall_s"])
                    if where == "emulated":
                        t = service_times(read_blocktrace(run / "blocktrace.tsv.gz"), loop)
                        random_reads += t[t.random & t.op.eq("R")].service_ms.tolist()
                        random_writes += t[t.random & t.op.eq("W")].service_ms.tolist()
                print(f"pair {i + 1}: hog {args.hog_mib} MiB under {args.cap}: native swap {walls['native'][-1]:.2f} s, "
                      f"emulated swap {walls['emulated'][-1]:.2f} s")
            print(f"median wall: native {statistics.median(walls['native']):.2f} s, emulated "
                  f"{statistics.median(walls['emulated']):.2f} s, ratio "
                  f"{statistics.median(walls['emulated']) / statistics.median(walls['native']):.1f}")
            for label, times, spec in (("read", random_reads, prof.rand_read_iops),
                                       ("write", random_writes, prof.rand_write_iops)):
                if times:
                    iops = 1000.0 / statistics.mean(times)
                    print(f"swap random {label}s on {loop}: {len(times)} requests, median service "
                          f"{statistics.median(times):.2f} ms, implied {iops:.1f} IOPS vs profile {spec} "
                          f"(ratio {iops / spec:.2f}, band ±{BAND:.0%})")
        finally:
            print("down:", "; ".join(emulate.down(mount) or []))


if __name__ == "__main__":
    main()
