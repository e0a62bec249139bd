"""The sizing rule of the one-machine study: scale the paper's machine, not each tool.

Lee, Min and Yoon (2015) shrank their machine on purpose — "to see the effects of changing
secondary storages clearly … 4GB for the GATK tools and 1GB for the others" (§5.1) — and chose
"for each program, an input data set of appropriate size" (§5.1). Their G+ tools were fast on
SSDs because they paged: Pfault is "the most notable difference" between the groups (§3.2), and
speedup comes "when the memory footprint of a program exceeds the capacity of main memory"
(§3.7). The one stated input:memory pair is Fig. 9's: 20 GB of input on 4, 16 and 32 GB of RAM.

The rule keeps that regime on a small machine, the same for every tool:

* **Floor F** (:func:`floor_of`): what does not grow with a tool's input — fixed tables, a
  JVM, an MPI launcher's daemons and segments — is its peak resident memory, uncapped, on
  :data:`FLOOR_DIVISOR`-th of its input: every process of the run, wrappers, MPI daemons and
  ``time`` included (the paper's RAM held them all), read from the run's cgroup
  (:class:`biossd.host.resident.ResidentWatch`: anonymous, mapped-file and shared memory, not the
  page cache of files it only reads); the median of :data:`FLOOR_REPEATS` runs after
  :data:`FLOOR_WARMUPS` warm-up. Code is not in it: the warm-up reads the tool's code whole into
  the page cache, charged to its own cgroup, and no run after it is charged for it
  (:mod:`biossd.host.codefiles`, :mod:`biossd.host.pagecache`, docs/study.md "Code is not data"). Measured in every study
  session on its own host, before the tool's capped runs, never chosen; ``biossd study size``
  (:mod:`biossd.study.sizing.procedure`) measures it too, for its own capped runs.
* **JVM heaps are data** (:data:`HEAP_MARGIN`): one heap rule for every JVM tool — its heap size
  is ``HEAP_MARGIN ×`` the smallest heap that completes its input (``-Xms = -Xmx``, so that the
  JVM's sizing does not follow the host's RAM), with the Parallel collector the paper's Java 7
  used by default, and no pre-touch: the heap becomes resident only as the tool touches it, so
  what it touches at 1/:data:`FLOOR_DIVISOR` of its input is floor and what more it touches at
  full input is data, as for any other tool.
* **Data memory M** (:func:`data_memory_bytes`): one memory for data and page cache, the same for
  every tool, as the paper gave every tool one RAM: the median per-program input over
  :data:`INPUT_PER_MEMORY` (Fig. 9's 20 GB on 4 GB); for the GATK steps, their shared input over
  the same ratio, so that Table 1's GATK setting is Fig. 9's lowest point, as in the paper.
* **Cap** = F + M (:func:`cap_bytes`).
* **Tools' own memory settings** (samtools sort's ``-m``, bwa mem's batch, igvtools' record
  buffer) are their paper-era defaults divided by D = :data:`PAPER_MEMORY_BYTES` / M
  (:func:`memory_divisor`), never a fraction of the cap; the catalogue cites each default.
* **Inputs per program** (:func:`largest_within_budget`): each tool's input is the largest
  step of a doubling ladder, refined by :data:`FINE_STEP` next to the budget, whose uncapped
  native run adds at most :data:`INPUT_BUDGET_S` to its 1/:data:`FLOOR_DIVISOR` run, a step
  within :data:`RETIME_WITHIN` of the budget, or over it, decided by the median of
  :data:`RETIME_REPEATS` timings (:func:`needs_retiming`), so that jitter cannot move it, and,
  given a reference record, one within that band keeps the reference's call (:func:`over_budget`),
  and a tool whose wall time at the reference's own input lies within :data:`SAME_SPEED_WITHIN`
  of the reference's keeps the reference's input (:func:`same_speed`), so that a session's drift
  cannot move it either; the GATK steps share one
  input and the aligners of Fig. 1 one (the paper shares a data set there), and a tool whose
  capped native run exceeds half the time limit steps down by :data:`FINE_STEP`
  (:func:`fits_time_limit`), so that a censored slow-side run proves at least
  :data:`CENSORED_MIN_SPEEDUP` x.
* **Fig. 9** (:data:`FIG9_MEMORY_PER_INPUT`): GATK at F + {0.2, 0.8, 1.6} × its input, the
  paper's 4, 16 and 32 GB on 20 GB, with the heap fixed across the three.
* **Dead band** (:func:`band_bytes`): a call whose memory sits within max(:data:`BAND_DATA_MEMORY_SHARE`
  M, :data:`BAND_FLOOR_SIGMAS` σ_F) of its cap is *marginal* (docs/study.md, "Dead bands at
  every edge"), as is one whose interval touches a group's bound.

``biossd study size`` (:mod:`biossd.study.sizing.procedure`) measures F, the inputs and the heaps on the
host under study, within a per-run budget derived from the study's (:func:`input_budget_s`), and
writes the record a study takes with ``--sizing``; the supplement's methods quote this
docstring's constants and the record's budget.
"""

