"""Before a run's window opens: the devices it will touch are as its storage class set them.

A study compares storage classes that differ only in the device (Lee, Min and Yoon 2015 §2.1:
a "drop-in replacement ... in the same computer without any other modifications"). ``biossd
storage up`` gives each class's loop device the class's queue policy
(:func:`biossd.host.devices.queue_policy`: one read-ahead, no scheduler, no writeback throttling,
the rotational flag of the class) and direct I/O to what is below it; a run's swap area takes the
settings of the device its file is on (:class:`biossd.host.swap.LoopSwap`). Anything may have
changed them since (a reset of the device's limits, an administrator), so each run checks them
here and records what it found; a mismatch is the harness's error, never a result.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, Sequence

from biossd.host import devices


def expected_policies(emulation: dict[str, Any] | None, swap_device: str | None,
                      swap_queue: dict[str, object] | None) -> dict[str, dict[str, object]]:
    """Per device the run touches and biossd set up: the queue it must have. The class's loop
    device (``emulation``: :func:`biossd.host.hdd.emulate.run_record` of the run's directory) and
    the run's swap device; a device biossd did not set up (a real disk) is not held to one."""
    expected: dict[str, dict[str, object]] = {}
    if emulation and emulation.get("queue") and emulation.get("loop_device"):
        expected[Path(emulation["loop_device"]).name] = dict(emulation["queue"])
    if swap_device and swap_queue:
        expected[swap_device] = dict(swap_queue)
    return expected


def check(traced: Sequence[str], expected: dict[str, dict[str, object]]) -> dict[str, Any]:
    """What the devices' queues are now against ``expected``: the problems found (empty: the
    run may measure), the devices checked and the traced ones no policy holds."""
    problems = []
    for name, policy in expected.items():
        problems += devices.queue_mismatches(name, policy)
        if devices.device_facts(name).get("loop_direct_io") is False:
            problems.append(f"{name} does not do direct I/O to its backing file")
    return {"checked": sorted(expected), "policies": expected, "problems": problems, "ok": not problems,
            "not_held": sorted(set(traced) - set(expected))}


def problem_text(record: dict[str, Any]) -> str:
    """The harness error a failed check raises, naming each difference and what to do."""
    return ("the storage class's devices are not as the study set them: " + "; ".join(record["problems"])
            + ". Nothing was measured: a run on them would not be comparable with the other class's. "
            "Bring the storage up again (`biossd storage down` then `up`, or restart the study with -resume)")
