"""The sizing rule of the one-machine study (issue 16): one memory cap for every tool, four times
it for GATK, and each input kind sized by the paper's own criterion, scaled to this machine.

Seed 000 §5.1 gave every program 1 GB of RAM and the GATK tools 4 GB, and chose "for each
program, an input data set of appropriate size that can be processed in a reasonable amount of
time (the criterion used: less than 72 hours)". The one-machine study keeps both rules and scales
them once:

* **Memory**: the paper's sizes divided by :data:`MEMORY_DIVISOR` — :data:`CAP` for every tool,
  :data:`GATK_MULTIPLE` times it for the GATK tools (§5.1), and Fig. 9's 4, 16 and 32 GB as
  :data:`FIG9_CAPS`. The divisor is the smallest that keeps GATK's cap at twice the heap its JVM
  needs to start (the catalogue's ``min_mem``, 512M), so the smaller caps that would page more
  tools cannot be had for GATK without breaking the 1:4 ratio.
* **Input**: each input kind at the largest size on a doubling ladder
  (:data:`LADDER_MIN` .. :data:`LADDER_MAX`) at which every runnable tool reading it that ends
  ``ok`` finishes within :data:`NATIVE_BUDGET_S` on the native disk under its cap — the 72-hour
  criterion scaled to a study that ends within 45 minutes. ``benchmarks/sizing.py`` measures it;
  the sizes it gave here are ``--input_sizes`` of ``nextflow/conf/full.config``. A tool that
  ends ``oom`` or ``failed`` at every size does not bound its kind; it stays in the study as such.
* **Time limit**: a run is stopped after :data:`TIME_LIMIT_S` (outcome ``timeout``), eight times
  the per-run budget — the paper's 72 hours stood for the same bound on its slow side. A tool
  whose HDD runs all time out has a speedup of at least the limit over its native runtime
  (:func:`biossd.analysis.speedup.speedup_table`), which decides its group once it reaches 2x.
"""

from __future__ import annotations

import fnmatch

#: §5.1: 1 GB for the programs, 4 GB for GATK; divided by this on one machine.
MEMORY_DIVISOR = 4
#: The cap of every non-GATK tool (the paper's 1 GB / MEMORY_DIVISOR).
CAP = "256M"
#: §5.1: GATK had four times the others' memory.
GATK_MULTIPLE = 4
GATK_TOOLS = "gatk_*"
#: Fig. 9's 4, 16 and 32 GB, divided the same way.
FIG9_CAPS = ("1G", "4G", "8G")
#: Per-run budget on the native disk that sets each kind's input size (benchmarks/sizing.py).
NATIVE_BUDGET_S = 15.0
LADDER_MIN, LADDER_MAX = "64K", "64M"  # proteins and expression needed sizes below 1M
#: A run's time limit, as a multiple of the per-run budget: the paper's 72 hours, scaled.
TIME_LIMIT_BUDGETS = 8
TIME_LIMIT_S = TIME_LIMIT_BUDGETS * NATIVE_BUDGET_S
#: Swap for each run on its class's device (the paper's machines paged to the disk under test).
SWAP_SIZE = "1G"


def cap_of(tool: str, cap: str = CAP) -> str:
    """The rule's cap for ``tool``: ``cap``, or GATK_MULTIPLE times it for the GATK tools."""
    from biossd.core.units import format_size, parse_size

    if fnmatch.fnmatchcase(tool, GATK_TOOLS):
        return format_size(parse_size(cap) * GATK_MULTIPLE)
    return cap