from __future__ import annotations

import fnmatch
import math
import statistics
from typing import Iterable, Mapping

from biossd.core.units import format_size, parse_size

#: §5.1: the paper's RAM for every program but GATK.
PAPER_MEMORY_BYTES = 1 << 30
#: §3.5, Fig. 9: 20 GB of input on 4 GB of RAM, the paper's one stated input:memory ratio.
INPUT_PER_MEMORY = 5
#: Fig. 9's memories as fractions of its input: 4, 16 and 32 GB on 20 GB.
FIG9_MEMORY_PER_INPUT = (0.2, 0.8, 1.6)
#: The floor is measured on this fraction of the tool's input (what does not grow with it).
FLOOR_DIVISOR = 64
#: The floor is the median of this many runs (docs/study.md, "The floor is measured where the
#: study runs")…
FLOOR_REPEATS = 3
#: …after this many warm-up runs, which read the tool's code whole into the page cache in a cgroup
#: of their own (docs/study.md, "Code is not data") and are not counted.
FLOOR_WARMUPS = 1
#: A ladder step whose added time lies within this share of the budget, or over it, is timed again…
RETIME_WITHIN = 0.10
#: …and decided by the median of this many timings (docs/study.md, "A sizing that jitter cannot move").
RETIME_REPEATS = 3
#: Given a reference record, a tool whose median wall time at a step the reference timed lies within
#: this factor of the reference's there (either way) keeps the reference's call on that step: one
#: doubling of the ladder, beyond the 1.3-1.7 x that whole sessions of this VM drifted at the same
#: step (docs/study.md, "A sizing that jitter cannot move", amended 2026-11-29).
SAME_SPEED_WITHIN = 2.0
#: The finer step next to an edge: between the last doubling within the budget and the first over
#: it, and down from an input whose capped run passes half the time limit.
FINE_STEP = 2 ** 0.5
#: The dead band (docs/study.md, "Dead bands at every edge"): max(this share of M, this many
#: standard deviations of F).
BAND_DATA_MEMORY_SHARE = 0.5
BAND_FLOOR_SIGMAS = 3
#: Seconds an input may add to the tool's 1/FLOOR_DIVISOR run, uncapped on the native disk: the
#: paper's "less than 72 hours" per program, scaled to a study that ends within 45 minutes.
INPUT_BUDGET_S = 5.0
#: The per-run budget a sizing accepts: from a twentieth of a second (the jitter of a run's start-up
#: on the project's VM, 0.02-0.07 s between repeats of its smallest steps, would decide below it)
#: to the paper's "less than 72 hours" a program (§5.1).
MIN_RUN_BUDGET_S = 0.05
MAX_RUN_BUDGET_S = 72 * 3600.0
#: A run's time limit (outcome ``timeout``), standing for the paper's 72 hours.
TIME_LIMIT_S = 60.0
#: The time limit in input budgets (the one-machine study's 60 s on 5 s): a host sized with
#: another budget keeps the same proportion between what an input may cost and when a run stops.
TIME_LIMIT_PER_INPUT_BUDGET = TIME_LIMIT_S / INPUT_BUDGET_S
#: Repeats of the baseline matrix that a study budget is spent on (the paper averaged 3, §2.2).
BUDGET_REPEATS = 3
#: A censored slow-side run must prove at least this speedup: the capped native run of an input
#: stays within TIME_LIMIT_S / CENSORED_MIN_SPEEDUP, else the input is halved.
CENSORED_MIN_SPEEDUP = 2.0
#: A JVM's fixed heap is this times the smallest heap (on a doubling ladder) that completes the
#: tool's input.
HEAP_MARGIN = 2
#: The doubling ladder of inputs the benchmark tries, and of JVM heaps.
LADDER_MIN, LADDER_MAX = "64K", "256M"
HEAP_LADDER_MIN, HEAP_LADDER_MAX = "32M", "2G"
#: Swap for each run on its class's device (the paper's machines paged to the disk under test).
SWAP_SIZE = "1G"
#: A run's scratch holds its input's copy, the tool's output and its temporary files; for the
#: catalogue's tools each is at most about the input's size, so four times the largest input (plus
#: the run's swap, when swap lives in scratch) is what a class's scratch, or an emulated device,
#: must have free.
SCRATCH_PER_INPUT = 4
#: The share of an emulated device that its ext4 file system (mkfs.ext4's defaults: journal and
#: inode tables) leaves for files: about 95% measured at 1 and 2 GiB, taken as 15/16.
EXT4_FILES_SHARE = 15 / 16
#: The GATK steps share one input (Fig. 9: "an input dataset of 20GB … each of the four
#: subprograms"), and their data memory follows it.
GATK_TOOLS = "gatk_*"
#: The aligners of Fig. 1 share one input (the paper's S. aureus set for all three).
FIG1_TOOLS = ("maq", "bwa", "bowtie2")
#: Tools whose input the paper gives as a count, scaled by the rule instead of the budget:
#: AmpliconNoise's baseline of 2,000 454 reads (§3.4), whose clustering matrix grows as n², so
#: the read count is scaled by √(M / 1 GB) to keep its footprint:memory ratio.
PAPER_BASELINE_READS = {"ampliconnoise": 2000}


