"""Run as the measured command of the run after a SIGKILLed one: print, as JSON, what of a dead
run it finds around it while its window is open — its tool still running, swap areas, cgroups
and trace instances whose maker is gone. Every list must be empty. Usage: next_run_environment.py
TOOL_SCRIPT (the dead run's tool, by its script's path)."""

import json
import os
import sys

from biossd.host import cgroups, swap, tracefs


def running(script: str) -> list[int]:
    found = []
    for pid in (p for p in os.listdir("/proc") if p.isdigit()):
        try:
            argv = open(f"/proc/{pid}/cmdline", "rb").read().decode(errors="replace").split("\0")
        except OSError:
            continue
        if argv[1:2] == [script]:
            found.append(int(pid))
    return found


if __name__ == "__main__":
    print(json.dumps({"tool": running(sys.argv[1]), "swap": swap.find_leftovers(),
                      "cgroups": [str(p) for p in cgroups.find_leftovers()],
                      "tracefs": [str(p) for p in tracefs.find_leftovers()]}))
