"""Leftovers of profiled runs that were killed before they could clean up: cgroups, tracefs
instances and mounts, and loop-device swap areas, plus every emulated HDD (which is up until
someone takes it down). ``biossd doctor`` lists them and ``biossd cleanup`` removes them.

Every such object is named ``<prefix><pid>-<hex>`` after the process that made it; one whose
process is still running belongs to a live run and is not a leftover."""

from __future__ import annotations

from pathlib import Path
from typing import Callable


class HostObject:
    """Something a run makes on the host (a swap area, a tracefs instance): ``_setup`` makes it,
    ``close`` undoes whatever part of it exists. As a context manager it is closed on exit and
    also when ``_setup`` fails half-way."""

    def _setup(self) -> None:
        raise NotImplementedError

    def close(self) -> None:
        raise NotImplementedError

    def __enter__(self):
        try:
            self._setup()
        except BaseException:
            self.close()
            raise
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def owner_alive(name: str, prefix: str) -> bool:
    """Whether the process whose pid follows ``prefix`` in ``name`` still runs."""
    pid = name[len(prefix):].split("-", 1)[0]
    return pid.isdigit() and Path(f"/proc/{pid}").exists()


def find_all() -> list[tuple[str, str, Callable[[], None]]]:
    """``(kind, what, remove)`` for every leftover on this host."""
    from biossd import cgroups, emulate, swap, tracefs

    found: list[tuple[str, str, Callable[[], None]]] = []
    for path in cgroups.find_leftovers():
        found.append(("cgroup", str(path), lambda p=path: cgroups.remove_cgroup(p)))
    for path in tracefs.find_leftovers():
        found.append(("tracefs", str(path), lambda p=path: tracefs.remove_leftover(p)))
    for entry in swap.find_leftovers():
        found.append(("swap", entry, lambda e=entry: swap.remove_leftover(e)))
    for state_dir in emulate.all_states():
        status = emulate.status_of(state_dir)
        what = f"{status['mount']} ({'healthy' if status['healthy'] else 'broken'}, {state_dir})"
        found.append(("emulated-hdd", what, lambda d=state_dir: emulate.down_state(d)))
    return found