def is_gatk(tool: str) -> bool:
    """The GATK steps, whose data memory follows their shared input (§3.5)."""
    return fnmatch.fnmatchcase(tool, GATK_TOOLS)


def floor_bytes(resident_peak_bytes: float) -> int:
    """A floor run's peak resident memory of every process of an uncapped run on 1/FLOOR_DIVISOR
    of the input (bytes, :class:`biossd.host.resident.ResidentWatch`), rounded up to whole KiB."""
    return round_kib(resident_peak_bytes)


def floor_of(peaks_bytes: Iterable[float]) -> tuple[int, float]:
    """F and σ_F: the median of the floor runs' resident peaks (the warm-up left out by the
    caller), rounded up to whole KiB, and their sample standard deviation (0 for one run)."""
    peaks = [float(p) for p in peaks_bytes]
    if not peaks:
        raise ValueError("no floor runs to take the median of")
    sd = statistics.stdev(peaks) if len(peaks) > 1 else 0.0
    return round_kib(statistics.median(peaks)), round(sd, 1)


def band_bytes(data_memory: float, floor_sd: float) -> float:
    """The dead band b = max(BAND_DATA_MEMORY_SHARE M_t, BAND_FLOOR_SIGMAS σ_F) around a tool's
    cap (docs/study.md, "Dead bands at every edge")."""
    return max(BAND_DATA_MEMORY_SHARE * float(data_memory), BAND_FLOOR_SIGMAS * float(floor_sd or 0.0))


def needs_retiming(added_s: float, budget_s: float, above_reference: bool = False) -> bool:
    """Whether one timing of a ladder step leaves its verdict to the median of RETIME_REPEATS: its
    added time lies within RETIME_WITHIN of the budget, or over it (a run ended, not timed out).
    A slow outlier (the sizings' repeated steps: 21 of 22 within 26% of their median, one at 65%)
    never ends a ladder on its own; nor does a fast one take a step above a reference record's
    choice (``above_reference``: any timing that ended is then re-timed), docs/study.md, "A sizing
    that jitter cannot move"."""
    if above_reference:
        return added_s < math.inf
    return budget_s * (1 - RETIME_WITHIN) <= added_s < math.inf


def same_speed(ratio: float | None) -> bool:
    """Whether a host whose wall time at a step is ``ratio`` times a reference record's there runs
    that tool at the reference's speed: within SAME_SPEED_WITHIN either way (None: not comparable)."""
    return ratio is not None and 1 / SAME_SPEED_WITHIN <= ratio <= SAME_SPEED_WITHIN


def fine_step(size: int) -> int:
    """The step FINE_STEP below ``size`` (bytes), in whole KiB."""
    return round_kib(size / FINE_STEP)


def data_memories(tool: str, data_memory: int, gatk_input_bytes: int | None) -> list[int]:
    """The data memories M_t a tool runs under (its caps are F + each): M; for a GATK step, Fig.
    9's FIG9_MEMORY_PER_INPUT times the GATK input (the first, 0.2, is M_GATK = input / 5)."""
    if is_gatk(tool) and gatk_input_bytes:
        return [round_kib(f * gatk_input_bytes) for f in FIG9_MEMORY_PER_INPUT]
    return [int(data_memory)]


def data_memory_bytes(input_bytes: Iterable[int]) -> int:
    """M: the median of the per-program inputs over INPUT_PER_MEMORY (§3.5's 20 GB on 4 GB)."""
    sizes = sorted(int(b) for b in input_bytes)
    if not sizes:
        raise ValueError("no inputs to take the median of")
    return round_kib(statistics.median(sizes) / INPUT_PER_MEMORY)


def memory_divisor(data_memory: int) -> float:
    """D = 1 GB / M: the paper's RAM over this study's data memory; a tool's memory-sized
    defaults are divided by it."""
    if data_memory <= 0:
        raise ValueError(f"data memory must be positive, got {data_memory}")
    return PAPER_MEMORY_BYTES / data_memory


def cap_bytes(floor: int, data_memory: int) -> int:
    """The rule's cap: the tool's own floor plus the shared data memory."""
    return round_kib(int(floor) + int(data_memory))


def fig9_caps(floor: int, gatk_input_bytes: int) -> list[int]:
    """Fig. 9's three caps for a GATK step: F + {0.2, 0.8, 1.6} × the GATK input."""
    return [round_kib(floor + f * gatk_input_bytes) for f in FIG9_MEMORY_PER_INPUT]


def scaled_setting(default: float, divisor: float, minimum: float = 1) -> int:
    """A tool's memory-sized default (bytes or a count) divided by D, at least the tool's own
    ``minimum`` (a constant of the tool that does not scale, named in its catalogue entry)."""
    return max(int(minimum), int(float(default) / float(divisor)))


def round_kib(n_bytes: float) -> int:
    """A size of the rule rounded up to whole KiB (what caps and tool options accept)."""
    return -(-int(n_bytes) // 1024) * 1024


def settings(memory_options: Iterable[Mapping], divisor: float = 1.0,
             heaps: Mapping[str, str] | None = None) -> dict[str, str]:
    """The values of a tool's memory settings (its catalogue entry's ``memory_options``) under the
    rule: a ``scaled`` one is its paper-era default divided by ``divisor`` (D = 1 GB / M; 1 gives
    the default), at least its ``minimum``; a ``heap`` one is the tool's fixed JVM heap from
    ``heaps`` (by option name), else its default (§5.1: 4 GB for GATK, 1 GB for the others)."""
    out = {}
    for opt in memory_options:
        if opt["rule"] == "heap":
            out[opt["name"]] = str((heaps or {}).get(opt["name"]) or opt["default"])
        elif opt.get("unit") == "count":
            out[opt["name"]] = str(scaled_setting(int(opt["default"]), divisor, int(opt.get("minimum", 1))))
        else:
            least = parse_size(str(opt.get("minimum", "1")))
            out[opt["name"]] = format_size(round_kib(scaled_setting(parse_size(str(opt["default"])), divisor, least)))
    return out


def baseline_reads(tool: str, data_memory: int) -> int | None:
    """The paper's stated baseline count for ``tool`` scaled to keep its footprint:memory ratio
    (a quadratic matrix: by √(M / 1 GB)), or None when the paper gives none."""
    n = PAPER_BASELINE_READS.get(tool)
    if n is None:
        return None
    return max(2, int(round(n * (data_memory / PAPER_MEMORY_BYTES) ** 0.5)))


def over_budget(added_s: float, budget_s: float, reference_fits: bool | None = None) -> bool:
    """Whether a ladder step that added ``added_s`` is over ``budget_s`` (docs/study.md, "A sizing
    that jitter cannot move"). Given a reference record's call on the same step (``reference_fits``:
    the step is at or below the reference's choice), a timing within RETIME_WITHIN of the budget
    keeps that call — a step the reference took is over only past the band, one it did not take
    fits only under it — so that drift between sessions cannot flip a step at the edge, and a host
    clearly faster or slower still moves it."""
    if reference_fits is None:
        return added_s > budget_s
    return added_s > budget_s * (1 + RETIME_WITHIN if reference_fits else 1 - RETIME_WITHIN)


def largest_within_budget(added_s: Mapping[int, float], budget_s: float = INPUT_BUDGET_S) -> int | None:
    """The largest input size (bytes) of a doubling ladder whose run added at most ``budget_s``
    over the smallest run; sizes are taken in order and the ladder stops at the first over."""
    best = None
    for size in sorted(added_s):
        if added_s[size] > budget_s:
            break
        best = size
    return best


def input_budget_s(study_budget_s: float, n_tools: int, repeats: int = BUDGET_REPEATS) -> float:
    """The per-run input budget of a study that must end within ``study_budget_s`` on the pair of
    hosts: in the worst case each tool and repeat costs a fast run at the halving bound
    (limit / CENSORED_MIN_SPEEDUP) and a slow run censored at the limit, the limit being
    TIME_LIMIT_PER_INPUT_BUDGET budgets. Figs. 8 and 9, firm repeats and chained pipelines come on
    top of this worst case of the baseline matrix, which the study seldom reaches (inputs that
    fit their cap run in about one budget on either side)."""
    if study_budget_s <= 0 or n_tools <= 0 or repeats <= 0:
        raise ValueError(f"a study budget needs positive time, tools and repeats, got "
                         f"{study_budget_s} s, {n_tools} tools, {repeats} repeats")
    worst_per_budget = n_tools * repeats * (1 + 1 / CENSORED_MIN_SPEEDUP) * TIME_LIMIT_PER_INPUT_BUDGET
    return study_budget_s / worst_per_budget


def time_limit_s(run_budget_s: float) -> float:
    """A run's time limit for a per-run input budget (TIME_LIMIT_PER_INPUT_BUDGET of them)."""
    return TIME_LIMIT_PER_INPUT_BUDGET * run_budget_s


def fits_time_limit(capped_native_s: float, limit_s: float = TIME_LIMIT_S,
                    reference_fits: bool | None = None) -> bool:
    """Whether an input's capped native run leaves room for a censored slow side to prove
    CENSORED_MIN_SPEEDUP x (else the input steps down by FINE_STEP); with a reference record's
    call on the input, a run within RETIME_WITHIN of the bound keeps it (:func:`over_budget`)."""
    return not over_budget(capped_native_s, limit_s / CENSORED_MIN_SPEEDUP, reference_fits)
